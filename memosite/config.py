"""Vault root and project resolution, and the vault's ``config.json`` with its defaults.

Configuration is read here and only when a composition root (a CLI command, the MCP server)
asks for it; nothing reads the environment on import.
"""

from __future__ import annotations

import copy
import json
import math
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memosite.errors import InvalidArguments

DEFAULT_CONFIG: dict[str, Any] = {
    "ttl": {"scratchDays": 7, "reviewDays": 14},
    "vaultGit": {"enabled": False, "atomic": True, "remote": None},
    "bootstrap": {"maxBytes": 8192},
    "sessions": {"keep": 50, "maxAgeDays": 30, "capEvents": 10000, "capBytes": 16 * 1024 * 1024},
}

PROJECT_FILE = ".memosite.toml"
_PROJECT_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


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
        remote = self._get("vaultGit", "remote")
        return str(remote) if remote else None

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


def default_vault_root(env: Mapping[str, str]) -> Path:
    home = env.get("HOME") or str(Path.home())
    return Path(home) / ".memosite"


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
            f"invalid project id {project!r}: use letters, digits, '.', '_' or '-' (no path separators, no '..')"
        )
    return project


def slugify_project(name: str) -> str:
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", name.strip()).strip("-.").lower()
    slug = re.sub(r"\.{2,}", ".", slug)
    return slug[:128] or "default"


@dataclass(frozen=True)
class ProjectIdentity:
    id: str
    name: str
    source: str  # "explicit", "env", "project-file", "git", "directory"


def find_project_file(start: Path) -> Path | None:
    for directory in (start, *start.parents):
        candidate = directory / PROJECT_FILE
        if candidate.is_file():
            return candidate
    return None


def resolve_project(explicit: str | None, env: Mapping[str, str], cwd: Path | None = None) -> ProjectIdentity:
    """``--project`` > ``MEMOSITE_PROJECT`` > ``.memosite.toml`` upward > git repo > directory."""
    if explicit:
        return ProjectIdentity(validate_project_id(explicit), explicit, "explicit")
    if env.get("MEMOSITE_PROJECT"):
        value = env["MEMOSITE_PROJECT"]
        return ProjectIdentity(validate_project_id(value), value, "env")
    here = (cwd or Path.cwd()).absolute()
    project_file = find_project_file(here)
    if project_file is not None:
        try:
            data = tomllib.loads(project_file.read_text(encoding="utf-8"))
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise InvalidArguments(f"cannot read {project_file}: {exc}") from exc
        project_id = str(data.get("id", "")).strip()
        if project_id:
            name = str(data.get("name") or project_id)
            return ProjectIdentity(validate_project_id(project_id), name, "project-file")
    for directory in (here, *here.parents):
        if (directory / ".git").exists():
            return ProjectIdentity(slugify_project(directory.name), directory.name, "git")
    return ProjectIdentity(slugify_project(here.name), here.name, "directory")
