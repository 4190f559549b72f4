"""The index's tables: one row per record file, its view fragments, chunk counts, the view cache,
the FTS5 table kept in step by triggers, and the in-flight writes of units of work."""

from __future__ import annotations

import sqlite3

SCHEMA_VERSION = "16"

DDL = """
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
-- Record files a unit of work is writing or removing right now (see memosite.mutation). A row
-- left behind by a killed process names a file whose index row and views may be behind it: the
-- next process that opens the index under the vault lock re-reads those paths and recompiles.
CREATE TABLE IF NOT EXISTS inflight (
    path TEXT NOT NULL,
    project TEXT NOT NULL,
    unit TEXT NOT NULL,
    PRIMARY KEY (path, unit)
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

TABLES = frozenset({"meta", "records", "records_fts", "fragments", "fragment_chunks", "view_cache", "inflight"})
_DROP = (
    "DROP TRIGGER IF EXISTS records_ai; DROP TRIGGER IF EXISTS records_ad;"
    "DROP TRIGGER IF EXISTS records_au; DROP TABLE IF EXISTS records_fts;"
    "DROP TABLE IF EXISTS records; DROP TABLE IF EXISTS fragments;"
    "DROP TABLE IF EXISTS view_cache; DROP TABLE IF EXISTS fragment_chunks;"
    "DROP TABLE IF EXISTS inflight;"
)


def ensure_schema(conn: sqlite3.Connection) -> bool:
    """Create the schema; returns True when the index was (re)created and must be filled."""
    has_meta = conn.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name='meta'").fetchone()
    version = None
    if has_meta:
        row = conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        version = row[0] if row else None
    tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    if version == SCHEMA_VERSION and tables >= TABLES:
        return False
    if version is not None:
        conn.executescript(_DROP)  # an index from another memosite version: it is a cache, so start over
    conn.executescript(DDL)
    conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('schema_version', ?)", (SCHEMA_VERSION,))
    return True
