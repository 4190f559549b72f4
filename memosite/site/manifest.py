"""What memosite wrote into a folder outside the vault, and the proof that memosite wrote it.

A built site (``.memosite-site.json``) and an export (``.memosite-export.json``) carry a manifest:
every file memosite wrote there with the digest of its content, and the directories it made. Its
files may be removed later, so a manifest is trusted only when memosite can show it wrote it: it
is signed with HMAC-SHA256 under a key kept in this user's state directory (outside every vault,
created 0600), so a manifest that arrived from elsewhere (a clone, a download, a hand) proves
nothing and removes nothing. Even a trusted manifest only lets memosite remove a file whose content
is still what memosite wrote; one edited since is a person's and stays.

Hashing costs one read of each file memosite writes; telling whether a file changed since is a
``stat`` while its size, time and inode are the ones recorded (an edit moves at least one of them),
and a read of the file otherwise.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import re
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from memosite.errors import SafetyViolation, StorageError
from memosite.userdirs import private_dir, user_state_dir

FORMAT = 2
KEY_FILE = "folder-manifest.key"
KEY_BYTES = 32
_CHUNK = 1 << 20
# How write_manifest ends a manifest: the signature as the last member.
_MAC_TAIL = re.compile(r',"mac":"([0-9a-f]{64})"\}')
_MAC_TAIL_CHARS = len(',"mac":"') + 64 + len('"}')


class WrittenFile(NamedTuple):
    """One file as memosite wrote it: its content's digest, and the stat that shows it unchanged."""

    # A named tuple, not a frozen dataclass: a manifest of a 10k-page site makes 10k of them on
    # each read, and compares as many on each write (both in C for a tuple).
    digest: str
    size: int
    mtime_ns: int
    inode: int

    def to_json(self) -> list[str | int]:
        return [self.digest, self.size, self.mtime_ns, self.inode]


@dataclass(frozen=True)
class Manifest:
    """The files (relative POSIX paths) and directories memosite wrote into one folder."""

    files: Mapping[str, WrittenFile] = field(default_factory=dict)
    dirs: frozenset[str] = frozenset()


def data_digest(data: bytes) -> str:
    """What :func:`content_digest` says of a file holding ``data``."""
    return hashlib.blake2b(data, digest_size=32).hexdigest()


def content_digest(path: str | os.PathLike[str]) -> str:
    """BLAKE2b-256 of a file's bytes, read without following a symlink."""
    digest = hashlib.blake2b(digest_size=32)
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    with os.fdopen(fd, "rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def record_file(path: Path) -> WrittenFile:
    """``path`` as it stands now (just written by memosite)."""
    info = os.lstat(path)
    return WrittenFile(content_digest(path), info.st_size, info.st_mtime_ns, info.st_ino)


def unchanged(path: Path, written: WrittenFile) -> bool:
    """Whether ``path`` still holds what memosite wrote (a symlink or a directory never does)."""
    return still_written(path, written) is not None


def still_written(path: str | os.PathLike[str], written: WrittenFile) -> WrittenFile | None:
    """``written`` as ``path`` stands now when it still holds what memosite wrote; None when it
    does not (edited, replaced by something else, gone). A file whose content is the same under a
    new time or inode (the folder was copied or moved) comes back with its new stat, so the next
    look at it is a ``stat`` again and not a read."""
    try:
        info = os.lstat(path)
    except OSError:
        return None
    if not stat.S_ISREG(info.st_mode) or info.st_size != written.size:
        return None
    if (info.st_mtime_ns, info.st_ino) == (written.mtime_ns, written.inode):
        return written
    try:
        same = hmac.compare_digest(content_digest(path), written.digest)
    except OSError:
        return None
    return WrittenFile(written.digest, info.st_size, info.st_mtime_ns, info.st_ino) if same else None


def relative_paths(root: Path, skip: Iterable[str] = ()) -> tuple[list[str], list[str]]:
    """Every file and every directory under ``root`` (relative, sorted), never following a link;
    a symlink counts as a file (memosite writes none, so it is never one of memosite's)."""
    left_out = set(skip)
    files: list[str] = []
    dirs: list[str] = []
    for directory, subdirs, names in os.walk(root):
        here = Path(directory)
        subdirs.sort()
        for name in list(subdirs):
            if os.path.islink(here / name):
                subdirs.remove(name)
                names.append(name)
            else:
                dirs.append((here / name).relative_to(root).as_posix())
        for name in sorted(names):
            relative = (here / name).relative_to(root).as_posix()
            if relative not in left_out:
                files.append(relative)
    return sorted(files), sorted(dirs)


def within(root: Path, relative: str) -> bool:
    """Whether ``root / relative`` is reached without passing through a symlinked directory (so a
    change there stays inside ``root``)."""
    path = root
    for part in relative.split("/")[:-1]:
        path = path / part
        if path.is_symlink() or not path.is_dir():
            return False
    return True


def _safe_relative(name: str) -> bool:
    parts = name.split("/")
    return bool(name) and not name.startswith("/") and ".." not in parts and "" not in parts and "." not in parts


def _all_safe_relative(names: list[str]) -> bool:
    """Whether every name is :func:`_safe_relative`."""
    # Each name between slashes, the names apart: an empty, "." or ".." part of any name shows as
    # one of these three in the whole, so a whole without them needs no look at each name.
    whole = "/" + "/\0/".join(names) + "/"
    if "//" not in whole and "/./" not in whole and "/../" not in whole:
        return True
    return all(_safe_relative(name) for name in names)


def _written_files(files: object) -> dict[str, WrittenFile]:
    """The ``files`` of a manifest as read (name -> :meth:`WrittenFile.to_json`), checked a column
    at a time; ValueError when a value is not [digest, size, mtime_ns, inode] of a str and ints."""
    if not isinstance(files, dict):
        raise ValueError("files")
    values = list(files.values())
    if not (set(map(type, values)) <= {list} and set(map(len, values)) <= {4}):
        raise ValueError("a written file is [digest, size, mtime_ns, inode]")
    digests, sizes, times, inodes = zip(*values, strict=True) if values else ((), (), (), ())
    if not set(map(type, digests)) <= {str}:
        raise ValueError("a written file is [digest, size, mtime_ns, inode]")
    if not set(map(type, sizes + times + inodes)) <= {int}:  # type, not isinstance: no bool
        raise ValueError("a written file's size, time and inode are integers")
    return dict(zip(map(str, files), map(WrittenFile, digests, sizes, times, inodes), strict=True))


# --- the key and the signature ------------------------------------------------------------------


def manifest_key(state_dir: Path | None = None) -> bytes:
    """This user's key for signing manifests, made on first use (0600, in a 0700 directory)."""
    directory = private_dir(state_dir or user_state_dir())
    path = directory / KEY_FILE
    key = _read_key(path)
    if key is not None:
        return key
    temp = directory / f".{KEY_FILE}.{os.getpid()}.{os.urandom(4).hex()}"
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(os.urandom(KEY_BYTES))
            handle.flush()
            os.fsync(handle.fileno())
        # A link never replaces a key another process made first: both then use that one.
        with contextlib.suppress(FileExistsError):
            os.link(temp, path)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(temp)
    key = _read_key(path)
    if key is None:
        raise StorageError(f"cannot make the manifest key {path}")
    return key


def _read_key(path: Path) -> bytes | None:
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise StorageError(f"cannot read the manifest key {path}: {exc.strerror or exc}") from exc
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        getuid = getattr(os, "getuid", None)
        if not stat.S_ISREG(info.st_mode) or (getuid is not None and info.st_uid != getuid()):
            raise StorageError(f"refusing to use the manifest key {path}: it is not this user's file")
        if info.st_mode & 0o077:
            raise StorageError(f"refusing to use the manifest key {path}: others can read it (chmod 600 it)")
        key = handle.read(KEY_BYTES + 1)
    if len(key) != KEY_BYTES:
        raise StorageError(f"refusing to use the manifest key {path}: it is not a key memosite made")
    return key


def _signed_text(generator: str, manifest: Manifest) -> str:
    files = manifest.files
    # Keys in sorted order, as sort_keys=True lays them out (one sort of the names, not two of the
    # items); a WrittenFile is a tuple, so JSON writes it as its to_json() list.
    return json.dumps(
        {
            "dirs": sorted(manifest.dirs),
            "files": {name: files[name] for name in sorted(files)},
            "format": FORMAT,
            "generator": generator,
        },
        separators=(",", ":"),
        ensure_ascii=True,
    )


def _mac(key: bytes, text: str) -> str:
    return hmac.new(key, text.encode("ascii"), hashlib.sha256).hexdigest()


def write_manifest(path: Path, generator: str, manifest: Manifest, key: bytes) -> None:
    """Write the signed manifest at ``path`` (atomically: a rename replaces the previous one)."""
    text = _signed_text(generator, manifest)
    # The signed text is a JSON object: the signature goes in as one more member (a reader signs
    # what it parsed again, so where the member stands does not matter).
    payload = f'{text[:-1]},"mac":"{_mac(key, text)}"}}'
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temp.write_text(payload + "\n", encoding="utf-8")
    os.replace(temp, path)


def read_manifest(path: Path, generator: str, key: bytes) -> Manifest | None:
    """The manifest at ``path``; None when there is none. A manifest memosite cannot show it wrote
    (unsigned, signed with another key, altered, unreadable) is a SafetyViolation: nothing it lists
    may be removed or replaced."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise _foreign(path, f"it cannot be read ({exc.strerror or exc})") from exc
    try:
        text = raw.decode("utf-8")
        signed = _signed_as_written(text, key)
        data = json.loads(text if signed is None else signed)
        if not isinstance(data, dict) or data.get("format") != FORMAT or data.get("generator") != generator:
            raise ValueError("not a manifest of this format")
        files_data, dirs_data = data["files"], data["dirs"]
        if not isinstance(files_data, dict) or not isinstance(dirs_data, list):
            raise ValueError("files and dirs")
        manifest = Manifest(_written_files(files_data), frozenset(map(str, dirs_data)))
        mac = data.get("mac")
    except (ValueError, KeyError, TypeError, UnicodeDecodeError):
        raise _foreign(path, "it is not one memosite wrote") from None
    if signed is None and (
        not isinstance(mac, str) or not hmac.compare_digest(mac, _mac(key, _signed_text(generator, manifest)))
    ):
        raise _foreign(path, "its signature is not this user's: another machine, an older memosite or a hand wrote it")
    if not _all_safe_relative([*manifest.files, *manifest.dirs]):
        raise _foreign(path, "it names a path outside the folder")
    return manifest


def _signed_as_written(text: str, key: bytes) -> str | None:
    """The signed text of a manifest as :func:`write_manifest` lays it out (the signature its last
    member), when the signature is this key's over exactly that text; None otherwise."""
    body = text[:-1] if text.endswith("\n") else text
    tail = _MAC_TAIL.fullmatch(body, max(0, len(body) - _MAC_TAIL_CHARS))
    if tail is None:
        return None
    signed = body[: tail.start()] + "}"
    if not signed.isascii():
        return None  # not as written (it escapes every other character): read the slow way
    # Checked as it stands: no second serialisation of every file (a 10k-page site lists 10k).
    return signed if hmac.compare_digest(tail.group(1), _mac(key, signed)) else None


def _foreign(path: Path, why: str) -> SafetyViolation:
    return SafetyViolation(
        f"refusing to write into {path.parent}: memosite cannot show it wrote {path.name} ({why});"
        " nothing was changed. Choose a new or empty folder",
        details={"manifest": path.name},
    )
