"""The goal ledger (``derived/progress.json``) and the handoff summary rendered from it.

``goal.set`` opens a goal, ``goal.progress`` adds a note to an open goal, ``goal.completed``
closes it. Appends are checked strictly; replaying a log is lenient (an event that does not
fit the ledger is ignored), so a damaged log still yields a usable ledger.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from memosite.errors import InvalidArguments, InvalidTransition
from memosite.mdtext import markdown_text
from memosite.schema import validate_slug
from memosite.sessions.events import GOAL_COMPLETED, GOAL_PROGRESS, GOAL_SET, Event
from memosite.text import counted

GOAL_TYPES = frozenset({GOAL_SET, GOAL_PROGRESS, GOAL_COMPLETED})


@dataclass
class GoalNote:
    seq: int
    time: str
    turn: int | None
    text: str

    def to_json(self) -> dict[str, Any]:
        return {"seq": self.seq, "time": self.time, "turn": self.turn, "text": self.text}


@dataclass
class Goal:
    id: str
    text: str
    status: str
    set_seq: int
    set_time: str
    completed_time: str | None = None
    notes: list[GoalNote] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "text": self.text,
            "status": self.status,
            "setSeq": self.set_seq,
            "setTime": self.set_time,
            "completedTime": self.completed_time,
            "notes": [note.to_json() for note in self.notes],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Goal:
        return cls(
            id=str(data["id"]),
            text=str(data["text"]),
            status="completed" if data.get("status") == "completed" else "open",
            set_seq=int(data["setSeq"]),
            set_time=str(data["setTime"]),
            completed_time=data.get("completedTime"),
            notes=[
                GoalNote(int(n["seq"]), str(n["time"]), n.get("turn"), str(n["text"])) for n in data.get("notes", [])
            ],
        )


def _text(payload: dict[str, Any]) -> str:
    value = payload.get("text")
    return value.strip() if isinstance(value, str) else ""


@dataclass
class GoalLedger:
    goals: dict[str, Goal] = field(default_factory=dict)

    @property
    def open_goals(self) -> list[Goal]:
        return [goal for goal in self.goals.values() if goal.status == "open"]

    @property
    def completed_goals(self) -> list[Goal]:
        return [goal for goal in self.goals.values() if goal.status == "completed"]

    def prepare(self, event_type: str, payload: dict[str, Any]) -> dict[str, Any]:
        """Validate a goal event before it is appended; fills in a new goal's id."""
        if event_type not in GOAL_TYPES:
            return payload
        goal_id = payload.get("goal")
        if event_type == GOAL_SET:
            if not _text(payload):
                raise InvalidArguments("goal.set needs a non-empty text")
            if goal_id is None:
                number = len(self.goals) + 1
                while f"g{number}" in self.goals:
                    number += 1
                goal_id = f"g{number}"
            validate_slug(str(goal_id), "goal id")
            if goal_id in self.goals:
                raise InvalidTransition(f"goal {goal_id} is already set")
            return {**payload, "goal": goal_id}
        if not isinstance(goal_id, str) or goal_id not in self.goals:
            raise InvalidArguments(f"{event_type} names an unknown goal {goal_id!r}")
        if self.goals[goal_id].status == "completed":
            raise InvalidTransition(f"goal {goal_id} is already completed")
        if event_type == GOAL_PROGRESS and not _text(payload):
            raise InvalidArguments("goal.progress needs a non-empty text")
        return payload

    def apply(self, event: Event) -> bool:
        """Record a goal event; returns whether the ledger changed."""
        if event.type not in GOAL_TYPES:
            return False
        goal_id = event.payload.get("goal")
        if not isinstance(goal_id, str):
            return False
        goal = self.goals.get(goal_id)
        if event.type == GOAL_SET:
            text = _text(event.payload)
            if goal is not None or not text:
                return False
            self.goals[goal_id] = Goal(goal_id, text, "open", event.seq, event.time)
            return True
        if goal is None or goal.status == "completed":
            return False
        text = _text(event.payload)
        if text:
            goal.notes.append(GoalNote(event.seq, event.time, event.turn, text))
        if event.type == GOAL_COMPLETED:
            goal.status, goal.completed_time = "completed", event.time
        return True

    def to_json(self) -> list[dict[str, Any]]:
        return [goal.to_json() for goal in self.goals.values()]

    @classmethod
    def from_json(cls, data: Any) -> GoalLedger:
        """Rebuild from a snapshot; raises ValueError/KeyError/TypeError on a malformed one."""
        if not isinstance(data, list):
            raise ValueError("a goal ledger is a list")
        goals = [Goal.from_json(item) for item in data]
        return cls(goals={goal.id: goal for goal in goals})


@dataclass(frozen=True)
class Fact:
    seq: int
    time: str
    turn: int | None
    text: str

    def to_json(self) -> dict[str, Any]:
        return {"seq": self.seq, "time": self.time, "turn": self.turn, "text": self.text}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Fact:
        return cls(int(data["seq"]), str(data["time"]), data.get("turn"), str(data["text"]))


def render_handoff(
    session_id: str,
    ledger: GoalLedger,
    facts: list[Fact],
    *,
    status: str,
    turns: int,
    events: int,
    max_facts: int = 10,
) -> str:
    """A Markdown handoff for the next session: open goals first, then done, then recent facts.

    The handoff becomes the body of the session's record, which the views and the site render as
    Markdown; goals, notes and facts are text an agent (or a synced log) wrote, so each is escaped
    as a record's frontmatter is (``[Login](https://…)`` and ``**bold**`` show as those characters).
    """
    text = markdown_text
    lines = [
        f"## Handoff from session {text(session_id)}",
        "",
        f"Status: {status} · {counted(turns, 'turn')} · {counted(events, 'event')} · {counted(len(facts), 'fact')}",
    ]
    if ledger.open_goals:
        lines += ["", "### Open goals"]
        for goal in ledger.open_goals:
            last = f" — last: {text(goal.notes[-1].text)}" if goal.notes else ""
            lines.append(f"- [ ] {text(goal.id)}: {text(goal.text)}{last}")
    if ledger.completed_goals:
        lines += ["", "### Completed goals"]
        lines += [f"- [x] {text(goal.id)}: {text(goal.text)}" for goal in ledger.completed_goals]
    if not ledger.goals:
        lines += ["", "No goals were set."]
    if facts:
        shown = facts[-max_facts:]
        lines += ["", "### Facts" + (f" (last {len(shown)} of {len(facts)})" if len(shown) < len(facts) else "")]
        lines += [f"- {text(fact.text)}" for fact in shown]
    return "\n".join(lines) + "\n"
