"""``memosite compile``: a project's views rewritten from its files, edits made outside memosite included."""

from __future__ import annotations

from pathlib import Path

from memosite.indexing import refresh_project
from memosite.kinds import KINDS, VIEW_FILES
from memosite.mutation import mutation
from memosite.vault import Vault


def compile_project(vault: Vault, project: str) -> list[Path]:
    """Pick up edits made outside memosite, then rewrite every view of the project."""
    with mutation(vault, f"compile {project}") as unit:
        refresh_project(vault, project)
        unit.touch(project, KINDS)
    return [vault.project_dir(project) / name for name in VIEW_FILES]
