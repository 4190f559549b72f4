"""A small reference reader of vtcode-memory's on-disk session format, written from its code.

It follows ``crates/codegen/vtcode-memory/src/{event_log,manifest,query,progress}.rs`` and
``vtcode-exec-events``'s ``VersionedThreadEvent`` (vinhnx/VTCode a62a8b2) closely enough to
tell whether vtcode would open a session directory memosite wrote, and what it would see: it
is used only by the tests, never by memosite itself (memosite's own reader must not be the
judge of what it writes).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

USAGE_FIELDS = ("input_tokens", "cached_input_tokens", "cache_creation_tokens", "output_tokens")
LIFECYCLE = ("thread.started", "thread.completed", "turn.started", "turn.completed", "turn.failed")


class VtcodeError(Exception):
    """What vtcode would fail with (serde error, I/O error)."""


def _u64(value: Any) -> bool:
    return type(value) is int and 0 <= value < 2**64


def _str(value: Any) -> bool:
    return isinstance(value, str)


def _usage(value: Any) -> bool:
    return isinstance(value, dict) and all(_u64(value.get(name)) for name in USAGE_FIELDS)


def _item_ok(item: Any) -> bool:
    if not isinstance(item, dict) or not _str(item.get("id")):
        return False
    kind = item.get("type")
    if kind in ("agent_message", "plan"):
        return _str(item.get("text"))
    if kind == "reasoning":
        return _str(item.get("text")) and (item.get("stage") is None or _str(item.get("stage")))
    if kind == "tool_invocation":
        return _str(item.get("tool_name")) and item.get("status") in ("completed", "failed", "in_progress")
    if kind == "tool_output":
        return _str(item.get("call_id")) and item.get("status") in ("completed", "failed", "in_progress")
    if kind == "error":
        return _str(item.get("message"))
    return kind in ("command_execution", "file_change", "mcp_tool_call", "web_search", "harness")


def event_decodes(event: Any) -> bool:
    """Whether ``event`` deserializes as a ``ThreadEvent`` (unknown types become ``Unknown``)."""
    if not isinstance(event, dict) or not _str(event.get("type")):
        return False
    kind = event["type"]
    if kind == "thread.started":
        return _str(event.get("thread_id"))
    if kind == "thread.completed":
        return (
            all(_str(event.get(k)) for k in ("thread_id", "session_id", "subtype", "outcome_code"))
            and _usage(event.get("usage"))
            and _u64(event.get("num_turns"))
        )
    if kind == "thread.compact_boundary":
        return (
            _str(event.get("thread_id"))
            and _str(event.get("trigger"))
            and _str(event.get("mode"))
            and _u64(event.get("original_message_count"))
            and _u64(event.get("compacted_message_count"))
        )
    if kind == "turn.started":
        return event.get("token_breakdown") is None or isinstance(event.get("token_breakdown"), dict)
    if kind == "turn.completed":
        return _usage(event.get("usage"))
    if kind == "turn.failed":
        return _str(event.get("message")) and (event.get("usage") is None or _usage(event.get("usage")))
    if kind in ("item.started", "item.updated", "item.completed"):
        return _item_ok(event.get("item"))
    if kind == "error":
        return _str(event.get("message"))
    return True  # #[serde(other)] Unknown


def versioned_decodes(line: str) -> bool:
    try:
        data = json.loads(line)
    except ValueError:
        return False
    return isinstance(data, dict) and _str(data.get("schema_version")) and event_decodes(data.get("event"))


@dataclass
class VtSession:
    manifest: dict[str, Any]
    entries: list[dict[str, Any]] = field(default_factory=list)
    scanned: bool = False


def _load_strict(path: Path, fields: dict[str, Any]) -> dict[str, Any] | None:
    if not path.exists():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise VtcodeError(f"{path}: {exc}") from exc
    if not isinstance(data, dict):
        raise VtcodeError(f"{path}: not an object")
    for name, check in fields.items():
        if name not in data or not check(data[name]):
            raise VtcodeError(f"{path}: field {name}")
    return data


_MANIFEST_FIELDS = {
    "session_id": _str, "schema_version": _u64, "created_at": _str, "updated_at": _str,
    "turn_count": _u64, "event_count": _u64, "status": _str,
}  # fmt: skip
_ENTRY_FIELDS = ("turn_number", "start_offset", "end_offset", "event_count")


def _entries_ok(value: Any) -> bool:
    return isinstance(value, list) and all(
        isinstance(e, dict) and all(_u64(e.get(k)) for k in _ENTRY_FIELDS) and _str(e.get("ts")) for e in value
    )


def open_session(directory: Path) -> VtSession:
    """``SessionEventLog::open``: trust manifest + index when both parse, else scan the log."""
    manifest = _load_strict(directory / "manifest.json", _MANIFEST_FIELDS)
    index = _load_strict(directory / "index" / "turns.json", {"entries": _entries_ok})
    if manifest is not None and index is not None:
        return VtSession(manifest, index["entries"])
    return scan(directory)


def scan(directory: Path) -> VtSession:
    """``SessionEventLog::scan``: envelope + event.type, full validation for lifecycle kinds."""
    manifest: dict[str, Any] = {"event_count": 0, "turn_count": 0, "status": "active"}
    entries: list[dict[str, Any]] = []
    in_turn = False
    position = 0
    for raw in (directory / "events.jsonl").read_bytes().splitlines(keepends=True):
        end = position + len(raw)
        text = raw.decode("utf-8", errors="replace").strip()
        try:
            data = json.loads(text) if text else None
        except ValueError:
            data = None
        event = data.get("event") if isinstance(data, dict) else None
        valid = isinstance(data, dict) and _str(data.get("schema_version")) and isinstance(event, dict)
        if valid and _str(event.get("type")):
            kind = event["type"]
            if kind in LIFECYCLE and not event_decodes(event):
                position = end
                continue
            manifest["event_count"] += 1
            if kind == "thread.started":
                manifest["status"] = "active"
            elif kind == "thread.completed":
                manifest["status"] = "completed"
            elif kind == "turn.started":
                manifest["status"] = "active"
                in_turn = True
                number = manifest["turn_count"] + 1
                entries.append({"turn_number": number, "start_offset": position, "end_offset": end, "event_count": 1})
            elif kind in ("turn.completed", "turn.failed"):
                if in_turn:
                    entries[-1]["end_offset"], entries[-1]["event_count"] = end, entries[-1]["event_count"] + 1
                    in_turn = False
                    manifest["turn_count"] = len(entries)
            elif in_turn:
                entries[-1]["end_offset"], entries[-1]["event_count"] = end, entries[-1]["event_count"] + 1
        position = end
    return VtSession(manifest, entries, scanned=True)


def reconstruct_turn(directory: Path, session: VtSession, turn: int) -> list[dict[str, Any]]:
    """``reconstruct_turn``: the bytes between the entry's offsets, lines that fully decode."""
    entry = next(e for e in session.entries if e["turn_number"] == turn)
    data = (directory / "events.jsonl").read_bytes()[entry["start_offset"] : entry["end_offset"]]
    events = []
    for line in data.decode("utf-8", errors="replace").splitlines():
        if line.strip() and versioned_decodes(line.strip()):
            events.append(json.loads(line)["event"])
    return events


def query_facts(directory: Path) -> list[str]:
    """``query_facts`` for one session: ``derived/memory.json`` ``grounded_facts[].fact``."""
    path = directory / "derived" / "memory.json"
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    facts = value.get("grounded_facts") if isinstance(value, dict) else None
    return [item["fact"] for item in facts or [] if isinstance(item, dict) and _str(item.get("fact"))]


def load_progress(directory: Path) -> dict[str, Any] | None:
    """``load_progress``: ``derived/progress.json`` as a ``ProgressLedger`` (serde error if not)."""

    def milestones(value: Any) -> bool:
        statuses = ("pending", "in_progress", "done", "blocked")
        return isinstance(value, list) and all(
            isinstance(m, dict) and _str(m.get("id")) and _str(m.get("description")) and m.get("status") in statuses
            for m in value
        )

    fields = {
        "session_id": _str, "goal": _str, "milestones": milestones,
        "confidence": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
        "updated_at": _str,
    }  # fmt: skip
    data = _load_strict(directory / "derived" / "progress.json", fields)
    if data is not None and data.get("stalled_since") is not None and not _str(data["stalled_since"]):
        raise VtcodeError("stalled_since")
    return data
