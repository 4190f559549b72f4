"""Stormbuffer record files: ``+++`` TOML frontmatter, one blank line, then the Markdown body.

Reading uses the stdlib ``tomllib``; writing uses ``tomli_w`` for every value, laid out in the
seed's canonical order with inline string arrays and one ``[[sources]]`` table per source, so a
canonical file renders back byte for byte. The body is everything after the blank line that
follows the closing fence, kept exactly (line endings, trailing whitespace, no final newline).
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

import tomli_w

from memosite.errors import InvalidArguments, InvalidRecord
from memosite.stormbuffer.model import StormRecord, record_from_frontmatter

FENCE = "+++"
_OPEN_RE = re.compile(r"\A\+\+\+[ \t]*(\r?\n)")
_CLOSE_RE = re.compile(r"^\+\+\+[ \t]*(?:\r?\n|\Z)", re.MULTILINE)
_SEPARATOR_RE = re.compile(r"\r?\n")


def split_document(text: str, where: str = "record") -> tuple[str, str]:
    """Split a record file into its TOML text and its body; raises :class:`InvalidRecord`."""
    opening = _OPEN_RE.match(text)
    if opening is None:
        raise InvalidRecord(
            f"{where}: does not start with a '+++' TOML frontmatter fence", details={"field": "frontmatter"}
        )
    closing = _CLOSE_RE.search(text, opening.end())
    if closing is None:
        raise InvalidRecord(f"{where}: the '+++' frontmatter fence is never closed", details={"field": "frontmatter"})
    rest = text[closing.end() :]
    # The canonical layout puts one blank line between the fence and the body; it belongs to
    # the layout, not to the body, so render() can put it back.
    separator = _SEPARATOR_RE.match(rest)
    body = rest[separator.end() :] if separator else rest
    return text[opening.end() : closing.start()], body


def load_frontmatter(toml_text: str, where: str = "record") -> dict[str, Any]:
    """Parse the TOML frontmatter; raises :class:`InvalidRecord` with the TOML error."""
    try:
        return tomllib.loads(toml_text)
    except tomllib.TOMLDecodeError as exc:
        raise InvalidRecord(f"{where}: frontmatter is not valid TOML: {exc}", details={"field": "frontmatter"}) from exc


def parse_record(text: str, path: Path | None = None) -> StormRecord:
    """Parse and strictly validate one record file.

    Raises :class:`InvalidRecord` (code ``INVALID_RECORD``) naming the file and the field.
    """
    where = str(path) if path else "record"
    toml_text, body = split_document(text, where)
    data = load_frontmatter(toml_text, where)
    try:
        return record_from_frontmatter(data, body)
    except InvalidArguments as exc:
        raise InvalidRecord(f"{where}: {exc.message}", details=exc.details) from exc


def read_record(path: Path) -> StormRecord:
    try:
        text = path.read_bytes().decode("utf-8")  # no newline translation: bodies stay exact
    except UnicodeDecodeError as exc:
        raise InvalidRecord(f"{path}: not UTF-8 text", details={"field": "file"}) from exc
    except OSError as exc:
        raise InvalidRecord(f"{path}: cannot read: {exc.strerror or exc}", details={"field": "file"}) from exc
    return parse_record(text, path)


def _value(value: Any) -> str:
    """One TOML value as ``tomli_w`` writes it (strings, integers)."""
    return tomli_w.dumps({"v": value})[4:-1]


def _inline_array(items: Any) -> str:
    return "[" + ", ".join(_value(item) for item in items) + "]"


def render_frontmatter(record: StormRecord) -> str:
    """The TOML between the fences, in canonical order, ending with a newline."""
    data = record.frontmatter()
    sources = data.pop("sources")
    lines = [
        f"{name} = {_inline_array(value) if isinstance(value, list) else _value(value)}" for name, value in data.items()
    ]
    text = "\n".join(lines) + "\n"
    for source in sources:
        text += "\n[[sources]]\n" + tomli_w.dumps(source)
    return text


def render_record(record: StormRecord) -> str:
    """The whole file: fence, frontmatter, fence, blank line, body exactly as held."""
    return f"{FENCE}\n{render_frontmatter(record)}{FENCE}\n\n{record.body}"
