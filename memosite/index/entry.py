"""What the index holds of one record file: :class:`IndexEntry` and its column lists."""

from __future__ import annotations

import json
import sqlite3
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from memosite.kinds import month_of
from memosite.paths import literal_prefixes
from memosite.schema import is_flagged_stale
from memosite.text import fold, has_unspaced

COLUMNS = (
    "path",
    "project",
    "kind",
    "id",
    "slug",
    "title",
    "status",
    "severity",
    "severity_weight",
    "layer",
    "module",
    "tags",
    "tags_json",
    "path_patterns",
    "pattern_key",
    "created",
    "updated",
    "expires_at",
    "occurrences",
    "hits",
    "helpful",
    "stale",
    "last_hit",
    "supersedes",
    "superseded_by",
    "body",
    "frontmatter",
    "mtime_ns",
    "size",
    "folded",
    "unspaced",
    "pattern_prefixes",
)
FRAGMENT_COLUMNS = (
    "project",
    "kind",
    "stale_last",
    "severity_weight",
    "updated",
    "path",
    "month",
    "status",
    "expires_at",
    "row_view",
    "row_index",
    "row_line",
)


def folded_text(title: str, body: str, tags: str) -> str:
    """What the word index also reads of a record, folded as :func:`memosite.text.fold` folds
    (``πίνακα`` → ``πινακα``, ``счёт`` → ``счет``): FTS5's ``remove_diacritics`` strips only Latin
    marks. Empty when folding changes nothing but case (plain ASCII, CJK), so most records store none."""
    text = f"{title}\n{body}\n{tags}"
    if text.isascii():
        return ""
    folded = fold(text)
    return "" if folded == unicodedata.normalize("NFKC", text.casefold()) else folded


@dataclass
class IndexEntry:
    """What the index knows of one record file (``path`` is relative to the vault root)."""

    path: str
    project: str
    kind: str
    id: str
    slug: str
    title: str
    status: str
    severity: str | None = None
    severity_weight: int = 0
    layer: str | None = None
    module: str | None = None
    tags: list[str] = field(default_factory=list)
    path_patterns: list[str] = field(default_factory=list)
    pattern_key: str = ""
    created: str | None = None
    updated: str | None = None
    expires_at: str | None = None
    occurrences: int = 0
    hits: int = 0
    helpful: int = 0
    stale: int = 0
    last_hit: str | None = None
    supersedes: str | None = None
    superseded_by: str | None = None
    body: str = ""
    frontmatter: dict[str, Any] = field(default_factory=dict)
    mtime_ns: int = 0
    size: int = 0
    row_view: str = ""
    row_index: str = ""
    row_line: str = ""
    # (model, float16 bytes) when indexing computed the record's embedding (memosite.embedding)
    vector: tuple[str, bytes] | None = None

    def as_params(self) -> tuple[Any, ...]:
        values = dict(self.__dict__)
        values["tags_json"] = json.dumps(self.tags)
        values["tags"] = " ".join(self.tags)
        values["path_patterns"] = json.dumps(self.path_patterns)
        values["frontmatter"] = json.dumps(self.frontmatter, default=str, ensure_ascii=False)
        values["folded"] = folded_text(self.title, self.body, values["tags"])
        values["unspaced"] = int(has_unspaced(f"{self.title}\n{self.body}\n{values['tags']}"))
        values["pattern_prefixes"] = json.dumps(literal_prefixes(self.path_patterns))
        return tuple(values[name] for name in COLUMNS)

    def fragment_params(self) -> tuple[Any, ...]:
        values = dict(self.__dict__)
        values["stale_last"] = int(self.is_stale_flagged)
        values["updated"] = self.updated or ""
        values["month"] = month_of(self.updated)
        return tuple(values[name] for name in FRAGMENT_COLUMNS)

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> IndexEntry:
        """An entry from a ``records`` row (fragments are not loaded: views read them in SQL)."""
        return cls.from_values(tuple(row[name] for name in ENTRY_COLUMNS))

    @classmethod
    def from_values(cls, values: Sequence[Any]) -> IndexEntry:
        """An entry from the values of :data:`ENTRY_COLUMNS`, in that order (as ``SELECT``
        :data:`ENTRY_SELECT` returns them); fragments are not loaded."""
        fields = list(values)
        fields[_TAGS] = json_list(fields[_TAGS])
        fields[_PATTERNS] = json_list(fields[_PATTERNS])
        fields[_FRONTMATTER] = json.loads(fields[_FRONTMATTER])
        return cls(*fields)

    @property
    def is_stale_flagged(self) -> bool:
        """Feedback salience: stale votes outweigh helpful ones."""
        return is_flagged_stale(self.helpful, self.stale)


# The columns an IndexEntry is read from, in the order of its fields (``tags_json`` holds ``tags``):
# a row of them is the entry's positional arguments. What only the index reads (the joined tags,
# folded text, pattern prefixes) is not fetched.
ENTRY_COLUMNS = tuple(name for name in COLUMNS if name not in ("tags", "folded", "unspaced", "pattern_prefixes"))
ENTRY_SELECT = ", ".join(ENTRY_COLUMNS)
_TAGS = ENTRY_COLUMNS.index("tags_json")
_PATTERNS = ENTRY_COLUMNS.index("path_patterns")
_FRONTMATTER = ENTRY_COLUMNS.index("frontmatter")

# JSON list text -> its items. Tags and path patterns repeat across records ("[]" above all), so
# each distinct text is decoded once per process; bounded, as a vault's tag sets are not.
_LISTS: dict[str, tuple[Any, ...]] = {}
_LISTS_MAX = 4096


def json_list(text: str) -> list[Any]:
    """``json.loads(text)`` for the JSON text of a list column, a new list each call (a caller may
    change its entry's list; the memo keeps a tuple of strings that no caller sees)."""
    items = _LISTS.get(text)
    if items is None:
        decoded = json.loads(text)
        if not isinstance(decoded, list) or not all(isinstance(item, str) for item in decoded):
            # Not a list of strings (an index written by hand or an old version): decoded afresh
            # each time, so no two entries share a mutable item.
            return decoded  # type: ignore[no-any-return]
        if len(_LISTS) >= _LISTS_MAX:
            _LISTS.clear()
        items = _LISTS[text] = tuple(decoded)
    return list(items)
