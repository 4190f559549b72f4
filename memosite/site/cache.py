"""The page cache: built pages reused while nothing they depend on has changed.

A page's key is a digest of what it depends on: its generated Markdown (which holds everything the
record, the view or the dashboard shows), the templates' checksum, the site's configuration and
navigation, memosite's, MkDocs' and the theme's versions. Under ``<vault>/.memosite/site-cache/``
a build keeps, per key, the finished HTML page and its search entries; the next ``memosite build``
(a new process) copies unchanged pages instead of rendering them. The pages a build rendered go
into one pack file (one file to write, not one per page); a pack that is mostly pages no index
uses any more is emptied into the next build's. ``serve`` keeps the same facts
in memory between rebuilds. Texts found clean by the secret scan are remembered by digest, so an
unchanged text is never scanned twice. Only a build that succeeded (nothing found) is kept.
"""

from __future__ import annotations

import contextlib
import hashlib
import html
import json
import os
import re
import shutil
import time
import zlib
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from itertools import accumulate
from pathlib import Path
from typing import Any, BinaryIO

from memosite.secrets import SecretFinding, scan_text
from memosite.site.manifest import data_digest
from memosite.vault import TEMP_PREFIX, atomic_write_bytes, warn

CACHE_DIR = "site-cache"
# Format 4 (2026-12): the index is two lines of JSON, then its texts one after another, then a
# check (see "the index file" below); caches of an earlier format (index-*.json) are dropped.
FORMAT = 4
INDEX_SUFFIX = ".index"
PACKS_DIR = "packs"
# A pack still being written (a temp name) that is older than this was left by a build that died.
STALE_TEMP_SECONDS = 24 * 3600
# One index per site configuration (memosite build and serve on its address differ in site_url);
# the pages of the most recently used few are kept.
KEPT_SCOPES = 4


def _index_name(scope: str) -> str:
    return f"index-{scope[:16]}{INDEX_SUFFIX}"


# The two ways digest() lays out its parts, each hashed under its own BLAKE2b personalisation: no
# input of one is ever an input of the other, nor of the digest kept by caches before format 4
# (no personalisation: each part followed by a NUL).
_JOINED = b"memosite:joined"  # no part holds U+001F (unit separator): the parts joined by it
_COUNTED = b"memosite:counted"  # otherwise: the parts' lengths, a newline, the parts one after another
# Not NUL: callers put NULs inside parts (pages.record_basis), which would send them the long way.
_SEPARATOR = "\x1f"


def digest_input(*parts: str) -> tuple[bytes, bytes]:
    """What :func:`digest` hashes for ``parts``: (personalisation, bytes). Two different tuples of
    parts never give the same pair (each layout can be read back into its parts)."""
    whole = "".join(parts)
    if parts and _SEPARATOR not in whole:
        return _JOINED, _SEPARATOR.join(parts).encode("utf-8", "surrogatepass")
    lengths = ",".join(map(str, map(len, parts)))
    return _COUNTED, f"{lengths}\n{whole}".encode("utf-8", "surrogatepass")


_JOINED_HASH = hashlib.blake2b(digest_size=16, person=_JOINED)
_COUNTED_HASH = hashlib.blake2b(digest_size=16, person=_COUNTED)


def digest(*parts: str) -> str:
    """A 128-bit digest of the tuple ``parts`` (a cache key): BLAKE2b of :func:`digest_input`."""
    # digest_input, inlined (30,000 calls in a build at 10k records): the parts joined and hashed
    # in one call, not one update per part and separator; a copy of a made hash object costs less
    # than making one with its personalisation.
    whole = "".join(parts)
    if parts and _SEPARATOR not in whole:
        h = _JOINED_HASH.copy()
        h.update(_SEPARATOR.join(parts).encode("utf-8", "surrogatepass"))
    else:
        h = _COUNTED_HASH.copy()
        h.update(f"{','.join(map(str, map(len, parts)))}\n{whole}".encode("utf-8", "surrogatepass"))
    return h.hexdigest()


@dataclass
class CachedPage:
    key: str
    size: int
    search: str  # the page's search entries as they stand in the index's ``docs`` list (JSON, no brackets)
    pack: str = ""  # the pack file holding the page's HTML
    offset: int = 0
    digest: str = ""  # of the HTML, as a site manifest records it (memosite.site.manifest.data_digest)


def docs_text(docs: list[dict[str, Any]]) -> str:
    """Search entries as they stand in the search index's ``docs`` list (one ``dumps`` for all)."""
    return json.dumps(docs, separators=(",", ":"), default=str)[1:-1]


def _pack_name() -> str:
    return f"pack-{os.urandom(8).hex()}.pack"


@dataclass
class PageCache:
    """The on-disk cache of one vault for one site configuration (``scope``).

    Pages are kept in pack files, one per build that rendered something (one file written, not
    one per page: creating a thousand small files costs more than rendering some of them).
    """

    root: Path | None
    scope: str
    pages: dict[str, CachedPage] = field(default_factory=dict)  # src_uri -> entry
    clean: set[str] = field(default_factory=set)  # digests of texts the scan found clean
    # What the last build derived per record and the next one reuses while the record's file and
    # the rest of what it was made from are unchanged: src_uri -> (stamp, records.json row).
    rows: dict[str, tuple[str, str]] = field(default_factory=dict)
    _added: dict[str, CachedPage] = field(default_factory=dict)
    _writing: tuple[str, BinaryIO] | None = None  # this build's pack (name, temp file)
    _packs: dict[str, int] = field(default_factory=dict)  # pack name -> size (-1: missing)
    _readers: dict[str, int] = field(default_factory=dict)  # pack name -> open descriptor
    _own: set[str] = field(default_factory=set)  # packs this process wrote

    @classmethod
    def open(cls, internal_dir: Path | None, scope: str) -> PageCache:
        """The cache under ``internal_dir`` (None: a cache that keeps nothing on disk)."""
        if internal_dir is None:
            return cls(None, scope)
        root = internal_dir / CACHE_DIR
        if root.is_symlink() or internal_dir.is_symlink():
            warn(f"page cache {root} not used: it is a symlink")
            return cls(None, scope)
        cache = cls(root, scope)
        try:
            data = (root / _index_name(scope)).read_bytes()
        except OSError:
            return cache
        decoded = _decode_index(data, scope)
        if decoded is not None:
            cache.pages, cache.clean, cache.rows = decoded
        return cache

    def _pack_path(self, name: str) -> Path:
        assert self.root is not None
        return self.root / PACKS_DIR / name

    def _pack_size(self, name: str) -> int:
        size = self._packs.get(name)
        if size is None:
            try:
                size = self._pack_path(name).stat().st_size
            except OSError:
                size = -1
            self._packs[name] = size
        return size

    def lookup(self, src_uri: str, key: str) -> CachedPage | None:
        if self.root is None:
            return None
        entry = self.pages.get(src_uri)
        if entry is None or entry.key != key:
            return None
        # Called twice per page of a build: the pack's size known already is looked up inline.
        size = self._packs.get(entry.pack)
        if (self._pack_size(entry.pack) if size is None else size) < entry.offset + entry.size:
            return None
        return entry

    def _read(self, entry: CachedPage) -> bytes | None:
        try:
            fd = self._readers.get(entry.pack)
            if fd is None:
                fd = self._readers[entry.pack] = os.open(self._pack_path(entry.pack), os.O_RDONLY)
            data = os.pread(fd, entry.size, entry.offset)
        except OSError:
            return None
        return data if len(data) == entry.size else None

    def copy_to(self, entry: CachedPage, dest: str) -> bool:
        """Write the cached page to ``dest``; False when the cached copy is gone."""
        data = self._read(entry)
        if data is None:
            return False
        try:
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            with open(dest, "wb") as handle:
                handle.write(data)
        except OSError:
            return False
        return True

    def place(self, entry: CachedPage, dest: Path, *, mode: int = 0o644) -> bool:
        """Put the cached page at ``dest`` atomically (a reader sees the old page or the new one),
        with permissions ``mode``; False when the cached copy is gone or does not hold what its
        digest says."""
        data = self._read(entry)
        if data is None or data_digest(data) != entry.digest:
            return False
        dest.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(dest, data, mode=mode, durable=False)
        return True

    def _append(self, data: bytes) -> tuple[str, int] | None:
        """Add ``data`` to this build's pack; where it went, or None when nothing can be written."""
        try:
            if self._writing is None:
                name = _pack_name()
                (self._pack_path(name).parent).mkdir(parents=True, exist_ok=True)
                self._writing = (name, open(self._pack_path(TEMP_PREFIX + name), "wb"))  # noqa: SIM115
            name, handle = self._writing
            offset = handle.tell()
            handle.write(data)
        except OSError:
            return None
        return name, offset

    def store(self, src_uri: str, key: str, built: str, search: str) -> None:
        """Keep the page just built at ``built`` (kept on disk by :meth:`save`)."""
        if self.root is None:
            return
        try:
            with open(built, "rb") as handle:
                data = handle.read()
        except OSError:
            return
        where = self._append(data)
        if where is not None:
            self._added[src_uri] = CachedPage(key, len(data), search, *where, data_digest(data))

    def keep(self, src_uri: str, entry: CachedPage, search: str | None = None) -> None:
        """Carry an entry reused by this build into the saved index."""
        # serve calls this for every unchanged page on each rebuild: no dataclasses.replace here.
        self._added[src_uri] = (
            entry
            if search is None
            else CachedPage(entry.key, entry.size, search, entry.pack, entry.offset, entry.digest)
        )

    def _finish_pack(self) -> bool:
        """Close this build's pack under its final name; False when it could not be kept."""
        if self._writing is None:
            return True
        name, handle = self._writing
        self._writing = None
        try:
            handle.close()
            os.replace(self._pack_path(TEMP_PREFIX + name), self._pack_path(name))
        except OSError:
            self._added = {uri: e for uri, e in self._added.items() if e.pack != name}
            return False
        self._own.add(name)
        self._packs.pop(name, None)
        return True

    def commit(self) -> None:
        """Make this (successful) build's pages the cache's, in memory only."""
        self._finish_pack()
        self.pages = dict(self._added)
        self._added = {}
        self._packs = {}  # sizes are looked at again by the next build
        # While serving, each rebuild writes a pack: the ones it wrote earlier and no longer
        # uses go at once (no other process knows them yet).
        used = {entry.pack for entry in self.pages.values()}
        for name in self._own - used:
            self._drop_pack(name)

    def _drop_pack(self, name: str) -> None:
        fd = self._readers.pop(name, None)
        if fd is not None:
            os.close(fd)
        self._packs.pop(name, None)
        self._own.discard(name)
        with contextlib.suppress(OSError):
            self._pack_path(name).unlink()

    def _compact(self, live: dict[str, int]) -> None:
        """Move this index's pages out of packs that are mostly dead into this build's pack."""
        for uri, entry in list(self._added.items()):
            size = self._pack_size(entry.pack)
            if size > 0 and live.get(entry.pack, 0) * 2 < size:
                data = self._read(entry)
                where = self._append(data) if data is not None else None
                if where is not None:
                    self._added[uri] = replace(entry, pack=where[0], offset=where[1])

    def save(self) -> None:
        """Write the index of this (successful) build and drop pages no page uses any more."""
        if self.root is None:
            return
        if not self._added:
            self._added = dict(self.pages)
        indexes = sorted(self.root.glob(f"index-*{INDEX_SUFFIX}"), key=_modified, reverse=True)
        others: list[dict[str, int]] = []
        for other in indexes[:KEPT_SCOPES]:
            if other.name != _index_name(self.scope):
                used = index_packs(other)
                if used is not None:
                    others.append(used)
                else:  # no index (damaged, of another format): it keeps no pack, and goes
                    _remove(other)
        live: dict[str, int] = {}
        for pack, size in [(e.pack, e.size) for e in self._added.values()] + [p for o in others for p in o.items()]:
            live[pack] = live.get(pack, 0) + size
        self._compact(live)
        self.commit()
        self._close_readers()
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            atomic_write_bytes(
                self.root / _index_name(self.scope),
                _encode_index(self.scope, self.pages, self.clean, self.rows),
                durable=False,
            )
        except Exception as exc:  # a cache, not a requirement
            warn(f"page cache not saved: {exc}")
            return
        # Indexes of an earlier format: no build reads them any more (their packs go below).
        for old in self.root.glob("index-*.json"):
            _remove(old)
        for stale in indexes[KEPT_SCOPES:]:
            _remove(stale)
        wanted = {entry.pack for entry in self.pages.values()} | {pack for o in others for pack in o}
        self._own.clear()
        for path in (self.root / PACKS_DIR).glob("*"):
            name = path.name
            if name.startswith(TEMP_PREFIX):
                # Another build may be writing it; one that crashed left it behind long ago.
                with contextlib.suppress(OSError):
                    if time.time() - path.stat().st_mtime > STALE_TEMP_SECONDS:
                        path.unlink()
            elif name not in wanted:
                with contextlib.suppress(OSError):
                    path.unlink()
        shutil.rmtree(self.root / "pages", ignore_errors=True)  # format 1 kept a file per page

    def _close_readers(self) -> None:
        for fd in self._readers.values():
            os.close(fd)
        self._readers = {}
        self._packs = {}

    def forget_added(self) -> None:
        if self._writing is not None:
            name, handle = self._writing
            self._writing = None
            with contextlib.suppress(OSError):
                handle.close()
                self._pack_path(TEMP_PREFIX + name).unlink()
        self._added = {}


def _modified(index: Path) -> float:
    """When ``index`` was last written; 0 (the oldest) when it cannot be looked at (a dangling link,
    a file another save removed meanwhile)."""
    try:
        return index.stat().st_mtime
    except OSError:
        return 0.0


def _remove(index: Path) -> None:
    """Remove an index file no build reads; what cannot be removed (a folder a person put under
    that name, a read-only file) stays, and the save goes on: the cache is no requirement."""
    with contextlib.suppress(OSError):
        index.unlink()


# --- the index file ----------------------------------------------------------------------------
#
# Two lines of JSON, then the texts of the index one after another: the pages' search entries, the
# records.json rows' stamps, then the rows. The JSON holds each text's length in characters, not
# the text: the texts are JSON themselves mostly, and escaping them into JSON strings again was
# most of what writing and reading the index cost. The first line is what another scope's save
# needs (the bytes of each pack this index uses), read without the rest:
#   {"format": 4, "scope": ..., "texts": <characters after the second line>, "packs": {name: bytes}}
# The second holds columns (one list per field, checked a list at a time), not an object per page:
#   {"pages": {"uri": [...], "key": [...], "size": [...], "pack": [...], "offset": [...],
#              "digest": [...], "search": [<characters>, ...]},
#    "clean": [digest, ...], "rows": {"uri": [...], "stamp": [<characters>, ...], "row": [...]}}
# Last, a line of the CRC-32 of everything before it (8 hex digits, no newline after them).
# An index that is cut short, altered or of another format is no index: the cache starts empty.
_PAGE_TEXTS = ("uri", "key", "pack", "digest")
_CHECK = re.compile(rb"\n[0-9a-f]{8}")
_CHECK_BYTES = 9
_PAGE_NUMBERS = ("size", "offset", "search")


def _encode_index(
    scope: str, pages: dict[str, CachedPage], clean: set[str], rows: dict[str, tuple[str, str]]
) -> list[bytes]:
    entries = list(pages.values())
    stamps = [stamp for stamp, _row in rows.values()]
    row_texts = [row for _stamp, row in rows.values()]
    searches = [page.search for page in entries]
    text = "".join([*searches, *stamps, *row_texts])  # one copy of the texts, not three
    packs: dict[str, int] = {}
    for page in entries:
        packs[page.pack] = packs.get(page.pack, 0) + page.size
    head = {"format": FORMAT, "scope": scope, "texts": len(text), "packs": packs}
    body = {
        "pages": {
            "uri": list(pages),
            "key": [page.key for page in entries],
            "size": [page.size for page in entries],
            "pack": [page.pack for page in entries],
            "offset": [page.offset for page in entries],
            "digest": [page.digest for page in entries],
            "search": list(map(len, searches)),
        },
        "clean": sorted(clean),
        "rows": {"uri": list(rows), "stamp": list(map(len, stamps)), "row": list(map(len, row_texts))},
    }
    lines = b"%s\n%s\n" % (
        json.dumps(head, separators=(",", ":"), ensure_ascii=True).encode("ascii"),
        json.dumps(body, separators=(",", ":"), ensure_ascii=True).encode("ascii"),
    )
    texts = text.encode("utf-8", "surrogatepass")
    return [lines, texts, b"\n%08x" % zlib.crc32(texts, zlib.crc32(lines))]


def _line(data: bytes, start: int = 0) -> tuple[dict[str, Any], int] | None:
    """The JSON object on the line of ``data`` at ``start`` and where the next line starts; None
    when there is none."""
    end = data.find(b"\n", start)
    if end < 0:
        return None
    try:
        value = json.loads(data[start:end])
    except ValueError:
        return None
    return (value, end + 1) if isinstance(value, dict) else None


def _head(data: bytes) -> tuple[dict[str, Any], int] | None:
    """The first line of an index of FORMAT and where the next line starts; None when it is none."""
    found = _line(data)
    return found if found is not None and found[0].get("format") == FORMAT else None


def _columns(table: object, texts: Iterable[str], numbers: Iterable[str]) -> list[list[Any]] | None:
    """The columns of ``table`` (texts first, then numbers): lists of one length, of str and of
    integers >= 0; None otherwise."""
    if not isinstance(table, dict):
        return None
    columns: list[list[Any]] = []
    for name in (*texts, *numbers):
        column = table.get(name)
        if not isinstance(column, list):
            return None
        columns.append(column)
    length = len(columns[0]) if columns else 0
    if any(len(column) != length for column in columns):
        return None
    count = len(columns) - len(tuple(numbers))
    for n, column in enumerate(columns):
        kinds = set(map(type, column))
        if not (kinds <= {str} if n < count else kinds <= {int} and (not column or min(column) >= 0)):
            return None
    return columns


def _cut(text: str, start: int, lengths: list[int]) -> tuple[list[str], int]:
    """The pieces of ``text`` of ``lengths`` one after another from ``start``; where they end."""
    ends = list(accumulate(lengths, initial=start))
    return list(map(text.__getitem__, map(slice, ends[:-1], ends[1:]))), ends[-1]


def _decode_index(data: bytes, scope: str) -> tuple[dict[str, CachedPage], set[str], dict[str, tuple[str, str]]] | None:
    """The pages, clean digests and rows of an index of ``scope``; None when ``data`` is not one
    (cut short, altered, another format or scope)."""
    # The last line: the CRC-32 of all before it (damage that keeps the layout, such as a flipped
    # byte or texts moved about, shows there; cutting the file short loses it).
    whole = memoryview(data)[:-_CHECK_BYTES]
    if len(data) < _CHECK_BYTES or not _CHECK.fullmatch(data, len(whole)) or zlib.crc32(whole) != int(data[-8:], 16):
        return None
    found = _head(data)
    if found is None or found[0].get("scope") != scope:
        return None
    head, start = found
    found = _line(data, start)
    if found is None:
        return None
    body, start = found
    page_columns = _columns(body.get("pages"), _PAGE_TEXTS, _PAGE_NUMBERS)
    row_columns = _columns(body.get("rows"), ("uri",), ("stamp", "row"))
    clean = body.get("clean")
    if page_columns is None or row_columns is None or not (isinstance(clean, list) and set(map(type, clean)) <= {str}):
        return None
    try:
        text = str(whole[start:], "utf-8", "surrogatepass")  # no copy of the bytes
    except UnicodeDecodeError:
        return None
    if len(text) != head.get("texts"):
        return None
    uris, keys, packs, digests, sizes, offsets, search_lengths = page_columns
    searches, at = _cut(text, 0, search_lengths)
    row_uris, stamp_lengths, row_lengths = row_columns
    stamps, at = _cut(text, at, stamp_lengths)
    row_texts, at = _cut(text, at, row_lengths)
    if at != len(text):
        return None
    pages = dict(zip(uris, map(CachedPage, keys, sizes, searches, packs, offsets, digests), strict=True))
    return pages, set(clean), dict(zip(row_uris, zip(stamps, row_texts, strict=True), strict=True))


def index_packs(path: Path) -> dict[str, int] | None:
    """The packs an index file uses, each with the bytes of its pages the index refers to; None
    when it is no index."""
    try:
        with open(path, "rb") as handle:
            found = _head(handle.readline())  # the first line alone: the rest is not needed here
    except OSError:
        return None
    packs = found[0].get("packs") if found is not None else None
    if not isinstance(packs, dict) or not set(map(type, packs.values())) <= {int}:
        return None
    return packs


_TAGS = re.compile(r"<[^>]*>")
_URL_ATTRIBUTES = re.compile(r'(?:href|src)="([^"]*)"')


def page_texts(html_text: str) -> tuple[str, str]:
    """What a reader (or a crawler) gets of an HTML page: its text with the markup taken out (so a
    token that highlighting split into spans is whole again, and half as much to read) and its
    link targets (a secret in a URL is no text a reader sees)."""
    text = html.unescape(_TAGS.sub("", html_text))
    urls = "\n".join(html.unescape(url) for url in _URL_ATTRIBUTES.findall(html_text))
    return text, urls


@dataclass
class Scanner:
    """The secret scan of what a build publishes, remembering texts it found clean."""

    clean: set[str]
    findings: list[SecretFinding] = field(default_factory=list)
    scanned_bytes: int = 0
    used: set[str] = field(default_factory=set)  # clean digests this build relied on

    def scan(self, text: str, where: str) -> bool:
        """Scan ``text`` (unless it was found clean before); True when it is clean."""
        key = digest(text)
        self.used.add(key)
        if key in self.clean:
            return True
        self.scanned_bytes += len(text)
        found = scan_text(text, where=where)
        if found:
            self.findings.extend(found)
            return False
        self.clean.add(key)
        return True

    def described(self, shown: int = 3) -> str:
        """The findings as one line: the first ``shown`` (kind, file, line) and how many more."""
        first = self.findings[:shown]
        places = "; ".join(f"{f.kind} in {f.where}" + (f" line {f.line}" if f.line else "") for f in first)
        more = f"; and {len(self.findings) - shown} more" if len(self.findings) > shown else ""
        return places + more

    def scan_all(self, texts: Iterable[str], where: str) -> bool:
        return all([self.scan(text, where) for text in texts])

    def scan_html(self, html_text: str, where: str, *also: str) -> bool:
        """Scan an HTML page as :func:`page_texts` reads it, and ``also`` (its title, ...)."""
        return self.scan_all([*also, *page_texts(html_text)], where)

    def scan_entries(self, text: str, where: str, boundary: re.Pattern[str]) -> bool:
        """Scan ``text`` in pieces cut just before each match of ``boundary`` (one sitemap entry
        per piece), each remembered when clean: a file that grows by one entry costs one entry's
        scan. Findings keep their line numbers in the whole text."""
        clean = True
        line = 0
        for piece in boundary.split(text):
            if not piece:
                continue
            before = len(self.findings)
            if not self.scan(piece, where):
                clean = False
                self.findings[before:] = [replace(f, line=f.line + line) for f in self.findings[before:]]
            line += piece.count("\n")
        return clean
