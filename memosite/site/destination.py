"""Where a built site goes, and what memosite may remove there.

A folder memosite builds into carries a manifest, ``.memosite-site.json``, listing every file that
build wrote. memosite only ever writes into a folder that is new, empty or carries that manifest,
and on a rebuild it removes only the files the previous manifest lists: anything a person added
beside the site stays. A destination that resolves (through any symlink) into the vault, or that
holds the vault, is refused before anything is written.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from memosite.errors import InvalidArguments

MANIFEST = ".memosite-site.json"
MANIFEST_FORMAT = 1


@dataclass(frozen=True)
class Destination:
    """A checked destination: its resolved path and the files the previous build left there."""

    path: Path
    previous: frozenset[str]


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def read_manifest(directory: Path) -> frozenset[str] | None:
    """The files a previous memosite build wrote into ``directory``, or None without a manifest."""
    try:
        data = json.loads((directory / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    files = data.get("files") if isinstance(data, dict) else None
    if data.get("format") != MANIFEST_FORMAT or not isinstance(files, list):
        return None
    return frozenset(name for name in files if isinstance(name, str) and _safe_relative(name))


def _safe_relative(name: str) -> bool:
    parts = name.split("/")
    return bool(name) and not name.startswith("/") and ".." not in parts and "" not in parts


def check_destination(out_dir: str | Path, vault_root: Path) -> Destination:
    """Refuse a destination memosite must not write into; see the module docstring."""
    given = Path(out_dir).expanduser().absolute()
    resolved = given.resolve()
    vault = vault_root.resolve()
    if _inside(resolved, vault) or _inside(vault, resolved):
        where = f" (it resolves to {resolved})" if resolved != given else ""
        raise InvalidArguments(f"refusing to build into {given}{where}: it overlaps the vault {vault_root}")
    if resolved.exists() and not resolved.is_dir():
        raise InvalidArguments(f"refusing to build into {given}: it is not a directory")
    previous: frozenset[str] = frozenset()
    if resolved.is_dir() and any(resolved.iterdir()):
        manifest = read_manifest(resolved)
        if manifest is None:
            raise InvalidArguments(
                f"refusing to build into {given}: it is not empty and memosite did not build it"
                f" (no {MANIFEST}); choose a new or empty folder"
            )
        previous = manifest
    return Destination(resolved, previous)


def site_files(site_dir: Path) -> list[str]:
    """Every file under ``site_dir``, relative, in a stable order (the manifest's list)."""
    found = []
    for directory, dirs, names in os.walk(site_dir):
        dirs.sort()
        for name in sorted(names):
            relative = Path(directory, name).relative_to(site_dir).as_posix()
            if relative != MANIFEST:
                found.append(relative)
    return found


def write_manifest(site_dir: Path, files: list[str]) -> None:
    payload = {"format": MANIFEST_FORMAT, "generator": "memosite", "files": files}
    (site_dir / MANIFEST).write_text(json.dumps(payload, indent=0) + "\n", encoding="utf-8")


def place_site(staging: Path, destination: Destination) -> None:
    """Put the finished site in ``staging`` at the destination.

    A new destination, or one that holds nothing but the previous build, is swapped whole. Where a
    person keeps files of their own beside the site, the new files are moved in one by one and only
    the previous build's files that the new one lacks are removed. A new file that would replace a
    file memosite did not write stops everything before any change.
    """
    new_files = site_files(staging)
    write_manifest(staging, new_files)
    target = destination.path
    if not target.exists():
        os.replace(staging, target)
        return
    present = set(site_files(target))
    foreign = present - destination.previous
    if not foreign:
        _swap(staging, target)
        return
    clashes = sorted(foreign & set(new_files))
    if clashes:
        raise InvalidArguments(
            f"refusing to build into {target}: the site would replace {clashes[0]}, which memosite did not write"
        )
    for relative in sorted(destination.previous - set(new_files)):
        with contextlib.suppress(FileNotFoundError, IsADirectoryError):
            (target / relative).unlink()
    for relative in [*new_files, MANIFEST]:
        source, dest = staging / relative, target / relative
        dest.parent.mkdir(parents=True, exist_ok=True)
        os.replace(source, dest)
    _remove_empty_dirs(target)
    shutil.rmtree(staging, ignore_errors=True)


def _swap(staging: Path, target: Path) -> None:
    retired = Path(tempfile.mkdtemp(prefix=f".{target.name}.memosite-old-", dir=target.parent))
    os.replace(target, retired / target.name)
    try:
        os.replace(staging, target)
    except OSError:
        os.replace(retired / target.name, target)
        raise
    finally:
        shutil.rmtree(retired, ignore_errors=True)


def _remove_empty_dirs(root: Path) -> None:
    for directory, _dirs, _names in sorted(os.walk(root), key=lambda item: -len(item[0])):
        if Path(directory) != root:
            with contextlib.suppress(OSError):
                os.rmdir(directory)
