"""The sync side of ``memosite status``: :func:`sync_state` says what is waiting to go out, when the
vault last synced, whether the last push failed, and which conflicts wait to be resolved.

Read-only and offline: it compares with the remote as of the last fetch and never runs a network
command, writes a file or creates a repository.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any

from memosite.errors import InvalidArguments
from memosite.sync.autopush import push_scheduled
from memosite.sync.conflicts import Conflict, list_conflicts
from memosite.sync.errors import NoRemote, SyncError
from memosite.sync.repo import READ_ONLY, Repo
from memosite.sync.result import counted
from memosite.sync.state import read_state
from memosite.vault import Vault


@dataclass(frozen=True)
class PushError:
    at: str
    message: str

    def to_json(self) -> dict[str, Any]:
        return {"at": self.at, "message": self.message}


@dataclass
class SyncState:
    """Where the vault stands with its remote. ``remote`` is its name in the vault's repository
    (None before the first sync made ``url``, ``vaultGit.remote``, one); ``ahead``/``behind``
    count commits against the remote as last fetched (None without a remote or before the first
    sync)."""

    enabled: bool
    repository: bool
    push_mode: str
    remote: str | None = None
    url: str | None = None
    branch: str | None = None
    ahead: int | None = None
    behind: int | None = None
    uncommitted: int = 0
    merge_in_progress: bool = False
    last_sync: str | None = None
    last_push: str | None = None
    push_error: PushError | None = None
    push_scheduled: bool = False
    conflicts: list[Conflict] = field(default_factory=list)
    refused_remote: str | None = None  # why vaultGit.remote is never handed to git

    @property
    def pending_push(self) -> bool:
        """Commits here that the remote does not have yet (or a push that failed)."""
        return bool(self.ahead) or self.push_error is not None

    def to_json(self) -> dict[str, Any]:
        return {
            "enabled": self.enabled,
            "repository": self.repository,
            "pushMode": self.push_mode,
            "remote": self.remote,
            "url": self.url,
            "branch": self.branch,
            "ahead": self.ahead,
            "behind": self.behind,
            "uncommitted": self.uncommitted,
            "pendingPush": self.pending_push,
            "mergeInProgress": self.merge_in_progress,
            "lastSync": self.last_sync,
            "lastPush": self.last_push,
            "pushError": self.push_error.to_json() if self.push_error else None,
            "pushScheduled": self.push_scheduled,
            "conflicts": [c.to_json() for c in self.conflicts],
            "refusedRemote": self.refused_remote,
        }

    def lines(self) -> list[str]:
        """Human lines for ``memosite status`` (which labels them ``sync``)."""
        if not self.enabled:
            return ["vault git is off"]
        if self.refused_remote is not None:
            return [f"vaultGit.remote: {self.refused_remote}"]
        if self.remote is None and self.url is None:
            return ["no remote (memosite config set vaultGit.remote <url or path>, or pass --remote to memosite sync)"]
        if self.remote is None:
            out = [f"{self.url}, not synced yet (memosite sync), push {self.push_mode}"]
        else:
            where = f"{self.remote}/{self.branch}" if self.branch else self.remote
            out = [f"{where} ({self.url}), push {self.push_mode}, last sync {self.last_sync or 'never'}"]
        if self.ahead:
            out.append(f"  {counted(self.ahead, 'commit')} not pushed yet")
        if self.behind:
            out.append(f"  {counted(self.behind, 'commit')} fetched and not merged yet")
        if self.push_error is not None:
            error = self.push_error
            out.append(f"  last push failed at {error.at}: {error.message} (retried at the next write or sync)")
        if self.merge_in_progress:
            out.append("  a git merge is unfinished: memosite sync finishes it")
        for conflict in self.conflicts:
            out.append(f"  conflict: {_conflict_line(conflict)}")
        return out


def _conflict_line(conflict: Conflict) -> str:
    """The record (or file), both versions' ``updated`` and how to end it."""
    name = f"{conflict.kind} {conflict.record_id} ({conflict.path})" if conflict.record_id else conflict.path
    in_place = f"updated {conflict.local.updated or '-'}" if conflict.local.exists else "no version"
    versions = f"in place {in_place}, sidecar updated {conflict.remote.updated or '-'}"
    if not conflict.is_record:
        versions = f"in place and in {conflict.sidecar}"
    return f"{name}: {versions} (memosite resolve {conflict.ref})"


def sync_state(vault: Vault, *, conflict_details: bool = False) -> SyncState:
    """The vault's sync state (see the module docstring). ``conflict_details`` adds each
    conflict's authors and diff (reads git history: slower)."""
    repository = (vault.root / ".git").exists()
    state = SyncState(
        enabled=vault.config.git_enabled,
        repository=repository,
        push_mode=vault.config.git_push,
        conflicts=list_conflicts(vault, details=conflict_details),
        url=vault.config.git_remote,
    )
    saved = read_state(vault)
    last_sync = saved.get("lastSync") if isinstance(saved.get("lastSync"), dict) else None
    state.last_sync = last_sync.get("at") if last_sync else None
    last_push = saved.get("lastPush")
    state.last_push = last_push.get("at") if isinstance(last_push, dict) else None
    error = saved.get("pushError")
    if isinstance(error, dict) and error.get("message"):
        state.push_error = PushError(str(error.get("at") or ""), str(error["message"]))
    state.push_scheduled = push_scheduled(vault)
    if not repository or not state.enabled:
        return state
    # git missing or the repository unreadable: say what is known without it.
    try:
        with contextlib.suppress(OSError, SyncError):
            _compare_with_remote(vault, Repo(vault.root), state, last_sync)
    except InvalidArguments as exc:  # vaultGit.remote is a value git must never be given
        state.refused_remote = exc.message
    return state


def _compare_with_remote(vault: Vault, repo: Repo, state: SyncState, last_sync: dict[str, Any] | None) -> None:
    try:
        target = repo.resolve_remote(vault.config.git_remote)
    except NoRemote:
        return
    state.remote, state.url = (None if target.one_off else target.name), target.url
    state.merge_in_progress = repo.merge_in_progress()
    state.uncommitted = len(repo.dirty())
    branch = vault.config.git_branch or (last_sync.get("branch") if last_sync else None) or repo.branch()
    state.branch = branch
    head, theirs = repo.head(), repo.rev(f"{target.refs}/{branch}") if branch and not target.one_off else None
    if head is not None and theirs is not None:
        counts = repo.git("rev-list", "--left-right", "--count", args=[f"{head}...{theirs}"], env=READ_ONLY)
        ahead, _, behind = counts.strip().partition("\t")
        state.ahead, state.behind = int(ahead or 0), int(behind or 0)
    elif head is not None:
        state.ahead = repo.count(head)
