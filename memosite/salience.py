"""Salience: how often a record is used (hits) and whether agents found it helpful or stale.

A hit is counted when a record is fetched by ``get``, included in a bootstrap brief, or
acknowledged with ``search --hit-ids`` — at most once per record per session id. An MCP server
process is one agent session: a call that names no session counts under the server's own. The
seen-set of each session lives in ``<vault>/.memosite/hits/`` so separate processes (several MCP
servers, the CLI) share it. Scratch records (private working notes) never count hits. Hits and
feedback are usage, not edits: they never refresh ``updated``, so they do not reorder views that
sort by it.

``rank`` orders the active traps by occurrences (a trap without the field counts once), then hits;
``backfill_traps`` writes what classification would have given traps written before it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from memosite.codelayers import LAYERS, normalize_layer
from memosite.errors import InvalidArguments, RecordNotFound
from memosite.index import queries
from memosite.kinds import directory_for_kind
from memosite.recurrence import classify_tags, trap_layer, trap_module, trap_recurrence
from memosite.schema import Record, format_iso, is_flagged_stale, parse_record, serialize_record, utc_now
from memosite.vault import Vault, warn

HITS_DIR = "hits"
SESSION_SEEN_MAX_AGE = timedelta(days=30)
NO_HIT_KINDS = frozenset({"scratch"})  # private working notes: reading them is not using memory


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
    return vault.internal_path(HITS_DIR, f"{digest}.txt")


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
    directory = vault.internal_path(HITS_DIR)
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


# --- hits ------------------------------------------------------------------------------------


def _hit_text(path: Path, hits: int, last_hit: str) -> str:
    """The file with only ``hits`` and ``lastHit`` changed: a hit is usage, not an edit, so no
    other key (not even one a hand-written record leaves to its default) is written."""
    raw = parse_record(path.read_bytes().decode("utf-8"), path, validate=False)
    raw.frontmatter["hits"] = hits
    raw.frontmatter["lastHit"] = last_hit
    return serialize_record(raw)


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
    All the hits of one call are one unit of work (one commit).
    """
    from memosite.errors import InvalidRecord, SafetyViolation, StorageError
    from memosite.lookup import locate_record
    from memosite.mutation import mutation

    now_iso = format_iso(now or utc_now())
    wanted = list(dict.fromkeys(i.strip() for i in ids if isinstance(i, str) and i.strip()))
    session = session_id.strip() if isinstance(session_id, str) and session_id.strip() else None
    seen_path = _seen_file(vault, session) if session else None
    if seen_path is not None:
        # Most reads of a session are of records it already counted: no unit of work for those.
        seen = _read_seen(seen_path)
        wanted = [record_id for record_id in wanted if _seen_key(project, record_id) not in seen]
    index = vault.index()
    wanted = [i for i in wanted if not any(e.kind in NO_HIT_KINDS for e in index.by_id(i, project))]
    if not wanted:
        return []
    counted: list[str] = []
    with mutation(vault, f"hits {project}", defer_commit=True) as unit:
        seen = _read_seen(seen_path) if seen_path else set()
        for record_id in wanted:
            if _seen_key(project, record_id) in seen:
                continue
            try:
                record, path = locate_record(vault, project, record_id=record_id)
                if record.kind in NO_HIT_KINDS:
                    continue
                hits = int(record.frontmatter.get("hits") or 0) + 1
                record.frontmatter["hits"] = hits
                record.frontmatter["lastHit"] = now_iso
                unit.write(record, path, text=_hit_text(path, hits, now_iso))
            except (
                RecordNotFound,
                InvalidArguments,
                InvalidRecord,
                SafetyViolation,
                StorageError,
                OSError,
                UnicodeDecodeError,
            ) as exc:
                warn(f"hit not counted for {record_id}: {getattr(exc, 'message', exc)}")
                continue
            counted.append(record_id)
        if seen_path is not None and counted:
            _remember_seen(seen_path, [_seen_key(project, i) for i in counted])
        unit.retitle(f"hits {project}: {', '.join(counted)}" if counted else f"hits {project}")
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
    from memosite.lookup import find_record
    from memosite.mutation import mutation

    if not isinstance(record_id, str) or not record_id.strip():
        raise InvalidArguments("feedback needs a record id")
    now_iso = format_iso(now or utc_now())
    with mutation(vault, "feedback") as unit:
        record, path = find_record(vault, project, record_id=record_id.strip())
        fm = record.frontmatter
        key = "helpfulCount" if helpful else "staleCount"
        fm[key] = int(fm.get(key) or 0) + 1
        fm["lastFeedback"] = now_iso
        unit.retitle(f"feedback {record.kind}:{record.id} {'helpful' if helpful else 'stale'}")
        unit.write(record, path)
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
        named = normalize_layer(layer)
        if named is None:
            raise InvalidArguments(
                f"invalid layer {layer!r}: expected one of {', '.join(LAYERS)} (or another name for one, "
                "such as frontend, infra or qa)",
                details={"field": "layer", "allowed": list(LAYERS)},
            )
        layer = named
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise InvalidArguments(f"invalid limit {limit!r}: expected a positive integer")
    from memosite.refresh import ensure_index

    now_iso = format_iso(now or utc_now())
    ensure_index(vault)
    total, rows = queries.ranked_traps(vault.index(), project, now_iso, layer=layer, limit=limit)
    traps = [
        RankedTrap(
            id=row.id,
            title=row.title,
            severity=row.severity,
            layer=row.layer,
            occurrences=row.occurrences,
            hits=row.hits,
            helpful=row.helpful,
            stale=row.stale,
            path=row.path,
            path_patterns=row.path_patterns,
        )
        for row in rows
    ]
    return RankResult(project=project, layer=layer, traps=traps, total=total)


# --- backfill --------------------------------------------------------------------------------


@dataclass
class BackfilledTrap:
    id: str
    path: str
    fields: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "path": self.path, "fields": self.fields}


@dataclass
class BackfillResult:
    project: str
    dry_run: bool
    scanned: int = 0
    updated: list[BackfilledTrap] = field(default_factory=list)
    skipped: list[dict[str, str]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "project": self.project,
            "dryRun": self.dry_run,
            "scanned": self.scanned,
            "updated": [trap.to_json() for trap in self.updated],
            "skipped": self.skipped,
        }


def _readable_trap(path: Path) -> tuple[Record, Any]:
    """A trap file (a layer under another name, ``layer: Frontend``, reads as its layer) and the
    layer as the file writes it."""
    from memosite.recordfile import read_record

    record = read_record(path)
    raw = parse_record(path.read_bytes().decode("utf-8").removeprefix("\ufeff"), path, validate=False)
    return record, raw.frontmatter.get("layer")


def _missing_classification(record: Record, written_layer: Any, now_iso: str) -> dict[str, Any]:
    fm = record.frontmatter
    changes: dict[str, Any] = {}
    layer = trap_layer(fm, record.body)
    if written_layer != layer:
        changes["layer"] = layer
    if not fm.get("module"):
        module = trap_module(fm, record.body)
        if module:
            changes["module"] = module
    # The tags upsert would give it: a security label in any language (``Camada: segurança``)
    # promoted, and the tags inferred from its words.
    tags = classify_tags({**fm, "layer": layer}, record.body)
    if tags != [str(tag) for tag in fm.get("tags") or []]:
        changes["tags"] = tags
    # Last seen when it was last written: the best the file knows.
    changes.update(trap_recurrence(fm, seen_at=fm.get("updated") or fm.get("created") or now_iso))
    return changes


def backfill_traps(vault: Vault, project: str, *, dry_run: bool = False, now: datetime | None = None) -> BackfillResult:
    """Write the normalised ``layer``, ``module``, ``tags``, ``occurrences`` (1) and ``lastSeen`` onto the
    project's traps that lack them (or name their layer otherwise: ``Frontend`` becomes ``web``),
    as classification does for new traps; bodies and other fields are left as they are. All of it
    is one unit of work: one lock, one view rebuild, one commit. ``dry_run`` writes nothing."""
    from memosite.errors import InvalidRecord, StorageError
    from memosite.mutation import mutation

    now_iso = format_iso(now or utc_now())
    result = BackfillResult(project=project, dry_run=dry_run)
    with mutation(vault, f"rank backfill {project}") as unit:
        for path in vault.iter_record_files(project, (directory_for_kind("trap"),)):
            relative = vault.relative(path)
            try:
                record, written_layer = _readable_trap(path)
            except (InvalidRecord, StorageError, OSError, UnicodeDecodeError) as exc:
                result.skipped.append({"path": relative, "reason": getattr(exc, "message", str(exc))})
                continue
            if record.kind != "trap":
                continue
            result.scanned += 1
            changes = _missing_classification(record, written_layer, now_iso)
            if not changes:
                continue
            if not dry_run:
                record.frontmatter.update(changes)
                if "layer" in changes and record.source is not None:
                    record.source.chunks.pop("layer", None)  # written anew, not as it was spelled
                unit.write(record, path)
                unit.note(f"trap:{record.id} {', '.join(sorted(changes))}")
            result.updated.append(BackfilledTrap(record.id, relative, changes))
        unit.retitle(f"rank backfill {project}: {len(result.updated)} traps")
    return result
