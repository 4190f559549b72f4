"""Where a session lives and its files, laid out as vtcode-memory lays out a session directory.

By default a project's sessions live in ``<vault>/projects/<p>/sessions/<session-id>/``; a
sessions root can also be named (``--root``, this machine's ``sessions.root``), such as a
workspace's ``.vtcode/sessions``. A session directory holds ``events.jsonl``, ``manifest.json``,
``index/turns.json`` and ``derived/`` (``memory.json``, ``progress.json``, ``audit-pack.json``).
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from memosite.errors import InvalidArguments
from memosite.schema import utc_now, validate_slug
from memosite.text import suggest_ascii
from memosite.vault import Vault

EVENTS_FILE = "events.jsonl"
MANIFEST_FILE = "manifest.json"
PENDING_REWRITE_FILE = "rewrite.pending"
INDEX_DIR = "index"
DERIVED_DIR = "derived"
AUDIT_PACK_FILE = f"{DERIVED_DIR}/audit-pack.json"
LEGACY_AUDIT_PACK_FILE = "audit-pack.json"  # where memosite packed before it used vtcode's layout


MAX_SESSION_ID_LENGTH = 120


def validate_session_id(session_id: str) -> str:
    """A session id names one directory under ``sessions/``: never a path, ``..`` or NUL.

    It is also kept short enough for its record slug ``session-<id>`` to be a valid slug.
    """
    validate_slug(session_id, "session id")
    if len(session_id) > MAX_SESSION_ID_LENGTH:
        raise InvalidArguments(f"session id is longer than {MAX_SESSION_ID_LENGTH} characters")
    return session_id


_DIR_NAME_RE = re.compile(r"^[A-Za-z0-9_-][A-Za-z0-9._-]{0,199}$")


def validate_dir_name(name: str) -> str:
    """A session directory name as vtcode makes them (ASCII letters, digits, '-', '_', '.')."""
    if not isinstance(name, str) or not _DIR_NAME_RE.match(name) or ".." in name:
        raise InvalidArguments(
            f"invalid session directory name {name!r}: vtcode names them with ASCII letters, digits,"
            f" '.', '_' or '-' (no '..'){suggest_ascii(name)}"
        )
    return name


def new_session_id(now: datetime | None = None) -> str:
    moment = now or utc_now()
    return f"{moment.strftime('%Y%m%dT%H%M%SZ')}-{secrets.token_hex(3)}"


def sessions_root(vault: Vault, project: str) -> Path:
    """The project's ``sessions/`` directory (shared with the Markdown ``session-*.md`` records)."""
    from memosite.lookup import writable_target

    # Session logs are written here: a symlinked project or sessions directory must never send them out.
    return writable_target(vault, vault.kind_dir(project, "session"))


@dataclass(frozen=True)
class SessionPaths:
    root: Path
    session_id: str

    @classmethod
    def for_session(cls, vault: Vault, project: str, session_id: str, root: Path | None = None) -> SessionPaths:
        if root is None:
            return cls(root=sessions_root(vault, project), session_id=validate_session_id(session_id))
        return cls(root=root, session_id=validate_dir_name(session_id))

    @property
    def dir(self) -> Path:
        return self.root / self.session_id

    @property
    def events(self) -> Path:
        return self.dir / EVENTS_FILE

    @property
    def manifest(self) -> Path:
        return self.dir / MANIFEST_FILE

    @property
    def pending_rewrite(self) -> Path:
        return self.dir / PENDING_REWRITE_FILE

    @property
    def audit_pack(self) -> Path:
        return self.dir / AUDIT_PACK_FILE

    @property
    def legacy_audit_pack(self) -> Path:
        return self.dir / LEGACY_AUDIT_PACK_FILE

    @property
    def index_dir(self) -> Path:
        return self.dir / INDEX_DIR

    @property
    def turns_index(self) -> Path:
        return self.index_dir / "turns.json"

    @property
    def search_index(self) -> Path:
        return self.index_dir / "search.bin"

    @property
    def derived_dir(self) -> Path:
        return self.dir / DERIVED_DIR

    @property
    def memory(self) -> Path:
        return self.derived_dir / "memory.json"

    @property
    def progress(self) -> Path:
        return self.derived_dir / "progress.json"


def configured_root(vault: Vault, cwd: Path) -> Path | None:
    """This machine's ``sessions.root`` (``config.local.json``; relative to ``cwd``, the workspace),
    if it is set. The team's ``config.json`` never sets it: a synced path must not move a write."""
    settings = vault.config.raw.get("sessions")
    value = settings.get("root") if isinstance(settings, dict) else None
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        where = vault.root / "config.local.json"
        raise InvalidArguments(f"{where}: sessions.root must be a directory path, got {value!r}")
    path = Path(value).expanduser()
    return path if path.is_absolute() else cwd / path
