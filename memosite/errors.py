"""One error hierarchy. Each error carries a stable code used by the CLI's JSON and by MCP."""

from __future__ import annotations

from pathlib import PurePath
from typing import Any


class MemositeError(Exception):
    """Base of every error memosite raises on purpose."""

    code = "INTERNAL_ERROR"
    exit_code = 1

    def __init__(self, message: str, *, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.details = details or {}

    def to_json(self) -> dict[str, Any]:
        payload: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.details:
            payload["details"] = self.details
        return {"error": payload}


class InvalidArguments(MemositeError):
    """Input that breaks a rule: bad enum, empty body, bad ttl, unsafe slug, ..."""

    code = "INVALID_ARGUMENTS"


class InvalidRecord(MemositeError):
    """A record file on disk that does not parse or validate."""

    code = "INVALID_RECORD"


class RecordNotFound(MemositeError):
    code = "RECORD_NOT_FOUND"


class SafetyViolation(MemositeError):
    """A secret (or another unsafe payload) was found; nothing was written."""

    code = "SAFETY_VIOLATION"


class PersonRequired(MemositeError):
    """Only a person may do this: approve or reject in review, purge or displace what a person
    approved, claim a person's authorship, change review policy. Refused for an agent (over MCP or
    from an agent's shell); nothing was changed."""

    code = "PERSON_REQUIRED"


class VaultNotFound(MemositeError):
    """A command that only reads was pointed at a vault that does not exist (it creates none)."""

    code = "VAULT_NOT_FOUND"


class InvalidTransition(MemositeError):
    """A lifecycle change the record's status does not allow (superseded is terminal)."""

    code = "INVALID_TRANSITION"


class Interrupted(MemositeError):
    """Ctrl-C before anything was changed: nothing was written."""

    code = "INTERRUPTED"
    exit_code = 130


class LockTimeout(MemositeError):
    code = "LOCK_TIMEOUT"


class StorageError(MemositeError):
    """A filesystem operation failed (permissions, disk full, symlink refused, ...)."""

    code = "STORAGE_ERROR"


class BuildError(MemositeError):
    """The site could not be built (mkdocs failure, secret found in output, ...)."""

    code = "BUILD_FAILED"


def shown_path(path: Any) -> str:
    """How messages name a file: from the vault's ``projects/`` or ``.memosite/`` on, else its name
    (never the absolute path of the machine, which an agent has no use for)."""
    parts = PurePath(str(path)).parts
    for anchor in ("projects", ".memosite"):
        if anchor in parts:
            return "/".join(parts[len(parts) - 1 - parts[::-1].index(anchor) :])
    return parts[-1] if parts else str(path)


def from_exception(exc: BaseException) -> MemositeError:
    """What an unanticipated failure means to a caller: a filesystem or index failure is a
    STORAGE_ERROR (naming the file as :func:`shown_path` does); anything else INTERNAL_ERROR."""
    import sqlite3

    if isinstance(exc, MemositeError):
        return exc
    if isinstance(exc, OSError):
        where = f" ({shown_path(exc.filename)})" if exc.filename else ""
        return StorageError(f"{exc.strerror or type(exc).__name__}{where}")
    if isinstance(exc, sqlite3.Error):
        return StorageError(f"index: {exc} (a damaged index can be deleted: memosite reindex rebuilds it)")
    return MemositeError(f"unexpected {type(exc).__name__}: {exc}")
