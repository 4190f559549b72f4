"""Retention, as vtcode's: of the ended sessions, those beyond the newest N go, and so do those
older than D days.

Only direct child directories of the sessions root that validate as sessions are candidates. An
active session, a session another process holds open, a symlink and anything that is not a
session are never removed, and the path removed is always ``<root>/<entry name>`` as listed —
never a path read from a manifest.

Status follows vtcode: only the event that ends a session (``thread.completed``) makes it
removable, whatever it holds. A session that never started a turn is an ordinary closed session
once it has ended, and one that crashed before ending stays active, so it is kept. A session
vtcode's ``migrate_legacy`` imported (a manifest, ``derived/`` and no log) has the status its
manifest gives it, as vtcode's retention reads it. A directory with neither a manifest nor a log
that starts a session is not a session and is never touched.
"""

from __future__ import annotations

import os
import shutil
import stat
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout

from memosite.errors import MemositeError, StorageError
from memosite.schema import parse_datetime, utc_now
from memosite.sessions import safefs
from memosite.sessions.catalog import SessionEntry, iter_sessions, validate_session_dir
from memosite.sessions.log import EventLog
from memosite.sessions.paths import SessionPaths, sessions_root
from memosite.sessions.session import session_lock_path
from memosite.text import counted
from memosite.vault import TEMP_PREFIX, Vault


@dataclass(frozen=True)
class RetentionDecision:
    session_id: str
    remove: bool
    reason: str
    last_activity: str

    def to_json(self) -> dict[str, Any]:
        return {
            "sessionId": self.session_id,
            "action": "remove" if self.remove else "keep",
            "reason": self.reason,
            "lastActivity": self.last_activity,
        }


@dataclass
class RetentionResult:
    dry_run: bool
    keep: int
    max_age_days: float
    decisions: list[RetentionDecision] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    skipped: list[RetentionDecision] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "dryRun": self.dry_run,
            "keep": self.keep,
            "maxAgeDays": self.max_age_days,
            "removed": self.removed,
            "decisions": [decision.to_json() for decision in self.decisions],
            "skipped": [decision.to_json() for decision in self.skipped],
        }


def _age_days(entry: SessionEntry, now: datetime) -> float | None:
    try:
        return (now - parse_datetime(entry.last_activity)).total_seconds() / 86400.0
    except ValueError:
        return None


def plan_retention(
    entries: list[SessionEntry], *, keep: int, max_age_days: float, now: datetime
) -> list[RetentionDecision]:
    """Newest first; an ended session goes if it is beyond the newest ``keep`` ended sessions or
    older than ``max_age_days`` (either, as in vtcode's ``apply_retention``). Active sessions stay
    and do not count towards ``keep``; a session whose time cannot be read is never too old."""
    ranked = sorted(entries, key=lambda e: (e.last_activity, e.session_id), reverse=True)
    decisions = []
    closed = 0
    for entry in ranked:
        if entry.active:
            decisions.append(RetentionDecision(entry.session_id, False, "active", entry.last_activity))
            continue
        closed += 1
        age = _age_days(entry, now)
        if closed > keep:
            remove, reason = True, f"beyond the newest {counted(keep, 'ended session')}"
        elif age is not None and age > max_age_days:
            remove, reason = True, f"older than {max_age_days:g} days"
        elif age is None:
            remove, reason = False, f"among the newest {keep}; no readable activity time"
        else:
            remove, reason = False, f"among the newest {keep} and not older than {max_age_days:g} days"
        decisions.append(RetentionDecision(entry.session_id, remove, reason, entry.last_activity))
    return decisions


def _confirm_removable(root: Path, project: str, name: str, *, named_root: bool) -> str | None:
    """Re-check a removal candidate from its log, not just its manifest; None means go ahead."""
    if validate_session_dir(root, name, project, named_root=named_root) is None:
        return "no longer a session directory"
    try:
        log = EventLog.open(SessionPaths(root, name), project, writable=False)
    except MemositeError as exc:
        return f"cannot be read ({exc.message})"
    if log.meta.status == "active":
        return "active according to its log"
    return None


def _remove_session_dir(root: Path, name: str) -> None:
    path = root / name
    info = safefs.refuse_symlink(path)
    if info is None or not stat.S_ISDIR(info.st_mode):
        raise StorageError(f"{path} is not a session directory")
    if not shutil.rmtree.avoids_symlink_attacks:
        raise StorageError("this platform cannot remove directories without following symlinks")
    # Rename first so a crash half-way leaves a temp-prefixed directory, never a broken session.
    retired = root / f"{TEMP_PREFIX}retired-{name}"
    try:
        os.rename(path, retired)
        shutil.rmtree(retired)
    except OSError as exc:
        raise StorageError(f"cannot remove session {name}: {exc.strerror or exc}") from exc
    safefs.fsync_dir(root)


def apply_retention(
    vault: Vault, project: str, *, dry_run: bool = False, now: datetime | None = None, root: Path | None = None
) -> RetentionResult:
    """Plan with the vault's ``sessions.keep`` / ``sessions.maxAgeDays`` and remove (unless dry run)."""
    keep, max_age = vault.config.sessions_keep, vault.config.sessions_max_age_days
    result = RetentionResult(dry_run=dry_run, keep=keep, max_age_days=max_age)
    base, named = root or sessions_root(vault, project), root is not None
    with vault.lock():
        entries = list(iter_sessions(base, project, named_root=named))
        result.decisions = plan_retention(entries, keep=keep, max_age_days=max_age, now=now or utc_now())
        for position, decision in enumerate(result.decisions):
            if not decision.remove:
                continue
            problem = _confirm_removable(base, project, decision.session_id, named_root=named)
            lock: FileLock | None = None
            if problem is None:
                lock_path = session_lock_path(vault, project, decision.session_id, root)
                lock_path.parent.mkdir(parents=True, exist_ok=True)
                lock = FileLock(str(lock_path), timeout=0)
                try:
                    lock.acquire()
                except Timeout:
                    lock, problem = None, "open in another process"
            if problem is not None or lock is None:
                # The re-check has the last word: the session's one decision becomes "keep".
                kept = RetentionDecision(decision.session_id, False, problem or "locked", decision.last_activity)
                result.decisions[position] = kept
                result.skipped.append(kept)
                continue
            try:
                if not dry_run:
                    _remove_session_dir(base, decision.session_id)
                result.removed.append(decision.session_id)
            finally:
                lock.release()
    return result
