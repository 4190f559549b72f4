"""The SQLite FTS5 index: a disposable cache of what the Markdown files say.

One row per record file with the fields views and filters need (so no mutation re-reads the
vault), the pre-rendered view fragments of each record, and an external-content FTS5 table over
title, body and tags kept in step by triggers. Delete the file and ``memosite reindex`` rebuilds it.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memosite.errors import StorageError

SCHEMA_VERSION = "3"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS records (
    rowid INTEGER PRIMARY KEY,
    path TEXT NOT NULL UNIQUE,
    project TEXT NOT NULL,
    kind TEXT NOT NULL,
    id TEXT NOT NULL,
    slug TEXT NOT NULL,
    title TEXT NOT NULL,
    status TEXT NOT NULL,
    severity TEXT,
    severity_weight INTEGER NOT NULL DEFAULT 0,
    layer TEXT,
    module TEXT,
    tags TEXT NOT NULL DEFAULT '',
    tags_json TEXT NOT NULL DEFAULT '[]',
    path_patterns TEXT NOT NULL DEFAULT '[]',
    pattern_key TEXT NOT NULL DEFAULT '',
    created TEXT,
    updated TEXT,
    expires_at TEXT,
    occurrences INTEGER NOT NULL DEFAULT 0,
    hits INTEGER NOT NULL DEFAULT 0,
    helpful INTEGER NOT NULL DEFAULT 0,
    stale INTEGER NOT NULL DEFAULT 0,
    last_hit TEXT,
    supersedes TEXT,
    superseded_by TEXT,
    body TEXT NOT NULL DEFAULT '',
    frontmatter TEXT NOT NULL DEFAULT '{}',
    mtime_ns INTEGER NOT NULL DEFAULT 0,
    size INTEGER NOT NULL DEFAULT 0,
    row_view TEXT NOT NULL DEFAULT '',
    row_index TEXT NOT NULL DEFAULT '',
    row_line TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS records_project_kind ON records(project, kind, status);
CREATE INDEX IF NOT EXISTS records_project_id ON records(project, id);
CREATE INDEX IF NOT EXISTS records_id ON records(id);
CREATE INDEX IF NOT EXISTS records_patterns ON records(project, kind, pattern_key);
CREATE VIRTUAL TABLE IF NOT EXISTS records_fts USING fts5(
    title, body, tags, content='records', content_rowid='rowid', tokenize='porter unicode61'
);
CREATE TRIGGER IF NOT EXISTS records_ai AFTER INSERT ON records BEGIN
    INSERT INTO records_fts(rowid, title, body, tags) VALUES (new.rowid, new.title, new.body, new.tags);
END;
CREATE TRIGGER IF NOT EXISTS records_ad AFTER DELETE ON records BEGIN
    INSERT INTO records_fts(records_fts, rowid, title, body, tags)
    VALUES ('delete', old.rowid, old.title, old.body, old.tags);
END;
CREATE TRIGGER IF NOT EXISTS records_au AFTER UPDATE OF title, body, tags ON records BEGIN
    INSERT INTO records_fts(records_fts, rowid, title, body, tags)
    VALUES ('delete', old.rowid, old.title, old.body, old.tags);
    INSERT INTO records_fts(rowid, title, body, tags) VALUES (new.rowid, new.title, new.body, new.tags);
END;
"""

COLUMNS = (
    "path", "project", "kind", "id", "slug", "title", "status", "severity", "severity_weight",
    "layer", "module", "tags", "tags_json", "path_patterns", "pattern_key", "created", "updated",
    "expires_at", "occurrences", "hits", "helpful", "stale", "last_hit", "supersedes",
    "superseded_by", "body", "frontmatter", "mtime_ns", "size", "row_view", "row_index", "row_line",
)


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

    def as_params(self) -> tuple[Any, ...]:
        values = dict(self.__dict__)
        values["tags_json"] = json.dumps(self.tags)
        values["tags"] = " ".join(self.tags)
        values["path_patterns"] = json.dumps(self.path_patterns)
        values["frontmatter"] = json.dumps(self.frontmatter, default=str, ensure_ascii=False)
        return tuple(values[name] for name in COLUMNS)

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> IndexEntry:
        data = {name: row[name] for name in COLUMNS if name != "tags_json"}
        data["tags"] = json.loads(row["tags_json"])
        data["path_patterns"] = json.loads(row["path_patterns"])
        data["frontmatter"] = json.loads(row["frontmatter"])
        return cls(**data)

    @property
    def is_stale_flagged(self) -> bool:
        """Feedback salience: stale votes outweigh helpful ones."""
        return self.stale > self.helpful


class Index:
    """A connection to ``index.sqlite`` (WAL, busy timeout). Cheap to open; safe across processes."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self.conn = sqlite3.connect(str(path), timeout=30.0, isolation_level=None)
        except (OSError, sqlite3.Error) as exc:
            raise StorageError(f"cannot open index {path}: {exc}") from exc
        self.conn.row_factory = sqlite3.Row
        self.conn.execute("PRAGMA busy_timeout = 30000")
        self.conn.execute("PRAGMA journal_mode = WAL")
        self.conn.execute("PRAGMA synchronous = NORMAL")
        self.fresh = self._ensure_schema()

    def _ensure_schema(self) -> bool:
        """Create the schema; returns True when the index was (re)created and must be filled."""
        has_meta = self.conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type='table' AND name='meta'"
        ).fetchone()
        version = None
        if has_meta:
            row = self.conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
            version = row[0] if row else None
        if version == SCHEMA_VERSION:
            return False
        if version is not None:
            # An index from another memosite version: it is a cache, so start over.
            self.conn.executescript(
                "DROP TRIGGER IF EXISTS records_ai; DROP TRIGGER IF EXISTS records_ad;"
                "DROP TRIGGER IF EXISTS records_au; DROP TABLE IF EXISTS records_fts;"
                "DROP TABLE IF EXISTS records;"
            )
        self.conn.executescript(_SCHEMA)
        self.conn.execute(
            "INSERT OR REPLACE INTO meta(key, value) VALUES ('schema_version', ?)", (SCHEMA_VERSION,)
        )
        return True

    def close(self) -> None:
        self.conn.close()

    # --- transactions ------------------------------------------------------------------------
    def transaction(self) -> _Transaction:
        return _Transaction(self.conn)

    # --- writes ------------------------------------------------------------------------------
    def upsert(self, entry: IndexEntry) -> None:
        placeholders = ", ".join("?" for _ in COLUMNS)
        updates = ", ".join(f"{name} = excluded.{name}" for name in COLUMNS if name != "path")
        self.conn.execute(
            f"INSERT INTO records ({', '.join(COLUMNS)}) VALUES ({placeholders}) "
            f"ON CONFLICT(path) DO UPDATE SET {updates}",
            entry.as_params(),
        )

    def upsert_many(self, entries: Iterable[IndexEntry]) -> None:
        with self.transaction():
            for entry in entries:
                self.upsert(entry)

    def delete_path(self, path: str) -> bool:
        return self.conn.execute("DELETE FROM records WHERE path = ?", (path,)).rowcount > 0

    def clear(self, project: str | None = None) -> None:
        if project is None:
            self.conn.execute("DELETE FROM records")
        else:
            self.conn.execute("DELETE FROM records WHERE project = ?", (project,))

    # --- reads -------------------------------------------------------------------------------
    def _entries(self, sql: str, params: Sequence[Any] = ()) -> list[IndexEntry]:
        return [IndexEntry.from_row(row) for row in self.conn.execute(sql, params)]

    def by_path(self, path: str) -> IndexEntry | None:
        found = self._entries("SELECT * FROM records WHERE path = ?", (path,))
        return found[0] if found else None

    def by_id(self, record_id: str, project: str | None = None) -> list[IndexEntry]:
        if project is None:
            return self._entries("SELECT * FROM records WHERE id = ? ORDER BY path", (record_id,))
        return self._entries(
            "SELECT * FROM records WHERE project = ? AND id = ? ORDER BY path", (project, record_id)
        )

    def traps_with_patterns(self, project: str, key: str) -> list[IndexEntry]:
        return self._entries(
            "SELECT * FROM records WHERE project = ? AND kind = 'trap' AND pattern_key = ? "
            "AND status NOT IN ('archived', 'superseded') ORDER BY updated DESC",
            (project, key),
        )

    def entries(
        self,
        project: str | None = None,
        kinds: Sequence[str] | None = None,
        statuses: Sequence[str] | None = None,
    ) -> list[IndexEntry]:
        clauses, params = _filters(project, kinds, statuses)
        return self._entries(f"SELECT * FROM records{clauses} ORDER BY project, kind, updated DESC", params)

    def column_rows(
        self,
        columns: Sequence[str],
        project: str,
        kinds: Sequence[str],
        order_by: str,
    ) -> Iterator[sqlite3.Row]:
        """Selected columns of a project's records of some kinds (views use this: no JSON decoding)."""
        for name in columns:
            if name not in COLUMNS:
                raise ValueError(f"unknown column {name}")
        clauses, params = _filters(project, kinds, None)
        return self.conn.execute(f"SELECT {', '.join(columns)} FROM records{clauses} ORDER BY {order_by}", params)

    def projects(self) -> list[str]:
        return [row[0] for row in self.conn.execute("SELECT DISTINCT project FROM records ORDER BY project")]

    def file_stats(self, project: str) -> dict[str, tuple[int, int]]:
        return {
            row[0]: (row[1], row[2])
            for row in self.conn.execute(
                "SELECT path, mtime_ns, size FROM records WHERE project = ?", (project,)
            )
        }

    def count(self, project: str | None = None) -> int:
        clauses, params = _filters(project, None, None)
        return int(self.conn.execute(f"SELECT count(*) FROM records{clauses}", params).fetchone()[0])


def _filters(
    project: str | None, kinds: Sequence[str] | None, statuses: Sequence[str] | None
) -> tuple[str, list[Any]]:
    clauses: list[str] = []
    params: list[Any] = []
    if project is not None:
        clauses.append("project = ?")
        params.append(project)
    if kinds:
        clauses.append(f"kind IN ({', '.join('?' for _ in kinds)})")
        params.extend(kinds)
    if statuses:
        clauses.append(f"status IN ({', '.join('?' for _ in statuses)})")
        params.extend(statuses)
    return (" WHERE " + " AND ".join(clauses) if clauses else ""), params


class _Transaction:
    """BEGIN IMMEDIATE ... COMMIT, re-entrant on one connection."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.owner = False

    def __enter__(self) -> sqlite3.Connection:
        if not self.conn.in_transaction:
            self.conn.execute("BEGIN IMMEDIATE")
            self.owner = True
        return self.conn

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if not self.owner:
            return
        if exc_type is None:
            self.conn.execute("COMMIT")
        else:
            self.conn.execute("ROLLBACK")
