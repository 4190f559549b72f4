"""The one turn-lifecycle state machine, shared by appending and by rescanning the log.

A turn is started, then ends exactly once as completed, failed or aborted. No turn starts while
another is open, no end comes without a start, and turns are numbered 1, 2, 3, ... with no gap.
A cap summary may rebase the numbering (the turns it replaced are gone from the log).

Each turn also keeps what vtcode's turn index says of it: how many events it holds and where
its last event ends. Events vtcode wrote itself are read the way vtcode reads them: a turn
started while another is open leaves that one unclosed (memosite records it as aborted at its
last event), and an end with no open turn is an ordinary event.
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
    """Where one turn sits in ``events.jsonl``: its first and last line, and what lies between.

    ``end_offset`` is where the line that ended the turn starts; ``last_end`` is the byte just
    past the turn's last event (vtcode's ``end_offset``), ``event_count`` its events so far.
    """

    turn: int
    start_offset: int
    start_seq: int
    end_offset: int | None = None
    end_seq: int | None = None
    status: str = "open"
    event_count: int = 1
    last_end: int = 0
    last_offset: int = 0
    last_seq: int = 0
    start_time: str = ""

    def __post_init__(self) -> None:
        if not self.last_seq:
            self.last_offset, self.last_seq = self.start_offset, self.start_seq

    @property
    def is_open(self) -> bool:
        return self.end_offset is None

    def note(self, seq: int, offset: int, end: int) -> None:
        """One more event of this turn, its line at ``offset`` up to ``end``."""
        self.event_count += 1
        self.last_offset, self.last_seq, self.last_end = offset, seq, end

    def to_json(self) -> dict[str, Any]:
        """Every field, for comparing states (the turn index file has its own layout)."""
        return dict(self.__dict__)


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

    @property
    def completed_turns(self) -> int:
        """The number of the last turn that has ended (vtcode's ``turn_count``)."""
        for span in reversed(self.turns):
            if not span.is_open:
                return span.turn
        return self.base

    def apply(self, kind: LifecycleKind, turn: int, seq: int, offset: int, end: int | None = None) -> TurnSpan:
        """Check, then record the transition. The single implementation for append and rescan."""
        self.check(kind, turn)
        end = offset + 1 if end is None else end
        if kind is LifecycleKind.STARTED:
            span = TurnSpan(turn=turn, start_offset=offset, start_seq=seq, last_end=end)
            self.turns.append(span)
            return span
        span = self.turns[-1]
        span.end_offset, span.end_seq, span.status = offset, seq, kind.status
        span.note(seq, offset, end)
        return span

    def note(self, seq: int, offset: int, end: int) -> None:
        """A non-lifecycle event: it belongs to the open turn, if there is one."""
        span = self.open_turn
        if span is not None:
            span.note(seq, offset, end)

    def apply_foreign(self, kind: LifecycleKind | None, seq: int, offset: int, end: int) -> int | None:
        """Take a vtcode-written event as vtcode's index would; returns the turn it belongs to."""
        open_span = self.open_turn
        if kind is LifecycleKind.STARTED:
            self.close_open()
            return self.apply(kind, self.last_turn + 1, seq, offset, end).turn
        if kind is not None and open_span is not None:
            return self.apply(kind, open_span.turn, seq, offset, end).turn
        self.note(seq, offset, end)
        return open_span.turn if open_span is not None else None

    def close_open(self, status: str = "aborted") -> None:
        """End the open turn, if any, at its last event (a turn vtcode left unclosed)."""
        span = self.open_turn
        if span is not None:
            span.end_offset, span.end_seq, span.status = span.last_offset, span.last_seq, status

    def turn_at(self, offset: int) -> int | None:
        """The turn whose lines include byte ``offset``, if any."""
        for span in reversed(self.turns):
            if span.start_offset <= offset < max(span.last_end, span.start_offset + 1):
                return span.turn
        return None

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
