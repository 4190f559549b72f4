"""Reads an agent acted on: the read returns what it found, then the hits are counted.

A hit is usage (``hits`` + 1, ``lastHit``): it changes the record's file, so it is a change, made
through the unit of work (:func:`memosite.salience.record_hits`) and committed with the next change.
The reads themselves (:func:`memosite.lookup.get_record`, :func:`memosite.search.search_records`,
:func:`memosite.bootstrap.build_bootstrap`) never write; a front end that serves an agent's session
calls these instead, and a person's read (no session) counts nothing.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from memosite.schema import format_iso, utc_now

if TYPE_CHECKING:
    from memosite.bootstrap import BootstrapResult
    from memosite.lookup import StoredRecord
    from memosite.search import SearchResult
    from memosite.vault import Vault

# Each function imports its read and the hit counting when called: a CLI search loads the search
# alone (start-up speed), not the brief or the write machinery.


def get_record_counting_hit(
    vault: Vault, project: str, *, session_id: str | None, now: datetime | None = None, **lookup: Any
) -> StoredRecord:
    """:func:`~memosite.lookup.get_record`, then one hit of ``session_id`` on the record found (at
    most once per session; none without a session). The record returned shows the hit counted."""
    from memosite.lookup import get_record
    from memosite.salience import record_hits

    now = now or utc_now()
    found = get_record(vault, project, now=now, **lookup)
    if session_id and record_hits(vault, found.project, [found.id], session_id=session_id, now=now):
        found.frontmatter["hits"] = int(found.frontmatter.get("hits") or 0) + 1
        found.frontmatter["lastHit"] = format_iso(now)
    return found


def search_counting_hits(
    vault: Vault,
    project: str | None,
    query: str | None = None,
    *,
    hit_ids: Sequence[str] | None = None,
    session_id: str | None = None,
    now: datetime | None = None,
    **filters: Any,
) -> SearchResult:
    """:func:`~memosite.search.search_records`, then one hit on each of ``hit_ids`` (the records the
    caller says it used; at most once per ``session_id``): ``hits_recorded`` lists those counted.
    A search of every project counts each id in the project of the hit of that id, else in the one
    project holding it (an id several projects hold, and none of the hits, counts nothing)."""
    from memosite.search import search_records

    now = now or utc_now()
    result = search_records(vault, project, query, now=now, **filters)
    if not hit_ids:
        return result
    from memosite.salience import record_hits

    recorded: list[str] = []
    for holder, ids in _hit_projects(vault, project, list(hit_ids), result).items():
        recorded += record_hits(vault, holder, ids, session_id=session_id, now=now)
    return dataclasses.replace(result, hits_recorded=recorded)


def _hit_projects(vault: Vault, project: str | None, ids: list[str], result: SearchResult) -> dict[str, list[str]]:
    """Which project each acknowledged id is counted in (see :func:`search_counting_hits`)."""
    from memosite.vault import warn

    if project is not None:
        return {project: ids}
    found = {hit.id: hit.project for hit in reversed(result.results)}
    by_project: dict[str, list[str]] = {}
    for record_id in ids:
        holder = found.get(record_id.strip())
        if holder is None:
            holders = {entry.project for entry in vault.index().by_id(record_id.strip())}
            if len(holders) != 1:
                warn(
                    f"hit not counted for {record_id}: "
                    + ("no such record" if not holders else "several projects hold it")
                )
                continue
            holder = holders.pop()
        by_project.setdefault(holder, []).append(record_id)
    return by_project


def bootstrap_counting_hits(
    vault: Vault, project: str, *, session_id: str | None, now: datetime | None = None, **options: Any
) -> BootstrapResult:
    """:func:`~memosite.bootstrap.build_bootstrap`, then one hit of ``session_id`` on each record the
    brief shows (at most once per session; none without a session): ``hits_recorded`` lists them."""
    from memosite.bootstrap import build_bootstrap

    now = now or utc_now()
    brief = build_bootstrap(vault, project, now=now, **options)
    if not session_id:
        return brief
    from memosite.salience import record_hits

    # In the order the brief spends its budget: traps, context, decisions, pending.
    shown = [item.id for item in (*brief.traps, *brief.context, *brief.decisions, *brief.pending)]
    recorded = record_hits(vault, project, shown, session_id=session_id, now=now)
    return dataclasses.replace(brief, hits_recorded=recorded)
