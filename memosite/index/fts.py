"""Full-text search over the index: FTS5 ``bm25()`` over title, body and tags, every filter in SQL.

:func:`find` takes an FTS5 query (or none) and a :class:`SearchFilters` and returns the first
``limit`` matches in the requested order with the total count; a query SQLite cannot parse raises
:class:`QuerySyntaxError` so the caller can fall back to plain words.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from memosite.expiration import active_at_sql, not_expired_sql
from memosite.paths import path_matches
from memosite.schema import flagged_stale_sql

if TYPE_CHECKING:
    from memosite.index.database import Index

LIVE_STATUSES = ("active", "paused", "shipped", "completed")
# Column weights for bm25 (title, body, tags): a word in the title says more than one in the body.
BM25_WEIGHTS = (4.0, 1.0, 2.0)
_BM25 = f"bm25(records_fts, {', '.join(str(w) for w in BM25_WEIGHTS)})"
# gc archives an expired trap/decision/plan: for retrospection it is still an expired record.
_EXPIRED_ARCHIVE = "(r.status = 'archived' AND json_extract(r.frontmatter, '$.archivedReason') = 'expired')"
# Orderings over the matched rows (``m`` below); flagged-stale records sink in the ranking sorts.
ORDERS = {
    "relevance": "flagged, rank, updated DESC, path",
    "occurrences": "flagged, occurrences DESC, rank, updated DESC, path",
    "hits": "flagged, hits DESC, rank, updated DESC, path",
    "updated": "updated DESC, rank, path",
}


class QuerySyntaxError(Exception):
    """SQLite rejected the FTS5 query."""


@dataclass(frozen=True)
class SearchFilters:
    """What a search keeps, besides its query (kinds and statuses already validated)."""

    project: str | None
    now_iso: str
    kinds: Sequence[str] = ()
    statuses: Sequence[str] = ()
    tags: Sequence[str] = ()
    path: str | None = None
    include_expired: bool = False
    as_of_iso: str | None = None


@dataclass(frozen=True)
class Match:
    """One matching record as the index holds it; ``rank`` is bm25 (smaller is better)."""

    id: str
    kind: str
    project: str
    title: str
    status: str
    path: str
    severity: str | None
    layer: str | None
    tags: list[str]
    path_patterns: list[str]
    created: str | None
    updated: str | None
    expires_at: str | None
    occurrences: int
    hits: int
    helpful: int
    stale: int
    archived_reason: Any
    rank: float | None
    snippet: str = ""


@dataclass
class _Where:
    clauses: list[str] = field(default_factory=list)
    params: list[Any] = field(default_factory=list)

    def add(self, clause: str, *params: Any) -> None:
        self.clauses.append(clause)
        self.params.extend(params)

    def sql(self) -> str:
        return " AND ".join(self.clauses) if self.clauses else "1"


def _where(filters: SearchFilters) -> _Where:
    where = _Where()
    if filters.project is not None:
        where.add("r.project = ?", filters.project)
    if filters.kinds:
        where.add(f"r.kind IN ({', '.join('?' for _ in filters.kinds)})", *filters.kinds)
    expired_visible = filters.include_expired or filters.as_of_iso is not None
    if filters.statuses:
        where.add(f"r.status IN ({', '.join('?' for _ in filters.statuses)})", *filters.statuses)
    else:
        live = f"r.status IN ({', '.join('?' for _ in LIVE_STATUSES)})"
        where.add(f"({live} OR {_EXPIRED_ARCHIVE})" if expired_visible else live, *LIVE_STATUSES)
    if filters.as_of_iso is not None:
        where.add(active_at_sql("r.created", "r.expires_at"), filters.as_of_iso, filters.as_of_iso)
    elif not filters.include_expired and "archived" in filters.statuses:
        # Asking for archived records means asking for those gc archived because they expired too.
        where.add(f"({not_expired_sql('r.expires_at')} OR r.status = 'archived')", filters.now_iso)
    elif not filters.include_expired:
        where.add(f"{not_expired_sql('r.expires_at')} AND NOT {_EXPIRED_ARCHIVE}", filters.now_iso)
    for tag in filters.tags:
        where.add("EXISTS (SELECT 1 FROM json_each(r.tags_json) AS t WHERE lower(t.value) = lower(?))", tag)
    if filters.path is not None:
        where.add("memosite_path_match(r.path_patterns, ?)", filters.path)
    return where


def _sql_path_match(patterns_json: str | None, path: str) -> int:
    try:
        patterns = json.loads(patterns_json or "[]")
    except ValueError:
        return 0
    return int(isinstance(patterns, list) and path_matches((str(p) for p in patterns), path))


def find(
    index: Index, fts_query: str | None, filters: SearchFilters, *, sort: str, limit: int
) -> tuple[list[Match], int]:
    """The first ``limit`` matches in ``sort`` order, and how many match in all."""
    conn = index.conn
    # Registering costs microseconds; doing it per search keeps no state about the connection.
    conn.create_function("memosite_path_match", 2, _sql_path_match, deterministic=True)
    where = _where(filters)
    # bm25() cannot share a SELECT with a window function, so the matches are collected first.
    columns = f"r.rowid AS rid, {flagged_stale_sql('r')} AS flagged, r.occurrences, r.hits, r.updated, r.path"
    if fts_query is None:
        source = f"SELECT {columns}, NULL AS rank FROM records AS r WHERE {where.sql()}"
        params: list[Any] = [*where.params]
    else:
        source = (
            f"SELECT {columns}, {_BM25} AS rank FROM records_fts CROSS JOIN records AS r "
            f"ON r.rowid = records_fts.rowid WHERE records_fts MATCH ? AND {where.sql()}"
        )
        params = [fts_query, *where.params]
    sql = (
        f"WITH m AS MATERIALIZED ({source}) "
        f"SELECT rid, rank, count(*) OVER () AS total FROM m ORDER BY {ORDERS[sort]} LIMIT ?"
    )
    try:
        rows = conn.execute(sql, [*params, limit]).fetchall()
    except sqlite3.OperationalError as exc:
        if fts_query is not None:
            raise QuerySyntaxError(str(exc)) from exc  # a stray quote, ``AND(``, ``-``, ``col:``
        raise
    total = int(rows[0]["total"]) if rows else 0
    ranked = [(int(row["rid"]), row["rank"]) for row in rows]
    return _load(conn, ranked, fts_query), total


_RESULT_COLUMNS = (
    "rowid, id, kind, project, title, status, path, severity, layer, tags_json, path_patterns, created, updated, "
    "expires_at, occurrences, hits, helpful, stale, json_extract(frontmatter, '$.archivedReason') AS archived_reason"
)


def _load(conn: sqlite3.Connection, ranked: list[tuple[int, float | None]], fts_query: str | None) -> list[Match]:
    if not ranked:
        return []
    rowids = [rowid for rowid, _ in ranked]
    marks = ", ".join("?" for _ in rowids)
    rows = {
        row["rowid"]: row
        for row in conn.execute(f"SELECT {_RESULT_COLUMNS} FROM records WHERE rowid IN ({marks})", rowids)
    }
    snippets: dict[int, str] = {}
    if fts_query is not None:
        snippets = {
            row[0]: row[1]
            for row in conn.execute(
                f"SELECT rowid, snippet(records_fts, 1, '**', '**', '…', 16) FROM records_fts "
                f"WHERE records_fts MATCH ? AND rowid IN ({marks})",
                [fts_query, *rowids],
            )
        }
    found = []
    for rowid, rank in ranked:
        row = rows.get(rowid)
        if row is None:
            continue
        found.append(
            Match(
                id=row["id"],
                kind=row["kind"],
                project=row["project"],
                title=row["title"],
                status=row["status"],
                path=row["path"],
                severity=row["severity"],
                layer=row["layer"],
                tags=json.loads(row["tags_json"]),
                path_patterns=json.loads(row["path_patterns"]),
                created=row["created"],
                updated=row["updated"],
                expires_at=row["expires_at"],
                occurrences=row["occurrences"],
                hits=row["hits"],
                helpful=row["helpful"],
                stale=row["stale"],
                archived_reason=row["archived_reason"],
                rank=rank,
                snippet=" ".join((snippets.get(rowid) or "").split()),
            )
        )
    return found


def keyword_ranks(index: Index, project: str, kinds: Sequence[str], fts_query: str) -> dict[str, float]:
    """Paths of ``project`` records of ``kinds`` matching ``fts_query``, with ``-bm25``."""
    marks = ", ".join("?" for _ in kinds)
    rows = index.conn.execute(
        f"SELECT r.path, {_BM25} AS rank FROM records_fts CROSS JOIN records AS r "
        f"ON r.rowid = records_fts.rowid WHERE records_fts MATCH ? AND r.project = ? "
        f"AND r.kind IN ({marks})",
        [fts_query, project, *kinds],
    )
    return {row["path"]: -float(row["rank"]) for row in rows}
