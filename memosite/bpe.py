"""Byte-pair encoding of the static model's vocabulary, without the ``tokenizers`` library.

The model's tokenizer (:mod:`memosite.embedding`) is a SentencePiece-style BPE over 32,000 pieces:
spaces become ``▁``, each word starts with one, and adjacent pieces merge while their concatenation
is a piece of the vocabulary, the piece listed first (the most frequent) first; a character outside
the vocabulary becomes its UTF-8 bytes (``<0xE2>`` …). Loading the library's tokenizer parses a
1.8 MB JSON file with 61,000 merge rules on every start of a process (about 70 ms of CPU); this
needs only the list of pieces, which :func:`load_pieces` keeps in a compact file in the user's
cache directory, keyed by the source file's size and modification time.

Promise: for text whose whitespace is single spaces (:func:`memosite.embedding.normalise` makes it
so), :meth:`Pieces.encode` gives the ids the model's own tokenizer gives; tests compare the two.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path

SPACE = "\u2581"  # how the vocabulary writes a space
_CACHE_FORMAT = "pieces-1"
# Words seen before are not split again: a process embedding a vault meets the same words often.
_MEMO_LIMIT = 200_000


class Pieces:
    """The vocabulary: each piece's id is its place in the list, and a lower id merges first."""

    def __init__(self, pieces: Sequence[str]) -> None:
        self.ids = dict(zip(pieces, range(len(pieces)), strict=True))
        self.bytes = [self.ids.get(f"<0x{value:02X}>") for value in range(256)]
        self._memo: dict[str, list[int]] = {}

    def encode(self, text: str) -> list[int]:
        """The ids of ``text``: ``▁`` before it and in place of each space, each word split alone
        (no piece holds ``▁`` after a letter, so no merge crosses a word's start)."""
        ids: list[int] = []
        if not text:
            return ids
        for word in text.split(" "):
            known = self._memo.get(word)
            if known is None:
                known = self._word(SPACE + word)
                if len(self._memo) < _MEMO_LIMIT:
                    self._memo[word] = known
            ids.extend(known)
        return ids

    def _word(self, word: str) -> list[int]:
        # Symbols are strings while they may merge; a character outside the vocabulary becomes its
        # bytes' ids (``None`` marks them: they never merge).
        symbols: list[str | None] = []
        fallback: list[list[int]] = []
        for char in word:
            if char in self.ids:
                symbols.append(char)
                fallback.append([])
            else:
                symbols.append(None)
                fallback.append([i for i in (self.bytes[b] for b in char.encode("utf-8")) if i is not None])
        ids = self.ids
        while True:
            best, at = -1, -1
            for n in range(len(symbols) - 1):
                left, right = symbols[n], symbols[n + 1]
                if left is None or right is None:
                    continue
                merged = ids.get(left + right)
                if merged is not None and (best < 0 or merged < best):
                    best, at = merged, n
            if at < 0:
                break
            symbols[at : at + 2] = [symbols[at] + symbols[at + 1]]  # type: ignore[operator]
            fallback[at : at + 2] = [[]]
        out: list[int] = []
        for symbol, raw in zip(symbols, fallback, strict=True):
            out.extend([ids[symbol]] if symbol is not None else raw)
        return out


def pieces_from_tokenizer_json(text: str) -> list[str]:
    """The pieces of a ``tokenizers`` BPE file, in id order; ValueError when it is not one."""
    data = json.loads(text)
    model = data.get("model") if isinstance(data, dict) else None
    vocab = model.get("vocab") if isinstance(model, dict) else None
    if not isinstance(model, dict) or model.get("type") != "BPE" or not isinstance(vocab, dict) or not vocab:
        raise ValueError("not a BPE tokenizer file")
    pieces: list[str] = [""] * len(vocab)
    for piece, n in vocab.items():
        if not isinstance(n, int) or not 0 <= n < len(vocab) or pieces[n] or "\n" in piece:
            raise ValueError("the vocabulary's ids are not 0 to n-1")
        pieces[n] = piece
    return pieces


def load_pieces(tokenizer_file: Path, cache_dir: Path | None) -> Pieces:
    """The vocabulary of ``tokenizer_file``, read from its compact copy in ``cache_dir`` when one was
    made from this very file (same size and modification time), else parsed and the copy written.
    No cache directory, or one that cannot be written, only costs the parse. Raises OSError or
    ValueError when the file cannot be read or is not a BPE tokenizer."""
    stat = tokenizer_file.stat()
    cached = cache_dir / f"{_CACHE_FORMAT}-{stat.st_size}-{stat.st_mtime_ns}.txt" if cache_dir is not None else None
    if cached is not None:
        with contextlib.suppress(OSError, UnicodeDecodeError, ValueError):
            # newline="": a piece may be a lone carriage return, which universal newlines would eat.
            with cached.open(encoding="utf-8", newline="") as handle:
                count, *pieces = handle.read().split("\n")
            if int(count) == len(pieces):
                return Pieces(pieces)
    pieces = pieces_from_tokenizer_json(tokenizer_file.read_text(encoding="utf-8"))
    if cached is not None:
        _write_quietly(cached, "\n".join([str(len(pieces)), *pieces]))
    return Pieces(pieces)


def _write_quietly(path: Path, text: str) -> None:
    """Write ``path`` atomically; a cache that cannot be written is no error."""
    try:
        handle, temp = tempfile.mkstemp(prefix=".tmp-", dir=path.parent)
    except OSError:
        return
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="") as out:
            out.write(text)
        os.replace(temp, path)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(temp)
