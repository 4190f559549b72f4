"""One error hierarchy. Each error carries a stable code used by the CLI's JSON and by MCP."""

from __future__ import annotations

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
