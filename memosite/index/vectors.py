"""The records' vectors in the index (table ``vectors``, see :mod:`memosite.index.schema`).

Indexing writes a record's vector beside its row (:func:`store`); a trigger drops it when the
record's text changes. Search reads every vector of one model as a matrix (:func:`matrix`), kept
by the process between searches: each vector carries a write counter (``seq``), so after other
writes only the newer vectors are read again, and a deletion (fewer vectors than held) reads them
all. It asks which records still lack a vector with :func:`missing`.
"""

from __future__ import annotations

import json
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memosite.index.database import Index


@dataclass(frozen=True)
class VectorText:
    """A record whose vector is missing, with the text to compute it from."""

    rowid: int
    title: str
    body: str
    tags: list[str]


# A vector's ``seq`` is never given twice: the last one given is kept in ``meta``. ``max(seq) + 1``
# gave a record's new vector the very ``seq`` of its old one when that was the newest (the trigger
# deletes the old row first): a process holding the vectors saw the same count and the same newest
# ``seq``, and kept the old vector. (It also read the whole ``(model, seq)`` index: no model named.)
_SEQ_KEY = "vectors_seq"
_LAST_SEQ = (
    f"SELECT coalesce((SELECT CAST(value AS INTEGER) FROM meta WHERE key = '{_SEQ_KEY}'),"
    " (SELECT max(seq) FROM vectors), 0)"
)


def _take_seqs(index: Index, count: int) -> int:
    """The first of ``count`` new ``seq`` values, never given before (inside the caller's transaction)."""
    first = int(index.conn.execute(_LAST_SEQ).fetchone()[0]) + 1
    index.conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (_SEQ_KEY, str(first + count - 1)))
    return first


def store(index: Index, path: str, model: str, blob: bytes) -> None:
    """Save the vector of the record at ``path`` (inside the caller's transaction)."""
    index.conn.execute(
        "INSERT OR REPLACE INTO vectors (rowid, model, vec, seq) SELECT rowid, ?, ?, ? FROM records WHERE path = ?",
        (model, blob, _take_seqs(index, 1), path),
    )


def store_rows(index: Index, model: str, rows: Sequence[tuple[VectorText, bytes]]) -> int:
    """Save each vector for the record it was computed from, if that record still holds the very
    text (read by :func:`missing`) it was computed from; how many were saved. Another process may
    have rewritten one since (no lock is held between reading and storing): its vector, of the
    old text, would pass for the new one's, kept by every later rewrite of that text."""
    with index.transaction():
        first = _take_seqs(index, len(rows))
        return index.conn.executemany(
            "INSERT OR REPLACE INTO vectors (rowid, model, vec, seq) SELECT rowid, ?, ?, ? FROM records"
            " WHERE rowid = ? AND title = ? AND body = ? AND tags = ?",
            [
                (model, blob, first + n, text.rowid, text.title, text.body, " ".join(text.tags))
                for n, (text, blob) in enumerate(rows)
            ],
        ).rowcount


_TEXT_COLUMNS = ("path", "project", "kind", "title", "body", "tags")


def standing(index: Index, model: str, texts: Sequence[tuple[str, str, str, str, str, str]]) -> set[str]:
    """Which of the records ``texts`` describes — (path, project, kind, title, body, joined tags), as
    about to be indexed — already hold a vector of ``model`` computed from that very text, in a row
    the write keeps: a rewrite that leaves the text alone (a hit, feedback, a status) keeps its vector
    and its ``seq``, so no process holding the vectors reads it again."""
    if not texts:
        return set()
    # One JSON parameter, and each record looked up by its path (CROSS JOIN keeps that order: left
    # to itself the planner walks every vector of the model).
    same = " AND ".join(f"r.{column} = json_extract(t.value, '$[{n}]')" for n, column in enumerate(_TEXT_COLUMNS))
    sql = f"SELECT r.path FROM json_each(?) AS t CROSS JOIN records AS r ON {same}"
    sql += " CROSS JOIN vectors AS v ON v.rowid = r.rowid"
    sql += " WHERE v.model = ?"
    return {str(row[0]) for row in index.conn.execute(sql, (json.dumps([list(text) for text in texts]), model))}


def missing(index: Index, model: str) -> list[VectorText]:
    """The records without a vector of ``model`` (none after indexing with the model installed)."""
    import json

    return [
        VectorText(int(row[0]), row[1], row[2], json.loads(row[3]))
        for row in index.conn.execute(
            "SELECT r.rowid, r.title, r.body, r.tags_json FROM records AS r "
            "WHERE NOT EXISTS (SELECT 1 FROM vectors AS v WHERE v.rowid = r.rowid AND v.model = ?)",
            (model,),
        )
    ]


def any_stored(index: Index) -> bool:
    """Whether the index holds any vector at all (of any model)."""
    return bool(index.conn.execute("SELECT EXISTS (SELECT 1 FROM vectors)").fetchone()[0])


def drop_other_models(index: Index, model: str) -> None:
    """Forget the vectors an earlier model (or an earlier way of embedding) made."""
    with index.transaction():
        index.conn.execute("DELETE FROM vectors WHERE model != ?", (model,))


def count(index: Index, model: str) -> int:
    """How many vectors of ``model`` the index holds (remembered until the index changes)."""
    return held_state(index, model)[0]


def held_state(index: Index, model: str) -> tuple[int, int]:
    """How many vectors of ``model`` the index holds and the newest ``seq`` among them, remembered
    until the index changes: a search after a write asks both (:func:`count`, :func:`matrix`) once.
    Each is its own statement: ``max(seq)`` alone is one probe of the ``(model, seq)`` index (beside a
    count it is a scan too), and when every vector is of ``model`` — min and max of ``model`` are it,
    two probes — counting them all skips comparing each one's model (1.7 ms to 0.5 at 50,000)."""

    def read() -> tuple[int, int]:
        conn = index.conn
        total = int(conn.execute("SELECT count(*) FROM vectors").fetchone()[0])
        lowest = conn.execute("SELECT min(model) FROM vectors").fetchone()[0]
        highest = conn.execute("SELECT max(model) FROM vectors").fetchone()[0]
        if total and not lowest == highest == model:
            total = int(conn.execute("SELECT count(*) FROM vectors WHERE model = ?", (model,)).fetchone()[0])
        newest = conn.execute("SELECT coalesce(max(seq), 0) FROM vectors WHERE model = ?", (model,)).fetchone()[0]
        return total, int(newest)

    state: tuple[int, int] = index.remembered(("vector state", model), read)
    return state


def blob_of(index: Index, path: str) -> bytes | None:
    """The stored vector of the record at ``path``, if any."""
    row = index.conn.execute(
        "SELECT v.vec FROM vectors AS v JOIN records AS r ON r.rowid = v.rowid WHERE r.path = ?", (path,)
    ).fetchone()
    return bytes(row[0]) if row is not None else None


@dataclass
class _KindRows:
    """The held vectors of some kinds' records only, as of the held ``seq`` they were brought to."""

    seq: int
    rowids: list[int]
    buffer: Any  # room for more rows: a write adds one at a time
    position: dict[int, int]

    @property
    def rows(self) -> Any:
        return self.buffer[: len(self.rowids)]


@dataclass
class _Held:
    """The vectors of one model this process holds: rowids, their rows, the newest ``seq`` read."""

    rowids: list[int] = field(default_factory=list)
    rows: Any = None  # the first len(rowids) rows of ``buffer``
    seq: int = 0
    position: dict[int, int] = field(default_factory=dict)
    buffer: Any = None
    stamp: tuple[int, int] = (-1, -1)  # the index's state when last checked (no write since: nothing to read)
    # kinds -> the vectors of those kinds' records only (dropped with the rest when all are read again)
    of_kinds: dict[tuple[str, ...], _KindRows] = field(default_factory=dict)


_HELD: weakref.WeakKeyDictionary[Index, dict[str, _Held]] = weakref.WeakKeyDictionary()


def matrix(index: Index, model: str, decode: Callable[[Sequence[bytes]], Any]) -> tuple[list[int], Any, dict[int, int]]:
    """Every vector of ``model``: the rowids, ``decode(blobs)`` (a matrix, one row each) and each
    rowid's row. Kept between calls; after writes only the vectors written since are read (see the
    module docstring). The caller must not change what it gets."""
    import numpy as np

    held = _HELD.setdefault(index, {}).get(model)
    stamp = (index.follow_other_connections(), index.changes())
    if held is not None and held.stamp == stamp:
        return held.rowids, held.rows, held.position
    count, newest = held_state(index, model)
    if held is not None and held.seq == newest and len(held.rowids) == count:
        held.stamp = stamp
        return held.rowids, held.rows, held.position
    if held is not None and newest >= held.seq and count >= len(held.rowids):
        fresh = index.conn.execute(
            "SELECT rowid, vec, seq FROM vectors WHERE model = ? AND seq > ? ORDER BY seq", (model, held.seq)
        ).fetchall()
        decoded: Any = decode([bytes(row[1]) for row in fresh]) if fresh else None
        added: list[int] = []
        for n, row in enumerate(fresh):
            at = held.position.get(int(row[0]))
            if at is None:
                added.append(n)
            else:
                held.rows[at] = decoded[n]
        if added:
            size = len(held.rowids)
            if size + len(added) > len(held.buffer):  # room for many more: a write adds one at a time
                grown = np.zeros((2 * (size + len(added)), held.buffer.shape[1]), dtype=held.buffer.dtype)
                grown[:size] = held.buffer[:size]
                held.buffer = grown
            held.buffer[size : size + len(added)] = decoded[added]
            for n in added:
                held.position[int(fresh[n][0])] = len(held.rowids)
                held.rowids.append(int(fresh[n][0]))
            held.rows = held.buffer[: len(held.rowids)]
        held.seq = int(newest)
        if len(held.rowids) == count:
            held.stamp = stamp
            return held.rowids, held.rows, held.position
    # First use, or vectors were deleted or rebuilt: read them all.
    rows = index.conn.execute("SELECT rowid, vec FROM vectors WHERE model = ? ORDER BY rowid", (model,)).fetchall()
    rowids = [int(row[0]) for row in rows]
    decoded_all = decode([bytes(row[1]) for row in rows])
    held = _Held(rowids, decoded_all, int(newest), {r: n for n, r in enumerate(rowids)}, decoded_all)
    held.stamp = stamp
    _HELD[index][model] = held
    return held.rowids, held.rows, held.position


def matrix_of_kinds(
    index: Index, model: str, decode: Callable[[Sequence[bytes]], Any], kinds: Sequence[str]
) -> tuple[list[int], Any, dict[int, int]]:
    """:func:`matrix` of the records of ``kinds`` only (a brief's traps or decisions: a fraction of a vault's
    vectors to compare a task with, not all of them). Taken from the held matrix once, then brought
    in step as it is: the vectors written since (their ``seq`` is newer) are copied in or added, so
    a write costs the next brief what it wrote, not the vault. A record's kind is its folder, so it
    never changes while its vector stands. The caller must not change what it gets."""
    import numpy as np

    _rowids, rows, _position = matrix(index, model, decode)
    held = _HELD[index][model]
    key = tuple(sorted(set(kinds)))
    marks = ", ".join("?" for _ in key)
    kept = held.of_kinds.get(key)
    if kept is None:
        wanted = {int(row[0]) for row in index.conn.execute(f"SELECT rowid FROM records WHERE kind IN ({marks})", key)}
        chosen = [rowid for rowid in held.rowids if rowid in wanted]
        at = np.fromiter((held.position[rowid] for rowid in chosen), dtype=np.intp, count=len(chosen))
        kept = _KindRows(held.seq, chosen, rows[at], {rowid: n for n, rowid in enumerate(chosen)})
        held.of_kinds[key] = kept
    elif kept.seq != held.seq:
        fresh = [
            int(row[0])
            for row in index.conn.execute(
                f"SELECT v.rowid FROM vectors AS v JOIN records AS r ON r.rowid = v.rowid"
                f" WHERE v.model = ? AND v.seq > ? AND v.seq <= ? AND r.kind IN ({marks})",
                (model, kept.seq, held.seq, *key),  # what the held matrix holds, whatever was written since
            )
        ]
        for rowid in fresh:
            source = rows[held.position[rowid]]
            at_kept = kept.position.get(rowid)
            if at_kept is not None:
                kept.buffer[at_kept] = source
                continue
            size = len(kept.rowids)
            if size == len(kept.buffer):
                grown = np.zeros((2 * size + 16, kept.buffer.shape[1]), dtype=kept.buffer.dtype)
                grown[:size] = kept.buffer
                kept.buffer = grown
            kept.buffer[size] = source
            kept.position[rowid] = size
            kept.rowids.append(rowid)
        kept.seq = held.seq
    return kept.rowids, kept.rows, kept.position
