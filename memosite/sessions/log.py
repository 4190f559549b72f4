"""The append-only, buffered session log: ``events.jsonl`` plus its turn index and manifest.

Durability order on every flush: the buffered event bytes are appended and fsynced, then
``index/turns.json`` is published, then ``manifest.json``. A reopen trusts the metadata only
when it matches the log (size, stamps, and the lines the offsets point at); otherwise it
rescans ``events.jsonl``, which is the only canonical state.
"""

from __future__ import annotations

import contextlib
import os
import stat
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout

from memosite.errors import InvalidTransition, LockTimeout, StorageError
from memosite.sessions import safefs
from memosite.sessions.errors import SessionExists, SessionForeign, SessionNotFound
from memosite.sessions.events import (
    SESSION_ENDED,
    SESSION_STARTED,
    Event,
    decode_event,
)
from memosite.sessions.lifecycle import LifecycleKind, TurnSpan, TurnState
from memosite.sessions.lines import last_line, line_is, read_line_at
from memosite.sessions.metadata import Manifest, TurnIndex, index_inconsistency
from memosite.sessions.paths import EVENTS_FILE, MANIFEST_FILE, SessionPaths
from memosite.sessions.transitions import apply_transition

Clock = Callable[[], str]
FLUSH_BYTES = 1024 * 1024
LOCK_TIMEOUT_SECONDS = 30.0


class UtcClock:
    """Event times as ``format_iso`` writes them, formatting the date part once per second."""

    def __init__(self) -> None:
        self._second = -1
        self._prefix = ""

    def __call__(self) -> str:
        now = time.time()
        second = int(now)
        if second != self._second:
            self._second = second
            self._prefix = datetime.fromtimestamp(second, UTC).strftime("%Y-%m-%dT%H:%M:%S.")
        return f"{self._prefix}{int((now - second) * 1000):03d}Z"


default_clock: Clock = UtcClock()


@dataclass(frozen=True)
class LoggedEvent:
    """An event and the byte offset of its line in ``events.jsonl``."""

    offset: int
    event: Event
    size: int


class EventLog:
    """One session's log, open for reading or (holding the session lock) for appending."""

    def __init__(
        self, paths: SessionPaths, meta: Manifest, *, writable: bool, clock: Clock, lock: FileLock | None
    ) -> None:
        self.paths = paths
        self.meta = meta
        self.state = TurnState(base=meta.turn_base)
        self.writable = writable
        self.clock = clock
        self.rescan_reason: str | None = None
        self.torn_tail_repaired = False
        self.foreign_events = 0
        # No log, only the manifest vtcode wrote (a session vtcode's migrate_legacy imported).
        self.described_by_vtcode = False
        self._lock = lock
        self._buffer: list[bytes] = []
        self._buffered_bytes = 0
        self._durable_bytes = meta.log_bytes
        self._broken: str | None = None

    # --- opening ---------------------------------------------------------------------------
    @classmethod
    def create(cls, paths: SessionPaths, project: str, *, lock_path: Path, clock: Clock = default_clock) -> EventLog:
        """Create an empty session directory (0700) with an empty log and fresh metadata."""
        root_info = safefs.refuse_symlink(paths.root)
        if root_info is None:
            try:
                paths.root.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise StorageError(f"cannot create {paths.root}: {exc.strerror or exc}") from exc
        lock = _acquire(lock_path)
        try:
            try:
                paths.dir.mkdir(mode=safefs.DIR_MODE)
            except FileExistsError:
                raise SessionExists(f"session {paths.session_id} already exists") from None
            except OSError as exc:
                raise StorageError(f"cannot create {paths.dir}: {exc.strerror or exc}") from exc
            safefs.ensure_private_dir(paths.dir)
            safefs.ensure_private_dir(paths.index_dir)
            safefs.ensure_private_dir(paths.derived_dir)
            fd = safefs.open_private(paths.events, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
            os.close(fd)
            log = cls(
                paths, Manifest(paths.session_id, project, created=clock()), writable=True, clock=clock, lock=lock
            )
            log.publish_metadata()
        except BaseException:
            lock.release()
            raise
        return log

    @classmethod
    def open(
        cls,
        paths: SessionPaths,
        project: str,
        *,
        writable: bool = True,
        lock_path: Path | None = None,
        clock: Clock = default_clock,
    ) -> EventLog:
        require_session_dir(paths)
        lock = _acquire(lock_path) if writable and lock_path is not None else None
        try:
            log = cls(paths, Manifest(paths.session_id, project), writable=writable, clock=clock, lock=lock)
            log._load()
        except BaseException:
            if lock is not None:
                lock.release()
            raise
        return log

    def _load(self) -> None:
        reason, manifest, index = self._check_metadata()
        if reason is None and manifest is not None and index is not None:
            self.meta = manifest
            self.state = TurnState(base=index.base, turns=index.turns)
            self._durable_bytes = manifest.log_bytes
            return
        trusted = manifest is not None and manifest.trusted
        previous_generation = manifest.generation if manifest and trusted else _stale_generation(self.paths)
        self.rescan(reason or "metadata missing", previous_generation=previous_generation, described=manifest)

    def _check_metadata(self) -> tuple[str | None, Manifest | None, TurnIndex | None]:
        paths = self.paths
        if safefs.refuse_symlink(paths.pending_rewrite) is not None:
            return "a cap rewrite did not finish", _read_manifest(paths), None
        manifest = _read_manifest(paths)
        if manifest is None:
            return "manifest missing or malformed", None, None
        if manifest.session_id != paths.session_id:
            return "manifest names another session", manifest, None
        if not manifest.trusted:
            return "the manifest was written by vtcode or an older memosite", manifest, None
        log_info = safefs.refuse_symlink(paths.events)
        if log_info is None:
            return "events.jsonl is missing", manifest, None
        try:
            index = TurnIndex.parse(safefs.read_private(paths.turns_index))
        except FileNotFoundError:
            index = None
        if index is None:
            return "turn index missing or malformed", manifest, None
        reason = index_inconsistency(manifest, index, log_info.st_size)
        if reason is None:
            reason = self._spot_check(manifest, index)
        return reason, manifest, index

    def _spot_check(self, manifest: Manifest, index: TurnIndex) -> str | None:
        """Check the lines the metadata points at, without reading the whole log."""
        if manifest.log_bytes == 0:
            return None if manifest.next_seq == 1 and manifest.event_count == 0 else "empty log, non-empty manifest"
        fd = safefs.open_private(self.paths.events, os.O_RDONLY)
        try:
            last = last_line(fd, manifest.log_bytes)
            if last is None:
                return "the log does not end with a complete line"
            event = decode_event(last, manifest.log_bytes - len(last))
            if event is not None and event.foreign:
                return "the log ends with an event vtcode wrote"
            if event is None and manifest.malformed_lines == 0:
                return "the last line is not a valid event"
            if event is not None and event.seq != manifest.next_seq - 1:
                return "the last event does not carry the manifest's sequence number"
            if (manifest.status == "ended") != (event is not None and event.type == SESSION_ENDED):
                return "the manifest's status does not match the end of the log"
            for span in index.turns:
                if not line_is(fd, span.start_offset, LifecycleKind.STARTED, span.turn, span.start_seq):
                    return f"turn {span.turn} does not start where the index says"
                if span.end_offset is not None and not line_is(
                    fd, span.end_offset, LifecycleKind(f"turn.{span.status}"), span.turn, span.end_seq
                ):
                    return f"turn {span.turn} does not end where the index says"
        except OSError as exc:
            raise StorageError(f"cannot read {self.paths.events}: {exc.strerror or exc}") from exc
        finally:
            os.close(fd)
        return None

    def rescan(self, reason: str, *, previous_generation: int = 0, described: Manifest | None = None) -> None:
        """Rebuild turn state and manifest from ``events.jsonl`` alone.

        Lines that do not decode, go backwards in sequence or break the turn lifecycle are
        counted as malformed and skipped, so they can never open or close a turn. A torn last
        line (no newline, from a killed writer) is closed with a newline when writable, so the
        next append starts on a line of its own; no byte of the log is removed.

        Events vtcode wrote carry no time; ``described`` (the manifest found, if any) supplies
        the session's times then. A log holding such events is read-only for memosite.

        With no log at all, a manifest vtcode wrote is the whole session (vtcode's
        ``migrate_legacy`` leaves imported sessions as a manifest and ``derived/``): its status,
        counts and times are the session's, and memosite does not write to it either.
        """
        meta = Manifest(self.paths.session_id, self.meta.project, generation=previous_generation + 1)
        state = TurnState()
        offset = 0
        torn = False
        foreign = 0
        log_missing = False
        try:
            with contextlib.closing(_open_log(self.paths.events)) as handle:
                for line in handle:
                    if not line.endswith(b"\n"):
                        torn = True
                        meta.malformed_lines += 1
                        offset += len(line)
                        break
                    event = decode_event(line, offset)
                    if event is None or event.seq < meta.next_seq:
                        meta.malformed_lines += 1
                    else:
                        try:
                            apply_transition(meta, state, event, offset, offset + len(line))
                        except InvalidTransition:
                            meta.malformed_lines += 1
                        else:
                            meta.event_count += 1
                            meta.next_seq = event.seq + 1
                            meta.updated = event.time or meta.updated
                            foreign += event.foreign
                    offset += len(line)
        except FileNotFoundError:
            log_missing = True
        except OSError as exc:
            raise StorageError(f"cannot read {self.paths.events}: {exc.strerror or exc}") from exc
        if described is not None and not described.trusted:
            meta.created = described.created
            meta.updated = meta.updated or described.updated
            meta.start_time = meta.start_time or described.created
            if log_missing and described.by_vtcode:
                meta.status, meta.event_count = described.status, described.event_count
                state = TurnState(base=described.completed_turns)
        meta.created = meta.created or meta.start_time
        self.described_by_vtcode = log_missing and described is not None and described.by_vtcode
        if (foreign or self.described_by_vtcode) and self.writable:
            raise SessionForeign(
                f"session {self.paths.session_id} was written by vtcode: memosite reads it but does not write to it"
            )
        self.meta, self.state = meta, state
        self.foreign_events = foreign
        self._durable_bytes = offset
        # Nothing was rebuilt when there is no log: the manifest is taken as it stands.
        self.rescan_reason = None if self.described_by_vtcode else reason
        if not self.writable:
            self._sync_meta()
            return
        if torn:
            safefs.append_private(self.paths.events, b"\n")
            self._durable_bytes += 1
            self.torn_tail_repaired = True
        elif not self.paths.events.exists():
            os.close(safefs.open_private(self.paths.events, os.O_WRONLY | os.O_CREAT))
        self.publish_metadata()
        safefs.remove_private(self.paths.pending_rewrite)

    # --- appending -------------------------------------------------------------------------
    def append(self, event_type: str, payload: dict[str, Any] | None = None) -> LoggedEvent:
        """Buffer one event. Turn boundaries and session start/end flush before returning."""
        self._require_writable()
        kind = LifecycleKind.of(event_type)
        if kind is LifecycleKind.STARTED:
            turn: int | None = self.state.last_turn + 1
        elif kind is not None:
            turn = self.state.current_turn_number or 0
        else:
            turn = self.state.current_turn_number
        event = Event(seq=self.meta.next_seq, time=self.clock(), turn=turn, type=event_type, payload=payload or {})
        line = event.encode(self.paths.session_id, self.state.completed_turns)
        offset = self._durable_bytes + self._buffered_bytes
        apply_transition(self.meta, self.state, event, offset, offset + len(line))
        self._buffer.append(line)
        self._buffered_bytes += len(line)
        self.meta.next_seq = event.seq + 1
        self.meta.event_count += 1
        self.meta.updated = event.time
        if kind is not None or event_type in (SESSION_STARTED, SESSION_ENDED) or self._buffered_bytes >= FLUSH_BYTES:
            self.flush()
        return LoggedEvent(offset, event, len(line))

    def flush(self) -> None:
        """Append buffered events (fsync), then publish the turn index, then the manifest."""
        if not self.writable:
            return
        if self._broken:
            raise StorageError(self._broken)
        if not self._buffer:
            return
        data = b"".join(self._buffer)
        try:
            safefs.append_private(self.paths.events, data)
        except Exception as exc:
            # The tail may be torn now: refuse further writes until a reopen rescans the log.
            self._broken = f"session {self.paths.session_id} log write failed; reopen it ({exc})"
            raise
        self._buffer.clear()
        self._buffered_bytes = 0
        self._durable_bytes += len(data)
        self.publish_metadata()

    def publish_metadata(self) -> None:
        self._sync_meta()
        index = TurnIndex(
            log_bytes=self.meta.log_bytes,
            next_seq=self.meta.next_seq,
            generation=self.meta.generation,
            base=self.state.base,
            turns=self.state.turns,
        )
        safefs.write_private(self.paths.turns_index, index.encode())
        safefs.write_private(self.paths.manifest, self.meta.encode())

    def _sync_meta(self) -> None:
        self.meta.log_bytes = self._durable_bytes + self._buffered_bytes
        self.meta.turn_base = self.state.base
        self.meta.last_turn = self.state.last_turn
        self.meta.open_turn = self.state.current_turn_number
        self.meta.completed_turns = self.state.completed_turns

    def replace_log(self, data: bytes) -> None:
        """Swap in a rewritten log (cap eviction): marker, atomic replace, rescan, unmark.

        The pending-rewrite marker stays until the new turn index and manifest are durable,
        so a crash anywhere in between makes the next open rescan.
        """
        self._require_writable()
        self.flush()
        marker = f'{{"generation": {self.meta.generation}, "time": "{self.clock()}"}}\n'
        safefs.write_private(self.paths.pending_rewrite, marker.encode("utf-8"))
        safefs.write_private(self.paths.events, data)
        self.rescan("cap rewrite", previous_generation=self.meta.generation)

    def close(self) -> None:
        try:
            if self.writable and not self._broken:
                self.flush()
        finally:
            if self._lock is not None:
                self._lock.release()
                self._lock = None

    def __enter__(self) -> EventLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _require_writable(self) -> None:
        if not self.writable:
            raise StorageError(f"session {self.paths.session_id} is open read-only")
        if self._broken:
            raise StorageError(self._broken)

    # --- reading ---------------------------------------------------------------------------
    @property
    def by_vtcode(self) -> bool:
        """vtcode wrote this session (events in its log, or only its manifest): memosite only reads it."""
        return self.foreign_events > 0 or self.described_by_vtcode

    @property
    def broken(self) -> bool:
        """True after a failed write: the tail may be torn, so only a reopen may continue."""
        return self._broken is not None

    @property
    def turns(self) -> list[TurnSpan]:
        return self.state.turns

    @property
    def size(self) -> int:
        return self._durable_bytes + self._buffered_bytes

    def iter_events(self, start: int = 0) -> Iterator[LoggedEvent]:
        """Valid events from byte ``start`` to the end of the published log (flushes first)."""
        self.flush()
        end = self._durable_bytes
        offset = start
        try:
            with contextlib.closing(_open_log(self.paths.events)) as handle:
                handle.seek(start)
                for line in handle:
                    if offset + len(line) > end or not line.endswith(b"\n"):
                        break
                    event = self._placed(decode_event(line, offset), offset)
                    if event is not None:
                        yield LoggedEvent(offset, event, len(line))
                    offset += len(line)
        except FileNotFoundError:
            return
        except OSError as exc:
            raise StorageError(f"cannot read {self.paths.events}: {exc.strerror or exc}") from exc

    def read_bytes(self, start: int = 0) -> bytes:
        self.flush()
        return safefs.read_private_range(self.paths.events, start, self._durable_bytes - start)

    def event_at(self, offset: int) -> Event | None:
        self.flush()
        line = read_line_at(self.paths.events, offset)
        return self._placed(decode_event(line, offset), offset) if line else None

    def _placed(self, event: Event | None, offset: int) -> Event | None:
        """A vtcode-written event gets the turn its position puts it in."""
        if event is None or not event.foreign:
            return event
        return replace(event, turn=self.state.turn_at(offset))

    def tail(self, count: int) -> list[Event]:
        """The last ``count`` valid events, read backwards from the end of the log."""
        return [logged.event for logged in self.tail_logged(count)]

    def tail_logged(self, count: int) -> list[LoggedEvent]:
        """:meth:`tail` with each event's offset and line size."""
        self.flush()
        if count <= 0 or self._durable_bytes == 0:
            return []
        fd = safefs.open_private(self.paths.events, os.O_RDONLY)
        try:
            found: list[LoggedEvent] = []
            end = self._durable_bytes
            while end > 0 and len(found) < count:
                line = last_line(fd, end)
                if line is None:
                    break
                end -= len(line)
                event = self._placed(decode_event(line, end), end)
                if event is not None:
                    found.append(LoggedEvent(end, event, len(line)))
            return list(reversed(found))
        finally:
            os.close(fd)


def require_session_dir(paths: SessionPaths) -> None:
    """Raise SessionNotFound unless ``paths.dir`` is a session directory: a real directory that
    holds ``events.jsonl`` or ``manifest.json`` (a log, or the manifest that describes one).

    Anything else (a stray directory under a root, a directory a crash left before its log
    existed) is not a session, so it is neither shown as an empty one nor written into.
    """
    info = safefs.refuse_symlink(paths.dir)
    if info is None or not stat.S_ISDIR(info.st_mode):
        raise SessionNotFound(f"no session {paths.session_id!r}")
    if safefs.refuse_symlink(paths.events) is None and safefs.refuse_symlink(paths.manifest) is None:
        raise SessionNotFound(f"{paths.dir} is not a session directory (no {EVENTS_FILE} or {MANIFEST_FILE})")


def _acquire(lock_path: Path) -> FileLock:
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(lock_path), timeout=LOCK_TIMEOUT_SECONDS)
    try:
        lock.acquire()
    except Timeout as exc:
        raise LockTimeout(f"session is in use by another process: {lock_path.stem}") from exc
    return lock


def _open_log(path: Path) -> Any:
    fd = safefs.open_private(path, os.O_RDONLY)
    return os.fdopen(fd, "rb", buffering=1024 * 1024)


def _read_manifest(paths: SessionPaths) -> Manifest | None:
    try:
        return Manifest.parse(safefs.read_private(paths.manifest))
    except FileNotFoundError:
        return None


def _stale_generation(paths: SessionPaths) -> int:
    try:
        index = TurnIndex.parse(safefs.read_private(paths.turns_index))
    except (FileNotFoundError, StorageError):
        return 0
    return index.generation if index is not None else 0
