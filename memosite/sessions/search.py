"""BM25 search over the event text of a project's sessions.

Scoring is Okapi BM25 with k1 = 1.2 and b = 0.75 over text chunks (at most CHUNK_TOKENS tokens
of one event), idf = ln(1 + (N - df + 0.5) / (df + 0.5)), with N, df and the average chunk
length taken over every session searched. Query words count once each.

The only other factor is a mild recency multiplier, ``1 + 0.1 * 0.5 ** (age_days / 7)``: a
chunk written at the same moment as the newest chunk searched gets x1.1, one a week older
x1.05, and old ones tend to x1.0. Age is measured from the newest chunk, not the clock, so a
search is reproducible. Equal final scores are ordered by chunk id,
``<session-id>:<seq, 12 digits>:<part, 4 digits>``, ascending.
"""

from __future__ import annotations

import heapq
import math
from itertools import compress, repeat
from operator import add, mul, truediv
from dataclasses import dataclass, field
from typing import Any

from memosite.errors import InvalidArguments, StorageError
from memosite.sessions.catalog import iter_sessions
from memosite.sessions.events import decode_event
from memosite.sessions.lines import read_line_at
from memosite.sessions.paths import SessionPaths, sessions_root
from memosite.sessions.postings import (
    CHUNK_TOKENS,
    SessionIndex,
    searchable_text,
    session_index,
    token_spans,
    tokenize,
)
from memosite.vault import Vault

K1 = 1.2
B = 0.75
RECENCY_WEIGHT = 0.1
RECENCY_HALF_LIFE_DAYS = 7.0
SNIPPET_CHARS = 160
_SECONDS_PER_DAY = 86400.0


def bm25_idf(chunks: int, document_frequency: int) -> float:
    return math.log(1.0 + (chunks - document_frequency + 0.5) / (document_frequency + 0.5))


def recency_multiplier(age_days: float) -> float:
    return 1.0 + RECENCY_WEIGHT * 0.5 ** (max(0.0, age_days) / RECENCY_HALF_LIFE_DAYS)


def chunk_id(session_id: str, seq: int, part: int) -> str:
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

    def to_json(self) -> dict[str, Any]:
        return {
            "chunkId": self.chunk_id,
            "sessionId": self.session_id,
            "turn": self.turn,
            "seq": self.seq,
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
    matches: int
    hits: list[SearchHit] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "query": self.query,
            "terms": self.terms,
            "sessions": self.sessions,
            "chunks": self.chunks,
            "matches": self.matches,
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
    end = min(window[-1][1][1], start + SNIPPET_CHARS)
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


def score_chunks(indexes: list[SessionIndex], terms: list[str]) -> tuple[dict[int, float], int]:
    """Raw BM25 per matching chunk, keyed ``session position << 32 | chunk number``."""
    chunk_total = sum(index.chunk_count for index in indexes)
    if chunk_total == 0:
        return {}, 0
    average_length = sum(index.total_length for index in indexes) / chunk_total
    per_term: list[dict[int, float]] = []
    for term in terms:
        df = sum(index.document_frequency(term) for index in indexes)
        if df == 0:
            continue
        weight = bm25_idf(chunk_total, df) * (K1 + 1.0)
        contributions: dict[int, float] = {}
        for position, index in enumerate(indexes):
            norms = _norms(index, average_length)
            base = position << 32
            for chunks, tfs in index.postings(term):
                # weight * tf / (tf + norm), evaluated by C-level map/zip: the hot loop of search.
                keys = chunks if base == 0 else map(base.__or__, chunks)
                denominators = map(add, tfs, map(norms.__getitem__, chunks))
                contributions.update(zip(keys, map(truediv, map(mul, repeat(weight), tfs), denominators)))
        per_term.append(contributions)
    if not per_term:
        return {}, chunk_total
    # Fold the smaller maps into the largest: the work follows the rarer terms. The order is
    # fixed per query, so equal chunks always get bit-identical sums (ties stay ties).
    per_term.sort(key=len, reverse=True)
    scores = per_term[0]
    for contributions in per_term[1:]:
        sums = list(map(add, map(scores.get, contributions, repeat(0.0)), contributions.values()))
        scores.update(zip(contributions, sums))
    return scores, chunk_total


def rank(indexes: list[SessionIndex], scores: dict[int, float], limit: int) -> list[tuple[int, float, float]]:
    """Top ``limit`` (key, final score, multiplier) by final score, ties by chunk id."""
    if not scores or limit <= 0:
        return []
    newest = max(index.newest_time for index in indexes)
    kth = heapq.nlargest(limit, scores.values())[-1]
    # No chunk below kth / (1 + weight) can overtake the limit chunks already at >= kth.
    floor = kth / (1.0 + RECENCY_WEIGHT)
    ranked = []
    for key, raw in compress(scores.items(), map(floor.__le__, scores.values())):
        index = indexes[key >> 32]
        chunk = key & 0xFFFFFFFF
        multiplier = recency_multiplier((newest - index.chunks["time"][chunk]) / _SECONDS_PER_DAY)
        ident = chunk_id(index.session_id, index.chunks["seq"][chunk], index.chunks["part"][chunk])
        ranked.append((-raw * multiplier, ident, key, multiplier))
    ranked.sort()
    return [(key, -negative, multiplier) for negative, _, key, multiplier in ranked[:limit]]


def search_sessions(
    vault: Vault, project: str, query: str, *, session_id: str | None = None, limit: int = 10
) -> SearchResults:
    """Search one session (``session_id``) or every session of the project."""
    if limit < 1:
        raise InvalidArguments("limit must be at least 1")
    terms = list(dict.fromkeys(tokenize(query)))
    if not terms:
        raise InvalidArguments("the query has no words to search for")
    root = sessions_root(vault, project)
    if session_id is not None:
        all_paths = [SessionPaths.for_session(vault, project, session_id)]
    else:
        all_paths = [SessionPaths(root, entry.session_id) for entry in iter_sessions(root, project)]
    indexes = [session_index(paths, project) for paths in all_paths]
    scores, chunk_total = score_chunks(indexes, terms)
    hits = []
    wanted = set(terms)
    for key, final, multiplier in rank(indexes, scores, limit):
        index, paths = indexes[key >> 32], all_paths[key >> 32]
        chunk = key & 0xFFFFFFFF
        seq, part = index.chunks["seq"][chunk], index.chunks["part"][chunk]
        event = decode_event(read_line_at(paths.events, index.chunks["offset"][chunk]) or b"-")
        if event is None or event.seq != seq:
            raise StorageError(f"session {index.session_id} changed during the search; search again")
        hits.append(
            SearchHit(
                chunk_id=chunk_id(index.session_id, seq, part),
                session_id=index.session_id,
                seq=seq,
                part=part,
                turn=event.turn,
                time=event.time,
                type=event.type,
                score=final,
                bm25=scores[key],
                recency=multiplier,
                snippet=_snippet(searchable_text(event), wanted, part),
            )
        )
    return SearchResults(
        query=query,
        terms=terms,
        sessions=[index.session_id for index in indexes],
        chunks=chunk_total,
        matches=len(scores),
        hits=hits,
    )
