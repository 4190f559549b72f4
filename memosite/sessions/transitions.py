"""The one transition function: an event's effect on session status and turns.

Used when appending and when rescanning, so both always agree. Events vtcode wrote take the
path vtcode's own index takes (:func:`apply_foreign`).
"""

from __future__ import annotations

from memosite.errors import InvalidTransition
from memosite.sessions.errors import SessionEnded
from memosite.sessions.events import SESSION_ENDED, SESSION_STARTED, SESSION_SUMMARY, Event
from memosite.sessions.lifecycle import LifecycleKind, TurnState
from memosite.sessions.metadata import Manifest


def apply_transition(meta: Manifest, state: TurnState, event: Event, offset: int, end: int | None = None) -> None:
    """Apply one event's effect on session and turn state, or raise without changing anything.

    The single transition function used when appending and when rescanning the log. ``end`` is
    the offset just past the event's line. Events vtcode wrote go through :func:`apply_foreign`.
    """
    end = offset + 1 if end is None else end
    if event.foreign:
        apply_foreign(meta, state, event, offset, end)
        return
    if meta.status == "ended":
        raise SessionEnded(f"session {meta.session_id} has ended")
    kind = LifecycleKind.of(event.type)
    if kind is not None:
        if event.turn is None:
            raise InvalidTransition(f"{event.type} needs a turn number")
        span = state.apply(kind, event.turn, event.seq, offset, end)
        if kind is LifecycleKind.STARTED:
            span.start_time = event.time
        return
    if event.type == SESSION_SUMMARY:
        state.rebase(event.payload.get("lastTurn"))
        start = event.payload.get("startTime")
        if isinstance(start, str):
            meta.start_time = start
    elif event.type == SESSION_STARTED:
        if meta.start_time is None:
            meta.start_time = event.time
    elif event.type == SESSION_ENDED:
        if state.open_turn is not None:
            raise InvalidTransition(f"turn {state.open_turn.turn} is still open")
        meta.status, meta.end_time = "ended", event.time
    state.note(event.seq, offset, end)


def apply_foreign(meta: Manifest, state: TurnState, event: Event, offset: int, end: int) -> None:
    """A vtcode-written event, taken as vtcode takes it: ``thread.started`` and ``turn.started``
    make the session active again, only ``thread.completed`` ends it, and an end without an open
    turn changes no turn."""
    kind = LifecycleKind.of(event.type)
    if event.type == SESSION_STARTED or kind is LifecycleKind.STARTED:
        meta.status, meta.end_time = "active", None
    if event.type == SESSION_ENDED:
        # vtcode leaves such a turn unclosed; memosite's state has no open turn in an ended session.
        state.close_open()
    state.apply_foreign(kind, event.seq, offset, end)
    if event.type == SESSION_STARTED and meta.start_time is None:
        meta.start_time = event.time or None
    elif event.type == SESSION_ENDED:
        meta.status, meta.end_time = "ended", event.time or meta.updated
