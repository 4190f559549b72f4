"""A cross-process lock on one file: re-entrant in its process, shared by its threads in turn.

memosite's vault lock, the Stormbuffer store's mutation lock (the ``flock`` ``sbuf`` takes) and the
sync state's and background push's locks are all one of these.

The vault lock is taken by every write, so its cost counts: an ``flock`` on a file opened for
the first acquisition and closed at the last release costs a few system calls, where a general
purpose lock library spends several hundred microseconds in Python bookkeeping. One
:class:`LockFile` exists per path in a process (:func:`lock_file`), so two ``Vault`` objects on
one directory share it, and the holder may take it again (a unit of work inside a gc pass).

Where ``fcntl`` does not exist (Windows) the ``filelock`` package does the same job.
"""

from __future__ import annotations

import contextlib
import functools
import math
import os
import threading
import time
from pathlib import Path

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX
    fcntl = None  # type: ignore[assignment]

POLL_SECONDS = 0.005


class LockBusy(Exception):
    """The lock stayed held by someone else for the whole timeout."""


class LockFile:
    """See the module docstring. ``depth`` counts this process's nested acquisitions."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.depth = 0
        self._threads = threading.RLock()
        self._fd: int | None = None
        self._portable: object | None = None

    def acquire(self, timeout: float | None) -> bool:
        """Take the lock, waiting up to ``timeout`` seconds (0: one try, None: as long as it
        takes). True when this call took it from no one (not a nested acquisition). Raises
        :class:`LockBusy`."""
        if timeout is None:
            deadline, took = math.inf, self._threads.acquire()
        else:
            deadline = time.monotonic() + max(timeout, 0.0)
            took = self._threads.acquire(timeout=timeout) if timeout > 0 else self._threads.acquire(blocking=False)
        if not took:  # another thread of this process holds it
            raise LockBusy(str(self.path))
        if self.depth:
            self.depth += 1
            return False
        try:
            self._take(deadline)
        except BaseException:
            self._threads.release()
            raise
        self.depth = 1
        return True

    def release(self) -> None:
        if self.depth <= 0:
            raise RuntimeError(f"{self.path} released more often than acquired")
        self.depth -= 1
        try:
            if self.depth == 0:
                self._give_back()
        finally:
            self._threads.release()

    # --- the file --------------------------------------------------------------------------
    def _take(self, deadline: float) -> None:
        if fcntl is None:  # pragma: no cover - not POSIX
            self._take_portable(deadline)
            return
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except FileNotFoundError:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        raise LockBusy(str(self.path)) from None
                    time.sleep(POLL_SECONDS)
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd

    def _give_back(self) -> None:
        if fcntl is None:  # pragma: no cover - not POSIX
            self._give_back_portable()
            return
        fd, self._fd = self._fd, None
        if fd is None:
            return  # a forked child's copy, let go of at the fork without unlocking (see _after_fork)
        try:
            fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    def _after_fork(self) -> None:
        """In a forked child: let go of the parent's open lock file without unlocking it (the
        parent still holds the lock; an flock ends with its last descriptor)."""
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = None

    def _take_portable(self, deadline: float) -> None:  # pragma: no cover - not POSIX
        from filelock import FileLock, Timeout

        try:  # the file stays, as on POSIX (sbuf opens the store's lock file too)
            lock = FileLock(str(self.path), preserve_lock_file=True)
        except TypeError:  # an older filelock
            lock = FileLock(str(self.path))
        wait = -1.0 if deadline == math.inf else max(deadline - time.monotonic(), 0.0)
        try:
            lock.acquire(timeout=wait, poll_interval=POLL_SECONDS)
        except Timeout:
            raise LockBusy(str(self.path)) from None
        self._portable = lock

    def _give_back_portable(self) -> None:  # pragma: no cover - not POSIX
        lock, self._portable = self._portable, None
        if lock is not None:
            lock.release()  # type: ignore[attr-defined]


_LOCKS: dict[str, LockFile] = {}
_REGISTRY = threading.Lock()


def _forget_after_fork() -> None:
    # A forked child holds none of its parent's locks (nor its threads' turns), and the registry's
    # own lock may have been held by another thread at the fork.
    global _REGISTRY
    for held in _LOCKS.values():
        held._after_fork()
    _LOCKS.clear()
    _REGISTRY = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_after_fork)


@functools.lru_cache(maxsize=64)
def _key(path: str) -> str:
    # The directory resolved (a symlink, ``..``), the case folded where the system folds it.
    absolute = os.path.abspath(path)
    return os.path.normcase(os.path.join(os.path.realpath(os.path.dirname(absolute)), os.path.basename(absolute)))


def lock_file(path: Path) -> LockFile:
    """The one :class:`LockFile` of ``path`` in this process, however the path is spelled (its
    directory reached through a symlink, or, on Windows, in another letter case)."""
    key = _key(os.fspath(path))
    with _REGISTRY:
        found = _LOCKS.get(key)
        if found is None:
            found = _LOCKS[key] = LockFile(Path(key))
        return found
