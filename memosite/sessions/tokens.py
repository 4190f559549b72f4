"""The words session search indexes and looks for, in every script.

Text is read the way record search reads it (:mod:`memosite.text`): folded (``Café`` and
``cafe`` are one word, see :func:`memosite.text.fold`), split into words of letters, digits and
underscores. Scripts written without spaces between words (Chinese, Japanese, Korean syllables,
Thai …) have no words to split on, and neither have pictographs (emoji), so a run of them is
indexed as its characters *and* its character bigrams (``の設定も`` → ``の の設 設 設定 定 定も
も``), and a query's run is looked up by its bigrams (a lone character by itself): any piece of
such text is found, ``設定`` as well as ``設``. Words longer than MAX_TOKEN_LENGTH characters are not indexed.

A text is folded one whitespace-separated piece at a time, so every token knows the span of the
original text it came from (its piece, or its exact characters where folding kept the length),
which is what snippets are cut around. Plain ASCII text (nearly every event) takes a shortcut
that yields exactly the same tokens.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from memosite.text import WORD_PATTERN, bigrams, fold, is_unspaced

MAX_TOKEN_LENGTH = 64
_WORD_RE = re.compile(WORD_PATTERN)
_PIECE_RE = re.compile(r"\S+")

Span = tuple[int, int]


def _runs(word: str) -> Iterator[tuple[int, int, bool]]:
    """(start, end, unspaced) of the runs of one folded word, spaced and unspaced apart."""
    start = 0
    unspaced = is_unspaced(word[0])
    for at in range(1, len(word)):
        here = is_unspaced(word[at])
        if here != unspaced:
            yield start, at, unspaced
            start, unspaced = at, here
    yield start, len(word), unspaced


def _index_grams(run: str) -> Iterator[tuple[str, int, int]]:
    """Each character of an unspaced run and each bigram, in reading order, with offsets in the run."""
    for at, char in enumerate(run):
        yield char, at, at + 1
        if at + 1 < len(run):
            yield run[at : at + 2], at, at + 2


def _piece_tokens(piece: str, start: int, *, query: bool) -> Iterator[tuple[str, Span]]:
    folded = fold(piece)
    # Folding nearly always keeps a piece's length (CJK, accented letters written precomposed);
    # then positions carry over one to one. Otherwise every token points at the whole piece.
    exact = len(folded) == len(piece)
    whole = (start, start + len(piece))
    for match in _WORD_RE.finditer(folded):
        word, base = match.group(), match.start()
        for low, high, unspaced in _runs(word):
            if not unspaced:
                if high - low <= MAX_TOKEN_LENGTH:
                    yield word[low:high], (start + base + low, start + base + high) if exact else whole
                continue
            run = word[low:high]
            offset = start + base + low
            if query:
                for gram in bigrams(run):
                    yield gram, whole
            else:
                for gram, first, last in _index_grams(run):
                    yield gram, (offset + first, offset + last) if exact else whole


def token_spans(text: str, *, query: bool = False) -> Iterator[tuple[str, Span]]:
    """The tokens of ``text`` (see the module docstring) with their spans in ``text``.

    ``query``: tokens to look up rather than to index (an unspaced run gives only its bigrams).
    """
    if text.isascii():
        for match in _WORD_RE.finditer(text):
            token = match.group().lower()
            if len(token) <= MAX_TOKEN_LENGTH:
                yield token, match.span()
        return
    for piece in _PIECE_RE.finditer(text):
        yield from _piece_tokens(piece.group(), piece.start(), query=query)


def tokenize(text: str) -> list[str]:
    """The tokens an event's text is indexed under, in order (repeats kept: they are term frequencies)."""
    if text.isascii():
        return [token for token in _WORD_RE.findall(text.lower()) if len(token) <= MAX_TOKEN_LENGTH]
    return [token for token, _ in token_spans(text)]


def query_terms(query: str) -> list[str]:
    """The distinct tokens a query looks up, in the order they first appear."""
    return list(dict.fromkeys(token for token, _ in token_spans(query, query=True)))
