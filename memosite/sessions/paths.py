"""Where a session lives: ``<vault>/projects/<p>/sessions/<session-id>/`` and its files."""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from memosite.errors import InvalidArguments
from memosite.schema import utc_now, validate_slug
from memosite.vault import Vault

EVENTS_FILE = "events.jsonl"
MANIFEST_FILE = "manifest.json"
PENDING_REWRITE_FILE = "rewrite.pending"
AUDIT_PACK_FILE = "audit-pack.json"
INDEX_DIR = "index"
DERIVED_DIR = "derived"


MAX_SESSION_ID_LENGTH = 120


def validate_session_id(session_id: str) -> str:
    """A session id names one directory under ``sessions/``: never a path, ``..`` or NUL.

    It is also kept short enough for its record slug ``session-<id>`` to be a valid slug.
    """
    validate_slug(session_id, "session id")
    if len(session_id) > MAX_SESSION_ID_LENGTH:
        raise InvalidArguments(f"session id is longer than {MAX_SESSION_ID_LENGTH} characters")
    return session_id


def new_session_id(now: datetime | None = None) -> str:
    moment = now or utc_now()
    return f"{moment.strftime('%Y%m%dT%H%M%SZ')}-{secrets.token_hex(3)}"


def sessions_root(vault: Vault, project: str) -> Path:
    """The project's ``sessions/`` directory (shared with the Markdown ``session-*.md`` records)."""
    return vault.kind_dir(project, "session")


@dataclass(frozen=True)
class SessionPaths:
    root: Path
    session_id: str

    @classmethod
    def for_session(cls, vault: Vault, project: str, session_id: str) -> SessionPaths:
        return cls(root=sessions_root(vault, project), session_id=validate_session_id(session_id))

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
