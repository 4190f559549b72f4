"""Where memosite works: the product repository a command runs in, and setting a vault up.

The vault never lives inside the product repository being worked on (seed 000): its records would
be committed with the product's code, and a ``git clean`` of the product would take the memory with
it. :func:`check_vault_placement` is the guard every mutation runs. :func:`init_workspace` creates a
vault and a project and pins the project's id in ``.memosite.toml`` at the repository root, so every
clone and worktree of the repository lands in the same project.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tomli_w

from memosite.config import PROJECT_FILE, upward, validate_project_id
from memosite.errors import SafetyViolation, StorageError
from memosite.vault import Vault, atomic_write_text


def find_work_tree(start: Path, env: Mapping[str, str] | None = None) -> Path | None:
    """The root of the git work tree containing ``start`` (``.git`` a directory, or a file for a
    worktree or submodule), or None outside any repository (or below a ceiling, see
    :func:`memosite.config.upward`)."""
    try:
        here = start.absolute()
    except OSError:
        return None
    for directory in upward(here, os.environ if env is None else env):
        if (directory / ".git").exists():
            return directory
    return None


def _inside(path: Path, parent: Path) -> bool:
    try:
        path.resolve().relative_to(parent.resolve())
    except (OSError, ValueError):
        return False
    return True


def check_vault_placement(vault_root: Path, product_root: Path | None) -> None:
    """SAFETY_VIOLATION when the vault lies inside the product's work tree (a work tree inside
    the vault is the vault's own git repository, which is fine)."""
    if product_root is None or _inside(product_root, vault_root):
        return
    if _inside(vault_root, product_root):
        raise SafetyViolation(
            f"refusing to write: the vault {vault_root} lies inside the repository {product_root} being"
            " worked on; keep the vault outside it (--vault DIR or MEMOSITE_VAULT, default ~/.memosite)",
            details={"vault": str(vault_root), "repository": str(product_root)},
        )


@dataclass
class InitResult:
    vault: str
    project: str
    project_file: str | None
    created: list[str] = field(default_factory=list)
    next_steps: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "vault": self.vault,
            "project": self.project,
            "projectFile": self.project_file,
            "created": self.created,
            "nextSteps": self.next_steps,
        }


def init_workspace(vault_root: Path, project: str, name: str, *, pin_in: Path | None) -> InitResult:
    """Create the vault (when missing) and the project's directory, and pin the project in
    ``<pin_in>/.memosite.toml`` (when given and not pinned there yet)."""
    validate_project_id(project)
    created: list[str] = []
    if not (vault_root / "config.json").exists():
        created.append("vault")
    vault = Vault.open(vault_root)
    project_dir = vault.project_dir(project)
    if not project_dir.is_dir():
        try:
            project_dir.mkdir(parents=True)
        except OSError as exc:
            raise StorageError(f"cannot create project {project}: {exc.strerror or exc}") from exc
        created.append("project")
    pinned: str | None = None
    notes: list[str] = []
    if pin_in is not None:
        project_file = pin_in / PROJECT_FILE
        if not project_file.exists():
            atomic_write_text(project_file, tomli_w.dumps({"id": project, "name": name}))
            created.append(PROJECT_FILE)
            pinned = str(project_file)
        else:
            existing = _pinned_id(project_file)
            if existing == project:
                pinned = str(project_file)
            else:
                notes.append(f"{project_file} pins project {existing!r}, left as it is (edit it to move)")
    vault.close()
    steps = [
        'memosite upsert --kind trap --title "…" --body "…"   remember a pitfall',
        "memosite bootstrap                                  the brief an agent reads first",
        "memosite mcp --print-config claude                  connect an agent (also cursor, vscode, …)",
        "memosite serve                                      read the memory as a site",
    ]
    if PROJECT_FILE in created:
        steps.insert(0, f"git add {PROJECT_FILE}                             every clone then uses project {project}")
    return InitResult(str(vault_root), project, pinned, created, [*notes, *steps])


def _pinned_id(project_file: Path) -> str | None:
    import tomllib

    try:
        data = tomllib.loads(project_file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    value = data.get("id")
    return str(value) if value else None
