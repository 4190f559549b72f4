"""The SQLite FTS5 index: a disposable cache of what the Markdown files say.

One row per record file with the fields views and filters need (so no mutation re-reads the
vault), the pre-rendered view fragments of each record, and an external-content FTS5 table over
title, body and tags kept in step by triggers. Delete the file and ``memosite reindex`` rebuilds it.
"""

from __future__ import annotations

import contextlib
import json
import secrets
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memosite.errors import StorageError
from memosite.schema import is_flagged_stale
from memosite.vault import warn

SCHEMA_VERSION = "15"

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
    size INTEGER NOT NULL DEFAULT 0
);
-- Rendered view fragments, clustered in view order so a view section is one ordered range scan.
CREATE TABLE IF NOT EXISTS fragments (
    project TEXT NOT NULL,
    kind TEXT NOT NULL,
    stale_last INTEGER NOT NULL,
    severity_weight INTEGER NOT NULL,
    updated TEXT NOT NULL,
    path TEXT NOT NULL,
    month TEXT NOT NULL,
    status TEXT NOT NULL,
    expires_at TEXT,
    row_view TEXT NOT NULL,
    row_index TEXT NOT NULL,
    row_line TEXT NOT NULL,
    PRIMARY KEY (project, kind, stale_last, severity_weight DESC, updated DESC, path)
) WITHOUT ROWID;
CREATE UNIQUE INDEX IF NOT EXISTS fragments_path ON fragments(path);
CREATE INDEX IF NOT EXISTS fragments_live ON fragments(project, kind, status, expires_at);
-- How many fragments each chunk holds, kept in step by upsert/delete: the chunk list of a kind
-- without scanning its fragments.
CREATE TABLE IF NOT EXISTS fragment_chunks (
    project TEXT NOT NULL,
    kind TEXT NOT NULL,
    stale_last INTEGER NOT NULL,
    severity_weight INTEGER NOT NULL,
    month TEXT NOT NULL,
    rows INTEGER NOT NULL,
    PRIMARY KEY (project, kind, stale_last, severity_weight DESC, month DESC)
) WITHOUT ROWID;
-- Assembled pieces of view sections, one per chunk of a kind's fragments (same stale flag,
-- severity and month of ``updated``). A change drops only the chunks its old and new fragment
-- belong to; a piece also goes stale on its own when one of its records expires (valid_until).
-- The text lives in each process's memory under ``token``; the row says whether it is current.
CREATE TABLE IF NOT EXISTS view_cache (
    project TEXT NOT NULL,
    kind TEXT NOT NULL,
    chunk TEXT NOT NULL,
    name TEXT NOT NULL,
    count INTEGER NOT NULL,
    token INTEGER NOT NULL,
    valid_until TEXT,
    PRIMARY KEY (project, kind, chunk, name)
) WITHOUT ROWID;
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
)
_FRAGMENT_COLUMNS = (
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
# The fragments table's clustering order; views read ranges of it in this order.
VIEW_ORDER = "stale_last, severity_weight DESC, updated DESC, path"


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

    def fragment_params(self) -> tuple[Any, ...]:
        values = dict(self.__dict__)
        values["stale_last"] = int(self.is_stale_flagged)
        values["updated"] = self.updated or ""
        values["month"] = values["updated"][:7]
        return tuple(values[name] for name in _FRAGMENT_COLUMNS)

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> IndexEntry:
        """An entry from a ``records`` row (fragments are not loaded: views read them in SQL)."""
        data = {name: row[name] for name in COLUMNS if name != "tags_json"}
        data["tags"] = json.loads(row["tags_json"])
        data["path_patterns"] = json.loads(row["path_patterns"])
        data["frontmatter"] = json.loads(row["frontmatter"])
        return cls(**data)

    @property
    def is_stale_flagged(self) -> bool:
        """Feedback salience: stale votes outweigh helpful ones."""
        return is_flagged_stale(self.helpful, self.stale)


class Index:
    """A connection to ``index.sqlite`` (WAL, busy timeout). Cheap to open; safe across processes."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            self.fresh = self._connect()
        except sqlite3.DatabaseError as exc:
            if isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc):
                raise StorageError(f"cannot open index {path}: {exc}") from exc
            # Not a database, or damaged: the index is a cache of the Markdown, so start a new one.
            warn(f"index {path.name} is damaged ({exc}); rebuilding it from the records")
            with contextlib.suppress(Exception):
                self.conn.close()
            for suffix in ("", "-wal", "-shm"):
                with contextlib.suppress(FileNotFoundError):
                    Path(f"{path}{suffix}").unlink()
            try:
                self.fresh = self._connect()
            except sqlite3.Error as again:
                raise StorageError(f"cannot open index {path}: {again}") from again
        except OSError as exc:
            raise StorageError(f"cannot open index {path}: {exc}") from exc
        # View pieces this process has assembled, current while view_cache still holds their token.
        self._pieces: dict[tuple[str, str, str, str], tuple[int, bytes]] = {}

    def _connect(self) -> bool:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.conn = sqlite3.connect(str(self.path), timeout=30.0, isolation_level=None)
        self.conn.row_factory = sqlite3.Row
        self.conn.execute("PRAGMA busy_timeout = 30000")
        self.conn.execute("PRAGMA journal_mode = WAL")
        self.conn.execute("PRAGMA synchronous = NORMAL")
        # Views scan whole fragment ranges: map the file instead of copying pages through read().
        self.conn.execute("PRAGMA mmap_size = 268435456")
        self.conn.execute("PRAGMA cache_size = -32768")
        return self._ensure_schema()

    def _ensure_schema(self) -> bool:
        """Create the schema; returns True when the index was (re)created and must be filled."""
        has_meta = self.conn.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name='meta'").fetchone()
        version = None
        if has_meta:
            row = self.conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
            version = row[0] if row else None
        tables = {row[0] for row in self.conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if version == SCHEMA_VERSION and tables >= _TABLES:
            return False
        if version is not None:
            # An index from another memosite version: it is a cache, so start over.
            self.conn.executescript(
                "DROP TRIGGER IF EXISTS records_ai; DROP TRIGGER IF EXISTS records_ad;"
                "DROP TRIGGER IF EXISTS records_au; DROP TABLE IF EXISTS records_fts;"
                "DROP TABLE IF EXISTS records; DROP TABLE IF EXISTS fragments;"
                "DROP TABLE IF EXISTS view_cache; DROP TABLE IF EXISTS fragment_chunks;"
            )
        self.conn.executescript(_SCHEMA)
        self.conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('schema_version', ?)", (SCHEMA_VERSION,))
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
        self._drop_fragment(entry.path)
        if entry.row_index:
            params = entry.fragment_params()
            row = dict(zip(_FRAGMENT_COLUMNS, params, strict=True))
            self._count_chunk(entry.project, entry.kind, row["stale_last"], row["severity_weight"], row["month"], +1)
            self.conn.execute(
                f"INSERT INTO fragments ({', '.join(_FRAGMENT_COLUMNS)}) "
                f"VALUES ({', '.join('?' for _ in _FRAGMENT_COLUMNS)})",
                params,
            )

    def _drop_fragment(self, path: str) -> None:
        old = self.conn.execute(
            "SELECT project, kind, stale_last, severity_weight, month FROM fragments WHERE path = ?", (path,)
        ).fetchone()
        if old is not None:
            self._count_chunk(old[0], old[1], old[2], old[3], old[4], -1)
            self.conn.execute("DELETE FROM fragments WHERE path = ?", (path,))

    def _count_chunk(self, project: str, kind: str, stale_last: int, weight: int, month: str, delta: int) -> None:
        """Adjust a chunk's fragment count and drop its cached pieces: its content changed."""
        self.conn.execute(
            "DELETE FROM view_cache WHERE project = ? AND kind = ? AND chunk = ?",
            (project, kind, chunk_key(stale_last, weight, month)),
        )
        key = (project, kind, stale_last, weight, month)
        self.conn.execute(
            "INSERT INTO fragment_chunks (project, kind, stale_last, severity_weight, month, rows)"
            " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO UPDATE SET rows = rows + excluded.rows",
            (*key, delta),
        )
        self.conn.execute(
            "DELETE FROM fragment_chunks WHERE project = ? AND kind = ? AND stale_last = ?"
            " AND severity_weight = ? AND month = ? AND rows <= 0",
            key,
        )

    def delete_path(self, path: str) -> bool:
        self._drop_fragment(path)
        return self.conn.execute("DELETE FROM records WHERE path = ?", (path,)).rowcount > 0

    def clear(self, project: str | None = None) -> None:
        for table in ("records", "fragments", "fragment_chunks", "view_cache"):
            if project is None:
                self.conn.execute(f"DELETE FROM {table}")
            else:
                self.conn.execute(f"DELETE FROM {table} WHERE project = ?", (project,))

    # --- reads -------------------------------------------------------------------------------
    def _entries(self, sql: str, params: Sequence[Any] = ()) -> list[IndexEntry]:
        return [IndexEntry.from_row(row) for row in self.conn.execute(sql, params)]

    def by_path(self, path: str) -> IndexEntry | None:
        found = self._entries("SELECT * FROM records WHERE path = ?", (path,))
        return found[0] if found else None

    def by_id(self, record_id: str, project: str | None = None) -> list[IndexEntry]:
        if project is None:
            return self._entries("SELECT * FROM records WHERE id = ? ORDER BY path", (record_id,))
        return self._entries("SELECT * FROM records WHERE project = ? AND id = ? ORDER BY path", (project, record_id))

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

    def joined(
        self,
        expression: str,
        project: str,
        kinds: Sequence[str],
        *,
        where: str = "",
        params: Sequence[Any] = (),
    ) -> tuple[int, bytes]:
        """Count and UTF-8 concatenation of a fragment ``expression`` over matching rows in view order.

        Views are assembled with this: one ordered range scan of the clustered fragments table, no
        per-row Python work, and bytes (no decoding of megabytes of text just to encode it again).
        ``expression`` and ``where`` come from our own code only.
        """
        clauses, values = _filters(project, kinds, None)
        if where:
            clauses += f" AND ({where})"
            values.extend(params)
        row = self.conn.execute(
            f"SELECT count(*), CAST(coalesce(group_concat(piece, ''), '') AS BLOB) FROM "
            f"(SELECT {expression} AS piece FROM fragments{clauses} ORDER BY {VIEW_ORDER})",
            values,
        ).fetchone()
        return int(row[0]), bytes(row[1])

    def section(
        self,
        name: str,
        expression: str,
        project: str,
        kind: str,
        now_iso: str,
        *,
        where: str = "",
        params: Sequence[Any] = (),
    ) -> tuple[int, list[bytes]]:
        """:meth:`joined` for one kind, as its cached chunk pieces in order.

        Only the chunks a change touched (or whose records have expired since) are recomputed, so
        the cost of a write stays near constant as a kind grows. ``name`` must identify
        ``expression`` + ``where``.
        """
        total = 0
        pieces: list[bytes] = []
        # Every chunk of the kind in view order, with its cached piece's metadata when there is one.
        chunks = self.conn.execute(
            "SELECT c.stale_last, c.severity_weight, c.month, v.count, v.token, v.valid_until"
            " FROM fragment_chunks AS c LEFT JOIN view_cache AS v ON v.project = c.project AND v.kind = c.kind"
            " AND v.chunk = c.stale_last || '|' || c.severity_weight || '|' || c.month AND v.name = ?"
            " WHERE c.project = ? AND c.kind = ? ORDER BY c.stale_last, c.severity_weight DESC, c.month DESC",
            (name, project, kind),
        ).fetchall()
        for stale_last, weight, month, cached_count, token, valid_until in chunks:
            key = (project, kind, chunk_key(stale_last, weight, month), name)
            current = token is not None and (valid_until is None or now_iso < valid_until)
            remembered = self._pieces.get(key)
            if current and remembered is not None and remembered[0] == token:
                count, text = int(cached_count), remembered[1]
            else:
                in_chunk = "stale_last = ? AND severity_weight = ? AND month = ?"
                chunk_params = (stale_last, weight, month)
                count, text = self.joined(
                    expression,
                    project,
                    (kind,),
                    where=f"{in_chunk} AND ({where})" if where else in_chunk,
                    params=(*chunk_params, *params),
                )
                if not current:
                    # A row still present means no fragment of the chunk changed since it was
                    # written, so a recomputed piece may keep its token; otherwise mint one.
                    token = secrets.randbits(62)
                    valid_until = self.conn.execute(
                        f"SELECT min(expires_at) FROM fragments WHERE project = ? AND kind = ? AND {in_chunk}"
                        " AND expires_at > ?",
                        (project, kind, *chunk_params, now_iso),
                    ).fetchone()[0]
                    self.conn.execute(
                        "INSERT OR REPLACE INTO view_cache (project, kind, chunk, name, count, token, valid_until)"
                        " VALUES (?, ?, ?, ?, ?, ?, ?)",
                        (*key, count, token, valid_until),
                    )
                self._pieces[key] = (int(token), text)
            total += count
            pieces.append(text)
        return total, pieces

    def kind_counts(self, project: str) -> dict[str, int]:
        """kind → number of records with view fragments (the durable kinds), from the chunk counts."""
        return {
            row[0]: int(row[1])
            for row in self.conn.execute(
                "SELECT kind, sum(rows) FROM fragment_chunks WHERE project = ? GROUP BY kind", (project,)
            )
        }

    def projects(self) -> list[str]:
        return [row[0] for row in self.conn.execute("SELECT DISTINCT project FROM records ORDER BY project")]

    def file_stats(self, project: str) -> dict[str, tuple[int, int]]:
        return {
            row[0]: (row[1], row[2])
            for row in self.conn.execute("SELECT path, mtime_ns, size FROM records WHERE project = ?", (project,))
        }

    def count_kind(self, project: str, kind: str) -> int:
        return int(
            self.conn.execute(
                "SELECT count(*) FROM records WHERE project = ? AND kind = ?", (project, kind)
            ).fetchone()[0]
        )

    def count(self, project: str | None = None) -> int:
        clauses, params = _filters(project, None, None)
        return int(self.conn.execute(f"SELECT count(*) FROM records{clauses}", params).fetchone()[0])


_TABLES = {"meta", "records", "records_fts", "fragments", "fragment_chunks", "view_cache"}


def chunk_key(stale_last: int, severity_weight: int, month: str) -> str:
    return f"{stale_last}|{severity_weight}|{month}"


def _filters(project: str | None, kinds: Sequence[str] | None, statuses: Sequence[str] | None) -> tuple[str, list[Any]]:
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
