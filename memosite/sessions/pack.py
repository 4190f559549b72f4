"""Audit packs: ``derived/audit-pack.json`` holds the SHA-256 of every file of a session directory.

The pack is ``{"schema_version", "session_id", "created_at", "algorithm": "sha256", "entries":
[{"path", "bytes", "sha256"}]}``. ``pack`` hashes every regular file (except the pack itself
and in-flight temp files) and refuses symlinks. ``verify`` recomputes: a changed or missing file
fails, a file added after packing is reported as unaccounted without failing. Entry paths are
validated before use — relative, normalised, no ``..`` — and opened component by component
without following symlinks, so a pack can never make verification read outside its session.

Sessions packed before memosite used vtcode's layout have ``<session>/audit-pack.json`` with
``files[{path, sha256, size}]``; verify still reads it, and the next pack replaces it.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from memosite.errors import StorageError
from memosite.sessions import safefs
from memosite.sessions.errors import InvalidPack, PackNotFound, SymlinkRefused
from memosite.sessions.log import require_session_dir
from memosite.sessions.paths import AUDIT_PACK_FILE, LEGACY_AUDIT_PACK_FILE, SessionPaths
from memosite.vault import Vault, is_temp_name

PACK_VERSION = 1
_PACK_FILES = (AUDIT_PACK_FILE, LEGACY_AUDIT_PACK_FILE)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)


@dataclass(frozen=True)
class PackEntry:
    path: str
    sha256: str
    size: int

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "bytes": self.size, "sha256": self.sha256}


@dataclass(frozen=True)
class PackResult:
    session_id: str
    pack_path: Path
    created: str
    entries: list[PackEntry]
    replaced_legacy: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "sessionId": self.session_id,
            "pack": str(self.pack_path),
            "created": self.created,
            "entries": [entry.to_json() for entry in self.entries],
            "replacedLegacyPack": self.replaced_legacy,
        }


@dataclass(frozen=True)
class VerifyResult:
    session_id: str
    created: str
    checked: int
    changed: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    unaccounted: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.changed and not self.missing

    def to_json(self) -> dict[str, Any]:
        return {
            "sessionId": self.session_id,
            "ok": self.ok,
            "packCreated": self.created,
            "checked": self.checked,
            "changed": self.changed,
            "missing": self.missing,
            "unaccounted": self.unaccounted,
        }


def validate_entry_path(value: Any) -> tuple[str, ...]:
    """The components of a pack entry path that stays inside the session directory."""
    if not isinstance(value, str) or not value or "\x00" in value or "\\" in value:
        raise InvalidPack(f"invalid pack entry path {value!r}")
    pure = PurePosixPath(value)
    parts = value.split("/")
    if pure.is_absolute() or any(part in ("", ".", "..") for part in parts) or ":" in parts[0]:
        raise InvalidPack(f"pack entry {value!r} points outside the session directory")
    if value in _PACK_FILES:
        raise InvalidPack("a pack cannot list itself")
    return tuple(parts)


def _walk(directory: Path, *, refuse_links: bool) -> tuple[list[str], list[str]]:
    """Regular files (relative posix paths) under ``directory``, and the symlinks found."""
    files: list[str] = []
    links: list[str] = []
    for current, dirnames, filenames in os.walk(directory, followlinks=False):
        base = Path(current)
        for name in sorted(dirnames + filenames):
            full = base / name
            relative = full.relative_to(directory).as_posix()
            info = os.lstat(full)
            if stat.S_ISLNK(info.st_mode):
                if refuse_links:
                    raise SymlinkRefused(f"refusing to pack symlink {full}")
                links.append(relative)
            elif stat.S_ISREG(info.st_mode) and relative not in _PACK_FILES and not is_temp_name(name):
                files.append(relative)
        dirnames[:] = [d for d in dirnames if not os.path.islink(base / d)]
    return sorted(files), sorted(links)


def _hash_inside(directory: Path, parts: tuple[str, ...]) -> tuple[str, int] | None:
    """SHA-256 and size of ``directory/parts``, opened without following any symlink.

    None when the file is missing or something on the way is not a plain directory/file.
    """
    try:
        fd = os.open(directory, os.O_RDONLY | _DIRECTORY | _NOFOLLOW)
    except OSError as exc:
        raise StorageError(f"cannot read {directory}: {exc.strerror or exc}") from exc
    try:
        for part in parts[:-1]:
            next_fd = os.open(part, os.O_RDONLY | _DIRECTORY | _NOFOLLOW, dir_fd=fd)
            os.close(fd)
            fd = next_fd
        file_fd = os.open(parts[-1], os.O_RDONLY | _NOFOLLOW, dir_fd=fd)
    except OSError as exc:
        os.close(fd)
        if exc.errno in (errno.ENOENT, errno.ENOTDIR, errno.ELOOP):
            return None
        raise StorageError(f"cannot read {directory / '/'.join(parts)}: {exc.strerror or exc}") from exc
    os.close(fd)
    try:
        if not stat.S_ISREG(os.fstat(file_fd).st_mode):
            return None
        digest = hashlib.sha256()
        size = 0
        with os.fdopen(file_fd, "rb", closefd=False) as handle:
            while block := handle.read(1024 * 1024):
                digest.update(block)
                size += len(block)
        return digest.hexdigest(), size
    finally:
        os.close(file_fd)


def write_pack(paths: SessionPaths, created: str) -> PackResult:
    """Hash the session directory and write ``derived/audit-pack.json`` (the caller holds the session)."""
    if safefs.refuse_symlink(paths.dir) is None:
        raise PackNotFound(f"no session {paths.session_id!r}")
    files, _ = _walk(paths.dir, refuse_links=True)
    entries = []
    for relative in files:
        hashed = _hash_inside(paths.dir, validate_entry_path(relative))
        if hashed is None:
            raise SymlinkRefused(f"{relative} changed while packing")
        entries.append(PackEntry(relative, hashed[0], hashed[1]))
    document = {
        "schema_version": PACK_VERSION,
        "session_id": paths.session_id,
        "created_at": created,
        "algorithm": "sha256",
        "entries": [entry.to_json() for entry in entries],
    }
    text = json.dumps(document, indent=2, ensure_ascii=False) + "\n"
    if safefs.refuse_symlink(paths.derived_dir) is None:
        safefs.ensure_private_dir(paths.derived_dir)
    safefs.write_private(paths.audit_pack, text.encode("utf-8"))
    replaced = safefs.refuse_symlink(paths.legacy_audit_pack) is not None
    if replaced:
        safefs.remove_private(paths.legacy_audit_pack)
    return PackResult(paths.session_id, paths.audit_pack, created, entries, replaced)


def _entry(item: Any, seen: set[str], *, size_key: str) -> PackEntry:
    if not isinstance(item, dict):
        raise InvalidPack("a pack entry is not an object")
    path = item.get("path")
    validate_entry_path(path)
    assert isinstance(path, str)  # validate_entry_path refused anything else
    digest, size = item.get("sha256"), item.get(size_key)
    if (
        not isinstance(digest, str)
        or len(digest) != 64
        or not isinstance(size, int)
        or isinstance(size, bool)
        or size < 0
        or path in seen
    ):
        raise InvalidPack(f"pack entry {path!r} is malformed or repeated")
    seen.add(path)
    return PackEntry(path, digest.lower(), size)


def read_pack(paths: SessionPaths) -> tuple[str, list[PackEntry]]:
    """Parse and validate the pack (``derived/audit-pack.json``, else an older memosite's)."""
    legacy = False
    try:
        raw = safefs.read_private(paths.audit_pack)
    except FileNotFoundError:
        try:
            raw = safefs.read_private(paths.legacy_audit_pack)
            legacy = True
        except FileNotFoundError:
            raise PackNotFound(f"session {paths.session_id} has no audit pack; run pack first") from None
    try:
        document = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise InvalidPack(f"the audit pack is not valid JSON: {exc}") from exc
    if not isinstance(document, dict):
        raise InvalidPack("the audit pack is not a JSON object")
    keys = ("version", "sessionId", "created", "files", "size") if legacy else (
        "schema_version", "session_id", "created_at", "entries", "bytes",
    )  # fmt: skip
    version_key, id_key, created_key, list_key, size_key = keys
    if document.get(version_key) != PACK_VERSION:
        raise InvalidPack("the audit pack has an unknown version")
    if document.get(id_key) != paths.session_id or document.get("algorithm") != "sha256":
        raise InvalidPack("the audit pack belongs to another session or algorithm")
    items = document.get(list_key)
    if not isinstance(items, list):
        raise InvalidPack(f"the audit pack has no {list_key} list")
    seen: set[str] = set()
    entries = [_entry(item, seen, size_key=size_key) for item in items]
    return str(document.get(created_key, "")), entries


def verify_pack(paths: SessionPaths) -> VerifyResult:
    """Recompute every hash of the pack and look for files it does not account for."""
    require_session_dir(paths)
    created, entries = read_pack(paths)
    changed, missing = [], []
    for entry in entries:
        hashed = _hash_inside(paths.dir, validate_entry_path(entry.path))
        if hashed is None:
            if os.path.lexists(paths.dir / entry.path):
                changed.append(entry.path)  # replaced by a symlink or a non-file
            else:
                missing.append(entry.path)
        elif hashed != (entry.sha256, entry.size):
            changed.append(entry.path)
    files, links = _walk(paths.dir, refuse_links=False)
    listed = {entry.path for entry in entries}
    unaccounted = sorted(path for path in [*files, *links] if path not in listed)
    return VerifyResult(paths.session_id, created, len(entries), changed, missing, unaccounted)


def pack_session(vault: Vault, project: str, session_id: str, *, root: Path | None = None) -> PackResult:
    """Flush the session (holding its lock) and pack its directory.

    A session vtcode wrote is packed as it stands: memosite does not write into its log.
    """
    from memosite.sessions.log import EventLog, default_clock
    from memosite.sessions.session import Session

    paths = SessionPaths.for_session(vault, project, session_id, root)
    if EventLog.open(paths, project, writable=False).by_vtcode:
        return write_pack(paths, default_clock())
    with Session.open(vault, project, session_id, sync_record=False, root=root) as session:
        session.flush()
        return write_pack(session.log.paths, session.log.clock())


def verify_session(vault: Vault, project: str, session_id: str, *, root: Path | None = None) -> VerifyResult:
    return verify_pack(SessionPaths.for_session(vault, project, session_id, root))
