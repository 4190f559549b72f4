"""This user's own directories, outside every vault: a cache, a state and a data directory.

Whatever could hold code (compiled templates) or prove what memosite wrote (the key that signs a
site folder's manifest) lives here and never in a vault, because a vault's files arrive from a
shared git remote. The places follow the XDG base directory rules: ``$XDG_CACHE_HOME/memosite``
(else ``~/.cache/memosite``), ``$XDG_STATE_HOME/memosite`` (else ``~/.local/state/memosite``) and
``$XDG_DATA_HOME/memosite`` (else ``~/.local/share/memosite``, where the demo lives);
a relative ``XDG_*`` value is ignored, as the rules say. Each is created private to the user
(0700), and one that another user could write into is never used.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Mapping
from pathlib import Path

from memosite.errors import StorageError

APP_DIR = "memosite"


def _base(env: Mapping[str, str], variable: str, *fallback: str) -> Path:
    chosen = env.get(variable, "")
    if chosen and os.path.isabs(chosen):
        return Path(chosen)
    home = env.get("HOME") or str(Path.home())
    return Path(home, *fallback)


def user_cache_dir(env: Mapping[str, str] | None = None) -> Path:
    """``$XDG_CACHE_HOME/memosite`` or ``~/.cache/memosite`` (not created)."""
    return _base(os.environ if env is None else env, "XDG_CACHE_HOME", ".cache") / APP_DIR


def user_state_dir(env: Mapping[str, str] | None = None) -> Path:
    """``$XDG_STATE_HOME/memosite`` or ``~/.local/state/memosite`` (not created)."""
    return _base(os.environ if env is None else env, "XDG_STATE_HOME", ".local", "state") / APP_DIR


def user_data_dir(env: Mapping[str, str] | None = None) -> Path:
    """``$XDG_DATA_HOME/memosite`` or ``~/.local/share/memosite`` (not created): data this user keeps
    that is no vault's (the demo)."""
    return _base(os.environ if env is None else env, "XDG_DATA_HOME", ".local", "share") / APP_DIR


def private_dir(path: Path) -> Path:
    """``path`` as a directory only this user can write into, created (0700) when missing.

    Raises StorageError when it cannot be made, is a symlink, is not a directory, belongs to
    another user or lets others write into it: nothing memosite trusts is read from such a place.
    """
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileExistsError):
            os.mkdir(path, 0o700)
        info = os.lstat(path)
    except OSError as exc:
        raise StorageError(f"cannot use {path}: {exc.strerror or exc}") from exc
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode):
        raise StorageError(f"refusing to use {path}: it is not a plain directory")
    getuid = getattr(os, "getuid", None)
    if getuid is not None and info.st_uid != getuid():
        raise StorageError(f"refusing to use {path}: it belongs to another user")
    if info.st_mode & 0o022:
        raise StorageError(f"refusing to use {path}: other users can write into it (chmod 700 it)")
    return path
