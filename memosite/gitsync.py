"""Vault-git: every mutation asks for a commit of the vault (when ``vaultGit.enabled``).

``vaultGit.atomic`` true commits each change at once; false queues the message and
:func:`flush_pending` commits the batch (gc does this at the end of a pass). What memosite can
rebuild (:data:`memosite.vault.DISPOSABLE_PATTERNS`) is kept out of git by a block memosite keeps
in the vault's ``.gitignore``, merged into whatever else the file holds.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from memosite.errors import StorageError
from memosite.vault import DISPOSABLE_PATTERNS, Vault, atomic_write_text, warn

BLOCK_START = "# >>> memosite: disposable files, rebuilt from the records (managed block) >>>"
BLOCK_END = "# <<< memosite <<<"


def _git(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env.setdefault("GIT_AUTHOR_NAME", "memosite")
    env.setdefault("GIT_AUTHOR_EMAIL", "memosite@localhost")
    env.setdefault("GIT_COMMITTER_NAME", env["GIT_AUTHOR_NAME"])
    env.setdefault("GIT_COMMITTER_EMAIL", env["GIT_AUTHOR_EMAIL"])
    return subprocess.run(
        ["git", "-C", str(root), *args],
        capture_output=True,
        text=True,
        encoding="utf-8",
        errors="replace",
        env=env,
        check=False,
    )


def gitignore_block() -> str:
    return "\n".join([BLOCK_START, *DISPOSABLE_PATTERNS, BLOCK_END]) + "\n"


def merged_gitignore(existing: str) -> str:
    """``existing`` with memosite's block added, or replaced when it is out of date; every other
    line stays as the person wrote it."""
    block = gitignore_block()
    start, end = existing.find(BLOCK_START), existing.find(BLOCK_END)
    if start != -1 and end > start:
        return existing[:start] + block + existing[end + len(BLOCK_END) :].lstrip("\n")
    if existing and not existing.endswith("\n"):
        existing += "\n"
    return existing + ("\n" if existing else "") + block


def ensure_repo(vault: Vault) -> None:
    """A git repository in the vault whose ``.gitignore`` keeps the disposable files out; files
    an older memosite committed that are disposable now leave the index (not the disk)."""
    if shutil.which("git") is None:
        raise StorageError("vaultGit is enabled but git is not installed")
    if not (vault.root / ".git").exists():
        result = _git(vault.root, "init", "-q")
        if result.returncode != 0:
            raise StorageError(f"git init failed: {result.stderr.strip()}")
    gitignore = vault.root / ".gitignore"
    try:
        existing = gitignore.read_text(encoding="utf-8")
    except FileNotFoundError:
        existing = ""
    wanted = merged_gitignore(existing)
    if wanted != existing:
        atomic_write_text(gitignore, wanted)
        tracked = _git(vault.root, "ls-files", "-z", "--cached", "--ignored", "--exclude-standard")
        stale = [name for name in tracked.stdout.split("\0") if name]
        if stale:
            _git(vault.root, "rm", "-q", "--cached", "--ignore-unmatch", "--", *stale)


def commit_now(vault: Vault, message: str) -> bool:
    """Commit everything in the vault; returns False when there was nothing to commit."""
    ensure_repo(vault)
    add = _git(vault.root, "add", "-A")
    if add.returncode != 0:
        raise StorageError(f"git add failed: {add.stderr.strip()}")
    if _git(vault.root, "diff", "--cached", "--quiet").returncode == 0:
        return False
    result = _git(vault.root, "commit", "-q", "-m", message)
    if result.returncode != 0:
        raise StorageError(f"git commit failed: {result.stderr.strip()}")
    return True


def request_commit(vault: Vault, message: str) -> None:
    """Ask for a vault commit. Failures warn: the Markdown write already happened and stands."""
    if not vault.config.git_enabled:
        return
    try:
        if vault.config.git_atomic:
            commit_now(vault, message)
        else:
            vault.internal_dir.mkdir(parents=True, exist_ok=True)
            with open(vault.internal_dir / "pending-commits", "a", encoding="utf-8") as handle:
                handle.write(message.replace("\n", " ") + "\n")
    except (StorageError, OSError) as exc:
        warn(f"vault commit skipped: {exc}")


def flush_pending(vault: Vault) -> bool:
    """Commit queued changes as one commit listing every queued message."""
    if not vault.config.git_enabled:
        return False
    pending = vault.internal_dir / "pending-commits"
    try:
        messages = pending.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        messages = []
    if not messages:
        return False
    summary = f"memosite: {len(messages)} change{'s' if len(messages) != 1 else ''}\n\n" + "\n".join(messages)
    committed = commit_now(vault, summary)
    pending.unlink(missing_ok=True)
    return committed
