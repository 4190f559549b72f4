"""Tombstones across machines: which purge a record's deletion on one side stands for, and whether
it beats an edit the other side made meanwhile.

``tombstones.jsonl`` travels with the vault (its lines merge as a union). When one side removed a
record the other side changed, the newest tombstone of that path is the purge's instant; the edit's
instant is the latest of the edited version's ``updated``/``lastHit``/``lastSeen``/``lastFeedback``
— or, for a hand edit that changed none of them, the end of the second its commit was made. A
purge strictly newer than the edit wins and the record goes; otherwise the record stays and the
sync reports it (never a silent loss: a tie keeps the record).

A tombstone cannot claim the future: its ``deletedAt`` counts for no later than the commit that
brought its line into history (the end of that commit's second: the line and the commit are
written by one machine, on one clock, the line first) and no later than now plus
:data:`CLOCK_SKEW` (for a line not committed yet, and a commit dated ahead of this machine's
clock) (:func:`bounded_deletions`). A purge dated 2099 that arrived in a commit made a minute ago
is a minute-old purge: an edit made since then stays.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from memosite.schema import parse_datetime
from memosite.sync.recordmerge import edit_fields, edit_instant

CLOCK_SKEW = timedelta(minutes=5)


def parse_tombstones(text: str) -> list[dict[str, Any]]:
    return [entry for _, entry in parse_tombstone_lines(text)]


def parse_tombstone_lines(text: str) -> list[tuple[str, dict[str, Any]]]:
    """Each tombstone with the line that holds it (lines that are no JSON object are skipped)."""
    entries = []
    for line in text.splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict):
            entries.append((line, entry))
    return entries


def bounded_deletions(
    lines: Iterable[tuple[str, Mapping[str, Any]]], carried_at: Callable[[str], int | None], now: datetime
) -> dict[str, datetime]:
    """The newest deletion instant of each tombstoned path, each tombstone's ``deletedAt`` bounded
    by the end of the second ``carried_at(line)`` (the commit time, in seconds, of the commit that
    brought the line in; None: not committed yet, so written here), and by ``now`` plus
    :data:`CLOCK_SKEW`."""
    latest: dict[str, datetime] = {}
    ceiling = now + CLOCK_SKEW
    for line, entry in lines:
        path, stamp = entry.get("path"), entry.get("deletedAt")
        if not isinstance(path, str) or stamp is None:
            continue
        try:
            moment = parse_datetime(stamp)
        except (ValueError, TypeError):
            continue
        carried = commit_instant(carried_at(line), end_of_second=True)
        # No allowance past the commit: the machine that wrote the line committed it, on its own
        # clock, afterwards. One would let a line dated 2099 purge edits made minutes after it came.
        bound = ceiling if carried is None else min(ceiling, carried)
        moment = min(moment, bound)
        if path not in latest or moment > latest[path]:
            latest[path] = moment
    return latest


def latest_deletions(entries: Iterable[Mapping[str, Any]]) -> dict[str, datetime]:
    """The newest ``deletedAt`` of each tombstoned path."""
    latest: dict[str, datetime] = {}
    for entry in entries:
        path, stamp = entry.get("path"), entry.get("deletedAt")
        if not isinstance(path, str) or stamp is None:
            continue
        try:
            moment = parse_datetime(stamp)
        except (ValueError, TypeError):
            continue
        if path not in latest or moment > latest[path]:
            latest[path] = moment
    return latest


def commit_instant(seconds: int | None, *, end_of_second: bool) -> datetime | None:
    if seconds is None:
        return None
    moment = datetime.fromtimestamp(seconds, UTC)
    return moment + timedelta(milliseconds=999) if end_of_second else moment


@dataclass(frozen=True)
class PurgeVerdict:
    """Whether a deletion beats the other side's edit, with both instants for the report."""

    deletion_wins: bool
    deleted_at: datetime | None
    edited_at: datetime | None


def judge_deletion(
    *,
    base: str | None,
    edited: str,
    tombstone_at: datetime | None,
    deletion_commit_seconds: int | None,
    edit_commit_seconds: int | None,
) -> PurgeVerdict:
    """Does the deletion of a record win over ``edited``, the other side's version of it?

    ``tombstone_at`` is the newest tombstone of the path (None: removed without one, so the
    deleting commit's time stands for it); ``edit_commit_seconds`` the time of the other side's
    last commit of the path, used when the edit left every edit instant as it was in ``base``."""
    deleted_at = tombstone_at or commit_instant(deletion_commit_seconds, end_of_second=False)
    edited_at = edit_instant(edited)
    if base is None or edit_fields(edited) == edit_fields(base):
        by_commit = commit_instant(edit_commit_seconds, end_of_second=True)
        if by_commit is not None and (edited_at is None or by_commit > edited_at):
            edited_at = by_commit
    if deleted_at is None:
        return PurgeVerdict(False, None, edited_at)
    return PurgeVerdict(edited_at is None or deleted_at > edited_at, deleted_at, edited_at)
