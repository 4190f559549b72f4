"""Errors of the sessions package, all inside memosite's one hierarchy."""

from __future__ import annotations

from memosite.errors import InvalidArguments, InvalidTransition, RecordNotFound, StorageError


class SessionNotFound(RecordNotFound):
    code = "SESSION_NOT_FOUND"


class SessionsRootNotFound(RecordNotFound):
    """A sessions root named on purpose (``--root``) that is not there: not the same as no sessions."""

    code = "SESSIONS_ROOT_NOT_FOUND"


class SessionExists(InvalidArguments):
    code = "SESSION_EXISTS"


class SessionEnded(InvalidTransition):
    """An append, turn or end on a session that has already ended."""

    code = "SESSION_ENDED"


class SessionForeign(InvalidTransition):
    """A write to a session vtcode wrote: memosite reads those sessions, it does not append to them."""

    code = "SESSION_FOREIGN"


class SymlinkRefused(StorageError):
    """A session directory or file turned out to be a symlink; nothing was read or written."""

    code = "SYMLINK_REFUSED"


class SummaryHookFailed(StorageError):
    """The cap-eviction summary hook raised; the canonical log was left exactly as it was."""

    code = "SUMMARY_HOOK_FAILED"


class InvalidPack(InvalidArguments):
    """``audit-pack.json`` is malformed or names a path outside its session directory."""

    code = "INVALID_PACK"


class PackNotFound(RecordNotFound):
    code = "PACK_NOT_FOUND"
