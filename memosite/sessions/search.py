"""BM25 search over the event text of a project's sessions.

Scoring is Okapi BM25 with k1 = 1.2 and b = 0.75 over text chunks (at most CHUNK_TOKENS tokens
of one event), idf = ln(1 + (N - df + 0.5) / (df + 0.5)), with N, df and the average chunk
length taken over every session searched. Query words count once each.

The only other factor is a mild recency multiplier, ``1 + 0.1 * 0.5 ** (age_days / 7)``: a
chunk written at the same moment as the newest chunk searched gets x1.1, one a week older
x1.05, and old ones tend to x1.0. Age is measured from the newest chunk, not the clock, so a
search is reproducible. Equal final scores are ordered by chunk id,
``<session-id>:<seq, 12 digits>:<part, 4 digits>``, ascending; a grounded fact of vtcode's
``derived/memory.json`` is ``<session-id>:fact:<its index, 4 digits>:<part>`` (a hit of type
``fact`` with seq 0, no turn and no time).
"""

from __future__ import annotations

import heapq
import math
from bisect import bisect_right
from dataclasses import dataclass, field
from itertools import compress, repeat
from operator import add, mul, truediv
from pathlib import Path
from typing import Any

from memosite.errors import InvalidArguments, StorageError
from memosite.sessions.catalog import iter_sessions
from memosite.sessions.derived import vtcode_grounded_facts
from memosite.sessions.events import FACT, decode_event
from memosite.sessions.lines import line_numbers, read_line_at
from memosite.sessions.paths import SessionPaths, sessions_root
from memosite.sessions.postings import (
    CHUNK_TOKENS,
    SessionIndex,
    grounded_fact_offset,
    searchable_text,
    session_index,
)
from memosite.sessions.tokens import query_terms, token_spans
from memosite.vault import Vault

K1 = 1.2
B = 0.75
RECENCY_WEIGHT = 0.1
RECENCY_HALF_LIFE_DAYS = 7.0
SNIPPET_CHARS = 160
# Past this many postings per contender, a pruned term is scored whole rather than by bisect.
WHOLE_TERM_FACTOR = 16
_SECONDS_PER_DAY = 86400.0


def bm25_idf(chunks: int, document_frequency: int) -> float:
    return math.log(1.0 + (chunks - document_frequency + 0.5) / (document_frequency + 0.5))


def recency_multiplier(age_days: float) -> float:
    return float(1.0 + RECENCY_WEIGHT * 0.5 ** (max(0.0, age_days) / RECENCY_HALF_LIFE_DAYS))


def chunk_id(session_id: str, seq: int, part: int, offset: int = 0) -> str:
    if offset < 0:
        return f"{session_id}:fact:{grounded_fact_offset(offset):04d}:{part:04d}"
    return f"{session_id}:{seq:012d}:{part:04d}"


@dataclass(frozen=True)
class SearchHit:
    chunk_id: str
    session_id: str
    seq: int
    part: int
    turn: int | None
    time: str
    type: str
    score: float
    bm25: float
    recency: float
    snippet: str
    # The event's line in events.jsonl when vtcode wrote it (its seq is then an offset + 1).
    line: int | None = None

    @property
    def grounded_fact(self) -> bool:
        """A fact of vtcode's derived/memory.json, not an event of the log (whose seq starts at 1)."""
        return self.seq == 0

    def to_json(self) -> dict[str, Any]:
        return {
            "chunkId": self.chunk_id,
            "sessionId": self.session_id,
            "turn": self.turn,
            "seq": self.seq,
            "line": self.line,
            "part": self.part,
            "time": self.time,
            "type": self.type,
            "score": round(self.score, 6),
            "bm25": round(self.bm25, 6),
            "recency": round(self.recency, 6),
            "snippet": self.snippet,
        }


@dataclass(frozen=True)
class SearchResults:
    query: str
    terms: list[str]
    sessions: list[str]
    chunks: int
    scored: int  # chunks scored; MaxScore pruning leaves out those that cannot reach the top
    hits: list[SearchHit] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "query": self.query,
            "terms": self.terms,
            "sessions": self.sessions,
            "chunks": self.chunks,
            "scored": self.scored,
            "hits": [hit.to_json() for hit in self.hits],
        }


def _snippet(text: str, terms: set[str], part: int) -> str:
    """A window of the chunk's text around its first query word, on one line."""
    matches = list(token_spans(text))
    window = matches[part * CHUNK_TOKENS : (part + 1) * CHUNK_TOKENS] or matches
    if not window:
        return ""
    hit = next((span for token, span in window if token in terms), window[0][1])
    start = max(window[0][1][0], hit[0] - SNIPPET_CHARS // 3)
    stop = min(len(text), start + SNIPPET_CHARS)
    end = min(window[-1][1][1], stop)
    while end < stop and not text[end].isspace():
        end += 1  # the punctuation closing the last word ("build.") belongs to the snippet
    piece = " ".join(text[start:end].split())
    return ("…" if start > 0 else "") + piece + ("…" if end < len(text) else "")


def _norms(index: SessionIndex, average_length: float) -> list[float]:
    """``k1 * (1 - b + b * length / avgdl)`` per chunk, cached on the index for this avgdl."""
    cached = index.norm_cache
    if cached is None or cached[0] != average_length:
        flat, slope = K1 * (1.0 - B), K1 * B / average_length
        cached = (average_length, [flat + slope * length for length in index.chunks["length"]])
        index.norm_cache = cached
    return cached[1]


def _multipliers(index: SessionIndex, newest: float) -> list[float]:
    """The recency multiplier of every chunk, cached on the index for this newest time."""
    cached = index.recency_cache
    if cached is None or cached[0] != newest:
        cached = (newest, [recency_multiplier((newest - when) / _SECONDS_PER_DAY) for when in index.chunks["time"]])
        index.recency_cache = cached
    return cached[1]


class Corpus:
    """The indexes searched together. A chunk's key is its session's offset plus its number."""

    def __init__(self, indexes: list[SessionIndex]) -> None:
        self.indexes = indexes
        self.offsets: list[int] = []
        total = 0
        for index in indexes:
            self.offsets.append(total)
            total += index.chunk_count
        self.chunk_total = total

    def locate(self, key: int) -> tuple[int, int]:
        """(position of the session in the corpus, chunk number in its index)."""
        position = bisect_right(self.offsets, key) - 1
        return position, key - self.offsets[position]

    def chunk_id(self, key: int) -> str:
        position, chunk = self.locate(key)
        index = self.indexes[position]
        chunks = index.chunks
        return chunk_id(index.session_id, chunks["seq"][chunk], chunks["part"][chunk], chunks["offset"][chunk])


def _term_scores(corpus: Corpus, term: str, weight: float, average_length: float) -> dict[int, float]:
    """``weight * tf / (tf + norm)`` for every chunk holding ``term``, by C-level map/zip."""
    contributions: dict[int, float] = {}
    for base, index in zip(corpus.offsets, corpus.indexes, strict=True):
        norms = _norms(index, average_length)
        for chunks, tfs in index.postings(term):
            keys = chunks if base == 0 else map(base.__add__, chunks)
            denominators = map(add, tfs, map(norms.__getitem__, chunks))
            contributions.update(zip(keys, map(truediv, map(mul, repeat(weight), tfs), denominators), strict=False))
    return contributions


def score_chunks(corpus: Corpus, terms: list[str], limit: int = 10) -> dict[int, float]:
    """Raw BM25 of the chunks that can still reach the top ``limit``, keyed by corpus key.

    Terms are added rarest first, each to a running sum, so every chunk's score is summed in
    the same order (equal chunks get bit-identical scores, and ties stay ties). Once the terms
    left could not lift a chunk into the top ``limit`` even at full weight (``weight`` bounds a
    term's contribution, recency at most x1.1), they are only looked up for the chunks still in
    contention (MaxScore pruning); chunks that cannot make it are dropped. The ranking is exact.
    """
    if corpus.chunk_total == 0:
        return {}
    average_length = sum(index.total_length for index in corpus.indexes) / corpus.chunk_total
    weighted = []
    for term in terms:
        df = sum(index.document_frequency(term) for index in corpus.indexes)
        if df:
            weighted.append((df, term, bm25_idf(corpus.chunk_total, df) * (K1 + 1.0)))
    weighted.sort()
    scores: dict[int, float] = {}
    for position, (_, term, weight) in enumerate(weighted):
        remaining = sum(w for _, _, w in weighted[position:])
        if len(scores) >= limit:
            kth = heapq.nlargest(limit, scores.values())[-1]
            if remaining * (1.0 + RECENCY_WEIGHT) < kth:
                return _finish_pruned(corpus, scores, weighted[position:], kth, remaining, average_length)
        contributions = _term_scores(corpus, term, weight, average_length)
        if not scores:
            scores = contributions
            continue
        # Iterate the smaller map; a + b == b + a exactly, so either way the sum is the same.
        small, large = (scores, contributions) if len(scores) < len(contributions) else (contributions, scores)
        sums = list(map(add, map(large.get, small, repeat(0.0)), small.values()))
        large.update(zip(small, sums, strict=True))
        scores = large
    return scores


def _finish_pruned(
    corpus: Corpus,
    scores: dict[int, float],
    rest: list[tuple[int, str, float]],
    kth: float,
    remaining: float,
    average_length: float,
) -> dict[int, float]:
    """Add the remaining terms to the chunks still in contention, one term at a time."""
    floor = kth / (1.0 + RECENCY_WEIGHT) - remaining
    keys = list(compress(scores, map(floor.__le__, scores.values())))
    totals = [scores[key] for key in keys]
    located = [corpus.locate(key) for key in keys]
    for df, term, weight in rest:
        if len(keys) * WHOLE_TERM_FACTOR > df:
            # Many contenders: scoring the whole term at C speed beats one bisect per chunk.
            contributions = _term_scores(corpus, term, weight, average_length)
            totals = list(map(add, totals, map(contributions.get, keys, repeat(0.0))))
            continue
        for slot, (position, chunk) in enumerate(located):
            index = corpus.indexes[position]
            tf = index.term_frequency(term, chunk)
            if tf:
                totals[slot] = totals[slot] + weight * tf / (tf + _norms(index, average_length)[chunk])
    return dict(zip(keys, totals, strict=True))


def rank(corpus: Corpus, scores: dict[int, float], limit: int) -> list[tuple[int, float, float]]:
    """Top ``limit`` (key, final score, multiplier) by final score, ties by chunk id."""
    if not scores or limit <= 0:
        return []
    newest = max(index.newest_time for index in corpus.indexes)
    multipliers: list[float] = []
    for index in corpus.indexes:
        multipliers += _multipliers(index, newest)
    # No chunk below kth / (1 + weight) can overtake the `limit` chunks already at >= kth.
    floor = heapq.nlargest(limit, scores.values())[-1] / (1.0 + RECENCY_WEIGHT)
    keys = list(compress(scores, map(floor.__le__, scores.values())))
    finals = list(map(mul, map(scores.__getitem__, keys), map(multipliers.__getitem__, keys)))
    cutoff = heapq.nlargest(limit, finals)[-1]
    winners = compress(zip(finals, keys, strict=True), map(cutoff.__le__, finals))
    top = sorted((-final, corpus.chunk_id(key), key) for final, key in winners)
    return [(key, -negative, multipliers[key]) for negative, _, key in top[:limit]]


def _foreign_lines(
    corpus: Corpus, all_paths: list[SessionPaths], ranked: list[tuple[int, float, float]]
) -> dict[tuple[int, int], int]:
    """(session position, offset) -> line number, for the hits on events vtcode wrote.

    Such an event's seq is its offset + 1 (see :mod:`.wire`); these are the only hits whose
    line has to be counted, one read of each of their logs.
    """
    wanted: dict[int, list[int]] = {}
    for key, _, _ in ranked:
        position, chunk = corpus.locate(key)
        index = corpus.indexes[position]
        offset = index.chunks["offset"][chunk]
        if offset >= 0 and index.chunks["seq"][chunk] == offset + 1:
            wanted.setdefault(position, []).append(offset)
    found: dict[tuple[int, int], int] = {}
    for position, offsets in wanted.items():
        for offset, line in line_numbers(all_paths[position].events, offsets).items():
            found[position, offset] = line
    return found


def search_sessions(
    vault: Vault,
    project: str,
    query: str,
    *,
    session_id: str | None = None,
    limit: int = 10,
    root: Path | None = None,
) -> SearchResults:
    """Search one session (``session_id``) or every session of the project (or of ``root``)."""
    if limit < 1:
        raise InvalidArguments("limit must be at least 1")
    terms = query_terms(query)
    if not terms:
        raise InvalidArguments("the query has no words to search for")
    base = root or sessions_root(vault, project)
    if session_id is not None:
        all_paths = [SessionPaths.for_session(vault, project, session_id, root)]
    else:
        entries = iter_sessions(base, project, named_root=root is not None)
        all_paths = [SessionPaths(base, entry.session_id) for entry in entries]
    corpus = Corpus([session_index(paths, project) for paths in all_paths])
    scores = score_chunks(corpus, terms, limit)
    hits = []
    wanted = set(terms)
    ranked = rank(corpus, scores, limit)
    lines = _foreign_lines(corpus, all_paths, ranked)
    facts: dict[int, list[str]] = {}
    for key, final, multiplier in ranked:
        position, chunk = corpus.locate(key)
        index, paths = corpus.indexes[position], all_paths[position]
        seq, part = index.chunks["seq"][chunk], index.chunks["part"][chunk]
        offset = index.chunks["offset"][chunk]
        if offset < 0:
            texts = facts.setdefault(position, vtcode_grounded_facts(paths))
            number = grounded_fact_offset(offset)
            if number >= len(texts):
                raise StorageError(f"session {index.session_id} changed during the search; search again")
            hits.append(
                SearchHit(
                    chunk_id=chunk_id(index.session_id, seq, part, offset),
                    session_id=index.session_id,
                    seq=0,
                    part=part,
                    turn=None,
                    time="",
                    type=FACT,
                    score=final,
                    bm25=scores[key],
                    recency=multiplier,
                    snippet=_snippet(texts[number], wanted, part),
                )
            )
            continue
        event = decode_event(read_line_at(paths.events, offset) or b"-", offset)
        if event is None or event.seq != seq:
            raise StorageError(f"session {index.session_id} changed during the search; search again")
        hits.append(
            SearchHit(
                chunk_id=chunk_id(index.session_id, seq, part),
                session_id=index.session_id,
                seq=seq,
                part=part,
                turn=event.turn if not event.foreign else (index.chunks["turn"][chunk] or None),
                time=event.time,
                type=event.type,
                score=final,
                bm25=scores[key],
                recency=multiplier,
                snippet=_snippet(searchable_text(event), wanted, part),
                line=lines.get((position, offset)) if event.foreign else None,
            )
        )
    return SearchResults(
        query=query,
        terms=terms,
        sessions=[index.session_id for index in corpus.indexes],
        chunks=corpus.chunk_total,
        scored=len(scores),
        hits=hits,
    )
