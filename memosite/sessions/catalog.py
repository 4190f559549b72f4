"""Finding the sessions of a root: direct child directories that validate as sessions.

A child counts as a session only if it is a real directory (not a symlink) with a valid name
and either a manifest naming it or a log whose first event starts the session
(``thread.started``). Manifests memosite writes, vtcode writes and older memosite ones are all
read. Anything else (the ``session-*.md`` records, stray directories, symlinks) is ignored.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memosite.errors import InvalidArguments, MemositeError
from memosite.sessions import safefs
from memosite.sessions.errors import SessionsRootNotFound
from memosite.sessions.events import SESSION_STARTED, decode_event
from memosite.sessions.log import EventLog
from memosite.sessions.metadata import Manifest
from memosite.sessions.paths import (
    EVENTS_FILE,
    MANIFEST_FILE,
    SessionPaths,
    sessions_root,
    validate_dir_name,
    validate_session_id,
)
from memosite.vault import Vault


@dataclass(frozen=True)
class SessionEntry:
    session_id: str
    path: Path
    manifest: Manifest

    @property
    def active(self) -> bool:
        return self.manifest.status == "active"

    @property
    def last_activity(self) -> str:
        return self.manifest.updated or self.manifest.end_time or self.manifest.start_time or ""

    def to_json(self) -> dict[str, Any]:
        meta = self.manifest
        return {
            "sessionId": self.session_id,
            "status": meta.status,
            "startTime": meta.start_time,
            "endTime": meta.end_time,
            "updated": meta.updated,
            "turns": meta.last_turn,
            "events": meta.event_count,
        }


def _first_event_is_start(path: Path) -> bool:
    try:
        fd = safefs.open_private(path, os.O_RDONLY)
    except (FileNotFoundError, MemositeError):
        return False
    try:
        head = os.pread(fd, 64 * 1024, 0)
    finally:
        os.close(fd)
    line, newline, _ = head.partition(b"\n")
    event = decode_event(line, 0) if newline else None
    return event is not None and event.type == SESSION_STARTED


def validate_session_dir(root: Path, name: str, project: str, *, named_root: bool = False) -> SessionEntry | None:
    """The session in ``root/name``, or None when that entry is not a session directory.

    ``named_root``: ``root`` is a root the user named (such as ``.vtcode/sessions``), where
    names follow vtcode's rule rather than memosite's.
    """
    try:
        validate_dir_name(name) if named_root else validate_session_id(name)
    except InvalidArguments:
        return None
    path = root / name
    try:
        info = os.lstat(path)
    except OSError:
        return None
    if not stat.S_ISDIR(info.st_mode):
        return None  # symlinks land here too: lstat does not follow them
    try:
        manifest = Manifest.parse(safefs.read_private(path / MANIFEST_FILE))
    except (FileNotFoundError, MemositeError):
        manifest = None
    if manifest is not None and manifest.session_id == name:
        return SessionEntry(name, path, manifest)
    if not _first_event_is_start(path / EVENTS_FILE):
        return None
    try:
        log = EventLog.open(SessionPaths(root, name), project, writable=False)
    except MemositeError:
        return None
    return SessionEntry(name, path, log.meta)


def require_root(root: Path) -> Path:
    """``root`` when it is a directory (a symlink is refused); raise SessionsRootNotFound otherwise.

    For a root someone named: a mistyped ``--root`` must not read as an empty one. The project's
    own root not existing yet simply means no sessions (its first session creates it).
    """
    info = safefs.refuse_symlink(root)
    if info is None:
        raise SessionsRootNotFound(f"no sessions root at {root}")
    if not stat.S_ISDIR(info.st_mode):
        raise SessionsRootNotFound(f"no sessions root at {root} (it is not a directory)")
    return root


def iter_sessions(root: Path, project: str, *, named_root: bool = False) -> Iterator[SessionEntry]:
    """Valid sessions under ``root`` (a project's ``sessions/`` or a named root), in name order."""
    if safefs.refuse_symlink(root) is None:
        return
    try:
        names = sorted(entry.name for entry in os.scandir(root))
    except (FileNotFoundError, NotADirectoryError):
        return
    for name in names:
        entry = validate_session_dir(root, name, project, named_root=named_root)
        if entry is not None:
            yield entry


def list_sessions(vault: Vault, project: str, *, root: Path | None = None) -> list[SessionEntry]:
    """The sessions of the project (or of ``root``), most recently active first."""
    entries = list(iter_sessions(root or sessions_root(vault, project), project, named_root=root is not None))
    return sorted(entries, key=lambda entry: (entry.last_activity, entry.session_id), reverse=True)
