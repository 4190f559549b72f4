"""Compiled views: TRAPS.md, DECISIONS.md, INDEX.md, PROMPTS.md, SESSIONS.md, rendered with Jinja.

Each record's fragments are rendered once, when it is indexed, and kept in the index; a view is then
assembled from cached fragments, and a change rewrites only the views its kind appears in. state and
scratch records never appear in a view.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import jinja2

from memosite.index import IndexEntry
from memosite.resources import data_path
from memosite.schema import format_iso, utc_now
from memosite.vault import VIEW_FILES, Vault, atomic_write_text

DURABLE_KINDS = ("trap", "decision", "spec", "plan", "log", "review", "prompt", "session")
KIND_TITLES = {
    "trap": "Traps", "decision": "Decisions", "spec": "Specs", "plan": "Plans", "log": "Logs",
    "review": "Reviews", "prompt": "Prompts", "session": "Sessions",
}
VIEWS_FOR_KIND: dict[str, tuple[str, ...]] = {
    "trap": ("TRAPS.md", "INDEX.md"),
    "decision": ("DECISIONS.md", "INDEX.md"),
    "prompt": ("PROMPTS.md", "INDEX.md"),
    "session": ("SESSIONS.md", "INDEX.md"),
    "spec": ("INDEX.md",),
    "plan": ("INDEX.md",),
    "log": ("INDEX.md",),
    "review": ("INDEX.md",),
    "state": (),
    "scratch": (),
}
_ROW_MACRO = {"trap": "trap", "decision": "decision", "prompt": "prompt", "session": "session"}


def _inline(value: Any) -> str:
    return " ".join(str(value or "").split())


def _cell(value: Any) -> str:
    return _inline(value).replace("|", "\\|")


def _day(value: Any) -> str:
    return str(value)[:10] if value else ""


@functools.lru_cache(maxsize=8)
def template_env(override_dir: Path | None = None) -> jinja2.Environment:
    """Jinja environment over our templates; a vault's own ``templates/`` overrides them."""
    loaders: list[jinja2.BaseLoader] = []
    if override_dir is not None and override_dir.is_dir():
        loaders.append(jinja2.FileSystemLoader(str(override_dir)))
    loaders.append(jinja2.FileSystemLoader(str(data_path("templates"))))
    env = jinja2.Environment(
        loader=jinja2.ChoiceLoader(loaders),
        autoescape=False,  # Markdown, not HTML: the site sanitises the rendered HTML instead
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        undefined=jinja2.Undefined,
    )
    env.filters.update(inline=_inline, cell=_cell, day=_day)
    return env


def env_for(vault: Vault) -> jinja2.Environment:
    return template_env(vault.root / "templates")


def link_for(entry: IndexEntry) -> str:
    """The record's file relative to its project directory (where the views live)."""
    return entry.path.split("/", 2)[2] if entry.path.startswith("projects/") else entry.path


@dataclass
class _RowView:
    """What the row macros see: the entry plus its link."""

    entry: IndexEntry
    link: str

    def __getattr__(self, name: str) -> Any:
        return getattr(self.entry, name)


def render_fragments(entry: IndexEntry, env: jinja2.Environment) -> None:
    """Fill ``row_view`` / ``row_index`` / ``row_line`` of an entry from ``rows.md.j2``."""
    if entry.kind not in DURABLE_KINDS:
        entry.row_view = entry.row_index = entry.row_line = ""
        return
    macros = env.get_template("rows.md.j2").module
    view = _RowView(entry, link_for(entry))
    macro_name = _ROW_MACRO.get(entry.kind)
    entry.row_view = str(getattr(macros, macro_name)(view)) if macro_name else ""
    entry.row_index = str(macros.index_row(view))
    entry.row_line = str(macros.line(view))


def views_for_kinds(kinds: Iterable[str]) -> tuple[str, ...]:
    names: dict[str, None] = {}
    for kind in kinds:
        names.update(dict.fromkeys(VIEWS_FOR_KIND.get(kind, ())))
    return tuple(name for name in VIEW_FILES if name in names)


def _is_live(status: str, expires_at: str | None, now_iso: str) -> bool:
    return status == "active" and (expires_at is None or expires_at > now_iso)


def _traps_context(vault: Vault, project: str, now_iso: str) -> dict[str, Any]:
    rows = vault.index().column_rows(
        ("row_view", "row_line", "status", "expires_at"),
        project,
        ("trap",),
        "(stale > helpful), severity_weight DESC, updated DESC",
    )
    active: list[str] = []
    inactive: list[str] = []
    for row in rows:
        if _is_live(row["status"], row["expires_at"], now_iso):
            active.append(row["row_view"])
        else:
            expired = row["status"] == "active"
            inactive.append(row["row_line"].rstrip("\n") + (" · expired\n" if expired else "\n"))
    return {"active": active, "inactive": inactive}


def _decisions_context(vault: Vault, project: str, now_iso: str) -> dict[str, Any]:
    rows = list(
        vault.index().column_rows(
            ("id", "title", "path", "status", "row_view", "row_line", "superseded_by", "expires_at"),
            project,
            ("decision",),
            "(stale > helpful), updated DESC",
        )
    )
    by_id = {row["id"]: row for row in rows}
    accepted, proposed, superseded, archived = [], [], [], []
    for row in rows:
        status = row["status"]
        if status == "superseded":
            successor = by_id.get(row["superseded_by"] or "")
            superseded.append(
                {
                    "title": row["title"],
                    "link": row["path"].split("/", 2)[2],
                    "successor": row["superseded_by"],
                    "successor_title": successor["title"] if successor else None,
                    "successor_link": successor["path"].split("/", 2)[2] if successor else None,
                }
            )
        elif status == "archived" or (row["expires_at"] and row["expires_at"] <= now_iso):
            archived.append(row["row_line"])
        elif status in ("active", "shipped", "completed"):
            accepted.append(row["row_view"])
        elif status == "paused":
            proposed.append(row["row_view"])
    return {
        "accepted": accepted,
        "proposed": proposed,
        "superseded": superseded,
        "archived": archived,
        "total": len(rows),
    }


def _index_context(vault: Vault, project: str, now_iso: str) -> dict[str, Any]:
    rows = vault.index().column_rows(
        ("kind", "row_index", "status", "expires_at"), project, DURABLE_KINDS, "kind, updated DESC"
    )
    sections = {kind: {"kind": kind, "title": KIND_TITLES[kind], "count": 0, "active": 0, "rows": []}
                for kind in DURABLE_KINDS}
    for row in rows:
        section = sections[row["kind"]]
        section["count"] += 1
        section["active"] += _is_live(row["status"], row["expires_at"], now_iso)
        section["rows"].append(row["row_index"])
    ordered = [sections[kind] for kind in DURABLE_KINDS]
    return {
        "sections": ordered,
        "total": sum(s["count"] for s in ordered),
        "total_active": sum(s["active"] for s in ordered),
    }


def _inventory_context(kind: str) -> Any:
    def build(vault: Vault, project: str, now_iso: str) -> dict[str, Any]:
        rows = vault.index().column_rows(("row_view",), project, (kind,), "updated DESC")
        return {"rows": [row["row_view"] for row in rows]}

    return build


_CONTEXTS = {
    "TRAPS.md": _traps_context,
    "DECISIONS.md": _decisions_context,
    "INDEX.md": _index_context,
    "PROMPTS.md": _inventory_context("prompt"),
    "SESSIONS.md": _inventory_context("session"),
}


def render_view(vault: Vault, project: str, name: str, now: datetime | None = None) -> str:
    """The Markdown of one compiled view, from the index."""
    now = now or utc_now()
    now_iso = format_iso(now)
    context = _CONTEXTS[name](vault, project, now_iso)
    template = env_for(vault).get_template(f"views/{name}.j2")
    return template.render(project=project, compiled=now_iso, **context)


def write_views(
    vault: Vault, project: str, names: Iterable[str] = VIEW_FILES, now: datetime | None = None
) -> list[Path]:
    """Rewrite the named views of a project (atomic; views are derived so no fsync is needed)."""
    written = []
    for name in names:
        path = vault.project_dir(project) / name
        atomic_write_text(path, render_view(vault, project, name, now), durable=False)
        written.append(path)
    return written
