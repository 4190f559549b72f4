"""View fragments: each record's pre-rendered rows, and the view sections read from them.

A record's fragments are rendered once, when it is indexed, into a table clustered in view order,
so the head of a view section is one short range scan of UTF-8 bytes and its count a scan of an
index. ``fragment_chunks`` counts the fragments of each kind by stale flag, severity and month of
``updated``, so a kind's size and its months are known without reading its rows. The monthly
inventory files (``INDEX.<kind dir>.<YYYY-MM>.md``) are read one month at a time; ``view_files``
remembers each one written, and a fragment that enters or leaves a month, or changes how the
month lists it, drops that month's row, so a write re-emits only the months it changed. It also
remembers each of the five views last found as a compile writes it, and until when it reads so: a
write of other kinds then knows whether a record of it expired since (``memosite.views``).
"""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from memosite.expiration import expired_sql, not_expired_sql
from memosite.index.entry import FRAGMENT_COLUMNS, IndexEntry
from memosite.kinds import inventory_file
from memosite.statuses import accepted_sql, inactive_sql, known_status_sql

if TYPE_CHECKING:
    from memosite.index.database import Index

# The fragments table's clustering order; views read ranges of it in this order. ``month`` is
# ``updated``'s first seven characters, so it changes nothing in the order but makes a chunk (same
# stale flag, severity and month) one contiguous range of the primary key.
VIEW_ORDER = "stale_last, severity_weight DESC, month DESC, updated DESC, path"
# A monthly inventory file lists its records newest first (the fragments_month index's order).
MONTH_ORDER = "updated DESC, path"
_LIVE = f"status = 'active' AND {not_expired_sql()}"
_NOT_EXPIRED = not_expired_sql()
_EXPIRED = expired_sql()
# Records a rendering leaves out of a section (the site's unpublished ones): few, so bound as one
# JSON array.
_NOT_HIDDEN = "path NOT IN (SELECT value FROM json_each(?))"


# --- writes (inside Index.upsert / delete_path transactions) ---------------------------------


def replace_fragment(index: Index, entry: IndexEntry) -> None:
    """Bring ``entry``'s fragment in step. What a change leaves as it was stays current: a fragment
    re-indexed unchanged (a hit on a record whose rows show no hits) invalidates nothing; one
    whose month still lists it the same keeps the month's inventory file and drops only the
    kind's remembered sections; its chunk count moves only when its chunk does."""
    conn = index.conn
    found = conn.execute(f"SELECT {_COLUMNS} FROM fragments WHERE path = ?", (entry.path,)).fetchone()
    old = dict(zip(FRAGMENT_COLUMNS, found, strict=True)) if found is not None else None
    if not entry.row_index:
        if old is not None:
            _drop(index, old)
        return
    params = entry.fragment_params()
    new = dict(zip(FRAGMENT_COLUMNS, params, strict=True))
    if old is not None and tuple(old[column] for column in FRAGMENT_COLUMNS) == tuple(params):
        return
    if old is None:
        _count_chunk(index, new, +1)
        _forget_month(index, new)
        _forget_sections(index, new)
    else:
        conn.execute("DELETE FROM fragments WHERE path = ?", (entry.path,))
        if _chunk(old) != _chunk(new):
            _count_chunk(index, old, -1)
            _count_chunk(index, new, +1)
        if _listed(old) != _listed(new):
            _forget_month(index, old)
            _forget_month(index, new)
        changed = {column for column in FRAGMENT_COLUMNS if old[column] != new[column]}
        if changed <= ROW_COLUMNS:
            # Same rows, order and counts, another rendering: only what shows those columns.
            _forget_sections(index, new, changed)
        else:
            _forget_sections(index, old)
            _forget_sections(index, new)
    conn.execute(f"INSERT INTO fragments ({_COLUMNS}) VALUES ({', '.join('?' for _ in FRAGMENT_COLUMNS)})", params)


def drop_fragment(index: Index, path: str) -> None:
    found = index.conn.execute(f"SELECT {_COLUMNS} FROM fragments WHERE path = ?", (path,)).fetchone()
    if found is not None:
        _drop(index, dict(zip(FRAGMENT_COLUMNS, found, strict=True)))


_COLUMNS = ", ".join(FRAGMENT_COLUMNS)
# A fragment's renderings: a change of these alone moves no row, no count and no expiry.
ROW_COLUMNS = frozenset({"row_view", "row_index", "row_line"})
# What a monthly inventory file reads of a fragment (``month_rows``): which file (project, kind,
# month), where in it (MONTH_ORDER: updated, path), the row as of the compile instant
# (``as_of_compile``: row_index, status, expires_at) and when it reads differently (expires_at).
_LISTED = ("project", "kind", "month", "updated", "path", "row_index", "status", "expires_at")
# A fragment's chunk in ``fragment_chunks`` (with its project and kind).
_CHUNK = ("project", "kind", "stale_last", "severity_weight", "month", "status")


def _listed(fragment: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(fragment[column] for column in _LISTED)


def _chunk(fragment: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(fragment[column] for column in _CHUNK)


def _drop(index: Index, old: dict[str, Any]) -> None:
    _count_chunk(index, old, -1)
    _forget_month(index, old)
    _forget_sections(index, old)
    index.conn.execute("DELETE FROM fragments WHERE path = ?", (old["path"],))


# What a view reads of the records table besides the fragments (the superseded decisions and
# their successors, ``superseded_decisions``), after the record's project and kind.
_LISTED_RECORD = ("id", "title", "status", "superseded_by", "updated")
LISTED_RECORD_SELECT = ", ".join(_LISTED_RECORD)


def listed_record(entry: IndexEntry) -> tuple[Any, ...]:
    """The values of ``entry`` a view reads from its records row (``LISTED_RECORD_SELECT``), after
    its project and kind."""
    return (entry.project, entry.kind, *(getattr(entry, column) for column in _LISTED_RECORD))


def forget_views(index: Index, project: str) -> None:
    """The views of ``project`` this process wrote are no longer known to be current (a record
    was added, removed or changed what a view reads of it outside the fragments)."""
    for key in [key for key in index.view_memo if key[0] == project and key[2] == "view"]:
        del index.view_memo[key]


def _forget_sections(index: Index, fragment: dict[str, Any], columns: Collection[str] | None = None) -> None:
    """The sections of the fragment's kind this process compiled, and the views it wrote that
    show that kind, are no longer current: all of them, or (``columns``: only those fragment
    columns of the kind's rows changed) those that show one of ``columns``."""
    kind = (fragment["project"], fragment["kind"])
    memo = index.view_memo
    for key in [key for key in memo if key[:2] == kind and (columns is None or not memo[key][3].isdisjoint(columns))]:
        del memo[key]


def _forget_month(index: Index, fragment: dict[str, Any]) -> None:
    """The monthly inventory file that lists the fragment is no longer current."""
    index.conn.execute(
        "DELETE FROM view_files WHERE project = ? AND name = ?",
        (fragment["project"], inventory_file(fragment["kind"], fragment["month"])),
    )


def _count_chunk(index: Index, fragment: dict[str, Any], delta: int) -> None:
    """Adjust the count of the fragment's chunk (stale flag, severity weight, month, status)."""
    key = _chunk(fragment)
    index.conn.execute(
        "INSERT INTO fragment_chunks (project, kind, stale_last, severity_weight, month, status, rows)"
        " VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO UPDATE SET rows = rows + excluded.rows",
        (*key, delta),
    )
    index.conn.execute(
        "DELETE FROM fragment_chunks WHERE project = ? AND kind = ? AND stale_last = ?"
        " AND severity_weight = ? AND month = ? AND status = ? AND rows <= 0",
        key,
    )


# --- sections --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Section:
    """One named view section: which fragment column (or expression) of which rows.

    ``expression`` and ``where`` may hold ``?`` placeholders, each bound to the instant the view
    is compiled at.
    """

    name: str
    expression: str
    where: str = ""

    @property
    def now_params(self) -> int:
        return self.where.count("?")

    @property
    def expression_now_params(self) -> int:
        return self.expression.count("?")


# A record "reads as expired" once its expiry has passed, unless it already reads as archived or
# superseded (which say more). Rows that show a status hold two renderings joined by char(31)
# (see templates/rows.md.j2): the live one, then the expired one.
SHOWS_EXPIRED = f"(NOT {inactive_sql()} AND {expired_sql()})"
_SEPARATOR = "instr({column}, char(31))"


def as_of_compile(column: str) -> str:
    """The rendering of a two-variant fragment ``column`` that is true at the compile instant (a
    fragment from an override without the separator is shown as it is)."""
    at = _SEPARATOR.format(column=column)
    return (
        f"CASE WHEN {at} = 0 THEN {column} WHEN {SHOWS_EXPIRED} THEN substr({column}, {at} + 1)"
        f" ELSE substr({column}, 1, {at} - 1) END"
    )


_ACCEPTED = accepted_sql()
LINE = as_of_compile("row_line")  # the one-line rendering of any record
TRAPS_ACTIVE = Section("traps_active", "row_view", _LIVE)
TRAPS_INACTIVE = Section("traps_inactive", LINE, f"NOT ({_LIVE})")
DECISIONS_ACCEPTED = Section("decisions_accepted", "row_view", f"{_ACCEPTED} AND {_NOT_EXPIRED}")
DECISIONS_PROPOSED = Section("decisions_proposed", "row_view", f"status = 'paused' AND {_NOT_EXPIRED}")
DECISIONS_EXPIRED = Section("decisions_expired", LINE, SHOWS_EXPIRED)
DECISIONS_ARCHIVED = Section(
    "decisions_archived",
    "row_line",
    f"status = 'archived' OR (NOT {known_status_sql()} AND {_NOT_EXPIRED})",
)
LIVE_COUNT = Section("live", "''", _LIVE)
INDEX_ROWS = Section("index_rows", as_of_compile("row_index"))
INVENTORY = Section("inventory", as_of_compile("row_view"))


def _scope(spec: Section, project: str, kind: str, now_iso: str, hidden: Collection[str]) -> tuple[str, list[Any]]:
    where = "project = ? AND kind = ?" + (f" AND ({spec.where})" if spec.where else "")
    params: list[Any] = [project, kind, *(now_iso,) * spec.now_params]
    if hidden:
        # Without hidden records the clause is left out altogether: the vault's views never hide any.
        where += f" AND {_NOT_HIDDEN}"
        params.append(json.dumps(sorted(hidden)))
    return where, params


def section_count(
    index: Index, spec: Section, project: str, kind: str, now_iso: str, hidden: Collection[str] = ()
) -> int:
    """How many rows the section ``spec`` of one kind has (a scan of an index, no row read)."""
    where, params = _scope(spec, project, kind, now_iso, hidden)
    return int(index.conn.execute(f"SELECT count(*) FROM fragments WHERE {where}", params).fetchone()[0])


def severity_counts(
    index: Index, spec: Section, project: str, kind: str, now_iso: str, hidden: Collection[str] = ()
) -> dict[int, int]:
    """The section's rows counted by severity weight (4 critical … 0 unrated)."""
    where, params = _scope(spec, project, kind, now_iso, hidden)
    sql = f"SELECT severity_weight, count(*) FROM fragments WHERE {where} GROUP BY severity_weight"
    return {int(weight): int(count) for weight, count in index.conn.execute(sql, params)}


def section_rows(
    index: Index,
    spec: Section,
    project: str,
    kind: str,
    now_iso: str,
    *,
    limit: int,
    offset: int = 0,
    expression: str | None = None,
    hidden: Collection[str] = (),
    sparse: bool = False,
) -> bytes:
    """Rows ``offset`` to ``offset + limit`` of the section in view order (all from ``offset`` for
    a negative ``limit``), concatenated as UTF-8: the section's own fragment, or ``expression``.

    A ``sparse`` section (few of the kind's rows belong to it: inactive traps, expired decisions)
    is found in ``fragments_live`` and only the rows shown are read; a dense one is read in view
    order, where the first rows are the ones shown."""
    shown = spec.expression if expression is None else expression
    where, params = _scope(spec, project, kind, now_iso, hidden)
    if sparse:
        ordered = ", ".join(f"f.{column}" for column in VIEW_ORDER.split(", "))
        source = (
            f"(SELECT path FROM fragments INDEXED BY fragments_live WHERE {where} ORDER BY {VIEW_ORDER}"
            f" LIMIT ? OFFSET ?) AS k CROSS JOIN fragments AS f ON f.path = k.path"
        )
        row = index.conn.execute(
            f"SELECT CAST(coalesce(group_concat(piece, ''), '') AS BLOB) FROM "
            f"(SELECT {shown} AS piece FROM {source} ORDER BY {ordered})",
            [*(now_iso,) * shown.count("?"), *params, limit, offset],
        ).fetchone()
        return bytes(row[0])
    row = index.conn.execute(
        f"SELECT CAST(coalesce(group_concat(piece, ''), '') AS BLOB) FROM "
        f"(SELECT {shown} AS piece FROM fragments WHERE {where} ORDER BY {VIEW_ORDER} LIMIT ? OFFSET ?)",
        [*(now_iso,) * shown.count("?"), *params, limit, offset],
    ).fetchone()
    return bytes(row[0])


def kind_valid_until(index: Index, project: str, kind: str, now_iso: str) -> str | None:
    """When the first record of ``kind`` expires after ``now_iso`` (its rows then read
    differently): the first expiry of each status the kind's chunks hold, one index seek each."""
    statuses = [
        row[0]
        for row in index.conn.execute(
            "SELECT DISTINCT status FROM fragment_chunks WHERE project = ? AND kind = ?", (project, kind)
        )
    ]
    firsts = [
        index.conn.execute(
            "SELECT min(expires_at) FROM fragments WHERE project = ? AND kind = ? AND status = ? AND expires_at > ?",
            (project, kind, status, now_iso),
        ).fetchone()[0]
        for status in statuses
    ]
    found = [str(first) for first in firsts if first is not None]
    return min(found) if found else None


def live_by_severity(index: Index, project: str, kind: str, now_iso: str) -> dict[int, int]:
    """The rows of ``kind`` that are live at ``now_iso`` (active, not expired: ``LIVE_COUNT``'s
    rows), by severity weight: the active ones from the chunk counts, less those that have
    expired (an index range as long as they are few)."""
    live: dict[int, int] = {}
    for weight, count in index.conn.execute(
        "SELECT severity_weight, sum(rows) FROM fragment_chunks WHERE project = ? AND kind = ? AND status = 'active'"
        " GROUP BY severity_weight",
        (project, kind),
    ):
        live[int(weight)] = int(count)
    for weight, count in index.conn.execute(
        f"SELECT severity_weight, count(*) FROM fragments WHERE project = ? AND kind = ? AND status = 'active'"
        f" AND {_EXPIRED} GROUP BY severity_weight",
        (project, kind, now_iso),
    ):
        live[int(weight)] -= int(count)
    return {weight: count for weight, count in live.items() if count}


def live_count(
    index: Index, project: str, kind: str, statuses: Sequence[str], weights: Sequence[int] | None, now_iso: str
) -> tuple[int, str | None]:
    """How many records of ``kind`` (none waiting for review: they have no fragments) have one of
    ``statuses`` (and one of the severity ``weights``) and have not expired at ``now_iso``, and when
    the first of them expires: from the chunk counts, less those expired (index ranges)."""
    marks = ", ".join("?" for _ in statuses)
    where = f"project = ? AND kind = ? AND status IN ({marks})"
    params: list[Any] = [project, kind, *statuses]
    if weights is not None:
        where += f" AND severity_weight IN ({', '.join('?' for _ in weights)})"
        params += list(weights)
    conn = index.conn
    total = conn.execute(f"SELECT coalesce(sum(rows), 0) FROM fragment_chunks WHERE {where}", params).fetchone()[0]
    expired = conn.execute(f"SELECT count(*) FROM fragments WHERE {where} AND {_EXPIRED}", [*params, now_iso])
    first = conn.execute(f"SELECT min(expires_at) FROM fragments WHERE {where} AND expires_at > ?", [*params, now_iso])
    found = first.fetchone()[0]
    return int(total) - int(expired.fetchone()[0]), str(found) if found is not None else None


def rows_by_severity(index: Index, project: str, kind: str) -> dict[int, int]:
    """The rows of ``kind`` by severity weight, from the chunk counts."""
    return {
        int(weight): int(count)
        for weight, count in index.conn.execute(
            "SELECT severity_weight, sum(rows) FROM fragment_chunks WHERE project = ? AND kind = ?"
            " GROUP BY severity_weight",
            (project, kind),
        )
    }


def kind_counts(index: Index, project: str) -> dict[str, int]:
    """kind → number of records with view fragments (the durable kinds), from the chunk counts."""
    return {
        row[0]: int(row[1])
        for row in index.conn.execute(
            "SELECT kind, sum(rows) FROM fragment_chunks WHERE project = ? GROUP BY kind", (project,)
        )
    }


def month_counts(index: Index, project: str) -> dict[str, dict[str, int]]:
    """kind → month → number of records with view fragments, newest month first."""
    found: dict[str, dict[str, int]] = {}
    for kind, month, count in index.conn.execute(
        "SELECT kind, month, sum(rows) FROM fragment_chunks WHERE project = ? GROUP BY kind, month"
        " ORDER BY kind, month DESC",
        (project,),
    ):
        found.setdefault(str(kind), {})[str(month)] = int(count)
    return found


# --- the monthly inventory files -------------------------------------------------------------


@dataclass(frozen=True)
class MonthRows:
    """The inventory rows of one kind and month, newest first, and when the first of them expires
    after the compile instant (its row then reads differently)."""

    count: int
    rows: bytes
    valid_until: str | None


def month_rows(index: Index, project: str, kind: str, month: str, now_iso: str) -> MonthRows:
    """Every record of ``kind`` updated in ``month`` as its index row (one pass over the month)."""
    expression = as_of_compile("row_index")
    row = index.conn.execute(
        "SELECT count(*), CAST(coalesce(group_concat(piece, ''), '') AS BLOB), min(soon) FROM "
        f"(SELECT {expression} AS piece, CASE WHEN expires_at > ? THEN expires_at END AS soon FROM fragments"
        f" WHERE project = ? AND kind = ? AND month = ? ORDER BY {MONTH_ORDER})",
        [*(now_iso,) * expression.count("?"), now_iso, project, kind, month],
    ).fetchone()
    return MonthRows(int(row[0]), bytes(row[1]), row[2])


@dataclass(frozen=True)
class WrittenFile:
    """What the index remembers of an inventory file it wrote, or a view it found current: when its
    rows read differently (``valid_until``) and the file's last change (see ``memosite.views``) and
    size then."""

    valid_until: str | None
    changed_ns: int
    size: int


def written_files(index: Index, project: str) -> dict[str, WrittenFile]:
    """The inventory files of ``project`` still current as written (name → what was written)."""
    return {
        str(name): WrittenFile(valid_until, int(mtime_ns), int(size))
        for name, valid_until, mtime_ns, size in index.conn.execute(
            "SELECT name, valid_until, mtime_ns, size FROM view_files WHERE project = ?", (project,)
        )
    }


def written_file(index: Index, project: str, name: str) -> WrittenFile | None:
    """What the index remembers of the one file ``name`` of ``project`` (see :func:`written_files`)."""
    row = index.conn.execute(
        "SELECT valid_until, mtime_ns, size FROM view_files WHERE project = ? AND name = ?", (project, name)
    ).fetchone()
    return WrittenFile(row[0], int(row[1]), int(row[2])) if row is not None else None


def remember_file(index: Index, project: str, name: str, written: WrittenFile) -> None:
    index.conn.execute(
        "INSERT OR REPLACE INTO view_files (project, name, valid_until, mtime_ns, size) VALUES (?, ?, ?, ?, ?)",
        (project, name, written.valid_until, written.changed_ns, written.size),
    )


def forget_file(index: Index, project: str, name: str) -> None:
    index.conn.execute("DELETE FROM view_files WHERE project = ? AND name = ?", (project, name))


def forget_files(index: Index) -> None:
    """No inventory file or view of any project is known current any more (the templates changed: a
    file written with the old ones reads differently though no fragment does)."""
    index.conn.execute("DELETE FROM view_files")


# --- superseded decisions --------------------------------------------------------------------


@dataclass(frozen=True)
class SupersededDecision:
    title: str
    path: str
    successor: str | None
    successor_title: str | None
    successor_path: str | None


def superseded_decisions(
    index: Index, project: str, limit: int = -1, hidden: Collection[str] = ()
) -> tuple[int, list[SupersededDecision]]:
    """How many decisions are superseded, and the first ``limit`` of them (all for a negative
    ``limit``), newest first, each with its successor's title and path when known; the record files
    in ``hidden`` are left out of both."""
    scope = "d.project = ? AND d.kind = 'decision' AND d.status = 'superseded'"
    params: list[Any] = [project]
    if hidden:
        scope += " AND d." + _NOT_HIDDEN
        params.append(json.dumps(sorted(hidden)))
    total = int(index.conn.execute(f"SELECT count(*) FROM records AS d WHERE {scope}", params).fetchone()[0])
    rows = [
        SupersededDecision(row[0], row[1], row[2], row[3], row[4])
        for row in index.conn.execute(
            "SELECT d.title, d.path, d.superseded_by, s.title, s.path"
            " FROM records d LEFT JOIN records s ON s.project = d.project AND s.id = d.superseded_by"
            f" WHERE {scope} ORDER BY d.updated DESC, d.path LIMIT ?",
            (*params, limit),
        )
    ]
    return total, rows
