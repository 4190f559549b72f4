"""Freshness verdicts in the index: what ``memosite verify`` found for each record that cites code,
and the commit of the product repository it was found at. Derived like everything in the index:
``verify`` computes them again."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memosite.index.database import Index


# A verdict outlives nothing: the record it is about must still be indexed.
_STILL_A_RECORD = "path IN (SELECT path FROM records)"


@dataclass(frozen=True)
class CitingRecord:
    path: str
    kind: str
    id: str
    title: str
    frontmatter: dict[str, Any]


@dataclass(frozen=True)
class StoredVerdict:
    path: str
    verdict: str
    commit: str | None
    checked_at: str
    detail: list[dict[str, Any]]


def citing_records(index: Index, project: str) -> list[CitingRecord]:
    """The project's records whose frontmatter cites code."""
    rows = index.conn.execute(
        "SELECT path, kind, id, title, frontmatter FROM records WHERE project = ?"
        " AND json_type(frontmatter, '$.cites') = 'array' ORDER BY path",
        (project,),
    )
    return [CitingRecord(row[0], row[1], row[2], row[3], json.loads(row[4])) for row in rows]


def replace(index: Index, project: str, found: Sequence[StoredVerdict], *, complete: bool) -> None:
    """Store ``found``; with ``complete`` the project's other verdicts go (their records no longer cite)."""
    with index.transaction():
        if complete:
            index.conn.execute("DELETE FROM verdicts WHERE project = ?", (project,))
        index.conn.executemany(
            "INSERT OR REPLACE INTO verdicts (path, project, verdict, commit_sha, checked_at, detail)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            [(v.path, project, v.verdict, v.commit, v.checked_at, json.dumps(v.detail)) for v in found],
        )


def forget(index: Index, paths: Sequence[str]) -> None:
    """Drop the verdicts of these record paths (their records cite no code any more)."""
    with index.transaction():
        index.conn.executemany("DELETE FROM verdicts WHERE path = ?", [(path,) for path in paths])


def for_paths(index: Index, paths: Sequence[str]) -> dict[str, StoredVerdict]:
    """The stored verdicts of these record paths (those never verified are absent)."""
    if not paths:
        return {}
    found: dict[str, StoredVerdict] = {}
    for start in range(0, len(paths), 500):
        chunk = list(paths[start : start + 500])
        marks = ", ".join("?" for _ in chunk)
        for row in index.conn.execute(
            f"SELECT path, verdict, commit_sha, checked_at, detail FROM verdicts WHERE path IN ({marks})", chunk
        ):
            found[row[0]] = StoredVerdict(row[0], row[1], row[2], row[3], json.loads(row[4]))
    return found


def of_project(index: Index, project: str, verdicts: Sequence[str] | None = None) -> list[StoredVerdict]:
    sql = f"SELECT path, verdict, commit_sha, checked_at, detail FROM verdicts WHERE project = ? AND {_STILL_A_RECORD}"
    params: list[Any] = [project]
    if verdicts:
        sql += f" AND verdict IN ({', '.join('?' for _ in verdicts)})"
        params.extend(verdicts)
    rows = index.conn.execute(sql + " ORDER BY path", params)
    return [StoredVerdict(r[0], r[1], r[2], r[3], json.loads(r[4])) for r in rows]


def counts(index: Index, project: str) -> dict[str, int]:
    return {
        row[0]: int(row[1])
        for row in index.conn.execute(
            f"SELECT verdict, count(*) FROM verdicts WHERE project = ? AND {_STILL_A_RECORD} GROUP BY verdict",
            (project,),
        )
    }
