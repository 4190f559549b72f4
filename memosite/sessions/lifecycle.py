"""The one turn-lifecycle state machine, shared by appending and by rescanning the log.

A turn is started, then ends exactly once as completed, failed or aborted. No turn starts while
another is open, no end comes without a start, and turns are numbered 1, 2, 3, ... with no gap.
A cap summary may rebase the numbering (the turns it replaced are gone from the log).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from memosite.errors import InvalidTransition
from memosite.sessions.events import TURN_ABORTED, TURN_COMPLETED, TURN_FAILED, TURN_STARTED


class LifecycleKind(Enum):
    STARTED = TURN_STARTED
    COMPLETED = TURN_COMPLETED
    FAILED = TURN_FAILED
    ABORTED = TURN_ABORTED

    @classmethod
    def of(cls, event_type: str) -> LifecycleKind | None:
        return _KIND_BY_TYPE.get(event_type)

    @property
    def ends_turn(self) -> bool:
        return self is not LifecycleKind.STARTED

    @property
    def status(self) -> str:
        return self.value.split(".", 1)[1]


# A dict lookup: this runs on every append, and Enum(value) raising ValueError is slow.
_KIND_BY_TYPE = {kind.value: kind for kind in LifecycleKind}
END_STATUSES = ("completed", "failed", "aborted")


def kind_for_status(status: str) -> LifecycleKind:
    if status not in END_STATUSES:
        raise InvalidTransition(f"invalid turn status {status!r}: expected one of {', '.join(END_STATUSES)}")
    return LifecycleKind(f"turn.{status}")


@dataclass
class TurnSpan:
    """Where one turn sits in ``events.jsonl``: byte offsets of its first and last line."""

    turn: int
    start_offset: int
    start_seq: int
    end_offset: int | None = None
    end_seq: int | None = None
    status: str = "open"

    @property
    def is_open(self) -> bool:
        return self.end_offset is None

    def to_json(self) -> dict[str, Any]:
        return {
            "turn": self.turn,
            "start": self.start_offset,
            "startSeq": self.start_seq,
            "end": self.end_offset,
            "endSeq": self.end_seq,
            "status": self.status,
        }


@dataclass
class TurnState:
    """Turns seen so far. ``base`` is the last turn number a cap summary replaced."""

    base: int = 0
    turns: list[TurnSpan] = field(default_factory=list)

    @property
    def last_turn(self) -> int:
        return self.turns[-1].turn if self.turns else self.base

    @property
    def open_turn(self) -> TurnSpan | None:
        if self.turns and self.turns[-1].is_open:
            return self.turns[-1]
        return None

    @property
    def current_turn_number(self) -> int | None:
        span = self.open_turn
        return span.turn if span else None

    def check(self, kind: LifecycleKind, turn: int) -> None:
        """Raise InvalidTransition unless ``kind`` for ``turn`` is allowed now; never mutates."""
        open_span = self.open_turn
        if kind is LifecycleKind.STARTED:
            if open_span is not None:
                raise InvalidTransition(f"turn {open_span.turn} is still open: end it before starting another")
            if turn != self.last_turn + 1:
                raise InvalidTransition(f"turn {turn} out of order: next turn is {self.last_turn + 1}")
            return
        if open_span is None:
            raise InvalidTransition("cannot end a turn: no turn is open")
        if turn != open_span.turn:
            raise InvalidTransition(f"cannot end turn {turn}: the open turn is {open_span.turn}")

    def apply(self, kind: LifecycleKind, turn: int, seq: int, offset: int) -> TurnSpan:
        """Check, then record the transition. The single implementation for append and rescan."""
        self.check(kind, turn)
        if kind is LifecycleKind.STARTED:
            span = TurnSpan(turn=turn, start_offset=offset, start_seq=seq)
            self.turns.append(span)
            return span
        span = self.turns[-1]
        span.end_offset, span.end_seq, span.status = offset, seq, kind.status
        return span

    def check_rebase(self, last_turn: Any) -> int:
        if not isinstance(last_turn, int) or isinstance(last_turn, bool) or last_turn < self.last_turn:
            raise InvalidTransition(f"invalid summary lastTurn {last_turn!r}")
        if self.turns:
            # A cap summary replaces a prefix of the log, so it always comes before any turn.
            raise InvalidTransition("a summary must come before every turn it does not replace")
        return last_turn

    def rebase(self, last_turn: Any) -> None:
        """A cap summary stands for every turn up to ``last_turn``; numbering continues after it."""
        self.base = self.check_rebase(last_turn)
