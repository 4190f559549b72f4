"""The named queries of the published site: the head of a view section (the site shows each long
section's first rows and points to the Memory table for the rest)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from memosite.index.fragments import VIEW_ORDER, Section

if TYPE_CHECKING:
    from memosite.index.database import Index


def section_head(index: Index, spec: Section, project: str, kind: str, now_iso: str, limit: int) -> tuple[int, bytes]:
    """How many rows the section ``spec`` of one kind has, and the first ``limit`` of them in view
    order, concatenated as UTF-8."""
    where = "project = ? AND kind = ?" + (f" AND ({spec.where})" if spec.where else "")
    where_params = [project, kind, *(now_iso,) * spec.now_params]
    count = int(index.conn.execute(f"SELECT count(*) FROM fragments WHERE {where}", where_params).fetchone()[0])
    if not count:
        return 0, b""
    row = index.conn.execute(
        f"SELECT CAST(coalesce(group_concat(piece, ''), '') AS BLOB) FROM "
        f"(SELECT {spec.expression} AS piece FROM fragments WHERE {where} ORDER BY {VIEW_ORDER} LIMIT ?)",
        [*(now_iso,) * spec.expression_now_params, *where_params, limit],
    ).fetchone()
    return count, bytes(row[0])
