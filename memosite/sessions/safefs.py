"""Symlink-safe private files: session directories are 0700, session files 0600.

Every path is checked with ``lstat`` before use and opened with ``O_NOFOLLOW``, so a symlink
planted in place of a session directory or file is refused rather than followed.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

from memosite.errors import StorageError
from memosite.sessions.errors import SymlinkRefused
from memosite.vault import atomic_write_bytes

DIR_MODE = 0o700
FILE_MODE = 0o600
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


def refuse_symlink(path: Path) -> os.stat_result | None:
    """lstat ``path``; raise SymlinkRefused if it is a symlink, return None if it is absent."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise StorageError(f"cannot inspect {path}: {exc.strerror or exc}") from exc
    if stat.S_ISLNK(info.st_mode):
        raise SymlinkRefused(f"refusing symlink {path}")
    return info


def ensure_private_dir(path: Path) -> None:
    """Create ``path`` (one level) as a 0700 directory, or check the one that is there."""
    info = refuse_symlink(path)
    if info is None:
        try:
            path.mkdir(mode=DIR_MODE)
        except FileExistsError:
            pass  # a concurrent creator won; the checks below still apply
        except OSError as exc:
            raise StorageError(f"cannot create {path}: {exc.strerror or exc}") from exc
        info = refuse_symlink(path)
    if info is None or not stat.S_ISDIR(info.st_mode):
        raise StorageError(f"{path} is not a directory")
    if stat.S_IMODE(info.st_mode) != DIR_MODE:
        try:
            os.chmod(path, DIR_MODE, follow_symlinks=False)
        except (OSError, NotImplementedError) as exc:
            raise StorageError(f"cannot restrict {path}: {exc}") from exc


def write_private(path: Path, data: bytes, *, durable: bool = True) -> None:
    """Atomically replace ``path`` with ``data`` (mode 0600), refusing symlinks on the way."""
    refuse_symlink(path.parent)
    refuse_symlink(path)
    atomic_write_bytes(path, data, mode=FILE_MODE, durable=durable)


def open_private(path: Path, flags: int) -> int:
    """Open a session file without following symlinks; new files get mode 0600."""
    try:
        fd = os.open(path, flags | _NOFOLLOW | _CLOEXEC, FILE_MODE)
    except OSError as exc:
        if os.path.islink(path):
            raise SymlinkRefused(f"refusing symlink {path}") from exc
        if isinstance(exc, FileNotFoundError):
            raise
        raise StorageError(f"cannot open {path}: {exc.strerror or exc}") from exc
    try:
        info = os.fstat(fd)
    except OSError as exc:
        os.close(fd)
        raise StorageError(f"cannot inspect {path}: {exc.strerror or exc}") from exc
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise StorageError(f"{path} is not a regular file")
    return fd


def read_private(path: Path) -> bytes:
    """The whole content of a session file (FileNotFoundError when it is absent)."""
    fd = open_private(path, os.O_RDONLY)
    try:
        with os.fdopen(fd, "rb") as handle:
            return handle.read()
    except OSError as exc:
        raise StorageError(f"cannot read {path}: {exc.strerror or exc}") from exc


def read_private_range(path: Path, start: int, length: int) -> bytes:
    fd = open_private(path, os.O_RDONLY)
    try:
        return os.pread(fd, length, start)
    except OSError as exc:
        raise StorageError(f"cannot read {path}: {exc.strerror or exc}") from exc
    finally:
        os.close(fd)


def append_private(path: Path, data: bytes) -> None:
    """Append ``data`` and fsync before returning; a short write is retried, an error raised."""
    fd = open_private(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    try:
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]
        os.fsync(fd)
    except OSError as exc:
        raise StorageError(f"cannot append to {path}: {exc.strerror or exc}") from exc
    finally:
        os.close(fd)


def remove_private(path: Path) -> None:
    """Remove a session file and make the removal durable; absent is fine."""
    refuse_symlink(path.parent)
    try:
        os.unlink(path)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise StorageError(f"cannot remove {path}: {exc.strerror or exc}") from exc
    fsync_dir(path.parent)


def fsync_dir(directory: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY | _NOFOLLOW)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
