"""The installed theme's file listing, kept in this user's cache directory across build processes.

MkDocs lists a theme's files on every build (a walk of each theme directory and a dozen patterns
matched per file, about a third of a second for Material): most of a one-record rebuild's own
work at 1,000 records. An installed theme does not change while its version stays, so the names
it lists are kept per user, keyed by the engine's and theme's versions, the directories listed
(with their modification times: a reinstall makes new ones) and what the listing filtered out.
The cache is data only, a list of relative names; a name that is not a plain relative path is a
damaged cache, read as no cache at all.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path

LISTING_DIR = "theme-listing"
# Bumped when what a cached listing holds changes.
FORMAT = 1


def listing_key(directories: Sequence[str], *parts: str) -> str:
    """The cache key of the listing of ``directories`` (installed theme folders) filtered as
    ``parts`` say (engine and theme versions, the patterns left out)."""
    from memosite.site.cache import digest

    stamps = []
    for directory in directories:
        try:
            stamps.append(f"{directory}:{os.stat(directory).st_mtime_ns}")
        except OSError:
            stamps.append(f"{directory}:gone")
    return digest(f"format={FORMAT}", *parts, *stamps)


def _cache_dir() -> Path | None:
    from memosite.errors import StorageError
    from memosite.userdirs import private_dir, user_cache_dir

    try:
        return private_dir(user_cache_dir() / LISTING_DIR)
    except StorageError:
        return None  # a cache, not a requirement


def _plain(name: object) -> bool:
    if not isinstance(name, str) or not name or name.startswith("/") or "\\" in name or "\0" in name:
        return False
    return all(part not in ("", ".", "..") for part in name.split("/"))


def load_listing(key: str) -> frozenset[str] | None:
    """The names kept under ``key``, or None (not kept, unreadable or damaged)."""
    directory = _cache_dir()
    if directory is None:
        return None
    try:
        fd = os.open(directory / f"{key}.json", os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        with open(fd, encoding="utf-8") as handle:
            names = json.load(handle)
    except (OSError, ValueError):
        return None
    if not isinstance(names, list) or not all(_plain(name) for name in names):
        return None
    return frozenset(names)


def store_listing(key: str, names: frozenset[str]) -> None:
    """Keep ``names`` under ``key`` (atomically; a failure to write leaves no cache, not an error)."""
    directory = _cache_dir()
    if directory is None:
        return
    with contextlib.suppress(OSError):
        fd, temporary = tempfile.mkstemp(prefix=".listing-", dir=directory)
        try:
            with open(fd, "w", encoding="utf-8") as handle:
                json.dump(sorted(names), handle)
            os.replace(temporary, directory / f"{key}.json")
        except OSError:
            Path(temporary).unlink(missing_ok=True)
            raise
