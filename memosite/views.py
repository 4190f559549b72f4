"""Compiled views: TRAPS.md, DECISIONS.md, INDEX.md, PROMPTS.md, SESSIONS.md, rendered with Jinja.

Each record's fragments are rendered once, when it is indexed, and kept in the index; a view is then
assembled from cached fragments, and a change rewrites only the views its kind appears in. state and
scratch records never appear in a view.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import jinja2

from memosite.codelayers import shown_layer
from memosite.errors import SafetyViolation
from memosite.index import Index, IndexEntry, fragments
from memosite.kinds import DURABLE_KINDS, KIND_FACTS, VIEW_FILES
from memosite.reviewstate import is_pending
from memosite.schema import format_iso, utc_now
from memosite.templates import VaultSandbox, environment_for, sandbox_refusals
from memosite.vault import Vault, atomic_write_bytes, warn

# (section name, project, kind, rows shown, rows in all) -> Markdown placed after a cut section
MoreNote = Callable[[str, str, str, int, int], str]
# kind -> record files a rendering leaves out (records pending review have no rows to leave out)
Hidden = Mapping[str, Collection[str]]

KIND_TITLES = {kind: facts.title for kind, facts in KIND_FACTS.items() if facts.durable}


DIGEST_CHARS = 320
_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n")
_FENCE = re.compile(r"^\s*(```|~~~)", re.MULTILINE)


def digest(body: str, limit: int = DIGEST_CHARS) -> tuple[str, bool]:
    """What a compiled view shows of a body, and whether anything was left out.

    A short body is shown whole. A longer one is summed up by its first paragraph that is not a
    heading (up to a code fence, cut at a word near ``limit``): a view with thousands of records
    stays readable and cheap to rewrite, and the record's own page holds the rest.
    """
    text = body.strip()
    if len(text) <= limit:
        return text, False
    paragraphs = [p.strip() for p in _PARAGRAPH_BREAK.split(text) if p.strip()]
    first = next((p for p in paragraphs if not p.startswith("#")), paragraphs[0])
    fence = _FENCE.search(first)
    if fence is not None:
        first = first[: fence.start()].rstrip() or "(starts with a code block)"
    if len(first) > limit:
        first = first[:limit].rsplit(" ", 1)[0].rstrip() + " …"
    return first, first != text


def env_for(vault: Vault) -> jinja2.Environment:
    """The vault's template environment (its ``templates/`` over memosite's own)."""
    return environment_for(vault, {"digest": digest})[0]


def link_for_path(path: str) -> str:
    """A record's file relative to its project directory (where the views live)."""
    return path.split("/", 2)[2] if path.startswith("projects/") else path


def link_for(entry: IndexEntry) -> str:
    return link_for_path(entry.path)


@dataclass
class _RowView:
    """What the row macros see: the entry plus its link."""

    entry: IndexEntry
    link: str

    def __getattr__(self, name: str) -> Any:
        return getattr(self.entry, name)

    @property
    def shown_layer(self) -> str:
        return shown_layer(self.entry.layer)


def render_fragments(entry: IndexEntry, env: jinja2.Environment) -> None:
    """Fill ``row_view`` / ``row_index`` / ``row_line`` of an entry from ``rows.md.j2``. A record
    waiting for review gets none: no view shows or counts it until a person approves it."""
    if entry.kind not in DURABLE_KINDS or is_pending(entry.frontmatter):
        entry.row_view = entry.row_index = entry.row_line = ""
        return
    try:
        with sandbox_refusals(env):  # macros run outside render(), which reports refusals itself
            macros: Any = env.get_template("rows.md.j2").module
            view = _RowView(entry, link_for(entry))
            macro_name = KIND_FACTS[entry.kind].row_macro
            entry.row_view = str(getattr(macros, macro_name)(view)) if macro_name else ""
            entry.row_index = str(macros.index_row(view))
            entry.row_line = str(macros.line(view))
    except (SafetyViolation, jinja2.TemplateError, AttributeError, TypeError) as exc:
        if not isinstance(env, VaultSandbox):
            raise  # memosite's own rows always render: anything else is a bug to see
        # A vault's rows.md.j2 (a teammate's, synced) that cannot render a row costs the views
        # their rows, not the index: reads, writes and sync go on.
        entry.row_view = entry.row_index = entry.row_line = ""
        if not env.rows_failed:
            env.rows_failed = True
            reason = exc.message if isinstance(exc, SafetyViolation) else f"{type(exc).__name__}: {exc}"
            warn(f"the views show no rows: the vault's templates/rows.md.j2 cannot render one ({reason})")


class _Pieces:
    """Large view sections kept as UTF-8 bytes while the page template renders around them.

    The template sees a short placeholder for each piece; :meth:`assemble` splices the bytes in,
    so megabytes of cached rows are never decoded and re-encoded on a write.
    """

    _MARK = re.compile("\x00piece:(\\d+)\x00")

    def __init__(self, limit: int | None = None, more: MoreNote | None = None, hidden: Hidden | None = None) -> None:
        self.blobs: list[list[bytes]] = []
        self.limit = limit
        self.more = more
        self.hidden = hidden or {}

    def section(
        self, index: Index, spec: fragments.Section, project: str, kind: str, now_iso: str
    ) -> tuple[int, list[bytes]]:
        """A view section: all of it, or (with ``limit``) its first rows and a note on the rest;
        the hidden records of the kind left out."""
        hidden = self.hidden.get(kind, ())
        if self.limit is None and not hidden:
            return fragments.section(index, spec, project, kind, now_iso)
        from memosite.index.site import section_head

        limit = -1 if self.limit is None else self.limit
        count, head = section_head(index, spec, project, kind, now_iso, limit, hidden)
        if self.limit is not None and count > self.limit and self.more is not None:
            head += self.more(spec.name, project, kind, self.limit, count).encode("utf-8")
        return count, [head]

    def hidden_paths(self, kind: str) -> Collection[str]:
        return self.hidden.get(kind, ())

    def put(self, blobs: list[bytes]) -> str:
        self.blobs.append(blobs)
        return f"\x00piece:{len(self.blobs) - 1}\x00"

    def assemble(self, text: str) -> list[bytes]:
        out: list[bytes] = []
        for n, part in enumerate(self._MARK.split(text)):
            if n % 2:
                out.extend(self.blobs[int(part)])
            else:
                out.append(part.encode("utf-8"))
        return out


def _traps_context(vault: Vault, project: str, now_iso: str, pieces: _Pieces) -> dict[str, Any]:
    index = vault.index()
    active_count, active = pieces.section(index, fragments.TRAPS_ACTIVE, project, "trap", now_iso)
    inactive_count, inactive = pieces.section(index, fragments.TRAPS_INACTIVE, project, "trap", now_iso)
    return {
        "active": pieces.put(active),
        "active_count": active_count,
        "inactive": pieces.put(inactive),
        "inactive_count": inactive_count,
    }


_DECISION_SECTIONS = {
    "accepted": fragments.DECISIONS_ACCEPTED,
    "proposed": fragments.DECISIONS_PROPOSED,
    "expired": fragments.DECISIONS_EXPIRED,
    "archived": fragments.DECISIONS_ARCHIVED,
}


def _decisions_context(vault: Vault, project: str, now_iso: str, pieces: _Pieces) -> dict[str, Any]:
    index = vault.index()
    context: dict[str, Any] = {}
    for name, spec in _DECISION_SECTIONS.items():
        count, text = pieces.section(index, spec, project, "decision", now_iso)
        context[name] = pieces.put(text)
        context[f"{name}_count"] = count
    hidden = pieces.hidden_paths("decision")
    superseded = []
    for row in fragments.superseded_decisions(index, project):
        if row.path in hidden:
            continue
        shown = row.successor_path is not None and row.successor_path not in hidden
        superseded.append(
            {
                "title": row.title,
                "link": link_for_path(row.path),
                "successor": row.successor,
                "successor_title": row.successor_title if shown else None,
                "successor_link": link_for_path(row.successor_path) if shown and row.successor_path else None,
            }
        )
    # Records waiting for review (all the site hides) have no fragments, so they are not counted.
    total = fragments.kind_counts(index, project).get("decision", 0)
    return {**context, "superseded": superseded, "total": total}


def _index_context(vault: Vault, project: str, now_iso: str, pieces: _Pieces) -> dict[str, Any]:
    index = vault.index()
    counts = fragments.kind_counts(index, project)
    sections = []
    for kind in DURABLE_KINDS:
        count, active, rows = counts.get(kind, 0), 0, ""
        if count:
            active = pieces.section(index, fragments.LIVE_COUNT, project, kind, now_iso)[0]
            count, blobs = pieces.section(index, fragments.INDEX_ROWS, project, kind, now_iso)
            rows = pieces.put(blobs)
        sections.append({"kind": kind, "title": KIND_TITLES[kind], "count": count, "active": active, "rows": rows})
    return {
        "sections": sections,
        "total": sum(s["count"] for s in sections),
        "total_active": sum(s["active"] for s in sections),
    }


def _inventory_context(kind: str) -> Any:
    def build(vault: Vault, project: str, now_iso: str, pieces: _Pieces) -> dict[str, Any]:
        count, rows = pieces.section(vault.index(), fragments.INVENTORY, project, kind, now_iso)
        return {"rows": pieces.put(rows), "count": count}

    return build


_CONTEXTS = {
    "TRAPS.md": _traps_context,
    "DECISIONS.md": _decisions_context,
    "INDEX.md": _index_context,
    "PROMPTS.md": _inventory_context("prompt"),
    "SESSIONS.md": _inventory_context("session"),
}


def render_view_bytes(
    vault: Vault,
    project: str,
    name: str,
    now: datetime | None = None,
    *,
    limit: int | None = None,
    more: MoreNote | None = None,
    hidden: Hidden | None = None,
) -> list[bytes]:
    """The UTF-8 Markdown of one compiled view, from the index, as pieces to write in order.

    With ``limit``, each section shows only its first ``limit`` rows (the site's view pages stay
    small at any size) followed by ``more(section, project, kind, shown, total)``. ``hidden``
    (kind -> record files) leaves those records out of every section and count: the site's view
    of records not published."""
    now = now or utc_now()
    now_iso = format_iso(now)
    pieces = _Pieces(limit, more, hidden)
    context = _CONTEXTS[name](vault, project, now_iso, pieces)
    template = env_for(vault).get_template(f"views/{name}.j2")
    return pieces.assemble(template.render(project=project, compiled=now_iso, **context))


def render_view(
    vault: Vault,
    project: str,
    name: str,
    now: datetime | None = None,
    *,
    limit: int | None = None,
    more: MoreNote | None = None,
    hidden: Hidden | None = None,
) -> str:
    """The Markdown of one compiled view, from the index (see :func:`render_view_bytes`)."""
    return b"".join(render_view_bytes(vault, project, name, now, limit=limit, more=more, hidden=hidden)).decode("utf-8")


def write_views(
    vault: Vault, project: str, names: Iterable[str] = VIEW_FILES, now: datetime | None = None
) -> list[Path]:
    """Rewrite the named views of a project (atomic; views are derived so no fsync is needed)."""
    written = []
    for name in names:
        path = vault.project_dir(project) / name
        atomic_write_bytes(path, render_view_bytes(vault, project, name, now), durable=False)
        written.append(path)
    return written
