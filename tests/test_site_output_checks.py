"""What ``memosite build`` checks before it changes its folder in place, done in bulk (issue 24) and
exactly as strong as one look per path: a person's file or link where the site needs a directory
stops the rebuild before any change, wherever it stands; a manifest's files are read only when each
is [digest, size, time, inode] of a text and integers, and its names only when each stays inside."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memosite.errors import InvalidArguments, SafetyViolation
from memosite.site.build import build_site
from memosite.site.destination import GENERATOR, MANIFEST
from memosite.site.manifest import _all_safe_relative, _safe_relative, read_manifest
from memosite.site.output import _not_a_directory, _not_directories
from memosite.store import upsert_record
from memosite.vault import Vault

PROJECT = "shop"
TITLES = ("Café", "Ошибка", "Σφάλμα", "丸め誤差", "خطأ", "🎉 race")


def _before_bulk(path: str) -> bool:
    """The check as it stood before it was done by listings: one look per path."""
    return os.path.lexists(path) and (os.path.islink(path) or not os.path.isdir(path))


# --- the directories the site needs ------------------------------------------------------------

_NAMES = ["a", "b", "é", "日本", "A"]
_KINDS = ["dir", "file", "link to a dir", "link to a file", "dangling link", "absent"]


def _closed(paths: set[str]) -> set[str]:
    closed: set[str] = set()
    for path in paths:
        parts = path.split("/")
        closed.update("/".join(parts[: n + 1]) for n in range(len(parts)))
    return closed


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    tree=st.dictionaries(
        st.lists(st.sampled_from(_NAMES), min_size=1, max_size=3).map("/".join), st.sampled_from(_KINDS), max_size=8
    ),
    needed=st.sets(st.lists(st.sampled_from(_NAMES), min_size=1, max_size=3).map("/".join), max_size=8),
)
def test_the_listing_check_finds_what_one_look_per_directory_finds(
    tree: dict[str, str], needed: set[str], tmp_path: Path
) -> None:
    base = tmp_path / "tree"
    shutil.rmtree(base, ignore_errors=True)
    (base / "elsewhere/d").mkdir(parents=True)
    (base / "elsewhere/f").write_text("x", encoding="utf-8")
    target = base / "site"
    target.mkdir()
    for path, kind in sorted(tree.items(), key=lambda item: item[0].count("/")):
        where = target / path
        if kind == "absent" or not where.parent.is_dir() or os.path.lexists(where):
            continue
        if kind == "dir":
            where.mkdir()
        elif kind == "file":
            where.write_text("mine", encoding="utf-8")
        elif kind == "link to a dir":
            where.symlink_to(base / "elsewhere/d", target_is_directory=True)
        elif kind == "link to a file":
            where.symlink_to(base / "elsewhere/f")
        else:
            where.symlink_to(base / "nowhere")
    names = _closed(needed)  # the site needs a directory's parents too
    found = _not_directories(os.fspath(target), names)
    assert found == {name for name in names if _before_bulk(f"{target}/{name}")}
    assert found == {name for name in names if _not_a_directory(f"{target}/{name}")}


def _fill(vault: Vault) -> None:
    for n, title in enumerate(TITLES):
        upsert_record(
            vault, PROJECT, kind="trap", body=f"{title}: body {n}.", slug=f"trap-{n}", frontmatter={"title": title}
        )


def _tree(root: Path) -> dict[str, bytes | str]:
    found: dict[str, bytes | str] = {}
    for directory, _dirs, names in os.walk(root):
        for name in names:
            path = Path(directory) / name
            found[path.relative_to(root).as_posix()] = os.readlink(path) if path.is_symlink() else path.read_bytes()
    return found


@pytest.mark.parametrize(
    "planted",
    ["memory/shop/traps/trap-3", "memory/shop/traps", "memory/shop", "memory"],
)
def test_a_link_planted_for_a_records_folder_stops_the_rebuild_before_any_change(
    planted: str, tmp_path: Path, vault: Vault
) -> None:
    # The folder moved elsewhere and a link left in its place: every page in it still has the
    # inode, time and size memosite recorded, so only the link itself gives it away.
    _fill(vault)
    site = tmp_path / "site"
    build_site(vault, out_dir=site)
    outside = tmp_path / "outside"
    (site / planted).rename(outside)
    (site / planted).symlink_to(outside, target_is_directory=True)
    before, outside_before = _tree(site), _tree(outside)
    upsert_record(vault, PROJECT, kind="trap", body="Ελληνικά changed.", slug="trap-3", frontmatter={"title": "Ζ"})
    with pytest.raises(InvalidArguments, match=f"would replace {planted}, which memosite did not write"):
        build_site(vault, out_dir=site)
    assert _tree(site) == before and _tree(outside) == outside_before


def test_a_file_put_where_a_records_folder_stood_stops_the_rebuild_before_any_change(
    tmp_path: Path, vault: Vault
) -> None:
    _fill(vault)
    site = tmp_path / "site"
    build_site(vault, out_dir=site)
    shutil.rmtree(site / "memory/shop/traps/trap-2")
    (site / "memory/shop/traps/trap-2").write_text("a person's notes", encoding="utf-8")
    before = _tree(site)
    with pytest.raises(InvalidArguments, match="would replace memory/shop/traps/trap-2, which memosite did not write"):
        build_site(vault, out_dir=site)
    assert _tree(site) == before


# --- what a manifest may hold --------------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(names=st.lists(st.text(alphabet="./a\0é日\n", max_size=8), max_size=6))
def test_names_checked_together_pass_exactly_when_each_passes_alone(names: list[str]) -> None:
    assert _all_safe_relative(names) == all(_safe_relative(name) for name in names)


def _signed(key: bytes, files: object, dirs: object) -> str:
    """A manifest laid out as memosite writes one, signed with ``key``: its signature holds, so
    what it says is read (and must still be refused when it is no manifest memosite writes)."""
    body = json.dumps(
        {"dirs": dirs, "files": files, "format": 2, "generator": GENERATOR},
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=True,
    )
    mac = hmac.new(key, body.encode("ascii"), hashlib.sha256).hexdigest()
    return f'{body[:-1]},"mac":"{mac}"}}\n'


GOOD = ["ab" * 32, 5, 1, 2]


@pytest.mark.parametrize(
    ("files", "dirs"),
    [
        ({"index.html": ["ab" * 32, True, 1, 2]}, []),
        ({"index.html": ["ab" * 32, 5.0, 1, 2]}, []),
        ({"index.html": ["ab" * 32, "5", 1, 2]}, []),
        ({"index.html": [7, 5, 1, 2]}, []),
        ({"index.html": ["ab" * 32, 5, 1]}, []),
        ({"index.html": ["ab" * 32, 5, 1, 2, 3]}, []),
        ({"index.html": {"digest": "ab" * 32}}, []),
        ({"index.html": GOOD, "b.html": None}, []),
        ({"index.html": GOOD}, {"a": 1}),
        ({"../outside.txt": GOOD}, []),
        ({"a//b.html": GOOD}, []),
        ({"/etc/passwd": GOOD}, []),
        ({"": GOOD}, []),
        ({"index.html": GOOD}, ["a/./b"]),
        ({"index.html": GOOD}, ["a/"]),
        ([["index.html", GOOD]], []),
    ],
    ids=lambda value: json.dumps(value, ensure_ascii=False)[:40],
)
def test_a_manifest_signed_with_this_key_holding_what_memosite_never_writes_is_refused(
    files: object, dirs: object, tmp_path: Path
) -> None:
    key = os.urandom(32)
    (tmp_path / MANIFEST).write_text(_signed(key, files, dirs), encoding="utf-8")
    with pytest.raises(SafetyViolation):
        read_manifest(tmp_path / MANIFEST, GENERATOR, key)


def test_a_manifest_signed_with_this_key_in_every_script_reads_back(tmp_path: Path) -> None:
    key = os.urandom(32)
    files = {f"{title}/index.html": ["cd" * 32, n, n * 1000, n + 7] for n, title in enumerate(TITLES)}
    (tmp_path / MANIFEST).write_text(_signed(key, files, sorted(TITLES)), encoding="utf-8")
    manifest = read_manifest(tmp_path / MANIFEST, GENERATOR, key)
    assert manifest is not None
    assert {name: written.to_json() for name, written in manifest.files.items()} == files
    assert manifest.dirs == frozenset(TITLES)
