"""The page cache: built pages reused while nothing they depend on has changed.

A page's key is a digest of what it depends on: its generated Markdown (which holds everything the
record, the view or the dashboard shows), the templates' checksum, the site's configuration and
navigation, memosite's, MkDocs' and the theme's versions. Under ``<vault>/.memosite/site-cache/``
a build keeps, per key, the finished HTML page and its search entries; the next ``memosite build``
(a new process) copies unchanged pages instead of rendering them. ``serve`` keeps the same facts
in memory between rebuilds. Texts found clean by the secret scan are remembered by digest, so an
unchanged text is never scanned twice. Only a build that succeeded (nothing found) is kept.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from memosite.secrets import SecretFinding, scan_text
from memosite.vault import TEMP_PREFIX, atomic_write_text, warn

CACHE_DIR = "site-cache"
FORMAT = 1
# One index per site configuration (memosite build and serve on its address differ in site_url);
# the pages of the most recently used few are kept.
KEPT_SCOPES = 4


def _index_name(scope: str) -> str:
    return f"index-{scope[:16]}.json"


def digest(*parts: str) -> str:
    h = hashlib.blake2b(digest_size=16)
    for part in parts:
        h.update(part.encode("utf-8", "surrogatepass"))
        h.update(b"\0")
    return h.hexdigest()


@dataclass
class CachedPage:
    key: str
    size: int
    search: list[dict[str, Any]]


@dataclass
class PageCache:
    """The on-disk cache of one vault for one site configuration (``scope``)."""

    root: Path | None
    scope: str
    pages: dict[str, CachedPage] = field(default_factory=dict)  # src_uri -> entry
    clean: set[str] = field(default_factory=set)  # digests of texts the scan found clean
    _added: dict[str, CachedPage] = field(default_factory=dict)

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
            data = json.loads((root / _index_name(scope)).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return cache
        if data.get("format") != FORMAT or data.get("scope") != scope:
            return cache
        for uri, item in data.get("pages", {}).items():
            cache.pages[uri] = CachedPage(str(item["key"]), int(item["size"]), list(item.get("search", [])))
        cache.clean = set(data.get("clean", []))
        return cache

    def _file(self, key: str) -> Path:
        assert self.root is not None
        return self.root / "pages" / key[:2] / f"{key}.html"

    def lookup(self, src_uri: str, key: str) -> CachedPage | None:
        if self.root is None:
            return None
        entry = self.pages.get(src_uri)
        if entry is None or entry.key != key:
            return None
        try:
            if self._file(key).stat().st_size != entry.size:
                return None
        except OSError:
            return None
        return entry

    def copy_to(self, entry: CachedPage, dest: str) -> bool:
        """Write the cached page to ``dest``; False when the cached copy is gone."""
        try:
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            shutil.copyfile(self._file(entry.key), dest)
        except OSError:
            return False
        return True

    def store(self, src_uri: str, key: str, built: str, search: list[dict[str, Any]]) -> None:
        """Keep the page just built at ``built`` (kept on disk by :meth:`save`)."""
        if self.root is None:
            return
        try:
            size = os.path.getsize(built)
        except OSError:
            return
        self._added[src_uri] = CachedPage(key, size, search)
        target = self._file(key)
        if not target.exists():
            with contextlib.suppress(OSError):
                target.parent.mkdir(parents=True, exist_ok=True)
                temp = target.with_name(f"{TEMP_PREFIX}{target.name}")
                shutil.copyfile(built, temp)
                os.replace(temp, target)

    def keep(self, src_uri: str, entry: CachedPage, search: list[dict[str, Any]] | None = None) -> None:
        """Carry an entry reused by this build into the saved index."""
        self._added[src_uri] = CachedPage(entry.key, entry.size, entry.search if search is None else search)

    def commit(self) -> None:
        """Make this (successful) build's pages the cache's, in memory only."""
        self.pages = dict(self._added)
        self._added = {}

    def save(self) -> None:
        """Write the index of this (successful) build and drop pages no page uses any more."""
        if self.root is None:
            return
        if self._added:
            self.commit()
        data = {
            "format": FORMAT,
            "scope": self.scope,
            "pages": {uri: {"key": p.key, "size": p.size, "search": p.search} for uri, p in self.pages.items()},
            "clean": sorted(self.clean),
        }
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            atomic_write_text(
                self.root / _index_name(self.scope), json.dumps(data, separators=(",", ":")), durable=False
            )
        except Exception as exc:  # a cache, not a requirement
            warn(f"page cache not saved: {exc}")
            return
        wanted = {f"{p.key}.html" for p in self.pages.values()}
        indexes = sorted(self.root.glob("index-*.json"), key=lambda p: p.stat().st_mtime, reverse=True)
        for stale in indexes[KEPT_SCOPES:]:
            stale.unlink(missing_ok=True)
        for other in indexes[:KEPT_SCOPES]:
            if other.name == _index_name(self.scope):
                continue
            try:
                pages = json.loads(other.read_text(encoding="utf-8")).get("pages", {})
            except (OSError, ValueError):
                continue
            wanted.update(f"{item['key']}.html" for item in pages.values() if isinstance(item, dict))
        pages_dir = self.root / "pages"
        for directory, _dirs, names in os.walk(pages_dir):
            for name in names:
                if name not in wanted:
                    with contextlib.suppress(OSError):
                        os.unlink(os.path.join(directory, name))

    def forget_added(self) -> None:
        self._added = {}


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

    def scan_all(self, texts: Iterable[str], where: str) -> bool:
        return all([self.scan(text, where) for text in texts])

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
