"""The watch loop: keeps the index and the compiled views in step with edits made outside memosite.

An editor saving a record, ``git pull``, ``rm``: each burst of file events becomes one
recompile of the record files it named (a whole project only when the events cannot name them: a
directory moved or deleted, events the system dropped). What counts as a change is decided by pure
functions (:func:`record_project`, :func:`records_changed`, :class:`Debouncer`) over plain
:class:`FileEvent` values; :class:`VaultWatcher` only feeds them real watchdog events.

Ignored, so that the loop never feeds itself: the views memosite writes at a project's root,
everything under ``.memosite/`` (index, lock), temp files of atomic writes and conflict
sidecars. File reads (watchdog's ``opened`` / ``closed_no_write``) are not changes either.

The watcher knows when it sees the files (:meth:`VaultWatcher.wait_ready`) and when it has handled
every change made so far (:meth:`VaultWatcher.wait_settled`) by a handshake, not a clock: it touches
a probe file of its own in ``projects/`` (a temp name, ignored by everything else) until the probe's
event comes back. Events arrive in order, so every change made before the probe was seen first.
"""

from __future__ import annotations

import logging
import secrets
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memosite.config import validate_project_id
from memosite.errors import InvalidArguments, MemositeError
from memosite.kinds import RECORD_DIRS
from memosite.refresh import RefreshResult, rebuild_views, refresh_files, refresh_project
from memosite.vault import TEMP_PREFIX, Vault, is_record_name, warn

CHANGE_EVENTS = frozenset({"created", "modified", "deleted", "moved"})
DEFAULT_QUIET_SECONDS = 0.25
DEFAULT_MAX_DELAY_SECONDS = 2.0
PROBE_PREFIX = f"{TEMP_PREFIX}watch-probe-"
PROBE_EVERY_SECONDS = 0.05  # how often a probe is touched again until its event comes back


@dataclass(frozen=True)
class FileEvent:
    """A file system event, reduced to what the watcher decides on."""

    event_type: str
    src_path: str
    dest_path: str = ""
    is_directory: bool = False

    @classmethod
    def from_watchdog(cls, event: Any) -> FileEvent:
        dest = getattr(event, "dest_path", "") or ""
        return cls(
            event_type=str(event.event_type),
            src_path=_text(event.src_path),
            dest_path=_text(dest),
            is_directory=bool(event.is_directory),
        )


def _text(path: str | bytes) -> str:
    return path.decode("utf-8", "surrogateescape") if isinstance(path, bytes) else str(path)


def _project_parts(projects_dir: Path, path: str) -> tuple[str, ...] | None:
    try:
        parts = Path(path).relative_to(projects_dir).parts
    except ValueError:
        return None
    if not parts or parts[0].startswith("."):
        return None
    try:
        validate_project_id(parts[0])
    except InvalidArguments:
        return None
    return parts


def record_project(projects_dir: Path, path: str) -> str | None:
    """The project whose record file ``path`` is, or None when the path is not a record.

    A record is ``<projects>/<project>/<kind dir>/<name>.md``; views at the project root, temp
    files, sidecars and anything deeper or elsewhere are not.
    """
    parts = _project_parts(projects_dir, path)
    if parts is None or len(parts) != 3:
        return None
    project, subdir, name = parts
    if subdir not in RECORD_DIRS or not is_record_name(name):
        return None
    return project


def _directory_project(projects_dir: Path, path: str) -> str | None:
    """A project whose record directories a directory event may have changed wholesale."""
    parts = _project_parts(projects_dir, path)
    if parts is None or len(parts) > 2 or (len(parts) == 2 and parts[1] not in RECORD_DIRS):
        return None
    return parts[0]


# What changed in a project: the vault-relative paths of its record files the events named, or
# WHOLE_PROJECT when the events cannot say which files (a directory moved or deleted, lost events).
Changes = dict[str, "set[str] | None"]
WHOLE_PROJECT = None


def records_changed(projects_dir: Path, events: Iterable[FileEvent]) -> Changes:
    """The record files these events may have created, changed, moved or removed, by project.

    A move counts for both ends: saving by rename (temp file -> ``x.md``) changes ``x.md``;
    renaming ``x.md`` away removes it. Moving or deleting a whole kind directory or project
    changes the whole project (:data:`WHOLE_PROJECT`): inotify reports the directory only, not
    the files inside it.
    """
    changes: Changes = {}
    for event in events:
        if event.event_type not in CHANGE_EVENTS:
            continue
        for path in (event.src_path, event.dest_path):
            if not path:
                continue
            if event.is_directory:
                project = _directory_project(projects_dir, path) if event.event_type != "modified" else None
                if project is not None:
                    changes[project] = WHOLE_PROJECT
            elif (project := record_project(projects_dir, path)) is not None:
                merge_changes(changes, {project: {_vault_relative(projects_dir, path)}})
    return changes


def _vault_relative(projects_dir: Path, path: str) -> str:
    return "/".join((projects_dir.name, *Path(path).relative_to(projects_dir).parts))


def merge_changes(into: Changes, more: Changes) -> None:
    """Add ``more`` to ``into``: paths add up; a whole project stays whole."""
    for project, paths in more.items():
        held = into.get(project, set())
        into[project] = WHOLE_PROJECT if held is WHOLE_PROJECT or paths is WHOLE_PROJECT else held | paths


def projects_changed(projects_dir: Path, events: Iterable[FileEvent]) -> set[str]:
    """The projects whose records these events may have created, changed, moved or removed."""
    return set(records_changed(projects_dir, events))


@dataclass
class Debouncer:
    """Groups a burst of events: due once events stop for ``quiet`` seconds, or after ``max_delay``
    since the burst began, whichever comes first (so a steady trickle cannot starve the loop)."""

    quiet: float = DEFAULT_QUIET_SECONDS
    max_delay: float = DEFAULT_MAX_DELAY_SECONDS
    first: float | None = None
    last: float | None = None

    def note(self, now: float) -> None:
        if self.first is None:
            self.first = now
        self.last = now

    @property
    def pending(self) -> bool:
        return self.first is not None

    def due(self, now: float) -> bool:
        if self.first is None or self.last is None:
            return False
        return now - self.last >= self.quiet or now - self.first >= self.max_delay

    def wait_time(self, now: float) -> float:
        """Seconds until :meth:`due` can next be true (0 when it already is)."""
        if self.first is None or self.last is None:
            return self.quiet
        return max(0.0, min(self.last + self.quiet, self.first + self.max_delay) - now)

    def reset(self) -> None:
        self.first = self.last = None


@dataclass
class ProjectChange(RefreshResult):
    """What one recompile did to one project: the index refresh plus the views it rewrote."""

    project: str = ""
    views: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "project": self.project,
            "added": self.added,
            "changed": self.changed,
            "removed": self.removed,
            "invalid": self.invalid,
            "views": self.views,
        }


@dataclass
class WatchBatch:
    """One recompile: the projects a burst of events touched and what changed in each."""

    projects: list[ProjectChange]

    @property
    def touched(self) -> bool:
        return any(change.touched for change in self.projects)

    def to_json(self) -> dict[str, Any]:
        return {"projects": [change.to_json() for change in self.projects]}


def recompile_projects(
    vault: Vault, projects: Iterable[str], paths: Mapping[str, set[str] | None] | None = None, *, embed: bool = True
) -> WatchBatch:
    """Bring the index and views of ``projects`` in step with their files, under the vault lock.

    A project with a set of vault-relative ``paths`` has those files alone looked at (the files a
    watcher saw change); any other project has every file stat-ed. Only views that records of a
    changed kind appear in are rewritten. A project whose directory is gone loses its index rows
    and gets no views (so a deleted project stays deleted). ``embed=False`` leaves the changed
    records' vectors to the next search (see :func:`memosite.refresh.refresh_project`).
    """

    batch = WatchBatch(projects=[])
    with vault.lock():
        for project in sorted(projects):
            if not vault.project_dir(project).is_dir():
                index = vault.index()
                batch.projects.append(ProjectChange(project=project, removed=sorted(index.file_stats(project))))
                index.clear(project)
                continue
            named = paths.get(project) if paths is not None else None
            refreshed = (
                refresh_project(vault, project, embed=embed)
                if named is None
                else refresh_files(vault, project, named, embed=embed)
            )
            change = ProjectChange(project=project, **vars(refreshed))
            if change.touched:
                change.views = [path.name for path in rebuild_views(vault, project, change.kinds)]
            batch.projects.append(change)
    return batch


# watchdog says that the kernel dropped events (inotify's queue overflowed) only in its log.
WATCHDOG_LOGGER = "watchdog.observers"


class _LostEvents(logging.Handler):
    """Turns watchdog's report of lost events into a whole refresh of every project."""

    def __init__(self, watcher: VaultWatcher) -> None:
        super().__init__(level=logging.WARNING)
        self.watcher = watcher

    def emit(self, record: logging.LogRecord) -> None:
        if "overflow" in str(record.msg).lower():
            self.watcher.events_lost()


class VaultWatcher:
    """Watches ``<vault>/projects`` and recompiles once per burst of record changes.

    ``on_change`` (the builder, e.g. the site server) is called after each recompile with the
    :class:`WatchBatch`, from the watcher's own thread. Errors are reported and the loop goes on.
    """

    def __init__(
        self,
        vault_root: Path,
        *,
        on_change: Callable[[WatchBatch], None] | None = None,
        quiet: float = DEFAULT_QUIET_SECONDS,
        max_delay: float = DEFAULT_MAX_DELAY_SECONDS,
        catch_up: bool = True,
    ) -> None:
        self.vault_root = Path(vault_root).absolute()
        self.projects_dir = self.vault_root / "projects"
        self.on_change = on_change
        self.catch_up = catch_up
        self.recompiles = 0
        self._debouncer = Debouncer(quiet=quiet, max_delay=max_delay)
        self._pending: Changes = {}
        self._cond = threading.Condition()
        self._stopping = False
        self._thread: threading.Thread | None = None
        self._observer: Any = None
        self._ready = threading.Event()
        self._compiling = False
        self._probes_seen: set[str] = set()
        self._lost_events: _LostEvents | None = None

    # --- events (observer thread) ------------------------------------------------------------
    def dispatch(self, event: FileEvent) -> None:
        """Take one event; relevant ones start or extend the current burst."""
        name = Path(event.src_path).name
        if name.startswith(PROBE_PREFIX):
            if event.event_type != "deleted":  # its removal is no news
                with self._cond:
                    self._probes_seen.add(name)
                    self._cond.notify_all()
            return
        changes = records_changed(self.projects_dir, [event])
        if not changes:
            return
        with self._cond:
            merge_changes(self._pending, changes)
            self._debouncer.note(time.monotonic())
            self._cond.notify_all()

    # --- lifecycle ---------------------------------------------------------------------------
    def start(self) -> VaultWatcher:
        from watchdog.events import FileSystemEventHandler
        from watchdog.observers import Observer

        watcher = self

        class _Handler(FileSystemEventHandler):
            def on_any_event(self, event: Any) -> None:
                watcher.dispatch(FileEvent.from_watchdog(event))

        self.projects_dir.mkdir(parents=True, exist_ok=True)
        self._lost_events = _LostEvents(self)
        logging.getLogger(WATCHDOG_LOGGER).addHandler(self._lost_events)
        self._observer = Observer()
        self._observer.schedule(_Handler(), str(self.projects_dir), recursive=True)
        self._observer.start()
        self._thread = threading.Thread(target=self._run, name="memosite-watch", daemon=True)
        self._thread.start()
        return self

    def wait_ready(self, timeout: float | None = None) -> bool:
        """True once the catch-up recompile is done and the watcher sees every change made from
        now on (False: not within ``timeout`` seconds)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        return self._ready.wait(timeout) and self._probe(deadline, idle=False)

    def wait_settled(self, timeout: float | None = None) -> bool:
        """True once every change made before the call has been handled: its events seen, its
        burst compiled and reported (False: not within ``timeout`` seconds)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        return self._probe(deadline, idle=True)

    def _probe(self, deadline: float | None, *, idle: bool) -> bool:
        if self._observer is None:
            return False  # not started: it sees nothing
        name = f"{PROBE_PREFIX}{secrets.token_hex(6)}"
        probe = self.projects_dir / name
        try:
            with self._cond:
                while True:
                    seen = name in self._probes_seen
                    if seen and not (idle and (self._pending or self._compiling)):
                        self._probes_seen.discard(name)
                        return True
                    left = None if deadline is None else deadline - time.monotonic()
                    if left is not None and left <= 0:
                        return False
                    if not seen:
                        probe.touch()  # again: the first touch may have come before the watch
                    self._cond.wait(PROBE_EVERY_SECONDS if left is None else min(left, PROBE_EVERY_SECONDS))
        finally:
            probe.unlink(missing_ok=True)

    def stop(self) -> None:
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        if self._observer is not None:
            self._observer.stop()
            self._observer.join(timeout=5)
        if self._thread is not None:
            self._thread.join(timeout=30)
        if self._lost_events is not None:
            logging.getLogger(WATCHDOG_LOGGER).removeHandler(self._lost_events)

    def __enter__(self) -> VaultWatcher:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- the loop (watcher thread) -----------------------------------------------------------
    def events_lost(self) -> None:
        """The file system dropped events (inotify's queue overflowed): which files changed is no
        longer known, so the next burst refreshes every project whole."""
        with self._cond:
            for project in self._projects_on_disk():
                self._pending[project] = WHOLE_PROJECT
            self._debouncer.note(time.monotonic())
            self._cond.notify_all()

    def _projects_on_disk(self) -> list[str]:
        try:
            names = [entry.name for entry in self.projects_dir.iterdir() if entry.is_dir()]
        except OSError:
            return []
        return [name for name in names if _directory_project(self.projects_dir, str(self.projects_dir / name))]

    def _next_burst(self) -> Changes | None:
        with self._cond:
            while not self._stopping:
                now = time.monotonic()
                if self._debouncer.due(now):
                    projects, self._pending = self._pending, {}
                    self._debouncer.reset()
                    self._compiling = True
                    return projects
                self._cond.wait(self._debouncer.wait_time(now) if self._debouncer.pending else None)
            return None

    def _run(self) -> None:
        # The vault (and its SQLite connection) belongs to this thread alone.
        vault = Vault.open(self.vault_root, create=False)
        try:
            if self.catch_up:
                self._recompile(vault, vault.projects(), quiet_unless_touched=True)
            self._ready.set()
            while (changes := self._next_burst()) is not None:
                self._recompile(vault, changes, paths=changes)
                with self._cond:
                    self._compiling = False
                    self._cond.notify_all()
        finally:
            self._ready.set()
            vault.close()

    def _recompile(
        self,
        vault: Vault,
        projects: Iterable[str],
        *,
        paths: Mapping[str, set[str] | None] | None = None,
        quiet_unless_touched: bool = False,
    ) -> None:
        projects = list(projects)
        if not projects:
            return
        try:
            batch = recompile_projects(vault, projects, paths)
        except (MemositeError, OSError) as exc:
            warn(f"watch: recompiling {', '.join(sorted(projects))} failed: {exc}")
            return
        except Exception as exc:
            warn(f"watch: unexpected {type(exc).__name__}: {exc}")
            return
        self.recompiles += 1
        if self.on_change is None or (quiet_unless_touched and not batch.touched):
            return
        try:
            self.on_change(batch)
        except Exception as exc:
            warn(f"watch: rebuilding after the change failed: {exc}")
