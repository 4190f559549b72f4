"""Vault root and project resolution, and the vault's ``config.json`` with its defaults.

Configuration is read here and only when a composition root (a CLI command, the MCP server)
asks for it; nothing reads the environment on import.
"""

from __future__ import annotations

import copy
import json
import math
import os
import re
import tomllib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from memosite.errors import InvalidArguments
from memosite.text import suggest_ascii

PushMode = Literal["manual", "auto"]

DEFAULT_CONFIG: dict[str, Any] = {
    "ttl": {"scratchDays": 7, "reviewDays": 14},
    "vaultGit": {
        "enabled": False,
        "atomic": True,
        "remote": None,
        "branch": None,
        "push": "manual",
        "pushDelaySeconds": 10,
    },
    "bootstrap": {"maxBytes": 8192},
    "sessions": {"keep": 50, "maxAgeDays": 30, "capEvents": 10000, "capBytes": 16 * 1024 * 1024, "root": None},
    "review": {"required": [], "briefPending": True},
}

PROJECT_FILE = ".memosite.toml"
_PROJECT_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
# A branch name git accepts (a safe subset: no "..", no leading "-", no ref-syntax characters).
_BRANCH_RE = re.compile(r"^(?!-)(?!.*\.\.)(?!.*//)(?!.*@\{)[A-Za-z0-9._/-]{1,200}(?<![./])$")


def _deep_merge(base: dict[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    merged = copy.deepcopy(base)
    for key, value in over.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), dict):
            merged[key] = _deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


@dataclass(frozen=True)
class VaultConfig:
    """The settings of one vault; ``raw`` keeps every key of config.json, known or not."""

    raw: dict[str, Any] = field(default_factory=lambda: copy.deepcopy(DEFAULT_CONFIG))

    def _get(self, section: str, key: str) -> Any:
        return self.raw.get(section, {}).get(key, DEFAULT_CONFIG[section][key])

    @property
    def scratch_days(self) -> float:
        return float(self._get("ttl", "scratchDays"))

    @property
    def review_days(self) -> float:
        return float(self._get("ttl", "reviewDays"))

    @property
    def review_required(self) -> frozenset[str]:
        """Kinds whose records an agent writes start as pending review (``review.required``)."""
        return frozenset(self._get("review", "required"))

    @property
    def review_brief_pending(self) -> bool:
        """Whether the brief shows pending records (under their own heading) at all."""
        return bool(self._get("review", "briefPending"))

    def ttl_days(self, setting: str) -> float:
        """``ttl.<setting>`` in days (``scratchDays``, ``reviewDays``)."""
        return float(self._get("ttl", setting))

    @property
    def git_enabled(self) -> bool:
        return bool(self._get("vaultGit", "enabled"))

    @property
    def git_atomic(self) -> bool:
        return bool(self._get("vaultGit", "atomic"))

    @property
    def git_remote(self) -> str | None:
        """``vaultGit.remote``: the name of a remote of the vault's repository, or a URL or path
        any git can reach (None: the repository's ``origin``, when it has one)."""
        remote = self._get("vaultGit", "remote")
        return str(remote) if remote else None

    @property
    def git_branch(self) -> str | None:
        """``vaultGit.branch``: the branch of the remote the vault syncs with (None: the vault's
        own branch name, or the remote's only branch)."""
        branch = self._get("vaultGit", "branch")
        return str(branch) if branch else None

    @property
    def git_push(self) -> PushMode:
        """``vaultGit.push``: ``manual`` pushes at ``memosite sync`` only; ``auto`` also pushes in
        the background a short while after each write (see :mod:`memosite.sync.autopush`)."""
        return "auto" if self._get("vaultGit", "push") == "auto" else "manual"

    @property
    def git_push_delay_seconds(self) -> float:
        """How long an automatic push waits for more writes before it runs (debounce)."""
        return float(self._get("vaultGit", "pushDelaySeconds"))

    @property
    def bootstrap_max_bytes(self) -> int:
        return int(self._get("bootstrap", "maxBytes"))

    @property
    def sessions_keep(self) -> int:
        return int(self._get("sessions", "keep"))

    @property
    def sessions_max_age_days(self) -> float:
        return float(self._get("sessions", "maxAgeDays"))

    @property
    def sessions_cap_events(self) -> int:
        return int(self._get("sessions", "capEvents"))

    @property
    def sessions_cap_bytes(self) -> int:
        return int(self._get("sessions", "capBytes"))


def load_config(vault_root: Path) -> VaultConfig:
    """Read ``config.json``; missing keys take their defaults, unknown keys are kept."""
    path = vault_root / "config.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return VaultConfig()
    except (OSError, ValueError) as exc:
        raise InvalidArguments(f"cannot read {path}: {exc}") from exc
    if not isinstance(data, dict):
        raise InvalidArguments(f"{path} must hold a JSON object")
    config = VaultConfig(raw=_deep_merge(DEFAULT_CONFIG, data))
    _check_types(config, path)
    return config


_NUMERIC_SETTINGS = (
    ("ttl", "scratchDays"),
    ("ttl", "reviewDays"),
    ("bootstrap", "maxBytes"),
    ("sessions", "keep"),
    ("sessions", "maxAgeDays"),
    ("sessions", "capEvents"),
    ("sessions", "capBytes"),
    ("vaultGit", "pushDelaySeconds"),
)


def _check_types(config: VaultConfig, path: Path) -> None:
    """Bad settings fail here, with the key named, not deep inside a command."""
    for section in ("ttl", "vaultGit", "bootstrap", "sessions"):
        if not isinstance(config.raw.get(section), dict):
            raise InvalidArguments(f"{path}: {section} must be an object")
    for section, key in _NUMERIC_SETTINGS:
        holder = config.raw.get(section)
        value = holder.get(key) if isinstance(holder, dict) else None
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
            raise InvalidArguments(f"{path}: {section}.{key} must be a non-negative number, got {value!r}")
    git = config.raw.get("vaultGit")
    if not isinstance(git, dict) or not all(isinstance(git.get(k), bool) for k in ("enabled", "atomic")):
        raise InvalidArguments(f"{path}: vaultGit.enabled and vaultGit.atomic must be true or false")
    for key in ("remote", "branch"):
        value = git.get(key)
        if value is not None and (not isinstance(value, str) or not value.strip() or "\n" in value):
            raise InvalidArguments(f"{path}: vaultGit.{key} must be a non-empty string or null, got {value!r}")
    branch = git.get("branch")
    if isinstance(branch, str) and not _BRANCH_RE.match(branch):
        raise InvalidArguments(f"{path}: vaultGit.branch {branch!r} is not a usable branch name")
    if git.get("push") not in ("manual", "auto"):
        raise InvalidArguments(f'{path}: vaultGit.push must be "manual" or "auto", got {git.get("push")!r}')
    sessions_root = config.raw["sessions"].get("root")
    if sessions_root is not None and (not isinstance(sessions_root, str) or not sessions_root.strip()):
        raise InvalidArguments(f"{path}: sessions.root must be a directory path or null, got {sessions_root!r}")
    _check_review(config, path)


def _check_review(config: VaultConfig, path: Path) -> None:
    from memosite.kinds import KINDS

    review = config.raw.get("review")
    if not isinstance(review, dict):
        raise InvalidArguments(f"{path}: review must be an object")
    required = review.get("required")
    if not isinstance(required, list) or any(kind not in KINDS for kind in required):
        raise InvalidArguments(
            f"{path}: review.required must be a list of kinds ({', '.join(KINDS)}), got {required!r}"
        )
    if not isinstance(review.get("briefPending"), bool):
        raise InvalidArguments(f"{path}: review.briefPending must be true or false")


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


# --- the identity of a git repository, the same in every clone and worktree ------------------


def git_project_name(work_tree: Path) -> str:
    """The name of the repository whose work tree is ``work_tree`` (it holds ``.git``).

    The last path part of the ``origin`` remote's URL (``git@host:acme/widget.git`` → ``widget``)
    when there is one: every clone of the repository has it, whatever its directory is called.
    Without an ``origin``, the name of the main work tree, which every ``git worktree`` of a clone
    shares (a linked worktree's ``.git`` file leads to the main repository's git directory). Read
    from git's own files, without running git: this runs on every command.
    """
    common = _git_common_dir(work_tree)
    if common is not None:
        url = _origin_url(common / "config")
        name = _repository_name_from_url(url) if url else None
        if name:
            return name
        if common.name == ".git":
            return common.parent.name or work_tree.name
        stem = common.name[: -len(".git")] if common.name.endswith(".git") else common.name
        return stem or work_tree.name
    return work_tree.name


def _git_common_dir(work_tree: Path) -> Path | None:
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


def _origin_url(config_path: Path) -> str | None:
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
