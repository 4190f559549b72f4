"""The output folder of a site: brought in step with a finished build in place, emptied (a refused
build), pages that are gone removed.

:func:`update_site` is how ``memosite build`` publishes: MkDocs builds into a staging folder beside
the destination only what it rendered or copied this time, the page cache holds the rest, and once
the build has succeeded (the plugin found no secret) each file goes into the destination only when
its content differs from what the destination holds, by an atomic rename or write. Files of the
previous build that this one no longer has (a record that left) are removed; nothing else is
touched. The signed manifest of :mod:`memosite.site.destination` says what memosite wrote, so a
person's files and edits stay, and a build that dies half way leaves a folder the next build can
still tell apart from a person's.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from memosite.errors import BuildError, InvalidArguments
from memosite.interrupts import note_change
from memosite.site.cache import PageCache
from memosite.site.destination import GENERATOR, MANIFEST, Destination, Placement, remove_empty_dirs
from memosite.site.manifest import Manifest, WrittenFile, content_digest, still_written, within, write_manifest


def clean_site_dir(site_dir: Path) -> None:
    """Empty ``site_dir`` (a build that found a secret publishes nothing)."""
    if not site_dir.is_dir():
        return
    for entry in site_dir.iterdir():
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)


def remove_outputs(site_dir: Path, paths: Iterable[str]) -> None:
    """Delete pages of records that are gone, and directories they leave empty."""
    root = site_dir.resolve()
    for raw in paths:
        path = Path(raw)
        path.unlink(missing_ok=True)
        parent = path.parent
        while parent.resolve() != root and root in parent.resolve().parents:
            try:
                parent.rmdir()
            except OSError:
                break
            parent = parent.parent


@dataclass
class SiteUpdate(Placement):
    """What :func:`update_site` did: files written (new or changed), removed, and the manifest now
    in the destination."""

    written: list[str] | None = None
    removed: list[str] | None = None
    manifest: Manifest | None = None


def _parents(names: Iterable[str]) -> set[str]:
    found: set[str] = set()
    for name in names:
        parent = name.rpartition("/")[0]
        # Up to the first directory already found: its own parents are in already.
        while parent and parent not in found:
            found.add(parent)
            parent = parent.rpartition("/")[0]
    return found


def update_site(
    staging: Path, destination: Destination, cached: Mapping[str, str], cache: PageCache | None
) -> SiteUpdate:
    """Bring ``destination`` in step with the build in ``staging`` plus the pages ``cached`` names
    (site path -> page in ``cache``), in place; see the module docstring. Before anything changes,
    a person's file (one memosite did not write, or edited since) where the site puts a file or
    needs a directory stops it. Removes ``staging``."""
    if destination.previous is None and not os.path.lexists(destination.path):
        whole = _publish_new(staging, destination, cached, cache)
        if whole is not None:
            return whole
        cached = {}  # the rename was refused: the cached pages are in staging, placed as built ones
    staged, staged_dirs = _walk(staging)
    page_mode = _new_file_mode(staging)
    new_files = set(staged) | set(cached)
    new_dirs = set(staged_dirs) | _parents(cached)
    target, key = destination.path, destination.key
    previous = destination.previous or Manifest()
    # Only the paths this build or the last one names are looked at, never the whole folder: a
    # file of a person's matters only where the site would put a file or need a directory.
    # One lstat per file of the last build says which are still memosite's (``intact``, with
    # their stat now), which a person edited, and which are gone.
    base = os.fspath(target)
    intact: dict[str, WrittenFile] = {}
    edited: set[str] = set()
    for name, recorded in previous.files.items():
        path = f"{base}/{name}"  # a manifest's names are relative POSIX paths (read_manifest checks)
        now = still_written(path, recorded)
        if now is not None:
            intact[name] = now
        elif os.path.lexists(path):
            edited.add(name)
    # Every directory the site needs is checked, those the last build made too: one a person
    # replaced with a file or a link (into another folder) would take this build's files there.
    # (The directories holding them are listed, one level each, and never walked.)
    theirs = _not_directories(base, new_dirs)
    theirs |= {name for name in new_files.difference(previous.files) if os.path.lexists(f"{base}/{name}")}
    # A file that holds exactly what this build puts there is no person's (a build that died half
    # way put it in, after the manifest was written): taking it as memosite's loses nothing.
    for name in (theirs | edited) & new_files:
        now = _holding(f"{base}/{name}", staging / name, cached.get(name), cache)
        if now is not None:
            intact[name] = now
            theirs.discard(name)
            edited.discard(name)
    clashes = sorted((theirs | edited) & (new_files | new_dirs))
    if clashes:
        why = "was changed after memosite wrote it" if clashes[0] in edited else "memosite did not write"
        raise InvalidArguments(f"refusing to build into {target}: the site would replace {clashes[0]}, which {why}")
    # From here the folder changes: Ctrl-C is held until every file is in (memosite.interrupts), so
    # a command never says "interrupted before anything was changed" of a site half placed.
    note_change()
    target.mkdir(parents=True, exist_ok=True)
    made = frozenset(d for d in new_dirs if d in previous.dirs or not (target / d).exists())
    written: dict[str, WrittenFile] = {}
    placed: list[str] = []
    # Until the last file is in, the manifest lists both builds: a build that dies half way leaves
    # a folder the next build can still tell apart from a person's files.
    # (When this build makes no directory the last one did not, that is the manifest in place.)
    if destination.previous is None or not made <= previous.dirs:
        write_manifest(target / MANIFEST, GENERATOR, Manifest({**previous.files}, previous.dirs | made), key)
    # The files of the last build this one does not have (a record that left) go first: a path
    # where the site now needs a directory is free before anything is put there.
    # Only files reached without passing through a link: a directory a person swapped for a link
    # into another folder never has files removed there.
    removed = sorted(name for name in intact.keys() - new_files if within(target, name))
    try:
        for name in removed:
            with contextlib.suppress(FileNotFoundError, IsADirectoryError, NotADirectoryError):
                (target / name).unlink()
        for name in staged:
            digest = content_digest(staging / name)
            known = intact.get(name)
            if known is not None and known.digest == digest:
                written[name] = known
                continue
            dest = target / name
            dest.parent.mkdir(parents=True, exist_ok=True)
            os.replace(staging / name, dest)
            written[name] = _written(dest, digest)
            placed.append(name)
        for name, src_uri in cached.items():
            entry = cache.pages.get(src_uri) if cache is not None else None
            known = intact.get(name)
            if entry is not None and known is not None and known.digest == entry.digest:
                written[name] = known
                continue
            if entry is None or cache is None or not cache.place(entry, target / name, mode=page_mode):
                raise BuildError(
                    f"site build failed: the page cache lost {src_uri}; build again (it rebuilds the page)"
                )
            written[name] = _written(target / name, entry.digest)
            placed.append(name)
    except BaseException:
        # Stopped half way (a page the cache lost, Ctrl-C): the manifest says what is in place now,
        # this build's files among the last one's, so "build again" finds no person's file here.
        with contextlib.suppress(OSError):
            write_manifest(
                target / MANIFEST, GENERATOR, Manifest({**previous.files, **written}, previous.dirs | made), key
            )
        raise
    remove_empty_dirs(target, previous.dirs - new_dirs)
    manifest = Manifest(written, made)
    if destination.previous is None or manifest != destination.previous:
        write_manifest(target / MANIFEST, GENERATOR, manifest, key)
    shutil.rmtree(staging, ignore_errors=True)
    kept = sorted(name for name in edited if name not in written)
    return SiteUpdate(kept=kept, written=placed, removed=removed, manifest=manifest)


def _holding(path: str, built: Path, src_uri: str | None, cache: PageCache | None) -> WrittenFile | None:
    """``path`` as it stands, when it is a file holding what this build puts there (the file
    ``built`` in staging, or the cached page ``src_uri``); None otherwise."""
    entry = cache.pages.get(src_uri) if cache is not None and src_uri is not None else None
    try:
        if entry is not None:
            wanted = WrittenFile(entry.digest, entry.size, -1, -1)
        else:
            wanted = WrittenFile(content_digest(built), os.lstat(built).st_size, -1, -1)
    except OSError:
        return None
    return still_written(path, wanted)  # no such time and inode: the content is compared


def _publish_new(
    staging: Path, destination: Destination, cached: Mapping[str, str], cache: PageCache | None
) -> SiteUpdate | None:
    """A destination that does not exist yet becomes the staging folder itself, complete with its
    signed manifest, by one rename: no file is moved one by one and no emptied staging tree is
    removed after (a thousand directories made twice and removed once cost seconds of waiting on
    some disks). None, with the cached pages left in ``staging``, when the rename is refused
    (something appeared at the destination meanwhile)."""
    digests: dict[str, str] = {}
    page_mode = _new_file_mode(staging)
    for name, src_uri in cached.items():
        entry = cache.pages.get(src_uri) if cache is not None else None
        if entry is None or cache is None or not cache.place(entry, staging / name, mode=page_mode):
            raise BuildError(f"site build failed: the page cache lost {src_uri}; build again (it rebuilds the page)")
        digests[name] = entry.digest
    staged, staged_dirs = _walk(staging)
    written = {name: _written(staging / name, digests.get(name) or content_digest(staging / name)) for name in staged}
    manifest = Manifest(written, frozenset(staged_dirs))
    write_manifest(staging / MANIFEST, GENERATOR, manifest, destination.key)
    try:
        # The staging folder was made private (mkdtemp); the site gets the mode a folder made
        # there now gets (the person's umask, a default ACL), as its subfolders did.
        probe = staging / ".memosite-mode"
        os.mkdir(probe)
        try:
            mode = stat.S_IMODE(os.lstat(probe).st_mode)
        finally:
            os.rmdir(probe)
        os.chmod(staging, mode)
        # A directory's files keep their inode and time through the rename: the manifest holds.
        os.rename(staging, destination.path)
    except OSError:
        (staging / MANIFEST).unlink(missing_ok=True)
        return None
    return SiteUpdate(kept=[], written=sorted(staged), removed=[], manifest=manifest)


def _new_file_mode(directory: Path) -> int:
    """The permissions a file made in ``directory`` gets (the person's umask, a default ACL): what
    the engine gave the pages it wrote, so a page taken from the cache gets them too."""
    probe = directory / ".memosite-mode"
    try:
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    except OSError:
        return 0o644
    try:
        return stat.S_IMODE(os.fstat(fd).st_mode)
    finally:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(probe)


def _walk(root: Path) -> tuple[list[str], list[str]]:
    """Every file and directory under ``root``, relative (POSIX), never following a link (a
    symlink counts as a file)."""
    files: list[str] = []
    dirs: list[str] = []
    start = len(os.fspath(root)) + 1
    for directory, subdirs, names in os.walk(root):
        here = directory[start:].replace(os.sep, "/")
        prefix = f"{here}/" if here else ""
        for name in list(subdirs):
            if os.path.islink(os.path.join(directory, name)):
                subdirs.remove(name)
                names.append(name)
            else:
                dirs.append(prefix + name)
        files += [prefix + name for name in names if prefix + name != MANIFEST]
    return files, dirs


def _not_a_directory(path: str) -> bool:
    """Whether something other than a real directory (a file, a link) stands at ``path``."""
    try:
        return not stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False  # as os.path.lexists says: nothing stands there that can be looked at


def _not_directories(base: str, names: set[str]) -> set[str]:
    """The relative directories among ``names`` where something other than a real directory (a
    file, a link) stands under ``base``: :func:`_not_a_directory` of each, found by listing each
    parent once (a listing tells a directory from a link or a file without a ``stat`` per name)."""
    children: dict[str, set[str]] = {}
    for name in names:
        parent, _, child = name.rpartition("/")
        siblings = children.get(parent)
        if siblings is None:
            children[parent] = {child}
        else:
            siblings.add(child)
    found: set[str] = set()
    # Parents before their children: a directory is listed only once it is known to be a real one.
    for parent in sorted(children, key=lambda name: name.count("/") if name else -1):
        prefix = f"{parent}/" if parent else ""
        if parent and (parent not in names or parent in found):
            # Not one of ours to list (a file or a link stands there, or it is not checked): each name alone.
            found.update(prefix + child for child in children[parent] if _not_a_directory(f"{base}/{prefix}{child}"))
            continue
        wanted = children[parent]
        seen: set[str] = set()
        try:
            with os.scandir(f"{base}/{parent}" if parent else base) as listing:
                for entry in listing:
                    if entry.name in wanted:
                        seen.add(entry.name)
                        if not entry.is_dir(follow_symlinks=False):
                            found.add(prefix + entry.name)
        except FileNotFoundError:
            continue  # nothing stands there, nor under it
        except OSError:
            pass  # what the listing did not say is looked at name by name
        # A name the listing does not hold as spelled may still reach something (a file system
        # that ignores case or normalises Unicode): each is looked at alone (in a warm build, none).
        found.update(prefix + child for child in wanted - seen if _not_a_directory(f"{base}/{prefix}{child}"))
    return found


def _written(path: Path, digest: str) -> WrittenFile:
    info = os.lstat(path)
    return WrittenFile(digest, info.st_size, info.st_mtime_ns, info.st_ino)
