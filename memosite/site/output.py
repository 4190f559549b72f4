"""Checks and repairs on a built site directory: secret scan, whole search index, stale pages.

These run at the end of every build (from the plugin's ``on_post_build``) and know only the site
directory, not MkDocs.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from memosite.secrets import SecretFinding, scan_text

SCANNED_SUFFIXES = (".html", ".json", ".xml", ".txt")
SEARCH_INDEX = Path("search") / "search_index.json"


def _scanned_files(site_dir: Path, modified_since_ns: int | None) -> Iterator[Path]:
    for directory, _dirs, names in os.walk(site_dir):
        for name in sorted(names):
            if not name.endswith(SCANNED_SUFFIXES):
                continue
            path = Path(directory) / name
            if modified_since_ns is not None and path.stat().st_mtime_ns < modified_since_ns:
                continue
            yield path


def scan_site_for_secrets(site_dir: Path, *, modified_since_ns: int | None = None) -> list[SecretFinding]:
    """Suspected secrets in the site's HTML, JSON, XML and text files (the search index too).

    ``where`` of each finding is the file's path relative to ``site_dir``. With
    ``modified_since_ns`` only files written since then are read (a dirty rebuild).
    """
    findings: list[SecretFinding] = []
    for path in _scanned_files(site_dir, modified_since_ns):
        text = path.read_text(encoding="utf-8", errors="replace")
        findings.extend(scan_text(text, where=path.relative_to(site_dir).as_posix()))
    return findings


class OutputScanner:
    """Scans pages as the build writes them, in a helper process when the build is large.

    MkDocs renders on one core, and scanning a thousand pages costs a fifth as much again; a
    big build streams its pages to ``python -m memosite.site.scanworker`` on another core
    instead. :meth:`finish` then reads every output file nobody handed in (search index,
    sitemap, ...). If the helper cannot run, everything is scanned here.
    """

    def __init__(self, site_dir: Path, *, parallel: bool) -> None:
        self.site_dir = site_dir
        self._scanned: set[str] = set()
        self._findings: list[SecretFinding] = []
        self._worker: subprocess.Popen[str] | None = None
        if parallel:
            try:
                self._worker = subprocess.Popen(
                    [sys.executable, "-m", "memosite.site.scanworker"],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    text=True,
                    encoding="utf-8",
                )
            except OSError:
                self._worker = None

    def submit(self, path: str | Path, text: str) -> None:
        """Scan ``text``, the content written to ``path`` (inside the site directory)."""
        absolute = Path(path).absolute()
        self._scanned.add(str(absolute))
        where = absolute.relative_to(self.site_dir.absolute()).as_posix()
        if self._worker is not None and self._worker.stdin is not None:
            try:
                self._worker.stdin.write(json.dumps({"where": where, "text": text}) + "\n")
                return
            except OSError:
                self._abandon_worker()
        self._findings.extend(scan_text(text, where=where))

    def _abandon_worker(self) -> None:
        # Whatever the helper was given is scanned again from disk by finish().
        self.close()
        self._scanned.clear()

    def finish(self, *, modified_since_ns: int | None = None) -> list[SecretFinding]:
        """Every finding: pages handed in, plus every other output file (written since then)."""
        for path in _scanned_files(self.site_dir, modified_since_ns):
            if str(path.absolute()) not in self._scanned:
                self.submit(path, path.read_text(encoding="utf-8", errors="replace"))
        if self._worker is not None:
            try:
                output, _ = self._worker.communicate(timeout=600)
            except (OSError, subprocess.TimeoutExpired):
                output = None
            if self._worker.returncode != 0 or output is None:
                self._abandon_worker()
                return scan_site_for_secrets(self.site_dir, modified_since_ns=modified_since_ns)
            self._findings.extend(SecretFinding(**json.loads(line)) for line in output.splitlines() if line.strip())
            self._worker = None
        return sorted(self._findings, key=lambda f: (f.where, f.line))

    def close(self) -> None:
        """Stop the helper (a failed build does not wait for its scan)."""
        if self._worker is not None:
            with contextlib.suppress(OSError):
                self._worker.kill()
            self._worker.wait()
            for stream in (self._worker.stdin, self._worker.stdout):
                if stream is not None:
                    with contextlib.suppress(OSError):
                        stream.close()
            self._worker = None


def clean_site_dir(site_dir: Path) -> None:
    """Empty ``site_dir`` (a build that found a secret publishes nothing)."""
    if not site_dir.is_dir():
        return
    for entry in site_dir.iterdir():
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)


def remove_outputs(site_dir: Path, paths: Iterable[str]) -> None:
    """Delete pages of records that are gone, and directories they leave empty."""
    root = site_dir.resolve()
    for raw in paths:
        path = Path(raw)
        path.unlink(missing_ok=True)
        parent = path.parent
        while parent.resolve() != root and root in parent.resolve().parents:
            try:
                parent.rmdir()
            except OSError:
                break
            parent = parent.parent


def complete_search_index(
    site_dir: Path,
    page_urls: list[str],
    rebuilt: set[str],
    previous: dict[str, list[dict[str, Any]]],
    *,
    rewrite: bool,
) -> dict[str, list[dict[str, Any]]]:
    """Make ``search/search_index.json`` cover every page, and return its entries by page URL.

    A dirty build indexes only the pages it rebuilt; entries of every other page are taken from
    ``previous`` (the last build's), entries of pages that no longer exist are dropped. Without
    a search plugin (no index file) there is nothing to do.
    """
    path = site_dir / SEARCH_INDEX
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError):
        return {}
    fresh: dict[str, list[dict[str, Any]]] = {}
    for doc in data.get("docs", []):
        fresh.setdefault(_page_url(str(doc.get("location", ""))), []).append(doc)
    merged: dict[str, list[dict[str, Any]]] = {}
    for url in page_urls:
        docs = fresh.get(url, []) if url in rebuilt else previous.get(url, [])
        if docs:
            merged[url] = docs
    if rewrite:
        data["docs"] = [doc for docs in merged.values() for doc in docs]
        path.write_text(json.dumps(data, separators=(",", ":"), default=str), encoding="utf-8")
    return merged


def _page_url(location: str) -> str:
    return location.split("#", 1)[0]
