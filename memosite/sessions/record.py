"""Into the vault: each session keeps its Markdown ``session`` record, ``session-<id>``."""

from __future__ import annotations

from typing import Any

from memosite.sessions.summary import SessionSummary
from memosite.vault import Vault


def session_record_slug(session_id: str) -> str:
    return f"session-{session_id}"


def session_frontmatter(summary: SessionSummary) -> dict[str, Any]:
    frontmatter: dict[str, Any] = {
        "kind": "session",
        "title": summary.title,
        "status": "active" if summary.status == "active" else "completed",
        "startTime": summary.start_time,
        "endTime": summary.end_time,
        "sessionId": summary.session_id,
        "turns": summary.turns,
        "goals": [{"id": goal["id"], "text": goal["text"], "status": goal["status"]} for goal in summary.goals],
        "facts": summary.facts,
    }
    return {key: value for key, value in frontmatter.items() if value is not None}


def sync_session_record(vault: Vault, project: str, summary: SessionSummary) -> None:
    """Create or update the session's record so SESSIONS.md and the site list it."""
    from memosite.store import upsert_record

    upsert_record(
        vault,
        project,
        kind="session",
        slug=session_record_slug(summary.session_id),
        body=summary.handoff,
        frontmatter=session_frontmatter(summary),
    )
