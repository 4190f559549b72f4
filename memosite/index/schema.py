"""The index's tables: one row per record file, its view fragments, chunk counts, the inventory
files written, the in-flight writes of units of work, and what search reads, kept in step with ``records`` by
triggers:

* ``records_fts`` — FTS5 over title, body, tags and their folded text (porter stemming; FTS5
  removes Latin diacritics, the ``folded`` column holds the text with every script's removed);
* ``records_trigram`` — FTS5 with the trigram tokenizer over the records whose text holds a script
  written without spaces (Chinese, Japanese, Thai …) or a pictograph (emoji), for substring
  search. Only those records: a trigram index of every record would triple the text index for
  scripts the word index serves;
* ``search_facts`` — one narrow row per record with every column search filters and orders by, so a
  search of thousands of matches reads these small rows instead of the records with their bodies;
* ``vectors`` — each record's embedding (:mod:`memosite.embedding`) with the model that made it,
  written by indexing beside the row and dropped by a trigger when the record's text changes.
"""

from __future__ import annotations

import sqlite3

from memosite.kinds import KIND_FACTS
from memosite.recurrence import occurrences_sql
from memosite.reviewstate import pending_sql
from memosite.schema import flagged_stale_sql

SCHEMA_VERSION = "33"  # 33: view digests skip decision metadata


def _text(row: str) -> str:
    return f"{row}.title || char(10) || {row}.body || char(10) || {row}.tags"


# The project's knowledge — the kinds the session brief draws on (traps, decisions, specs, plans,
# state) — outranks its event stream (logs, reviews, prompts, sessions) at equal bm25: a question
# about "why postgres" wants the decision, not the deploy log that mentions postgres.
EVENT_WEIGHT = 0.7
KNOWLEDGE_KINDS = tuple(kind for kind, facts in KIND_FACTS.items() if facts.bootstrap is not None)


def relevance_weight_sql(row: str) -> str:
    """The factor a record's bm25 is multiplied by (1 for knowledge, ``EVENT_WEIGHT`` for events)."""
    kinds = ", ".join(f"'{kind}'" for kind in KNOWLEDGE_KINDS)
    return f"(CASE WHEN {row}.kind IN ({kinds}) THEN 1.0 ELSE {EVENT_WEIGHT} END)"


def _facts_values(row: str) -> str:
    archived_expired = (
        f"coalesce({row}.status = 'archived' AND json_extract({row}.frontmatter, '$.archivedReason') = 'expired', 0)"
    )
    return (
        f"{row}.rowid, {row}.project, {row}.kind, {row}.status, {row}.created, {row}.expires_at, "
        f"{archived_expired}, {flagged_stale_sql(row)}, {occurrences_sql(row)}, {row}.hits, {row}.severity_weight, "
        f"{row}.layer, {row}.updated, json_extract({row}.frontmatter, '$.lastSeen'), {row}.path, "
        f"{row}.path_patterns, {row}.tags_json, {row}.unspaced, {relevance_weight_sql(row)}, "
        f"{pending_sql(f'{row}.frontmatter')}, "
        f"json_extract({row}.frontmatter, '$.author')"
    )


VERDICTS_DDL = """
-- Freshness verdicts of records that cite code (memosite.verify), with the commit they were found at.
CREATE TABLE IF NOT EXISTS verdicts (
    path TEXT PRIMARY KEY,
    project TEXT NOT NULL,
    verdict TEXT NOT NULL,
    commit_sha TEXT,
    checked_at TEXT NOT NULL,
    detail TEXT NOT NULL DEFAULT '[]'
);
CREATE INDEX IF NOT EXISTS verdicts_project ON verdicts(project, verdict);
"""

SEARCH_DDL = f"""
CREATE TABLE IF NOT EXISTS search_facts (
    rowid INTEGER PRIMARY KEY,
    project TEXT NOT NULL,
    kind TEXT NOT NULL,
    status TEXT NOT NULL,
    created TEXT,
    expires_at TEXT,
    expired_archive INTEGER NOT NULL,
    flagged INTEGER NOT NULL,
    occurrences INTEGER NOT NULL,
    hits INTEGER NOT NULL,
    severity_weight INTEGER NOT NULL,
    layer TEXT,
    updated TEXT,
    last_seen TEXT,
    path TEXT NOT NULL,
    path_patterns TEXT NOT NULL,
    tags_json TEXT NOT NULL,
    unspaced INTEGER NOT NULL,
    weight REAL NOT NULL,
    pending INTEGER NOT NULL,  -- waiting for a person's review (memosite.review)
    author TEXT
);
-- The brief counts (and rank reads) a kind's live rows from this index alone (it covers ``pending``
-- too, so no row is read); it reads the traps and decisions that match neither path nor query in
-- their own order (so a brief never sorts them all).
CREATE INDEX IF NOT EXISTS search_facts_kind ON search_facts(
    project, kind, status, severity_weight, expires_at, pending
);
CREATE INDEX IF NOT EXISTS search_facts_trap_order ON search_facts(
    project, kind, flagged, severity_weight DESC, occurrences DESC, hits DESC, updated DESC, path, status, expires_at
);
CREATE INDEX IF NOT EXISTS search_facts_decision_order ON search_facts(
    project, kind, flagged, updated DESC, path, status, expires_at
);
CREATE INDEX IF NOT EXISTS search_facts_patterns ON search_facts(project, path_patterns);
-- Each path pattern's literal start, kept in step with ``records``: the patterns that may cover a path
-- are those starting with one of its parents (or itself, or nothing) or beneath it, one lookup each.
CREATE TABLE IF NOT EXISTS path_prefixes (
    record INTEGER NOT NULL,
    prefix TEXT NOT NULL,
    project TEXT NOT NULL,
    PRIMARY KEY (record, prefix)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS path_prefixes_prefix ON path_prefixes(prefix, project);
CREATE TRIGGER IF NOT EXISTS path_prefixes_ai AFTER INSERT ON records WHEN new.pattern_prefixes != '[]' BEGIN
    INSERT INTO path_prefixes (record, prefix, project)
        SELECT new.rowid, value, new.project FROM json_each(new.pattern_prefixes);
END;
CREATE TRIGGER IF NOT EXISTS path_prefixes_ad AFTER DELETE ON records WHEN old.pattern_prefixes != '[]' BEGIN
    DELETE FROM path_prefixes WHERE record = old.rowid;
END;
CREATE TRIGGER IF NOT EXISTS path_prefixes_au AFTER UPDATE OF pattern_prefixes, project ON records
WHEN old.pattern_prefixes IS NOT new.pattern_prefixes OR old.project IS NOT new.project BEGIN
    DELETE FROM path_prefixes WHERE record = old.rowid;
    INSERT INTO path_prefixes (record, prefix, project)
        SELECT new.rowid, value, new.project FROM json_each(new.pattern_prefixes);
END;
-- The few records waiting for review, without scanning the others.
CREATE INDEX IF NOT EXISTS search_facts_pending ON search_facts(project, kind) WHERE pending;
-- Only the records the trigram table holds: a write of any other record never touches it.
CREATE INDEX IF NOT EXISTS search_facts_unspaced ON search_facts(project) WHERE unspaced;
CREATE TRIGGER IF NOT EXISTS search_facts_ai AFTER INSERT ON records BEGIN
    INSERT OR REPLACE INTO search_facts VALUES ({_facts_values("new")});
END;
CREATE TRIGGER IF NOT EXISTS search_facts_ad AFTER DELETE ON records BEGIN
    DELETE FROM search_facts WHERE rowid = old.rowid;
END;
CREATE TRIGGER IF NOT EXISTS search_facts_au AFTER UPDATE ON records BEGIN
    DELETE FROM search_facts WHERE rowid = old.rowid;
    INSERT OR REPLACE INTO search_facts VALUES ({_facts_values("new")});
END;
CREATE VIRTUAL TABLE IF NOT EXISTS records_trigram USING fts5(text, content='', tokenize='trigram');
CREATE TRIGGER IF NOT EXISTS records_trigram_ai AFTER INSERT ON records WHEN new.unspaced BEGIN
    INSERT INTO records_trigram(rowid, text) VALUES (new.rowid, {_text("new")});
END;
CREATE TRIGGER IF NOT EXISTS records_trigram_ad AFTER DELETE ON records WHEN old.unspaced BEGIN
    INSERT INTO records_trigram(records_trigram, rowid, text) VALUES ('delete', old.rowid, {_text("old")});
END;
CREATE TRIGGER IF NOT EXISTS records_trigram_au AFTER UPDATE OF title, body, tags ON records BEGIN
    INSERT INTO records_trigram(records_trigram, rowid, text)
        SELECT 'delete', old.rowid, {_text("old")} WHERE old.unspaced;
    INSERT INTO records_trigram(rowid, text) SELECT new.rowid, {_text("new")} WHERE new.unspaced;
END;
"""

VECTORS_DDL = """
-- One vector per record (float16 bytes) and the model that computed it. A change of the text a
-- vector stands for drops it (an update that rewrites the same text, a template re-render, keeps it).
CREATE TABLE IF NOT EXISTS vectors (
    rowid INTEGER PRIMARY KEY,
    model TEXT NOT NULL,
    vec BLOB NOT NULL,
    seq INTEGER NOT NULL  -- when it was written, counted: a process holding the vectors reads only newer ones
);
CREATE INDEX IF NOT EXISTS vectors_seq ON vectors(model, seq);
CREATE TRIGGER IF NOT EXISTS vectors_ad AFTER DELETE ON records BEGIN
    DELETE FROM vectors WHERE rowid = old.rowid;
END;
CREATE TRIGGER IF NOT EXISTS vectors_au AFTER UPDATE OF title, body, tags ON records
WHEN old.title IS NOT new.title OR old.body IS NOT new.body OR old.tags IS NOT new.tags BEGIN
    DELETE FROM vectors WHERE rowid = old.rowid;
END;
"""

DDL = (
    """
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
    folded TEXT NOT NULL DEFAULT '',  -- see entry.folded_text: what the word index also reads
    unspaced INTEGER NOT NULL,  -- the text holds a script the trigram table is for (text.has_unspaced)
    pattern_prefixes TEXT NOT NULL DEFAULT '[]'  -- the literal start of each path pattern (paths.literal_prefixes)
);
-- Rendered view fragments, clustered in view order so a view section is one ordered range scan
-- (``month`` is the prefix of ``updated``, so leading with it keeps the order and makes each chunk
-- one contiguous range).
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
    row_index TEXT NOT NULL,
    row_line TEXT NOT NULL,
    row_view TEXT NOT NULL,  -- last: the longest, so reading the others never walks its overflow pages
    PRIMARY KEY (project, kind, stale_last, severity_weight DESC, month DESC, updated DESC, path)
) WITHOUT ROWID;
CREATE UNIQUE INDEX IF NOT EXISTS fragments_path ON fragments(path);
-- A section's count (live traps by severity, accepted decisions …) is a scan of this index alone.
CREATE INDEX IF NOT EXISTS fragments_live ON fragments(project, kind, status, expires_at, severity_weight);
-- A monthly inventory file reads its month's rows in its own order.
CREATE INDEX IF NOT EXISTS fragments_month ON fragments(project, kind, month, updated DESC, path);
-- How many fragments each chunk holds (same stale flag, severity, month and status), kept in step
-- by upsert/delete: a kind's size, its months and its records by status and severity without
-- scanning its fragments.
CREATE TABLE IF NOT EXISTS fragment_chunks (
    project TEXT NOT NULL,
    kind TEXT NOT NULL,
    stale_last INTEGER NOT NULL,
    severity_weight INTEGER NOT NULL,
    month TEXT NOT NULL,
    status TEXT NOT NULL,
    rows INTEGER NOT NULL,
    PRIMARY KEY (project, kind, stale_last, severity_weight DESC, month DESC, status)
) WITHOUT ROWID;
-- The monthly inventory files written (``name`` at the project's root) and still current: a
-- fragment entering or leaving the month drops its row; the file is current until ``valid_until``
-- (a record of it expires) and while it keeps the size and last change it was written with
-- (``mtime_ns``: the later of its modification and status-change times).
CREATE TABLE IF NOT EXISTS view_files (
    project TEXT NOT NULL,
    name TEXT NOT NULL,
    valid_until TEXT,
    mtime_ns INTEGER NOT NULL,
    size INTEGER NOT NULL,
    PRIMARY KEY (project, name)
) WITHOUT ROWID;
-- Each project's block of record rowids (memosite.index.partitions): its kinds' ranges.
CREATE TABLE IF NOT EXISTS partitions (
    project TEXT PRIMARY KEY,
    number INTEGER NOT NULL UNIQUE
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
-- A slug differing from an existing file only in letter case is found by a lookup, not a scan.
CREATE INDEX IF NOT EXISTS records_path_nocase ON records(project, path COLLATE NOCASE);
CREATE INDEX IF NOT EXISTS records_id ON records(id);
CREATE INDEX IF NOT EXISTS records_patterns ON records(project, kind, pattern_key);
CREATE VIRTUAL TABLE IF NOT EXISTS records_fts USING fts5(
    title, body, tags, folded, content='records', content_rowid='rowid',
    tokenize='porter unicode61 remove_diacritics 2'
);
CREATE TRIGGER IF NOT EXISTS records_ai AFTER INSERT ON records BEGIN
    INSERT INTO records_fts(rowid, title, body, tags, folded)
    VALUES (new.rowid, new.title, new.body, new.tags, new.folded);
END;
CREATE TRIGGER IF NOT EXISTS records_ad AFTER DELETE ON records BEGIN
    INSERT INTO records_fts(records_fts, rowid, title, body, tags, folded)
    VALUES ('delete', old.rowid, old.title, old.body, old.tags, old.folded);
END;
CREATE TRIGGER IF NOT EXISTS records_au AFTER UPDATE OF title, body, tags, folded ON records BEGIN
    INSERT INTO records_fts(records_fts, rowid, title, body, tags, folded)
    VALUES ('delete', old.rowid, old.title, old.body, old.tags, old.folded);
    INSERT INTO records_fts(rowid, title, body, tags, folded)
    VALUES (new.rowid, new.title, new.body, new.tags, new.folded);
END;
"""
    + SEARCH_DDL
    + VERDICTS_DDL
    + VECTORS_DDL
)

TABLES = frozenset(
    {
        "meta",
        "records",
        "records_fts",
        "records_trigram",
        "search_facts",
        "fragments",
        "fragment_chunks",
        "view_files",
        "inflight",
        "verdicts",
        "vectors",
        "path_prefixes",
        "partitions",
    }
)
_DROP = (
    "DROP TRIGGER IF EXISTS records_ai; DROP TRIGGER IF EXISTS records_ad;"
    "DROP TRIGGER IF EXISTS records_au; DROP TABLE IF EXISTS records_fts;"
    "DROP TRIGGER IF EXISTS records_trigram_ai; DROP TRIGGER IF EXISTS records_trigram_ad;"
    "DROP TRIGGER IF EXISTS records_trigram_au; DROP TABLE IF EXISTS records_trigram;"
    "DROP TRIGGER IF EXISTS search_facts_ai; DROP TRIGGER IF EXISTS search_facts_ad;"
    "DROP TRIGGER IF EXISTS search_facts_au; DROP TABLE IF EXISTS search_facts;"
    "DROP TABLE IF EXISTS records; DROP TABLE IF EXISTS fragments;"
    "DROP TABLE IF EXISTS view_cache; DROP TABLE IF EXISTS view_files; DROP TABLE IF EXISTS fragment_chunks;"
    "DROP TABLE IF EXISTS inflight; DROP TABLE IF EXISTS verdicts;"
    "DROP TRIGGER IF EXISTS vectors_ad; DROP TRIGGER IF EXISTS vectors_au; DROP TABLE IF EXISTS vectors;"
    "DROP TRIGGER IF EXISTS path_prefixes_ai; DROP TRIGGER IF EXISTS path_prefixes_ad;"
    "DROP TRIGGER IF EXISTS path_prefixes_au; DROP TABLE IF EXISTS path_prefixes; DROP TABLE IF EXISTS partitions;"
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
        # An index from another memosite version, or one missing a table: it is a cache, so start
        # over (triggers keeping the remaining tables in step with a recreated one would not know
        # what it lost).
        conn.executescript(_DROP)
    conn.executescript(DDL)
    # What meta remembers of the old tables (the record directories' times, the templates'
    # checksum) no longer holds: a process that opens the index and never fills it must not leave
    # the next one believing an empty index is up to date.
    conn.execute("DELETE FROM meta WHERE key != 'schema_version'")
    conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('schema_version', ?)", (SCHEMA_VERSION,))
    return True
