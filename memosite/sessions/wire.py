"""One line of ``events.jsonl`` in vtcode's shape: ``{"schema_version": "0.11.0", "event": {...}}``.

The event object is a ``vtcode_exec_events::ThreadEvent``: ``type`` plus that type's fields.
memosite's events map onto it where vtcode has a counterpart:

    session.started   thread.started      {thread_id}
    session.ended     thread.completed    {thread_id, session_id, subtype, outcome_code, usage, num_turns}
    turn.started      turn.started        {}
    turn.completed    turn.completed      {usage}
    turn.failed       turn.failed         {message}
    turn.aborted      turn.failed         {message}
    session.summary   thread.compact_boundary {thread_id, trigger, mode, counts}
    message           item.completed      {item: {id, type: agent_message, text}}

Every other memosite type (``fact``, ``goal.set``, ``tool``, ...) keeps its own name with its
payload as the event's fields; vtcode reads such an event as ``ThreadEvent::Unknown``, the
contract's catch-all for types it does not know. memosite's own bookkeeping rides in one extra
field of the event, ``memosite: {seq, time, turn}`` (plus ``type`` and ``payload`` when the
vtcode fields alone do not give them back), which vtcode's structs ignore.

A line without that field was written by vtcode itself: it reads as a *foreign* event whose
sequence number is its byte offset plus one (increasing, known without reading the rest of the
log) and whose turn the log assigns by position, as vtcode's turn index does.
"""

from __future__ import annotations

from typing import Any

EVENT_SCHEMA_VERSION = "0.11.0"
EXTENSION_KEY = "memosite"
ZERO_USAGE = {"input_tokens": 0, "cached_input_tokens": 0, "cache_creation_tokens": 0, "output_tokens": 0}

# vtcode types whose full shape vtcode validates before they may touch its turn index.
VTCODE_LIFECYCLE = ("thread.started", "thread.completed", "turn.started", "turn.completed", "turn.failed")
# vtcode types memosite writes only through its own session and turn calls.
VTCODE_RESERVED = frozenset({"thread.started", "thread.completed", "thread.compact_boundary"})
# Snapshots of an item still in progress; the completed item carries the whole text.
VTCODE_ITEM_SNAPSHOTS = frozenset({"item.started", "item.updated"})
_USAGE_FIELDS = tuple(ZERO_USAGE)
_BREAKDOWN_FIELDS = (
    "system_prompt_tokens", "tool_schema_tokens", "instruction_file_tokens", "message_history_tokens",
    "cache_read_tokens", "cache_write_tokens", "cache_miss_tokens",
)  # fmt: skip


def _text(payload: dict[str, Any], default: str) -> str:
    value = payload.get("text")
    return value if isinstance(value, str) and value else default


def vtcode_fields(event_type: str, payload: dict[str, Any], *, session_id: str, seq: int, turns: int) -> dict[str, Any]:
    """The vtcode event object (``type`` first) for a memosite event, without the extension."""
    if event_type == "session.started":
        return {"type": "thread.started", "thread_id": session_id}
    if event_type == "session.ended":
        return {
            "type": "thread.completed", "thread_id": session_id, "session_id": session_id,
            "subtype": "success", "outcome_code": "completed", "usage": dict(ZERO_USAGE), "num_turns": turns,
        }  # fmt: skip
    if event_type == "turn.started":
        return {"type": "turn.started"}
    if event_type == "turn.completed":
        return {"type": "turn.completed", "usage": dict(ZERO_USAGE)}
    if event_type in ("turn.failed", "turn.aborted"):
        return {"type": "turn.failed", "message": _text(payload, event_type.replace(".", " "))}
    if event_type == "session.summary":
        evicted = payload.get("evicted")
        count = evicted.get("events") if isinstance(evicted, dict) else None
        return {
            "type": "thread.compact_boundary", "thread_id": session_id, "trigger": "auto", "mode": "local",
            "original_message_count": count if isinstance(count, int) else 0, "compacted_message_count": 1,
        }  # fmt: skip
    if event_type == "message":
        return {
            "type": "item.completed",
            "item": {"id": f"{session_id}-{seq}", "type": "agent_message", "text": _text(payload, "")},
        }
    fields = {key: value for key, value in payload.items() if key not in ("type", EXTENSION_KEY)}
    return {"type": event_type, **fields}


def read_vtcode(event: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """(memosite type, payload) of a vtcode event object, from its vtcode fields alone."""
    kind = event["type"]
    fields = {key: value for key, value in event.items() if key not in ("type", EXTENSION_KEY)}
    if kind == "thread.started":
        return "session.started", {"sessionId": fields.get("thread_id")}
    if kind == "thread.completed":
        result = fields.get("result")
        return "session.ended", ({"text": result} if isinstance(result, str) and result else {})
    if kind == "turn.started":
        return "turn.started", {}
    if kind == "turn.completed":
        return "turn.completed", {}
    if kind == "turn.failed":
        return "turn.failed", {"text": fields.get("message")}
    item = fields.get("item")
    if kind == "item.completed" and isinstance(item, dict) and item.get("type") == "agent_message":
        return "message", {"text": item.get("text")}
    return kind, fields


def _is_u64(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**64


def _usage_ok(value: Any) -> bool:
    return isinstance(value, dict) and all(_is_u64(value.get(name)) for name in _USAGE_FIELDS)


def _breakdown_ok(value: Any) -> bool:
    if value is None:
        return True
    if not isinstance(value, dict) or not all(_is_u64(value.get(name)) for name in _BREAKDOWN_FIELDS):
        return False
    extra = value.get("subagent_bootstrap_tokens")
    return extra is None or _is_u64(extra)


def lifecycle_shape_ok(event: dict[str, Any]) -> bool:
    """Whether a lifecycle event has the full shape vtcode requires before it counts.

    Mirrors vtcode's index rebuild: a malformed ``thread.*``/``turn.*`` record must not open,
    close or count as a turn.
    """
    kind = event.get("type")
    if kind == "thread.started":
        return isinstance(event.get("thread_id"), str)
    if kind == "thread.completed":
        return (
            all(isinstance(event.get(name), str) for name in ("thread_id", "session_id", "subtype", "outcome_code"))
            and _usage_ok(event.get("usage"))
            and _is_u64(event.get("num_turns"))
            and all(event.get(name) is None or isinstance(event.get(name), str) for name in ("result", "stop_reason"))
        )
    if kind == "turn.started":
        return _breakdown_ok(event.get("token_breakdown"))
    if kind == "turn.completed":
        return _usage_ok(event.get("usage"))
    if kind == "turn.failed":
        usage = event.get("usage")
        return isinstance(event.get("message"), str) and (usage is None or _usage_ok(usage))
    return True


def envelope(event_object: dict[str, Any]) -> dict[str, Any]:
    return {"schema_version": EVENT_SCHEMA_VERSION, "event": event_object}
