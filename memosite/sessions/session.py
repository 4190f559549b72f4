"""An agent session: its event log, derived views, cap enforcement and vault record together.

This is the API the CLI (and any other front end) calls. Appends are buffered by the log; turn
boundaries, session start/end and close flush it, save the derived views and enforce the cap.
The vault's ``session-<id>`` record is refreshed at start, at each turn end and at the end.
"""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from memosite.errors import InvalidArguments, SafetyViolation
from memosite.secrets import scan_text
from memosite.sessions.cap import CapLimits, CapResult, SummaryHook, default_summary_hook, enforce_event_cap
from memosite.sessions.derived import DerivedState, load_derived
from memosite.sessions.events import (
    FACT,
    GOAL_SET,
    LIFECYCLE_TYPES,
    RESERVED_TYPES,
    SESSION_ENDED,
    SESSION_STARTED,
    Event,
    validate_event_type,
)
from memosite.sessions.ledger import render_handoff
from memosite.sessions.lifecycle import LifecycleKind, kind_for_status
from memosite.sessions.lines import line_numbers
from memosite.sessions.log import Clock, EventLog, LoggedEvent, default_clock
from memosite.sessions.paths import SessionPaths, new_session_id, sessions_root, validate_session_id
from memosite.sessions.summary import SessionSummary
from memosite.vault import Vault


def session_lock_path(vault: Vault, project: str, session_id: str, root: Path | None = None) -> Path:
    """Locks live outside the session directory so they never show up in an audit pack.

    Sessions of a named root lock under a key of that root, so equal names in two roots differ.
    """
    if root is None or root.absolute() == sessions_root(vault, project).absolute():
        return vault.internal_path("locks", "sessions", project, f"{session_id}.lock")
    key = hashlib.sha256(str(root.absolute()).encode("utf-8")).hexdigest()[:16]
    return vault.internal_path("locks", "roots", key, f"{session_id}.lock")


class Session:
    """One open session. Use :meth:`start` or :meth:`open`; close it (or use ``with``)."""

    def __init__(
        self,
        vault: Vault,
        project: str,
        log: EventLog,
        derived: DerivedState,
        *,
        summary_hook: SummaryHook,
        sync_record: bool,
    ) -> None:
        self.vault = vault
        self.project = project
        self.log = log
        self.derived = derived
        self.summary_hook = summary_hook
        self.sync_record = sync_record
        self.last_cap: CapResult | None = None

    @classmethod
    def start(
        cls,
        vault: Vault,
        project: str,
        *,
        session_id: str | None = None,
        goals: Iterable[str] = (),
        clock: Clock = default_clock,
        summary_hook: SummaryHook = default_summary_hook,
        sync_record: bool = True,
        root: Path | None = None,
    ) -> Session:
        """Create the session directory, log ``session.started`` and the initial goals.

        The id and the goals are checked first, and a start refused later (its record's write)
        removes the directory it made: a refused start leaves no half-made session behind.
        """
        goals = list(goals)
        for text in goals:
            if not isinstance(text, str) or not text.strip():
                raise InvalidArguments("a goal needs a non-empty text")
            Event(seq=0, time="", turn=None, type=GOAL_SET, payload={"text": text}).encode()  # JSON, size, secrets
        paths = SessionPaths.for_session(vault, project, validate_session_id(session_id or new_session_id()), root)
        # The id names a directory and a record that sync would carry off this machine.
        found = scan_text(paths.session_id, where="session id")
        if found:
            raise SafetyViolation(
                f"refusing to start a session: its id holds what looks like a secret ({found[0].kind});"
                " nothing was written",
                details={"findings": [finding.to_dict() for finding in found]},
            )
        log = EventLog.create(
            paths, project, lock_path=session_lock_path(vault, project, paths.session_id, root), clock=clock
        )
        session = cls(
            vault,
            project,
            log,
            DerivedState(generation=log.meta.generation),
            summary_hook=summary_hook,
            sync_record=sync_record,
        )
        try:
            session._record(log.append(SESSION_STARTED, {"sessionId": paths.session_id, "project": project}))
            for text in goals:
                session.append(GOAL_SET, text=text)
            session.flush()
            session._sync_record()
        except BaseException:
            log.close()
            shutil.rmtree(paths.dir, ignore_errors=True)  # made by this call: EventLog.create refuses an existing one
            raise
        return session

    @classmethod
    def open(
        cls,
        vault: Vault,
        project: str,
        session_id: str,
        *,
        writable: bool = True,
        clock: Clock = default_clock,
        summary_hook: SummaryHook = default_summary_hook,
        sync_record: bool = True,
        root: Path | None = None,
    ) -> Session:
        """Open a session (``root``: a named sessions root instead of the project's).

        A session vtcode wrote opens read-only; opening it for writing raises SessionForeign.
        """
        paths = SessionPaths.for_session(vault, project, session_id, root)
        lock_path = session_lock_path(vault, project, paths.session_id, root) if writable else None
        log = EventLog.open(paths, project, writable=writable, lock_path=lock_path, clock=clock)
        try:
            derived = load_derived(log)
            if writable and derived.dirty:
                derived.save(log)
        except BaseException:
            log.close()
            raise
        return cls(vault, project, log, derived, summary_hook=summary_hook, sync_record=sync_record)

    # --- writing ---------------------------------------------------------------------------
    @property
    def id(self) -> str:
        return self.log.paths.session_id

    @property
    def limits(self) -> CapLimits:
        config = self.vault.config
        return CapLimits(max_events=config.sessions_cap_events, max_bytes=config.sessions_cap_bytes)

    def append(self, event_type: str, *, text: str | None = None, data: dict[str, Any] | None = None) -> Event:
        """Append one event; ``text`` becomes ``payload.text``, ``data`` is merged into the payload."""
        validate_event_type(event_type)
        if event_type in RESERVED_TYPES:
            raise InvalidArguments(f"{event_type} is written by the session itself (use start/end)")
        if data is not None and not isinstance(data, dict):
            raise InvalidArguments("event data must be a JSON object")
        payload: dict[str, Any] = dict(data or {})
        if text is not None:
            payload["text"] = text
        if event_type == FACT and not (isinstance(payload.get("text"), str) and payload["text"].strip()):
            raise InvalidArguments("a fact needs a non-empty text")
        if event_type in LIFECYCLE_TYPES:
            kind = LifecycleKind(event_type)
            return self.start_turn(payload) if kind is LifecycleKind.STARTED else self.end_turn(kind.status, payload)
        payload = self.derived.ledger.prepare(event_type, payload)
        return self._record(self.log.append(event_type, payload))

    def start_turn(self, payload: dict[str, Any] | None = None) -> Event:
        event = self._record(self.log.append(LifecycleKind.STARTED.value, payload))
        self.flush()
        return event

    def end_turn(self, status: str = "completed", payload: dict[str, Any] | None = None) -> Event:
        """End the open turn as completed, failed or aborted, then refresh the vault record."""
        event = self._record(self.log.append(kind_for_status(status).value, payload))
        self.flush()
        self._sync_record()
        return event

    def end(self) -> Event:
        """Abort an open turn (if any), log ``session.ended``, refresh the record."""
        open_turn = self.log.state.open_turn
        if open_turn is not None:
            self._record(self.log.append(LifecycleKind.ABORTED.value, {"text": "session ended"}))
        event = self._record(self.log.append(SESSION_ENDED, {}))
        self.flush()
        self._sync_record()
        return event

    def flush(self) -> None:
        """Make buffered events durable, enforce the cap, save the derived views."""
        self.log.flush()
        if self.log.writable and self.limits.exceeded(self.log.meta.event_count, self.log.size):
            self.last_cap = enforce_event_cap(self.log, self.limits, self.summary_hook)
            if self.last_cap.rewritten:
                # The summary carries the ledger and facts as they were; the retained tail is
                # already applied, so the views are unchanged, only re-stamped for the new log.
                self.derived.generation = self.log.meta.generation
                self.derived.through_offset = self.log.size
                self.derived.dirty = True
        if self.log.writable and self.derived.dirty:
            self.derived.save(self.log)

    def close(self) -> None:
        try:
            if self.log.writable and not self.log.broken:
                self.flush()
        finally:
            self.log.close()

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _record(self, logged: LoggedEvent) -> Event:
        self.derived.apply(logged)
        return logged.event

    def _sync_record(self) -> None:
        if self.sync_record:
            from memosite.sessions.record import sync_session_record  # the store, only when it writes

            sync_session_record(self.vault, self.project, self.summary())

    # --- reading ---------------------------------------------------------------------------
    def handoff(self) -> str:
        meta = self.log.meta
        return render_handoff(
            self.id,
            self.derived.ledger,
            self.derived.facts,
            status=meta.status,
            turns=meta.last_turn,
            events=meta.event_count,
        )

    def summary(self, recent: int = 0) -> SessionSummary:
        meta = self.log.meta
        tail = self.log.tail_logged(recent)
        foreign = {logged.offset: logged.event.seq for logged in tail if logged.event.foreign}
        lines = line_numbers(self.log.paths.events, foreign) if foreign else {}
        return SessionSummary(
            session_id=self.id,
            project=self.project,
            status=meta.status,
            start_time=meta.start_time,
            end_time=meta.end_time,
            updated=meta.updated,
            turns=meta.last_turn,
            open_turn=meta.open_turn,
            events=meta.event_count,
            log_bytes=self.log.size,
            generation=meta.generation,
            goals=self.derived.ledger.to_json(),
            facts=len(self.derived.facts),
            malformed_lines=meta.malformed_lines,
            rescan_reason=self.log.rescan_reason,
            has_log=not self.log.described_by_vtcode,
            handoff=self.handoff(),
            recent=[logged.event for logged in tail],
            recent_lines={seq: lines[offset] for offset, seq in foreign.items()},
        )


def latest_handoff(vault: Vault, project: str, *, exclude: str | None = None, root: Path | None = None) -> str | None:
    """The handoff of the most recently active ended session of the project, if any."""
    from memosite.sessions.catalog import iter_sessions

    ended = [
        entry
        for entry in iter_sessions(root or sessions_root(vault, project), project, named_root=root is not None)
        if not entry.active and entry.session_id != exclude
    ]
    if not ended:
        return None
    newest = max(ended, key=lambda entry: (entry.last_activity, entry.session_id))
    with Session.open(vault, project, newest.session_id, writable=False, sync_record=False, root=root) as session:
        return session.handoff()
