"""Cap eviction: when a log passes its event or byte cap, replace its oldest turns by a summary.

Planning (:func:`plan_cap_eviction`) is pure; :func:`enforce_event_cap` does the I/O. The summary
hook runs before anything is written: if it fails, ``events.jsonl`` is untouched and the error
reaches the caller. The summary takes the sequence number of the last event it replaces, so
the log stays strictly ordered, and it carries the goal ledger, the facts and the turn count
forward.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from memosite.errors import MemositeError
from memosite.sessions.derived import DerivedState
from memosite.sessions.errors import SummaryHookFailed
from memosite.sessions.events import SESSION_ENDED, SESSION_SUMMARY, TURN_STARTED, Event, event_text
from memosite.sessions.ledger import Fact, GoalLedger
from memosite.sessions.lifecycle import LifecycleKind
from memosite.sessions.log import EventLog, LoggedEvent
from memosite.text import counted

# After an eviction the log holds at most this share of its cap, so the next few turns do not
# each trigger another rewrite.
CAP_LOW_WATER = 0.75
SUMMARY_RESERVE_BYTES = 8192
MAX_SUMMARY_TEXT = 4000


@dataclass(frozen=True)
class CapLimits:
    """The event and byte caps of a log; 0 disables a cap (as ``max_events == 0`` does in vtcode)."""

    max_events: int
    max_bytes: int

    def exceeded(self, events: int, size: int) -> bool:
        return (self.max_events > 0 and events > self.max_events) or (self.max_bytes > 0 and size > self.max_bytes)


@dataclass(frozen=True)
class CapPlan:
    """Evict ``entries[:cut]``; ``cut == 0`` means nothing can be evicted."""

    cut: int
    evicted_events: int = 0
    evicted_bytes: int = 0

    @property
    def empty(self) -> bool:
        return self.cut == 0


def _clean_cuts(entries: Sequence[LoggedEvent]) -> list[int]:
    """Positions where the log can be split without cutting a turn or losing the session end."""
    cuts = []
    open_turn = False
    for position, logged in enumerate(entries):
        if position > 0 and not open_turn:
            cuts.append(position)
        if logged.event.type == SESSION_ENDED:
            return cuts
        kind = LifecycleKind.of(logged.event.type)
        if kind is not None:
            open_turn = not kind.ends_turn
    if entries and not open_turn:
        cuts.append(len(entries))
    return cuts


def plan_cap_eviction(entries: Sequence[LoggedEvent], limits: CapLimits, log_size: int) -> CapPlan:
    """The smallest whole-turn prefix whose removal brings the log under the low-water mark.

    If no prefix is enough, evict as much as the turn boundaries allow. An open turn and the
    session-end event are never evicted; a prefix that is only an earlier summary is not worth
    a rewrite.
    """
    unlimited = len(entries) + 1, log_size + 1
    target_events = max(1, int(limits.max_events * CAP_LOW_WATER)) if limits.max_events > 0 else unlimited[0]
    # Leave room for the summary line itself, or a byte cap would rewrite on every flush.
    target_bytes = (
        max(1, int(limits.max_bytes * CAP_LOW_WATER) - min(SUMMARY_RESERVE_BYTES, limits.max_bytes // 4))
        if limits.max_bytes > 0
        else unlimited[1]
    )
    cuts = _clean_cuts(entries)
    if not cuts:
        return CapPlan(cut=0)
    chosen = cuts[-1]
    for cut in cuts:
        cut_offset = entries[cut].offset if cut < len(entries) else log_size
        if len(entries) - cut + 1 <= target_events and log_size - cut_offset <= target_bytes:
            chosen = cut
            break
    if chosen == 1 and entries[0].event.type == SESSION_SUMMARY:
        return CapPlan(cut=0)
    end = entries[chosen].offset if chosen < len(entries) else log_size
    return CapPlan(cut=chosen, evicted_events=chosen, evicted_bytes=end)


@dataclass(frozen=True)
class EvictionContext:
    """What a summary hook sees: the events to be replaced and the state carried forward."""

    session_id: str
    evicted: list[Event]
    ledger: GoalLedger
    facts: list[Fact]
    last_turn: int
    start_time: str | None


@dataclass(frozen=True)
class CapSummary:
    text: str
    data: dict[str, Any] = field(default_factory=dict)


SummaryHook = Callable[[EvictionContext], CapSummary]


def default_summary_hook(context: EvictionContext, *, max_turns: int = 20) -> CapSummary:
    """One line per evicted turn (status, size, first text) plus the goals still open."""
    turns: dict[int, list[Event]] = {}
    for event in context.evicted:
        if event.turn is not None:
            turns.setdefault(event.turn, []).append(event)
    lines = [
        f"Replaced {counted(len(context.evicted), 'event')} (seq {context.evicted[0].seq}–{context.evicted[-1].seq})"
        f" covering turns up to {context.last_turn}."
    ]
    for turn, events in list(turns.items())[-max_turns:]:
        ends = [
            e.type.split(".", 1)[1] for e in events if LifecycleKind.of(e.type) not in (None, LifecycleKind.STARTED)
        ]
        first_text = next((event_text(e) for e in events if e.type != TURN_STARTED and event_text(e)), "")
        lines.append(
            f"Turn {turn} ({ends[-1] if ends else 'open'}, {counted(len(events), 'event')}): {first_text[:160]}"
        )
    prior = next((e for e in context.evicted if e.type == SESSION_SUMMARY), None)
    if prior is not None and prior.text:
        lines.append("Earlier: " + prior.text.splitlines()[0][:200])
    if context.ledger.open_goals:
        lines.append("Open goals: " + "; ".join(f"{g.id}: {g.text}" for g in context.ledger.open_goals))
    text = "\n".join(lines)
    if len(text) > MAX_SUMMARY_TEXT:
        text = text[: MAX_SUMMARY_TEXT - 1] + "…"
    return CapSummary(text=text, data={"turnsSummarised": sorted(turns)})


@dataclass(frozen=True)
class CapResult:
    evicted_events: int = 0
    evicted_bytes: int = 0
    summary_seq: int | None = None
    generation: int | None = None
    reason: str = ""

    @property
    def rewritten(self) -> bool:
        return self.summary_seq is not None

    def to_json(self) -> dict[str, Any]:
        return {
            "evictedEvents": self.evicted_events,
            "evictedBytes": self.evicted_bytes,
            "summarySeq": self.summary_seq,
            "generation": self.generation,
            "reason": self.reason,
        }


def enforce_event_cap(log: EventLog, limits: CapLimits, hook: SummaryHook = default_summary_hook) -> CapResult:
    """Rewrite the log as summary + retained tail when it passes its cap; else do nothing."""
    if not limits.exceeded(log.meta.event_count, log.size):
        return CapResult(reason="under cap")
    entries = list(log.iter_events())
    plan = plan_cap_eviction(entries, limits, log.size)
    if plan.empty:
        return CapResult(reason="over cap, but no whole turn can be evicted")
    evicted = entries[: plan.cut]
    carried = DerivedState()
    last_turn = log.state.base
    for logged in evicted:
        carried.apply(logged)
        if logged.event.type == TURN_STARTED and logged.event.turn is not None:
            last_turn = logged.event.turn
        elif logged.event.type == SESSION_SUMMARY and isinstance(logged.event.payload.get("lastTurn"), int):
            last_turn = max(last_turn, logged.event.payload["lastTurn"])
    context = EvictionContext(
        session_id=log.paths.session_id,
        evicted=[logged.event for logged in evicted],
        ledger=carried.ledger,
        facts=carried.facts,
        last_turn=last_turn,
        start_time=log.meta.start_time,
    )
    try:
        summary = hook(context)
        if not isinstance(summary, CapSummary):
            raise TypeError(f"summary hook returned {type(summary).__name__}, not CapSummary")
    except MemositeError as exc:
        raise SummaryHookFailed(f"cap summary failed; events.jsonl left unchanged: {exc.message}") from exc
    except Exception as exc:
        raise SummaryHookFailed(f"cap summary failed; events.jsonl left unchanged: {exc}") from exc
    last = evicted[-1].event
    first_seq = evicted[0].event.seq
    if evicted[0].event.type == SESSION_SUMMARY:
        # The range replaced so far starts where the earlier summary's range started.
        earlier = evicted[0].event.payload.get("evicted")
        if isinstance(earlier, dict) and isinstance(earlier.get("firstSeq"), int):
            first_seq = earlier["firstSeq"]
    summary_event = Event(
        seq=last.seq,
        time=last.time,
        turn=None,
        type=SESSION_SUMMARY,
        payload={
            "text": summary.text,
            "data": summary.data,
            "evicted": {
                "firstSeq": first_seq,
                "lastSeq": last.seq,
                "events": plan.evicted_events,
                "bytes": plan.evicted_bytes,
            },
            "lastTurn": last_turn,
            "startTime": log.meta.start_time,
            "createdAt": log.clock(),
            "ledger": carried.ledger.to_json(),
            "facts": [fact.to_json() for fact in carried.facts],
        },
    )
    data = summary_event.encode(log.paths.session_id, log.state.completed_turns) + log.read_bytes(plan.evicted_bytes)
    log.replace_log(data)
    return CapResult(
        evicted_events=plan.evicted_events,
        evicted_bytes=plan.evicted_bytes,
        summary_seq=last.seq,
        generation=log.meta.generation,
        reason="over cap",
    )
