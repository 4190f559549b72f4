"""basic-memory notes: Markdown files with ``title``, ``type``, ``permalink`` and ``tags`` in their
frontmatter, observations (``- [category] content #tag (context)``) and relations
(``- relation_type [[Target]]``) in their body.

Each note becomes one record, its kind by ``type`` (decision, spec, plan, trap and their usual
names; any other type, ``note`` included, is a spec). The note's frontmatter is kept: title and
tags as memosite's own fields, ``type`` as ``noteType``, the rest (``permalink`` …) as it is, but
for the fields memosite records itself (review, usage, supersession, dates, expiry), which a note
cannot set. The body — observations and relations included — is kept as written, and each
observation's category becomes a tag, so a search by category finds the note. Source: the file.
"""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath
from typing import Any

from memosite.importers.source import (
    SOURCE_FIELDS,
    ImportedRecord,
    Parsed,
    Skipped,
    first_heading,
    relative_source,
    source_base,
    split_frontmatter,
    string_list,
)
from memosite.provenance import RECORDED_FIELDS
from memosite.schema import slugify

FORMAT = "basic-memory"
KIND_BY_TYPE = {
    "decision": "decision",
    "adr": "decision",
    "spec": "spec",
    "specification": "spec",
    "plan": "plan",
    "trap": "trap",
    "gotcha": "trap",
    "pitfall": "trap",
}
# Keys memosite keeps for itself: a note's own value for them is not carried over (a note could
# otherwise claim a review, usage counts, a successor, or an expiry that retires it on arrival).
_OWN_KEYS = RECORDED_FIELDS | {"status", "memoryPath", "expires_at", "ttl", *SOURCE_FIELDS}
OBSERVATION_RE = re.compile(r"^[ \t]*[-*][ \t]+\[([^\]\n]+)\][ \t]+(\S.*)$", re.M)


def note_files(path: Path) -> list[Path]:
    if path.is_file():
        return [path]
    return sorted(
        file
        for file in path.rglob("*.md")
        if file.is_file() and not any(part.startswith(".") for part in file.relative_to(path).parts)
    )


def observation_categories(body: str) -> list[str]:
    found = [slugify(category.strip()) for category, _ in OBSERVATION_RE.findall(body)]
    return list(dict.fromkeys(category for category in found if category))


def record_from_text(text: str, source_path: str) -> ImportedRecord | Skipped:
    header, body = split_frontmatter(text)
    header = header or {}
    if not body.strip():
        return Skipped(source_path, "the note has no text")
    stem = PurePosixPath(source_path).name.removesuffix(".md")
    note_type = str(header.get("type") or "").strip().lower()
    kind = KIND_BY_TYPE.get(note_type, "spec")
    title = str(header.get("title") or "").strip() or first_heading(body) or stem
    tags = [tag.lstrip("#") for tag in string_list(header.get("tags"))]
    fields: dict[str, Any] = {
        key: value
        for key, value in header.items()
        if key not in _OWN_KEYS and key not in ("title", "tags", "type") and value is not None
    }
    fields["tags"] = list(dict.fromkeys(["basic-memory", *tags, *observation_categories(body)]))
    if note_type:
        fields["noteType"] = note_type
    return ImportedRecord(FORMAT, source_path, "", kind, title, body, fields, f"note-{slugify(stem)}")


def parse(path: Path) -> Parsed:
    base = source_base(path)
    parsed = Parsed()
    if path.is_dir():
        parsed.covered.trees.add(relative_source(path, base))
    parsed.read_each(note_files(path), base, record_from_text)
    return parsed


__all__ = ["FORMAT", "observation_categories", "parse", "record_from_text"]
