"""``store.toml`` and the store's ``.gitignore``, as ``stormbuffer-core``'s ``lib.rs`` has them.

``store.toml`` holds exactly ``format_version`` (1), ``scope`` (``global`` or ``project``),
``visibility`` (``private`` or ``shared``) and, for a project store only, ``project_id`` (a
canonical lower-case UUID) and ``project_name`` (non-empty, at most 128 bytes, no control
characters). Unknown keys are refused; a global store must not carry project identity.

A project store gets a ``.gitignore`` when it is created: private stores (the default) ignore
everything but the ignore file itself, shared stores track only ``store.toml`` and the records.
An existing ignore file of a shared store must hold exactly the shared rules (comments and blank
lines aside), or generated files could be committed.

Stores memosite wrote before it followed this layout have ``format_version``, ``project_id`` and
``name``; :func:`upgrade_legacy` rewrites them into Stormbuffer's keys.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memosite.errors import InvalidArguments, InvalidRecord
from memosite.stormbuffer.model import Problem, raise_problems
from memosite.stormbuffer.tomlstyle import render_document
from memosite.stormbuffer.values import is_canonical_project_id, is_control, project_scope, rust_trim

STORE_FILE = "store.toml"
RECORDS_DIR = "records"
GITIGNORE_FILE = ".gitignore"
STORE_FORMAT_VERSION = 1
STORE_SCOPES = ("global", "project")
VISIBILITIES = ("private", "shared")
STORE_FIELDS = ("format_version", "scope", "visibility", "project_id", "project_name")
LEGACY_FIELDS = ("format_version", "project_id", "name")
MAX_PROJECT_NAME_BYTES = 128
PRIVATE_GITIGNORE = "*\n!.gitignore\n"
SHARED_GITIGNORE = (
    "# Track only configuration, ignore rules, and canonical Markdown records.\n"
    "*\n!.gitignore\n!store.toml\n!records/\n!records/**/\n!records/**/*.md\n"
)


@dataclass(frozen=True)
class StoreConfig:
    """What ``store.toml`` says."""

    scope: str
    visibility: str
    project_id: str | None = None
    project_name: str | None = None

    @property
    def is_project(self) -> bool:
        return self.scope == "project"

    @property
    def record_scope(self) -> str:
        """The scope every record of this store carries."""
        if self.project_id is None:
            return "global"
        return project_scope(self.project_id)

    def render(self) -> str:
        values: dict[str, Any] = {
            "format_version": STORE_FORMAT_VERSION,
            "scope": self.scope,
            "visibility": self.visibility,
        }
        if self.project_id is not None:
            values["project_id"] = self.project_id
        if self.project_name is not None:
            values["project_name"] = self.project_name
        return render_document(values, pretty=False)


@dataclass(frozen=True)
class StoreInfo:
    """What ``store.toml`` says, plus where the store lives."""

    path: Path
    config: StoreConfig
    created: bool = False
    upgraded: bool = False

    @property
    def project_id(self) -> str | None:
        return self.config.project_id

    @property
    def name(self) -> str | None:
        return self.config.project_name

    def to_json(self) -> dict[str, Any]:
        return {
            "path": str(self.path),
            "scope": self.config.scope,
            "visibility": self.config.visibility,
            "project_id": self.config.project_id,
            "project_name": self.config.project_name,
            "record_scope": self.config.record_scope,
            "created": self.created,
            "upgraded": self.upgraded,
        }


def project_name_problem(name: Any) -> str | None:
    if (
        not isinstance(name, str)
        or not rust_trim(name)
        or len(name.encode("utf-8")) > MAX_PROJECT_NAME_BYTES
        or any(is_control(char) for char in name)
    ):
        return (
            f"a project store needs a non-empty project_name of at most {MAX_PROJECT_NAME_BYTES} bytes"
            " without control characters"
        )
    return None


def is_legacy(data: dict[str, Any]) -> bool:
    """A ``store.toml`` written by memosite before it used Stormbuffer's keys."""
    return "name" in data and set(data) <= set(LEGACY_FIELDS)


def check_store_file(data: dict[str, Any], expected_scope: str | None = None) -> list[Problem]:
    """Every rule ``data`` breaks (``expected_scope``: the scope the store was opened as)."""
    if is_legacy(data):
        return [
            Problem(
                "name",
                "store.toml has memosite's old keys (name, no scope or visibility), which Stormbuffer refuses; "
                "run `memosite stormbuffer init` to upgrade it",
            )
        ]
    problems = [
        Problem(str(key), "unknown field (allowed: " + ", ".join(STORE_FIELDS) + ")")
        for key in data
        if key not in STORE_FIELDS
    ]
    for key in ("format_version", "scope", "visibility"):
        if key not in data:
            problems.append(Problem(key, "required field is missing"))
    for key in ("scope", "visibility", "project_id", "project_name"):
        if key in data and not isinstance(data[key], str):
            problems.append(Problem(key, "must be a string"))
    version = data.get("format_version")
    if "format_version" in data and (type(version) is not int or version != STORE_FORMAT_VERSION):
        problems.append(Problem("format_version", f"must be {STORE_FORMAT_VERSION}, got {version!r}"))
    scope = data.get("scope")
    if isinstance(scope, str):
        if scope not in STORE_SCOPES:
            problems.append(Problem("scope", f"{scope!r} is neither 'global' nor 'project'"))
        elif expected_scope == "project" and scope != expected_scope:
            hint = "the global store is opened with --global"
            problems.append(Problem("scope", f"{scope!r} in a project store ({hint})"))
        elif expected_scope is not None and scope != expected_scope:
            problems.append(Problem("scope", f"is {scope!r}, expected {expected_scope!r}"))
    visibility = data.get("visibility")
    if isinstance(visibility, str) and visibility not in VISIBILITIES:
        problems.append(Problem("visibility", f"must be 'private' or 'shared', got {visibility!r}"))
    if scope == "project":
        if not is_canonical_project_id(data.get("project_id")):
            problems.append(Problem("project_id", "a project store needs a canonical lower-case, non-nil UUID"))
        message = project_name_problem(data.get("project_name"))
        if message:
            problems.append(Problem("project_name", message))
    elif scope == "global":
        for key in ("project_id", "project_name"):
            if key in data:
                problems.append(Problem(key, "a global store must not carry project identity"))
    return problems


def read_store_config(path: Path, expected_scope: str | None = None) -> StoreConfig:
    """Read and validate ``path`` (a ``store.toml``); raises :class:`InvalidRecord`."""
    data = load_store_toml(path)
    raise_problems(check_store_file(data, expected_scope), InvalidRecord, str(path))
    return StoreConfig(
        scope=data["scope"],
        visibility=data["visibility"],
        project_id=data.get("project_id"),
        project_name=data.get("project_name"),
    )


def load_store_toml(path: Path) -> dict[str, Any]:
    try:
        text = path.read_bytes().decode("utf-8")
    except FileNotFoundError as exc:
        raise InvalidArguments(f"not an initialised Stormbuffer store: {path} does not exist") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidRecord(f"{path}: cannot read: {exc}", details={"field": "file"}) from exc
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InvalidRecord(f"{path}: store metadata TOML is invalid: {exc}", details={"field": "file"}) from exc


def upgrade_legacy(data: dict[str, Any]) -> StoreConfig:
    """Stormbuffer's keys for a store memosite wrote with ``name`` (identity kept)."""
    project_id = data.get("project_id")
    name = data.get("name")
    if not isinstance(project_id, str) or not is_canonical_project_id(project_id.lower()):
        raise InvalidRecord("cannot upgrade store.toml: its project_id is not a UUID", details={"field": "project_id"})
    if project_name_problem(name):
        raise InvalidRecord(
            "cannot upgrade store.toml: its name is not a valid project_name", details={"field": "name"}
        )
    return StoreConfig(scope="project", visibility="private", project_id=project_id.lower(), project_name=name)


def ignore_rules(text: str) -> list[str]:
    """The rules of an ignore file, read like Rust's ``lines()`` + ``trim()``."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    trimmed = (rust_trim(line.removesuffix("\r")) for line in lines)
    return [line for line in trimmed if line and not line.startswith("#")]


def gitignore_text(visibility: str) -> str:
    return SHARED_GITIGNORE if visibility == "shared" else PRIVATE_GITIGNORE


def gitignore_problem(store_dir: Path, visibility: str) -> str | None:
    """Why the ignore file of a shared store is unsafe, or None (private stores keep theirs)."""
    path = store_dir / GITIGNORE_FILE
    if visibility != "shared" or not path.is_file():
        return None
    current = ignore_rules(path.read_bytes().decode("utf-8", errors="replace"))
    if current != ignore_rules(SHARED_GITIGNORE):
        return "shared project ignore rules are incomplete: generated files could be committed"
    return None
