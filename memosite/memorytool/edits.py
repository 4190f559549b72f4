"""A memory file's text as a record: what the model may change, and what it may not.

A file the model reads is the record file itself, frontmatter and body. What it writes back —
a whole file with ``create``, an edited one with ``str_replace`` or ``insert`` — is split the same
way: a leading ``---`` block is YAML frontmatter (parsed and validated like any record's: an
invalid block is refused and nothing is written), the rest is the body, kept byte for byte. A text
without a leading ``---`` line is all body.

The model writes the record's own fields (``title``, ``tags``, ``severity``, ``pathPatterns``,
``ttl`` …). Fields memosite keeps — who wrote the record and when, its id, kind and project, its
review state, its usage counts, where the tool shows it — are not the model's to set: a text that
adds, changes or drops one is refused, whichever command carries it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import yaml

from memosite.errors import InvalidArguments, InvalidRecord
from memosite.memorytool.tree import MEMORY_PATH_FIELD
from memosite.provenance import RECORDED_FIELDS
from memosite.schema import parse_record, same_value
from memosite.statuses import LIVE_STATUSES

# Fields memosite keeps: recorded, never claimed (see the module docstring).
KEPT_FIELDS = RECORDED_FIELDS | {MEMORY_PATH_FIELD}
_CLOSING_FENCE_RE = re.compile(r"^(?:---|\.\.\.)[ \t]*\r?\n?\Z", re.MULTILINE)
# What a deleted or renamed file becomes is the tool's to say, not a status the text sets.
MODEL_STATUSES = LIVE_STATUSES  # the statuses a model may set (archiving is deleting the file)


@dataclass(frozen=True)
class FileText:
    """A memory file's text split into raw frontmatter (None: the text has no ``---`` block) and body."""

    frontmatter: dict[str, Any] | None
    body: str


def split_text(text: str, where: str, *, written: bool = True) -> FileText:
    """Split a file's text; INVALID_ARGUMENTS naming what is wrong when its frontmatter block does
    not parse (unterminated, not YAML, not a mapping) or, when ``written`` (a text the model wrote,
    not the file as stored), names a field twice."""
    if not text.removeprefix("\ufeff").startswith("---"):
        return FileText(None, text)
    try:
        record = parse_record(text, validate=False, where=where)
    except InvalidRecord as exc:
        if exc.message.startswith("no YAML frontmatter"):
            return FileText(None, text)  # a line such as "----" or "--- notes": not a block
        raise InvalidArguments(f"Error: {exc.message}; nothing was written") from exc
    twice = _key_named_twice(text[: len(text) - len(record.body)].removeprefix("\ufeff")) if written else None
    if twice is not None:
        # YAML keeps the last of the two and drops the other without a word: an edit that adds a
        # field above its old line would be reported done and silently lost.
        name, first, second = twice
        raise InvalidArguments(
            f"Error: the frontmatter of {where} names {name} twice (lines {first} and {second}): keep one;"
            " nothing was written"
        )
    return FileText(dict(record.frontmatter), record.body)


def _key_named_twice(head: str) -> tuple[str, int, int] | None:
    """The first top-level key the frontmatter block ``head`` (its ``---`` lines included) names
    twice, with the file's line numbers of both."""
    block = _CLOSING_FENCE_RE.sub("", head.split("\n", 1)[-1])
    try:
        node = yaml.compose(block, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return None
    if not isinstance(node, yaml.MappingNode):
        return None
    seen: dict[str, int] = {}
    for key, _ in node.value:
        if not isinstance(key, yaml.ScalarNode):
            continue
        line = key.start_mark.line + 2  # the block starts on the file's second line
        if key.value in seen:
            return key.value, seen[key.value], line
        seen[key.value] = line
    return None


def _refuse(names: list[str], where: str, what: str) -> InvalidArguments:
    fields = ", ".join(sorted(names))
    return InvalidArguments(
        f"Error: {fields} {'is' if len(names) == 1 else 'are'} kept by memosite and cannot be {what} through the"
        f" memory tool ({where}); nothing was written",
        details={"fields": sorted(names)},
    )


def _check_status(fields: Mapping[str, Any], where: str) -> None:
    status = fields.get("status")
    if status is not None and str(status).strip().lower() not in MODEL_STATUSES:
        raise InvalidArguments(
            f"Error: status {status!r} cannot be set through the memory tool ({where}): use one of"
            f" {', '.join(MODEL_STATUSES)}; delete the file to archive it; nothing was written"
        )


def fields_for_new(given: Mapping[str, Any] | None, *, slug: str, kind: str, where: str) -> dict[str, Any]:
    """The fields a new file's frontmatter sets. ``id`` and ``kind`` may repeat what the path says
    (a copy of another record's text does); anything else memosite keeps is refused."""
    fields = dict(given or {})
    agreeing = {"id": slug, "kind": kind}
    for name, value in agreeing.items():
        if name in fields and str(fields[name]).strip().lower() == value.lower():
            fields.pop(name)
    kept = [name for name in fields if name in KEPT_FIELDS]
    if kept:
        raise _refuse(kept, where, "set")
    _check_status(fields, where)
    return fields


def fields_changed(before: Mapping[str, Any], after: Mapping[str, Any] | None, where: str) -> dict[str, Any]:
    """What an edit changes in the frontmatter: new or changed fields with their values, removed
    ones as None (an upsert drops a field given as None). Refused when it touches a kept field or
    removes the frontmatter block."""
    if after is None:
        raise InvalidArguments(
            f"Error: the edit removes the frontmatter block at the top of {where} (its --- lines hold the"
            " record's fields): keep it; nothing was written"
        )

    def touches(name: str) -> bool:
        if name not in KEPT_FIELDS:
            return False
        if (name in before) != (name in after):
            return True
        return name in before and not same_value(before[name], after[name])

    touched = [name for name in sorted({*before, *after}) if touches(name)]
    if touched:
        raise _refuse(touched, where, "changed")
    changes: dict[str, Any] = {name: value for name, value in after.items() if not same_value(before.get(name), value)}
    changes.update({name: None for name in before if name not in after})
    _check_status(changes, where)
    return changes


__all__ = ["KEPT_FIELDS", "FileText", "fields_changed", "fields_for_new", "split_text"]
