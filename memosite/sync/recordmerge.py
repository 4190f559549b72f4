"""Merging two versions of one record against their common ancestor, field by field.

The rules (issue 12): a record changed on one side takes that side. Changed on both sides, each
frontmatter field changed on one side only takes that side; the usage counters ``hits``,
``occurrences``, ``helpfulCount`` and ``staleCount`` add up both sides' increments; ``updated``,
``lastSeen``, ``lastHit`` and ``lastFeedback`` take the later instant (``created`` the earlier, so
a record both sides created keeps its first birth). Two sides that arrived at the very same file
made one change, not two (git never runs a driver for them either). When both sides changed the
same other field,
or the body, the merge is a conflict: the local version stays exactly as it is and the remote one
goes beside it, whole (see :mod:`memosite.sync.paths`). Nothing here touches a disk or git.

A merged file is written with the original text of every field it takes unchanged from either
side (so quoting, comments and YAML 1.1 look-alikes survive, as in :mod:`memosite.schema`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from memosite.errors import InvalidRecord
from memosite.schema import Record, dump_yaml, parse_datetime, parse_record, same_value

# Counters whose increments add up; the value is what an absent field counts as.
COUNTERS: Mapping[str, int] = {"hits": 0, "occurrences": 1, "helpfulCount": 0, "staleCount": 0}
COUNTER_MINIMUM: Mapping[str, int] = {"hits": 0, "occurrences": 1, "helpfulCount": 0, "staleCount": 0}
LATEST_WINS = ("updated", "lastSeen", "lastHit", "lastFeedback")
EARLIEST_WINS = ("created",)
# The instants that say when a version was last touched (a purge newer than all of them wins).
EDIT_TIMES = ("updated", "lastHit", "lastSeen", "lastFeedback")


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()


@dataclass(frozen=True)
class RecordMerge:
    """The outcome of :func:`merge_record`: ``text`` goes to the record's path (the local version
    unchanged when ``conflict``); ``fields`` names what both sides changed differently."""

    text: str
    conflict: bool
    fields: tuple[str, ...] = ()
    reason: str = ""


@dataclass(frozen=True)
class _Version:
    record: Record  # validated: values normalised for comparing
    present: tuple[str, ...]  # keys the file itself holds (not defaults), in file order

    def value(self, key: str) -> Any:
        return self.record.frontmatter.get(key, MISSING) if key in self.present else MISSING

    def chunk(self, key: str, value: Any) -> str | None:
        """The original text of ``key`` when this version holds exactly ``value`` there."""
        source = self.record.source
        if source is None or key not in source.chunks or key not in self.present:
            return None
        return source.chunks[key] if same_value(value, source.values.get(key)) else None


def _version(text: str) -> _Version:
    raw = parse_record(text, validate=False)
    return _Version(parse_record(text), tuple(raw.frontmatter))


def _same(left: Any, right: Any) -> bool:
    if left is MISSING or right is MISSING:
        return left is right
    return same_value(left, right)


def _instant(value: Any) -> datetime | None:
    if value is MISSING or value is None:
        return None
    try:
        return parse_datetime(value)
    except (ValueError, TypeError):
        return None


def _count(value: Any, absent: int) -> int | None:
    if value is MISSING or value is None:
        return absent
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    return None


def merge_field(key: str, base: Any, ours: Any, theirs: Any) -> tuple[bool, Any]:
    """``(clean, value)`` for one frontmatter field (``MISSING`` means the field is absent)."""
    if key in COUNTERS:
        # Increments add up even when both sides reached the same count: two hits are two.
        counts = [_count(v, COUNTERS[key]) for v in (base, ours, theirs)]
        if all(c is not None for c in counts):
            b, o, t = (int(c) for c in counts if c is not None)
            if _same(base, ours):
                return True, theirs
            if _same(base, theirs):
                return True, ours
            return True, max(o + t - b, COUNTER_MINIMUM[key])
    if _same(ours, theirs):
        return True, ours
    if _same(base, ours):
        return True, theirs
    if _same(base, theirs):
        return True, ours
    if key in LATEST_WINS or key in EARLIEST_WINS:
        mine, other = _instant(ours), _instant(theirs)
        if mine is not None and other is not None:
            if mine == other:
                return True, min(str(ours), str(theirs))  # one instant spelled two ways: pick one for both
            later = mine > other
            return True, (ours if later else theirs) if key in LATEST_WINS else (theirs if later else ours)
    return False, ours


def merge_record(base: str | None, ours: str, theirs: str) -> RecordMerge:
    """Merge two versions of a record file (``base`` None: both sides created it).

    Never loses a version: a clean merge holds every change of both sides; a conflict leaves
    ``ours`` byte for byte (the caller keeps ``theirs`` beside it)."""
    if ours == theirs or (base is not None and base == theirs):
        return RecordMerge(ours, False)
    if base is not None and base == ours:
        return RecordMerge(theirs, False)
    try:
        mine, other = _version(ours), _version(theirs)
    except InvalidRecord as exc:
        return RecordMerge(ours, True, reason=f"a version is not a valid record ({exc.message})")
    try:
        common = _version(base) if base is not None else None
    except InvalidRecord:
        common = None  # an ancestor that no longer parses: merge as if both sides created it
    base_body = common.record.body if common is not None else MISSING
    body_clean, body = merge_field("body", base_body, mine.record.body, other.record.body)
    keys = list(dict.fromkeys([*mine.present, *other.present, *(common.present if common else ())]))
    merged: dict[str, Any] = {}
    conflicts: list[str] = [] if body_clean else ["body"]
    for key in keys:
        clean, value = merge_field(key, common.value(key) if common else MISSING, mine.value(key), other.value(key))
        if not clean:
            conflicts.append(key)
        elif value is not MISSING:
            merged[key] = value
    if conflicts:
        what = "the body" if conflicts == ["body"] else ", ".join(conflicts)
        return RecordMerge(ours, True, tuple(conflicts), f"both sides changed {what}")
    text = _assemble(merged, body, mine, other)
    return RecordMerge(text, False)


def _assemble(merged: Mapping[str, Any], body: str, mine: _Version, other: _Version) -> str:
    """The merged file: our field order (then theirs' new fields), each field's original text when
    one side holds exactly the merged value."""
    order = list(dict.fromkeys(k for k in (*mine.present, *other.present, *merged) if k in merged))
    parts = []
    for key in order:
        value = merged[key]
        chunk = mine.chunk(key, value) or other.chunk(key, value)
        parts.append(chunk if chunk is not None else dump_yaml({key: value}))
    return f"---\n{''.join(parts)}---\n{body}"


def edit_instant(text: str | None) -> datetime | None:
    """The latest of a record version's edit instants (``updated``, ``lastHit``, …), if any."""
    if text is None:
        return None
    try:
        record = parse_record(text, validate=False)
    except InvalidRecord:
        return None
    instants = [_instant(record.frontmatter.get(key, MISSING)) for key in EDIT_TIMES]
    found = [moment for moment in instants if moment is not None]
    return max(found) if found else None


def edit_fields(text: str | None) -> tuple[Any, ...]:
    """The raw edit-instant fields of a version (equal for two versions a hand edit tells apart)."""
    if text is None:
        return ()
    try:
        record = parse_record(text, validate=False)
    except InvalidRecord:
        return ()
    return tuple(record.frontmatter.get(key) for key in EDIT_TIMES)
