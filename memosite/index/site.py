"""The named queries of the published site: the head of a view section (the site shows each long
section's first rows and points to the Memory table for the rest, and leaves out the records it
does not publish) and the freshness verdicts of the published projects, read once per build."""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING

from memosite.index.fragments import VIEW_ORDER, Section
from memosite.index.verdicts import StoredVerdict

if TYPE_CHECKING:
    from memosite.index.database import Index

# Records the site leaves out of a section (pending review): few, so bound as one JSON array.
_NOT_HIDDEN = "path NOT IN (SELECT value FROM json_each(?))"


def section_head(
    index: Index,
    spec: Section,
    project: str,
    kind: str,
    now_iso: str,
    limit: int,
    hidden: Collection[str] = (),
) -> tuple[int, bytes]:
    """How many rows the section ``spec`` of one kind has, and the first ``limit`` of them (all of
    them for a negative ``limit``) in view order, concatenated as UTF-8; the record files in
    ``hidden`` are left out of both."""
    where = "project = ? AND kind = ?" + (f" AND ({spec.where})" if spec.where else "")
    where_params: list[object] = [project, kind, *(now_iso,) * spec.now_params]
    if hidden:
        # Without hidden records the clause is left out altogether: a published build's usual case.
        where += f" AND {_NOT_HIDDEN}"
        where_params.append(json.dumps(sorted(hidden)))
    count = int(index.conn.execute(f"SELECT count(*) FROM fragments WHERE {where}", where_params).fetchone()[0])
    if not count:
        return 0, b""
    row = index.conn.execute(
        f"SELECT CAST(coalesce(group_concat(piece, ''), '') AS BLOB) FROM "
        f"(SELECT {spec.expression} AS piece FROM fragments WHERE {where} ORDER BY {VIEW_ORDER} LIMIT ?)",
        [*(now_iso,) * spec.expression_now_params, *where_params, limit],
    ).fetchone()
    return count, bytes(row[0])


def published_verdicts(index: Index, projects: Sequence[str]) -> dict[str, StoredVerdict]:
    """The stored freshness verdicts of the projects' records, by record path: one query."""
    if not projects:
        return {}
    marks = ", ".join("?" for _ in projects)
    rows = index.conn.execute(
        f"SELECT path, verdict, commit_sha, checked_at, detail FROM verdicts WHERE project IN ({marks})",
        list(projects),
    )
    found: dict[str, StoredVerdict] = {}
    for path, verdict, commit, checked_at, detail in rows:
        try:
            parsed = json.loads(detail)
        except ValueError:
            parsed = []
        found[path] = StoredVerdict(path, verdict, commit, checked_at, parsed if isinstance(parsed, list) else [])
    return found
