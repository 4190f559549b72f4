"""Record rowids by project and kind: each (project, kind) owns one range of rowids.

A record's rowid is also its row in the word index, which returns matches in rowid order and can
start and stop at given rowids. With each project's traps (or decisions, …) in a range of their
own, "how many traps of this project hold this word" and "the traps of this project matching
these words" read only that range of the word index: the project's other records are never
touched. A record keeps its rowid while it keeps its project and kind (a file in ``plans/`` that
turns from a plan into a state moves to the state range).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memosite.kinds import KINDS

if TYPE_CHECKING:
    from memosite.index.database import Index

# kind -> its number in a project's block of ranges (1 …); unknown kinds share the last one.
KIND_NUMBERS = {kind: number for number, kind in enumerate(KINDS, 1)}
_OTHER_KIND = len(KINDS) + 1
_KINDS_PER_PROJECT = 16  # room for every kind number
_SPAN = 1 << 32  # rowids per (project, kind): far more records than a kind will hold


def kind_range(number: int, kind: str) -> tuple[int, int]:
    """The rowids ``[low, high)`` of ``kind`` in the project numbered ``number``."""
    low = (number * _KINDS_PER_PROJECT + KIND_NUMBERS.get(kind, _OTHER_KIND)) * _SPAN
    return low, low + _SPAN


def project_number(index: Index, project: str) -> int | None:
    """The number of ``project``'s block of ranges; None while it has never had a record."""
    row = index.conn.execute("SELECT number FROM partitions WHERE project = ?", (project,)).fetchone()
    return int(row[0]) if row is not None else None


def project_range(index: Index, project: str, kind: str) -> tuple[int, int] | None:
    """The rowids of ``kind`` in ``project`` (None: the project has no records yet)."""
    number = project_number(index, project)
    return kind_range(number, kind) if number is not None else None


def new_rowid(index: Index, project: str, kind: str) -> int:
    """A free rowid in the range of ``kind`` in ``project`` (the project gets its block on first use)."""
    number = project_number(index, project)
    if number is None:
        index.conn.execute(
            "INSERT INTO partitions (project, number)"
            " VALUES (?, coalesce((SELECT max(number) FROM partitions), 0) + 1)",
            (project,),
        )
        number = project_number(index, project)
        assert number is not None
    low, high = kind_range(number, kind)
    last = index.conn.execute("SELECT max(rowid) FROM records WHERE rowid >= ? AND rowid < ?", (low, high)).fetchone()[
        0
    ]
    return int(last) + 1 if last is not None else low + 1
