"""Meaning as vectors: the static embedding model hybrid search ranks by, with no network ever.

The model is WordLlama's ``l2_supercat`` (MIT): a table of 32,000 token vectors of 256 dimensions
and its tokenizer, both shipped inside the ``wordllama`` wheel (``pip install memosite[semantic]``).
A text's vector is the mean of its tokens' vectors, scaled to unit length, so the dot product of two
vectors is their cosine similarity. A record's vector is the sum of its title's and its body's, scaled
again (:meth:`Embedder.embed_records`): the title says what a record is about in few words, and a
mean over a long body would drown it. The model was trained on English: :func:`reads` says whether
a query is written in a script it knows (Latin letters), and a query in another script is ranked by
words alone. Only the two data files are read — with ``tokenizers`` and
``safetensors`` — never ``wordllama``'s own loader, which downloads the tokenizer from a model hub
when asked for it by name (and configures the root logger on import).

:func:`load_embedder` loads the model once per process, lazily: ``import memosite`` and a search
with hybrid off never import numpy. It returns ``None`` when the extra is not installed; search then
ranks by words alone. Vectors are stored as float16 (:meth:`Embedder.to_blob`): 512 bytes a record.
"""

from __future__ import annotations

import functools
import importlib.util
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MODEL_NAME = "wordllama-l2-supercat-256"
DIMENSIONS = 256
_PACKAGE = "wordllama"
_TOKENIZER_FILE = ("tokenizers", "l2_supercat_tokenizer_config.json")
_WEIGHTS_FILE = ("weights", "l2_supercat_256.safetensors")
_WEIGHTS_KEY = "embedding.weight"
# What of a body its vector reads: the start. A mean over the tokens of a 20 KB record would say
# little about any of its parts; the opening says what the record is about.
RECORD_TEXT_CHARS = 2000
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


@dataclass(frozen=True)
class Embedder:
    """A loaded static model: token vectors and the tokenizer that maps text onto them."""

    name: str
    dimensions: int
    tokenizer: Any  # tokenizers.Tokenizer
    table: Any  # numpy float32 array (vocabulary, dimensions)

    def embed(self, texts: Sequence[str]) -> Any:
        """One unit-length float32 row per text (a zero row for a text with no tokens)."""
        import numpy as np

        out = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        if not texts:
            return out
        encodings = self.tokenizer.encode_batch(list(texts), add_special_tokens=False)
        for row, encoding in enumerate(encodings):
            ids = encoding.ids
            if ids:
                out[row] = self.table[ids].mean(axis=0)
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


def model_files() -> tuple[Path, Path] | None:
    """Where the installed ``wordllama`` wheel keeps the tokenizer and the weights, found without
    importing the package; None when it is not installed or lacks them."""
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
    return None


@functools.cache
def load_embedder() -> Embedder | None:
    """The model, loaded once per process from the files the wheel ships (no network, no cache
    directory); None when ``memosite[semantic]`` is not installed."""
    files = model_files()
    if files is None:
        return None
    try:
        import numpy as np
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer
    except ImportError:
        return None
    tokenizer_file, weights_file = files
    try:
        tokenizer = Tokenizer.from_file(str(tokenizer_file))
        table = load_file(str(weights_file))[_WEIGHTS_KEY]
    except Exception:  # tokenizers raises plain Exception: a damaged install is no model, not a crash
        return None
    tokenizer.no_padding()
    tokenizer.no_truncation()
    return Embedder(MODEL_NAME, int(table.shape[1]), tokenizer, np.ascontiguousarray(table, dtype=np.float32))
