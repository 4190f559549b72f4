"""Hybrid ranking: the words' ranking (bm25) and the meaning's ranking (vectors) fused into one.

:func:`rank_by_meaning` orders the records a search's filters keep by the cosine similarity of their
vector to the query's (:mod:`memosite.embedding`); :func:`fuse` merges that order with the lexical
one by reciprocal rank fusion: each record scores ``1 / (RRF_K + rank)`` in each ranking it appears
in, summed. A record found by meaning alone must be at least :data:`MIN_SIMILARITY` alike, so a
query about nothing the vault knows still finds nothing. The fused order says, per record, where each
ranking put it (:class:`Ranked`), which ``search --explain`` shows.
"""

from __future__ import annotations

from collections.abc import Sequence
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
# Below this cosine a record found by meaning alone is noise: with this model the median record of
# a vault scores about 0.1 against a query, a record answering it in other words 0.3 and up.
MIN_SIMILARITY = 0.3


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
    """Records by similarity to the query, most alike first; ``flagged`` holds the records in scope
    flagged stale (they sink in the fused order, as in every ranking sort)."""

    rowids: list[int]
    similarities: list[float]
    flagged: frozenset[int] = frozenset()

    def rank_of(self) -> dict[int, tuple[int, float]]:
        return {rowid: (n, sim) for n, (rowid, sim) in enumerate(zip(self.rowids, self.similarities, strict=True), 1)}


def rank_by_meaning(
    index: Index, embedder: Embedder, query: str, filters: fts.SearchFilters, *, limit: int = CANDIDATES
) -> MeaningRanking:
    """The ``limit`` records in the scope of ``filters`` whose vectors are most like the query's;
    none for a query the model cannot read (:func:`memosite.embedding.reads`)."""
    weights, flagged = fts.scope_weights(index, filters)
    return rank_within(index, embedder, query, weights, flagged, limit=limit)


def rank_within(
    index: Index,
    embedder: Embedder,
    query: str,
    weights: dict[int, float],
    flagged: set[int],
    *,
    limit: int = CANDIDATES,
) -> MeaningRanking:
    """:func:`rank_by_meaning` over the records of ``weights`` (rowid → relevance weight)."""
    import numpy as np

    from memosite.embedding import reads

    nothing = MeaningRanking([], [], frozenset(flagged))
    if not reads(query):
        return nothing
    query_vector = embedder.embed_one(query)
    if not query_vector.any():
        return nothing
    rowids, matrix = vectors.matrix(index, embedder.name, embedder.from_blobs)
    if not rowids:
        return nothing
    # As for bm25, knowledge outranks the event stream at equal similarity (search_facts.weight).
    factors = np.fromiter((weights.get(rowid, 0.0) for rowid in rowids), dtype=np.float32, count=len(rowids))
    allowed = factors > 0
    similarities = np.where(allowed, (matrix @ query_vector) * factors, -np.inf)
    take = min(limit, int(allowed.sum()))
    if take <= 0:
        return nothing
    best = np.argpartition(-similarities, take - 1)[:take]
    best = best[np.argsort(-similarities[best], kind="stable")]
    return MeaningRanking([rowids[i] for i in best], [float(similarities[i]) for i in best], nothing.flagged)


def fuse(lexical: Sequence[tuple[int, float | None]], meaning: MeaningRanking) -> list[Ranked]:
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
    return sorted(fused, key=lambda ranked: (ranked.rowid in meaning.flagged, -ranked.score, order[ranked.rowid]))
