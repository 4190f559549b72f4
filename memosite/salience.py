"""Salience: how often a record is used (hits) and whether agents found it helpful or stale.

A hit is counted when a record is fetched by ``get``, included in a bootstrap brief, or
acknowledged with ``search --hit-ids`` — at most once per record per session id. The seen-set of
each session lives in ``<vault>/.memosite/hits/`` so separate processes (several MCP servers, the
CLI) share it. Hits and feedback are usage, not edits: they never refresh ``updated``, so they do
not reorder views that sort by it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from memosite.errors import InvalidArguments, RecordNotFound
from memosite.schema import LAYERS, Record, format_iso, is_flagged_stale, serialize_record, utc_now
from memosite.vault import Vault, atomic_write_text, warn

HITS_DIR = "hits"
SESSION_SEEN_MAX_AGE = timedelta(days=30)


@dataclass
class FeedbackResult:
    id: str
    kind: str
    project: str
    helpful_count: int
    stale_count: int
    last_feedback: str

    @property
    def flagged_stale(self) -> bool:
        return is_flagged_stale(self.helpful_count, self.stale_count)

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind,
            "project": self.project,
            "helpfulCount": self.helpful_count,
            "staleCount": self.stale_count,
            "lastFeedback": self.last_feedback,
            "flaggedStale": self.flagged_stale,
        }


@dataclass
class RankedTrap:
    id: str
    title: str
    severity: str | None
    layer: str | None
    occurrences: int
    hits: int
    helpful: int
    stale: int
    path: str
    path_patterns: list[str] = field(default_factory=list)

    @property
    def flagged_stale(self) -> bool:
        return is_flagged_stale(self.helpful, self.stale)

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "title": self.title,
            "severity": self.severity,
            "layer": self.layer,
            "occurrences": self.occurrences,
            "hits": self.hits,
            "helpfulCount": self.helpful,
            "staleCount": self.stale,
            "flaggedStale": self.flagged_stale,
            "path": self.path,
            "pathPatterns": self.path_patterns,
        }


@dataclass
class RankResult:
    project: str
    layer: str | None
    traps: list[RankedTrap]
    total: int

    def to_json(self) -> dict[str, Any]:
        return {
            "project": self.project,
            "layer": self.layer,
            "traps": [trap.to_json() for trap in self.traps],
            "total": self.total,
        }


# --- the per-session seen-set ----------------------------------------------------------------


def _seen_file(vault: Vault, session_id: str) -> Path:
    digest = hashlib.sha256(session_id.encode("utf-8")).hexdigest()[:32]
    return vault.internal_dir / HITS_DIR / f"{digest}.txt"


def _seen_key(project: str, record_id: str) -> str:
    return f"{project}\t{record_id}"


def _read_seen(path: Path) -> set[str]:
    try:
        return set(path.read_text(encoding="utf-8").splitlines())
    except FileNotFoundError:
        return set()


def _remember_seen(path: Path, keys: Sequence[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as handle:
        handle.write("".join(f"{key}\n" for key in keys))


def prune_session_seen_sets(vault: Vault, now: datetime | None = None, *, dry_run: bool = False) -> int:
    """Forget seen-sets of sessions untouched for 30 days; returns how many (would be) removed."""
    now = now or utc_now()
    cutoff = (now - SESSION_SEEN_MAX_AGE).timestamp()
    directory = vault.internal_dir / HITS_DIR
    removed = 0
    try:
        candidates = [p for p in directory.iterdir() if p.suffix == ".txt" and p.is_file()]
    except FileNotFoundError:
        return 0
    for path in candidates:
        try:
            if path.stat().st_mtime < cutoff:
                if not dry_run:
                    path.unlink()
                removed += 1
        except FileNotFoundError:
            continue
    return removed


# --- reading and rewriting one record --------------------------------------------------------


def _load(vault: Vault, project: str, record_id: str) -> tuple[Record, Path]:
    from memosite.indexing import read_record
    from memosite.lookup import get_record

    found = get_record(vault, project, record_id=record_id)
    path = vault.root / found.path
    return read_record(path), path


def _rewrite(vault: Vault, record: Record, path: Path) -> None:
    from memosite.indexing import index_record

    atomic_write_text(path, serialize_record(record))
    index_record(vault, record, path)


# --- hits ------------------------------------------------------------------------------------


def record_hits(
    vault: Vault,
    project: str,
    ids: Sequence[str],
    *,
    session_id: str | None = None,
    now: datetime | None = None,
) -> list[str]:
    """Count one hit (``hits`` + 1, ``lastHit``) on each record of ``ids``; returns the ids counted.

    With a ``session_id`` a record is counted at most once per session; without one, every call
    counts. Unknown or unreadable ids are skipped. ``updated`` is left alone: a hit is not an edit.
    """
    from memosite.errors import InvalidRecord, StorageError
    from memosite.indexing import rebuild_views

    now_iso = format_iso(now or utc_now())
    wanted = list(dict.fromkeys(i.strip() for i in ids if isinstance(i, str) and i.strip()))
    if not wanted:
        return []
    session = session_id.strip() if isinstance(session_id, str) and session_id.strip() else None
    counted: list[str] = []
    kinds: set[str] = set()
    with vault.lock():
        seen_path = _seen_file(vault, session) if session else None
        seen = _read_seen(seen_path) if seen_path else set()
        for record_id in wanted:
            if _seen_key(project, record_id) in seen:
                continue
            try:
                record, path = _load(vault, project, record_id)
            except (RecordNotFound, InvalidArguments, InvalidRecord, StorageError) as exc:
                warn(f"hit not counted for {record_id}: {exc.message}")
                continue
            fm = record.frontmatter
            fm["hits"] = int(fm.get("hits") or 0) + 1
            fm["lastHit"] = now_iso
            _rewrite(vault, record, path)
            counted.append(record_id)
            kinds.add(record.kind)
        if seen_path is not None and counted:
            _remember_seen(seen_path, [_seen_key(project, i) for i in counted])
        if kinds:
            rebuild_views(vault, project, kinds)
    return counted


# --- feedback --------------------------------------------------------------------------------


def record_feedback(
    vault: Vault,
    project: str,
    record_id: str,
    *,
    helpful: bool,
    now: datetime | None = None,
) -> FeedbackResult:
    """Count one helpful or stale vote and set ``lastFeedback``. A record whose stale votes outweigh
    its helpful ones is flagged stale (views show it, rankings put it last). ``updated`` is left
    alone: feedback is not an edit. Raises RECORD_NOT_FOUND for an unknown id."""
    from memosite import gitsync
    from memosite.indexing import rebuild_views

    if not isinstance(record_id, str) or not record_id.strip():
        raise InvalidArguments("feedback needs a record id")
    now_iso = format_iso(now or utc_now())
    with vault.lock():
        record, path = _load(vault, project, record_id.strip())
        fm = record.frontmatter
        key = "helpfulCount" if helpful else "staleCount"
        fm[key] = int(fm.get(key) or 0) + 1
        fm["lastFeedback"] = now_iso
        _rewrite(vault, record, path)
        rebuild_views(vault, project, {record.kind})
        gitsync.request_commit(vault, f"feedback {record.kind}:{record.id} {'helpful' if helpful else 'stale'}")
    return FeedbackResult(
        id=record.id,
        kind=record.kind,
        project=project,
        helpful_count=int(fm.get("helpfulCount") or 0),
        stale_count=int(fm.get("staleCount") or 0),
        last_feedback=now_iso,
    )


# --- rank ------------------------------------------------------------------------------------


def rank_traps(
    vault: Vault,
    project: str,
    *,
    layer: str | None = None,
    limit: int = 10,
    now: datetime | None = None,
) -> RankResult:
    """Active, unexpired traps by occurrences, then hits (then severity, then most recent);
    traps flagged stale come after every other trap."""
    if layer is not None:
        layer = layer.strip().lower()
        if layer not in LAYERS:
            raise InvalidArguments(f"invalid layer {layer!r}: expected one of {', '.join(LAYERS)}")
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise InvalidArguments(f"invalid limit {limit!r}: expected a positive integer")
    now_iso = format_iso(now or utc_now())
    if vault.index().fresh:
        from memosite.indexing import ensure_index

        ensure_index(vault)
    where = "project = ? AND kind = 'trap' AND status = 'active' AND (expires_at IS NULL OR expires_at > ?)"
    params: list[Any] = [project, now_iso]
    if layer is not None:
        where += " AND layer = ?"
        params.append(layer)
    conn = vault.index().conn
    total = int(conn.execute(f"SELECT count(*) FROM records WHERE {where}", params).fetchone()[0])
    rows = conn.execute(
        "SELECT id, title, severity, layer, occurrences, hits, helpful, stale, path, path_patterns "
        f"FROM records WHERE {where} ORDER BY (stale > helpful), occurrences DESC, hits DESC, "
        "severity_weight DESC, updated DESC, path LIMIT ?",
        [*params, limit],
    )
    traps = [
        RankedTrap(
            id=row["id"],
            title=row["title"],
            severity=row["severity"],
            layer=row["layer"],
            occurrences=row["occurrences"],
            hits=row["hits"],
            helpful=row["helpful"],
            stale=row["stale"],
            path=row["path"],
            path_patterns=json.loads(row["path_patterns"]),
        )
        for row in rows
    ]
    return RankResult(project=project, layer=layer, traps=traps, total=total)
