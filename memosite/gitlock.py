"""The vault repository's ``index.lock``: held by a running git, or left behind by a killed one.

git takes ``.git/index.lock`` (created exclusively, never locked by the kernel) for every change of
its index and removes it when done; a git killed meanwhile leaves it, and every later commit, merge
and sync fails with "index.lock: File exists". A lock is *stale* when no git process holds it: none
of this user's running ``git`` processes works in the vault (its working directory is the vault or
inside it — ``git -C`` moves there before it takes the lock — or its command line names the
vault). A git that took the lock is listed for as long as it runs, and one that ended removed it,
so no waiting is needed. Where running processes cannot be listed (no ``/proc``), a lock older than
:data:`STALE_WITHOUT_PROCESSES_SECONDS` is taken as stale — no vault git call holds it that long.

:func:`remove_stale_index_lock` removes a stale lock only if it is still the very file that was
judged (same inode and time), so a lock a new git took meanwhile is never touched.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

STALE_WITHOUT_PROCESSES_SECONDS = 600.0
HELD_TOO_LONG_SECONDS = 60.0
_PROC = Path("/proc")


@dataclass(frozen=True)
class IndexLock:
    """An ``index.lock`` found in a repository: its path, age, the git processes working in the
    vault (None: they cannot be listed here) and whether it is stale."""

    path: Path
    age_seconds: float
    holders: tuple[int, ...] | None
    stale: bool
    identity: tuple[int, int]  # (inode, mtime_ns): the file that was judged

    @property
    def stuck(self) -> bool:
        """Stale, or held by a git for longer than any vault git call takes."""
        return self.stale or self.age_seconds >= HELD_TOO_LONG_SECONDS

    def describe(self) -> str:
        if self.stale:
            return f"{self.path} was left by a git that was killed (no git process holds it)"
        minutes = f"{self.age_seconds / 60:.0f} min" if self.age_seconds >= 60 else f"{self.age_seconds:.0f} s"
        held = f"git process {', '.join(map(str, self.holders))}" if self.holders else "a git process"
        return f"{self.path} has been held by {held} for {minutes}"


def git_processes_in(root: Path) -> tuple[int, ...] | None:
    """The ids of this user's running ``git`` processes whose working directory is ``root`` or
    below it, or whose command line names ``root``; None where processes cannot be listed."""
    if not _PROC.is_dir():
        return None
    try:
        target = root.resolve()
    except OSError:
        target = root
    named = os.fsencode(target)
    found = []
    for entry in _PROC.iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            command = (entry / "comm").read_text(encoding="utf-8", errors="replace").strip()
            if not command.startswith("git"):
                continue
            cwd = Path(os.readlink(entry / "cwd"))
            arguments = (entry / "cmdline").read_bytes()
        except OSError:  # gone meanwhile, or another user's
            continue
        if cwd == target or target in cwd.parents or named in arguments:
            found.append(int(entry.name))
    return tuple(sorted(found))


def inspect_index_lock(root: Path, git_dir: Path, *, now: float | None = None) -> IndexLock | None:
    """The repository's ``index.lock`` as it stands (None: there is none)."""
    path = git_dir / "index.lock"
    try:
        stat = path.stat()
    except FileNotFoundError:
        return None
    age = max(0.0, (time.time() if now is None else now) - stat.st_mtime)
    holders = git_processes_in(root)
    stale = age >= STALE_WITHOUT_PROCESSES_SECONDS if holders is None else not holders
    return IndexLock(path, age, holders, stale, (stat.st_ino, stat.st_mtime_ns))


def remove_stale_index_lock(root: Path, git_dir: Path) -> IndexLock | None:
    """Remove the repository's ``index.lock`` when it is stale; returns what was removed (None:
    nothing was, because there is no lock or a git holds it)."""
    found = inspect_index_lock(root, git_dir)
    if found is None or not found.stale:
        return None
    try:
        stat = found.path.stat()
        if (stat.st_ino, stat.st_mtime_ns) != found.identity:
            return None
        found.path.unlink()
    except FileNotFoundError:
        return None
    return found
