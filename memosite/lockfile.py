"""A cross-process lock on one file: re-entrant in its process, shared by its threads in turn.

memosite's vault lock and the Stormbuffer store's mutation lock (the ``flock`` ``sbuf`` takes) are
both one of these.

The vault lock is taken by every write, so its cost counts: an ``flock`` on a file opened for
the first acquisition and closed at the last release costs a few system calls, where a general
purpose lock library spends several hundred microseconds in Python bookkeeping. One
:class:`LockFile` exists per path in a process (:func:`lock_file`), so two ``Vault`` objects on
one directory share it, and the holder may take it again (a unit of work inside a gc pass).

Where ``fcntl`` does not exist (Windows) the ``filelock`` package does the same job.
"""

from __future__ import annotations

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

    def acquire(self, timeout: float) -> bool:
        """Take the lock, waiting up to ``timeout`` seconds (0: one try). True when this call
        took it from no one (not a nested acquisition). Raises :class:`LockBusy`."""
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
        if self._fd is None:  # pragma: no cover - not POSIX
            self._give_back_portable()
            return
        fd, self._fd = self._fd, None
        try:
            fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    def _take_portable(self, deadline: float) -> None:  # pragma: no cover - not POSIX
        from filelock import FileLock, Timeout

        lock = FileLock(str(self.path))
        try:
            lock.acquire(timeout=max(deadline - time.monotonic(), 0.0), poll_interval=POLL_SECONDS)
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
    # A forked child holds none of its parent's locks (nor its threads' turns).
    _LOCKS.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_after_fork)


def lock_file(path: Path) -> LockFile:
    """The one :class:`LockFile` of ``path`` in this process."""
    key = os.path.abspath(path)
    with _REGISTRY:
        found = _LOCKS.get(key)
        if found is None:
            found = _LOCKS[key] = LockFile(Path(key))
        return found
