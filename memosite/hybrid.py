"""Hybrid ranking: the words' ranking (bm25) and the meaning's ranking (vectors) fused into one.

:func:`rank_by_meaning` orders the records a search's filters keep by the cosine similarity of their
vector to the query's (:mod:`memosite.embedding`); :func:`fuse` merges that order with the lexical
one by reciprocal rank fusion: each record scores ``1 / (RRF_K + rank)`` in each ranking it appears
in, summed. A record found by meaning alone must be at least :data:`MIN_SIMILARITY` alike, so a
query about nothing the vault knows still finds nothing. The fused order says, per record, where each
ranking put it (:class:`Ranked`), which ``search --explain`` shows.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from memosite.index import fts, vectors

if TYPE_CHECKING:
    from memosite.embedding import Embedder
    from memosite.index.database import Index

# The usual constant of reciprocal rank fusion: a ranking's first places differ little, so a record
# high in both rankings beats one first in only one of them.
RRF_K = 60
# How many records of each ranking take part: more than a page of results, far fewer than a vault.
CANDIDATES = 50
# Below this cosine a record found by meaning alone is noise. Measured on the tuned half of
# bench_recall_real's questions: a record that is not the answer scores 0.07 at the median and 0.23
# at the 95th percentile, one that answers in other words 0.41 at the median and 0.27 at the 10th.
MIN_SIMILARITY = 0.25


@dataclass(frozen=True)
class Ranked:
    """One record of a fused ranking: where words and meaning put it (1-based, None when absent)."""

    rowid: int
    score: float
    lexical_rank: int | None
    vector_rank: int | None
    similarity: float | None

    def to_json(self) -> dict[str, Any]:
        return {
            "bm25Rank": self.lexical_rank,
            "vectorRank": self.vector_rank,
            "similarity": round(self.similarity, 4) if self.similarity is not None else None,
            "fusedScore": round(self.score, 6),
        }


@dataclass(frozen=True)
class MeaningRanking:
    """Records by similarity to the query, most alike first."""

    rowids: list[int]
    similarities: list[float]

    def rank_of(self) -> dict[int, tuple[int, float]]:
        return {rowid: (n, sim) for n, (rowid, sim) in enumerate(zip(self.rowids, self.similarities, strict=True), 1)}


# ``scope(rowids)``: which of ``rowids`` (every record when None) a search or a brief section may
# return, each with the factor its relevance is weighted by (search_facts.weight).
Scope = Callable[[Sequence[int] | None], dict[int, float]]
# How many of the most alike vectors are checked against the scope, in turn, before the whole scope
# is read: a search of the whole project, or of one common kind, never reads it.
PRESELECT = (4 * CANDIDATES, 40 * CANDIDATES)


def rank_by_meaning(
    index: Index, embedder: Embedder, query: str, filters: fts.SearchFilters, *, limit: int = CANDIDATES
) -> MeaningRanking:
    """The ``limit`` records in the scope of ``filters`` whose vectors are most like the query's;
    none for a query the model cannot read (:func:`memosite.embedding.reads`)."""
    return rank_within(index, embedder, query, lambda rowids: fts.scope_weights(index, filters, rowids), limit=limit)


def rank_within(
    index: Index,
    embedder: Embedder,
    query: str,
    scope: Scope,
    *,
    limit: int = CANDIDATES,
    kinds: Sequence[str] | None = None,
) -> MeaningRanking:
    """:func:`rank_by_meaning` over the records ``scope`` keeps. Knowledge outranks the event stream at
    equal similarity, as for bm25 (the scope's weights multiply the cosine). ``kinds``: the only
    kinds ``scope`` keeps, when the caller knows them (a brief's section): only their vectors are
    compared with the query."""
    import numpy as np

    from memosite.embedding import reads

    if not reads(query):
        return MeaningRanking([], [])
    query_vector = embedder.embed_one(query)
    if not query_vector.any():
        return MeaningRanking([], [])
    if kinds is None:
        rowids, matrix, position = vectors.matrix(index, embedder.name, embedder.from_blobs)
    else:
        rowids, matrix, position = vectors.matrix_of_kinds(index, embedder.name, embedder.from_blobs, kinds)
    if not len(rowids):
        return MeaningRanking([], [])
    # einsum's own loop, not BLAS: one thread, steady, under a millisecond for 10,000 vectors (a
    # multithreaded BLAS call on a busy machine waits for its threads far longer than it computes).
    raw = np.einsum("ij,j->i", matrix, query_vector)
    found: list[tuple[float, int]] = []
    for preselect in PRESELECT:
        take = min(preselect, len(rowids))
        nearest = np.argpartition(-raw, take - 1)[:take]
        ids = [rowids[n] for n in nearest.tolist()]
        alike = raw[nearest].tolist()
        weights = scope(ids)
        found = sorted(
            (
                (similarity * weights[rowid], rowid)
                for similarity, rowid in zip(alike, ids, strict=True)
                if rowid in weights
            ),
            reverse=True,
        )[:limit]
        # A weight never exceeds 1: nothing outside the nearest can beat the last one kept when that
        # one is at least as alike as the least alike of the nearest.
        if take == len(rowids) or (len(found) == limit and found[-1][0] >= min(alike)):
            return MeaningRanking([rowid for _, rowid in found], [sim for sim, _ in found])
    # A narrow scope (a kind or a path few records have): read it whole.
    weights = scope(None)
    found = sorted(
        ((float(raw[position[rowid]]) * weight, rowid) for rowid, weight in weights.items() if rowid in position),
        reverse=True,
    )[:limit]
    return MeaningRanking([rowid for _, rowid in found], [sim for sim, _ in found])


def fuse(
    lexical: Sequence[tuple[int, float | None]], meaning: MeaningRanking, flagged: Collection[int] = frozenset()
) -> list[Ranked]:
    """Reciprocal rank fusion of the lexical order (rowids with their bm25) and the meaning order
    (see the module docstring); flagged-stale records after the others, ties in the lexical order."""
    by_meaning = meaning.rank_of()
    by_words = {rowid: n for n, (rowid, _) in enumerate(lexical, 1)}
    fused: list[Ranked] = []
    for rowid in [*by_words, *(r for r in meaning.rowids if r not in by_words)]:
        word_rank = by_words.get(rowid)
        vector_rank, similarity = by_meaning.get(rowid, (None, None))
        if word_rank is None and (similarity is None or similarity < MIN_SIMILARITY):
            continue
        score = (1.0 / (RRF_K + word_rank) if word_rank else 0.0) + (
            1.0 / (RRF_K + vector_rank) if vector_rank else 0.0
        )
        fused.append(Ranked(rowid, score, word_rank, vector_rank, similarity))
    order = {ranked.rowid: n for n, ranked in enumerate(fused)}
    return sorted(fused, key=lambda ranked: (ranked.rowid in flagged, -ranked.score, order[ranked.rowid]))
