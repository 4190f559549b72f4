"""The memory changelog: what changed in a project, week by week, and its Atom feed.

Events come from the records themselves (created, updated, superseded, archived, expired), from
the vault's tombstones (purged and forgotten files) and, when vault git is on, from its history
(one event per commit that touched the project). The feed is Atom 1.0 (RFC 4287).

A purged record is counted, never named: what a person removed must not stay published under its
id, title or title-derived slug. Its event says how many records one removal took ("2 records
purged"), and the commits that name it (``kind:id``) are left out of the history.
"""

from __future__ import annotations

import functools
import heapq
import re
import subprocess
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Sequence
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import NamedTuple
from xml.sax.saxutils import escape, quoteattr

from memosite.config import validate_project_id
from memosite.expiration import is_expired_iso
from memosite.gitcommand import run_git
from memosite.index import IndexEntry
from memosite.schema import parse_datetime
from memosite.vault import Vault

ACTIONS = ("created", "updated", "superseded", "archived", "expired", "purged", "committed")
# A ``kind:id`` in a commit subject ("create trap:cache-leak", "approve decision:db (reviewed …)").
_NAMED = re.compile(r"(?<!\S)([a-z]+:[^\s,;]+?)(?=[\s,;)]|$)")


class ChangeEvent(NamedTuple):
    """One thing that happened to a project's memory (a named tuple: a large project has tens of
    thousands, and a tuple is made several times faster than a frozen dataclass)."""

    when: str  # ISO instant
    project: str
    action: str
    kind: str
    record_id: str
    title: str
    src_uri: str | None = None  # the record's page, when it still has one
    record_count: int = 1  # how many records the event stands for (one purge may remove many)

    @property
    def week(self) -> str:
        """The Monday (UTC) of the event's ISO week, ``YYYY-MM-DD``."""
        return week_of(self.when)


def week_of(moment: str) -> str:
    """The Monday (UTC) of the ISO week ``moment`` falls in."""
    # The index and the tombstones hold UTC instants (``...Z``): the date is the first ten
    # characters, and a project's events fall on a few hundred days, so each day is worked out once.
    return _monday_of_day(moment[:10]) if moment.endswith("Z") else _week_of_written(moment)


@functools.lru_cache(maxsize=1 << 12)
def _week_of_written(moment: str) -> str:
    """:func:`week_of` for an instant as a person may write it (an offset, a date alone)."""
    try:
        day = parse_datetime(moment).astimezone(UTC).date()
    except ValueError:
        return moment[:10]
    return (day - timedelta(days=day.weekday())).isoformat()


@functools.lru_cache(maxsize=1 << 12)
def _monday_of_day(text: str) -> str:
    try:
        day = date.fromisoformat(text)
    except ValueError:
        return text
    return (day - timedelta(days=day.weekday())).isoformat()


# A long-running process's record events, by record path: (entry, page, expired, its events).
RecordEventMemo = dict[str, tuple[IndexEntry, str, bool, list[ChangeEvent]]]


def record_events(
    records: Iterable[tuple[IndexEntry, str]],
    now_iso: str,
    memo: RecordEventMemo | None = None,
) -> list[ChangeEvent]:
    """Created / updated / superseded / archived / expired events of the published records, given
    as (index row, page).

    With a ``memo`` from the previous build, a record whose index row (the same object: rows are
    re-read only when their file changed), page and expiry are unchanged keeps its events."""
    events: list[ChangeEvent] = []
    if memo is None:
        for entry, page in records:
            _add_entry_events(events, entry, page, is_expired_iso(entry.expires_at, now_iso))
        return events
    kept: RecordEventMemo = {}
    for entry, page in records:
        expired = is_expired_iso(entry.expires_at, now_iso)
        cached = memo.get(entry.path)
        if cached is not None and cached[0] is entry and cached[1] == page and cached[2] == expired:
            mine = cached[3]
        else:
            mine = []
            _add_entry_events(mine, entry, page, expired)
        kept[entry.path] = (entry, page, expired, mine)
        events += mine
    memo.clear()
    memo.update(kept)
    return events


def _add_entry_events(events: list[ChangeEvent], entry: IndexEntry, page: str, expired: bool) -> None:
    project, kind, record_id, title = entry.project, entry.kind, entry.id, entry.title
    if entry.created:
        events.append(ChangeEvent(entry.created, project, "created", kind, record_id, title, page))
    updated, status = entry.updated, entry.status
    if status == "superseded" or status == "archived":
        if updated:
            events.append(ChangeEvent(updated, project, status, kind, record_id, title, page))
    elif updated and updated != entry.created:
        events.append(ChangeEvent(updated, project, "updated", kind, record_id, title, page))
    if expired and entry.expires_at:
        events.append(ChangeEvent(entry.expires_at, project, "expired", kind, record_id, title, page))


def tombstone_events(vault: Vault, project: str) -> list[ChangeEvent]:
    """Files removed from the project (gc purges, ``forget --purge``), from ``tombstones.jsonl``:
    one event per removal and kind, counting its records and naming none of them."""
    removed: dict[tuple[str, str], int] = {}
    for stone in vault.read_tombstones():
        if stone.get("project") != project or not stone.get("deletedAt"):
            continue
        key = (str(stone["deletedAt"]), str(stone.get("kind", "")))
        removed[key] = removed.get(key, 0) + 1
    return [
        ChangeEvent(when, project, "purged", kind, "", purged_title(count), record_count=count)
        for (when, kind), count in removed.items()
    ]


def purged_title(count: int) -> str:
    """What a purge event shows instead of a record: how many it removed."""
    return f"{count} record{'' if count == 1 else 's'} purged"


def purged_keys(vault: Vault, project: str) -> set[str]:
    """``kind:id`` of every record purged from the project (the commits naming one are left out)."""
    return {
        f"{stone.get('kind', '')}:{stone.get('id', '')}"
        for stone in vault.read_tombstones()
        if stone.get("project") == project and stone.get("id")
    }


def git_events(vault: Vault, project: str, *, limit: int = 500) -> list[ChangeEvent]:
    """Vault-git commits that touched the project (only when vault git is on and git works)."""
    if not vault.config.git_enabled or not (vault.root / ".git").exists():
        return []
    try:
        done = run_git(
            vault.root,
            "log",
            f"--max-count={int(limit)}",
            "--format=%H%x1f%cI%x1f%s",
            paths=[f"projects/{validate_project_id(project)}"],
            timeout=30,
        )
    except (OSError, subprocess.SubprocessError):
        return []
    events = []
    for line in done.stdout.splitlines():
        parts = line.split("\x1f")
        if len(parts) != 3:
            continue
        sha, when, subject = parts
        try:
            instant = parse_datetime(when).astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z")
        except ValueError:
            continue
        events.append(ChangeEvent(instant, project, "committed", "commit", sha[:12], subject))
    return events


def without_commits_naming(events: list[ChangeEvent], keys: Collection[str]) -> list[ChangeEvent]:
    """The commit events whose subject names none of ``keys`` (``kind:id``, as memosite's commit
    messages do): a record the site leaves out is not announced by its commits either."""
    if not keys:
        return events
    wanted = set(keys)
    return [e for e in events if e.action != "committed" or not (wanted & set(_NAMED.findall(e.title)))]


_RANK = {action: rank for rank, action in enumerate(ACTIONS)}


def _order(event: ChangeEvent) -> tuple[str, int, str, str]:
    return (event.when, _RANK[event.action], event.record_id, event.kind)


def newest_first(events: Iterable[ChangeEvent], limit: int | None = None) -> list[ChangeEvent]:
    """Events newest first (only the newest ``limit`` of them, when given)."""
    if limit is not None:
        return heapq.nlargest(limit, events, key=_order)
    return sorted(events, key=_order, reverse=True)


def by_week(events: Iterable[ChangeEvent]) -> dict[str, list[ChangeEvent]]:
    """The events by the Monday of their week, each week's in the order given."""
    weeks: dict[str, list[ChangeEvent]] = {}
    for event in events:
        weeks.setdefault(event.week, []).append(event)
    return weeks


class Timeline:
    """A list of events in the two orders the pages read them, each made once: newest first, and
    by week (each week's newest first). A dashboard, its changelog, two feeds and the overview
    read the same events: sorting them once costs less than picking the newest out of all of them
    for each (a stable sort keeps events that tie in the order given, as picking does)."""

    __slots__ = ("newest", "weeks")

    def __init__(self, events: Iterable[ChangeEvent]) -> None:
        self.newest = newest_first(events)
        self.weeks = by_week(self.newest)


def action_counts(events: Iterable[ChangeEvent]) -> Counter[str]:
    """How many records each action touched (a purge event counts every record it removed)."""
    counts: Counter[str] = Counter()
    for event in events:
        counts[event.action] += event.record_count
    return counts


def last_weeks(now: datetime, count: int) -> list[str]:
    """The Mondays of the last ``count`` ISO weeks, oldest first (the current week last)."""
    monday = now.astimezone(UTC).date() - timedelta(days=now.astimezone(UTC).weekday())
    return [(monday - timedelta(weeks=n)).isoformat() for n in range(count - 1, -1, -1)]


def _atom_time(moment: str) -> str:
    try:
        return parse_datetime(moment).astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    except ValueError:
        return "1970-01-01T00:00:00Z"


def atom_feed(
    *,
    title: str,
    feed_id: str,
    self_url: str,
    site_url: str,
    newest: Sequence[ChangeEvent],
    url_for: Callable[[str], str],
    now: datetime,
    limit: int = 50,
) -> str:
    """An Atom 1.0 feed of the first ``limit`` of ``newest`` (events newest first, as
    :func:`newest_first` orders them; ``url_for`` maps a page's src_uri to its URL; URLs may be
    relative to the feed, ``xml:base`` says against what)."""
    newest = newest[:limit]
    updated = _atom_time(newest[0].when) if newest else now.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    lines = [
        '<?xml version="1.0" encoding="utf-8"?>',
        f'<feed xmlns="http://www.w3.org/2005/Atom" xml:base={quoteattr(self_url)}>',
        f"  <title>{escape(title)}</title>",
        f"  <id>{escape(feed_id)}</id>",
        f"  <updated>{updated}</updated>",
        f'  <link rel="self" type="application/atom+xml" href={quoteattr(self_url)}/>',
        f'  <link rel="alternate" type="text/html" href={quoteattr(site_url)}/>',
        "  <author><name>memosite</name></author>",
        '  <generator uri="https://pypi.org/project/memosite/">memosite</generator>',
    ]
    for event in newest:
        link = url_for(event.src_uri) if event.src_uri else site_url
        entry_id = f"{feed_id}:{event.project}:{event.kind}:{event.record_id}:{event.action}:{event.when}"
        if event.action == "purged":  # counted, never named
            title = f"{event.title} ({event.kind})" if event.kind else event.title
            summary = f"{title} in {event.project}"
        else:
            title = f"{event.action.capitalize()}: {event.title}"
            summary = f"{event.kind} {event.record_id} {event.action} in {event.project}"
        lines += [
            "  <entry>",
            f"    <title>{escape(title)}</title>",
            f"    <id>{escape(entry_id)}</id>",
            f"    <updated>{_atom_time(event.when)}</updated>",
            f'    <link rel="alternate" type="text/html" href={quoteattr(link)}/>',
            f"    <category term={quoteattr(event.action)}/>",
            f"    <summary>{escape(summary)}</summary>",
            "  </entry>",
        ]
    lines.append("</feed>")
    return "\n".join(lines) + "\n"


def conflict_files(vault: Vault, project: str) -> list[str]:
    """Sync conflict sidecars (``*.conflict.*``) waiting in the project's record directories."""
    from memosite.kinds import RECORD_DIRS
    from memosite.vault import CONFLICT_MARK

    found: list[str] = []
    base = vault.project_dir(project)
    for subdir in RECORD_DIRS:
        directory = base / subdir
        if directory.is_dir() and not directory.is_symlink():
            found += sorted(vault.relative(Path(p)) for p in directory.iterdir() if CONFLICT_MARK in p.name)
    return found
