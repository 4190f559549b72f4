"""Paths of the memory tool: everything lives under ``/memories``, and what a path means.

The model names files with paths such as ``/memories/traps/retry.md``. A path is checked and
canonicalised before anything else looks at it (:func:`canonical_path`): it must stay inside
``/memories``; ``..`` and ``.`` parts, backslashes, control characters (NUL among them),
percent-encoded traversal (``%2e%2e%2f``, ``%252e%252e%252f``, any depth of encoding) and
percent-encoded separators (``a%2Fb``) are refused, as are Unicode look-alikes that normalise to
them (``．．``) and characters that make a name read as another: invisible format characters
(``\u200b..`` shows as ``..``, ``x.md\u202e`` turns what follows it around), line and paragraph
separators, unpaired surrogates. The path never reaches the file system:
it is mapped onto a record (see :mod:`memosite.memorytool.tree`), so these checks are the first of
two walls, not the only one.

What a file's path says of its record (:func:`kind_for_path`): a file directly inside a kind's
directory (``/memories/traps/x.md``, ``/memories/decisions/x.md``, …) is a record of that kind;
any other file — at the top of ``/memories`` or in a folder of the model's own — is a ``state``
record (the model's working notes: private, kept out of the compiled views and the site).
"""

from __future__ import annotations

import re
import unicodedata
from urllib.parse import unquote

from memosite.errors import InvalidArguments
from memosite.kinds import KIND_FACTS

ROOT = "/memories"
MAX_PATH_LENGTH = 255  # characters: the API's own limit for a memory path
MAX_DECODING_ROUNDS = 4  # percent-decoding applied until the text stops changing, at most this often
# The directory a kind's records appear in under /memories: the vault's own directory name, but
# state (which shares plans/ with plan in the vault) gets a directory of its own.
KIND_DIRECTORY: dict[str, str] = {
    kind: ("state" if kind == "state" else facts.directory) for kind, facts in KIND_FACTS.items()
}
DIRECTORY_KIND: dict[str, str] = {directory: kind for kind, directory in KIND_DIRECTORY.items()}
# The directories always listed under /memories, even empty: where the model should put what the
# team reads (the others appear once they hold something).
SHOWN_KIND_DIRECTORIES = ("traps", "decisions", "specs", "plans")
MODEL_FILES_KIND = "state"

_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_PERCENT_RE = re.compile(r"%[0-9A-Fa-f]{2}")
# Unicode categories no path may hold: format characters (zero-width spaces, bidirectional
# controls), line and paragraph separators, surrogates. The joiners stay: Persian, the Indic
# scripts and emoji sequences are written with them.
_INVISIBLE_CATEGORIES = frozenset({"Cf", "Zl", "Zp", "Cs"})
_JOINERS = frozenset("\u200c\u200d")
_UNSHOWN_CATEGORIES = _INVISIBLE_CATEGORIES | {"Cc"}


def shown_path(path: object) -> str:
    """``path`` as a refusal quotes it: on one line, what cannot be seen or encoded escaped
    (``\\u202e``), everything else as written."""
    text = str(path)
    return "".join(
        char.encode("unicode_escape").decode("ascii")
        if unicodedata.category(char) in _UNSHOWN_CATEGORIES and char not in _JOINERS
        else char
        for char in text
    )


def escapes_root(path: object) -> InvalidArguments:
    """The tool's text for a path that leaves ``/memories``."""
    return InvalidArguments(f"Path {shown_path(path)} would escape /memories directory")


def _outside_root(path: object) -> InvalidArguments:
    return InvalidArguments(f"Path must start with /memories, got: {shown_path(path)}")


def _traversal_in(text: str) -> bool:
    """``..`` or ``.`` as a path part, a backslash or a control character, read as a path would be
    (after Unicode compatibility normalisation, which turns ``．`` into ``.`` and ``／`` into ``/``)."""
    for form in (text, unicodedata.normalize("NFKC", text)):
        if "\\" in form or _CONTROL_RE.search(form):
            return True
        if any(part in (".", "..") for part in form.split("/")):
            return True
    return False


def _invisible_in(text: str) -> str | None:
    """The first character of ``text`` that would make it read as another name (see the module
    docstring), or None."""
    for char in text:
        if unicodedata.category(char) in _INVISIBLE_CATEGORIES and char not in _JOINERS:
            return char
    return None


def _separators(text: str) -> int:
    return text.count("/") + text.count("\\")


def canonical_path(path: object) -> str:
    """``path`` as one canonical ``/memories/...`` string (NFC, no doubled or trailing slash), or
    INVALID_ARGUMENTS with the tool's own text for a path it refuses (see the module docstring)."""
    if not isinstance(path, str) or not path:
        raise _outside_root(path)
    if len(path) > MAX_PATH_LENGTH:
        raise InvalidArguments(f"Path {shown_path(path[:60])}… is longer than {MAX_PATH_LENGTH} characters")
    layers = [path]
    while _PERCENT_RE.search(layers[-1]) and len(layers) <= MAX_DECODING_ROUNDS:
        decoded = unquote(layers[-1], errors="strict") if _decodes(layers[-1]) else layers[-1]
        if decoded == layers[-1]:
            break
        if _separators(decoded) > _separators(layers[-1]):
            raise escapes_root(path)  # a separator smuggled in encoded (``a%2Fb``, ``%255C``)
        layers.append(decoded)
    if any(_traversal_in(layer) for layer in layers):
        raise escapes_root(path)
    hidden = next((char for layer in layers if (char := _invisible_in(layer)) is not None), None)
    if hidden is not None:
        raise InvalidArguments(
            f"Path {shown_path(path)} holds an invisible character (U+{ord(hidden):04X}) that makes it read as"
            " another name: use visible characters only"
        )
    if _PERCENT_RE.search(layers[-1]):
        raise escapes_root(path)  # still encoded after every round: nothing honest nests this deep
    text = unicodedata.normalize("NFC", path)
    if text != ROOT and not text.startswith(ROOT + "/"):
        raise _outside_root(path)
    parts = [part for part in text[len(ROOT) :].split("/") if part]
    return "/".join([ROOT, *parts])


def _decodes(text: str) -> bool:
    try:
        unquote(text, errors="strict")
    except UnicodeDecodeError:
        return False
    return True


def parts_of(path: str) -> list[str]:
    """The parts of a canonical path below ``/memories`` (``[]`` for the root itself)."""
    return [part for part in path[len(ROOT) :].split("/") if part]


def kind_for_path(path: str) -> str:
    """The kind of the record a file at ``path`` is (see the module docstring)."""
    parts = parts_of(path)
    if len(parts) == 2 and parts[0] in DIRECTORY_KIND:
        return DIRECTORY_KIND[parts[0]]
    return MODEL_FILES_KIND


def is_kind_directory(path: str) -> bool:
    parts = parts_of(path)
    return len(parts) == 1 and parts[0] in DIRECTORY_KIND


def canonical_file_path(kind: str, file_name: str) -> str:
    """Where a record of ``kind`` stored as ``file_name`` appears when it names no path of its own."""
    return f"{ROOT}/{KIND_DIRECTORY[kind]}/{file_name}"


def is_within(path: str, directory: str) -> bool:
    """True when ``path`` lies below ``directory`` (not the directory itself)."""
    return path.startswith(directory.rstrip("/") + "/")


__all__ = [
    "DIRECTORY_KIND",
    "KIND_DIRECTORY",
    "MAX_PATH_LENGTH",
    "MODEL_FILES_KIND",
    "ROOT",
    "SHOWN_KIND_DIRECTORIES",
    "canonical_file_path",
    "canonical_path",
    "escapes_root",
    "is_kind_directory",
    "is_within",
    "kind_for_path",
    "parts_of",
    "shown_path",
]
