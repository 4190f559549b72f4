"""The versioned event envelope: one JSON object a line in ``events.jsonl``.

``{"version": 1, "seq": 7, "time": "2026-01-02T03:04:05.678Z", "turn": 2, "type": "tool",
"payload": {...}}`` — ``turn`` is the open turn when the event was written, or null.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from memosite.errors import InvalidArguments, SafetyViolation
from memosite.secrets import scan_text

ENVELOPE_VERSION = 1
MAX_EVENT_BYTES = 4 * 1024 * 1024

SESSION_STARTED = "session.started"
SESSION_ENDED = "session.ended"
SESSION_SUMMARY = "session.summary"
TURN_STARTED = "turn.started"
TURN_COMPLETED = "turn.completed"
TURN_FAILED = "turn.failed"
TURN_ABORTED = "turn.aborted"
GOAL_SET = "goal.set"
GOAL_PROGRESS = "goal.progress"
GOAL_COMPLETED = "goal.completed"
FACT = "fact"

# Types only the session machinery itself may write (start, end, cap summaries).
RESERVED_TYPES = frozenset({SESSION_STARTED, SESSION_ENDED, SESSION_SUMMARY})
LIFECYCLE_TYPES = frozenset({TURN_STARTED, TURN_COMPLETED, TURN_FAILED, TURN_ABORTED})

_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)
_TYPE_RE = re.compile(r"^[a-z][a-z0-9_.-]{0,63}$")
_TIME_RE = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?Z$")


def validate_event_type(event_type: str) -> str:
    if not isinstance(event_type, str) or not _TYPE_RE.match(event_type):
        raise InvalidArguments(
            f"invalid event type {event_type!r}: lower-case letters, digits, '.', '_' or '-', starting with a letter"
        )
    return event_type


@dataclass(frozen=True)
class Event:
    seq: int
    time: str
    turn: int | None
    type: str
    payload: dict[str, Any] = field(default_factory=dict)
    version: int = ENVELOPE_VERSION

    def to_json(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "seq": self.seq,
            "time": self.time,
            "turn": self.turn,
            "type": self.type,
            "payload": self.payload,
        }

    def encode(self) -> bytes:
        """One line of ``events.jsonl``; raises InvalidArguments for payloads JSON cannot hold and
        SafetyViolation for one that holds something like a secret (nothing is logged then)."""
        try:
            text = _ENCODER.encode(self.to_json())
        except (TypeError, ValueError) as exc:
            raise InvalidArguments(f"event payload is not JSON-serialisable: {exc}") from exc
        findings = scan_text(text, where=f"{self.type} event")
        if findings:
            raise SafetyViolation(
                f"refusing to log: {findings[0].describe()}",
                details={"findings": [finding.to_dict() for finding in findings]},
            )
        line = text.encode("utf-8") + b"\n"
        if len(line) > MAX_EVENT_BYTES:
            raise InvalidArguments(f"event is {len(line)} bytes; the limit is {MAX_EVENT_BYTES} bytes")
        return line

    @property
    def text(self) -> str:
        value = self.payload.get("text")
        return value if isinstance(value, str) else ""

    @property
    def timestamp(self) -> float:
        return parse_event_time(self.time)


def parse_event_time(value: str) -> float:
    return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()


def _is_int(value: Any, minimum: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= minimum


def decode_event(line: bytes | str) -> Event | None:
    """Decode one log line into an Event, or None when the line is not a valid envelope.

    Validation is full-shape: a lifecycle event without an integer turn, an unknown
    version or a malformed time is rejected here, so it can never open or close a turn.
    """
    try:
        data = json.loads(line)
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(data, dict) or set(data) != {"version", "seq", "time", "turn", "type", "payload"}:
        return None
    version, seq, time, turn = data["version"], data["seq"], data["time"], data["turn"]
    event_type, payload = data["type"], data["payload"]
    if version != ENVELOPE_VERSION or not _is_int(version, 1) or not _is_int(seq, 1):
        return None
    if not isinstance(time, str) or not _TIME_RE.match(time):
        return None
    if not isinstance(event_type, str) or not _TYPE_RE.match(event_type):
        return None
    if not isinstance(payload, dict):
        return None
    if turn is not None and not _is_int(turn, 1):
        return None
    if event_type in LIFECYCLE_TYPES and turn is None:
        return None
    return Event(seq=seq, time=time, turn=turn, type=event_type, payload=payload, version=version)


def iter_strings(value: Any) -> Iterator[str]:
    """Every string leaf of a payload, in document order (the text search indexes)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from iter_strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from iter_strings(item)


def event_text(event: Event) -> str:
    return "\n".join(part for part in iter_strings(event.payload) if part)
