"""The named read queries of memosite's features: recurrence, gc, rank and the session brief.

Each function answers one question of one feature from the index, with the feature's rules (expiry,
flagged stale) spelled by the SQL fragments kept beside their Python rules.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from memosite.expiration import not_expired_sql
from memosite.index.entry import IndexEntry
from memosite.schema import flagged_stale_sql, is_flagged_stale

if TYPE_CHECKING:
    from memosite.index.database import Index


def _marks(values: Sequence[Any]) -> str:
    return ", ".join("?" for _ in values)


# --- recurrence ------------------------------------------------------------------------------


def live_traps_with_patterns(index: Index, project: str, key: str) -> list[IndexEntry]:
    """Traps of ``project`` with exactly these path patterns that may still recur (not archived or
    superseded), most recently updated first."""
    return [
        IndexEntry.from_row(row)
        for row in index.conn.execute(
            "SELECT * FROM records WHERE project = ? AND kind = 'trap' AND pattern_key = ? "
            "AND status NOT IN ('archived', 'superseded') ORDER BY updated DESC",
            (project, key),
        )
    ]


# --- gc --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GcRow:
    """What gc needs to plan one record file, without reading it."""

    path: str
    kind: str
    id: str
    status: str
    created: str | None
    ttl: Any
    expires_at: Any
    compacted: Any


def gc_rows(index: Index, project: str) -> list[GcRow]:
    """Every record of ``project`` with its expiry inputs as written (``ttl``, ``expires_at``) and
    its ``compacted`` flag."""
    return [
        GcRow(*row)
        for row in index.conn.execute(
            "SELECT path, kind, id, status, created, json_extract(frontmatter, '$.ttl'), "
            "json_extract(frontmatter, '$.expires_at'), json_extract(frontmatter, '$.compacted') "
            "FROM records WHERE project = ?",
            (project,),
        )
    ]


# --- rank ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RecordRow:
    """A record as rank and the brief see it."""

    id: str
    kind: str
    title: str
    status: str
    path: str
    body: str
    severity: str | None
    severity_weight: int
    layer: str | None
    occurrences: int
    hits: int
    helpful: int
    stale: int
    updated: str | None
    expires_at: str | None
    path_patterns: list[str] = field(default_factory=list)

    @property
    def flagged_stale(self) -> bool:
        return is_flagged_stale(self.helpful, self.stale)


_TRAP_COLUMNS = (
    "id, kind, title, status, path, body, severity, severity_weight, layer, occurrences, hits, helpful, stale, "
    "updated, expires_at, path_patterns"
)


def _trap_rows(index: Index, sql: str, params: Sequence[Any]) -> list[RecordRow]:
    rows = index.conn.execute(sql, params)
    return [RecordRow(**{**dict(row), "path_patterns": json.loads(row["path_patterns"])}) for row in rows]


def ranked_traps(
    index: Index, project: str, now_iso: str, *, layer: str | None, limit: int
) -> tuple[int, list[RecordRow]]:
    """Active, unexpired traps by occurrences, hits, severity and recency, flagged-stale ones last;
    the total count and the first ``limit``."""
    where = f"project = ? AND kind = 'trap' AND status = 'active' AND {not_expired_sql()}"
    params: list[Any] = [project, now_iso]
    if layer is not None:
        where += " AND layer = ?"
        params.append(layer)
    total = int(index.conn.execute(f"SELECT count(*) FROM records WHERE {where}", params).fetchone()[0])
    rows = _trap_rows(
        index,
        f"SELECT {_TRAP_COLUMNS} FROM records WHERE {where} ORDER BY {flagged_stale_sql()}, occurrences DESC, "
        "hits DESC, severity_weight DESC, updated DESC, path LIMIT ?",
        [*params, limit],
    )
    return total, rows


# --- the session brief -----------------------------------------------------------------------


def brief_traps(index: Index, project: str, severities: Sequence[str], now_iso: str) -> list[RecordRow]:
    """Active, unexpired traps of ``severities``."""
    return _trap_rows(
        index,
        f"SELECT {_TRAP_COLUMNS} FROM records WHERE project = ? AND kind = 'trap' AND status = 'active' "
        f"AND severity IN ({_marks(severities)}) AND {not_expired_sql()}",
        (project, *severities, now_iso),
    )


def brief_decisions(index: Index, project: str, statuses: Sequence[str], now_iso: str) -> list[RecordRow]:
    """Unexpired decisions of ``statuses``, most recently updated first."""
    return _trap_rows(
        index,
        f"SELECT {_TRAP_COLUMNS} FROM records WHERE project = ? AND kind = 'decision' "
        f"AND status IN ({_marks(statuses)}) AND {not_expired_sql()} ORDER BY updated DESC, path",
        (project, *statuses, now_iso),
    )


def related_context_paths(index: Index, project: str, kinds: Sequence[str], slug: str) -> list[str]:
    """Live records of ``kinds`` named ``<slug>-…`` or with ``relatedSlug: <slug>``, spec first,
    then plan, then state, newest first."""
    escaped = slug.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    order = " ".join(f"WHEN '{kind}' THEN {n}" for n, kind in enumerate(kinds))
    return [
        row[0]
        for row in index.conn.execute(
            f"SELECT path FROM records WHERE project = ? AND kind IN ({_marks(kinds)}) "
            "AND status NOT IN ('archived', 'superseded') "
            "AND (slug LIKE ? ESCAPE '\\' OR json_extract(frontmatter, '$.relatedSlug') = ?) "
            f"ORDER BY CASE kind {order} ELSE {len(kinds)} END, updated DESC, path",
            (project, *kinds, f"{escaped}-%", slug),
        )
    ]


def record_row_by_path(index: Index, path: str) -> RecordRow | None:
    rows = _trap_rows(index, f"SELECT {_TRAP_COLUMNS} FROM records WHERE path = ?", (path,))
    return rows[0] if rows else None
