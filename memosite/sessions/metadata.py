"""Derived metadata of a log: ``manifest.json`` and ``index/turns.json``, in vtcode's shapes.

``manifest.json`` holds vtcode's ``SessionManifest`` fields (``session_id``, ``schema_version``,
``created_at``, ``updated_at``, ``turn_count``, ``event_count``, ``status`` = active|completed)
and ``index/turns.json`` its ``TurnIndex`` (``entries`` of ``turn_number``, ``start_offset``,
``end_offset``, ``event_count``, ``ts``), so vtcode opens a memosite session through its fast
path. memosite's own stamps ride in a ``memosite`` object in each (vtcode ignores unknown
fields): the log size, next sequence number and generation they describe, so a reader can tell
whether they match ``events.jsonl`` without reading it.

Parsing never raises: anything malformed comes back as None and the caller rescans the
canonical log. A manifest vtcode wrote (no ``memosite`` object) or one memosite wrote before it
used vtcode's shape (``{"version": 1, "sessionId", ...}``) parses as *not trustworthy*: good for
listing a session, never for skipping the rescan. vtcode's own manifest needs only the fields
vtcode's retention and ``recent_sessions`` read (its ``SessionSummary``: ``session_id``,
``turn_count``, ``event_count``, ``status``, ``updated_at``); ``created_at`` and
``schema_version`` are read when present.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from memosite.sessions.lifecycle import END_STATUSES, TurnSpan

METADATA_VERSION = 2
LEGACY_METADATA_VERSION = 1
VTCODE_SCHEMA_VERSION = 1  # vtcode's SESSION_STORE_SCHEMA_VERSION
SESSION_STATUSES = ("active", "ended")
EXTENSION_KEY = "memosite"


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


def _str(value: Any) -> str:
    if not isinstance(value, str):
        raise ValueError(value)
    return value


def _load_object(data: bytes) -> dict[str, Any] | None:
    try:
        loaded = json.loads(data)
    except (ValueError, UnicodeDecodeError):
        return None
    return loaded if isinstance(loaded, dict) else None


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
    completed_turns: int = 0
    created: str | None = None
    # Read from a manifest vtcode (or an older memosite) wrote: describes the session, not the log.
    trusted: bool = True
    # Read from a manifest vtcode wrote (no memosite stamps).
    by_vtcode: bool = False

    @property
    def created_at(self) -> str:
        return self.created or self.start_time or self.updated or ""

    def to_json(self) -> dict[str, Any]:
        return {
            "session_id": self.session_id,
            "schema_version": VTCODE_SCHEMA_VERSION,
            "created_at": self.created_at,
            "updated_at": self.updated or self.created_at,
            "turn_count": self.completed_turns,
            "event_count": self.event_count,
            "status": "completed" if self.status == "ended" else "active",
            EXTENSION_KEY: {
                "version": METADATA_VERSION,
                "project": self.project,
                "startTime": self.start_time,
                "endTime": self.end_time,
                "updated": self.updated,
                "nextSeq": self.next_seq,
                "logBytes": self.log_bytes,
                "lastTurn": self.last_turn,
                "openTurn": self.open_turn,
                "turnBase": self.turn_base,
                "generation": self.generation,
                "malformedLines": self.malformed_lines,
            },
        }

    def encode(self) -> bytes:
        return (json.dumps(self.to_json(), indent=2, ensure_ascii=False) + "\n").encode("utf-8")

    @classmethod
    def parse(cls, data: bytes) -> Manifest | None:
        raw = _load_object(data)
        if raw is None:
            return None
        if raw.get("version") == LEGACY_METADATA_VERSION and "sessionId" in raw:
            return _parse_legacy(raw)
        try:
            status = _str(raw["status"])
            manifest = cls(
                session_id=_str(raw["session_id"]),
                project="",
                status="active" if status == "active" else "ended",  # vtcode: only "active" is open
                updated=_str(raw["updated_at"]),
                created=_opt_str(raw.get("created_at")),
                event_count=_int(raw["event_count"]),
                completed_turns=_int(raw["turn_count"]),
                last_turn=_int(raw["turn_count"]),
                trusted=False,
            )
            extension = raw.get(EXTENSION_KEY)
            if extension is None:
                manifest.by_vtcode = True
                return manifest
            _int(raw["schema_version"])
            manifest.created = _str(raw["created_at"])
            if not isinstance(extension, dict) or extension.get("version") != METADATA_VERSION:
                return None
            manifest.project = _str(extension["project"])
            manifest.start_time = _opt_str(extension["startTime"])
            manifest.end_time = _opt_str(extension["endTime"])
            manifest.updated = _opt_str(extension["updated"])
            manifest.next_seq = _int(extension["nextSeq"], 1)
            manifest.log_bytes = _int(extension["logBytes"])
            manifest.last_turn = _int(extension["lastTurn"])
            manifest.open_turn = _opt_int(extension["openTurn"], 1)
            manifest.turn_base = _int(extension["turnBase"])
            manifest.generation = _int(extension["generation"], 1)
            manifest.malformed_lines = _int(extension["malformedLines"])
            manifest.trusted = True
        except (KeyError, ValueError, TypeError):
            return None
        return manifest


def _parse_legacy(raw: dict[str, Any]) -> Manifest | None:
    try:
        manifest = Manifest(
            session_id=_str(raw["sessionId"]),
            project=_str(raw["project"]),
            status=_str(raw["status"]),
            start_time=_opt_str(raw["startTime"]),
            end_time=_opt_str(raw["endTime"]),
            updated=_opt_str(raw["updated"]),
            event_count=_int(raw["eventCount"]),
            last_turn=_int(raw["lastTurn"]),
            open_turn=_opt_int(raw["openTurn"], 1),
            trusted=False,
        )
    except (KeyError, ValueError, TypeError):
        return None
    manifest.completed_turns = manifest.last_turn - (1 if manifest.open_turn else 0)
    return manifest if manifest.status in SESSION_STATUSES else None


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
            "entries": [
                {
                    "turn_number": span.turn,
                    "start_offset": span.start_offset,
                    "end_offset": span.last_end,
                    "event_count": span.event_count,
                    "ts": span.start_time,
                    EXTENSION_KEY: {
                        "startSeq": span.start_seq,
                        "end": span.end_offset,
                        "endSeq": span.end_seq,
                        "status": span.status,
                        "lastOffset": span.last_offset,
                        "lastSeq": span.last_seq,
                    },
                }
                for span in self.turns
            ],
            EXTENSION_KEY: {
                "version": METADATA_VERSION,
                "logBytes": self.log_bytes,
                "nextSeq": self.next_seq,
                "generation": self.generation,
                "base": self.base,
            },
        }

    def encode(self) -> bytes:
        # Compact: this file is rewritten at every turn boundary and grows with the turns.
        return (json.dumps(self.to_json(), separators=(",", ":"), ensure_ascii=False) + "\n").encode("utf-8")

    @classmethod
    def parse(cls, data: bytes) -> TurnIndex | None:
        raw = _load_object(data)
        extension = raw.get(EXTENSION_KEY) if raw is not None else None
        if raw is None or not isinstance(extension, dict) or extension.get("version") != METADATA_VERSION:
            return None
        try:
            turns = []
            for item in raw["entries"]:
                own = item[EXTENSION_KEY]
                status = own["status"]
                if status != "open" and status not in END_STATUSES:
                    return None
                turns.append(
                    TurnSpan(
                        turn=_int(item["turn_number"], 1),
                        start_offset=_int(item["start_offset"]),
                        start_seq=_int(own["startSeq"], 1),
                        end_offset=_opt_int(own["end"]),
                        end_seq=_opt_int(own["endSeq"], 1),
                        status=status,
                        event_count=_int(item["event_count"], 1),
                        last_end=_int(item["end_offset"]),
                        last_offset=_int(own["lastOffset"]),
                        last_seq=_int(own["lastSeq"], 1),
                        start_time=_str(item["ts"]),
                    )
                )
            return cls(
                log_bytes=_int(extension["logBytes"]),
                next_seq=_int(extension["nextSeq"], 1),
                generation=_int(extension["generation"], 1),
                base=_int(extension["base"]),
                turns=turns,
            )
        except (KeyError, ValueError, TypeError):
            return None


def index_inconsistency(manifest: Manifest, index: TurnIndex, log_size: int) -> str | None:
    """Why the manifest and turn index do not describe a log of ``log_size`` bytes, or None."""
    if not manifest.trusted:
        return "the manifest was not written by this memosite"
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
        if not span.start_offset <= span.last_offset < span.last_end <= log_size:
            return f"turn {span.turn} has impossible event offsets"
        if span.is_open:
            if position != len(index.turns) - 1 or span.status != "open" or span.end_seq is not None:
                return f"turn {span.turn} is open but not the last turn"
            previous_offset = span.last_offset
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
