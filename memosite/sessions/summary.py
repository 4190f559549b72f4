"""What ``show``, ``list`` and the vault record say about one session."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from memosite.sessions.events import Event


@dataclass(frozen=True)
class SessionSummary:
    """What ``show``, ``list`` and the vault record say about one session."""

    session_id: str
    project: str
    status: str
    start_time: str | None
    end_time: str | None
    updated: str | None
    turns: int
    open_turn: int | None
    events: int
    log_bytes: int
    generation: int
    goals: list[dict[str, Any]] = field(default_factory=list)
    facts: int = 0
    malformed_lines: int = 0
    rescan_reason: str | None = None
    # False for a session vtcode imported: no events.jsonl, only its manifest and derived/.
    has_log: bool = True
    handoff: str = ""
    recent: list[Event] = field(default_factory=list)
    # Line in events.jsonl of each recent event vtcode wrote, by seq (its seq is an offset + 1).
    recent_lines: dict[int, int] = field(default_factory=dict)

    @property
    def title(self) -> str:
        first_goal = self.goals[0]["text"] if self.goals else None
        return f"Session {self.session_id}" + (f": {first_goal}" if first_goal else "")

    def to_json(self) -> dict[str, Any]:
        return {
            "sessionId": self.session_id,
            "project": self.project,
            "status": self.status,
            "startTime": self.start_time,
            "endTime": self.end_time,
            "updated": self.updated,
            "turns": self.turns,
            "openTurn": self.open_turn,
            "events": self.events,
            "logBytes": self.log_bytes,
            "generation": self.generation,
            "goals": self.goals,
            "facts": self.facts,
            "malformedLines": self.malformed_lines,
            "rescanReason": self.rescan_reason,
            "hasLog": self.has_log,
            "handoff": self.handoff,
            "recent": [{**event.to_json(), "line": self.recent_lines.get(event.seq)} for event in self.recent],
        }
