"""The line format: memosite's events in vtcode's versioned envelope, and back, for every event."""

from __future__ import annotations

import json
from typing import Any

import pytest
import vtcode_reader as vt
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from memosite.errors import SafetyViolation
from memosite.sessions.events import LIFECYCLE_TYPES, Event, decode_event

_SCRIPTS = st.text(alphabet=st.sampled_from(list("abcxyz019 -_.éüßДжЖ東京語مرحبا🎉✅\t\n\"'\\")), max_size=24)
_JSON: Any = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**53), max_value=2**53) | _SCRIPTS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_SCRIPTS, inner, max_size=3),
    max_leaves=8,
)
_TYPES = st.sampled_from(
    ["message", "fact", "tool", "goal.set", "note", "item.completed", "item.updated", "error", "plan.delta",
     "session.started", "session.ended", "session.summary", "turn.started", "turn.completed", "turn.failed",
     "turn.aborted"]
) | st.from_regex(r"\A[a-z][a-z0-9_.-]{0,20}\Z")  # fmt: skip
_TIMES = st.integers(min_value=0, max_value=86_399_999).map(
    lambda ms: f"2026-05-04T{ms // 3_600_000:02d}:{ms // 60_000 % 60:02d}:{ms // 1000 % 60:02d}.{ms % 1000:03d}Z"
)


@pytest.mark.slow
@settings(max_examples=400, deadline=None)
@given(
    event_type=_TYPES,
    payload=st.dictionaries(
        _SCRIPTS | st.sampled_from(["text", "type", "memosite", "item", "goal"]), _JSON, max_size=4
    ),
    seq=st.integers(min_value=1, max_value=10**12),
    turn=st.none() | st.integers(min_value=1, max_value=10**6),
    time=_TIMES,
    turns=st.integers(min_value=0, max_value=1000),
)
def test_decode_of_encode_is_identity_and_every_line_is_a_thread_event(
    event_type: str, payload: dict[str, Any], seq: int, turn: int | None, time: str, turns: int
) -> None:
    if event_type in LIFECYCLE_TYPES and turn is None:
        turn = 1
    event = Event(seq=seq, time=time, turn=turn, type=event_type, payload=payload)
    try:
        line = event.encode("s-1", turns)
    except SafetyViolation:
        assume(False)
    assert decode_event(line) == event
    assert decode_event(line, 12345) == event  # the offset only numbers vtcode's own events
    text = line.decode("utf-8")
    assert text.endswith("\n") and "\n" not in text[:-1]
    if event_type not in ("item.completed", "item.updated", "error"):
        assert vt.versioned_decodes(text.strip())


@settings(max_examples=300, deadline=None)
@given(
    text=st.text(max_size=200) | _SCRIPTS,
    seq=st.integers(min_value=1, max_value=10**12),
    turn=st.none() | st.integers(min_value=1, max_value=10**6),
    time=_TIMES,
)
def test_an_agent_messages_line_is_byte_for_byte_the_envelope_encoded(
    text: str, seq: int, turn: int | None, time: str
) -> None:
    """Messages take a shortcut past the envelope's dicts; the bytes must be the same."""
    from memosite.sessions.events import _ENCODER

    event = Event(seq=seq, time=time, turn=turn, type="message", payload={"text": text})
    try:
        line = event.encode("sess-é-1", 3)
    except SafetyViolation:
        assume(False)
    except UnicodeEncodeError:  # a lone surrogate: no UTF-8 line holds it, either way
        with pytest.raises(UnicodeEncodeError):
            _ENCODER.encode(event.wire("sess-é-1", 3)).encode("utf-8")
        return
    assert line == _ENCODER.encode(event.wire("sess-é-1", 3)).encode("utf-8") + b"\n"
    assert decode_event(line) == event


def test_a_secret_in_an_agent_message_is_refused() -> None:
    event = Event(seq=1, time="2026-05-04T10:00:00.000Z", turn=1, type="message",
                  payload={"text": 'deploying with api_key="Zx81KqPw0LmN4vB7tR2s" now'})  # fmt: skip
    with pytest.raises(SafetyViolation):
        event.encode("s-1", 0)


@pytest.mark.parametrize(
    ("event_type", "vtcode_type"),
    [
        ("session.started", "thread.started"),
        ("session.ended", "thread.completed"),
        ("session.summary", "thread.compact_boundary"),
        ("turn.started", "turn.started"),
        ("turn.completed", "turn.completed"),
        ("turn.failed", "turn.failed"),
        ("turn.aborted", "turn.failed"),
        ("message", "item.completed"),
        ("fact", "fact"),
    ],
)
def test_memosite_types_map_onto_vtcode_types(event_type: str, vtcode_type: str) -> None:
    turn = 1 if event_type in LIFECYCLE_TYPES else None
    line = Event(seq=3, time="2026-05-04T00:00:00.000Z", turn=turn, type=event_type, payload={}).encode("s-1", 2)
    assert json.loads(line)["event"]["type"] == vtcode_type


@pytest.mark.parametrize(
    "line",
    [
        '{"schema_version":"0.11.0","event":{"type":"thread.started","thread_id":123}}',
        '{"schema_version":"0.11.0","event":{"type":"turn.started","token_breakdown":"invalid"}}',
        '{"schema_version":"0.11.0","event":{"type":"turn.completed","usage":{}}}',
        '{"schema_version":"0.11.0","event":{"type":"turn.failed"}}',
        '{"schema_version":"0.11.0","event":{"type":"thread.completed","thread_id":"t"}}',
        '{"schema_version":1,"event":{"type":"fact"}}',
        '{"event":{"type":"fact"}}',
        '{"schema_version":"0.11.0","event":{"memosite":{"seq":1}}}',
        # memosite fields that would give the two tools different lifecycles
        '{"schema_version":"0.11.0","event":{"type":"fact","memosite":{"seq":1,"time":"2026-05-04T00:00:00.000Z",'
        '"turn":1,"type":"turn.started"}}}',
        '{"schema_version":"0.11.0","event":{"type":"turn.started","memosite":{"seq":1,"time":"2026-05-04T00:00:00.000Z",'
        '"turn":1,"type":"fact"}}}',
        '{"schema_version":"0.11.0","event":{"type":"turn.started","memosite":{"seq":1,"time":"2026-05-04T00:00:00.000Z",'
        '"turn":null}}}',
        '{"schema_version":"0.11.0","event":{"type":"fact","memosite":{"seq":0,"time":"2026-05-04T00:00:00.000Z"}}}',
        "not json",
    ],
)
def test_malformed_lines_are_refused_so_they_cannot_touch_a_turn(line: str) -> None:
    assert decode_event(line, 0) is None


def test_vtcode_events_read_as_foreign_events_numbered_by_offset() -> None:
    item = {"id": "m", "type": "agent_message", "text": "hi"}
    line = json.dumps({"schema_version": "0.11.0", "event": {"type": "item.completed", "item": item}})
    event = decode_event(line, 99)
    assert event is not None and event.foreign
    assert (event.seq, event.time, event.turn, event.type, event.payload) == (100, "", None, "message", {"text": "hi"})
    unknown = decode_event('{"schema_version":"0.12.0","event":{"type":"future.thing","x":1}}', 0)
    assert unknown is not None and (unknown.type, unknown.payload) == ("future.thing", {"x": 1})
    ended = decode_event(
        json.dumps({"schema_version": "0.11.0", "event": {
            "type": "thread.completed", "thread_id": "t", "session_id": "s", "subtype": "success",
            "outcome_code": "completed", "result": "All done.", "num_turns": 1,
            "usage": {"input_tokens": 1, "cached_input_tokens": 0, "cache_creation_tokens": 0, "output_tokens": 2},
        }}),
        0,
    )  # fmt: skip
    assert ended is not None and (ended.type, ended.text) == ("session.ended", "All done.")


def test_lines_of_the_old_memosite_envelope_still_decode() -> None:
    old = '{"version":1,"seq":4,"time":"2026-05-04T00:00:00.000Z","turn":2,"type":"turn.started","payload":{}}'
    event = decode_event(old)
    assert event is not None and not event.foreign and (event.seq, event.turn, event.type) == (4, 2, "turn.started")
