"""A git repository's identity, read from git's own files without running git (this runs on every
command): the name every clone and worktree of a repository shares, and its ``origin``."""

from __future__ import annotations

import re
from pathlib import Path


def git_project_name(work_tree: Path) -> str:
    """The name of the repository whose work tree is ``work_tree`` (it holds ``.git``).

    The last path part of the ``origin`` remote's URL (``git@host:acme/widget.git`` → ``widget``)
    when there is one: every clone of the repository has it, whatever its directory is called.
    Without an ``origin``, the name of the main work tree, which every ``git worktree`` of a clone
    shares (a linked worktree's ``.git`` file leads to the main repository's git directory). Read
    from git's own files, without running git: this runs on every command.
    """
    common = git_common_dir(work_tree)
    if common is not None:
        url = origin_url(common / "config")
        name = _repository_name_from_url(url) if url else None
        if name:
            return name
        if common.name == ".git":
            return common.parent.name or work_tree.name
        stem = common.name[: -len(".git")] if common.name.endswith(".git") else common.name
        return stem or work_tree.name
    return work_tree.name


def git_dir_of(work_tree: Path) -> Path | None:
    """The git directory of ``work_tree``: its ``.git``, or where a ``.git`` file points."""
    dot_git = work_tree / ".git"
    if dot_git.is_dir():
        return dot_git
    try:
        first = dot_git.read_text(encoding="utf-8").splitlines()[0]
    except (OSError, UnicodeDecodeError, IndexError):
        return None
    if not first.startswith("gitdir:"):
        return None
    return (work_tree / first[len("gitdir:") :].strip()).resolve()


def git_common_dir(work_tree: Path) -> Path | None:
    """The git directory shared by every worktree of the repository of ``work_tree``."""
    git_dir = git_dir_of(work_tree)
    if git_dir is None:
        return None
    try:
        common = (git_dir / "commondir").read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return git_dir
    return (git_dir / common).resolve() if common else git_dir


_SECTION_RE = re.compile(r'^\s*\[\s*([A-Za-z0-9.-]+)(?:\s+"((?:[^"\\]|\\.)*)")?\s*\]\s*(.*)$')
_KEY_RE = re.compile(r"^\s*([A-Za-z][A-Za-z0-9-]*)\s*(?:=\s*(.*))?$")


def origin_url(config_path: Path) -> str | None:
    """``remote.origin.url`` from a git config file (the last one wins, as in git)."""
    try:
        lines = config_path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    in_origin = False
    url: str | None = None
    for line in lines:
        section = _SECTION_RE.match(line)
        if section:
            in_origin = section.group(1).lower() == "remote" and section.group(2) == "origin"
            line = section.group(3)
            if not line.strip():
                continue
        if not in_origin:
            continue
        key = _KEY_RE.match(line)
        if key and key.group(1).lower() == "url" and key.group(2) is not None:
            url = _config_value(key.group(2))
    return url


def _config_value(raw: str) -> str:
    """A git config value: quotes removed, an unquoted ``#``/``;`` starts a comment."""
    out: list[str] = []
    quoted = False
    chars = iter(raw)
    for char in chars:
        if char == '"':
            quoted = not quoted
        elif char == "\\":
            out.append(next(chars, ""))
        elif char in "#;" and not quoted:
            break
        else:
            out.append(char)
    return "".join(out).strip()


def _repository_name_from_url(url: str) -> str | None:
    """``widget`` for ``https://host/acme/widget.git``, ``git@host:acme/widget``, ``/srv/widget.git/``."""
    text = url.strip().rstrip("/")
    if text.endswith(".git"):
        text = text[: -len(".git")]
    text = text.rstrip("/")
    name = re.split(r"[/:\\]", text)[-1] if text else ""
    return name if name and name not in (".", "..") else None


_INDEX_SIGNATURE = b"DIRC"
_ENTRY_FIXED = 40  # ctime, mtime, dev, ino, mode, uid, gid, size: ten 32-bit fields
_EXTENDED = 0x4000


def index_lists(work_tree: Path, path: str) -> bool:
    """Whether git's index (the staging area) of ``work_tree`` lists ``path`` (POSIX, relative to
    the work tree): git tracks it. Read from git's ``index`` file, versions 2 to 4, without running
    git; False when there is no index or it cannot be read."""
    git_dir = git_dir_of(work_tree)
    if git_dir is None:
        return False
    try:
        data = (git_dir / "index").read_bytes()
    except OSError:
        return False
    if len(data) < 12 or data[:4] != _INDEX_SIGNATURE:
        return False
    version = int.from_bytes(data[4:8], "big")
    count = int.from_bytes(data[8:12], "big")
    if version not in (2, 3, 4):
        return False
    wanted = path.encode("utf-8")
    hash_size = 32 if _uses_sha256(git_dir) else 20
    offset, previous = 12, b""
    try:
        for _ in range(count):
            start = offset
            offset += _ENTRY_FIXED + hash_size
            flags = int.from_bytes(data[offset : offset + 2], "big")
            offset += 2
            if version >= 3 and flags & _EXTENDED:
                offset += 2
            if version == 4:
                strip, offset = _varint(data, offset)
                end = data.index(b"\0", offset)
                name = previous[: len(previous) - strip] + data[offset:end]
                offset = end + 1
            else:
                end = data.index(b"\0", offset)
                name = data[offset:end]
                # Entries are padded with 1 to 8 NULs to a multiple of 8 bytes.
                offset = start + ((end - start + 8) // 8) * 8
            if name == wanted:
                return True
            previous = name
    except (ValueError, IndexError):
        return False
    return False


def _varint(data: bytes, offset: int) -> tuple[int, int]:
    """Git's offset varint (``decode_varint`` in git's varint.c) at ``offset``, and the offset after it."""
    byte = data[offset]
    offset += 1
    value = byte & 0x7F
    while byte & 0x80:
        byte = data[offset]
        offset += 1
        value = ((value + 1) << 7) | (byte & 0x7F)
    return value, offset


def _uses_sha256(git_dir: Path) -> bool:
    try:
        text = (git_dir / "config").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    return re.search(r"^\s*objectformat\s*=\s*sha256\s*$", text, re.IGNORECASE | re.MULTILINE) is not None
