"""The named read queries of memosite's features: recurrence, gc, rank and the session brief.

Each function answers one question of one feature from the index, with the feature's rules (expiry,
flagged stale, a trap's occurrences) spelled by the SQL fragments kept beside their Python rules;
rank and the brief order and cut their rows in SQL (``LIMIT``), so their cost does not grow with the
number of traps.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from memosite.expiration import not_expired_sql
from memosite.index import fragments, fts, partitions, termcounts
from memosite.index.database import filters
from memosite.index.entry import IndexEntry
from memosite.schema import is_flagged_stale
from memosite.statuses import inactive_sql, live_sql

if TYPE_CHECKING:
    from memosite.index.database import Index


def _marks(values: Sequence[Any]) -> str:
    return ", ".join("?" for _ in values)


# --- recurrence ------------------------------------------------------------------------------


def live_traps_with_patterns(index: Index, project: str, key: str) -> list[IndexEntry]:
    """Traps of ``project`` with exactly these path patterns that may still recur (not archived or
    superseded), most recently updated first."""
    return [
        IndexEntry.from_row(row)
        for row in index.conn.execute(
            "SELECT * FROM records WHERE project = ? AND kind = 'trap' AND pattern_key = ? "
            f"AND NOT {inactive_sql()} ORDER BY updated DESC",
            (project, key),
        )
    ]


# --- gc --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GcRow:
    """What gc needs to plan one record file, without reading it."""

    path: str
    kind: str
    id: str
    status: str
    created: str | None
    ttl: Any
    expires_at: Any
    compacted: Any


def gc_rows(index: Index, project: str) -> list[GcRow]:
    """Every record of ``project`` with its expiry inputs as written (``ttl``, ``expires_at``) and
    its ``compacted`` flag."""
    return [
        GcRow(*row)
        for row in index.conn.execute(
            "SELECT path, kind, id, status, created, json_extract(frontmatter, '$.ttl'), "
            "json_extract(frontmatter, '$.expires_at'), json_extract(frontmatter, '$.compacted') "
            "FROM records WHERE project = ?",
            (project,),
        )
    ]


# --- rank ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RecordRow:
    """A record as rank and the brief see it (``occurrences`` as :func:`trap_occurrences` says)."""

    id: str
    kind: str
    title: str
    status: str
    path: str
    body: str
    severity: str | None
    severity_weight: int
    layer: str | None
    occurrences: int
    hits: int
    helpful: int
    stale: int
    updated: str | None
    expires_at: str | None
    path_patterns: list[str] = field(default_factory=list)

    @property
    def flagged_stale(self) -> bool:
        return is_flagged_stale(self.helpful, self.stale)


_ROW_COLUMNS = (
    "r.id, r.kind, r.title, r.status, r.path, r.body, r.severity, r.severity_weight, r.layer, f.occurrences, "
    "r.hits, r.helpful, r.stale, r.updated, r.expires_at, r.path_patterns"
)


def _record_rows(index: Index, sql: str, params: Sequence[Any]) -> list[RecordRow]:
    rows = index.conn.execute(sql, params)
    return [RecordRow(**{**dict(row), "path_patterns": json.loads(row["path_patterns"])}) for row in rows]


def ranked_traps(
    index: Index, project: str, now_iso: str, *, layer: str | None, limit: int
) -> tuple[int, list[RecordRow]]:
    """Active, unexpired traps by occurrences, hits, severity and recency, flagged-stale ones last;
    the total count and the first ``limit``. A trap waiting for review neither ranks nor counts."""
    where = (
        f"f.project = ? AND f.kind = 'trap' AND f.status = 'active' AND NOT f.pending"
        f" AND {not_expired_sql('f.expires_at')}"
    )
    params: list[Any] = [project, now_iso]
    if layer is not None:
        where += " AND f.layer = ?"
        params.append(layer)
    total = int(index.conn.execute(f"SELECT count(*) FROM search_facts AS f WHERE {where}", params).fetchone()[0])
    rows = _record_rows(
        index,
        f"SELECT {_ROW_COLUMNS} FROM search_facts AS f JOIN records AS r ON r.rowid = f.rowid WHERE {where} "
        "ORDER BY f.flagged, f.occurrences DESC, f.hits DESC, f.severity_weight DESC, f.updated DESC, f.path LIMIT ?",
        [*params, limit],
    )
    return total, rows


# --- the session brief -----------------------------------------------------------------------

BriefSection = Literal["traps", "decisions", "pending"]
_SECTION_KINDS = {"traps": "trap", "decisions": "decision"}


@dataclass(frozen=True)
class BriefCandidate:
    """A record eligible for a section of the brief, in the section's order."""

    rowid: int
    on_path: bool
    matched: int
    rank: float | None


def _section_scope(
    project: str, section: BriefSection, values: Sequence[Any], now_iso: str, *, fresh_only: bool = False
) -> fts.Where:
    """Traps: active, of the severity weights ``values``; decisions: of the statuses ``values``;
    both unexpired; pending review: traps and decisions waiting for a person. Only the pending
    section holds pending records; ``fresh_only`` leaves out what verify found drifted or missing."""
    scope = fts.Where()
    scope.add("f.project = ?", project)
    scope.add("f.pending" if section == "pending" else "NOT f.pending")
    if fresh_only:
        scope.add(fts.UNTRUSTED_FRESHNESS_SQL)
    if section == "pending":
        scope.add(f"f.kind IN ({', '.join('?' for _ in values)})", *values)
        scope.add(live_sql("f.status"))
    elif section == "traps":
        scope.add("f.kind = 'trap' AND f.status = 'active'")
        scope.add(f"f.severity_weight IN ({', '.join('?' for _ in values)})", *values)
    else:
        scope.add("f.kind = 'decision'")
        scope.add(f"f.status IN ({', '.join('?' for _ in values)})", *values)
    scope.add(not_expired_sql("f.expires_at"), now_iso)
    return scope


# Path matches first, then records holding more of the query's terms (better bm25 first), then
# the section's own order; flagged-stale records after the others they tie with. The records that
# match neither (most of them) are in the section's own order, which an index of search_facts holds:
# they are read in that order up to the page, never sorted.
_OWN_ORDERS = {
    "traps": "f.flagged, f.severity_weight DESC, f.occurrences DESC, f.hits DESC, f.updated DESC, f.path",
    "decisions": "f.flagged, f.updated DESC, f.path",
    "pending": "f.flagged, f.updated DESC, f.path",  # the newest waiting records first
}
_OWN_ORDER_INDEXES = {
    "traps": " INDEXED BY search_facts_trap_order",
    "decisions": " INDEXED BY search_facts_decision_order",
    "pending": "",  # few rows: no index hint
}
_SECTION_ORDERS = {
    section: f"on_path DESC, matched DESC, f.flagged, rank IS NULL, rank, {order.removeprefix('f.flagged, ')}"
    for section, order in _OWN_ORDERS.items()
}


def brief_section_count(
    index: Index,
    project: str,
    section: BriefSection,
    values: Sequence[Any],
    now_iso: str,
    *,
    fresh_only: bool = False,
) -> int:
    """How many records the section could hold: a scan of an index, so the answer is remembered
    until the index changes or the first record it counted expires (a brief is asked again and
    again of a vault that has not changed)."""

    def count() -> tuple[int, str | None, str]:
        if section in _SECTION_KINDS and not fresh_only:
            # Traps and decisions in scope are the ones with view fragments (none waiting for
            # review): counted from the fragments' chunk counts, not by reading the section.
            kind = _SECTION_KINDS[section]
            statuses, weights = (("active",), values) if section == "traps" else (values, None)
            counted, first = fragments.live_count(index, project, kind, statuses, weights, now_iso)
            return counted, first, now_iso
        scope = _section_scope(project, section, values, now_iso, fresh_only=fresh_only)
        # Every expiry among the rows counted lies after now_iso: the first is when the count ends.
        row = index.conn.execute(
            f"SELECT count(*), min(f.expires_at) FROM search_facts AS f WHERE {scope.sql()}", scope.params
        ).fetchone()
        return int(row[0]), row[1], now_iso

    def holds(answer: tuple[int, str | None, str]) -> bool:
        _, first_expiry, counted_at = answer
        return counted_at <= now_iso and (first_expiry is None or now_iso < first_expiry)

    key = ("brief section count", project, section, tuple(values), fresh_only)
    answer: tuple[int, str | None, str] = index.remembered(key, count, holds)
    return answer[0]


def _focused(
    index: Index,
    project: str,
    section: BriefSection,
    scope: fts.Where,
    terms: fts.Terms | None,
    path: str | None,
    limit: int,
    needed: str | None,
    *,
    count_words: bool = True,
) -> list[BriefCandidate] | None:
    """The first ``limit`` records of the section that match the path or the query (and
    the FTS5 expression ``needed``, when given), in order. Without ``count_words`` (a query and no path), how many of
    the query's words each holds is counted of the rows found, after the statement: None when more
    than ``limit`` match (that count then chooses which come first, and is asked in SQL)."""
    ctes: list[str] = []
    params: list[Any] = []
    sources: list[str] = []
    count_later: tuple[str, ...] = ()
    if terms:
        kind = _SECTION_KINDS.get(section)
        rowids = partitions.project_range(index, project, kind) if kind is not None else None
        found = fts.relation(terms, scope, require_all=False, holding=needed, rowids=rowids, count_words=count_words)
        count_later = found.count_later
        ctes += [cte.removeprefix("WITH ") for cte in found.ctes]
        params += found.cte_params
        ctes.append(f"q AS MATERIALIZED (SELECT rid, matched, rank FROM ({found.select}))")
        params += found.params
        sources.append("SELECT rid, matched, rank FROM q")
    on_path = "0"
    on_path_params: list[Any] = []
    if path is not None:
        covering = fts.matching_pattern_sets(index, project, path)
        not_in_q = " AND rowid NOT IN (SELECT rid FROM q)" if terms else ""
        matches_path, matches_params = fts.path_match("search_facts", covering)
        sources.append(
            f"SELECT rowid AS rid, 0 AS matched, NULL AS rank FROM search_facts "
            f"WHERE project = ? AND {matches_path}{not_in_q}"
        )
        params += [project, *matches_params]
        on_path, on_path_params = fts.path_match("f", covering)
    # Each focused record once, with what it matched: no join back to q (SQLite would scan it per row).
    ctes.append(f"focus AS MATERIALIZED ({' UNION ALL '.join(sources)})")
    sql = (
        f"WITH {', '.join(ctes)} "
        f"SELECT f.rowid AS rid, {on_path} AS on_path, focus.matched AS matched, focus.rank AS rank "
        f"FROM focus JOIN search_facts AS f ON f.rowid = focus.rid WHERE {scope.sql()} "
        f"ORDER BY {_SECTION_ORDERS[section]} LIMIT ?"
    )
    asked = limit if count_words else limit + 1  # one more: whether more than ``limit`` match
    rows = _run_brief(index, sql, [*params, *on_path_params, *scope.params, asked], terms)
    candidates = [BriefCandidate(int(r["rid"]), bool(r["on_path"]), int(r["matched"]), r["rank"]) for r in rows]
    if count_words or not count_later:
        return candidates[:limit]  # (one word, or a substring: counted in SQL all the same)
    if len(candidates) > limit:
        return None
    # Every match is here, in the section's order but for how many words each holds (0 for all,
    # no path): counted now, and a stable sort puts that first, as the section's order does.
    holders = holding(index, [candidate.rowid for candidate in candidates], [(word, None) for word in count_later])
    counted = [BriefCandidate(c.rowid, c.on_path, sum(c.rowid in held for held in holders), c.rank) for c in candidates]
    return sorted(counted, key=lambda candidate: -candidate.matched)


def _run_brief(index: Index, sql: str, params: Sequence[Any], terms: fts.Terms | None) -> list[sqlite3.Row]:
    try:
        return index.conn.execute(sql, list(params)).fetchall()
    except sqlite3.OperationalError as exc:
        if terms and terms.raw is not None:
            raise fts.QuerySyntaxError(str(exc)) from exc
        raise


def brief_section(
    index: Index,
    project: str,
    section: BriefSection,
    values: Sequence[Any],
    now_iso: str,
    *,
    terms: fts.Terms | None,
    path: str | None,
    limit: int,
    offset: int = 0,
    fresh_only: bool = False,
    first: Sequence[BriefCandidate] | None = None,
    holding: str | None = None,
) -> list[BriefCandidate]:
    """Records of the section in its order (see ``_SECTION_ORDERS``): ``limit`` of them from
    ``offset``. ``terms`` match as any-term (raises :class:`fts.QuerySyntaxError` for raw FTS5
    syntax SQLite rejects); with ``holding`` (an FTS5 expression) only the records that also match
    it are focused on. ``first``, when given, replaces the path and query focus: those records
    (in scope, in that order), then the rest in the section's own order."""
    scope = _section_scope(project, section, values, now_iso, fresh_only=fresh_only)
    wanted = offset + limit
    if first is not None:
        focused = list(first)
    elif terms and holding is not None and path is None:
        # The records holding a rare word of the task are usually few: how many of the task's words
        # each holds is asked of them alone, not of every record of the project's range holding a
        # common one (its postings walked again, a prefix's too), unless more match than are read.
        few = _focused(index, project, section, scope, terms, path, wanted, holding, count_words=False)
        focused = (
            few if few is not None else _focused(index, project, section, scope, terms, path, wanted, holding) or []
        )
    elif terms or path is not None:
        focused = _focused(index, project, section, scope, terms, path, wanted, holding) or []
    else:
        focused = []
    if len(focused) >= wanted:
        return focused[offset:]
    # Every focused record is known (fewer than a page): the rest follow in the section's own order.
    skip = [candidate.rowid for candidate in focused]
    rest_offset = max(offset - len(focused), 0)
    exclude = f" AND f.rowid NOT IN ({', '.join('?' for _ in skip)})" if skip else ""
    rows = _run_brief(
        index,
        f"SELECT f.rowid AS rid FROM search_facts AS f{_OWN_ORDER_INDEXES[section]} "
        f"WHERE {scope.sql()}{exclude} ORDER BY {_OWN_ORDERS[section]} LIMIT ? OFFSET ?",
        [*scope.params, *skip, wanted - max(offset, len(focused)), rest_offset],
        None,
    )
    rest = [BriefCandidate(int(r["rid"]), False, 0, None) for r in rows]
    return focused[offset:] + rest


def record_rows(index: Index, rowids: Sequence[int]) -> dict[int, RecordRow]:
    """The records of ``rowids`` that still exist, by rowid."""
    if not rowids:
        return {}
    rows = index.conn.execute(
        f"SELECT r.rowid AS rowid, {_ROW_COLUMNS} FROM records AS r JOIN search_facts AS f ON f.rowid = r.rowid "
        f"WHERE r.rowid IN ({', '.join('?' for _ in rowids)})",
        list(rowids),
    ).fetchall()
    found = {}
    for row in rows:
        values = {key: row[key] for key in row.keys() if key != "rowid"}  # noqa: SIM118 (sqlite3.Row)
        found[int(row["rowid"])] = RecordRow(**{**values, "path_patterns": json.loads(values["path_patterns"])})
    return found


def record_ids(index: Index, rowids: Sequence[int]) -> list[str]:
    """The ids of the records of ``rowids``, in that order."""
    if not rowids:
        return []
    marks = ", ".join("?" for _ in rowids)
    ids = {
        row[0]: row[1]
        for row in index.conn.execute(f"SELECT rowid, id FROM records WHERE rowid IN ({marks})", list(rowids))
    }
    return [ids[rowid] for rowid in rowids if rowid in ids]


def related_context_paths(index: Index, project: str, kinds: Sequence[str], slug: str) -> list[str]:
    """Live records of ``kinds`` named ``<slug>-…`` or with ``relatedSlug: <slug>``, spec first,
    then plan, then state, newest first; none that waits for review."""
    escaped = slug.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    order = " ".join(f"WHEN '{kind}' THEN {n}" for n, kind in enumerate(kinds))
    return [
        row[0]
        for row in index.conn.execute(
            f"SELECT r.path FROM records AS r JOIN search_facts AS f ON f.rowid = r.rowid "
            f"WHERE r.project = ? AND r.kind IN ({_marks(kinds)}) "
            f"AND NOT {inactive_sql('r.status')} AND NOT f.pending "
            "AND (r.slug LIKE ? ESCAPE '\\' OR json_extract(r.frontmatter, '$.relatedSlug') = ?) "
            f"ORDER BY CASE r.kind {order} ELSE {len(kinds)} END, r.updated DESC, r.path",
            (project, *kinds, f"{escaped}-%", slug),
        )
    ]


def record_row_by_path(index: Index, path: str) -> RecordRow | None:
    rows = _record_rows(
        index,
        f"SELECT {_ROW_COLUMNS} FROM records AS r JOIN search_facts AS f ON f.rowid = r.rowid WHERE r.path = ?",
        (path,),
    )
    return rows[0] if rows else None


# --- names ------------------------------------------------------------------------------------


def paths_differing_in_case(index: Index, project: str, path: str) -> list[str]:
    """Indexed record paths of ``project`` equal to ``path`` but for ASCII letter case (slugs are
    ASCII), looked up through ``records_path_nocase``."""
    return [
        str(row[0])
        for row in index.conn.execute(
            "SELECT path FROM records WHERE project = ? AND path = ? COLLATE NOCASE AND path != ? ORDER BY path",
            (project, path, path),
        )
    ]


def shared_ids(index: Index, project: str) -> dict[str, list[str]]:
    """Ids that more than one record file of one kind holds in ``project``, with those paths. (One
    id in two kinds is allowed: ``--kind`` tells those apart.)"""
    found: dict[str, list[str]] = {}
    for record_id, path in index.conn.execute(
        "SELECT r.id, r.path FROM records AS r JOIN (SELECT kind, id FROM records WHERE project = ?"
        " GROUP BY kind, id HAVING count(*) > 1) AS d ON d.kind = r.kind AND d.id = r.id"
        " WHERE r.project = ? ORDER BY r.id, r.path",
        (project, project),
    ):
        found.setdefault(str(record_id), []).append(str(path))
    return found


# --- the task's words, weighed (memosite.brief_focus) ---------------------------------------


def section_weights(
    index: Index,
    project: str,
    section: BriefSection,
    values: Sequence[Any],
    now_iso: str,
    rowids: Sequence[int] | None = None,
    *,
    fresh_only: bool = False,
) -> dict[int, float]:
    """The records of the section — among ``rowids``, or all of them when None — each with its
    relevance weight: what a ranking by meaning may put in the section."""
    return fts.weights_in_scope(index, _section_scope(project, section, values, now_iso, fresh_only=fresh_only), rowids)


def section_kinds(section: BriefSection, values: Sequence[Any]) -> tuple[str, ...]:
    """The only kinds of record the section holds (see :func:`_section_scope`)."""
    if section == "pending":
        return tuple(str(value) for value in values)
    return ("trap",) if section == "traps" else ("decision",)


_KNOWLEDGE_SCOPE = "f.project = ? AND f.kind IN ('trap', 'decision') AND NOT f.pending"


def knowledge_count(index: Index, project: str) -> int:
    """How many traps and decisions the project holds (what a word's rarity is measured against),
    none waiting for review: those with view fragments, from the fragments' chunk counts."""
    counts = fragments.kind_counts(index, project)
    return counts.get("trap", 0) + counts.get("decision", 0)


def knowledge_holding(index: Index, project: str, expression: str | None, substring: str | None) -> int:
    """How many of the project's traps and decisions hold one term: an FTS5 ``expression`` over the
    word index (counted in the project's trap and decision ranges of rowids alone, see
    :mod:`memosite.index.partitions`, less those waiting for review; remembered while this process
    follows the writes, see :mod:`memosite.index.termcounts`), or a ``substring`` of a script
    written without spaces."""
    if expression is not None:
        known = termcounts.remembered(index, project, expression)
        if known is not None:
            return known
        held = 0
        for kind in termcounts.KNOWLEDGE:
            rowids = partitions.project_range(index, project, kind)
            if rowids is None:
                return 0
            held += int(
                index.conn.execute(
                    "SELECT count(*) FROM records_fts WHERE records_fts MATCH ? AND rowid >= ? AND rowid < ?",
                    (expression, *rowids),
                ).fetchone()[0]
            )
        waiting = "SELECT rowid FROM search_facts WHERE project = ? AND kind IN ('trap', 'decision') AND pending"
        held -= int(
            index.conn.execute(
                f"SELECT count(*) FROM records_fts WHERE records_fts MATCH ? AND rowid IN ({waiting})",
                (expression, project),
            ).fetchone()[0]
        )
        termcounts.remember(index, project, expression, held)
        return held
    sql = (
        "SELECT count(*) FROM search_facts AS f JOIN records AS r ON r.rowid = f.rowid "
        f"WHERE f.unspaced AND {_KNOWLEDGE_SCOPE} AND instr(lower({_TEXT}), lower(?)) > 0"
    )
    return int(index.conn.execute(sql, (project, substring)).fetchone()[0])


_FOCUS_TABLE = (
    "CREATE VIRTUAL TABLE IF NOT EXISTS temp.focus_rows USING fts5(title, body, tags, folded, "
    "tokenize='porter unicode61 remove_diacritics 2')"
)


def holding(index: Index, rowids: Sequence[int], terms: Sequence[tuple[str | None, str | None]]) -> list[set[int]]:
    """For each term — an FTS5 expression over the word index, or a substring of a script written
    without spaces — which of ``rowids`` hold it. Asked of ``records_fts``, a common word costs a walk
    of its whole posting list per term; the few records asked about are put in a connection-private
    FTS5 table with the same tokenizer and asked there (as search's snippets are)."""
    if not rowids or not terms:
        return [set() for _ in terms]
    conn = index.conn
    marks = _marks(rowids)
    rows = conn.execute(
        f"SELECT r.rowid, r.title, r.body, r.tags, r.folded FROM records AS r WHERE r.rowid IN ({marks})", list(rowids)
    ).fetchall()
    with index.scratch_writes():
        conn.execute(_FOCUS_TABLE)
        conn.execute("SAVEPOINT focus_rows")  # the temp database only: no lock on the index
        conn.execute("DELETE FROM temp.focus_rows")
        conn.executemany("INSERT INTO temp.focus_rows (rowid, title, body, tags, folded) VALUES (?, ?, ?, ?, ?)", rows)
        conn.execute("RELEASE focus_rows")
    found: list[set[int]] = []
    for expression, substring in terms:
        if expression is not None:
            try:
                held = conn.execute("SELECT rowid FROM temp.focus_rows WHERE focus_rows MATCH ?", (expression,))
                found.append({int(row[0]) for row in held})
            except sqlite3.OperationalError:
                found.append(set())
        else:
            sql = f"SELECT r.rowid FROM records AS r WHERE r.rowid IN ({marks}) AND instr(lower({_TEXT}), lower(?)) > 0"
            found.append({int(row[0]) for row in conn.execute(sql, (*rowids, substring))})
    return found


def matching(index: Index, ranking: fts.Ranking, rowids: Sequence[int]) -> set[int]:
    """Which of ``rowids`` — records in the scope ``ranking`` searched — its words and substrings
    match, as its search reads them (every term, or any): asked of those records alone
    (:func:`holding`), however many records of the index the words match."""
    terms: list[tuple[str | None, str | None]] = [(word, None) for word in ranking.words]
    terms += [(None, substring) for substring in ranking.substrings]
    if not rowids or not terms:
        return set()
    held = holding(index, rowids, terms)
    return set(rowids).intersection(*held) if ranking.require_all else set().union(*held)


_TEXT = "r.title || char(10) || r.body || char(10) || r.tags"


def project_ids(index: Index, project: str | None, kinds: Sequence[str] | None = None) -> list[str]:
    """The ids of ``project``'s records (every project's when None), of ``kinds`` when given: what a
    mistyped id is compared with."""
    clauses, params = filters(project, kinds, None)
    sql = f"SELECT DISTINCT id FROM records{clauses} ORDER BY id"
    return [str(row[0]) for row in index.conn.execute(sql, params)]
