"""When the vault commits: one commit per change, or queued and committed as a batch.

Every unit of work asks :func:`request_commit` once it ends. With ``vaultGit.atomic`` true the
change is committed at once (with whatever was queued before it); false queues the message and
:func:`flush_pending` commits the batch (gc does this at the end of a pass). Hits are usage, not
edits: :func:`queue_commit` keeps them for the next commit. A failed commit never fails the write
that stands: it warns, and :func:`memosite.vaultgit.vault_git_problem` keeps saying why.

With ``vaultGit.push: "auto"`` a commit then asks for a push later (:mod:`memosite.pushhook`), which
the sync package carries out in the background; vault git itself never imports team sync.
"""

from __future__ import annotations

import contextlib
import os

from memosite.errors import StorageError
from memosite.pushhook import request_push
from memosite.vault import Vault, warn
from memosite.vaultgit import commit_now, merge_in_progress, note_problem, vault_git_problem


def request_commit(vault: Vault, message: str) -> None:
    """Ask for a vault commit. Failures warn: the Markdown write already happened and stands.

    While vault git cannot commit (:func:`vault_git_problem`), every write says so in a warning
    line and ``memosite status`` names the problem until a commit succeeds. With
    ``vaultGit.push: "auto"`` a commit also schedules a push; it runs in the background after a
    short quiet spell, so the write never waits for the network."""
    if not vault.config.git_enabled:
        return
    try:
        if vault.config.git_atomic:
            queued = _queued_messages(vault)
            full = message if not queued else f"{message}\n\n" + "\n".join(queued)
            committed = commit_now(vault, full)
            note_problem(vault, None)
            if committed:
                vault.internal_path("pending-commits").unlink(missing_ok=True)
                request_push(vault)
        else:
            queue_commit(vault, message)
            problem = vault_git_problem(vault)
            if problem is not None:
                warn(f"vault git is stuck: {problem}; this change is saved, not committed (memosite status)")
    except (StorageError, OSError) as exc:
        problem = str(getattr(exc, "message", exc))
        with contextlib.suppress(StorageError, OSError):
            note_problem(vault, problem)
        warn(f"vault git is stuck: {problem}; this change is saved, not committed (memosite status)")


def queue_commit(vault: Vault, message: str) -> None:
    """Keep ``message`` for the next commit (changes that need no commit of their own, such as
    hits, and every change while ``vaultGit.atomic`` is off)."""
    if not vault.config.git_enabled:
        return
    vault.internal_dir.mkdir(parents=True, exist_ok=True)
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
    with os.fdopen(os.open(vault.internal_path("pending-commits"), flags, 0o644), "a", encoding="utf-8") as handle:
        handle.write(message.replace("\n", " ") + "\n")


def _queued_messages(vault: Vault) -> list[str]:
    try:
        return vault.internal_path("pending-commits").read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return []


def flush_pending(vault: Vault) -> bool:
    """Commit queued changes as one commit listing every queued message."""
    if not vault.config.git_enabled:
        return False
    pending = vault.internal_path("pending-commits")
    try:
        messages = pending.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        messages = []
    if not messages:
        return False
    summary = f"memosite: {len(messages)} change{'s' if len(messages) != 1 else ''}\n\n" + "\n".join(messages)
    committed = commit_now(vault, summary)
    if committed or not merge_in_progress(vault.root):
        pending.unlink(missing_ok=True)
    if committed:
        request_push(vault)
    return committed
