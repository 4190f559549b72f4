"""What the index holds of one record file: :class:`IndexEntry` and its column lists."""

from __future__ import annotations

import json
import sqlite3
import unicodedata
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
        data = {
            name: row[name] for name in COLUMNS if name not in ("tags_json", "folded", "unspaced", "pattern_prefixes")
        }
        data["tags"] = json.loads(row["tags_json"])
        data["path_patterns"] = json.loads(row["path_patterns"])
        data["frontmatter"] = json.loads(row["frontmatter"])
        return cls(**data)

    @property
    def is_stale_flagged(self) -> bool:
        """Feedback salience: stale votes outweigh helpful ones."""
        return is_flagged_stale(self.helpful, self.stale)
