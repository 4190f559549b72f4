"""Vault root and project resolution. A vault's configuration is read by
:mod:`memosite.vaultconfig` (the team's ``config.json`` and this machine's ``config.local.json``)
and the table of settings is :mod:`memosite.settings`; both are reached from here as well.

Configuration is read only when a composition root (a CLI command, the MCP server) asks for it;
nothing reads the environment on import.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from memosite.errors import InvalidArguments
from memosite.gitfiles import git_project_name as git_project_name
from memosite.settings import DEFAULT_CONFIG as DEFAULT_CONFIG
from memosite.text import suggest_ascii
from memosite.vaultconfig import VaultConfig as VaultConfig
from memosite.vaultconfig import load_config as load_config

PROJECT_FILE = ".memosite.toml"
_PROJECT_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


def default_vault_root(env: Mapping[str, str]) -> Path:
    home = env.get("HOME") or str(Path.home())
    return Path(home) / ".memosite"


def holds_vault(root: Path) -> bool:
    """Whether ``root`` is a vault already (its config, projects or index are there), rather than
    an empty or unrelated directory a read must not turn into one."""
    return (root / "config.json").is_file() or (root / "projects").is_dir() or (root / ".memosite").is_dir()


def resolve_vault_root(explicit: str | Path | None, env: Mapping[str, str]) -> Path:
    """``--vault`` beats ``MEMOSITE_VAULT`` beats ``~/.memosite``.

    An empty ``--vault`` is an error (a script's unset variable must not land in the real vault);
    an empty ``MEMOSITE_VAULT`` counts as unset.
    """
    if explicit is not None and not str(explicit).strip():
        raise InvalidArguments("--vault must not be empty")
    chosen = explicit or env.get("MEMOSITE_VAULT")
    root = Path(chosen).expanduser() if chosen else default_vault_root(env)
    return root.absolute()


def validate_project_id(project: str) -> str:
    """A project id names one directory under ``projects/``: never a path, never ``..``."""
    if not isinstance(project, str) or not _PROJECT_ID_RE.match(project) or ".." in project:
        raise InvalidArguments(
            f"invalid project id {project!r}: use ASCII letters, digits, '.', '_' or '-', starting"
            f" with a letter or digit (no path separators, no '..'){suggest_ascii(project)}"
        )
    return project


def slugify_project(name: str) -> str:
    """A project id for a directory or repository name in any script (``Мой Проект`` →
    ``moi-proekt``, ``数据库`` → ``shu-ju-ku``, ``café`` → ``cafe``): ASCII letters, digits, ``.``,
    ``_`` and ``-``, as project directories must be."""
    from memosite.text import slugify

    kept = re.sub(r"[^\w.-]+", " ", name.strip())
    parts = [
        slugify(part, 128) if not re.fullmatch(r"[A-Za-z0-9._-]+", part) else part.lower() for part in kept.split()
    ]
    slug = "-".join(part for part in parts if part).strip("-.")
    slug = re.sub(r"\.{2,}", ".", slug)
    return slug[:128].rstrip("-.") or "default"


@dataclass(frozen=True)
class ProjectIdentity:
    id: str
    name: str
    source: str  # "explicit", "env", "vault", "project-file", "git", "directory"


CEILING_VARIABLE = "MEMOSITE_CEILING_DIRECTORIES"


def upward(start: Path, env: Mapping[str, str]) -> Iterator[Path]:
    """``start`` and its parents, stopping below any directory named in
    ``MEMOSITE_CEILING_DIRECTORIES`` (a path list, like git's ``GIT_CEILING_DIRECTORIES``): a
    ceiling and what lies above it are never looked into, unless ``start`` is the ceiling itself.
    As git does, relative entries are ignored and a ceiling reached through a symlink counts."""
    ceilings: set[str] = set()
    for part in env.get(CEILING_VARIABLE, "").split(os.pathsep):
        if part.strip() and os.path.isabs(part):
            ceilings.update({os.path.normpath(part), os.path.realpath(part)})

    def is_ceiling(directory: Path) -> bool:
        return bool(ceilings) and (str(directory) in ceilings or os.path.realpath(directory) in ceilings)

    yield start
    if is_ceiling(start):
        return
    for directory in start.parents:
        if is_ceiling(directory):
            return
        yield directory


def working_directory() -> Path:
    """The process's working directory; INVALID_ARGUMENTS, not a bare OS error, when it was
    removed or renamed under a shell still sitting in it."""
    try:
        return Path.cwd()
    except FileNotFoundError:
        raise InvalidArguments(
            "the current directory no longer exists (it was removed or renamed): cd into one that does"
        ) from None


def resolve_project(
    explicit: str | None, env: Mapping[str, str], cwd: Path | None = None, *, vault_root: Path | None = None
) -> ProjectIdentity:
    """``--project`` > ``MEMOSITE_PROJECT`` > inside ``vault_root``'s ``projects/<p>/`` > ``.memosite.toml``
    upward > git repository > directory.

    A command run in a project's folder of the vault (or deeper: ``projects/p1/traps/``) works in
    that project, as the original did; the vault's own git repository would otherwise name it.

    Every clone and every ``git worktree`` of one repository lands in the same project: the
    committed ``.memosite.toml`` says so outright; without it the id comes from the repository
    itself (:func:`git_project_name`), not from the name of the directory a clone happens to be in.
    The search for ``.memosite.toml`` ends at the repository's root: a file above it (one left in
    the home directory or ``/tmp`` by an ``init`` run there) is not the repository's and does not
    pull every repository below it into one project.
    """
    if explicit:
        return ProjectIdentity(validate_project_id(explicit), explicit, "explicit")
    if env.get("MEMOSITE_PROJECT"):
        value = env["MEMOSITE_PROJECT"]
        return ProjectIdentity(validate_project_id(value), value, "env")
    here = (cwd or working_directory()).absolute()
    inside = project_in_vault(here, vault_root) if vault_root is not None else None
    if inside is not None:
        return ProjectIdentity(validate_project_id(inside), inside, "vault")
    pinning = True  # the nearest .memosite.toml decides, even one that names no id (then git does)
    for directory in upward(here, env):
        project_file = directory / PROJECT_FILE
        if pinning and project_file.is_file():
            pinned = _pinned_identity(project_file)
            if pinned is not None:
                return pinned
            pinning = False
        if (directory / ".git").exists():
            name = git_project_name(directory)
            return ProjectIdentity(slugify_project(name), name, "git")
    return ProjectIdentity(slugify_project(here.name), here.name, "directory")


def project_in_vault(directory: Path, vault_root: Path) -> str | None:
    """The project whose folder of the vault holds ``directory`` (``<vault>/projects/<p>/…``), if any."""
    try:
        relative = directory.resolve().relative_to(vault_root.expanduser().resolve() / "projects")
    except (OSError, ValueError):
        return None
    first = relative.parts[0] if relative.parts else None
    return first if first and not first.startswith(".") else None


def _pinned_identity(project_file: Path) -> ProjectIdentity | None:
    """The project a ``.memosite.toml`` pins (None when it names no id)."""
    try:
        data = tomllib.loads(project_file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise InvalidArguments(f"cannot read {project_file}: {exc}") from exc
    project_id = str(data.get("id", "")).strip()
    if not project_id:
        return None
    return ProjectIdentity(validate_project_id(project_id), str(data.get("name") or project_id), "project-file")
