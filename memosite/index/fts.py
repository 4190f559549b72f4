"""Full-text search over the index: FTS5 ``bm25()`` over title, body and tags, every filter in SQL.

A search is a :class:`Terms` (built by :mod:`memosite.query`) and a :class:`SearchFilters`:

* ``words`` — FTS5 expressions over ``records_fts``, one per term;
* ``substrings`` — text of scripts written without spaces, found as written: three characters and
  more through the trigram table, shorter ones by scanning only the records that hold such text;
* ``raw`` — an FTS5 query used as the user wrote it.

:func:`find` returns the first ``limit`` matches with the total: with ``require_all`` every term
must match, otherwise any term does. In ``relevance`` order either way ranks by ``bm25()`` alone,
which weighs each term by its rarity and normalises by the record's length: a record holding more
of the query's words scores better only as far as those words say more, and a long record holding
many common words does not outrank a short one holding the rare ones (``matched`` still says how
many terms each holds). Substrings of unspaced scripts count one unit of rank each. Every filter and
ordering column is read from ``search_facts``, the narrow row each record has there. A query SQLite
cannot parse raises :class:`QuerySyntaxError` so the caller can fall back to plain words.
"""

from __future__ import annotations

import functools
import json
import re
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from memosite.expiration import active_at_sql, not_expired_sql
from memosite.paths import path_ancestors, path_matches
from memosite.statuses import live_sql

if TYPE_CHECKING:
    from memosite.index.database import Index

# Column weights for bm25: a word in the title says more than one in the body.
BM25_WEIGHTS = (4.0, 1.0, 2.0, 1.0)  # title, body, tags, and the folded text (entry.folded_text)
# Knowledge outranks the event stream at equal bm25 (``search_facts.weight``, see the schema).
_BM25 = f"bm25(records_fts, {', '.join(str(w) for w in BM25_WEIGHTS)}) * f.weight"
_TRIGRAM_BM25 = "bm25(records_trigram) * f.weight"
MIN_TRIGRAM = 3  # the trigram table finds substrings of at least three characters
# What one substring of an unspaced script a record holds adds to its (negative) rank in the any-term
# reading: about what one word found in the body adds to bm25.
UNSPACED_RANK = 1.0
# Orderings over the matched rows. Relevance is bm25 alone (see the module docstring); the other
# sorts put records matching more of the query's terms first. Flagged-stale records sink in the
# ranking sorts. ``occurrences`` ties go to the most recently seen trap, then the most severe.
ORDERS = {
    "relevance": "flagged, rank, updated DESC, path",
    "occurrences": (
        "matched DESC, flagged, occurrences DESC, last_seen IS NULL, last_seen DESC, severity_weight DESC, "
        "rank, updated DESC, path"
    ),
    "hits": "matched DESC, flagged, hits DESC, rank, updated DESC, path",
    "updated": "matched DESC, updated DESC, rank, path",
}
# Without a query there is nothing to be relevant to (``search --path X`` alone): the records that
# hurt most come first — critical traps on top — then those that bit most often and were used most.
UNRANKED_RELEVANCE = "flagged, severity_weight DESC, occurrences DESC, hits DESC, updated DESC, path"
_ORDER_COLUMNS = (
    "f.rowid AS rid, f.flagged AS flagged, f.occurrences AS occurrences, f.last_seen AS last_seen, "
    "f.severity_weight AS severity_weight, f.hits AS hits, f.updated AS updated, f.path AS path"
)
_TEXT = "r.title || char(10) || r.body || char(10) || r.tags"
# Every join with an FTS5 table is a CROSS JOIN with the FTS table first: probed by rowid from the
# other side, FTS5 evaluates the whole MATCH again for each probe (seconds instead of milliseconds).


class QuerySyntaxError(Exception):
    """SQLite rejected the FTS5 query."""


@dataclass(frozen=True)
class Terms:
    """A query as the index searches it (see the module docstring)."""

    words: tuple[str, ...] = ()
    substrings: tuple[str, ...] = ()
    raw: str | None = None

    @property
    def count(self) -> int:
        return 1 if self.raw is not None else len(self.words) + len(self.substrings)

    def __bool__(self) -> bool:
        return self.count > 0


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
    hidden_kinds: Sequence[str] = ()  # left out unless ``kinds`` names them
    include_pending: bool = False  # records waiting for review are left out unless asked for
    author: str | None = None  # only records whose author holds this (case aside)
    fresh_only: bool = False  # leave out records ``verify`` found drifted or missing


@dataclass(frozen=True)
class Match:
    """One matching record as the index holds it; ``rank`` is bm25 (smaller is better) and
    ``matched`` how many of the query's terms it holds."""

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
    matched: int = 0
    snippet: str = ""
    rowid: int = 0
    last_hit: str | None = None


@dataclass
class Where:
    """A conjunction of SQL conditions with their parameters, in order."""

    clauses: list[str] = field(default_factory=list)
    params: list[Any] = field(default_factory=list)

    def add(self, clause: str, *params: Any) -> None:
        self.clauses.append(clause)
        self.params.extend(params)

    def sql(self) -> str:
        return " AND ".join(self.clauses) if self.clauses else "1"


def _marks(values: Sequence[Any]) -> str:
    return ", ".join("?" for _ in values)


# --- filters ---------------------------------------------------------------------------------


def matching_pattern_sets(index: Index, project: str | None, path: str) -> list[str]:
    """The distinct ``path_patterns`` (as stored) of a project's records, or of every project's,
    that cover ``path``. Only the sets holding a pattern whose literal start could cover the path
    (see :func:`memosite.paths.literal_prefixes`) are read, through ``path_prefixes``; Python's
    :func:`memosite.paths.path_matches` decides once per distinct set. The answer is remembered
    until the index changes."""

    def candidates() -> list[str]:
        starts = path_ancestors(path)
        scope = " AND p.project = ?" if project is not None else ""
        sql = (
            "SELECT DISTINCT f.path_patterns FROM path_prefixes AS p JOIN search_facts AS f ON f.rowid = p.record"
            f" WHERE (p.prefix IN ({_marks(starts)}) OR (p.prefix > ? AND p.prefix < ?)){scope}"
        )
        # Beneath the path: every literal start that begins with ``path/`` ('0' follows '/').
        params: list[Any] = [*starts, f"{path}/", f"{path}0", *([project] if project is not None else [])]
        return [row[0] for row in index.conn.execute(sql, params)]

    known: list[str] = index.remembered(("pattern sets", project, path), candidates)
    return [patterns for patterns in known if _covers(patterns, path)]


def path_match(facts: str, patterns: Sequence[str]) -> tuple[str, list[Any]]:
    """SQL (and its parameters) true when ``facts``' path patterns are one of ``patterns`` (see
    :func:`matching_pattern_sets`)."""
    if not patterns:
        return "0", []
    return f"{facts}.path_patterns IN ({_marks(patterns)})", list(patterns)


def _unpack(found: tuple[str, list[Any]]) -> tuple[Any, ...]:
    return (found[0], *found[1])


def search_scope(index: Index, filters: SearchFilters) -> Where:
    """The conditions of ``filters`` over ``search_facts AS f``."""
    where = Where()
    if filters.project is not None:
        where.add("f.project = ?", filters.project)
    if filters.kinds:
        where.add(f"f.kind IN ({_marks(filters.kinds)})", *filters.kinds)
    else:
        if filters.hidden_kinds:
            where.add(f"f.kind NOT IN ({_marks(filters.hidden_kinds)})", *filters.hidden_kinds)
    expired_visible = filters.include_expired or filters.as_of_iso is not None
    if filters.statuses:
        where.add(f"f.status IN ({_marks(filters.statuses)})", *filters.statuses)
    else:
        live = live_sql("f.status")
        where.add(f"({live} OR f.expired_archive)" if expired_visible else live)
    if filters.as_of_iso is not None:
        where.add(active_at_sql("f.created", "f.expires_at"), filters.as_of_iso, filters.as_of_iso)
    elif not filters.include_expired and "archived" in filters.statuses:
        # Asking for archived records means asking for those gc archived because they expired too.
        where.add(f"({not_expired_sql('f.expires_at')} OR f.status = 'archived')", filters.now_iso)
    elif not filters.include_expired:
        where.add(f"{not_expired_sql('f.expires_at')} AND NOT f.expired_archive", filters.now_iso)
    if not filters.include_pending:
        where.add("NOT f.pending")
    if filters.author is not None:
        where.add("instr(lower(coalesce(f.author, '')), lower(?)) > 0", filters.author)
    if filters.fresh_only:
        where.add(UNTRUSTED_FRESHNESS_SQL)
    for tag in filters.tags:
        where.add("EXISTS (SELECT 1 FROM json_each(f.tags_json) AS t WHERE lower(t.value) = lower(?))", tag)
    if filters.path is not None:
        covering = matching_pattern_sets(index, filters.project, filters.path)
        where.add(*_unpack(path_match("f", covering)))
    return where


# Not found drifted or missing by the last verify (never verified counts as not known to be stale).
UNTRUSTED_FRESHNESS_SQL = "f.path NOT IN (SELECT path FROM verdicts WHERE verdict IN ('drifted', 'missing'))"


@functools.lru_cache(maxsize=65536)
def _covers(patterns_json: str | None, path: str) -> bool:
    # Once per distinct set of patterns and path: the decision is cached on the JSON as stored.
    try:
        patterns = json.loads(patterns_json or "[]")
    except ValueError:
        return False
    return isinstance(patterns, list) and path_matches((str(p) for p in patterns), path)


# --- what matches ----------------------------------------------------------------------------


def _phrase(text: str) -> str:
    return '"' + text.replace('"', '""') + '"'


@dataclass
class _Relation:
    """``WITH`` parts and a ``SELECT`` of the rows in scope matching the terms, with ``matched``,
    ``rank`` and the ordering columns of ``search_facts``."""

    ctes: list[str] = field(default_factory=list)
    cte_params: list[Any] = field(default_factory=list)
    select: str = ""
    params: list[Any] = field(default_factory=list)
    fts_query: str | None = None  # for snippets
    count_later: tuple[str, ...] = ()  # words whose holders ``matched`` has yet to count

    def cte(self, name: str, sql: str, *params: Any) -> None:
        self.ctes.append(f"{name} AS MATERIALIZED ({sql})")
        self.cte_params.extend(params)

    def prefix(self) -> str:
        return f"WITH {', '.join(self.ctes)} " if self.ctes else ""


def _unspaced_texts(relation: _Relation, scope: Where) -> None:
    """The lower-cased text of the records in scope that hold unspaced script (``u_text``)."""
    relation.cte(
        "u_text",
        f"SELECT f.rowid AS rid, lower({_TEXT}) AS t FROM search_facts AS f JOIN records AS r ON r.rowid = f.rowid "
        f"WHERE f.unspaced AND {scope.sql()}",
        *scope.params,
    )


def _holds(substrings: Sequence[str]) -> tuple[list[str], list[str]]:
    return ["(instr(t, lower(?)) > 0)" for _ in substrings], list(substrings)


def relation(
    terms: Terms,
    scope: Where,
    *,
    require_all: bool,
    ranked: bool = True,
    count_words: bool = True,
    holding: str | None = None,
    rowids: tuple[int, int] | None = None,
) -> _Relation:
    """The rows in ``scope`` matching ``terms`` (every term with ``require_all``, else any).
    Unless ``ranked``, ``rank`` and ``matched`` are left at 0: only which rows match (a count).
    Without ``count_words``, an any-term match of words alone leaves ``matched`` at 0 and names the
    words in ``count_later``: how many a row holds is then asked of the few rows shown. ``holding``
    (an FTS5 expression; any-term words only) keeps only the rows that also match it, and counts
    each word's holders among those alone: ranks are as without it. ``rowids`` (``[low, high)``, one
    kind of one project: see :mod:`memosite.index.partitions`; any-term words only) is where the
    rows in scope lie: the word index is read in that range alone."""
    out = _Relation()
    rank = _BM25 if ranked else "0.0"
    if terms.raw is not None:
        out.fts_query = terms.raw
        out.select = (
            f"SELECT {_ORDER_COLUMNS}, 1 AS matched, {rank} AS rank FROM records_fts "
            f"CROSS JOIN search_facts AS f ON f.rowid = records_fts.rowid WHERE records_fts MATCH ? AND {scope.sql()}"
        )
        out.params = [terms.raw, *scope.params]
        return out
    words, substrings = list(terms.words), list(terms.substrings)
    if require_all:
        long_ones = [s for s in substrings if len(s) >= MIN_TRIGRAM]
        short_ones = [s for s in substrings if len(s) < MIN_TRIGRAM]
        extra = Where()
        if short_ones:
            _unspaced_texts(out, scope)
            checks, params = _holds(short_ones)
            out.cte("u_all", f"SELECT rid FROM u_text WHERE {' AND '.join(checks)}", *params)
        trigram = " AND ".join(_phrase(s) for s in long_ones)
        if words:
            out.fts_query = " AND ".join(words)
            if long_ones:
                extra.add("f.rowid IN (SELECT rowid FROM records_trigram WHERE records_trigram MATCH ?)", trigram)
            if short_ones:
                extra.add("f.rowid IN (SELECT rid FROM u_all)")
            out.select = (
                f"SELECT {_ORDER_COLUMNS}, {len(words) + len(substrings)} AS matched, {rank} AS rank "
                f"FROM records_fts CROSS JOIN search_facts AS f ON f.rowid = records_fts.rowid "
                f"WHERE records_fts MATCH ? AND {scope.sql()} AND {extra.sql()}"
            )
            out.params = [out.fts_query, *scope.params, *extra.params]
        elif long_ones:
            if short_ones:
                extra.add("f.rowid IN (SELECT rid FROM u_all)")
            out.select = (
                f"SELECT {_ORDER_COLUMNS}, {len(substrings)} AS matched, {_TRIGRAM_BM25 if ranked else '0.0'} AS rank "
                f"FROM records_trigram CROSS JOIN search_facts AS f ON f.rowid = records_trigram.rowid "
                f"WHERE records_trigram MATCH ? AND {scope.sql()} AND {extra.sql()}"
            )
            out.params = [trigram, *scope.params, *extra.params]
        else:
            out.select = (
                f"SELECT {_ORDER_COLUMNS}, {len(substrings)} AS matched, 0.0 AS rank "
                f"FROM u_all JOIN search_facts AS f ON f.rowid = u_all.rid"
            )
        return out
    # Any term: the words OR-ed (ranked by bm25), each word's rows to count how many a record holds,
    # and the unspaced records holding any of the substrings.
    # Each word's rows, for counting how many a record holds: one set per word, built once.
    narrowed = bool(words) and not substrings and (rowids is not None or holding is not None)
    within = " AND rowid >= ? AND rowid < ?" if narrowed and rowids is not None else ""
    held = [f"(f.rowid IN (SELECT rowid FROM records_fts WHERE records_fts MATCH ?{within}))" for _ in words]
    counted = len(words) > 1 and ranked and (count_words or bool(substrings))
    word_count = " + ".join(held) if counted else "1"
    word_params: list[Any] = []
    restrict, restrict_params = "", list[Any]()
    if narrowed:
        # The rows in scope lie in ``rowids`` and match ``holding``: each word's set is built of
        # those alone (an FTS5 range and intersection, small when ``holding`` is rare), and rows
        # outside them are dropped before anything is read.
        if rowids is not None:
            restrict = " AND records_fts.rowid >= ? AND records_fts.rowid < ?"
            restrict_params += [*rowids]
        if holding is not None:
            # "+": a set to test each row against, never a rowid for the word index to probe (each
            # probe would count every word's holders again for bm25).
            restrict += " AND +records_fts.rowid IN (SELECT rowid FROM records_fts WHERE records_fts MATCH ?)"
            restrict_params.append(holding)
        if counted:
            for word in words:
                word_params += [f"({word}) AND ({holding})" if holding is not None else word, *(rowids or ())]
    elif counted:
        word_params = list(words)
    out.fts_query = " OR ".join(words) if words else None
    if len(words) > 1 and ranked and not counted:
        # Each word's set of rows would be built in full to count, for every match, how many of
        # them it holds; the ranking does not need it, so only the rows shown are asked.
        word_count = "0"
        out.count_later = tuple(words)
    if not substrings:
        out.select = (
            f"SELECT {_ORDER_COLUMNS}, {word_count} AS matched, {rank} AS rank FROM records_fts "
            f"CROSS JOIN search_facts AS f ON f.rowid = records_fts.rowid WHERE records_fts MATCH ?{restrict}"
            f" AND {scope.sql()}"
        )
        out.params = [*word_params, out.fts_query, *restrict_params, *scope.params]
        return out
    _unspaced_texts(out, scope)
    checks, params = _holds(substrings)
    out.cte("u_any", f"SELECT rid, {' + '.join(checks)} AS held FROM u_text WHERE held > 0", *params)
    if words:
        out.cte(
            "w_any",
            f"SELECT f.rowid AS rid, {rank} AS rank FROM records_fts CROSS JOIN search_facts AS f "
            f"ON f.rowid = records_fts.rowid WHERE records_fts MATCH ? AND {scope.sql()}",
            out.fts_query,
            *scope.params,
        )
        word_count = word_count if len(words) > 1 else "(w_any.rid IS NOT NULL)"
        candidates = "SELECT rid FROM w_any UNION SELECT rid FROM u_any"
        joins = "LEFT JOIN w_any ON w_any.rid = c.rid LEFT JOIN u_any ON u_any.rid = c.rid"
        matched = f"({word_count.replace('f.rowid', 'c.rid')}) + coalesce(u_any.held, 0)"
        ranking = f"coalesce(w_any.rank, 0.0) - coalesce(u_any.held, 0) * {UNSPACED_RANK}"
    else:
        candidates = "SELECT rid FROM u_any"
        joins = "JOIN u_any ON u_any.rid = c.rid"
        matched, ranking = "u_any.held", f"-u_any.held * {UNSPACED_RANK}"
    out.select = (
        f"SELECT {_ORDER_COLUMNS}, {matched} AS matched, {ranking} AS rank FROM ({candidates}) AS c "
        f"{joins} JOIN search_facts AS f ON f.rowid = c.rid"
    )
    out.params = word_params
    return out


def _run(index: Index, sql: str, params: Sequence[Any], *, parsed_query: bool) -> list[sqlite3.Row]:
    # No Python function is registered on the connection for search: (re)defining one expires
    # every prepared statement of the connection, and each search would parse its SQL again.
    try:
        return index.conn.execute(sql, list(params)).fetchall()
    except sqlite3.OperationalError as exc:
        if parsed_query:
            raise QuerySyntaxError(str(exc)) from exc  # a stray quote, ``AND(``, ``-``, ``col:``
        raise


@dataclass(frozen=True)
class Ranking:
    """The first rows of a search in order — ``(rowid, rank, matched)`` — how many match in all, and
    what :func:`load_ranked` needs to load them as matches with snippets."""

    rows: list[tuple[int, float | None, int]]
    total: int
    fts_query: str | None = None
    substrings: tuple[str, ...] = ()
    count_later: tuple[str, ...] = ()  # ``matched`` of the rows is counted when they are loaded
    exact: bool = True  # False: counting stopped at ``total``, at least that many match
    words: tuple[str, ...] = ()  # the words searched (FTS5 expressions), and
    require_all: bool = True  # whether a match holds every term or any of them


def find_ranked(
    index: Index,
    terms: Terms | None,
    filters: SearchFilters,
    *,
    sort: str,
    limit: int,
    require_all: bool = True,
    count_limit: int | None = None,
) -> Ranking:
    """The first ``limit`` matches in ``sort`` order as rows (nothing loaded), and the total. With
    ``count_limit`` the matches beyond the first ``limit`` are counted up to ``count_limit`` (and
    always past ``limit``) only: when the count reaches it, ``total`` is that bound and ``exact`` is
    False (at least that many match)."""
    scope = search_scope(index, filters)
    if not terms:
        order = UNRANKED_RELEVANCE if sort == "relevance" else ORDERS[sort]
        # The filters (a path pattern test per record) run once; the count comes from the same rows.
        rows = _run(
            index,
            f"WITH m AS MATERIALIZED (SELECT {_ORDER_COLUMNS}, 0 AS matched, NULL AS rank FROM search_facts AS f "
            f"WHERE {scope.sql()}) SELECT *, (SELECT count(*) FROM m) AS total FROM m ORDER BY {order} LIMIT ?",
            [*scope.params, limit],
            parsed_query=False,
        )
        total = int(rows[0]["total"]) if rows else 0
        return Ranking([(int(row["rid"]), None, 0) for row in rows], total)
    # The first ``limit`` rows come out of SQLite's top-N sort, every match read once and none
    # kept but the best; how many match in all is counted apart (without bm25), only when the
    # first rows fill the page.
    found = relation(terms, scope, require_all=require_all, count_words=sort != "relevance")
    rows = _run(
        index,
        f"{found.prefix()}SELECT * FROM ({found.select}) ORDER BY {ORDERS[sort]} LIMIT ?",
        [*found.cte_params, *found.params, limit],
        parsed_query=True,
    )
    total, exact = len(rows), True
    if total >= limit:
        counted = relation(terms, scope, require_all=require_all, ranked=False)
        # Counting every match reads every match again (2.5 ms of a search at 10,000 records when
        # most records hold the word); a caller content with "at least N" stops at N.
        bound = max(count_limit, limit + 1) if count_limit is not None else None
        source = f"SELECT 1 FROM ({counted.select}) LIMIT ?" if bound is not None else counted.select
        total = int(
            _run(
                index,
                f"{counted.prefix()}SELECT count(*) FROM ({source})",
                [*counted.cte_params, *counted.params, *([bound] if bound is not None else [])],
                parsed_query=True,
            )[0][0]
        )
        exact = bound is None or total < bound
    ranked: list[tuple[int, float | None, int]] = [
        (int(row["rid"]), float(row["rank"]), int(row["matched"])) for row in rows
    ]
    return Ranking(
        ranked,
        total,
        found.fts_query,
        tuple(terms.substrings),
        found.count_later,
        exact,
        tuple(terms.words),
        require_all,
    )


def load_ranked(
    index: Index, ranking: Ranking, rows: Sequence[tuple[int, float | None, int]] | None = None
) -> list[Match]:
    """``rows`` of ``ranking`` (all of them when None) as matches, with snippets, in that order."""
    return _load(
        index,
        list(ranking.rows if rows is None else rows),
        ranking.fts_query,
        ranking.substrings,
        count_later=ranking.count_later,
    )


def find(
    index: Index,
    terms: Terms | None,
    filters: SearchFilters,
    *,
    sort: str,
    limit: int,
    require_all: bool = True,
) -> tuple[list[Match], int]:
    """The first ``limit`` matches in ``sort`` order, and how many match in all."""
    ranking = find_ranked(index, terms, filters, sort=sort, limit=limit, require_all=require_all)
    return load_ranked(index, ranking), ranking.total


def scope_weights(index: Index, filters: SearchFilters, rowids: Sequence[int] | None = None) -> dict[int, float]:
    """The records ``filters`` keep — among ``rowids``, or all of them when None — with the factor
    each one's relevance is weighted by (``search_facts.weight``: knowledge outranks the event stream)."""
    scope = search_scope(index, filters)
    if rowids is not None and filters.path is not None:
        # The records a path keeps are found through the pattern sets' index, and are few: reading
        # them all costs less than looking up each of many rowids (0.03-0.15 ms against 1.4-1.6 ms
        # for 2,000 at 10,000 records), as a search by meaning does for a narrow scope.
        wanted = set(rowids)
        return {rowid: weight for rowid, weight in weights_in_scope(index, scope).items() if rowid in wanted}
    return weights_in_scope(index, scope, rowids)


def weights_in_scope(index: Index, scope: Where, rowids: Sequence[int] | None = None) -> dict[int, float]:
    """The records of ``scope`` (conditions over ``search_facts AS f``) — among ``rowids``, or all of
    them when None — each with its ``weight``."""
    if rowids is None:
        sql = f"SELECT f.rowid, f.weight FROM search_facts AS f WHERE {scope.sql()}"
        return {int(row[0]): float(row[1]) for row in index.conn.execute(sql, scope.params)}
    # The few rowids drive the loop, each looked up by rowid: left to itself the planner takes the
    # project's index and tests every record of the project against the list (2 ms at 10,000).
    # One JSON parameter, not one per rowid: the statement stays the same from search to search.
    sql = (
        "SELECT f.rowid, f.weight FROM json_each(?) AS ids CROSS JOIN search_facts AS f ON f.rowid = ids.value "
        f"WHERE {scope.sql()}"
    )
    return {int(row[0]): float(row[1]) for row in index.conn.execute(sql, [json.dumps(list(rowids)), *scope.params])}


def flagged_among(index: Index, rowids: Sequence[int]) -> set[int]:
    """Which of ``rowids`` are flagged stale."""
    if not rowids:
        return set()
    sql = f"SELECT rowid FROM search_facts WHERE flagged AND rowid IN ({_marks(rowids)})"
    return {int(row[0]) for row in index.conn.execute(sql, list(rowids))}


def load_matches(index: Index, rowids: Sequence[int], fts_query: str | None, substrings: Sequence[str]) -> list[Match]:
    """The records of ``rowids`` as matches, in that order, with snippets for the query when given
    (``rank`` None, ``matched`` 0: found by meaning, not by words); a record the query's words do not
    reach gets the start of its body as its snippet."""
    return _load(index, [(rowid, None, 0) for rowid in rowids], fts_query, substrings, head=True)


def exists(index: Index, terms: Terms, filters: SearchFilters, *, require_all: bool = True) -> bool:
    """Whether any record in scope matches ``terms`` (all of them with ``require_all``): the first
    matching row answers, nothing is ranked or counted.

    A prefix word (``"retr"*``) makes FTS5 merge every posting of every word it starts before the
    first row comes out; a record holding the whole word holds the prefix too, so the whole words
    are asked first and the prefixes only when they find nothing."""
    scope = search_scope(index, filters)
    whole = tuple(_WHOLE_WORD.sub(r"\1", word) for word in terms.words)
    asked = [terms] if whole == terms.words or terms.raw is not None else [replace(terms, words=whole), terms]
    for reading in asked:
        found = relation(reading, scope, require_all=require_all, ranked=False)
        sql = f"{found.prefix()}SELECT 1 FROM ({found.select}) LIMIT 1"
        if _run(index, sql, [*found.cte_params, *found.params], parsed_query=True):
            return True
    return False


# A prefix spelling of memosite.query (``"word"*``): the whole word is the quoted part.
_WHOLE_WORD = re.compile(r'("(?:[^"]|"")*")\*')


_RESULT_COLUMNS = (
    "r.rowid AS rowid, r.id, r.kind, r.project, r.title, r.status, r.path, r.severity, r.layer, r.tags_json, "
    "r.path_patterns, r.created, r.updated, r.expires_at, f.occurrences, r.hits, r.helpful, r.stale, r.body, "
    "json_extract(r.frontmatter, '$.archivedReason') AS archived_reason, r.folded, r.last_hit"
)
_SNIPPET_CONTEXT = 48


def substring_snippet(text: str, substrings: Sequence[str]) -> str:
    """A snippet of ``text`` around the first of ``substrings`` it holds, marked ``**…**``."""
    lowered = text.lower()
    for needle in substrings:
        at = lowered.find(needle.lower())
        if at < 0:
            continue
        start, end = max(0, at - _SNIPPET_CONTEXT), min(len(text), at + len(needle) + _SNIPPET_CONTEXT)
        found = text[at : at + len(needle)]
        before, after = text[start:at], text[at + len(needle) : end]
        return f"{'…' if start else ''}{before}**{found}**{after}{'…' if end < len(text) else ''}"
    return ""


def _head(body: str) -> str:
    """The start of a body, as a snippet: about as long as ``snippet()``'s."""
    words = body.split()
    return " ".join(words[:16]) + (" …" if len(words) > 16 else "")


_SNIPPET_TABLE = (
    "CREATE VIRTUAL TABLE IF NOT EXISTS temp.snippet_rows USING fts5(title, body, tags, folded, "
    "tokenize='porter unicode61 remove_diacritics 2')"
)


# How much of a body snippet() reads: its cost grows with the square of the matches in what it is
# given (a 1 MB body full of the searched word took 23 s, 2 MB a minute), and a snippet of the
# first 32,000 characters is the same for every record written by hand or by an agent's usual note.
SNIPPET_SOURCE_CHARS = 32_000


def _snippets(
    index: Index, rows: dict[int, sqlite3.Row], fts_query: str, count_words: Sequence[str] = ()
) -> tuple[dict[int, str], dict[int, int]]:
    """``snippet()`` of the start of the body of each shown row (:data:`SNIPPET_SOURCE_CHARS`), and
    how many of ``count_words`` that start holds. Asked of ``records_fts`` itself, each row costs a
    walk of the query's whole posting list (a
    millisecond per row for a common word), so the few shown rows are put in a connection-private
    FTS5 table with the same tokenizer and asked there."""
    with index.scratch_writes() as conn:
        conn.execute(_SNIPPET_TABLE)
        # One savepoint for the rows (it touches only the temp database: no lock on the index).
        conn.execute("SAVEPOINT snippet_rows")
        conn.execute("DELETE FROM temp.snippet_rows")
        conn.executemany(
            "INSERT INTO temp.snippet_rows (rowid, title, body, tags, folded) VALUES (?, ?, ?, ?, ?)",
            [
                (
                    rowid,
                    row["title"],
                    row["body"][:SNIPPET_SOURCE_CHARS],
                    " ".join(json.loads(row["tags_json"])),
                    (row["folded"] or "")[:SNIPPET_SOURCE_CHARS],
                )
                for rowid, row in rows.items()
            ],
        )
        conn.execute("RELEASE snippet_rows")
    conn = index.conn
    held: dict[int, int] = {}
    try:
        for word in count_words:
            for (rowid,) in conn.execute("SELECT rowid FROM temp.snippet_rows WHERE snippet_rows MATCH ?", [word]):
                held[rowid] = held.get(rowid, 0) + 1
        return {
            found[0]: found[1]
            for found in conn.execute(
                "SELECT rowid, snippet(snippet_rows, 1, '**', '**', '…', 16) FROM temp.snippet_rows "
                "WHERE snippet_rows MATCH ?",
                [fts_query],
            )
        }, held
    except sqlite3.OperationalError:
        return {}, held


def _load(
    index: Index,
    ranked: list[tuple[int, float | None, int]],
    fts_query: str | None,
    substrings: Sequence[str],
    *,
    head: bool = False,
    count_later: Sequence[str] = (),
) -> list[Match]:
    if not ranked:
        return []
    conn = index.conn
    rowids = [rowid for rowid, _, _ in ranked]
    marks = _marks(rowids)
    rows = {
        row["rowid"]: row
        for row in conn.execute(
            f"SELECT {_RESULT_COLUMNS} FROM records AS r JOIN search_facts AS f ON f.rowid = r.rowid "
            f"WHERE r.rowid IN ({marks})",
            rowids,
        )
    }
    snippets, held = _snippets(index, rows, fts_query, count_later) if fts_query is not None else ({}, {})
    found = []
    for rowid, rank, matched in ranked:
        row = rows.get(rowid)
        if row is None:
            continue
        if count_later:
            matched = held.get(rowid, 0)
        snippet = snippets.get(rowid) or (substring_snippet(row["body"], substrings) if substrings else "")
        if not snippet and head:
            snippet = _head(row["body"])
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
                matched=matched,
                snippet=" ".join(snippet.split()),
                rowid=rowid,
                last_hit=row["last_hit"],
            )
        )
    return found
