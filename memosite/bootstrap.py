"""The session brief: what an agent should know before it starts work on a project.

Three sections, rendered as Markdown and returned with their parts:

* **Current work** — the spec, plan and state records for ``slug`` (``<kind dir>/<slug>.md`` and
  the spec/plan/state records named ``<slug>-…``), fetched like ``get`` does: an expired one is
  annotated ``expired``, never left out.
* **Traps** — active, unexpired traps (unrated and low ones after the rest); those whose ``pathPatterns``
  cover ``path`` come first, then those holding the query's *rare* words (IDF-weighted, see
  :mod:`memosite.brief_focus`: one common word is not enough), best bm25 first, then by severity,
  occurrences and hits; traps flagged stale come after those they tie with. At most ten. ``match``
  follows search's rule over the brief's traps and decisions: ``all`` when one of them holds every
  term, ``any`` when they hold only some.
* **Decisions** — accepted (active, shipped or completed) and unexpired; path matches first, then
  those the task is about (its rare words, and its meaning when hybrid search is on, fused), then
  the most recently updated.
* **Pending review** — traps and decisions an agent wrote that wait for a person (``review.required``
  in ``config.json``), marked unreviewed, newest first; left out with ``review.briefPending: false``.
  They appear nowhere else in the brief.

A record whose cited code ``memosite verify`` found drifted or missing says so; ``fresh_only``
leaves such records out.

Ranking and the cap happen in SQL: a brief reads the few records it can show, not every trap.

The brief fits ``max_bytes`` of UTF-8 (``bootstrap.maxBytes`` in ``config.json``, 8192 by default;
``max_tokens`` × 4 when a token budget is given — the token count is an estimate, ``bytes / 4``).
Each section first fills its share of the room (:data:`SECTION_SHARES`), then what a section left
unused goes to the records not yet taken, traps first (:func:`_fit`): a brief whose traps could fill
it still has room for the decision the task is about. The first record that does not fit whole is cut
short when a useful part of it still fits. Each record says in a few words why it is there (``why``:
``covers src/x.py``, ``task words autoscaler``, ``critical severity``, ``recent decision (…)``).
An agent must never believe it saw everything when it did not: ``truncated`` is
true whenever an eligible record was left out (by the budget or by the cap on traps) or cut short,
``omitted`` says how many of each section and why (``budget``, ``cap``), and the Markdown ends with
one line saying so (``+ 20 more traps: memosite search --kind trap``).

For an agent session (``session_id`` given) every record in the brief counts one hit, once per
session, as ``get`` does; a brief read without a session counts none.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from memosite.brief_focus import Focused, TaskWords, focus_section
from memosite.codelayers import shown_layer
from memosite.errors import InvalidArguments, RecordNotFound
from memosite.expiration import is_expired_iso
from memosite.index import fts, queries, verdicts
from memosite.kinds import CONTEXT_KINDS
from memosite.query import parse_query
from memosite.recurrence import trap_occurrences
from memosite.schema import format_iso, utc_now
from memosite.search import MatchMode, match_of, normalize_path
from memosite.statuses import ACCEPTED_STATUSES
from memosite.vault import Vault

MAX_TRAPS = 10
MIN_MAX_BYTES = 512
BYTES_PER_TOKEN = 4  # the estimate the brief's token figures use
MIN_MAX_TOKENS = MIN_MAX_BYTES // BYTES_PER_TOKEN
MAX_PENDING = 5
# Every trap may be in the brief: agents often leave severity out, and a brief saying "no traps"
# while unrated ones exist would mislead. Unrated (0) and low ones rank after the others.
TRAP_WEIGHTS = (0, 1, 2, 3, 4)
DECISION_PAGE = 16  # decisions are read a page at a time, only as far as the budget goes
OMITTED_IDS = 20  # ids listed per omission; the count is always exact
_MIN_TRIMMED_BODY = 160  # below this a cut-short record says too little to be worth its heading
_SECTION_TITLES = {
    "context": "Current work",
    "traps": "Traps",
    "decisions": "Decisions",
    "pending": "Pending review (unreviewed: not yet accepted by a person)",
}
_SECTION_NOUNS = {"traps": ("trap", "traps"), "context": ("current-work record", "current-work records")}
_SECTION_NOUNS["decisions"] = ("decision", "decisions")
_SECTION_NOUNS["pending"] = ("pending record", "pending records")
_SECTION_KINDS = {"traps": ("trap",), "context": CONTEXT_KINDS, "decisions": ("decision",), "pending": ()}
_SECTION_ORDER = ("context", "traps", "decisions", "pending")
Section = Literal["context", "traps", "decisions", "pending"]
OmissionReason = Literal["budget", "cap", "freshness"]


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
    matched_terms: int = 0
    trimmed: bool = False
    freshness: str | None = None  # verify's verdict on its cited code: fresh, drifted or missing
    why: str = ""  # in a few words, why the brief holds it (bootstrap --explain prints it)

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
            "matchedTerms": self.matched_terms,
            "trimmed": self.trimmed,
            "freshness": self.freshness,
            "pending": self.section == "pending",
            "why": self.why,
        }

    def heading(self) -> str:
        if self.section == "traps" or (self.section == "pending" and self.kind == "trap"):
            return f"### [{(self.severity or 'unrated').upper()}] {self.title}"
        prefix = f"{self.kind.capitalize()}: " if self.section == "context" else ""
        return f"### {prefix}{self.title}{' (expired)' if self.expired else ''}"

    def meta(self) -> str:
        parts = [f"`{self.id}`", self.status]
        if self.section == "traps":
            parts += [
                f"layer {shown_layer(self.layer)}",
                f"occurrences {trap_occurrences(self.kind, self.occurrences)}",
                f"hits {self.hits}",
            ]
            if self.path_patterns:
                parts.append("paths " + ", ".join(f"`{p}`" for p in self.path_patterns))
        elif self.updated:
            parts.append(f"updated {self.updated[:10]}")
        if self.section == "pending":
            parts.insert(0, f"**unreviewed {self.kind}**")
        if self.freshness in ("drifted", "missing"):
            parts.append(f"**cited code {self.freshness}** (memosite verify)")
        if self.flagged_stale:
            parts.append("**flagged stale**")
        if self.matched:
            parts.append("matched " + " and ".join(self.matched))
        return " · ".join(parts)

    def render(self, body_budget: int | None = None) -> str:
        """The record's Markdown; with ``body_budget`` the body is cut to that many bytes and a
        line says where the rest is."""
        body = self.body.strip()
        if body_budget is None:
            return f"{self.heading()}\n\n{self.meta()}\n\n{body}\n\n"
        body = _cut(body, body_budget) if body_budget > 0 else ""
        note = f"_Cut short: `memosite get --id {self.id}` has all of it._"
        return f"{self.heading()}\n\n{self.meta()}\n\n{body}\n\n{note}\n\n"


@dataclass
class Omission:
    """Records of one section the brief left out, and why: the byte ``budget``, the ``cap`` on
    traps or pending records, or ``freshness``. ``count`` is exact; ``ids`` lists them in rank
    order, at most :data:`OMITTED_IDS` of them; ``ids_truncated`` says when it lists fewer than
    ``count`` (a freshness omission lists none)."""

    section: Section
    reason: OmissionReason
    count: int
    ids: list[str] = field(default_factory=list)

    @property
    def ids_truncated(self) -> bool:
        return len(self.ids) < self.count

    def to_json(self) -> dict[str, Any]:
        return {
            "section": self.section,
            "reason": self.reason,
            "count": self.count,
            "ids": self.ids,
            "idsTruncated": self.ids_truncated,
        }


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
    omitted: list[Omission]
    truncated: bool
    match: Literal["all", "any"] | None = None
    max_tokens: int | None = None
    hits_recorded: list[str] = field(default_factory=list)
    pending: list[BriefItem] = field(default_factory=list)

    @property
    def bytes(self) -> int:
        return len(self.markdown.encode("utf-8"))

    @property
    def estimated_tokens(self) -> int:
        """An estimate: UTF-8 bytes / 4, rounded up."""
        return -(-self.bytes // BYTES_PER_TOKEN)

    def to_json(self) -> dict[str, Any]:
        return {
            "project": self.project,
            "query": self.query,
            "slug": self.slug,
            "path": self.path,
            "match": self.match,
            "sections": {
                "context": [item.to_json() for item in self.context],
                "traps": [item.to_json() for item in self.traps],
                "decisions": [item.to_json() for item in self.decisions],
                "pending": [item.to_json() for item in self.pending],
            },
            "omitted": [omission.to_json() for omission in self.omitted],
            "truncated": self.truncated,
            "bytes": self.bytes,
            "estimatedTokens": self.estimated_tokens,
            "maxBytes": self.max_bytes,
            "maxTokens": self.max_tokens,
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


def _item(
    section: str,
    row: queries.RecordRow,
    now_iso: str,
    candidate: queries.BriefCandidate | None = None,
    focused: Focused | None = None,
) -> BriefItem:
    item = BriefItem(
        section=section,
        id=row.id,
        kind=row.kind,
        title=row.title,
        status=row.status,
        path=row.path,
        body=row.body,
        severity=row.severity,
        layer=row.layer,
        occurrences=row.occurrences,
        hits=row.hits,
        updated=row.updated,
        expired=is_expired_iso(row.expires_at, now_iso),
        flagged_stale=row.flagged_stale,
        path_patterns=row.path_patterns,
    )
    if candidate is not None:
        if candidate.on_path:
            item.matched.append("path")
        if candidate.matched:
            item.matched.append("keyword")
        item.matched_terms = candidate.matched
    if focused is not None:
        item.why = focused.why
    else:
        item.why = _own_reason(item)
    return item


def _own_reason(item: BriefItem) -> str:
    """Why a record the task's path and words did not point at is in the brief: its section's order."""
    if item.section == "traps":
        seen = f", seen {item.occurrences}×" if item.occurrences > 1 else ""
        return f"{item.severity or 'unrated'} severity{seen}"
    if item.section == "decisions":
        return f"recent decision (updated {item.updated[:10]})" if item.updated else "accepted decision"
    if item.section == "pending":
        return "waiting for a person's review"
    return "current work"


@dataclass
class _Section:
    """One ranked section read from the index: its eligible count and a reader of its records."""

    name: queries.BriefSection
    values: tuple[Any, ...]
    total: int = 0
    read: int = 0
    items: list[BriefItem] = field(default_factory=list)  # every record read so far, in rank order
    # The ids of the records after the last page read (up to OMITTED_IDS): what the brief names
    # as left out when it stops reading there, without asking the index again.
    beyond: list[str] | None = None


class _Gatherer:
    """Reads the ranked records of the trap and decision sections for one brief."""

    def __init__(
        self, vault: Vault, project: str, now_iso: str, query: str | None, path: str | None, *, fresh_only: bool
    ) -> None:
        self.index = vault.index()
        self.project = project
        self.now_iso = now_iso
        self.fresh_only = fresh_only
        self.path = path
        self.query = query
        self.terms: fts.Terms | None = None
        parsed = parse_query(query) if query else None
        if parsed is not None and parsed.raw is not None and not self._raw_matches(parsed.raw):
            # As search does: FTS5 syntax SQLite rejects, or that finds nothing, is read as words.
            parsed = parse_query(parsed.text, plain=True)
        if parsed is not None and not parsed.empty:
            self.terms = fts.Terms(raw=parsed.raw) if parsed.raw is not None else parsed.any_terms()
        from memosite.refresh import fill_missing_vectors, semantic_embedder

        # The task's words are weighed, and meaning used, for a query of words (FTS5 syntax is
        # matched as written, as search does).
        self.parsed = parsed if parsed is not None and not parsed.empty and parsed.raw is None else None
        self.words = TaskWords.weigh(self.index, project, self.parsed) if self.parsed is not None else None
        self.embedder = semantic_embedder(vault, self.parsed.text) if self.parsed is not None else None
        if self.embedder is not None:
            fill_missing_vectors(vault, self.embedder)
        self.focus: dict[str, dict[int, Focused]] = {}

    def match(self) -> MatchMode | None:
        """The query's ``match`` over the brief's traps and decisions, by search's rule: ``all``
        when one of them holds every term, ``any`` when they hold only some, ``None`` for none."""
        if self.terms is None or self.query is None:
            return None
        filters = fts.SearchFilters(
            self.project,
            self.now_iso,
            kinds=("trap", "decision"),
            statuses=ACCEPTED_STATUSES,
            fresh_only=self.fresh_only,
        )
        return match_of(self.index, self.query, filters)

    def _raw_matches(self, raw: str) -> bool:
        filters = fts.SearchFilters(self.project, self.now_iso, kinds=("trap", "decision"))
        try:
            return bool(fts.find(self.index, fts.Terms(raw=raw), filters, sort="relevance", limit=1)[0])
        except fts.QuerySyntaxError:
            return False

    def page(self, section: _Section, limit: int, *, named: int = 0) -> tuple[list[BriefItem], list[str]]:
        """The next ``limit`` records of ``section`` in rank order, and the ids of the ``named``
        records after them (read only to name what a cap leaves out)."""
        candidates = self._candidates(section, limit + named)
        shown, beyond = candidates[:limit], candidates[limit:]
        section.read += len(shown)
        rows = queries.record_rows(self.index, [candidate.rowid for candidate in shown])
        focus = self.focus.get(section.name, {})
        items = [
            _item(section.name, rows[c.rowid], self.now_iso, c, focus.get(c.rowid)) for c in shown if c.rowid in rows
        ]
        section.items.extend(items)
        return items, queries.record_ids(self.index, [candidate.rowid for candidate in beyond])

    def _candidates(self, section: _Section, limit: int) -> list[queries.BriefCandidate]:
        first = self._focused(section) if section.name != "pending" else None
        return queries.brief_section(
            self.index,
            self.project,
            section.name,
            section.values,
            self.now_iso,
            terms=self.terms if first is None else None,
            path=self.path if first is None else None,
            limit=limit,
            offset=section.read,
            fresh_only=self.fresh_only,
            first=first,
        )

    def _focused(self, section: _Section) -> list[queries.BriefCandidate] | None:
        """The records the task's path and words point at, first (see :mod:`memosite.brief_focus`);
        None for a query in FTS5 syntax, which is matched as written."""
        if self.terms is not None and self.parsed is None:
            return None
        if section.name not in self.focus:
            found = focus_section(
                self.index,
                self.project,
                section.name,
                section.values,
                self.now_iso,
                parsed=self.parsed,
                words=self.words,
                path=self.path,
                embedder=self.embedder,
                fresh_only=self.fresh_only,
            )
            self.focus[section.name] = {focused.candidate.rowid: focused for focused in found}
        return [focused.candidate for focused in self.focus[section.name].values()]

    def pages(self, section: _Section) -> Iterator[BriefItem]:
        """Every record of ``section``, read a page at a time as the caller goes."""
        while section.read < section.total:
            page, section.beyond = self.page(section, DECISION_PAGE, named=OMITTED_IDS)
            if not page:
                return
            yield from page

    def count(self, section: _Section) -> None:
        section.total = queries.brief_section_count(
            self.index, self.project, section.name, section.values, self.now_iso, fresh_only=self.fresh_only
        )


def _context(vault: Vault, project: str, slug: str, now: datetime) -> list[BriefItem]:
    """The slug's spec/plan/state via ``get_record`` (expired ones annotated), then related ones;
    none that waits for review."""
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
        if found.path not in seen and found.kind in CONTEXT_KINDS and not found.pending:
            seen.add(found.path)
            exact.append(found.path)
    related = queries.related_context_paths(vault.index(), project, CONTEXT_KINDS, slug)
    paths = exact + [relative for relative in related if relative not in seen]
    for relative in paths:
        row = queries.record_row_by_path(vault.index(), relative)
        if row is not None:
            item = _item("context", row, now_iso)
            item.why = f"the {item.kind} of `{slug}`" if relative in exact else f"related to `{slug}`"
            items.append(item)
    return items


# --- budget ----------------------------------------------------------------------------------


def _header(
    project: str, query: str | None, slug: str | None, path: str | None, now_iso: str, unfresh: dict[Section, int]
) -> str:
    lines = [f"# Session brief: {project}", "", f"Compiled {now_iso}"]
    focus = [
        f"slug `{slug}`" if slug else "",
        f"path `{path}`" if path else "",
        f"query “{' '.join(query.split())}”" if query else "",
    ]
    if any(focus):
        lines[-1] += " for " + ", ".join(part for part in focus if part)
    lines[-1] += "."
    if unfresh:
        left = ", ".join(
            f"{count} {_SECTION_NOUNS[section][0] if count == 1 else _SECTION_NOUNS[section][1]}"
            for section, count in unfresh.items()
        )
        lines += ["", f"Left out (fresh only): {left} whose cited code drifted or is missing: `memosite verify`."]
    return "\n".join(lines) + "\n\n"


def _assemble(header: str, chosen: list[tuple[BriefItem, str]], footer: str) -> str:
    parts = [header]
    for section in _SECTION_ORDER:
        texts = [text for item, text in chosen if item.section == section]
        if texts:
            parts.append(f"## {_SECTION_TITLES[section]}\n\n" + "".join(texts))
    if len(parts) == 1 and not footer and "Left out (fresh only)" not in header:
        parts.append("No active traps, accepted decisions or current work recorded yet.\n\n")
    parts.append(footer)
    return "".join(parts).rstrip("\n") + "\n"


def footer_line(counts: dict[str, int]) -> str:
    """The brief's last line when it left records out: how many of each section, and the search
    that lists them (``+ 20 more traps: memosite search --kind trap``)."""
    sections = [section for section in ("traps", "context", "decisions", "pending") if counts.get(section)]
    if not sections:
        return ""
    parts = []
    for section in sections:
        one, many = _SECTION_NOUNS[section]
        parts.append(f"{counts[section]} more {one if counts[section] == 1 else many}")
    kinds = [kind for section in sections for kind in _SECTION_KINDS[section]]
    where = f"memosite search {' '.join(f'--kind {kind}' for kind in kinds)}".rstrip()
    if "pending" in sections:
        where = f"{where}; memosite review" if kinds else "memosite review"
    return f"+ {', '.join(parts)}: {where}\n"


@dataclass
class _Fit:
    chosen: list[tuple[BriefItem, str]]
    markdown: str


def _fit(
    header: str,
    sections: dict[str, Iterable[BriefItem]],
    eligible: dict[str, int],
    left_out: dict[str, int],
    max_bytes: int,
) -> _Fit:
    """The records of each section in rank order, within ``max_bytes``, in two rounds.

    First each section gets its share of the room (:data:`SECTION_SHARES`): its records in order,
    whole, while they fit in the share. Then what is left — the shares a section did not use —
    goes to the records not yet taken, section by section in :data:`SPEND_ORDER`, greedily; at the
    first record that fits neither whole nor cut short, the brief is full.

    ``eligible`` counts the records of each section ``sections`` can yield; ``left_out`` those left
    out before (the cap). The room the last line may need is kept free while anything could still be
    left out, so the brief never has to be cut again once assembled."""
    reserve = _size(footer_line({s: eligible.get(s, 0) + left_out.get(s, 0) for s in _SECTION_TITLES}))
    state = _Filling(used=_size(header), remaining=sum(eligible.values()), last_free=not any(left_out.values()))
    room = max(max_bytes - state.used - reserve, 0)
    readers = {name: _Peekable(iter(items)) for name, items in sections.items()}
    for name in SPEND_ORDER:
        share = int(room * SECTION_SHARES.get(name, 0.0))
        spent = 0
        reader = readers[name]
        while (item := reader.peek()) is not None:
            cost = state.cost(item)
            if spent + cost > share or not state.fits(cost, reserve, max_bytes):
                break
            state.take(reader.pop(), item.render())
            spent += cost
    for name in SPEND_ORDER:
        reader = readers[name]
        while (item := reader.peek()) is not None:
            cost = state.cost(item)
            if state.fits(cost, reserve, max_bytes):
                state.take(reader.pop(), item.render())
                continue
            heading = state.heading(item)
            trimmed_room = max_bytes - state.used - heading - reserve - _size(item.render(0))
            if trimmed_room >= _MIN_TRIMMED_BODY:
                item.trimmed = True
                state.take(reader.pop(), item.render(trimmed_room))
            state.full = True
            break
        if state.full:
            break
    chosen = sorted(state.chosen, key=lambda pair: SPEND_ORDER.index(pair[0].section))  # sections stay apart
    counts = _left_out_counts(chosen, eligible, left_out)
    markdown = _assemble(header, chosen, footer_line(counts))
    while _size(markdown) > max_bytes and chosen:  # a guard: the sums above are upper bounds
        chosen.pop()
        counts = _left_out_counts(chosen, eligible, left_out)
        markdown = _assemble(header, chosen, footer_line(counts))
    return _Fit(chosen, markdown)


# The share of the brief's room each section may fill before the others have had theirs; what a
# section leaves unused goes to the others (traps first). Decisions get room of their own: a brief
# whose traps fill the budget says nothing of the decision the task is about.
SECTION_SHARES = {"traps": 0.4, "context": 0.25, "decisions": 0.3, "pending": 0.05}
SPEND_ORDER = ("traps", "context", "decisions", "pending")


class _Peekable:
    """An iterator one item of which can be looked at before it is taken."""

    def __init__(self, items: Iterator[BriefItem]) -> None:
        self._items = items
        self._next: BriefItem | None = None
        self._done = False

    def peek(self) -> BriefItem | None:
        if self._next is None and not self._done:
            self._next = next(self._items, None)
            self._done = self._next is None
        return self._next

    def pop(self) -> BriefItem:
        item = self.peek()
        assert item is not None
        self._next = None
        return item


@dataclass
class _Filling:
    """What the brief holds so far while :func:`_fit` fills it."""

    used: int
    remaining: int  # eligible records not yet taken
    last_free: bool  # nothing was left out before: the very last record needs no room for the last line
    chosen: list[tuple[BriefItem, str]] = field(default_factory=list)
    sections: set[str] = field(default_factory=set)
    full: bool = False

    def heading(self, item: BriefItem) -> int:
        return 0 if item.section in self.sections else _size(f"## {_SECTION_TITLES[item.section]}\n\n")

    def cost(self, item: BriefItem) -> int:
        return self.heading(item) + _size(item.render())

    def fits(self, cost: int, reserve: int, max_bytes: int) -> bool:
        last_one = self.remaining == 1 and self.last_free
        return self.used + cost + (0 if last_one else reserve) <= max_bytes

    def take(self, item: BriefItem, text: str) -> None:
        self.used += self.heading(item) + _size(text)
        self.sections.add(item.section)
        self.remaining -= 1
        self.chosen.append((item, text))


def _left_out_counts(
    chosen: list[tuple[BriefItem, str]], eligible: dict[str, int], left_out: dict[str, int]
) -> dict[str, int]:
    kept: dict[str, int] = {}
    for item, _ in chosen:
        kept[item.section] = kept.get(item.section, 0) + 1
    return {s: eligible.get(s, 0) - kept.get(s, 0) + left_out.get(s, 0) for s in _SECTION_TITLES}


# --- entry point -----------------------------------------------------------------------------


def _budget(vault: Vault, max_bytes: int | None, max_tokens: int | None) -> int:
    for name, value, minimum in (("max bytes", max_bytes, MIN_MAX_BYTES), ("max tokens", max_tokens, MIN_MAX_TOKENS)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < minimum):
            raise InvalidArguments(f"invalid {name} {value!r}: expected an integer of at least {minimum}")
    limits = [limit for limit in (max_bytes, max_tokens * BYTES_PER_TOKEN if max_tokens else None) if limit]
    if limits:
        return min(limits)  # both given: the brief keeps within both
    budget = vault.config.bootstrap_max_bytes
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < MIN_MAX_BYTES:
        raise InvalidArguments(
            f"invalid bootstrap.maxBytes {budget!r}: expected an integer of at least {MIN_MAX_BYTES}"
        )
    return budget


def _omissions(
    fit: _Fit,
    eligible: dict[str, int],
    read: dict[str, list[BriefItem]],
    capped: list[str],
    cap_count: int,
    unread: Callable[[Section, int], list[str]],
) -> list[Omission]:
    """What the brief left out; ``unread(section, n)`` names the next ``n`` records of a section
    that were never read (decisions are read only as far as the budget went)."""
    kept = {id(item) for item, _ in fit.chosen}
    omitted: list[Omission] = []
    sections: tuple[Section, ...] = ("traps", "context", "decisions", "pending")
    for section in sections:
        dropped = [item.id for item in read.get(section, []) if id(item) not in kept][:OMITTED_IDS]
        listed = sum(1 for item, _ in fit.chosen if item.section == section)
        count = eligible.get(section, 0) - listed
        if count > len(dropped) and len(dropped) < OMITTED_IDS:
            dropped += unread(section, min(count, OMITTED_IDS) - len(dropped))
        if count > 0:
            omitted.append(Omission(section, "budget", count, dropped))
    if cap_count > 0:
        omitted.append(Omission("traps", "cap", cap_count, capped[:OMITTED_IDS]))
    return omitted


def _mark_freshness(vault: Vault, items: list[BriefItem]) -> None:
    """Give each item the verdict verify last stored for its cited code (none: never verified)."""
    found = verdicts.for_paths(vault.index(), [item.path for item in items])
    for item in items:
        stored = found.get(item.path)
        if stored is not None:
            item.freshness = stored.verdict


def _marked(vault: Vault, pages: Iterable[BriefItem]) -> Iterator[BriefItem]:
    for item in pages:
        _mark_freshness(vault, [item])
        yield item


def _left_out_as_unfresh(
    gatherer: _Gatherer, sections: Iterable[_Section], reviewed: tuple[str, ...]
) -> dict[Section, int]:
    """With ``fresh_only``: how many records of each section it left out (drifted or missing)."""
    if not gatherer.fresh_only:
        return {}
    found: dict[Section, int] = {}
    for section in sections:
        if section.name == "pending" and not reviewed:
            continue
        every = queries.brief_section_count(
            gatherer.index, gatherer.project, section.name, section.values, gatherer.now_iso
        )
        if every > section.total:
            found[section.name] = every - section.total
    return found


def build_bootstrap(
    vault: Vault,
    project: str,
    *,
    query: str | None = None,
    slug: str | None = None,
    path: str | None = None,
    max_bytes: int | None = None,
    max_tokens: int | None = None,
    fresh_only: bool = False,
    now: datetime | None = None,
) -> BootstrapResult:
    """The session brief of ``project`` (see the module docstring for what it holds and drops). A
    read: an agent's brief counts the hits of what it shows through
    :func:`memosite.hits.bootstrap_counting_hits`."""
    from memosite.refresh import ensure_index
    from memosite.schema import validate_slug

    now = now or utc_now()
    now_iso = format_iso(now)
    budget = _budget(vault, max_bytes, max_tokens)
    if query is not None and not isinstance(query, str):
        raise InvalidArguments("the query must be text")
    query = query.strip() if isinstance(query, str) and query.strip() else None
    slug = validate_slug(slug.strip()) if isinstance(slug, str) and slug.strip() else None
    path = normalize_path(path) if path is not None else None
    ensure_index(vault)

    gatherer = _Gatherer(vault, project, now_iso, query, path, fresh_only=fresh_only)
    trap_section = _Section("traps", TRAP_WEIGHTS)
    decision_section = _Section("decisions", ACCEPTED_STATUSES)
    reviewed = tuple(sorted(vault.config.review_required)) if vault.config.review_brief_pending else ()
    pending_section = _Section("pending", reviewed)
    gatherer.count(trap_section)
    gatherer.count(decision_section)
    if reviewed:
        gatherer.count(pending_section)
    unfresh = _left_out_as_unfresh(gatherer, (trap_section, decision_section, pending_section), reviewed)
    # The next few traps past the cap are read too, only to name them among the omitted.
    traps, capped = gatherer.page(trap_section, MAX_TRAPS, named=OMITTED_IDS) if trap_section.total else ([], [])
    cap_count = max(trap_section.total - MAX_TRAPS, 0)
    context = _context(vault, project, slug, now) if slug else []
    pending = gatherer.page(pending_section, MAX_PENDING)[0] if pending_section.total else []
    eligible = {
        "traps": len(traps),
        "context": len(context),
        "decisions": decision_section.total,
        "pending": len(pending),
    }
    left_out = {"traps": cap_count, "pending": max(pending_section.total - len(pending), 0)}
    _mark_freshness(vault, [*traps, *context, *pending])
    in_rank_order: dict[str, Iterable[BriefItem]] = {
        "traps": traps,
        "context": context,
        "decisions": _marked(vault, gatherer.pages(decision_section)),
        "pending": pending,
    }
    fit = _fit(_header(project, query, slug, path, now_iso, unfresh), in_rank_order, eligible, left_out, budget)
    included = [item for item, _ in fit.chosen]
    read = {"traps": traps, "context": context, "decisions": decision_section.items, "pending": pending}
    sections = {"traps": trap_section, "decisions": decision_section, "pending": pending_section}

    def unread(name: Section, count: int) -> list[str]:
        section = sections.get(name)
        if section is None or count <= 0:
            return []
        if section.beyond is not None:
            return section.beyond[:count]
        return gatherer.page(section, 0, named=count)[1]

    omitted = _omissions(fit, eligible, read, capped, cap_count, unread)
    if left_out["pending"]:
        omitted.append(Omission("pending", "cap", left_out["pending"], unread("pending", OMITTED_IDS)))
    omitted += [Omission(section, "freshness", count) for section, count in unfresh.items()]
    return BootstrapResult(
        project=project,
        query=query,
        slug=slug,
        path=path,
        max_bytes=budget,
        markdown=fit.markdown,
        context=[i for i in included if i.section == "context"],
        traps=[i for i in included if i.section == "traps"],
        decisions=[i for i in included if i.section == "decisions"],
        pending=[i for i in included if i.section == "pending"],
        omitted=omitted,
        truncated=bool(omitted) or any(item.trimmed for item in included),
        match=gatherer.match(),
        max_tokens=max_tokens,
    )
