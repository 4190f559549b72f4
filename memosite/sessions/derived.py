"""Derived views of a session: ``derived/progress.json`` (goal ledger) and ``derived/memory.json``.

Both are regenerated from ``events.jsonl`` and stamped with the log generation and the byte
offset they cover. On open, fresh views are caught up from that offset; stale or malformed ones
are rebuilt from the start of the log. A cap summary carries both forward, so they survive
eviction of the events that produced them.

Each view also carries the fields vtcode reads from the same file: ``memory.json`` its
``session_id`` and ``grounded_facts: [{fact}]`` (what ``query_facts`` and ``search_memory``
read), ``progress.json`` a ``ProgressLedger`` (``session_id``, ``goal``, ``milestones``,
``confidence``, ``stalled_since``, ``updated_at``) built from the goals.

A session vtcode wrote keeps its facts in its own ``derived/memory.json`` (``grounded_facts``,
as vtcode's ``query_facts`` reads them; a session its ``migrate_legacy`` imported has nothing
else): they count as the session's facts, ahead of any the log holds. memosite only reads them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from memosite.errors import MemositeError
from memosite.sessions import safefs
from memosite.sessions.events import FACT, SESSION_SUMMARY
from memosite.sessions.ledger import Fact, GoalLedger
from memosite.sessions.log import EventLog, LoggedEvent
from memosite.sessions.paths import SessionPaths

DERIVED_VERSION = 1


@dataclass
class DerivedState:
    ledger: GoalLedger = field(default_factory=GoalLedger)
    facts: list[Fact] = field(default_factory=list)
    generation: int = 0
    through_offset: int = 0
    through_seq: int = 0
    dirty: bool = False

    def apply(self, logged: LoggedEvent) -> None:
        event = logged.event
        if event.type == SESSION_SUMMARY:
            self._restore(event.payload)
        elif event.type == FACT:
            if event.text.strip():
                self.facts.append(Fact(event.seq, event.time, event.turn, event.text.strip()))
        else:
            self.ledger.apply(event)
        self.through_offset = logged.offset + logged.size
        self.through_seq = event.seq
        self.dirty = True

    def _restore(self, payload: dict[str, Any]) -> None:
        try:
            ledger = GoalLedger.from_json(payload.get("ledger", []))
            facts = [Fact.from_json(item) for item in payload.get("facts", [])]
        except (KeyError, TypeError, ValueError, AttributeError):
            return  # a damaged summary keeps whatever the views already hold
        self.ledger, self.facts = ledger, facts

    def _stamp(self, session_id: str) -> dict[str, Any]:
        return {
            "version": DERIVED_VERSION,
            "sessionId": session_id,
            "generation": self.generation,
            "throughOffset": self.through_offset,
            "throughSeq": self.through_seq,
        }

    def _ledger_view(self, session_id: str, updated: str) -> dict[str, Any]:
        """vtcode's ProgressLedger for these goals: open goals in progress, completed ones done."""
        goals = list(self.ledger.goals.values())
        current = next((goal for goal in goals if goal.status == "open"), goals[0] if goals else None)
        return {
            "session_id": session_id,
            "goal": current.text if current else "",
            "milestones": [
                {"id": g.id, "description": g.text, "status": "done" if g.status == "completed" else "in_progress"}
                for g in goals
            ],
            "confidence": 1.0,
            "stalled_since": None,
            "updated_at": updated,
        }

    def save(self, log: EventLog) -> None:
        """Write both views (atomic, 0600). Not fsynced: they are stamped and regenerable."""
        session_id = log.paths.session_id
        stamp = self._stamp(session_id)
        updated = log.meta.updated or log.meta.created_at
        progress = {**self._ledger_view(session_id, updated), **stamp, "goals": self.ledger.to_json()}
        memory = {
            "session_id": session_id,
            "grounded_facts": [{"fact": fact.text} for fact in self.facts],
            **stamp,
            "facts": [fact.to_json() for fact in self.facts],
        }
        safefs.ensure_private_dir(log.paths.derived_dir)
        for path, data in ((log.paths.progress, progress), (log.paths.memory, memory)):
            text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
            safefs.write_private(path, text.encode("utf-8"), durable=False)
        self.dirty = False


def _read_view(path: Any) -> dict[str, Any] | None:
    try:
        data = json.loads(safefs.read_private(path))
    except (FileNotFoundError, ValueError, UnicodeDecodeError):
        return None
    return data if isinstance(data, dict) and data.get("version") == DERIVED_VERSION else None


def _from_views(log: EventLog) -> DerivedState | None:
    progress, memory = _read_view(log.paths.progress), _read_view(log.paths.memory)
    if progress is None or memory is None:
        return None
    keys = ("sessionId", "generation", "throughOffset", "throughSeq")
    if any(progress.get(key) != memory.get(key) for key in keys):
        return None
    if progress["sessionId"] != log.paths.session_id or progress["generation"] != log.meta.generation:
        return None
    through = progress["throughOffset"]
    if not isinstance(through, int) or not 0 <= through <= log.size:
        return None
    state = DerivedState(generation=log.meta.generation)
    try:
        state.ledger = GoalLedger.from_json(progress["goals"])
        state.facts = [Fact.from_json(item) for item in memory["facts"]]
        state.through_offset, state.through_seq = through, int(progress["throughSeq"])
    except (KeyError, TypeError, ValueError, AttributeError):
        return None
    return state


def vtcode_grounded_facts(paths: SessionPaths) -> list[str]:
    """The non-blank ``grounded_facts[].fact`` texts of a ``derived/memory.json`` vtcode wrote, in
    order; [] when the file is missing, malformed or memosite's own (whose facts are the log's)."""
    try:
        data = json.loads(safefs.read_private(paths.memory))
    except (FileNotFoundError, MemositeError, ValueError, UnicodeDecodeError):
        return []
    if not isinstance(data, dict) or (data.get("version") == DERIVED_VERSION and "throughOffset" in data):
        return []
    items = data.get("grounded_facts")
    if not isinstance(items, list):
        return []
    texts = (item.get("fact") for item in items if isinstance(item, dict))
    return [text for text in texts if isinstance(text, str) and text.strip()]


def load_derived(log: EventLog) -> DerivedState:
    """Fresh views caught up with the log, or views rebuilt from the whole log; for a session
    vtcode wrote, its own grounded facts first."""
    state = _from_views(log)
    if state is None:
        state = DerivedState(generation=log.meta.generation, dirty=True)
        if log.by_vtcode:
            state.facts = [Fact(0, "", None, text) for text in vtcode_grounded_facts(log.paths)]
    if state.through_offset == log.size and not state.dirty:
        return state
    for logged in log.iter_events(state.through_offset):
        state.apply(logged)
    return state
