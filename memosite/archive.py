"""What archiving a record writes, and what restoring it brings back.

Archiving (``forget`` without purge, or gc sweeping an expired trap, decision or plan) keeps the
file and sets ``status: archived``; the status the record had before is kept beside it in
``archivedFrom``, so ``restore`` undoes the archive exactly: a shipped plan comes back shipped, a
paused decision paused. A record archived before memosite kept ``archivedFrom`` (or by hand) comes
back ``active``.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any

from memosite.statuses import LIVE_STATUSES

ARCHIVED_FROM = "archivedFrom"
# What restore may bring back: a live status. An inactive one (a record archived twice, or a
# hand-written value) falls back to ``active``.
RESTORABLE_STATUSES = LIVE_STATUSES


def archive_fields(frontmatter: MutableMapping[str, Any], now_iso: str, reason: str | None = None) -> None:
    """Mark ``frontmatter`` archived at ``now_iso`` (with ``archivedReason`` when given), keeping
    the status it had in ``archivedFrom``. A record already archived keeps its first status."""
    before = frontmatter.get("status")
    if before != "archived":
        if isinstance(before, str) and before in RESTORABLE_STATUSES:
            frontmatter[ARCHIVED_FROM] = before
        else:
            frontmatter.pop(ARCHIVED_FROM, None)
    frontmatter["status"] = "archived"
    frontmatter["updated"] = now_iso
    if reason is not None:
        frontmatter["archivedReason"] = reason


def restored_status(frontmatter: MutableMapping[str, Any]) -> str:
    """The status a restore brings back: the one kept when the record was archived, else active."""
    kept = frontmatter.get(ARCHIVED_FROM)
    return kept if isinstance(kept, str) and kept in RESTORABLE_STATUSES else "active"


def restore_fields(frontmatter: MutableMapping[str, Any], now_iso: str) -> str:
    """Undo :func:`archive_fields` in place (and drop what a supersede left); returns the status."""
    status = restored_status(frontmatter)
    frontmatter["status"] = status
    frontmatter["updated"] = now_iso
    for stale in (ARCHIVED_FROM, "archivedReason", "supersededBy"):
        frontmatter.pop(stale, None)
    return status
