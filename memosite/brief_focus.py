"""What of a project a task is about: the order of the brief's traps and decisions, and why each is there.

For one section of the brief (traps or decisions), :func:`focus_section` puts first

1. the records whose ``pathPatterns`` cover the task's path (``covers <path>``);
2. the records about the task: those holding its **rare** words and, for decisions, with hybrid
   search on, those alike in meaning (:mod:`memosite.hybrid`) — in the fused order of the two
   rankings. A trap enters on its path, its words or its severity only: a trap that merely reads
   like the task does not take the place of a severe one.

A word's weight is its rarity among the project's traps and decisions (inverse document frequency,
as bm25 weighs it: ``ln(1 + (N - n + 0.5) / (n + 0.5))`` for a word ``n`` of ``N`` records hold). A
record is about the task when the words of the task it holds weigh at least as much as one word held
by :data:`RARE_SHARE` of the records: one rare word is enough, one common word is not (``fix the
login bug`` does not pull in every trap that says ``bug``). What follows these is the section's own
order — severity, occurrences and hits for traps, the most recent first for decisions — and each
record says so in its reason.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from memosite import hybrid
from memosite.index import fts, queries
from memosite.query import ParsedQuery

if TYPE_CHECKING:
    from memosite.embedding import Embedder
    from memosite.index.database import Index

RARE_SHARE = 0.1  # a word held by one record in ten is rare enough to pull a record in alone
_SLACK = 1e-9
FOCUS_CANDIDATES = 100  # the word matches weighed per section, best bm25 first
MAX_REASON_WORDS = 4


@dataclass(frozen=True)
class WeighedTerm:
    label: str
    expression: str | None  # FTS5 expression over the word index, or
    substring: str | None  # a substring of a script written without spaces
    weight: float


@dataclass
class TaskWords:
    """The task's terms with their weights, and the weight a record must reach to be about the task."""

    terms: list[WeighedTerm] = field(default_factory=list)
    threshold: float = math.inf

    @classmethod
    def weigh(cls, index: Index, project: str, parsed: ParsedQuery) -> TaskWords:
        count = queries.knowledge_count(index, project)
        if count == 0:
            return cls()
        terms = []
        for term in parsed.loose_terms:
            expression = term.fts() if term.kind != "unspaced" else None
            substring = term.text if term.kind == "unspaced" else None
            held = queries.knowledge_holding(index, project, expression, substring)
            if held:
                terms.append(WeighedTerm(term.label, expression, substring, idf(count, held)))
        return cls(terms, idf(count, max(1, round(RARE_SHARE * count))))

    def needed(self) -> list[WeighedTerm] | None:
        """The fewest heaviest terms one of which every record about the task holds (the others
        together weigh less than the threshold); None when no record can be about the task, however
        many of the terms it holds (all of them common words)."""
        ordered = sorted(self.terms, key=lambda term: -term.weight)
        rest = math.fsum(term.weight for term in ordered)
        # A hair of slack: a record just at the threshold by another order of sums still counts.
        if rest < self.threshold - _SLACK:
            return None
        for n, term in enumerate(ordered):
            rest -= term.weight
            if rest < self.threshold - _SLACK:
                return ordered[: n + 1]
        return ordered

    def held_by(self, index: Index, rowids: Sequence[int]) -> dict[int, list[WeighedTerm]]:
        """The task's terms each of ``rowids`` holds, heaviest first."""
        found: dict[int, list[WeighedTerm]] = {rowid: [] for rowid in rowids}
        holders = queries.holding(index, rowids, [(term.expression, term.substring) for term in self.terms])
        for term, holder_rowids in zip(self.terms, holders, strict=True):
            for rowid in holder_rowids:
                found[rowid].append(term)
        for terms in found.values():
            terms.sort(key=lambda term: -term.weight)
        return found


def idf(records: int, holding: int) -> float:
    """The weight of a word ``holding`` of ``records`` hold (bm25's inverse document frequency)."""
    return math.log(1.0 + (records - holding + 0.5) / (holding + 0.5))


@dataclass(frozen=True)
class Focused:
    """A record the task is about, with what brought it in."""

    candidate: queries.BriefCandidate
    why: str
    on_path: bool = False
    words: tuple[str, ...] = ()
    similarity: float | None = None


def focus_section(
    index: Index,
    project: str,
    section: queries.BriefSection,
    values: Sequence[Any],
    now_iso: str,
    *,
    parsed: ParsedQuery | None,
    words: TaskWords | None,
    path: str | None,
    embedder: Embedder | None,
    fresh_only: bool,
) -> list[Focused]:
    """The records of ``section`` the task's path and words point at, in order (see the module
    docstring); the section's other records follow them, read by the caller in their own order."""
    focused: list[Focused] = []
    seen: set[int] = set()
    if path is not None:
        for candidate in queries.brief_section(
            index,
            project,
            section,
            values,
            now_iso,
            terms=None,
            path=path,
            limit=FOCUS_CANDIDATES,
            fresh_only=fresh_only,
        ):
            if not candidate.on_path:
                break
            focused.append(Focused(candidate, f"covers {path}", on_path=True))
            seen.add(candidate.rowid)
    if parsed is None or words is None:
        return focused
    lexical = _weighed_matches(index, project, section, values, now_iso, parsed, words, fresh_only)
    meaning = hybrid.MeaningRanking([], [])
    # A trap enters on its path, its words or its severity alone: meaning only orders the traps the
    # words brought, so without them it is not asked (nor are the project's trap vectors read).
    if embedder is not None and (lexical or section != "traps"):
        meaning = hybrid.rank_within(
            index,
            embedder,
            parsed.text,
            lambda rowids: queries.section_weights(
                index, project, section, values, now_iso, rowids, fresh_only=fresh_only
            ),
            kinds=queries.section_kinds(section, values),
        )
    held = {candidate.rowid: terms for candidate, terms in lexical}
    flagged = fts.flagged_among(index, [*held, *meaning.rowids])
    for ranked in hybrid.fuse([(candidate.rowid, candidate.rank) for candidate, _ in lexical], meaning, flagged):
        if ranked.rowid in seen:
            continue
        seen.add(ranked.rowid)
        labels = tuple(term.label for term in held.get(ranked.rowid, ()))
        reasons = []
        if labels:
            reasons.append("task words " + ", ".join(labels[:MAX_REASON_WORDS]))
        if ranked.similarity is not None and ranked.similarity >= hybrid.MIN_SIMILARITY:
            reasons.append(f"like the task (similarity {ranked.similarity:.2f})")
        if not labels and (section == "traps" or not reasons):
            continue
        candidate = queries.BriefCandidate(ranked.rowid, False, len(labels), None)
        focused.append(Focused(candidate, "; ".join(reasons), words=labels, similarity=ranked.similarity))
    return focused


def _weighed_matches(
    index: Index,
    project: str,
    section: queries.BriefSection,
    values: Sequence[Any],
    now_iso: str,
    parsed: ParsedQuery,
    words: TaskWords,
    fresh_only: bool,
) -> list[tuple[queries.BriefCandidate, list[WeighedTerm]]]:
    """The section's records holding enough of the task's weight, best bm25 first, with the terms
    each holds. Only records holding one of the terms such a record must hold are read (none when
    the task's words are all common ones): the words' ranking never walks the whole project."""
    needed = words.needed()
    if needed is None:
        return []
    holding = (
        " OR ".join(f"({term.expression})" for term in needed)
        if all(term.expression is not None for term in needed)
        else None  # a substring of a script written without spaces: no word index to ask
    )
    candidates = [
        candidate
        for candidate in queries.brief_section(
            index,
            project,
            section,
            values,
            now_iso,
            terms=parsed.any_terms(),
            path=None,
            limit=FOCUS_CANDIDATES,
            fresh_only=fresh_only,
            holding=holding,
        )
        if candidate.matched
    ]
    held = words.held_by(index, [candidate.rowid for candidate in candidates])
    qualified = [
        (candidate, held[candidate.rowid])
        for candidate in candidates
        if sum(term.weight for term in held[candidate.rowid]) >= words.threshold
    ]
    qualified.sort(key=lambda pair: pair[0].rank if pair[0].rank is not None else 0.0)
    return qualified
