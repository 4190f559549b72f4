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


def git_common_dir(work_tree: Path) -> Path | None:
    """The git directory shared by every worktree of the repository of ``work_tree``."""
    dot_git = work_tree / ".git"
    if dot_git.is_dir():
        git_dir = dot_git
    else:
        try:
            first = dot_git.read_text(encoding="utf-8").splitlines()[0]
        except (OSError, UnicodeDecodeError, IndexError):
            return None
        if not first.startswith("gitdir:"):
            return None
        git_dir = (work_tree / first[len("gitdir:") :].strip()).resolve()
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
