"""The unit of work: the one owner of the sequence every change to the vault runs.

``with mutation(vault, "upsert trap:x") as unit:`` takes the vault lock once; inside, each
:meth:`Mutation.write` and :meth:`Mutation.remove` notes the path as in flight in the index, changes
the file atomically and updates its index row. When the block ends the unit rewrites, once per
project, the views of every kind it touched, requests one vault commit with its message, and clears
its in-flight notes. A batch (an import, a gc pass, a backfill) is one unit: one lock, one view
rebuild, one commit. A unit opened inside another on the same vault joins it.

A process killed inside a unit leaves its in-flight notes behind; the next unit of work, as it opens
the index for writing (:func:`recover_interrupted`), re-reads those paths, brings their rows and
views in step with the files and commits what they hold. A read in between finds the files as they
are (``ensure_index`` picks up what changed on disk) and commits nothing. Ctrl-C once a file has changed is held
back until the unit has finished, so a caller is never told "interrupted" about a write that stands.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from memosite import commitpolicy
from memosite.errors import InvalidRecord, LockTimeout, StorageError
from memosite.interrupts import held_after_change, note_change
from memosite.lookup import writable_target
from memosite.recordfile import read_record
from memosite.refresh import (
    build_entry,
    ensure_index,
    index_record,
    rebuild_views,
    remember_directories,
    remove_record_files,
)
from memosite.schema import Record, serialize_record
from memosite.secrets import assert_no_secrets
from memosite.vault import ACCEPTED_SUFFIX, PROPOSED_SUFFIX, Tombstone, Vault, atomic_write_text, is_record_name, warn
from memosite.workspace import check_vault_placement

# Units running in this process (their in-flight notes are not leftovers to recover).
_ACTIVE_UNITS: set[str] = set()


@dataclass
class Mutation:
    """One unit of work on one vault; see the module docstring."""

    vault: Vault
    message: str
    flush: bool = False
    defer_commit: bool = False  # usage (hits): committed with the next change, not on its own
    token: str = field(default_factory=lambda: f"{os.getpid()}-{secrets.token_hex(6)}")
    notes: list[str] = field(default_factory=list)
    touched: dict[str, set[str]] = field(default_factory=dict)
    written: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    _joined: list[str] = field(default_factory=list)  # messages of units that joined this one
    touching: bool = False  # a file is about to change (set before the first write begins)

    @property
    def changed(self) -> bool:
        return bool(self.written or self.removed or self.touched)

    # --- what a unit does ----------------------------------------------------------------------
    def write(self, record: Record, path: Path, *, text: str | None = None) -> None:
        """Write ``record`` to ``path`` atomically and index it (the views follow at the end).

        ``text`` is the file's content when it is not ``serialize_record(record)`` (a hit rewrites
        only the hit fields of the file as it was). A record holding a secret is refused with
        SafetyViolation before anything changes, whichever path brought it here."""
        assert_no_secrets(record.body, record.frontmatter, subject=path.name)
        path = writable_target(self.vault, path)
        relative = self.vault.relative(path)
        project = _project_of(relative)
        index = self.vault.index()
        previous = index.kind_at(relative)
        self._mark(project, relative)
        atomic_write_text(path, serialize_record(record) if text is None else text)
        self.written.append(relative)
        index_record(self.vault, record, path)
        self.touch(project, [record.kind, *([previous] if previous is not None else [])])

    def write_beside(self, path: Path, text: str) -> None:
        """Write a file beside the records that is not one (an agent's proposed change): atomic,
        noted in flight and committed with the unit, but no index row and no view changes."""
        path = writable_target(self.vault, path)
        relative = self.vault.relative(path)
        self._mark(_project_of(relative), relative)
        atomic_write_text(path, text)
        self.written.append(relative)

    def remove(self, tombstones: Sequence[Tombstone]) -> None:
        """Unlink record files, a tombstone recorded for each first (see ``remove_record_files``)."""
        if not tombstones:
            return
        for tombstone in tombstones:
            self._mark(tombstone.project, self.vault.relative(tombstone.path))
        remove_record_files(self.vault, tombstones)
        for tombstone in tombstones:
            self.removed.append(self.vault.relative(tombstone.path))
            self.touch(tombstone.project, [tombstone.kind])
            # What waits beside a record for review (a proposed change, an accepted copy) goes
            # with the record.
            for suffix in (PROPOSED_SUFFIX, ACCEPTED_SUFFIX):
                kept = tombstone.path.with_name(tombstone.path.stem + suffix)
                if kept.is_file():
                    self.discard(kept)

    def write_file(self, relative: str, text: str) -> None:
        """Write a vault file that is no record (the team's ``config.json``) atomically: no index
        row, no view, committed with the unit."""
        path = writable_target(self.vault, self.vault.root / relative)
        self.touching = True
        note_change()
        atomic_write_text(path, text)
        self.written.append(relative)

    def discard(self, path: Path) -> None:
        """Unlink a file beside the records that is not one (a conflict sidecar): no tombstone, no
        index row, but noted in flight and committed with the unit."""
        relative = self.vault.relative(writable_target(self.vault, path))
        self._mark(_project_of(relative), relative)
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        self.removed.append(relative)

    def touch(self, project: str, kinds: Iterable[str]) -> None:
        """Have the views of ``kinds`` in ``project`` rewritten when the unit ends."""
        self.touched.setdefault(project, set()).update(kinds)

    def note(self, line: str) -> None:
        """One more line for the commit message (a batch lists what it did)."""
        self.notes.append(line.replace("\n", " "))

    def retitle(self, message: str) -> None:
        """Say what this unit did once it knows (``upsert trap:<id>``). Inside a unit it joined,
        the message becomes a line of the outer unit's commit instead."""
        if self._joined:
            self._joined[-1] = message
        else:
            self.message = message

    # --- the sequence ------------------------------------------------------------------------
    def _mark(self, project: str, relative: str) -> None:
        self.touching = True
        note_change()
        try:
            self.vault.index().mark_inflight(self.token, project, relative)
        except sqlite3.Error as exc:
            warn(f"could not note the write of {relative} in the index: {exc}")

    def _finish(self, *, failed: bool = False) -> None:
        """Views of the touched kinds once per project, one commit, then the in-flight notes go
        (views and commits never fail a write that stands: they warn). A unit that failed keeps
        its notes, so the next command re-reads what it wrote (a write may have missed its row)."""
        index = self.vault.index()
        # Without a vault commit to wait for, the in-flight notes go in the same index transaction
        # as the views' cache rows and the directories' times: one WAL commit finishes the unit.
        clear_with_views = not failed and not self.vault.config.git_enabled
        try:
            with index.cache_transaction():
                for project, kinds in sorted(self.touched.items()):
                    if self.vault.project_dir(project).is_dir():
                        rebuild_views(self.vault, project, kinds)
                        # Its own writes moved the directories' times: the index knows what they
                        # hold (unless rows it held were lost: then the next command looks again).
                        if not index.held_lost:
                            with contextlib.suppress(sqlite3.Error):
                                remember_directories(self.vault, project)
                if clear_with_views and not index.held_lost:
                    with contextlib.suppress(sqlite3.Error):
                        index.clear_inflight([self.token])
            index.settle()  # the rows are visible, and the index free, while git works
            if index.held_lost:
                warn(f"the index lost rows of '{self.message}'; the next command reads those files again")
            if self.changed and self.defer_commit:
                try:
                    commitpolicy.queue_commit(self.vault, self.commit_message())
                except OSError as exc:
                    warn(f"vault commit skipped: {exc}")
            elif self.changed:
                commitpolicy.request_commit(self.vault, self.commit_message())
            if self.flush:
                try:
                    commitpolicy.flush_pending(self.vault)
                except StorageError as exc:
                    warn(f"vault commit skipped: {exc.message}")
        finally:
            if not failed and not clear_with_views and not index.held_lost:
                with contextlib.suppress(sqlite3.Error):
                    index.clear_inflight([self.token])

    def commit_message(self) -> str:
        if not self.notes:
            return self.message
        return f"{self.message}\n\n" + "\n".join(self.notes)


def _project_of(relative: str) -> str:
    parts = relative.split("/")
    if len(parts) < 3 or parts[0] != "projects":
        raise StorageError(f"refusing to write {relative}: not a record path of a project")
    return parts[1]


@contextlib.contextmanager
def mutation(vault: Vault, message: str, *, flush: bool = False, defer_commit: bool = False) -> Iterator[Mutation]:
    """The unit of work every change runs in (see the module docstring). ``flush`` also commits
    the changes queued while ``vaultGit.atomic`` is off (gc ends a batch this way);
    ``defer_commit`` leaves the change to the next commit (hits are usage, not edits)."""
    current = vault.current_unit
    if current is not None:
        current._joined.append(message)
        try:
            yield current
        finally:
            current.note(current._joined.pop())
        return
    check_vault_placement(vault.root, vault.product_root)
    with vault.lock():
        ensure_index(vault)
        if vault.index().inflight():
            recover_interrupted(vault)
        unit = Mutation(vault, message, flush=flush, defer_commit=defer_commit)
        vault.current_unit = unit
        _ACTIVE_UNITS.add(unit.token)
        try:
            with _interrupts_held(unit), vault.index().held_writes():
                try:
                    yield unit
                except BaseException:
                    unit._finish(failed=True)
                    raise
                unit._finish()
        finally:
            _ACTIVE_UNITS.discard(unit.token)
            vault.current_unit = None


def _interrupts_held(unit: Mutation) -> contextlib.AbstractContextManager[None]:
    """Ctrl-C before anything changed stops the unit; after, it waits until the unit is done."""
    return held_after_change(
        lambda: unit.touching or unit.changed,
        lambda: warn("interrupted: the change was finished first and is complete"),
    )


def recover_interrupted(vault: Vault) -> list[str]:
    """Finish what a killed unit of work left: re-read its in-flight paths, bring their index rows
    and views in step with the files, commit. Returns the paths recovered (none while a live unit
    holds the lock: it finishes its own)."""
    index = vault.index()
    if not any(unit not in _ACTIVE_UNITS for unit, _, _ in index.inflight()):
        return []
    try:
        with vault.lock(timeout=0):
            leftovers = [row for row in index.inflight() if row[0] not in _ACTIVE_UNITS]
            if not leftovers:
                return []
            touched: dict[str, set[str]] = {}
            for _, project, relative in leftovers:
                touched.setdefault(project, set()).update(_resync_path(vault, relative))
            for project, kinds in sorted(touched.items()):
                if vault.project_dir(project).is_dir():
                    rebuild_views(vault, project, kinds)
            paths = sorted({relative for _, _, relative in leftovers})
            commitpolicy.request_commit(vault, "recover interrupted writes\n\n" + "\n".join(paths))
            index.clear_inflight(sorted({unit for unit, _, _ in leftovers}))
            return paths
    except LockTimeout:
        return []


def _resync_path(vault: Vault, relative: str) -> set[str]:
    """Index one path as the file now is (or drop its row); the kinds whose views it affects."""
    index = vault.index()
    if not is_record_name(Path(relative).name):
        return set()  # a file beside the records (a proposal, a sidecar): never an index row
    previous = index.kind_at(relative)
    kinds = {previous} if previous is not None else set()
    path = vault.root / relative
    try:
        if not vault.contains(path):
            raise FileNotFoundError(relative)
        record = read_record(path)
    except (FileNotFoundError, InvalidRecord, StorageError):
        index.delete_path(relative)
        return kinds or {"trap"}
    index.upsert(build_entry(vault, record, path))
    return kinds | {record.kind}
