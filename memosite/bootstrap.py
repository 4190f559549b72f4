"""The session brief: what an agent should know before it starts work on a project.

Three sections, rendered as Markdown and returned with their parts:

* **Current work** — the spec, plan and state records for ``slug`` (``<kind dir>/<slug>.md`` and
  the spec/plan/state records named ``<slug>-…``), fetched like ``get`` does: an expired one is
  annotated ``expired``, never left out.
* **Traps** — active, unexpired traps of severity medium and up; those whose ``pathPatterns``
  cover ``path`` come first, then those containing a word of ``query``, then by severity,
  occurrences and hits; traps flagged stale come last. At most ten.
* **Decisions** — accepted (active, shipped or completed) and unexpired; matches first, then the
  most recently updated.

The brief fits ``max_bytes`` of UTF-8 (``bootstrap.maxBytes`` in ``config.json``, 8192 by default).
When it does not, the lowest-ranked records go first — decisions, then current work, then traps,
each section from its end — and ``truncated`` is set; the first record that does not fit whole is
cut short when a useful part of it still fits. For an agent session (``session_id`` given) every
record in the brief counts one hit, once per session, as ``get`` does; a brief read without a
session counts none.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from memosite.errors import InvalidArguments, RecordNotFound
from memosite.expiration import is_expired_iso
from memosite.index import queries
from memosite.kinds import CONTEXT_KINDS
from memosite.schema import format_iso, utc_now
from memosite.search import keyword_ranks, normalize_path, path_matches
from memosite.vault import Vault

MAX_TRAPS = 10
MIN_MAX_BYTES = 512
TRAP_SEVERITIES = ("medium", "high", "critical")
ACCEPTED_STATUSES = ("active", "shipped", "completed")
_MIN_TRIMMED_BODY = 160  # below this a cut-short record says too little to be worth its heading
_SECTION_TITLES = {"context": "Current work", "traps": "Traps", "decisions": "Decisions"}


@dataclass
class BriefItem:
    """One record in the brief."""

    section: str
    id: str
    kind: str
    title: str
    status: str
    path: str
    body: str
    severity: str | None = None
    layer: str | None = None
    occurrences: int = 0
    hits: int = 0
    updated: str | None = None
    expired: bool = False
    flagged_stale: bool = False
    path_patterns: list[str] = field(default_factory=list)
    matched: list[str] = field(default_factory=list)
    trimmed: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind,
            "title": self.title,
            "status": self.status,
            "path": self.path,
            "severity": self.severity,
            "layer": self.layer,
            "occurrences": self.occurrences,
            "hits": self.hits,
            "updated": self.updated,
            "expired": self.expired,
            "flaggedStale": self.flagged_stale,
            "matched": self.matched,
            "trimmed": self.trimmed,
        }

    def heading(self) -> str:
        if self.section == "traps":
            return f"### [{(self.severity or 'unrated').upper()}] {self.title}"
        prefix = f"{self.kind.capitalize()}: " if self.section == "context" else ""
        return f"### {prefix}{self.title}{' (expired)' if self.expired else ''}"

    def meta(self) -> str:
        parts = [f"`{self.id}`", self.status]
        if self.section == "traps":
            parts += [
                f"layer {self.layer or 'other'}",
                f"occurrences {self.occurrences or 1}",
                f"hits {self.hits}",
            ]
            if self.path_patterns:
                parts.append("paths " + ", ".join(f"`{p}`" for p in self.path_patterns))
        elif self.updated:
            parts.append(f"updated {self.updated[:10]}")
        if self.flagged_stale:
            parts.append("**flagged stale**")
        if self.matched:
            parts.append("matched " + " and ".join(self.matched))
        return " · ".join(parts)

    def render(self, body_budget: int | None = None) -> str:
        """The record's Markdown; with ``body_budget`` the body is cut to that many bytes."""
        body = self.body.strip()
        if body_budget is not None:
            body = _cut(body, body_budget) if body_budget > 0 else ""
        return f"{self.heading()}\n\n{self.meta()}\n\n{body}\n\n"


@dataclass
class BootstrapResult:
    project: str
    query: str | None
    slug: str | None
    path: str | None
    max_bytes: int
    markdown: str
    context: list[BriefItem]
    traps: list[BriefItem]
    decisions: list[BriefItem]
    omitted: list[str]
    truncated: bool
    hits_recorded: list[str] = field(default_factory=list)

    @property
    def bytes(self) -> int:
        return len(self.markdown.encode("utf-8"))

    def to_json(self) -> dict[str, Any]:
        return {
            "project": self.project,
            "query": self.query,
            "slug": self.slug,
            "path": self.path,
            "sections": {
                "context": [item.to_json() for item in self.context],
                "traps": [item.to_json() for item in self.traps],
                "decisions": [item.to_json() for item in self.decisions],
            },
            "omitted": self.omitted,
            "truncated": self.truncated,
            "bytes": self.bytes,
            "maxBytes": self.max_bytes,
            "hitsRecorded": self.hits_recorded,
            "markdown": self.markdown,
        }


def _size(text: str) -> int:
    return len(text.encode("utf-8"))


def _cut(text: str, budget: int) -> str:
    """``text`` cut to at most ``budget`` UTF-8 bytes, never inside a character, marked ``…``."""
    if _size(text) <= budget:
        return text
    room = max(budget - _size(" …"), 0)
    return text.encode("utf-8")[:room].decode("utf-8", errors="ignore").rstrip() + " …"


# --- gathering -------------------------------------------------------------------------------


def _item(section: str, row: queries.RecordRow, now_iso: str) -> BriefItem:
    return BriefItem(
        section=section,
        id=row.id,
        kind=row.kind,
        title=row.title,
        status=row.status,
        path=row.path,
        body=row.body,
        severity=row.severity,
        layer=row.layer,
        occurrences=row.occurrences or 1,
        hits=row.hits,
        updated=row.updated,
        expired=is_expired_iso(row.expires_at, now_iso),
        flagged_stale=row.flagged_stale,
        path_patterns=row.path_patterns,
    )


def _mark_matches(items: list[BriefItem], path: str | None, keywords: dict[str, float]) -> None:
    for item in items:
        if path is not None and path_matches(item.path_patterns, path):
            item.matched.append("path")
        if item.path in keywords:
            item.matched.append("keyword")


def _ranked_traps(vault: Vault, project: str, path: str | None, query: str | None, now_iso: str) -> list[BriefItem]:
    rows = queries.brief_traps(vault.index(), project, TRAP_SEVERITIES, now_iso)
    weights = {row.path: row.severity_weight for row in rows}
    items = [_item("traps", row, now_iso) for row in rows]
    keywords = keyword_ranks(vault, project, ("trap",), query) if query else {}
    _mark_matches(items, path, keywords)
    items.sort(key=lambda i: i.updated or "", reverse=True)
    items.sort(
        key=lambda i: (
            "path" not in i.matched,
            "keyword" not in i.matched,
            i.flagged_stale,
            -weights[i.path],
            -i.occurrences,
            -i.hits,
            -keywords.get(i.path, 0.0),
        )
    )
    return items[:MAX_TRAPS]


def _ranked_decisions(vault: Vault, project: str, path: str | None, query: str | None, now_iso: str) -> list[BriefItem]:
    rows = queries.brief_decisions(vault.index(), project, ACCEPTED_STATUSES, now_iso)
    items = [_item("decisions", row, now_iso) for row in rows]
    keywords = keyword_ranks(vault, project, ("decision",), query) if query else {}
    _mark_matches(items, path, keywords)
    items.sort(key=lambda i: (not i.matched, i.flagged_stale))
    return items


def _context(vault: Vault, project: str, slug: str, now: datetime) -> list[BriefItem]:
    """The slug's spec/plan/state via ``get_record`` (expired ones annotated), then related ones."""
    from memosite.lookup import get_record

    now_iso = format_iso(now)
    items: list[BriefItem] = []
    seen: set[str] = set()
    exact: list[str] = []
    for kind in ("spec", "plan"):
        try:
            found = get_record(vault, project, kind=kind, slug=slug, now=now)
        except RecordNotFound:
            continue
        if found.path not in seen and found.kind in CONTEXT_KINDS:
            seen.add(found.path)
            exact.append(found.path)
    related = queries.related_context_paths(vault.index(), project, CONTEXT_KINDS, slug)
    paths = exact + [relative for relative in related if relative not in seen]
    for relative in paths:
        row = queries.record_row_by_path(vault.index(), relative)
        if row is not None:
            items.append(_item("context", row, now_iso))
    return items


# --- budget ----------------------------------------------------------------------------------


def _header(project: str, query: str | None, slug: str | None, path: str | None, now_iso: str) -> str:
    lines = [f"# Session brief: {project}", "", f"Compiled {now_iso}"]
    focus = [
        f"slug `{slug}`" if slug else "",
        f"path `{path}`" if path else "",
        f"query “{' '.join(query.split())}”" if query else "",
    ]
    if any(focus):
        lines[-1] += " for " + ", ".join(part for part in focus if part)
    return "\n".join(lines) + ".\n\n"


def _assemble(header: str, chosen: list[tuple[BriefItem, str]], footer: str) -> str:
    parts = [header]
    for section in ("context", "traps", "decisions"):
        texts = [text for item, text in chosen if item.section == section]
        if texts:
            parts.append(f"## {_SECTION_TITLES[section]}\n\n" + "".join(texts))
    if len(parts) == 1:
        parts.append("No active traps, accepted decisions or current work recorded yet.\n\n")
    parts.append(footer)
    return "".join(parts).rstrip("\n") + "\n"


def _footer(omitted: int, max_bytes: int) -> str:
    if not omitted:
        return ""
    noun = "record" if omitted == 1 else "records"
    return f"_{omitted} lower-ranked {noun} left out to stay within {max_bytes} bytes; `memosite search` finds them._\n"


def _fit(header: str, ranked: list[BriefItem], max_bytes: int) -> tuple[list[tuple[BriefItem, str]], str]:
    """Greedy in rank order; stop at the first record that fits neither whole nor cut short."""
    whole = [(item, item.render()) for item in ranked]
    markdown = _assemble(header, whole, "")
    if _size(markdown) <= max_bytes:
        return whole, markdown
    # Sizes add up: header + one heading per section used + each record's text + the footer.
    used = _size(header) + _size(_footer(len(ranked), max_bytes))
    sections: set[str] = set()
    chosen: list[tuple[BriefItem, str]] = []
    for item, text in whole:
        heading = 0 if item.section in sections else _size(f"## {_SECTION_TITLES[item.section]}\n\n")
        if used + heading + _size(text) <= max_bytes:
            chosen.append((item, text))
            used += heading + _size(text)
            sections.add(item.section)
            continue
        room = max_bytes - used - heading - _size(item.render(0))
        if room >= _MIN_TRIMMED_BODY:
            item.trimmed = True
            chosen.append((item, item.render(room)))
        break
    markdown = _assemble(header, chosen, _footer(len(ranked) - len(chosen), max_bytes))
    while _size(markdown) > max_bytes and chosen:  # a guard: the sum above is an upper bound
        chosen.pop()
        markdown = _assemble(header, chosen, _footer(len(ranked) - len(chosen), max_bytes))
    return chosen, markdown


# --- entry point -----------------------------------------------------------------------------


def build_bootstrap(
    vault: Vault,
    project: str,
    *,
    query: str | None = None,
    slug: str | None = None,
    path: str | None = None,
    max_bytes: int | None = None,
    session_id: str | None = None,
    now: datetime | None = None,
) -> BootstrapResult:
    """The session brief of ``project`` (see the module docstring for what it holds and drops)."""
    from memosite.indexing import ensure_index
    from memosite.salience import record_hits
    from memosite.schema import validate_slug

    now = now or utc_now()
    now_iso = format_iso(now)
    budget = vault.config.bootstrap_max_bytes if max_bytes is None else max_bytes
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < MIN_MAX_BYTES:
        raise InvalidArguments(f"invalid max bytes {budget!r}: expected an integer of at least {MIN_MAX_BYTES}")
    query = query.strip() if isinstance(query, str) and query.strip() else None
    slug = validate_slug(slug.strip()) if isinstance(slug, str) and slug.strip() else None
    path = normalize_path(path) if path is not None else None
    ensure_index(vault)

    context = _context(vault, project, slug, now) if slug else []
    traps = _ranked_traps(vault, project, path, query, now_iso)
    decisions = _ranked_decisions(vault, project, path, query, now_iso)
    # Drop order is the reverse of this: decisions go first, traps last.
    ranked = [*traps, *context, *decisions]
    chosen, markdown = _fit(_header(project, query, slug, path, now_iso), ranked, budget)
    included = [item for item, _ in chosen]
    kept = {id(item) for item in included}
    omitted = [item.id for item in ranked if id(item) not in kept]
    recorded = (
        record_hits(vault, project, [item.id for item in included], session_id=session_id, now=now)
        if session_id
        else []
    )
    return BootstrapResult(
        project=project,
        query=query,
        slug=slug,
        path=path,
        max_bytes=budget,
        markdown=markdown,
        context=[i for i in included if i.section == "context"],
        traps=[i for i in included if i.section == "traps"],
        decisions=[i for i in included if i.section == "decisions"],
        omitted=omitted,
        truncated=bool(omitted) or any(item.trimmed for item in included),
        hits_recorded=recorded,
    )
