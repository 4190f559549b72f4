"""Search over the index: FTS5 ``bm25()`` over title, body and tags, every filter applied in SQL.

Rules a caller can rely on:

* A query is read the way a person means it (:mod:`memosite.query`): records holding **all** its
  words first; when those are fewer than ``limit``, records holding **any** of them follow, those
  holding more of the words first. Stop words are ignored, the last word is also a prefix, quoted
  phrases stay phrases, diacritics do not matter, and text of scripts written without spaces
  (Chinese, Japanese …) is found as a substring. ``match`` is ``all`` when some record holds every
  term (``holding_all`` says how many; records holding only some may follow them), ``any`` when
  none does but some hold at least one, ``None`` when nothing matches; ``bootstrap`` reports its
  ``match`` by the same rule. The result also says the ``terms`` it searched and, per hit, how many
  it holds. ``total`` counts every match, unless the caller asks for no exact total
  (``exact_total=False``, MCP search): counting then stops at :data:`COUNT_LIMIT` and
  ``total_exact`` says whether ``total`` is every match or a lower bound; the hits are the same.
* A query in FTS5 syntax (``OR``, ``NOT``, ``NEAR(…)``, ``title:word``, parentheses) is run as
  written; when SQLite rejects it or it finds nothing, its words are searched as plain words
  instead, never raising.
* Expired records are left out unless ``include_expired`` (they come back stamped ``expired``).
  ``as_of`` instead returns what was active at that moment: ``created <= as_of < expires_at``.
  A record gc archived *because it expired* (``archivedReason: expired``) is still an expired record
  for both of these, so retrospection keeps working after a gc pass.
* Archived and superseded records are left out unless ``status`` asks for them; asking for
  ``archived`` shows every archived record, expired or not. Scratch records (private working notes)
  are left out unless ``kinds`` names ``scratch``.
* ``path`` keeps records whose ``pathPatterns`` cover that path: ``*`` and ``?`` stay inside one
  segment, ``**`` spans any number of segments, a pattern names its whole subtree
  (``migrations/versions`` covers ``migrations/versions/0012.py``), and a directory given as the
  path covers the patterns beneath it (``src/payments`` finds ``src/payments/client.py``).
* ``score`` is ``-bm25`` (larger is better); records without a query score ``None``. A trap without
  ``occurrences`` reports (and sorts) as seen once.
* Without a query (``path`` or other filters alone) the ``relevance`` order is by severity —
  critical first, unrated last — then occurrences, hits and the newest update.
* Records waiting for review are left out unless ``include_pending``; then they come back marked
  ``pending`` (``unreviewed`` in text).
* Relevance is hybrid when ``memosite[semantic]`` is installed and ``search.semantic`` is not false
  (:mod:`memosite.hybrid`): the words' ranking above and a ranking by meaning (the query's vector
  against each record's) are fused, so a record that says the same thing in other words is found
  too. ``ranking`` says which was used (``hybrid`` or ``words``). With hybrid off — or a query in
  FTS5 syntax, or another sort — the results are exactly the words' ranking. ``explain`` gives each
  hit its place in each ranking (``bm25Rank``, ``vectorRank``, ``similarity``, ``fusedScore``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from memosite import hybrid
from memosite.errors import InvalidArguments, StorageError
from memosite.expiration import is_expired_iso, parse_as_of
from memosite.index import fts, queries, verdicts
from memosite.index.database import Index
from memosite.kinds import KINDS, UNSEARCHED_KINDS
from memosite.paths import normalize_path, path_matches
from memosite.query import ParsedQuery, parse_query
from memosite.schema import format_iso, is_flagged_stale, utc_now
from memosite.statuses import STATUSES
from memosite.vault import Vault

if TYPE_CHECKING:
    from memosite.embedding import Embedder

__all__ = ["SearchHit", "SearchResult", "normalize_path", "path_matches", "search_records"]

SORTS = tuple(fts.ORDERS)
MAX_LIMIT = 1000
# Where a search that need not count every match stops counting (``exact_total=False``): as many as
# the largest page shows, so a total below it is always exact.
COUNT_LIMIT = MAX_LIMIT
# Scratch records are private working notes: found only when asked for by kind.
HIDDEN_KINDS = UNSEARCHED_KINDS  # private working notes: searched only when asked for by kind
MatchMode = Literal["all", "any"]
T = TypeVar("T")


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
    last_hit: str | None = None
    helpful: int = 0
    stale: int = 0
    path_patterns: list[str] = field(default_factory=list)
    snippet: str = ""
    matched_terms: int | None = None
    freshness: str | None = None  # the last verify's verdict on its cited code, when it cites any
    pending: bool = False  # waiting for a person's review (found only with include_pending)
    explain: dict[str, Any] | None = None  # where each ranking put it (search --explain)

    @property
    def flagged_stale(self) -> bool:
        return is_flagged_stale(self.helpful, self.stale)

    @property
    def flags(self) -> list[str]:
        """What a listing marks the hit with: ``expired``, ``stale``, ``unreviewed``."""
        marks = (("expired", self.expired), ("stale", self.flagged_stale), ("unreviewed", self.pending))
        return [name for name, on in marks if on]

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
            "lastHit": self.last_hit,
            "helpfulCount": self.helpful,
            "staleCount": self.stale,
            "flaggedStale": self.flagged_stale,
            "pathPatterns": self.path_patterns,
            "snippet": self.snippet,
            "matchedTerms": self.matched_terms,
            "freshness": self.freshness,
            "pending": self.pending,
            **({"explain": self.explain} if self.explain is not None else {}),
        }


Ranking = Literal["hybrid", "words"]


@dataclass
class SearchResult:
    results: list[SearchHit]
    total: int
    query: str | None = None
    match: MatchMode | None = None
    terms: list[str] = field(default_factory=list)
    hits_recorded: list[str] = field(default_factory=list)
    holding_all: int | None = None  # with a query: how many of ``total`` hold every term
    ranking: Ranking = "words"
    total_exact: bool = True  # False: ``total`` (and ``holding_all``) is a lower bound, counting stopped there

    def to_json(self) -> dict[str, Any]:
        return {
            "results": [hit.to_json() for hit in self.results],
            "total": self.total,
            "query": self.query,
            "match": self.match,
            "terms": self.terms,
            "holdingAll": self.holding_all,
            "ranking": self.ranking,
            "hitsRecorded": self.hits_recorded,
            "totalExact": self.total_exact,
        }


# --- the query pipeline ----------------------------------------------------------------------


@dataclass
class Found:
    """What the pipeline found for one query: the matches, how many in all, which reading."""

    matches: list[fts.Match]
    total: int
    match: MatchMode | None
    terms: list[str]
    holding_all: int = 0  # how many of ``total`` hold every term
    raw: bool = False  # the query ran as FTS5 syntax, as written
    fused: list[hybrid.Ranked] | None = None  # the hybrid order, when meaning took part
    ranking: fts.Ranking | None = None  # the rows ``matches`` were loaded from (maybe more of them)
    exact: bool = True  # False: ``total`` and ``holding_all`` are lower bounds (see ``count_limit``)


def find_matches(
    index: Index,
    text: str | None,
    filters: fts.SearchFilters,
    *,
    sort: str,
    limit: int,
    load: int | None = None,
    page: int | None = None,
    count_limit: int | None = None,
) -> Found:
    """The one query pipeline of search, bootstrap and MCP search (see the module docstring): the
    first ``limit`` matches, of which the first ``load`` (all by default) are loaded as ``matches``;
    ``ranking`` holds them all. The any-word reading follows when the strict one finds fewer than
    ``page`` (``limit`` by default): more candidates than a page read the query as a page would.
    ``count_limit`` stops counting the matches there (:func:`memosite.index.fts.find_ranked`):
    ``exact`` then says whether ``total`` is every match or a lower bound."""
    load = limit if load is None else load

    def loaded(ranking: fts.Ranking, match: MatchMode | None, terms: list[str], holding: int, **extra: Any) -> Found:
        matches = fts.load_ranked(index, ranking, ranking.rows[:load])
        return Found(matches, ranking.total, match, terms, holding, ranking=ranking, exact=ranking.exact, **extra)

    if text is None:
        ranking = fts.find_ranked(index, None, filters, sort=sort, limit=limit)
        return loaded(ranking, None, [], ranking.total)

    def as_written(terms: fts.Terms) -> Found | None:
        ranking = fts.find_ranked(index, terms, filters, sort=sort, limit=limit, count_limit=count_limit)
        return loaded(ranking, "all", [str(terms.raw)], ranking.total, raw=True) if ranking.rows else None

    found, parsed = _raw_then_words(text, as_written)
    if found is not None:
        return found
    if parsed.empty:
        return Found([], 0, None, [])
    try:
        ranking, match, terms, holding = _all_then_any(
            index,
            parsed,
            filters,
            sort=sort,
            limit=limit,
            page=limit if page is None else page,
            count_limit=count_limit,
        )
    except fts.QuerySyntaxError as exc:
        raise StorageError(f"search failed: {exc}") from exc
    return loaded(ranking, match, terms, holding)


def find_hybrid(
    vault: Vault,
    text: str,
    filters: fts.SearchFilters,
    *,
    limit: int,
    embedder: Embedder,
    count_limit: int | None = None,
) -> Found:
    """:func:`find_matches` in relevance order, fused with the ranking by meaning (see the module
    docstring). A query in FTS5 syntax, or with a "quoted phrase", asks for exact words: it is
    ranked by words alone."""
    from memosite.refresh import fill_missing_vectors

    index = vault.index()
    # The words' reading is the one a search by words alone would answer with (the any-word reading
    # only when the strict one fills no page), with more of its candidates.
    lexical = find_matches(
        index,
        text,
        filters,
        sort="relevance",
        limit=max(limit, hybrid.CANDIDATES),
        load=0,
        page=limit,
        count_limit=count_limit,
    )
    rows = lexical.ranking.rows if lexical.ranking is not None else []
    if lexical.raw or any(term.kind == "phrase" for term in parse_query(text).terms):
        return find_matches(index, text, filters, sort="relevance", limit=limit, count_limit=count_limit)
    fill_missing_vectors(vault, embedder)
    meaning = hybrid.rank_by_meaning(index, embedder, text, filters)
    candidates = [*(row[0] for row in rows), *meaning.rowids]
    fused = hybrid.fuse([(row[0], row[1]) for row in rows], meaning, fts.flagged_among(index, candidates))
    shown = fused[:limit]
    by_words = {row[0]: row for row in rows}
    # Only the records shown are loaded: those the words found with their snippets, the others too.
    known = {}
    if lexical.ranking is not None:
        words_rows = [by_words[ranked.rowid] for ranked in shown if ranked.rowid in by_words]
        known = {match.rowid: match for match in fts.load_ranked(index, lexical.ranking, words_rows)}
    found_by_meaning = [ranked.rowid for ranked in shown if ranked.rowid not in by_words]
    known.update((match.rowid, match) for match in fts.load_matches(index, found_by_meaning, None, ()))
    lexical.matches = [known[ranked.rowid] for ranked in shown if ranked.rowid in known]
    lexical.total += _found_by_meaning_alone(
        index, lexical, [ranked.rowid for ranked in fused if ranked.lexical_rank is None]
    )
    lexical.fused = shown
    return lexical


def _found_by_meaning_alone(index: Index, lexical: Found, beyond: list[int]) -> int:
    """How many of ``beyond`` — the records meaning brought that are not among the words'
    candidates — the words do not match either: what they add to the words' total. The words may
    match more records than their candidates, and those are counted already; when counting stopped
    at a bound, the bound stays (at least that many match)."""
    ranking = lexical.ranking
    if ranking is None or len(ranking.rows) >= lexical.total or not beyond:
        return len(beyond)  # every record the words match is a candidate
    if not lexical.exact:
        return 0
    return len(beyond) - len(queries.matching(index, ranking, beyond))


def _find_by_meaning_too(
    vault: Vault, text: str, filters: fts.SearchFilters, *, limit: int, count_limit: int | None = None
) -> Found | None:
    """The hybrid search of ``text`` (:func:`find_hybrid`), or None where only words can rank: hybrid
    is off or not installed, a "quoted phrase", FTS5 syntax that finds something as written, a query
    the model cannot read, an index without vectors. None of those loads the model."""
    from memosite.refresh import semantic_embedder

    if not vault.config.search_semantic:
        return None
    parsed = parse_query(text)
    if any(term.kind == "phrase" for term in parsed.terms):
        return None
    if parsed.raw is not None:
        as_written = find_matches(vault.index(), text, filters, sort="relevance", limit=limit, count_limit=count_limit)
        if as_written.raw:
            return as_written
    embedder = semantic_embedder(vault, text)
    if embedder is None:
        return None
    return find_hybrid(vault, text, filters, limit=limit, embedder=embedder, count_limit=count_limit)


def match_of(index: Index, text: str, filters: fts.SearchFilters) -> MatchMode | None:
    """The ``match`` :func:`find_matches` would report for ``text`` — ``all`` when a record in
    scope holds every term, ``any`` when records hold only some, None for none — by existence
    tests alone (a brief reports it without ranking or counting a search of its own)."""
    written: MatchMode | None
    written, parsed = _raw_then_words(text, lambda terms: "all" if fts.exists(index, terms, filters) else None)
    if written is not None:
        return written
    if parsed.empty:
        return None
    try:
        if fts.exists(index, parsed.all_terms(), filters):
            return "all"
        loose = parsed.loosens and fts.exists(index, parsed.any_terms(), filters, require_all=False)
    except fts.QuerySyntaxError as exc:
        raise StorageError(f"search failed: {exc}") from exc
    return "any" if loose else None


def _raw_then_words(text: str, as_written: Callable[[fts.Terms], T | None]) -> tuple[T | None, ParsedQuery]:
    """``as_written``'s answer for a query that uses FTS5 syntax, when SQLite takes it and it finds
    something; else None and the query's plain words. Not valid FTS5 syntax (a stray quote,
    ``AND(``, ``col:``), or a sentence that only looks like it (``add a NOT NULL column``), is
    searched as words."""
    parsed = parse_query(text)
    if parsed.raw is None:
        return None, parsed
    try:
        answer = as_written(fts.Terms(raw=parsed.raw))
    except fts.QuerySyntaxError:
        answer = None
    return (answer, parsed) if answer is not None else (None, parse_query(text, plain=True))


def _all_then_any(
    index: Index,
    parsed: ParsedQuery,
    filters: fts.SearchFilters,
    *,
    sort: str,
    limit: int,
    page: int,
    count_limit: int | None = None,
) -> tuple[fts.Ranking, MatchMode | None, list[str], int]:
    """The ranking of the strict reading, or of the loose one when the strict finds fewer than
    ``page``; ``match``, the terms searched and how many hold every term."""
    strict = fts.find_ranked(index, parsed.all_terms(), filters, sort=sort, limit=limit, count_limit=count_limit)
    total = strict.total
    if len(strict.rows) < min(page, limit) and parsed.loosens:
        # Fewer rows than the page: the strict total is every match (never a bound), below any bound
        # of the loose count (which is past ``limit``), so the comparison below holds with bounds too.
        loose = fts.find_ranked(
            index, parsed.any_terms(), filters, sort=sort, limit=limit, require_all=False, count_limit=count_limit
        )
        if loose.total > total:
            # Records holding some terms were added after those holding all: ``match`` still says
            # whether any record holds every term, not which pass ran last.
            return loose, "all" if total else "any", parsed.labels(loose=True), total
    return strict, "all" if total else None, parsed.labels(), total


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


# --- search ---


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
    include_pending: bool = False,
    author: str | None = None,
    explain: bool = False,
    now: datetime | None = None,
    exact_total: bool = True,
) -> SearchResult:
    """Find records of ``project`` (every project when None) matching ``query`` and the filters.

    ``total`` counts every match, ``results`` holds the first ``limit`` of them. Without
    ``exact_total`` counting stops at :data:`COUNT_LIMIT` matches (or just past ``limit``, when
    larger): ``total_exact`` is then False and ``total`` a lower bound, at least that many match.
    The results are the same either way. ``explain`` gives each hit its place in each ranking. A
    read: acknowledging the records a caller used counts their hits through
    :func:`memosite.hits.search_counting_hits`.
    """
    from memosite.refresh import ensure_index

    now = now or utc_now()
    if sort not in SORTS:
        raise InvalidArguments(f"invalid sort {sort!r}: expected one of {', '.join(SORTS)}")
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise InvalidArguments(f"invalid limit {limit!r}: expected 1 to {MAX_LIMIT}")
    if query is not None and not isinstance(query, str):
        raise InvalidArguments("the query must be text")
    now_iso = format_iso(now)
    filters = fts.SearchFilters(
        project=project,
        now_iso=now_iso,
        kinds=_normalize_kinds([kinds] if isinstance(kinds, str) else kinds),
        statuses=_normalize_statuses(status),
        # One tag or kind given as text is that one value, never its letters.
        tags=[t for t in ([tags] if isinstance(tags, str) else tags or ()) if t and t.strip()],
        path=normalize_path(path) if path is not None else None,
        include_expired=include_expired,
        as_of_iso=format_iso(parse_as_of(as_of)) if as_of is not None else None,
        hidden_kinds=HIDDEN_KINDS,
        include_pending=include_pending,
        author=author.strip() if isinstance(author, str) and author.strip() else None,
    )
    ensure_index(vault)
    text = query.strip() if isinstance(query, str) and query.strip() else None
    count_limit = None if exact_total else COUNT_LIMIT
    found = (
        _find_by_meaning_too(vault, text, filters, limit=limit, count_limit=count_limit)
        if text is not None and sort == "relevance"
        else None
    )
    if found is None:
        found = find_matches(vault.index(), text, filters, sort=sort, limit=limit, count_limit=count_limit)
    hits = [_hit(match, now_iso, found.match) for match in found.matches]
    if explain:
        _explain(hits, found)
    marks = verdicts.for_paths(vault.index(), [hit.path for hit in hits])
    pending = _pending_paths(vault.index(), {hit.project for hit in hits}) if include_pending and hits else set()
    for hit in hits:
        stored = marks.get(hit.path)
        hit.freshness = stored.verdict if stored is not None else None
        hit.pending = hit.path in pending
    return SearchResult(
        results=hits,
        total=found.total,
        query=text,
        match=found.match,
        terms=found.terms,
        holding_all=found.holding_all if found.match is not None else None,
        ranking="hybrid" if found.fused is not None else "words",
        total_exact=found.exact,
    )


def _explain(hits: list[SearchHit], found: Found) -> None:
    """Each hit's place in the words' ranking and in the meaning's, and the fused score."""
    fused = {ranked.rowid: ranked for ranked in found.fused or ()}
    for position, (hit, match) in enumerate(zip(hits, found.matches, strict=True), 1):
        ranked = fused.get(match.rowid)
        if ranked is not None:
            hit.explain = ranked.to_json()
        else:
            words = position if match.rank is not None else None
            hit.explain = {"bm25Rank": words, "vectorRank": None, "similarity": None, "fusedScore": None}


def _pending_paths(index: Index, projects: set[str]) -> set[str]:
    """The records waiting for review in ``projects`` (few: one query per project)."""
    return {entry.path for project in sorted(projects) for entry in index.pending_review(project)}


def _hit(match: fts.Match, now_iso: str, mode: MatchMode | None) -> SearchHit:
    expired = is_expired_iso(match.expires_at, now_iso) or (
        match.status == "archived" and match.archived_reason == "expired"
    )
    return SearchHit(
        id=match.id,
        kind=match.kind,
        project=match.project,
        title=match.title,
        status=match.status,
        path=match.path,
        score=round(-match.rank, 4) if match.rank is not None else None,
        expired=expired,
        severity=match.severity,
        tags=match.tags,
        created=match.created,
        updated=match.updated,
        expires_at=match.expires_at,
        layer=match.layer,
        occurrences=match.occurrences,
        hits=match.hits,
        last_hit=match.last_hit,
        helpful=match.helpful,
        stale=match.stale,
        path_patterns=match.path_patterns,
        snippet=match.snippet,
        matched_terms=match.matched if mode is not None else None,
    )
