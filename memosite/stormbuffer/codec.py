"""Stormbuffer record files: ``+++`` TOML frontmatter, a blank line, then the Markdown body.

Split exactly as ``stormbuffer-core``'s ``split_markdown``: the file starts with ``+++`` and a
line ending; the frontmatter ends at the first later line that is exactly ``+++``; that line
must be followed by a blank line (``\\n`` or ``\\r\\n``), and everything after the blank line is
the body, kept byte for byte. Rendering writes what ``render_markdown`` writes (see
:mod:`.tomlstyle`), so a record rewritten by memosite is byte-identical to one rewritten by
``sbuf``.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from memosite.errors import InvalidArguments, InvalidRecord
from memosite.stormbuffer.model import StormRecord, record_from_frontmatter, validate_record
from memosite.stormbuffer.tomlstyle import render_document

FENCE = "+++"


def split_document(text: str, where: str = "record") -> tuple[str, str]:
    """The TOML text and the body of a record file; raises :class:`InvalidRecord`."""

    def refuse(message: str) -> InvalidRecord:
        return InvalidRecord(f"{where}: {message}", details={"field": "frontmatter"})

    if text.startswith("+++\n"):
        rest = text[4:]
    elif text.startswith("+++\r\n"):
        rest = text[5:]
    else:
        raise refuse("a record must begin with a TOML opening delimiter (`+++`) on its own line")
    search = 0
    while (newline := rest.find("\n", search)) >= 0:
        marker = newline + 1
        for ending in ("+++\n", "+++\r\n"):
            if rest.startswith(ending, marker):
                break
        else:
            search = marker
            continue
        frontmatter_end = newline - 1 if newline > 0 and rest[newline - 1] == "\r" else newline
        after = rest[marker + len(ending) :]
        if after.startswith("\r\n"):
            return rest[:frontmatter_end], after[2:]
        if after.startswith("\n"):
            return rest[:frontmatter_end], after[1:]
        raise refuse("the closing `+++` delimiter must be followed by a blank line")
    raise refuse("the closing TOML delimiter (`+++`) is missing")


def load_frontmatter(toml_text: str, where: str = "record") -> dict[str, Any]:
    """Parse the TOML frontmatter; raises :class:`InvalidRecord` with the TOML error."""
    try:
        return tomllib.loads(toml_text)
    except tomllib.TOMLDecodeError as exc:
        raise InvalidRecord(f"{where}: frontmatter TOML is invalid: {exc}", details={"field": "frontmatter"}) from exc


def parse_record(text: str, path: Path | None = None) -> StormRecord:
    """Parse and strictly validate one record file (:class:`InvalidRecord` names file and field)."""
    where = str(path) if path else "record"
    toml_text, body = split_document(text, where)
    data = load_frontmatter(toml_text, where)
    try:
        return record_from_frontmatter(data, body)
    except InvalidArguments as exc:
        raise InvalidRecord(f"{where}: {exc.message}", details=exc.details) from exc


def decode_record_bytes(data: bytes, path: Path) -> str:
    try:
        return data.decode("utf-8")  # no newline translation: bodies stay exact
    except UnicodeDecodeError as exc:
        raise InvalidRecord(f"{path}: record is not valid UTF-8", details={"field": "file"}) from exc


def read_record(path: Path) -> StormRecord:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InvalidRecord(f"{path}: cannot read: {exc.strerror or exc}", details={"field": "file"}) from exc
    return parse_record(decode_record_bytes(data, path), path)


def render_frontmatter(record: StormRecord) -> str:
    """The TOML between the fences, ending with a newline."""
    data = record.frontmatter()
    sources = data.pop("sources")
    return render_document(data, [("sources", source) for source in sources], pretty=True)


def render_record(record: StormRecord) -> str:
    """The whole file: fence, frontmatter, fence, blank line, body exactly as held."""
    validate_record(record)
    return f"{FENCE}\n{render_frontmatter(record)}{FENCE}\n\n{record.body}"


def source_head(text: str, record: StormRecord) -> str | None:
    """What a record file says before its body (fences, TOML, blank line) when it is not what
    :func:`render_record` would write — a hand-laid-out file (``tags = ["a", "b"]`` on one line,
    other quotes or spacing); None when rendering gives the file back as it is."""
    if not text.endswith(record.body) or text == render_record(record):
        return None
    return text[: len(text) - len(record.body)]


def says_the_same(text: str, record: StormRecord) -> bool:
    """Whether the record file ``text`` holds exactly ``record``, however its TOML is laid out: then
    writing ``text`` keeps a store's bytes where rendering would change them, as Stormbuffer's own
    transfer keeps a record's markdown unless the record changed."""
    try:
        return render_record(parse_record(text)) == render_record(record)
    except InvalidRecord:
        return False
