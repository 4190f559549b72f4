"""The records' vectors in the index (table ``vectors``, see :mod:`memosite.index.schema`).

Indexing writes a record's vector beside its row (:func:`store`); a trigger drops it when the
record's text changes. Search reads every vector of one model as a matrix, remembered until the
index changes (:func:`matrix`), and asks which records still lack one (:func:`missing`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
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


def store(index: Index, path: str, model: str, blob: bytes) -> None:
    """Save the vector of the record at ``path`` (inside the caller's transaction)."""
    index.conn.execute(
        "INSERT OR REPLACE INTO vectors (rowid, model, vec) SELECT rowid, ?, ? FROM records WHERE path = ?",
        (model, blob, path),
    )


def store_rows(index: Index, model: str, rows: Sequence[tuple[int, bytes]]) -> None:
    """Save vectors by record rowid."""
    with index.transaction():
        index.conn.executemany(
            "INSERT OR REPLACE INTO vectors (rowid, model, vec) VALUES (?, ?, ?)",
            [(rowid, model, blob) for rowid, blob in rows],
        )


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


def count(index: Index, model: str) -> int:
    return int(index.conn.execute("SELECT count(*) FROM vectors WHERE model = ?", (model,)).fetchone()[0])


def blob_of(index: Index, path: str) -> bytes | None:
    """The stored vector of the record at ``path``, if any."""
    row = index.conn.execute(
        "SELECT v.vec FROM vectors AS v JOIN records AS r ON r.rowid = v.rowid WHERE r.path = ?", (path,)
    ).fetchone()
    return bytes(row[0]) if row is not None else None


def matrix(index: Index, model: str, decode: Callable[[Sequence[bytes]], Any]) -> tuple[list[int], Any]:
    """Every vector of ``model``: the rowids and ``decode(blobs)`` (a matrix, one row each), read once
    and remembered until the index changes."""

    def read() -> tuple[list[int], Any]:
        rows = index.conn.execute("SELECT rowid, vec FROM vectors WHERE model = ? ORDER BY rowid", (model,)).fetchall()
        return [int(row[0]) for row in rows], decode([bytes(row[1]) for row in rows])

    found: tuple[list[int], Any] = index.remembered(("vectors", model), read)
    return found
