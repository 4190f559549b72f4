"""Push later: what a vault commit hands a push to, when ``vaultGit.push`` is ``"auto"``.

A commit is storage; pushing it is team sync, a layer above. So the commit does not import sync: it
calls the scheduler registered here, and the sync package provides one
(:func:`memosite.sync.autopush.register_auto_push`), which each composition root (the CLI, the MCP
server, the hooks, :class:`memosite.Memory`) registers as it starts. A program that registered none
is told once that its commits are not pushed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from memosite.errors import MemositeError
from memosite.warning import warn

if TYPE_CHECKING:
    from memosite.vault import Vault

Scheduler = Callable[["Vault"], None]

_scheduler: Scheduler | None = None
_told = False


def register_push_scheduler(scheduler: Scheduler | None) -> None:
    """Have ``scheduler`` push the vault after each commit (None: stop, and say so again at the
    next commit that asks for a push)."""
    global _scheduler, _told
    _scheduler = scheduler
    _told = False


def request_push(vault: Vault) -> None:
    """After a commit: have it pushed later when the vault says ``vaultGit.push: "auto"``. Never
    fails the commit: a push that cannot be scheduled is a warning."""
    global _told
    if vault.config.git_push != "auto":
        return
    if _scheduler is None:
        if not _told:
            _told = True
            warn('vaultGit.push is "auto" but this program pushes nothing: `memosite sync` pushes the commits')
        return
    try:
        _scheduler(vault)
    except OSError as exc:
        warn(f"automatic push not scheduled: {exc}")
    except MemositeError as exc:
        warn(f"automatic push not scheduled: {exc.message}")
