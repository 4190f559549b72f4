"""View fragments: each record's pre-rendered rows, and the view sections assembled from them.

A record's fragments are rendered once, when it is indexed, into a table clustered in view order,
so a view section is one ordered range scan of UTF-8 bytes. Sections are cached per *chunk* (the
fragments of one kind with the same stale flag, severity and month of ``updated``): a change drops
only the chunks its old and new fragment belong to, and a chunk also goes stale on its own when
one of its records expires (``valid_until``). The text of a cached piece lives in the process's
memory under a token; the ``view_cache`` row says whether it is still current.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from memosite.expiration import expired_sql, not_expired_sql
from memosite.index.entry import FRAGMENT_COLUMNS, IndexEntry
from memosite.statuses import accepted_sql, inactive_sql, known_status_sql

if TYPE_CHECKING:
    from memosite.index.database import Index

# The fragments table's clustering order; views read ranges of it in this order. ``month`` is
# ``updated``'s first seven characters, so it changes nothing in the order but makes a chunk (same
# stale flag, severity and month) one contiguous range of the primary key.
VIEW_ORDER = "stale_last, severity_weight DESC, month DESC, updated DESC, path"
_LIVE = f"status = 'active' AND {not_expired_sql()}"
_NOT_EXPIRED = not_expired_sql()


def chunk_key(stale_last: int, severity_weight: int, month: str) -> str:
    return f"{stale_last}|{severity_weight}|{month}"


# --- writes (inside Index.upsert / delete_path transactions) ---------------------------------


def replace_fragment(index: Index, entry: IndexEntry) -> None:
    drop_fragment(index, entry.path)
    if not entry.row_index:
        return
    params = entry.fragment_params()
    row = dict(zip(FRAGMENT_COLUMNS, params, strict=True))
    conn = index.conn
    _count_chunk(index, entry.project, entry.kind, row["stale_last"], row["severity_weight"], row["month"], +1)
    conn.execute(
        f"INSERT INTO fragments ({', '.join(FRAGMENT_COLUMNS)}) VALUES ({', '.join('?' for _ in FRAGMENT_COLUMNS)})",
        params,
    )


def drop_fragment(index: Index, path: str) -> None:
    conn = index.conn
    old = conn.execute(
        "SELECT project, kind, stale_last, severity_weight, month FROM fragments WHERE path = ?", (path,)
    ).fetchone()
    if old is not None:
        _count_chunk(index, old[0], old[1], old[2], old[3], old[4], -1)
        conn.execute("DELETE FROM fragments WHERE path = ?", (path,))


def _count_chunk(index: Index, project: str, kind: str, stale_last: int, weight: int, month: str, delta: int) -> None:
    """Adjust a chunk's fragment count and drop its cached pieces: its content changed."""
    index.chunk_memo.pop((project, kind), None)
    conn = index.conn
    conn.execute(
        "DELETE FROM view_cache WHERE project = ? AND kind = ? AND chunk = ?",
        (project, kind, chunk_key(stale_last, weight, month)),
    )
    key = (project, kind, stale_last, weight, month)
    conn.execute(
        "INSERT INTO fragment_chunks (project, kind, stale_last, severity_weight, month, rows)"
        " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO UPDATE SET rows = rows + excluded.rows",
        (*key, delta),
    )
    conn.execute(
        "DELETE FROM fragment_chunks WHERE project = ? AND kind = ? AND stale_last = ?"
        " AND severity_weight = ? AND month = ? AND rows <= 0",
        key,
    )


# --- sections --------------------------------------------------------------------------------


def _joined(
    index: Index,
    expression: str,
    project: str,
    kind: str,
    *,
    where: str = "",
    params: Sequence[Any] = (),
    expression_params: Sequence[Any] = (),
) -> tuple[int, bytes]:
    """Count and UTF-8 concatenation of a fragment ``expression`` over matching rows in view order:
    no per-row Python work, and bytes (no decoding of megabytes of text just to encode it again)."""
    clauses = "project = ? AND kind = ?" + (f" AND ({where})" if where else "")
    row = index.conn.execute(
        f"SELECT count(*), CAST(coalesce(group_concat(piece, ''), '') AS BLOB) FROM "
        f"(SELECT {expression} AS piece FROM fragments WHERE {clauses} ORDER BY {VIEW_ORDER})",
        [*expression_params, project, kind, *params],
    ).fetchone()
    return int(row[0]), bytes(row[1])


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
TRAPS_ACTIVE = Section("traps_active", "row_view", _LIVE)
TRAPS_INACTIVE = Section("traps_inactive", as_of_compile("row_line"), f"NOT ({_LIVE})")
DECISIONS_ACCEPTED = Section("decisions_accepted", "row_view", f"{_ACCEPTED} AND {_NOT_EXPIRED}")
DECISIONS_PROPOSED = Section("decisions_proposed", "row_view", f"status = 'paused' AND {_NOT_EXPIRED}")
DECISIONS_EXPIRED = Section("decisions_expired", as_of_compile("row_line"), SHOWS_EXPIRED)
DECISIONS_ARCHIVED = Section(
    "decisions_archived",
    "row_line",
    f"status = 'archived' OR (NOT {known_status_sql()} AND {_NOT_EXPIRED})",
)
LIVE_COUNT = Section("live", "''", _LIVE)
INDEX_ROWS = Section("index_rows", as_of_compile("row_index"))
INVENTORY = Section("inventory", as_of_compile("row_view"))


@dataclass(frozen=True)
class Chunk:
    """One chunk of a kind's fragments, and what ``view_cache`` says of its cached pieces
    (section name → ``(count, token, valid_until)``)."""

    stale_last: int
    weight: int
    month: str
    cached: dict[str, tuple[int, int, str | None]]


def kind_chunks(index: Index, project: str, kind: str) -> list[Chunk]:
    """Every chunk of a kind in view order with its cached pieces' metadata.

    The index remembers the answer between calls: this connection's own changes drop it (a
    fragment added to or removed from a chunk) or update it (a piece cached), and a commit by
    any other connection (``PRAGMA data_version`` moved) drops every remembered kind. So a
    write's view rebuild reads the chunks of the kinds it changed, not of every kind it shows.
    """
    index.follow_other_connections()
    remembered = index.chunk_memo.get((project, kind))
    if remembered is not None:
        return remembered
    chunks: list[Chunk] = []
    for stale_last, weight, month, name, count, token, valid_until in index.conn.execute(
        "SELECT c.stale_last, c.severity_weight, c.month, v.name, v.count, v.token, v.valid_until"
        " FROM fragment_chunks AS c LEFT JOIN view_cache AS v ON v.project = c.project AND v.kind = c.kind"
        " AND v.chunk = c.stale_last || '|' || c.severity_weight || '|' || c.month"
        " WHERE c.project = ? AND c.kind = ? ORDER BY c.stale_last, c.severity_weight DESC, c.month DESC",
        (project, kind),
    ):
        last = chunks[-1] if chunks else None
        if last is None or (last.stale_last, last.weight, last.month) != (stale_last, weight, month):
            last = Chunk(stale_last, weight, month, {})
            chunks.append(last)
        if name is not None:
            last.cached[name] = (int(count), int(token), valid_until)
    index.chunk_memo[project, kind] = chunks
    return chunks


def section(index: Index, spec: Section, project: str, kind: str, now_iso: str) -> tuple[int, list[bytes]]:
    """The rows of ``spec`` for one kind, as its cached chunk pieces in view order, and their count.

    Only the chunks a change touched (or whose records have expired since) are recomputed, so the
    cost of a write stays near constant as a kind grows.
    """
    params = (now_iso,) * spec.now_params
    expression_params = (now_iso,) * spec.expression_now_params
    total = 0
    pieces: list[bytes] = []
    for chunk in kind_chunks(index, project, kind):
        stale_last, weight, month = chunk.stale_last, chunk.weight, chunk.month
        key = (project, kind, chunk_key(stale_last, weight, month), spec.name)
        cached = chunk.cached.get(spec.name)
        current = cached is not None and (cached[2] is None or now_iso < cached[2])
        remembered = index.pieces.get(key)
        if cached is not None and current and remembered is not None and remembered[0] == cached[1]:
            count, text = cached[0], remembered[1]
        else:
            in_chunk = "stale_last = ? AND severity_weight = ? AND month = ?"
            chunk_params = (stale_last, weight, month)
            count, text = _joined(
                index,
                spec.expression,
                project,
                kind,
                where=f"{in_chunk} AND ({spec.where})" if spec.where else in_chunk,
                params=(*chunk_params, *params),
                expression_params=expression_params,
            )
            if cached is not None and current:
                # A row still present means no fragment of the chunk changed since it was
                # written, so a recomputed piece may keep its token; otherwise mint one.
                token = cached[1]
            else:
                token = secrets.randbits(62)
                valid_until = index.conn.execute(
                    f"SELECT min(expires_at) FROM fragments WHERE project = ? AND kind = ? AND {in_chunk}"
                    " AND expires_at > ?",
                    (project, kind, *chunk_params, now_iso),
                ).fetchone()[0]
                index.conn.execute(
                    "INSERT OR REPLACE INTO view_cache (project, kind, chunk, name, count, token, valid_until)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (*key, count, token, valid_until),
                )
                chunk.cached[spec.name] = (count, token, valid_until)
            index.pieces[key] = (token, text)
        total += count
        pieces.append(text)
    return total, pieces


def kind_counts(index: Index, project: str) -> dict[str, int]:
    """kind → number of records with view fragments (the durable kinds), from the chunk counts."""
    return {
        row[0]: int(row[1])
        for row in index.conn.execute(
            "SELECT kind, sum(rows) FROM fragment_chunks WHERE project = ? GROUP BY kind", (project,)
        )
    }


@dataclass(frozen=True)
class SupersededDecision:
    title: str
    path: str
    successor: str | None
    successor_title: str | None
    successor_path: str | None


def superseded_decisions(index: Index, project: str) -> list[SupersededDecision]:
    """Superseded decisions, newest first, each with its successor's title and path when known."""
    return [
        SupersededDecision(row[0], row[1], row[2], row[3], row[4])
        for row in index.conn.execute(
            "SELECT d.title, d.path, d.superseded_by, s.title, s.path"
            " FROM records d LEFT JOIN records s ON s.project = d.project AND s.id = d.superseded_by"
            " WHERE d.project = ? AND d.kind = 'decision' AND d.status = 'superseded'"
            " ORDER BY d.updated DESC",
            (project,),
        )
    ]
