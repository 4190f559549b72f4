"""Monthly log roll-up: old log events merged into one ``log-rollup-YYYY-MM.md`` per month.

A log event is eligible when it was created in a month before the current one, or is at least
:data:`LOG_MIN_AGE_DAYS` old. Eligible events are grouped by month and appended, oldest first, to
that month's roll-up (an existing roll-up is extended, never replaced); only once the roll-up is
written are the merged event files tombstoned, unlinked and unindexed.

The roll-up is one part of a gc pass: :mod:`memosite.curator` plans it with :func:`plan_rollups`,
applies it with :func:`apply_rollup`, and runs it on its own for :func:`compact_monthly_logs`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from memosite.errors import InvalidRecord, StorageError
from memosite.recordfile import read_record
from memosite.schema import Record, format_iso, parse_datetime, validate_frontmatter
from memosite.vault import RecordFile, Tombstone, Vault, warn

if TYPE_CHECKING:
    from memosite.mutation import Mutation

LOG_MIN_AGE_DAYS = 30
ROLLUP_PREFIX = "log-rollup-"
_EVENT_HEADING_RE = re.compile(r"^## \S+ · `([^`]+)`[ \t]*$", re.MULTILINE)
_EVENT_KEYS = frozenset({"id", "kind", "project", "created", "updated", "status", "source", "title", "details"})


@dataclass
class RollupPlan:
    """The events of one ``month`` (``YYYY-MM``) to merge into ``target``, oldest first."""

    month: str
    target: Path
    events: list[RecordFile]


def log_is_eligible(
    log_id: str,
    created: str | None,
    compacted: bool,
    now: datetime,
    min_age_days: int = LOG_MIN_AGE_DAYS,
) -> bool:
    """True for a log event (not a roll-up, not compacted) created in a month before ``now``'s or
    at least ``min_age_days`` before ``now``."""
    if compacted or log_id.startswith(ROLLUP_PREFIX) or not created:
        return False
    return created[:7] < format_iso(now)[:7] or parse_datetime(created) <= now - timedelta(days=min_age_days)


def plan_rollups(vault: Vault, project: str, logs: list[tuple[str, RecordFile]]) -> list[RollupPlan]:
    """Eligible ``(created, event)`` pairs grouped by month, each month's events sorted by time."""
    by_month: dict[str, list[tuple[str, RecordFile]]] = {}
    for created, item in logs:
        if item.path.name.startswith(ROLLUP_PREFIX):
            continue  # a file named like a roll-up is one (whatever its id): extended, never merged away
        by_month.setdefault(created[:7], []).append((created, item))
    plans = []
    for month in sorted(by_month):
        target = vault.kind_dir(project, "log") / f"{ROLLUP_PREFIX}{month}.md"
        if target.exists():
            try:
                read_record(target)
            except (InvalidRecord, StorageError) as exc:
                # Never append to (or rebuild over) a roll-up a person has to repair first.
                warn(f"skipping log roll-up for {month}: {exc.message}")
                continue
        events = [item for _, item in sorted(by_month[month], key=lambda pair: (pair[0], pair[1].id))]
        plans.append(RollupPlan(month=month, target=target, events=events))
    return plans


def apply_rollup(
    unit: Mutation,
    project: str,
    rollup: RollupPlan,
    now: datetime,
    step: Callable[[], None],
) -> list[str]:
    """Append the month's events that still parse to its roll-up and write it; only then remove
    the merged event files, as one batch (tombstones first). ``step`` is called once per planned
    event. Returns the vault-relative paths of the merged (now removed) event files."""
    vault = unit.vault
    events: list[tuple[RecordFile, Record]] = []
    for item in rollup.events:
        step()
        if not vault.contains(item.path):
            continue
        try:
            events.append((item, read_record(item.path)))
        except (InvalidRecord, StorageError) as exc:
            warn(f"gc left {item.relative} out of the roll-up: {exc.message}")
    if not events or not vault.contains(rollup.target.parent):
        return []
    if rollup.target.exists() and not vault.contains(rollup.target):
        warn(f"gc skipped the roll-up {vault.relative(rollup.target)}: it resolves outside the vault")
        return []
    existing = read_record(rollup.target) if rollup.target.exists() else None
    roll = _rollup_record(existing, rollup, project, [record for _, record in events], now)
    unit.write(roll, rollup.target)
    unit.remove([Tombstone(project, rec.kind, rec.id, item.path, "gc-rollup") for item, rec in events])
    return [item.relative for item, _ in events]


def _rollup_record(
    existing: Record | None, rollup: RollupPlan, project: str, events: list[Record], now: datetime
) -> Record:
    """The month's roll-up with ``events`` appended; an event already merged is not repeated."""
    merged = set(_EVENT_HEADING_RE.findall(existing.body)) if existing else set()
    fresh = [record for record in events if record.id not in merged]
    earliest = min(str(record.frontmatter["created"]) for record in events)
    if existing is not None:
        fm = existing.frontmatter
        body = existing.body if existing.body.endswith("\n") else existing.body + "\n"
        fm["created"] = min(str(fm.get("created") or earliest), earliest)
        fm["eventCount"] = int(fm.get("eventCount") or len(merged)) + len(fresh)
    else:
        fm = {
            "id": f"{ROLLUP_PREFIX}{rollup.month}",
            "kind": "log",
            "project": project,
            "status": "active",
            "source": "agent",
            "title": f"Log roll-up {rollup.month}",
            "created": earliest,
            "compacted": True,
            "tags": ["rollup", "monthly-log", rollup.month],
            "eventCount": len(fresh),
        }
        body = f"# Log roll-up {rollup.month}\n\nEvents of {rollup.month}, merged by gc; oldest first.\n\n"
    fm["updated"] = format_iso(now)
    body += "".join(_event_section(record) for record in fresh)
    return Record(
        frontmatter=validate_frontmatter(fm),
        body=body,
        path=rollup.target,
        source=existing.source if existing else None,
    )


def _event_section(record: Record) -> str:
    fm = record.frontmatter
    parts = [f"## {fm.get('created')} · `{record.id}`", ""]
    title = fm.get("title")
    body = record.body.strip("\n")
    if isinstance(title, str) and title.strip() and not " ".join(body.split()).startswith(" ".join(title.split())):
        parts += [f"**{' '.join(title.split())}**", ""]
    parts += [body or "_(no text)_", ""]
    if fm.get("details") is not None:
        parts += [
            "Details:",
            "",
            "```json",
            json.dumps(fm["details"], ensure_ascii=False, default=str),
            "```",
            "",
        ]
    extra = {k: v for k, v in fm.items() if k not in _EVENT_KEYS}
    if extra:
        parts += [
            "Fields:",
            "",
            "```json",
            json.dumps(extra, ensure_ascii=False, default=str),
            "```",
            "",
        ]
    return "\n".join(parts) + "\n"
