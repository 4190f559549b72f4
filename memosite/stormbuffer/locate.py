"""Where stores are: the nearest ``.sbuf`` upward (as ``sbuf`` resolves a project store), an
explicit ``--store DIR``, or the global store in the platform data directory."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from memosite.errors import InvalidArguments
from memosite.stormbuffer.storefile import STORE_FILE

STORE_DIR_NAME = ".sbuf"


def find_store(start: Path) -> Path | None:
    """The nearest ``.sbuf`` directory from ``start`` upward, initialised or not."""
    start = start.absolute()
    for directory in (start, *start.parents):
        candidate = directory / STORE_DIR_NAME
        if candidate.is_dir():
            return candidate
    return None


def location_scope(path: Path) -> str | None:
    """The scope a store at ``path`` must have because of where it is: a ``.sbuf`` directory is
    where ``sbuf`` looks for a project store, so it refuses a global one there (WrongScope)."""
    return "project" if path.name == STORE_DIR_NAME else None


def global_store_dir(env: Mapping[str, str], platform: str) -> Path:
    """Where Stormbuffer keeps the global store on ``platform`` (a ``sys.platform`` value)."""

    def path_of(name: str) -> Path | None:
        value = env.get(name)
        return Path(value) if value else None

    home = path_of("HOME") or path_of("USERPROFILE")
    if home is None:
        raise InvalidArguments("cannot find the user data directory; set HOME")
    if platform == "darwin":
        data = path_of("XDG_DATA_HOME") or home / "Library" / "Application Support"
    elif platform.startswith("win"):
        data = path_of("LOCALAPPDATA") or path_of("APPDATA") or home / "AppData" / "Local"
    else:
        data = path_of("XDG_DATA_HOME") or home / ".local" / "share"
    return data / "stormbuffer"


def resolve_store_dir(store: str | Path | None, cwd: Path) -> Path:
    """``--store DIR`` (the store itself, or a directory holding ``.sbuf``), else search upward."""
    if store is not None:
        path = Path(store).expanduser()
        path = path if path.is_absolute() else cwd / path
        if not (path / STORE_FILE).is_file() and (path / STORE_DIR_NAME).is_dir():
            return path / STORE_DIR_NAME
        return path
    found = find_store(cwd)
    if found is None:
        raise InvalidArguments(
            f"no Stormbuffer store ({STORE_DIR_NAME}/) in {cwd} or any parent; "
            "run `memosite stormbuffer init` or pass --store DIR"
        )
    return found
