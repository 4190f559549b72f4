"""memosite's view of one session event, and reading and writing it as a line of ``events.jsonl``.

In memory an event is ``(seq, time, turn, type, payload)``: ``seq`` orders the log, ``turn`` is the
turn open when it was written (or None). On disk it is vtcode's versioned envelope
``{"schema_version": ..., "event": {"type": ..., ...}}`` (see :mod:`.wire`). Logs written before
memosite used vtcode's shape hold ``{"version": 1, "seq", "time", "turn", "type", "payload"}``
lines; they are still read, never written.
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
from memosite.sessions.wire import (
    EVENT_SCHEMA_VERSION,
    EXTENSION_KEY,
    VTCODE_LIFECYCLE,
    VTCODE_RESERVED,
    envelope,
    lifecycle_shape_ok,
    read_vtcode,
    vtcode_fields,
)

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
RESERVED_TYPES = frozenset({SESSION_STARTED, SESSION_ENDED, SESSION_SUMMARY}) | VTCODE_RESERVED
LIFECYCLE_TYPES = frozenset({TURN_STARTED, TURN_COMPLETED, TURN_FAILED, TURN_ABORTED})
# memosite types that must sit on exactly this vtcode type (so both tools see the same lifecycle).
COUNTERPARTS = {
    SESSION_STARTED: "thread.started", SESSION_ENDED: "thread.completed", SESSION_SUMMARY: "thread.compact_boundary",
    TURN_STARTED: "turn.started", TURN_COMPLETED: "turn.completed", TURN_FAILED: "turn.failed",
    TURN_ABORTED: "turn.failed",
}  # fmt: skip
_LEGACY_KEYS = frozenset({"version", "seq", "time", "turn", "type", "payload"})
# Types either direction of the vtcode mapping treats specially (see :mod:`.wire`).
_SPECIAL_TYPES = frozenset(COUNTERPARTS) | frozenset(COUNTERPARTS.values()) | {"message", "item.completed"}

_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)
_QUOTE = json.encoder.encode_basestring  # a JSON string, as _ENCODER writes it (no ASCII escaping)
# The line of an agent message (nearly every append), byte for byte what _ENCODER makes of wire().
_MESSAGE_LINE = (
    '{"schema_version":' + _QUOTE(EVENT_SCHEMA_VERSION) + ',"event":{"type":"item.completed","item":{"id":%s,'
    '"type":"agent_message","text":%s},' + _QUOTE(EXTENSION_KEY) + ':{"seq":%d,"time":%s,"turn":%s}}}'
)
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
    # Written by vtcode (no memosite fields): ``time`` is unknown and ``seq`` is its offset + 1.
    foreign: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "time": self.time or None,
            "turn": self.turn,
            "type": self.type,
            "payload": self.payload,
            "foreign": self.foreign,
        }

    def wire(self, session_id: str = "", turns: int = 0) -> dict[str, Any]:
        """The vtcode envelope of this event (``turns``: completed turns, for ``thread.completed``)."""
        extension: dict[str, Any] = {"seq": self.seq, "time": self.time, "turn": self.turn}
        payload = self.payload
        # The two shapes nearly every append has, mapped without the general round trip below.
        if self.type == "message" and len(payload) == 1 and isinstance(payload.get("text"), str):
            item = {"id": f"{session_id}-{self.seq}", "type": "agent_message", "text": payload["text"]}
            return envelope({"type": "item.completed", "item": item, EXTENSION_KEY: extension})
        if self.type not in _SPECIAL_TYPES and "type" not in payload and EXTENSION_KEY not in payload:
            return envelope({"type": self.type, **payload, EXTENSION_KEY: extension})
        event = vtcode_fields(self.type, payload, session_id=session_id, seq=self.seq, turns=turns)
        default_type, default_payload = read_vtcode(event)
        if default_type != self.type:
            extension["type"] = self.type
        if default_payload != payload:
            extension["payload"] = payload
        event[EXTENSION_KEY] = extension
        return envelope(event)

    def _message_text(self) -> str | None:
        """The text of a plain agent message (``message`` with only a string ``text``), else None."""
        if self.type != "message" or len(self.payload) != 1:
            return None
        text = self.payload.get("text")
        return text if isinstance(text, str) else None

    def encode(self, session_id: str = "", turns: int = 0) -> bytes:
        """One line of ``events.jsonl``; raises InvalidArguments for payloads JSON cannot hold and
        SafetyViolation for one that holds something like a secret (nothing is logged then)."""
        message = self._message_text()
        if message is not None and isinstance(self.seq, int) and isinstance(self.time, str):
            # The common case without building and encoding the envelope: only the message's own
            # text can hold a secret (the rest is memosite's bookkeeping), so that is what is scanned.
            turn = "null" if self.turn is None else str(int(self.turn))
            item_id = _QUOTE(f"{session_id}-{self.seq}")
            text = _MESSAGE_LINE % (item_id, _QUOTE(message), self.seq, _QUOTE(self.time), turn)
            scanned = message
        else:
            try:
                text = _ENCODER.encode(self.wire(session_id, turns))
            except (TypeError, ValueError) as exc:
                raise InvalidArguments(f"event payload is not JSON-serialisable: {exc}") from exc
            scanned = text
        findings = scan_text(scanned, where=f"{self.type} event")
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
        """Seconds since the epoch; 0.0 for a vtcode event, which carries no time."""
        return parse_event_time(self.time) if self.time else 0.0


def parse_event_time(value: str) -> float:
    return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()


def _is_int(value: Any, minimum: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= minimum


def decode_event(line: bytes | str, offset: int | None = None) -> Event | None:
    """Decode one log line into an Event, or None when the line is not a valid event.

    Validation is full-shape: a lifecycle event vtcode would not accept, a memosite lifecycle
    event without an integer turn, a malformed time or a memosite type sitting on the wrong
    vtcode type is refused here, so it can never open or close a turn. ``offset`` (the line's
    byte offset) numbers a vtcode-written event; without it such an event has ``seq`` 0.
    """
    try:
        data = json.loads(line)
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(data, dict):
        return None
    if set(data) == _LEGACY_KEYS:
        return _decode_legacy(data)
    event = data.get("event")
    if not isinstance(data.get("schema_version"), str) or not isinstance(event, dict):
        return None
    vt_type = event.get("type")
    if not isinstance(vt_type, str) or not lifecycle_shape_ok(event):
        return None
    default_type, default_payload = read_vtcode(event)
    extension = event.get(EXTENSION_KEY)
    if extension is None:
        return Event(
            seq=offset + 1 if offset is not None else 0, time="", turn=None, type=default_type,
            payload=default_payload, foreign=True,
        )  # fmt: skip
    if not isinstance(extension, dict):
        return None
    seq, time, turn = extension.get("seq"), extension.get("time"), extension.get("turn")
    event_type = extension.get("type", default_type)
    payload = extension.get("payload", default_payload)
    if not _is_int(seq, 1) or not isinstance(time, str) or not _TIME_RE.match(time):
        return None
    if not isinstance(event_type, str) or not _TYPE_RE.match(event_type) or not isinstance(payload, dict):
        return None
    if turn is not None and not _is_int(turn, 1):
        return None
    if event_type in LIFECYCLE_TYPES and turn is None:
        return None
    if COUNTERPARTS.get(event_type, vt_type) != vt_type or (
        vt_type in VTCODE_LIFECYCLE and COUNTERPARTS.get(event_type) != vt_type
    ):
        return None
    assert isinstance(seq, int)  # _is_int checked it
    return Event(seq=seq, time=time, turn=turn, type=event_type, payload=payload)


def _decode_legacy(data: dict[str, Any]) -> Event | None:
    """A line of the envelope memosite wrote before it used vtcode's."""
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
