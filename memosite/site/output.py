"""Checks and repairs on a built site directory: secret scan, whole search index, stale pages.

These run at the end of every build (from the plugin's ``on_post_build``) and know only the site
directory, not MkDocs.
"""

from __future__ import annotations

import json
import os
import shutil
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
