"""``memosite compile``: a project's views rewritten from its files, edits made outside memosite included."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import jinja2

from memosite.errors import BuildError
from memosite.kinds import VIEW_FILES
from memosite.mutation import mutation
from memosite.refresh import describe_view_error, refresh_project, require_project
from memosite.vault import Vault
from memosite.views import write_views


def compile_project(vault: Vault, project: str) -> list[Path]:
    """Pick up edits made outside memosite, then rewrite every view of the project. Rewriting the
    views is what was asked: a view that cannot be compiled (a vault template the sandbox stops)
    is this call's error (BUILD_FAILED, or the sandbox's SAFETY_VIOLATION), not a warning after
    which it would say it compiled them."""
    require_project(vault, project)
    with mutation(vault, f"compile {project}"):
        refresh_project(vault, project)
        try:
            write_views(vault, project)  # rewrites only what changed
        except (sqlite3.Error, jinja2.TemplateError) as exc:
            raise BuildError(f"cannot compile the views of {project}: {describe_view_error(exc)}") from exc
    return [vault.project_dir(project) / name for name in VIEW_FILES]
