"""Meaning as vectors: the static embedding model hybrid search ranks by, with no network ever.

The model is WordLlama's ``l2_supercat`` (MIT): a table of 32,000 token vectors of 256 dimensions
and its tokenizer's vocabulary, both shipped inside the ``wordllama`` wheel (``pip install
memosite[semantic]``). Only those two data files are read, never ``wordllama``'s own code (its
loader downloads the tokenizer from a model hub when asked for it by name, and configures the root
logger on import): the table is mapped from the wheel's safetensors file as it lies on disk (read
on demand, nothing converted), and the text is split into the vocabulary's pieces by
:mod:`memosite.bpe`, whose compact copy of the vocabulary lives in the user's cache directory.

A text's vector is a weighted mean of its pieces' vectors, scaled to unit length, so the dot product
of two vectors is their cosine similarity. The weight of a piece grows with the log of its id: the
vocabulary lists pieces from the most frequent down, so ``▁the`` and ``,`` weigh little and
``▁autoscaler``'s pieces much (what IDF does, known without a corpus). Whitespace is one space
before the model reads a text: newlines and indentation would otherwise count as pieces. A record's
vector is the sum of its title's and its body's, scaled again (:meth:`Embedder.embed_records`): the
title says what a record is about in few words, and a mean over a long body would drown it. The
model was trained on English: :func:`reads` says whether a query is written in a script it knows
(Latin letters), and a query in another script is ranked by words alone.

:func:`load_embedder` loads the model once per process, lazily: ``import memosite`` and a search
with hybrid off never import numpy. It returns ``None`` when the extra is not installed, and a
:class:`ModelUnavailable` reason (:func:`unavailable`) when the package is there but its files are
missing, damaged or of another version; search then ranks by words alone. Vectors are stored as
float16 (:meth:`Embedder.to_blob`): 512 bytes a record.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memosite.bpe import Pieces

# The name vectors are stored under: it changes whenever a text's vector does (here the weighting
# and the whitespace rule), so vectors made the old way are made again rather than compared.
MODEL_NAME = "wordllama-l2-supercat-256-w2"
DIMENSIONS = 256
_PACKAGE = "wordllama"
_TOKENIZER_FILE = ("tokenizers", "l2_supercat_tokenizer_config.json")
_WEIGHTS_FILE = ("weights", "l2_supercat_256.safetensors")
_WEIGHTS_KEY = "embedding.weight"
# What of a body its vector reads: the start. A mean over the tokens of a 20 KB record would say
# little about any of its parts; the opening says what the record is about.
RECORD_TEXT_CHARS = 2000
# The size of the vocabulary the weights assume, and the table's shape in the safetensors file.
VOCABULARY = 32000
# The share of a query's letters that must be Latin for the model to read it (see the docstring).
MIN_LATIN_SHARE = 0.5


def record_text(title: str, body: str, tags: Sequence[str] = ()) -> tuple[str, str]:
    """What a record's vector stands for: its title, and its tags with the start of its body."""
    return title, "\n".join(part for part in (" ".join(tags), body[:RECORD_TEXT_CHARS]) if part)


def reads(text: str) -> bool:
    """Whether the model reads ``text``: at least half of its letters are Latin (accents included)."""
    import unicodedata

    letters = [char for char in text if char.isalpha()]
    if not letters:
        return False
    latin = sum(1 for char in letters if char.isascii() or unicodedata.name(char, "").startswith("LATIN"))
    return latin >= MIN_LATIN_SHARE * len(letters)


def normalise(text: str) -> str:
    """``text`` as the model reads it: runs of whitespace (and the vocabulary's own space sign) one space."""
    return " ".join(text.replace("\u2581", " ").split())


@dataclass(frozen=True)
class Embedder:
    """A loaded static model: token vectors, their weights, and the vocabulary that maps text onto them."""

    name: str
    dimensions: int
    pieces: Pieces
    table: Any  # numpy float16 array (vocabulary, dimensions), mapped from the wheel's file
    weights: Any  # numpy float32 array (vocabulary,): see the module docstring

    def embed(self, texts: Sequence[str]) -> Any:
        """One unit-length float32 row per text (a zero row for a text with no tokens)."""
        import numpy as np

        out = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        for row, text in enumerate(texts):
            ids = self.pieces.encode(normalise(text))
            if ids:
                weights = self.weights[ids]
                out[row] = weights @ self.table[ids].astype(np.float32)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        np.divide(out, norms, out=out, where=norms > 0)
        return out

    def embed_one(self, text: str) -> Any:
        return self.embed([text])[0]

    def embed_records(self, texts: Sequence[tuple[str, str]]) -> Any:
        """One vector per ``(title, body)`` (see :func:`record_text`): the two halves' sum, unit length."""
        import numpy as np

        titles = self.embed([title for title, _ in texts])
        bodies = self.embed([body for _, body in texts])
        out = titles + bodies
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        np.divide(out, norms, out=out, where=norms > 0)
        return out

    @staticmethod
    def to_blob(vector: Any) -> bytes:
        """A vector as stored in the index: little-endian float16."""
        import numpy as np

        return bytes(np.asarray(vector, dtype="<f2").tobytes())

    def from_blobs(self, blobs: Sequence[bytes]) -> Any:
        """Stored vectors as one float32 matrix (a blob of the wrong size reads as zeros)."""
        import numpy as np

        width = self.dimensions * 2
        if all(len(blob) == width for blob in blobs):
            joined = np.frombuffer(b"".join(blobs), dtype="<f2")
            return joined.reshape(len(blobs), self.dimensions).astype(np.float32)
        matrix = np.zeros((len(blobs), self.dimensions), dtype=np.float32)
        for row, blob in enumerate(blobs):
            if len(blob) == width:
                matrix[row] = np.frombuffer(blob, dtype="<f2")
        return matrix


class ModelUnavailable(Exception):
    """The ``wordllama`` package is installed but its model cannot be used (the message says why)."""


def model_files() -> tuple[Path, Path] | None:
    """Where the installed ``wordllama`` wheel keeps the tokenizer and the weights, found without
    importing the package; None when it is not installed. Raises :class:`ModelUnavailable` when it
    is installed without those files (another version names them otherwise)."""
    try:
        spec = importlib.util.find_spec(_PACKAGE)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        root = Path(location)
        tokenizer, weights = root.joinpath(*_TOKENIZER_FILE), root.joinpath(*_WEIGHTS_FILE)
        if tokenizer.is_file() and weights.is_file():
            return tokenizer, weights
    raise ModelUnavailable(f"the installed {_PACKAGE} package has no {'/'.join(_WEIGHTS_FILE)} model files")


def map_table(weights_file: Path) -> Any:
    """The token table of a safetensors file, mapped read-only as float16 (nothing is copied).
    Raises :class:`ModelUnavailable` when the file is not the table this module expects."""
    import numpy as np

    try:
        with weights_file.open("rb") as handle:
            (header_size,) = struct.unpack("<Q", handle.read(8))
            if not 2 <= header_size <= 1 << 20:
                raise ValueError("no safetensors header")
            header = json.loads(handle.read(header_size))
        entry = header[_WEIGHTS_KEY]
        start, end = (int(n) for n in entry["data_offsets"])
        shape = tuple(int(n) for n in entry["shape"])
        size = weights_file.stat().st_size
    except (OSError, ValueError, KeyError, TypeError, struct.error) as exc:
        raise ModelUnavailable(f"cannot read the model's weights ({weights_file.name}): {exc}") from exc
    if entry.get("dtype") != "F16" or shape != (VOCABULARY, DIMENSIONS) or end - start != VOCABULARY * DIMENSIONS * 2:
        raise ModelUnavailable(f"the model's weights ({weights_file.name}) are not a {VOCABULARY}x{DIMENSIONS} table")
    if 8 + header_size + end > size:
        raise ModelUnavailable(f"the model's weights ({weights_file.name}) are cut short")
    return np.memmap(weights_file, dtype="<f2", mode="r", offset=8 + header_size + start, shape=shape)


def piece_weights() -> Any:
    """Each piece's weight in a mean: ``log(2 + id)``, scaled so the rarest piece weighs 1."""
    import numpy as np

    ranks = np.arange(VOCABULARY, dtype=np.float32)
    return (np.log(ranks + 2.0) / np.log(VOCABULARY + 1.0)).astype(np.float32)


def _cache_dir() -> Path | None:
    """This user's private directory for the vocabulary's compact copy (None when it cannot be had)."""
    from memosite.errors import StorageError
    from memosite.userdirs import private_dir, user_cache_dir

    try:
        return private_dir(private_dir(user_cache_dir()) / "model")
    except StorageError:
        return None


# Why the last load found no usable model (see :func:`unavailable`).
_REASON: dict[str, str] = {}


@functools.cache
def load_embedder() -> Embedder | None:
    """The model, loaded once per process from the files the wheel ships (no network); None when
    ``memosite[semantic]`` is not installed or the model cannot be used (:func:`unavailable` says why)."""
    _REASON.clear()
    try:
        return _load()
    except ModelUnavailable as exc:
        _REASON["why"] = str(exc)
        return None


def unavailable() -> str | None:
    """Why the installed ``wordllama`` package's model could not be used, in one line, after
    :func:`load_embedder` found none; None when it could be, or when the package is not installed
    at all (that is a choice, not a fault)."""
    return _REASON.get("why")


def _load() -> Embedder | None:
    files = model_files()
    if files is None:
        return None
    try:
        import numpy  # noqa: F401  (the semantic extra's one library)
    except ImportError as exc:
        raise ModelUnavailable("numpy is not installed (pip install 'memosite[semantic]')") from exc
    from memosite.bpe import load_pieces

    tokenizer_file, weights_file = files
    table = map_table(weights_file)
    try:
        pieces = load_pieces(tokenizer_file, _cache_dir())
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        raise ModelUnavailable(f"cannot read the model's vocabulary ({tokenizer_file.name}): {exc}") from exc
    if len(pieces.ids) != VOCABULARY:
        raise ModelUnavailable(f"the model's vocabulary has {len(pieces.ids)} pieces, not {VOCABULARY}")
    return Embedder(MODEL_NAME, DIMENSIONS, pieces, table, piece_weights())
