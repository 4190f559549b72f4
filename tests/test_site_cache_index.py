"""The page cache's index (format 4) and its keys: what a save writes an open reads back as it was,
in every script; an index cut short, altered, of another scope or of an earlier format is no index
(the cache starts empty, the build is still the build of a cold cache); a digest never gives two
tuples of parts the same input, nor the input of the digest caches kept before format 4."""

from __future__ import annotations

import hashlib
import json
import shutil
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from site_support import SCRIPTS, site_files

from memosite.site.build import build_site
from memosite.site.cache import (
    CACHE_DIR,
    FORMAT,
    INDEX_SUFFIX,
    CachedPage,
    PageCache,
    digest,
    digest_input,
    index_packs,
)
from memosite.site.destination import MANIFEST
from memosite.store import upsert_record
from memosite.vault import Vault

PROJECT = "shop"
SCOPE = "0123456789abcdef" * 2

# Text in many scripts, with the characters the index and the digest treat apart: the digest's
# separator (U+001F), NUL, newlines, quotes and backslashes (JSON escapes), a lone surrogate (a
# file name that is no UTF-8).
_SPECIAL = ["\x1f", "\0", "\n", '"', "\\", "\udcff", "{", ","]
text = st.one_of(
    st.text(max_size=30),
    st.sampled_from(SCRIPTS + _SPECIAL),
    st.lists(st.sampled_from(SCRIPTS + _SPECIAL + ["a", "", "/"]), max_size=6).map("".join),
)


# --- digest ------------------------------------------------------------------------------------


def _parts_back(person: bytes, data: bytes) -> tuple[str, ...]:
    """The parts a digest input was made from: each layout reads back one way only."""
    if person == b"memosite:joined":
        return tuple(data.decode("utf-8", "surrogatepass").split("\x1f"))
    assert person == b"memosite:counted"
    head, _, body = data.partition(b"\n")
    whole = body.decode("utf-8", "surrogatepass")
    parts, at = [], 0
    for length in map(int, head.decode("ascii").split(",")) if head else []:
        parts.append(whole[at : at + length])
        at += length
    assert at == len(whole)
    return tuple(parts)


@settings(max_examples=400, deadline=None)
@given(parts=st.lists(text, max_size=6).map(tuple))
def test_a_digest_input_reads_back_into_exactly_its_parts(parts: tuple[str, ...]) -> None:
    assert _parts_back(*digest_input(*parts)) == parts


@settings(max_examples=400, deadline=None)
@given(first=st.lists(text, max_size=5).map(tuple), second=st.lists(text, max_size=5).map(tuple))
def test_two_different_tuples_of_parts_never_share_a_digest_input(
    first: tuple[str, ...], second: tuple[str, ...]
) -> None:
    if first != second:
        assert digest_input(*first) != digest_input(*second)


def test_parts_that_join_alike_get_different_keys() -> None:
    # Joined by a separator alone, these would all hash the same bytes.
    alike = [("a\x1fb",), ("a", "b"), ("a\x1f", "b"), ("a", "\x1fb"), ("a\0b",), ("a", "b", ""), ()]
    alike += [("",), ("", ""), ("1\na\x1fb",)]
    assert len({digest(*parts) for parts in alike}) == len(alike)


@settings(max_examples=200, deadline=None)
@given(parts=st.lists(text, max_size=5).map(tuple))
def test_a_digest_is_blake2b_of_its_input_and_never_the_key_of_the_old_layout(parts: tuple[str, ...]) -> None:
    person, data = digest_input(*parts)
    assert digest(*parts) == hashlib.blake2b(data, digest_size=16, person=person).hexdigest()
    # Caches before format 4 hashed each part and a NUL, unpersonalised: the same bytes under that
    # hash (any tuple whose old layout they are) give another key.
    assert digest(*parts) != hashlib.blake2b(data, digest_size=16).hexdigest()


# --- the index, saved and opened ---------------------------------------------------------------


def _saved(internal: Path, pages: dict[str, CachedPage], rows: dict[str, tuple[str, str]], clean: set[str]) -> Path:
    cache = PageCache.open(internal, SCOPE)
    for uri, page in pages.items():
        cache.keep(uri, page)
    cache.rows = dict(rows)
    cache.clean = set(clean)
    cache.save()
    [index] = (internal / CACHE_DIR).glob(f"index-*{INDEX_SUFFIX}")
    return index


page = st.builds(
    CachedPage,
    st.text(alphabet="0123456789abcdef", min_size=32, max_size=32),
    st.integers(0, 2**40),
    text,
    st.text(alphabet="pack-0123456789abcdef.", min_size=1, max_size=24),
    st.integers(0, 2**40),
    st.text(alphabet="0123456789abcdef", min_size=64, max_size=64),
)


@settings(max_examples=60, deadline=None)
@given(
    pages=st.dictionaries(text, page, max_size=6),
    rows=st.dictionaries(text, st.tuples(text, text), max_size=6),
    clean=st.sets(text, max_size=4),
)
def test_an_index_opens_as_it_was_saved_in_every_script(
    pages: dict[str, CachedPage],
    rows: dict[str, tuple[str, str]],
    clean: set[str],
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    internal = tmp_path_factory.mktemp("internal")
    index = _saved(internal, pages, rows, clean)
    opened = PageCache.open(internal, SCOPE)
    assert (opened.pages, opened.rows, opened.clean) == (pages, rows, clean)
    # What another scope's save reads of it, from its first line alone.
    used: dict[str, int] = {}
    for entry in pages.values():
        used[entry.pack] = used.get(entry.pack, 0) + entry.size
    assert index_packs(index) == used


def _sample_index(internal: Path) -> bytes:
    pages = {
        f"memory/shop/{n}-{script}.md": CachedPage(
            f"{n:032x}", 100 + n, f'{{"text":"{script}"}}', "p.pack", n, "d" * 64
        )
        for n, script in enumerate(SCRIPTS)
    }
    rows = {uri: (f"stamp\0{n}", f'{{"title":"{SCRIPTS[n]}"}}') for n, uri in enumerate(pages)}
    return _saved(internal, pages, rows, {"c" * 32}).read_bytes()


@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_an_index_cut_short_anywhere_is_no_index(data: st.DataObject, tmp_path_factory: pytest.TempPathFactory) -> None:
    internal = tmp_path_factory.mktemp("internal")
    whole = _sample_index(internal)
    assert PageCache.open(internal, SCOPE).pages  # whole, it is read
    cut = data.draw(st.integers(0, len(whole) - 1))
    [index] = (internal / CACHE_DIR).glob(f"index-*{INDEX_SUFFIX}")
    index.write_bytes(whole[:cut])
    opened = PageCache.open(internal, SCOPE)
    assert (opened.pages, opened.rows, opened.clean) == ({}, {}, set())


Alteration = Callable[[dict[str, Any], dict[str, Any]], object]


def _alterations() -> dict[str, Alteration]:
    """Ways to alter the two JSON lines of an index (each a function of the parsed lines)."""

    def setting(key: str, value: object) -> Alteration:
        return lambda head, body: (head if key in head else body).__setitem__(key, value)

    def first(table: str, column: str, value: object) -> Alteration:
        return lambda head, body: body[table][column].__setitem__(0, value)

    return {
        "another format": setting("format", FORMAT - 1),
        "another scope": setting("scope", "f" * 32),
        "texts counted one more": lambda head, body: head.update(texts=head["texts"] + 1),
        "a size as text": first("pages", "size", "100"),
        "a size true": first("pages", "size", True),
        "a negative offset": first("pages", "offset", -1),
        "a search length one more": first("pages", "search", 999),
        "a key as a number": first("pages", "key", 7),
        "a row as a list": first("rows", "row", [1]),
        "a column shorter": lambda head, body: body["pages"]["pack"].pop(),
        "a column missing": lambda head, body: body["pages"].pop("digest"),
        "pages as a list": setting("pages", []),
        "clean as text": setting("clean", "c" * 32),
        "a clean digest as a number": setting("clean", [1]),
        "the lines swapped": lambda head, body: (head.update(body), body.clear()),
    }


def _checked(body: bytes) -> bytes:
    """``body`` with the check line an index ends with (so only the rest of the layout is tried)."""
    return body + b"\n%08x" % zlib.crc32(body)


@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_an_index_with_any_byte_changed_is_no_index(
    data: st.DataObject, tmp_path_factory: pytest.TempPathFactory
) -> None:
    internal = tmp_path_factory.mktemp("internal")
    whole = bytearray(_sample_index(internal))
    at = data.draw(st.integers(0, len(whole) - 1))
    whole[at] ^= data.draw(st.integers(1, 255))
    [index] = (internal / CACHE_DIR).glob(f"index-*{INDEX_SUFFIX}")
    index.write_bytes(bytes(whole))
    assert PageCache.open(internal, SCOPE).pages == {}


def test_an_index_keeps_its_layout_when_its_check_is_made_again(tmp_path: Path) -> None:
    # What the tests of the layout below rely on: the check recomputed, the index reads again.
    whole = _sample_index(tmp_path)
    [index] = (tmp_path / CACHE_DIR).glob(f"index-*{INDEX_SUFFIX}")
    index.write_bytes(_checked(whole[:-9]))
    assert len(PageCache.open(tmp_path, SCOPE).pages) == len(SCRIPTS)


@pytest.mark.parametrize("alteration", sorted(_alterations()))
def test_an_altered_index_is_no_index(alteration: str, tmp_path: Path) -> None:
    whole = _sample_index(tmp_path)
    first, second, texts = whole.split(b"\n", 2)
    head, body = json.loads(first), json.loads(second)
    _alterations()[alteration](head, body)
    [index] = (tmp_path / CACHE_DIR).glob(f"index-*{INDEX_SUFFIX}")
    index.write_bytes(_checked(b"%s\n%s\n%s" % (json.dumps(head).encode(), json.dumps(body).encode(), texts[:-9])))
    opened = PageCache.open(tmp_path, SCOPE)
    assert (opened.pages, opened.rows, opened.clean) == ({}, {}, set())


@pytest.mark.parametrize(
    "content",
    [
        b"",
        b"\n",
        b"not json\n",
        b'{"format": 4}',
        b"[]\n",
        b"\xff\xfe\n",
        "{}\n\udcff".encode("utf-8", "surrogatepass"),
    ],
    ids=["empty", "a newline", "not JSON", "no newline", "a list", "not UTF-8", "an object and a surrogate"],
)
def test_an_index_written_by_hand_is_no_index(content: bytes, tmp_path: Path) -> None:
    _sample_index(tmp_path)
    [index] = (tmp_path / CACHE_DIR).glob(f"index-*{INDEX_SUFFIX}")
    index.write_bytes(content)
    assert PageCache.open(tmp_path, SCOPE).pages == {}


@pytest.mark.parametrize("tail", [b"\xff", b"\xed\xa0"], ids=["not UTF-8", "half a surrogate"])
def test_texts_that_are_no_utf8_make_no_index(tail: bytes, tmp_path: Path) -> None:
    whole = _sample_index(tmp_path)
    [index] = (tmp_path / CACHE_DIR).glob(f"index-*{INDEX_SUFFIX}")
    index.write_bytes(_checked(whole[:-10] + tail))
    assert PageCache.open(tmp_path, SCOPE).pages == {}


# --- a build over a damaged or old index ---------------------------------------------------------


def _fill(vault: Vault) -> None:
    for n, title in enumerate(SCRIPTS):
        upsert_record(
            vault, PROJECT, kind="trap", body=f"{title}: body {n}.", slug=f"trap-{n}", frontmatter={"title": title}
        )


def _cold(vault: Vault, out_dir: Path) -> dict[str, bytes]:
    cache = vault.internal_dir / CACHE_DIR
    aside = out_dir.parent / "cache-aside"
    shutil.move(cache, aside)
    try:
        build_site(vault, out_dir=out_dir)
    finally:
        shutil.rmtree(cache, ignore_errors=True)
        shutil.move(aside, cache)
    return site_files(out_dir, leave_out={MANIFEST})


@pytest.mark.parametrize("damage", ["cut in the line", "cut in the texts", "texts swapped", "format 3 kept"])
def test_a_build_over_a_damaged_index_publishes_what_a_cold_build_does(
    damage: str, tmp_path: Path, vault: Vault
) -> None:
    _fill(vault)
    build_site(vault, out_dir=tmp_path / "site")
    [index] = (vault.internal_dir / CACHE_DIR).glob(f"index-*{INDEX_SUFFIX}")
    whole = index.read_bytes()
    line, _, texts = whole.partition(b"\n")
    if damage == "cut in the line":
        index.write_bytes(line[: len(line) // 2])
    elif damage == "cut in the texts":
        index.write_bytes(whole[: len(line) + 1 + len(texts) // 2])
    elif damage == "texts swapped":
        # Same length, other order: each page would get another page's search entries.
        index.write_bytes(line + b"\n" + texts[len(texts) // 2 :] + texts[: len(texts) // 2])
    else:
        # What memosite kept before format 4, under the name it used then.
        old = {"format": 3, "scope": json.loads(line)["scope"], "pages": {}, "clean": [], "rows": {}}
        index.with_name(index.name.replace(INDEX_SUFFIX, ".json")).write_text(json.dumps(old), encoding="utf-8")
    upsert_record(vault, PROJECT, kind="trap", body="Ελληνικά 🎉 changed.", slug="trap-1", frontmatter={"title": "Ζ"})
    build_site(vault, out_dir=tmp_path / "site")
    warm = site_files(tmp_path / "site", leave_out={MANIFEST})
    cold = _cold(vault, tmp_path / "cold")
    assert warm.keys() == cold.keys()
    assert [name for name in sorted(warm) if warm[name] != cold[name]] == []
    # The build left one index of the current format, nothing of the earlier one.
    assert [p.suffix for p in (vault.internal_dir / CACHE_DIR).glob("index-*")] == [INDEX_SUFFIX]


def test_a_save_removes_indexes_that_are_no_index_and_keeps_another_scopes(tmp_path: Path) -> None:
    _sample_index(tmp_path)
    [own] = (tmp_path / CACHE_DIR).glob(f"index-*{INDEX_SUFFIX}")
    other = PageCache.open(tmp_path, "e" * 32)
    other.keep("memory/other.md", CachedPage("k" * 32, 10, "Другой", "q.pack", 0, "d" * 64))
    other.save()
    damaged = tmp_path / CACHE_DIR / f"index-{'a' * 16}{INDEX_SUFFIX}"
    damaged.write_bytes(b"{not an index\n")
    old = tmp_path / CACHE_DIR / f"index-{'b' * 16}.json"
    old.write_text('{"format": 3, "pages": {}}', encoding="utf-8")
    PageCache.open(tmp_path, SCOPE).save()
    assert sorted(p.name for p in (tmp_path / CACHE_DIR).glob("index-*")) == sorted(
        [own.name, f"index-{'e' * 16}{INDEX_SUFFIX}"]
    )
    assert PageCache.open(tmp_path, "e" * 32).pages["memory/other.md"].search == "Другой"


@pytest.mark.parametrize("suffix", [INDEX_SUFFIX, ".json"])
def test_a_folder_named_like_an_index_never_stops_a_save(suffix: str, tmp_path: Path) -> None:
    # The attack: a folder where an index of another scope (or of format 3) would be. It cannot be
    # unlinked; the save still writes this scope's index, and the folder stays as it is.
    (tmp_path / CACHE_DIR).mkdir()
    folder = tmp_path / CACHE_DIR / f"index-{'c' * 16}{suffix}"
    (folder / "Ünïcode — 日本").mkdir(parents=True)
    cache = PageCache.open(tmp_path, SCOPE)
    cache.keep("memory/page.md", CachedPage("k" * 32, 10, "Привет 🎉", "p.pack", 0, "d" * 64))
    cache.save()
    assert PageCache.open(tmp_path, SCOPE).pages["memory/page.md"].search == "Привет 🎉"
    assert (folder / "Ünïcode — 日本").is_dir()


def test_a_dangling_link_named_like_an_index_never_stops_a_save(tmp_path: Path) -> None:
    (tmp_path / CACHE_DIR).mkdir()
    link = tmp_path / CACHE_DIR / f"index-{'c' * 16}{INDEX_SUFFIX}"
    link.symlink_to(tmp_path / "nowhere-ïndex")
    cache = PageCache.open(tmp_path, SCOPE)
    cache.keep("memory/page.md", CachedPage("k" * 32, 10, "Ελληνικά", "p.pack", 0, "d" * 64))
    cache.save()
    assert PageCache.open(tmp_path, SCOPE).pages["memory/page.md"].search == "Ελληνικά"
    assert not (tmp_path / "nowhere-ïndex").exists()
