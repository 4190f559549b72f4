"""How many of a project's traps and decisions hold a term: what the brief weighs a task's words by.

Counting the holders of a common word reads its whole list of postings in the project's trap and
decision ranges (:mod:`memosite.index.partitions`). A long-running process (the MCP server) asks the
same few words again and again, between writes of its own: it remembers each count and keeps it in
step with those writes, one record at a time — the record as it was and as it is are put in a
connection-private FTS5 table with the word index's tokenizer and asked whether they hold each
remembered term. A commit by another connection, a rolled-back transaction, or more writes than are
worth following (a reindex, an import) drop every count instead.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from memosite.index.entry import IndexEntry, folded_text
from memosite.reviewstate import is_pending

if TYPE_CHECKING:
    from memosite.index.database import Index

KNOWLEDGE = ("trap", "decision")
# Writes followed one by one between two uses of the counts before they are simply dropped (a
# batch would pay per term).
FOLLOWED_WRITES = 32
_PROBE_TABLE = (
    "CREATE VIRTUAL TABLE IF NOT EXISTS temp.held_probe USING fts5(title, body, tags, folded, "
    "tokenize='porter unicode61 remove_diacritics 2')"
)


@dataclass(frozen=True)
class Holder:
    """A record as the counts see it: whether it counts (a trap or decision, not waiting for
    review), its project and its text as the word index holds it."""

    counts: bool
    project: str
    text: tuple[str, str, str, str]  # title, body, tags, folded


def remembered(index: Index, project: str, expression: str) -> int | None:
    """The count remembered for ``expression`` in ``project``, if it still holds."""
    index.follow_other_connections()  # another connection's commit drops every count
    found = index.term_counts.get((project, expression))
    if found is not None:
        index.term_writes = 0  # the counts are in use: following the writes between uses pays
    return found


def remember(index: Index, project: str, expression: str, held: int) -> None:
    index.term_counts[(project, expression)] = held
    index.term_writes = 0


def holder_at(index: Index, path: str) -> Holder | None:
    """The record at ``path`` as the index holds it now (before a write changes it)."""
    if not index.term_counts:
        return None
    row = index.conn.execute(
        "SELECT r.project, r.kind, r.title, r.body, r.tags, r.folded, f.pending FROM records AS r"
        " JOIN search_facts AS f ON f.rowid = r.rowid WHERE r.path = ?",
        (path,),
    ).fetchone()
    if row is None:
        return None
    return Holder(row[1] in KNOWLEDGE and not row[6], str(row[0]), (row[2], row[3], row[4], row[5]))


def holder_of(entry: IndexEntry) -> Holder:
    tags = " ".join(entry.tags)
    pending = is_pending(entry.frontmatter)
    return Holder(
        entry.kind in KNOWLEDGE and not pending,
        entry.project,
        (entry.title, entry.body, tags, folded_text(entry.title, entry.body, tags)),
    )


def follow(index: Index, before: Holder | None, after: Holder | None) -> None:
    """Bring the remembered counts in step with one record changing from ``before`` to ``after``
    (None: it was not there, or is gone)."""
    if not index.term_counts:
        return
    index.term_writes += 1
    if index.term_writes > FOLLOWED_WRITES:
        index.term_counts.clear()
        return
    sides = [(n, side) for n, side in enumerate((before, after), 1) if side is not None and side.counts]
    if not sides:
        return
    projects = {side.project for _, side in sides}
    keys = [key for key in index.term_counts if key[0] in projects]
    if not keys:
        return
    conn = index.conn
    conn.execute(_PROBE_TABLE)
    conn.execute("SAVEPOINT held_probe")  # the temp database only: no lock on the index
    conn.execute("DELETE FROM temp.held_probe")
    conn.executemany(
        "INSERT INTO temp.held_probe (rowid, title, body, tags, folded) VALUES (?, ?, ?, ?, ?)",
        [(n, *side.text) for n, side in sides],
    )
    conn.execute("RELEASE held_probe")
    by_row = dict(sides)
    for key in keys:
        project, expression = key
        holding = _holding(index, expression)
        if holding is None:
            del index.term_counts[key]
            continue
        delta = sum(
            (1 if n == 2 else -1) for n in holding if by_row.get(n) is not None and by_row[n].project == project
        )
        index.term_counts[key] += delta


def _holding(index: Index, expression: str) -> Sequence[int] | None:
    try:
        rows = index.conn.execute("SELECT rowid FROM temp.held_probe WHERE held_probe MATCH ?", (expression,))
        return [int(row[0]) for row in rows]
    except sqlite3.OperationalError:
        return None
