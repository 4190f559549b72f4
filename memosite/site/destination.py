"""Where a built site goes, and what memosite may remove there.

A folder memosite builds into carries a manifest, ``.memosite-site.json``, signed by this user's
key (:mod:`memosite.site.manifest`): every file the build wrote, with its content's digest, and the
directories it made. memosite only ever writes into a folder that is new, empty or carries a
manifest it can show it wrote. On a rebuild it removes only files that manifest lists whose content
is still what memosite wrote, and only directories it made that are left empty: anything a person
added or edited beside the site stays (an edited file is reported), and a file of a person's that
the new site would replace stops the build before any change. A destination that resolves (through
any symlink) into the vault, or that holds the vault, is refused before anything is written.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from memosite.errors import InvalidArguments
from memosite.site.manifest import Manifest, manifest_key, read_manifest, record_file, relative_paths, unchanged
from memosite.site.manifest import write_manifest as write_signed_manifest
from memosite.userdirs import private_dir, user_cache_dir

MANIFEST = ".memosite-site.json"
GENERATOR = "memosite build"


@dataclass(frozen=True)
class Destination:
    """A checked destination: its resolved path, what the previous build left there (None: no
    build of memosite's is there) and the key its manifest is signed with."""

    path: Path
    previous: Manifest | None
    key: bytes = field(repr=False)


@dataclass
class Placement:
    """What placing a site changed beyond writing it."""

    kept: list[str] = field(default_factory=list)  # files of the previous build a person edited since


def default_site_dir(vault_root: Path, env: Mapping[str, str] | None = None) -> Path:
    """Where ``memosite build`` puts the site when no ``--out`` names a folder:
    ``<user cache>/sites/<vault name>-<10 hex of the vault's path>`` (``$XDG_CACHE_HOME/memosite``,
    else ``~/.cache/memosite``). Never the directory the command runs in: that is most often the
    product repository, whose ``git status`` a ``site/`` folder would fill. A built site is derived
    and disposable, so it is a cache; it is this user's, so it is kept per user and per vault
    (two vaults never share one folder), outside every vault and repository."""
    resolved = vault_root.expanduser().resolve()
    digest = hashlib.sha256(os.fsencode(resolved)).hexdigest()[:10]
    base = private_dir(user_cache_dir(env))
    return base / "sites" / f"{resolved.name or 'vault'}-{digest}"


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def check_destination(out_dir: str | Path, vault_root: Path, *, key: bytes | None = None) -> Destination:
    """Refuse a destination memosite must not write into; see the module docstring."""
    given = Path(out_dir).expanduser().absolute()
    resolved = given.resolve()
    vault = vault_root.resolve()
    if _inside(resolved, vault) or _inside(vault, resolved):
        where = f" (it resolves to {resolved})" if resolved != given else ""
        raise InvalidArguments(f"refusing to build into {given}{where}: it overlaps the vault {vault_root}")
    if resolved.exists() and not resolved.is_dir():
        raise InvalidArguments(f"refusing to build into {given}: it is not a directory")
    key = key if key is not None else manifest_key()
    previous: Manifest | None = None
    if resolved.is_dir() and any(resolved.iterdir()):
        previous = read_manifest(resolved / MANIFEST, GENERATOR, key)
        if previous is None:
            raise InvalidArguments(
                f"refusing to build into {given}: it is not empty and memosite did not build it"
                f" (no {MANIFEST}); choose a new or empty folder"
            )
    return Destination(resolved, previous, key)


def site_files(site_dir: Path) -> list[str]:
    """Every file under ``site_dir``, relative, in a stable order (the manifest's list)."""
    return relative_paths(site_dir, skip=[MANIFEST])[0]


def place_site(staging: Path, destination: Destination) -> Placement:
    """Put the finished site in ``staging`` at the destination; see the module docstring.

    A new destination, or one that holds exactly the previous build, is swapped whole. Otherwise
    the previous build's files the new one lacks (unless edited since) go, the new files are moved
    in one by one, and the directories the previous build made that are left empty go."""
    new_files, new_dirs = relative_paths(staging, skip=[MANIFEST])
    # Hash what was just written, once: the next build tells an unchanged file by its stat.
    written = {name: record_file(staging / name) for name in new_files}
    target, key = destination.path, destination.key
    if not target.exists():
        write_signed_manifest(staging / MANIFEST, GENERATOR, Manifest(written, frozenset(new_dirs)), key)
        os.replace(staging, target)
        return Placement()
    previous = destination.previous or Manifest()
    present, present_dirs = relative_paths(target, skip=[MANIFEST])
    theirs = {name for name in present if name not in previous.files}  # symlinks among them
    edited = {name for name in present if name in previous.files and not unchanged(target / name, previous.files[name])}
    # A person's file where the site puts a file, or where it needs a directory, stops everything.
    clashes = sorted((theirs | edited) & {*new_files, *new_dirs})
    if clashes:
        why = "was changed after memosite wrote it" if clashes[0] in edited else "memosite did not write"
        raise InvalidArguments(f"refusing to build into {target}: the site would replace {clashes[0]}, which {why}")
    if destination.previous is not None and not theirs and not edited and set(present_dirs) <= previous.dirs:
        write_signed_manifest(staging / MANIFEST, GENERATOR, Manifest(written, frozenset(new_dirs)), key)
        _swap(staging, target)
        return Placement()
    made = frozenset(d for d in new_dirs if d in previous.dirs or not (target / d).exists())
    # Until the last file is in, the manifest lists both builds: a build that dies half way leaves
    # a folder the next build can still tell apart from a person's files.
    both = Manifest({**previous.files, **written}, previous.dirs | made)
    write_signed_manifest(target / MANIFEST, GENERATOR, both, key)
    # Only files the walk found (it never enters a symlinked directory) are ever removed.
    for relative in sorted(set(present) & set(previous.files) - set(written) - edited):
        with contextlib.suppress(FileNotFoundError, IsADirectoryError, NotADirectoryError):
            (target / relative).unlink()
    for relative in new_files:
        dest = target / relative
        dest.parent.mkdir(parents=True, exist_ok=True)
        os.replace(staging / relative, dest)
    remove_empty_dirs(target, (previous.dirs - set(new_dirs)) & set(present_dirs))
    write_signed_manifest(target / MANIFEST, GENERATOR, Manifest(written, made), key)
    shutil.rmtree(staging, ignore_errors=True)
    return Placement(kept=sorted(name for name in edited if name not in written))


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


def remove_empty_dirs(root: Path, candidates: set[str] | frozenset[str]) -> None:
    """Remove the directories among ``candidates`` (ones memosite made) that are empty, deepest
    first; a directory a person made, or one holding anything, stays."""
    for relative in sorted(candidates, key=lambda name: (-name.count("/"), name)):
        path = root / relative
        if not path.is_symlink():
            with contextlib.suppress(OSError):
                path.rmdir()
