"""Derived metadata of a log: ``manifest.json`` and ``index/turns.json``.

Both are stamped with the log size, next sequence number and generation they describe, so a
reader can tell whether they match ``events.jsonl`` without reading it. Parsing never raises:
anything malformed comes back as None and the caller rescans the canonical log.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from memosite.sessions.lifecycle import END_STATUSES, TurnSpan

METADATA_VERSION = 1
SESSION_STATUSES = ("active", "ended")


def _int(value: Any, minimum: int = 0) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise ValueError(value)
    return value


def _opt_int(value: Any, minimum: int = 0) -> int | None:
    return None if value is None else _int(value, minimum)


def _opt_str(value: Any) -> str | None:
    if value is not None and not isinstance(value, str):
        raise ValueError(value)
    return value


def _load_object(data: bytes) -> dict[str, Any] | None:
    try:
        loaded = json.loads(data)
    except (ValueError, UnicodeDecodeError):
        return None
    return loaded if isinstance(loaded, dict) else None


def _dump(data: dict[str, Any]) -> bytes:
    return (json.dumps(data, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


@dataclass
class Manifest:
    """The summary of one session log that lets a reopen skip reading ``events.jsonl``."""

    session_id: str
    project: str
    status: str = "active"
    start_time: str | None = None
    end_time: str | None = None
    updated: str | None = None
    event_count: int = 0
    next_seq: int = 1
    log_bytes: int = 0
    last_turn: int = 0
    open_turn: int | None = None
    turn_base: int = 0
    generation: int = 1
    malformed_lines: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "version": METADATA_VERSION,
            "sessionId": self.session_id,
            "project": self.project,
            "status": self.status,
            "startTime": self.start_time,
            "endTime": self.end_time,
            "updated": self.updated,
            "eventCount": self.event_count,
            "nextSeq": self.next_seq,
            "logBytes": self.log_bytes,
            "lastTurn": self.last_turn,
            "openTurn": self.open_turn,
            "turnBase": self.turn_base,
            "generation": self.generation,
            "malformedLines": self.malformed_lines,
        }

    def encode(self) -> bytes:
        return _dump(self.to_json())

    @classmethod
    def parse(cls, data: bytes) -> Manifest | None:
        raw = _load_object(data)
        if raw is None or raw.get("version") != METADATA_VERSION:
            return None
        try:
            manifest = cls(
                session_id=str(raw["sessionId"]),
                project=str(raw["project"]),
                status=str(raw["status"]),
                start_time=_opt_str(raw["startTime"]),
                end_time=_opt_str(raw["endTime"]),
                updated=_opt_str(raw["updated"]),
                event_count=_int(raw["eventCount"]),
                next_seq=_int(raw["nextSeq"], 1),
                log_bytes=_int(raw["logBytes"]),
                last_turn=_int(raw["lastTurn"]),
                open_turn=_opt_int(raw["openTurn"], 1),
                turn_base=_int(raw["turnBase"]),
                generation=_int(raw["generation"], 1),
                malformed_lines=_int(raw["malformedLines"]),
            )
        except (KeyError, ValueError, TypeError):
            return None
        if manifest.status not in SESSION_STATUSES:
            return None
        return manifest


@dataclass
class TurnIndex:
    """Turn number → byte offsets in ``events.jsonl``, published before the manifest."""

    log_bytes: int
    next_seq: int
    generation: int
    base: int = 0
    turns: list[TurnSpan] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "version": METADATA_VERSION,
            "logBytes": self.log_bytes,
            "nextSeq": self.next_seq,
            "generation": self.generation,
            "base": self.base,
            "turns": [span.to_json() for span in self.turns],
        }

    def encode(self) -> bytes:
        # Compact: this file is rewritten at every turn boundary and grows with the turns.
        return (json.dumps(self.to_json(), separators=(",", ":")) + "\n").encode("utf-8")

    @classmethod
    def parse(cls, data: bytes) -> TurnIndex | None:
        raw = _load_object(data)
        if raw is None or raw.get("version") != METADATA_VERSION:
            return None
        try:
            turns = []
            for item in raw["turns"]:
                status = item["status"]
                if status != "open" and status not in END_STATUSES:
                    return None
                turns.append(
                    TurnSpan(
                        turn=_int(item["turn"], 1),
                        start_offset=_int(item["start"]),
                        start_seq=_int(item["startSeq"], 1),
                        end_offset=_opt_int(item["end"]),
                        end_seq=_opt_int(item["endSeq"], 1),
                        status=status,
                    )
                )
            return cls(
                log_bytes=_int(raw["logBytes"]),
                next_seq=_int(raw["nextSeq"], 1),
                generation=_int(raw["generation"], 1),
                base=_int(raw["base"]),
                turns=turns,
            )
        except (KeyError, ValueError, TypeError):
            return None


def index_inconsistency(manifest: Manifest, index: TurnIndex, log_size: int) -> str | None:
    """Why the manifest and turn index do not describe a log of ``log_size`` bytes, or None."""
    if manifest.log_bytes != log_size:
        return f"manifest says {manifest.log_bytes} bytes, the log has {log_size}"
    if (index.log_bytes, index.next_seq, index.generation) != (
        manifest.log_bytes,
        manifest.next_seq,
        manifest.generation,
    ):
        return "turn index and manifest describe different logs"
    if index.base != manifest.turn_base:
        return "turn index and manifest disagree on the turn base"
    expected = index.base
    previous_offset = -1
    for position, span in enumerate(index.turns):
        expected += 1
        if span.turn != expected:
            return f"turn index skips from turn {expected - 1} to {span.turn}"
        if span.start_offset <= previous_offset or span.start_offset >= log_size:
            return f"turn {span.turn} starts at an impossible offset"
        if span.start_seq >= manifest.next_seq:
            return f"turn {span.turn} starts after the last event"
        if span.is_open:
            if position != len(index.turns) - 1 or span.status != "open" or span.end_seq is not None:
                return f"turn {span.turn} is open but not the last turn"
            previous_offset = span.start_offset
            continue
        assert span.end_offset is not None
        if span.status == "open" or span.end_seq is None:
            return f"turn {span.turn} has an end but no status"
        if not span.start_offset < span.end_offset < log_size or span.end_seq <= span.start_seq:
            return f"turn {span.turn} ends at an impossible offset"
        previous_offset = span.end_offset
    if index.turns:
        last_turn = index.turns[-1].turn
        open_turn = index.turns[-1].turn if index.turns[-1].is_open else None
    else:
        last_turn, open_turn = index.base, None
    if (manifest.last_turn, manifest.open_turn) != (last_turn, open_turn):
        return "manifest and turn index disagree on the turns"
    if manifest.event_count > manifest.next_seq - 1:
        return "manifest counts more events than sequence numbers"
    return None
