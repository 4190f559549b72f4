"""Search over the index: FTS5 ``bm25()`` over title, body and tags, every filter applied in SQL.

Rules a caller can rely on:

* Expired records are left out unless ``include_expired`` (they come back stamped ``expired``).
  ``as_of`` instead returns what was active at that moment: ``created <= as_of < expires_at``.
  A record gc archived *because it expired* (``archivedReason: expired``) is still an expired record
  for both of these, so retrospection keeps working after a gc pass.
* Archived and superseded records are left out unless ``status`` asks for them; asking for
  ``archived`` shows every archived record, expired or not.
* A query is FTS5 syntax first (phrases, ``OR``, ``NOT``, ``prefix*``, ``title:word``); when SQLite
  rejects it, its words are searched as plain words instead, never raising.
* ``path`` keeps records whose ``pathPatterns`` cover that path: ``*`` and ``?`` stay inside one
  segment, ``**`` spans any number of segments, a pattern names its whole subtree
  (``migrations/versions`` covers ``migrations/versions/0012.py``), and a directory given as the
  path covers the patterns beneath it (``src/payments`` finds ``src/payments/client.py``).
* ``score`` is ``-bm25`` (larger is better); records without a query score ``None``.
"""

from __future__ import annotations

import functools
import json
import re
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from memosite.errors import InvalidArguments, StorageError
from memosite.expiration import parse_as_of
from memosite.schema import KINDS, STATUSES, format_iso, is_flagged_stale, utc_now
from memosite.vault import Vault

LIVE_STATUSES = ("active", "paused", "shipped", "completed")
SORTS = ("relevance", "occurrences", "updated", "hits")
MAX_LIMIT = 1000
# Column weights for bm25 (title, body, tags): a word in the title says more than one in the body.
BM25_WEIGHTS = (4.0, 1.0, 2.0)
_BM25 = f"bm25(records_fts, {', '.join(str(w) for w in BM25_WEIGHTS)})"
_WORD_RE = re.compile(r"\w+")
_OPERATORS = frozenset({"AND", "OR", "NOT", "NEAR"})
_RESULT_COLUMNS = (
    "rowid",
    "id",
    "kind",
    "project",
    "title",
    "status",
    "path",
    "severity",
    "layer",
    "tags_json",
    "path_patterns",
    "created",
    "updated",
    "expires_at",
    "occurrences",
    "hits",
    "helpful",
    "stale",
)
_EXPIRED_ARCHIVE = "(r.status = 'archived' AND json_extract(r.frontmatter, '$.archivedReason') = 'expired')"
# Orderings over the matched rows (``m`` below); flagged-stale records sink in the ranking sorts.
_ORDER = {
    "relevance": "flagged, rank, updated DESC, path",
    "occurrences": "flagged, occurrences DESC, rank, updated DESC, path",
    "hits": "flagged, hits DESC, rank, updated DESC, path",
    "updated": "updated DESC, rank, path",
}


@dataclass
class SearchHit:
    """One record found by a search."""

    id: str
    kind: str
    project: str
    title: str
    status: str
    path: str
    score: float | None
    expired: bool
    severity: str | None
    tags: list[str]
    created: str | None
    updated: str | None
    expires_at: str | None
    layer: str | None = None
    occurrences: int = 0
    hits: int = 0
    helpful: int = 0
    stale: int = 0
    path_patterns: list[str] = field(default_factory=list)
    snippet: str = ""

    @property
    def flagged_stale(self) -> bool:
        return is_flagged_stale(self.helpful, self.stale)

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind,
            "project": self.project,
            "title": self.title,
            "status": self.status,
            "path": self.path,
            "score": self.score,
            "expired": self.expired,
            "severity": self.severity,
            "tags": self.tags,
            "created": self.created,
            "updated": self.updated,
            "expires_at": self.expires_at,
            "layer": self.layer,
            "occurrences": self.occurrences,
            "hits": self.hits,
            "helpfulCount": self.helpful,
            "staleCount": self.stale,
            "flaggedStale": self.flagged_stale,
            "pathPatterns": self.path_patterns,
            "snippet": self.snippet,
        }


@dataclass
class SearchResult:
    results: list[SearchHit]
    total: int
    query: str | None = None
    fts_query: str | None = None
    hits_recorded: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "results": [hit.to_json() for hit in self.results],
            "total": self.total,
            "query": self.query,
            "hitsRecorded": self.hits_recorded,
        }


# --- path patterns ---------------------------------------------------------------------------


def normalize_path(path: str) -> str:
    """A path as patterns are stored: forward slashes, no leading ``./``, no ``/`` at the ends."""
    if not isinstance(path, str) or "\x00" in path:
        raise InvalidArguments(f"invalid path {path!r}")
    cleaned = path.strip().replace("\\", "/")
    while cleaned.startswith("./"):
        cleaned = cleaned[2:]
    cleaned = re.sub(r"/{2,}", "/", cleaned).strip("/")
    if not cleaned:
        raise InvalidArguments("--path must not be empty")
    return cleaned


@functools.lru_cache(maxsize=4096)
def _pattern_regex(pattern: str) -> re.Pattern[str]:
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        char = pattern[i]
        if char == "*":
            if pattern.startswith("**", i):
                i += 2
                if i < n and pattern[i] == "/":
                    out.append("(?:.*/)?")
                    i += 1
                else:
                    out.append(".*")
                continue
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif char == "[":
            close = pattern.find("]", i + 2 if pattern[i + 1 : i + 2] in ("!", "^") else i + 1)
            if close == -1:
                out.append(re.escape(char))
            else:
                inner = pattern[i + 1 : close]
                negate = inner[:1] in ("!", "^")
                inner = inner[1:] if negate else inner
                out.append(f"[{'^/' if negate else ''}{inner.replace(chr(92), chr(92) * 2)}]")
                i = close
        else:
            out.append(re.escape(char))
        i += 1
    # A pattern also names everything beneath it: a directory pattern covers its files.
    return re.compile("".join(out) + r"(?:/.*)?", re.DOTALL)


def _literal_prefix(pattern: str) -> str:
    segments = []
    for segment in pattern.split("/"):
        if any(char in segment for char in "*?["):
            break
        segments.append(segment)
    return "/".join(segments)


def path_matches(patterns: Iterable[str], path: str) -> bool:
    """True when one of ``patterns`` covers ``path`` (see the module docstring for the rules)."""
    for raw in patterns:
        pattern = raw.strip().replace("\\", "/").removeprefix("./").strip("/")
        if not pattern:
            continue
        if _pattern_regex(pattern).fullmatch(path):
            return True
        prefix = _literal_prefix(pattern)
        if prefix == path or prefix.startswith(path + "/"):
            return True
    return False


def _sql_path_match(patterns_json: str | None, path: str) -> int:
    try:
        patterns = json.loads(patterns_json or "[]")
    except ValueError:
        return 0
    return int(isinstance(patterns, list) and path_matches((str(p) for p in patterns), path))


def _register_functions(conn: sqlite3.Connection) -> None:
    # Registering costs microseconds; doing it per search keeps no state about the connection.
    conn.create_function("memosite_path_match", 2, _sql_path_match, deterministic=True)


# --- FTS queries -----------------------------------------------------------------------------


def plain_words_query(text: str, *, any_word: bool = False) -> str | None:
    """The words of ``text`` as quoted FTS5 terms (all required, or any with ``any_word``).

    FTS5's operator words (``AND``, ``OR``, ``NOT``, ``NEAR``) are dropped: in a query SQLite
    rejected they were meant as operators, not as words to find.
    """
    words = [word for word in _WORD_RE.findall(text) if word not in _OPERATORS]
    if not words:
        return None
    return (" OR " if any_word else " ").join(f'"{word}"' for word in words)


# --- filters ---------------------------------------------------------------------------------


def _normalize_kinds(kinds: Sequence[str] | None) -> list[str]:
    result = []
    for kind in kinds or ():
        value = kind.strip().lower() if isinstance(kind, str) else kind
        if value not in KINDS:
            raise InvalidArguments(
                f"invalid kind {kind!r}: expected one of {', '.join(KINDS)}",
                details={"field": "kind", "allowed": list(KINDS)},
            )
        result.append(value)
    return result


def _normalize_statuses(status: str | Sequence[str] | None) -> list[str]:
    values = [status] if isinstance(status, str) else list(status or ())
    result = []
    for value in values:
        candidate = value.strip().lower() if isinstance(value, str) else value
        if candidate not in STATUSES:
            raise InvalidArguments(
                f"invalid status {value!r}: expected one of {', '.join(STATUSES)}",
                details={"field": "status", "allowed": list(STATUSES)},
            )
        result.append(candidate)
    return result


@dataclass
class _Filters:
    clauses: list[str] = field(default_factory=list)
    params: list[Any] = field(default_factory=list)

    def add(self, clause: str, *params: Any) -> None:
        self.clauses.append(clause)
        self.params.extend(params)

    def sql(self) -> str:
        return " AND ".join(self.clauses) if self.clauses else "1"


def _build_filters(
    project: str | None,
    kinds: list[str],
    statuses: list[str],
    tags: Sequence[str],
    path: str | None,
    include_expired: bool,
    as_of_iso: str | None,
    now_iso: str,
) -> _Filters:
    filters = _Filters()
    if project is not None:
        filters.add("r.project = ?", project)
    if kinds:
        filters.add(f"r.kind IN ({', '.join('?' for _ in kinds)})", *kinds)
    expired_visible = include_expired or as_of_iso is not None
    if statuses:
        filters.add(f"r.status IN ({', '.join('?' for _ in statuses)})", *statuses)
    else:
        live = f"r.status IN ({', '.join('?' for _ in LIVE_STATUSES)})"
        filters.add(f"({live} OR {_EXPIRED_ARCHIVE})" if expired_visible else live, *LIVE_STATUSES)
    if as_of_iso is not None:
        filters.add(
            "(r.created IS NULL OR r.created <= ?) AND (r.expires_at IS NULL OR ? < r.expires_at)",
            as_of_iso,
            as_of_iso,
        )
    elif not include_expired and "archived" in statuses:
        # Asking for archived records means asking for those gc archived because they expired too.
        filters.add("(r.expires_at IS NULL OR r.expires_at > ? OR r.status = 'archived')", now_iso)
    elif not include_expired:
        filters.add(f"(r.expires_at IS NULL OR r.expires_at > ?) AND NOT {_EXPIRED_ARCHIVE}", now_iso)
    for tag in tags:
        filters.add(
            "EXISTS (SELECT 1 FROM json_each(r.tags_json) AS t WHERE lower(t.value) = lower(?))",
            tag,
        )
    if path is not None:
        filters.add("memosite_path_match(r.path_patterns, ?)", path)
    return filters


# --- search ----------------------------------------------------------------------------------


def search_records(
    vault: Vault,
    project: str | None,
    query: str | None = None,
    *,
    kinds: Sequence[str] | None = None,
    status: str | Sequence[str] | None = None,
    tags: Sequence[str] | None = None,
    path: str | None = None,
    include_expired: bool = False,
    as_of: str | datetime | None = None,
    sort: str = "relevance",
    limit: int = 20,
    hit_ids: Sequence[str] | None = None,
    session_id: str | None = None,
    now: datetime | None = None,
) -> SearchResult:
    """Find records of ``project`` (every project when None) matching ``query`` and the filters.

    ``total`` counts every match, ``results`` holds the first ``limit`` of them. ``hit_ids``
    acknowledges that the caller used those records (a hit each, at most once per ``session_id``);
    it needs a project.
    """
    now = now or utc_now()
    if sort not in SORTS:
        raise InvalidArguments(f"invalid sort {sort!r}: expected one of {', '.join(SORTS)}")
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise InvalidArguments(f"invalid limit {limit!r}: expected 1 to {MAX_LIMIT}")
    if hit_ids and project is None:
        raise InvalidArguments("acknowledging hits needs a project")
    as_of_iso = format_iso(parse_as_of(as_of)) if as_of is not None else None
    filters = _build_filters(
        project,
        _normalize_kinds(kinds),
        _normalize_statuses(status),
        [t for t in (tags or ()) if t and t.strip()],
        normalize_path(path) if path is not None else None,
        include_expired,
        as_of_iso,
        format_iso(now),
    )
    _ensure_index(vault)
    conn = vault.index().conn
    _register_functions(conn)
    text = query.strip() if isinstance(query, str) and query.strip() else None
    fts_query = text
    if text is None:
        ranked, total = _run(conn, None, filters, sort, limit)
    else:
        try:
            ranked, total = _run(conn, text, filters, sort, limit)
        except sqlite3.OperationalError:
            # Not valid FTS5 syntax (a stray quote, ``AND(``, ``-``, ``col:``): search the words.
            fts_query = plain_words_query(text)
            ranked, total = ([], 0) if fts_query is None else _run_checked(conn, fts_query, filters, sort, limit)
    hits = _load_hits(conn, ranked, fts_query, now)
    recorded: list[str] = []
    if hit_ids and project is not None:
        from memosite.salience import record_hits

        recorded = record_hits(vault, project, list(hit_ids), session_id=session_id, now=now)
    return SearchResult(results=hits, total=total, query=text, fts_query=fts_query, hits_recorded=recorded)


def _ensure_index(vault: Vault) -> None:
    # Importing indexing pulls in the view templates; only a missing index needs it.
    if vault.index().fresh:
        from memosite.indexing import ensure_index

        ensure_index(vault)


def _run(
    conn: sqlite3.Connection, fts_query: str | None, filters: _Filters, sort: str, limit: int
) -> tuple[list[tuple[int, float | None]], int]:
    """Rowids and bm25 ranks of the first ``limit`` matches, in order, and the total count."""
    # bm25() cannot share a SELECT with a window function, so the matches are collected first.
    columns = "r.rowid AS rid, (r.stale > r.helpful) AS flagged, r.occurrences, r.hits, r.updated, r.path"
    if fts_query is None:
        source = f"SELECT {columns}, NULL AS rank FROM records AS r WHERE {filters.sql()}"
        params: list[Any] = [*filters.params]
    else:
        source = (
            f"SELECT {columns}, {_BM25} AS rank FROM records_fts CROSS JOIN records AS r "
            f"ON r.rowid = records_fts.rowid WHERE records_fts MATCH ? AND {filters.sql()}"
        )
        params = [fts_query, *filters.params]
    sql = (
        f"WITH m AS MATERIALIZED ({source}) "
        f"SELECT rid, rank, count(*) OVER () AS total FROM m ORDER BY {_ORDER[sort]} LIMIT ?"
    )
    rows = conn.execute(sql, [*params, limit]).fetchall()
    total = int(rows[0]["total"]) if rows else 0
    return [(int(row["rid"]), row["rank"]) for row in rows], total


def _run_checked(
    conn: sqlite3.Connection, fts_query: str, filters: _Filters, sort: str, limit: int
) -> tuple[list[tuple[int, float | None]], int]:
    try:
        return _run(conn, fts_query, filters, sort, limit)
    except sqlite3.OperationalError as exc:
        raise StorageError(f"search failed: {exc}") from exc


def _load_hits(
    conn: sqlite3.Connection,
    ranked: list[tuple[int, float | None]],
    fts_query: str | None,
    now: datetime,
) -> list[SearchHit]:
    if not ranked:
        return []
    rowids = [rowid for rowid, _ in ranked]
    marks = ", ".join("?" for _ in rowids)
    rows = {
        row["rowid"]: row
        for row in conn.execute(
            f"SELECT {', '.join(_RESULT_COLUMNS)}, "
            f"json_extract(frontmatter, '$.archivedReason') AS archived_reason "
            f"FROM records WHERE rowid IN ({marks})",
            rowids,
        )
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
    now_iso = format_iso(now)
    hits = []
    for rowid, rank in ranked:
        row = rows.get(rowid)
        if row is None:
            continue
        expired = bool(row["expires_at"] and row["expires_at"] <= now_iso) or (
            row["status"] == "archived" and row["archived_reason"] == "expired"
        )
        hits.append(
            SearchHit(
                id=row["id"],
                kind=row["kind"],
                project=row["project"],
                title=row["title"],
                status=row["status"],
                path=row["path"],
                score=round(-rank, 4) if rank is not None else None,
                expired=expired,
                severity=row["severity"],
                tags=json.loads(row["tags_json"]),
                created=row["created"],
                updated=row["updated"],
                expires_at=row["expires_at"],
                layer=row["layer"],
                occurrences=row["occurrences"],
                hits=row["hits"],
                helpful=row["helpful"],
                stale=row["stale"],
                path_patterns=json.loads(row["path_patterns"]),
                snippet=" ".join((snippets.get(rowid) or "").split()),
            )
        )
    return hits


def keyword_ranks(vault: Vault, project: str, kinds: Sequence[str], text: str) -> dict[str, float]:
    """Paths of ``project`` records of ``kinds`` holding any word of ``text``, with ``-bm25``."""
    fts_query = plain_words_query(text, any_word=True)
    if fts_query is None:
        return {}
    marks = ", ".join("?" for _ in kinds)
    rows = vault.index().conn.execute(
        f"SELECT r.path, {_BM25} AS rank FROM records_fts CROSS JOIN records AS r "
        f"ON r.rowid = records_fts.rowid WHERE records_fts MATCH ? AND r.project = ? "
        f"AND r.kind IN ({marks})",
        [fts_query, project, *kinds],
    )
    return {row["path"]: -float(row["rank"]) for row in rows}
