"""Vault-git: every mutation asks for a commit of the vault (when ``vaultGit.enabled``).

``vaultGit.atomic`` true commits each change at once; false queues the message and
:func:`flush_pending` commits the batch (gc does this at the end of a pass). The vault's
disposable files (index, lock) are kept out of git by a ``.gitignore`` memosite writes.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from memosite.errors import StorageError
from memosite.vault import Vault, warn

_GITIGNORE = ".memosite/index.sqlite*\n.memosite/vault.lock\n.memosite/pending-commits\n.memosite-tmp-*\n"


def _git(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env.setdefault("GIT_AUTHOR_NAME", "memosite")
    env.setdefault("GIT_AUTHOR_EMAIL", "memosite@localhost")
    env.setdefault("GIT_COMMITTER_NAME", env["GIT_AUTHOR_NAME"])
    env.setdefault("GIT_COMMITTER_EMAIL", env["GIT_AUTHOR_EMAIL"])
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, env=env, check=False)


def ensure_repo(vault: Vault) -> None:
    if shutil.which("git") is None:
        raise StorageError("vaultGit is enabled but git is not installed")
    if not (vault.root / ".git").exists():
        result = _git(vault.root, "init", "-q")
        if result.returncode != 0:
            raise StorageError(f"git init failed: {result.stderr.strip()}")
    gitignore = vault.root / ".gitignore"
    if not gitignore.exists():
        gitignore.write_text(_GITIGNORE, encoding="utf-8")


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
