"""The errors of team sync, in memosite's one hierarchy (each with its stable code)."""

from __future__ import annotations

from memosite.errors import MemositeError


class SyncError(MemositeError):
    """A sync could not run or finish: git off, the remote unreachable, a push refused, …"""

    code = "SYNC_FAILED"


class NoRemote(SyncError):
    """Nothing to sync with: no ``vaultGit.remote``, no ``--remote`` and no ``origin``."""

    code = "NO_REMOTE"


class UnrelatedHistory(SyncError):
    """The remote's history shares no commit with the vault's: merging would mix two vaults."""

    code = "UNRELATED_HISTORY"


class PushFailed(SyncError):
    """The merge is done and committed here, but the remote did not take the push."""

    code = "PUSH_FAILED"


class RefusedContent(SyncError):
    """Commits hold what a shared vault may not (:mod:`memosite.sharedtree`), or a conflict
    sidecar holding no version its record ever had: refused before anything reached the work tree."""

    code = "REFUSED_CONTENT"
