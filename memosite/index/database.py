"""The connection to ``index.sqlite`` and the record rows: write, delete, look up, count.

The index is a disposable cache of what the Markdown files say. :class:`Index` opens it (WAL, a
busy timeout, a new file when the old one is damaged or from another version) and keeps one row
per record file in step with the files; the view fragments, the queries of each feature and the
full-text search live beside it in this package, the only place that speaks SQL.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from memosite.errors import StorageError
from memosite.index import fragments, partitions, termcounts, vectors
from memosite.index.entry import COLUMNS, ENTRY_SELECT, IndexEntry
from memosite.index.schema import ensure_schema
from memosite.reviewstate import pending_sql
from memosite.warning import warn


class Index:
    """A connection to ``index.sqlite`` (WAL, busy timeout). Cheap to open; safe across processes."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            self.fresh = self._connect()
        except sqlite3.DatabaseError as exc:
            if isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc):
                raise StorageError(f"cannot open index {path.name}: {exc}") from exc
            # Not a database, or damaged: the index is a cache of the Markdown, so start a new one.
            warn(f"index {path.name} is damaged ({exc}); rebuilding it from the records")
            with contextlib.suppress(Exception):
                self.conn.close()
            for suffix in ("", "-wal", "-shm"):
                with contextlib.suppress(FileNotFoundError):
                    Path(f"{path}{suffix}").unlink()
            try:
                self.fresh = self._connect()
            except sqlite3.Error as again:
                raise StorageError(f"cannot open index {path.name}: {again}") from again
        except OSError as exc:
            raise StorageError(f"cannot open index {path.name}: {exc}") from exc
        # project → its directories' stamps as this process last wrote or read them in ``meta``.
        self._directories_seen: dict[str, str] = {}
        # Answers remembered until the index changes (see ``remembered``).
        self._answers: dict[Any, Any] = {}
        # Compiled view sections of this process, by (project, kind, …): a change of the kind's
        # fragments drops them (memosite.index.fragments), so a write compiles only its kinds'.
        self.view_memo: dict[tuple[Any, ...], Any] = {}
        # (project, FTS5 expression) -> how many traps and decisions hold it (memosite.index.termcounts).
        self.term_counts: dict[tuple[str, str], int] = {}
        self.term_writes = 0
        self._answers_stamp: tuple[int, int] | None = None
        # Rows written to this connection's temp tables (see ``scratch_writes``): not index changes.
        self._scratch_changes = 0
        self._data_version: int | None = None  # PRAGMA data_version when the memos were last checked
        self._holding = False  # a unit of work holds its writes open (see held_writes)
        self._opened = 0  # transaction() blocks running now
        self._pending = False  # a held transaction holds rows not committed yet
        self._lost = False  # held rows were rolled back

    def _connect(self) -> bool:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.conn = sqlite3.connect(str(self.path), timeout=30.0, isolation_level=None, check_same_thread=True)
        self.conn.row_factory = sqlite3.Row
        self.conn.execute("PRAGMA busy_timeout = 30000")
        self.conn.execute("PRAGMA journal_mode = WAL")
        self.conn.execute("PRAGMA synchronous = NORMAL")
        # No memory map: every read is of a few pages now (bounded views, index scans), and a mapped
        # page faults its neighbours in too, so a write at 50,000 records held 200 MB of the file.
        self.conn.execute("PRAGMA cache_size = -32768")
        # A write touches the same few dozen pages each time (the FTS structure, the facts'
        # indexes, the in-flight notes): checkpointing every 4,000 WAL pages instead of SQLite's
        # 1,000 copies each of them into the database a quarter as often, with a quarter of the
        # fsyncs. The WAL may reach 16 MB while the index is open; the last close removes it.
        self.conn.execute("PRAGMA wal_autocheckpoint = 4000")
        return ensure_schema(self.conn)

    def close(self) -> None:
        self.conn.close()

    # --- transactions ------------------------------------------------------------------------
    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """BEGIN IMMEDIATE ... COMMIT (ROLLBACK on error); re-entrant on one connection. While a
        unit of work holds its writes (:meth:`held_writes`) the COMMIT waits for its next in-flight
        note or its end, and a block that joins the rows held so far is a savepoint: it is undone
        alone when it fails."""
        if self.conn.in_transaction:
            if self._held_open:
                with self._savepoint():
                    yield
            else:
                yield
            return
        self._note_lost()
        self.conn.execute("BEGIN IMMEDIATE")
        self._opened += 1
        try:
            yield
            if self._holding:
                self._pending = True
            else:
                self.conn.execute("COMMIT")
        except BaseException:
            # A failed COMMIT too: never leave the connection inside a transaction that later
            # statements would silently join (and never commit).
            self._roll_back()
            raise
        finally:
            self._opened -= 1

    @contextlib.contextmanager
    def _savepoint(self) -> Iterator[None]:
        self.conn.execute("SAVEPOINT memosite_block")
        self._opened += 1
        try:
            yield
        except BaseException:
            try:
                self.conn.execute("ROLLBACK TO memosite_block")
                self.conn.execute("RELEASE memosite_block")
                self.forget_memos()
            except sqlite3.Error:
                self._roll_back()  # SQLite gave up the whole transaction itself
            raise
        finally:
            self._opened -= 1
        self.conn.execute("RELEASE memosite_block")
        self._pending = True

    @contextlib.contextmanager
    def held_writes(self) -> Iterator[None]:
        """Inside a unit of work: what it writes to the index commits with its next in-flight
        note (:meth:`mark_inflight`) or at :meth:`settle`, not block by block — one WAL commit per
        file changed plus one, instead of two per file and one. Nothing is at risk: a note is
        committed before its file changes, and when held rows are lost (a failed commit, a
        transaction SQLite rolled back itself) :attr:`held_lost` says so, the unit keeps its notes
        and the next command reads those files again."""
        if self._holding:
            yield
            return
        self._holding, self._pending, self._lost = True, False, False
        try:
            yield
        finally:
            try:
                self.settle()
            finally:
                self._holding = False

    def settle(self) -> None:
        """Commit the rows a unit of work holds (before its vault commit, which may take a while:
        other connections then see them, and may write, meanwhile)."""
        self._note_lost()
        if not self._held_open:
            return
        self._commit_or_warn("index rows not saved ({}); the next command reads the files again")

    @property
    def _held_open(self) -> bool:
        """A transaction holds the unit's rows and no block of code is inside it: it may commit."""
        return self._holding and self._opened == 0 and self.conn.in_transaction

    @property
    def held_lost(self) -> bool:
        """Rows of the unit of work holding its writes are not all in the index: rolled back (see
        :meth:`held_writes`) or never written (:meth:`row_not_saved`). The unit keeps its notes."""
        return self._lost or (self._pending and not self.conn.in_transaction)

    def row_not_saved(self) -> bool:
        """A row of the unit of work holding its writes failed to save: the unit keeps its
        in-flight notes, so the next command reads the file again. False outside a unit."""
        if self._holding:
            self._lost = True
        return self._holding

    def _note_lost(self) -> None:
        """Rows were held but no transaction is open any more: SQLite rolled it back on its own
        (a full disk, an I/O error) and whatever runs next must not hide that."""
        if self._holding and self._pending and not self.conn.in_transaction:
            self._lost, self._pending = True, False

    @contextlib.contextmanager
    def cache_transaction(self) -> Iterator[None]:
        """One transaction around writes of what the index can always work out again (views'
        cache rows, directory times, in-flight notes cleared): they commit together, one WAL
        commit instead of one each. When the index refuses a transaction, or its commit, the
        statements inside run (or are lost) on their own and the next command redoes them."""
        if self.conn.in_transaction:
            yield
            return
        self._note_lost()
        try:
            self.conn.execute("BEGIN IMMEDIATE")
        except sqlite3.Error:
            yield
            return
        self._opened += 1  # its own transaction: nothing inside commits it early
        try:
            yield
        except BaseException:
            self._roll_back()
            raise
        finally:
            self._opened -= 1
        self._commit_or_warn("index cache rows not saved ({}); the next command works them out again")

    def _commit_or_warn(self, failure: str) -> None:
        """COMMIT; when it fails, roll back and warn with ``failure`` (``{}`` is the cause)."""
        try:
            self.conn.execute("COMMIT")
            self._pending = False
        except sqlite3.Error as exc:
            self._roll_back()
            warn(failure.format(exc))

    def _roll_back(self) -> None:
        if self._holding and self._pending:
            self._lost = True  # rows of a unit of work that earlier blocks left held go too
        self._pending = False
        with contextlib.suppress(sqlite3.Error):
            self.conn.execute("ROLLBACK")
        self.forget_memos()

    # --- writes ------------------------------------------------------------------------------
    def upsert(self, entry: IndexEntry) -> None:
        placeholders = ", ".join("?" for _ in COLUMNS)
        updates = ", ".join(f"{name} = excluded.{name}" for name in COLUMNS if name != "path")
        with self.transaction():
            before = termcounts.holder_at(self, entry.path)
            old = self.conn.execute(
                f"SELECT rowid, project, kind, {fragments.LISTED_RECORD_SELECT} FROM records WHERE path = ?",
                (entry.path,),
            ).fetchone()
            if old is None or tuple(old[1:]) != fragments.listed_record(entry):
                fragments.forget_views(self, entry.project)
                if old is not None:
                    fragments.forget_views(self, old[1])
            if old is not None and (old[1], old[2]) != (entry.project, entry.kind):
                self.conn.execute("DELETE FROM records WHERE rowid = ?", (old[0],))
                old = None
            # A new row's rowid lies in its project's and kind's range (memosite.index.partitions).
            rowid = old[0] if old is not None else partitions.new_rowid(self, entry.project, entry.kind)
            self.conn.execute(
                f"INSERT INTO records (rowid, {', '.join(COLUMNS)}) VALUES (?, {placeholders}) "
                f"ON CONFLICT(path) DO UPDATE SET {updates}",
                (rowid, *entry.as_params()),
            )
            fragments.replace_fragment(self, entry)
            if entry.vector is not None:
                vectors.store(self, entry.path, *entry.vector)
            termcounts.follow(self, before, termcounts.holder_of(entry))

    def delete_path(self, path: str) -> bool:
        with self.transaction():
            before = termcounts.holder_at(self, path)
            gone = self.conn.execute("SELECT project FROM records WHERE path = ?", (path,)).fetchone()
            if gone is not None:
                fragments.forget_views(self, gone[0])
            fragments.drop_fragment(self, path)
            deleted = self.conn.execute("DELETE FROM records WHERE path = ?", (path,)).rowcount > 0
            termcounts.follow(self, before, None)
            return deleted

    def follow_other_connections(self) -> int:
        """``PRAGMA data_version``. When it moved, another connection committed, and the memos that
        this connection keeps current through its own writes (the directory stamps) no longer can:
        they are dropped."""
        version = int(self.conn.execute("PRAGMA data_version").fetchone()[0])
        if version != self._data_version:
            self._directories_seen.clear()
            self.view_memo.clear()
            self.term_counts.clear()
            self._data_version = version
        return version

    def changes(self) -> int:
        """How many rows this connection has written to the index: ``total_changes`` without the rows
        of :meth:`scratch_writes`. It moves on every write of the index, a rolled-back one too."""
        return int(self.conn.total_changes) - self._scratch_changes

    @contextlib.contextmanager
    def scratch_writes(self) -> Iterator[sqlite3.Connection]:
        """A block that writes only to this connection's temp tables (the few rows a search or a
        brief asks its own FTS5 table about). ``total_changes`` counts those rows too; without this,
        every search would look like a write and drop every remembered answer and the held vectors."""
        before = self.conn.total_changes
        try:
            yield self.conn
        finally:
            self._scratch_changes += self.conn.total_changes - before

    def remembered(self, key: Any, compute: Callable[[], Any], valid: Callable[[Any], bool] | None = None) -> Any:
        """``compute()`` (a read), remembered until the index changes: a write on this connection
        (:meth:`changes` moved, a rolled-back one too) or a commit on any other
        (``PRAGMA data_version`` moved), or until ``valid(answer)`` says it no longer holds (an
        answer that depends on the time). For answers that cost a scan and rarely change."""
        stamp = (self.follow_other_connections(), self.changes())
        if stamp != self._answers_stamp:
            self._answers.clear()
            self._answers_stamp = stamp
        if key not in self._answers or (valid is not None and not valid(self._answers[key])):
            self._answers[key] = compute()
        return self._answers[key]

    def seen_directories(self) -> dict[str, str]:
        """The directory stamps this connection last wrote or read in ``meta``, per project
        (emptied when another connection commits: it may have rebuilt or refreshed the index)."""
        self.follow_other_connections()
        return self._directories_seen

    def forget_memos(self) -> None:
        """Drop what this process remembers of the index (a rollback took back what it names)."""
        self._answers.clear()
        self._directories_seen.clear()
        self.view_memo.clear()
        self.term_counts.clear()

    def clear(self, project: str | None = None) -> None:
        self.forget_memos()
        with self.transaction():
            for table in ("records", "fragments", "fragment_chunks", "view_files"):
                if project is None:
                    self.conn.execute(f"DELETE FROM {table}")
                else:
                    self.conn.execute(f"DELETE FROM {table} WHERE project = ?", (project,))

    def get_meta(self, key: str) -> str | None:
        row = self.conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return str(row[0]) if row is not None and row[0] is not None else None

    def set_meta(self, key: str, value: str) -> None:
        self.conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value))

    def optimize(self) -> None:
        """Merge FTS5 segments (many deletions leave them fragmented and searches slower)."""
        self.conn.execute("INSERT INTO records_fts(records_fts) VALUES ('optimize')")
        self.conn.execute("INSERT INTO records_trigram(records_trigram) VALUES ('optimize')")

    # --- in-flight writes of units of work ---------------------------------------------------
    def mark_inflight(self, unit: str, project: str, path: str) -> None:
        """Note, before a file is written or removed, that ``path`` is being changed by ``unit``.
        The note is committed before it returns, with whatever the unit holds (:meth:`held_writes`)."""
        try:
            self.conn.execute(
                "INSERT OR IGNORE INTO inflight (path, project, unit) VALUES (?, ?, ?)", (path, project, unit)
            )
        finally:
            self._note_lost()
        if self._held_open:
            try:
                self.conn.execute("COMMIT")
            except BaseException:
                self._roll_back()
                raise
            self._pending = False

    def clear_inflight(self, units: Sequence[str]) -> None:
        if units:
            marks = ", ".join("?" for _ in units)
            self.conn.execute(f"DELETE FROM inflight WHERE unit IN ({marks})", list(units))

    def inflight(self) -> list[tuple[str, str, str]]:
        """``(unit, project, path)`` of every change a unit of work has not finished."""
        return [(r["unit"], r["project"], r["path"]) for r in self.conn.execute("SELECT * FROM inflight ORDER BY path")]

    # --- reads -------------------------------------------------------------------------------
    def _tuples(self, sql: str, params: Sequence[Any] = ()) -> sqlite3.Cursor:
        """The rows of ``sql`` as plain tuples: thousands of them cost no ``sqlite3.Row`` each."""
        cursor = self.conn.cursor()
        cursor.row_factory = None
        return cursor.execute(sql, params)

    def _entries(self, where: str, params: Sequence[Any] = ()) -> list[IndexEntry]:
        """The entries of the ``records`` rows that ``where`` (the SQL after ``FROM records``) selects."""
        rows = self._tuples(f"SELECT {ENTRY_SELECT} FROM records{where}", params)
        return [IndexEntry.from_values(values) for values in rows]

    def by_path(self, path: str) -> IndexEntry | None:
        found = self._entries(" WHERE path = ?", (path,))
        return found[0] if found else None

    def by_id(self, record_id: str, project: str | None = None) -> list[IndexEntry]:
        if project is None:
            return self._entries(" WHERE id = ? ORDER BY path", (record_id,))
        return self._entries(" WHERE project = ? AND id = ? ORDER BY path", (project, record_id))

    def entries(
        self,
        project: str | None = None,
        kinds: Sequence[str] | None = None,
        statuses: Sequence[str] | None = None,
    ) -> list[IndexEntry]:
        clauses, params = filters(project, kinds, statuses)
        return self._entries(f"{clauses} ORDER BY project, kind, updated DESC", params)

    def kind_at(self, path: str) -> str | None:
        row = self.conn.execute("SELECT kind FROM records WHERE path = ?", (path,)).fetchone()
        return str(row[0]) if row is not None else None

    def projects(self) -> list[str]:
        return [row[0] for row in self.conn.execute("SELECT DISTINCT project FROM records ORDER BY project")]

    def file_stats(self, project: str) -> dict[str, tuple[int, int]]:
        """``(mtime_ns, size)`` of each record file of ``project`` the index holds."""
        rows = self._tuples("SELECT path, mtime_ns, size FROM records WHERE project = ?", (project,))
        return {path: (mtime_ns, size) for path, mtime_ns, size in rows}

    def file_stamps(self, project: str) -> dict[str, tuple[int, int, str]]:
        """``(mtime_ns, size, kind)`` of each record file of ``project`` the index holds (one query
        for what :meth:`file_stats` says and each file's kind)."""
        rows = self._tuples("SELECT path, mtime_ns, size, kind FROM records WHERE project = ?", (project,))
        return {path: (mtime_ns, size, kind) for path, mtime_ns, size, kind in rows}

    def file_stats_of(self, paths: Sequence[str]) -> dict[str, tuple[int, int, str]]:
        """``(mtime_ns, size, kind)`` of each of ``paths`` the index holds (the others are left out)."""
        found: dict[str, tuple[int, int, str]] = {}
        for start in range(0, len(paths), 500):  # SQLite's limit on bound parameters
            chunk = list(paths[start : start + 500])
            marks = ", ".join("?" * len(chunk))
            for row in self.conn.execute(
                f"SELECT path, mtime_ns, size, kind FROM records WHERE path IN ({marks})", chunk
            ):
                found[row[0]] = (row[1], row[2], row[3])
        return found

    def pending_review(self, project: str) -> list[IndexEntry]:
        """Records waiting for a person's review, newest first."""
        return self._entries(
            f" WHERE project = ? AND {pending_sql()} ORDER BY updated DESC, path",
            (project,),
        )

    def counts_by_kind_and_status(self, project: str) -> dict[str, dict[str, int]]:
        counts: dict[str, dict[str, int]] = {}
        for kind, status, count in self.conn.execute(
            "SELECT kind, status, count(*) FROM records WHERE project = ? GROUP BY kind, status ORDER BY kind, status",
            (project,),
        ):
            counts.setdefault(kind, {})[status] = int(count)
        return counts

    def count_kind(self, project: str, kind: str) -> int:
        row = self.conn.execute("SELECT count(*) FROM records WHERE project = ? AND kind = ?", (project, kind))
        return int(row.fetchone()[0])

    def count(self, project: str | None = None) -> int:
        clauses, params = filters(project, None, None)
        return int(self.conn.execute(f"SELECT count(*) FROM records{clauses}", params).fetchone()[0])


def filters(project: str | None, kinds: Sequence[str] | None, statuses: Sequence[str] | None) -> tuple[str, list[Any]]:
    """A ``WHERE`` clause (with its parameters) for a project, kinds and statuses."""
    clauses: list[str] = []
    params: list[Any] = []
    if project is not None:
        clauses.append("project = ?")
        params.append(project)
    if kinds:
        clauses.append(f"kind IN ({', '.join('?' for _ in kinds)})")
        params.extend(kinds)
    if statuses:
        clauses.append(f"status IN ({', '.join('?' for _ in statuses)})")
        params.extend(statuses)
    return (" WHERE " + " AND ".join(clauses) if clauses else ""), params
