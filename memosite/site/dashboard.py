"""The pages a reader opens first: each project's home (counts, recent changes, the traps that
matter, what needs attention, charts), its "What changed" page, the site-wide overview, and the
Atom feeds built from the same events.

Every figure is computed here from the published records with the rules the views use (expiry,
flagged stale, "reads as expired"), so a dashboard never disagrees with a view.
"""

from __future__ import annotations

import heapq
import operator
import posixpath
from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import jinja2

from memosite.codelayers import shown_layer
from memosite.kinds import DURABLE_KINDS, KIND_FACTS
from memosite.schema import format_iso
from memosite.site import changelog
from memosite.site.charts import horizontal_bars, weekly_bars
from memosite.site.sitepage import PublishedRecord, SitePage, relative_path, relative_url, shown_status
from memosite.site.trust import needs_review
from memosite.vault import Vault

# Where a page of the site's own (its landing page) shows the site-wide overview.
OVERVIEW_MARK = "<!-- memosite:overview -->"
CHART_WEEKS = 12
# The changelog page lists each event of its newest weeks (up to a number a week) and counts the
# rest, so it stays one readable page, cheap to rebuild, at any size; the feed has the newest.
CHANGELOG_WEEKS = 12
CHANGELOG_EVENTS_PER_WEEK = 100
SEVERITY_ORDER = ("critical", "high", "medium", "low")
RECENT_DAYS = (7, 30)
LATEST = 10  # changes a project's home lists
# What the home's figures read of a record's index row (a body edit leaves them as they were).
_FIGURE_FIELDS = operator.attrgetter(
    "kind", "status", "title", "occurrences", "hits", "stale", "helpful", "updated", "severity", "layer"
)
STATUS_COLUMNS = ("active", "expired", "paused", "shipped", "completed", "superseded", "archived")


@dataclass
class _Figures:
    """A project's home figures and charts, what they were computed from, and when."""

    basis: tuple[Any, ...]
    whens: list[str]  # the events' instants, sorted
    edges: tuple[str, ...]  # the instants that bounded the time windows (see _edges)
    weeks: list[str]
    stats: dict[str, Any]
    charts: dict[str, str]

    def holds(self, basis: tuple[Any, ...], now: datetime) -> bool:
        """Whether figures made at another instant from ``basis`` are these: same records and
        events, and no event crossed the edge of a time window (or came due) in between."""
        if basis != self.basis or changelog.last_weeks(now, CHART_WEEKS) != self.weeks:
            return False
        new = _edges(now)
        if bisect_right(self.whens, self.edges[0]) != bisect_right(self.whens, new[0]):
            return False
        return all(
            bisect_left(self.whens, a) == bisect_left(self.whens, b)
            for a, b in zip(self.edges[1:], new[1:], strict=True)
        )


def _edges(now: datetime) -> tuple[str, ...]:
    """``now`` (events after it do not count yet) and the starts of the "last N days" windows."""
    return (format_iso(now), *(format_iso(now - timedelta(days=days)) for days in RECENT_DAYS))


@dataclass
class DashboardMemo:
    """What a long-running process (``serve``) keeps between builds, per project: each record's
    change events, the home's figures and the "What changed" page, reused while what they are
    made from is unchanged."""

    events: dict[str, changelog.RecordEventMemo] = field(default_factory=dict)
    figures: dict[str, _Figures] = field(default_factory=dict)
    changes: dict[str, tuple[tuple[Any, ...], str]] = field(default_factory=dict)

    def clear(self) -> None:
        self.events.clear()
        self.figures.clear()
        self.changes.clear()


@dataclass
class FeedSource:
    """One project's published records and change events (or several projects' merged), its
    sync conflict sidecars and how many records wait for review."""

    project: str | None
    records: list[PublishedRecord]
    events: list[changelog.ChangeEvent]
    conflicts: list[str] = field(default_factory=list)
    stats: tuple[str, dict[str, Any]] | None = None  # (instant, figures) computed for it
    figures: tuple[str, dict[str, str]] | None = None  # (instant, charts without their tokens)
    pending: int = 0  # records waiting for review
    pending_shown: bool = False  # ... and published by this build (its Review page lists them)
    _timeline: changelog.Timeline | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def timeline(self) -> changelog.Timeline:
        """The events newest first and by week, ordered once (``events`` is not changed after)."""
        if self._timeline is None:
            self._timeline = changelog.Timeline(self.events)
        return self._timeline

    @classmethod
    def for_project(
        cls,
        vault: Vault,
        project: str,
        records: list[PublishedRecord],
        now: datetime,
        *,
        conflicts: list[str] | None = None,
        pending: int = 0,
        pending_shown: bool = False,
        hidden: Collection[str] = (),
        memo: DashboardMemo | None = None,
    ) -> FeedSource:
        """``hidden``: ``kind:id`` of records the site leaves out; commits naming one are too."""
        known = memo.events.setdefault(project, {}) if memo is not None else None
        events = changelog.record_events(((r.entry, r.src_uri) for r in records), format_iso(now), known)
        events += changelog.tombstone_events(vault, project)
        commits = changelog.git_events(vault, project)
        if commits:
            # Commits name records by kind:id: those of records left out or purged are not shown
            # either (a purged id that a published record carries again is that record's).
            unnamed = set(hidden)
            purged = changelog.purged_keys(vault, project)
            if purged:
                unnamed |= purged - {f"{r.entry.kind}:{r.entry.id}" for r in records}
            events += changelog.without_commits_naming(commits, unnamed)
        listed = changelog.conflict_files(vault, project) if conflicts is None else conflicts
        return cls(project, records, events, listed, pending=pending, pending_shown=pending_shown)

    @classmethod
    def merged(cls, sources: Sequence[FeedSource]) -> FeedSource:
        if len(sources) == 1:  # the same figures: share what was computed for the one project
            one = sources[0]
            shared = cls(
                None, one.records, one.events, one.conflicts, one.stats, one.figures, one.pending, one.pending_shown
            )
            shared._timeline = one._timeline
            return shared
        return cls(
            None,
            [r for s in sources for r in s.records],
            [e for s in sources for e in s.events],
            [c for s in sources for c in s.conflicts],
            pending=sum(s.pending for s in sources),
            pending_shown=any(s.pending_shown for s in sources),
        )


@dataclass
class Overview:
    """The site-wide overview, placed into a page holding ``<!-- memosite:overview -->``."""

    prefix: str
    sources: list[FeedSource]
    now: datetime


def _live(record: PublishedRecord) -> bool:
    return record.entry.status == "active" and "expired" not in record.inactive


def _link(src_uri: str, base: str) -> str:
    return relative_path(src_uri, base or ".")


def project_stats(source: FeedSource, now: datetime, base: str) -> dict[str, Any]:
    """What a project's home shows, with links relative to ``base`` (the page's directory).

    The figures are computed once per source and instant; only the links depend on ``base``."""
    key = format_iso(now)
    if source.stats is None or source.stats[0] != key:
        source.stats = (key, _figures(source, now))
    return _linked(source.stats[1], base)


def _linked(figures: dict[str, Any], base: str) -> dict[str, Any]:
    def links(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [{**item, "link": _link(item["src"], base) if item.get("src") else None} for item in items]

    return {
        **figures,
        **{name: links(figures[name]) for name in ("latest", "recurring", "recalled", "stale", "review", "drifted")},
    }


def _figures(source: FeedSource, now: datetime) -> dict[str, Any]:
    records = source.records
    counts: dict[str, Counter[str]] = {kind: Counter() for kind in DURABLE_KINDS}
    # One walk over the records sorts them into every list the home shows (each in record order).
    live = 0
    traps: list[PublishedRecord] = []
    review: list[PublishedRecord] = []
    stale: list[PublishedRecord] = []
    drifted: list[PublishedRecord] = []
    for record in records:
        entry = record.entry
        counts[entry.kind][shown_status(entry, record.inactive)] += 1
        if _live(record):
            live += 1
            if entry.kind == "trap":
                traps.append(record)
            elif entry.kind == "review":
                review.append(record)
        if entry.is_stale_flagged and "superseded" not in record.inactive:
            stale.append(record)
        if needs_review(record):
            drifted.append(record)
    columns = [c for c in STATUS_COLUMNS if any(counts[k][c] for k in counts)]
    table = [
        {"kind": KIND_FACTS[k].title, "total": sum(counts[k].values()), "by": [counts[k][c] for c in columns]}
        for k in DURABLE_KINDS
        if counts[k]
    ]
    now_iso = format_iso(now)
    since = {days: format_iso(now - timedelta(days=days)) for days in RECENT_DAYS}
    # The changes up to now, newest first: the latest few are listed, those since the start of the
    # longest window counted (they come first, so the walk stops at the first older one).
    oldest = min(since.values())
    recent: dict[int, Counter[str]] = {days: Counter() for days in RECENT_DAYS}
    newest: list[changelog.ChangeEvent] = []
    for e in source.timeline.newest:
        if e.action == "committed" or e.when > now_iso:
            continue
        if e.when < oldest and len(newest) >= LATEST:
            break
        if len(newest) < LATEST:
            newest.append(e)
        for days, start in since.items():
            if e.when >= start:
                recent[days][e.action] += e.record_count

    def item(record: PublishedRecord, figure: str) -> dict[str, str]:
        return {"title": record.entry.title, "src": record.src_uri, "figure": figure}

    recurring = heapq.nsmallest(5, traps, key=lambda r: (-(r.entry.occurrences or 1), r.entry.title))
    recalled = heapq.nsmallest(5, [r for r in traps if r.entry.hits], key=lambda r: (-r.entry.hits, r.entry.title))
    latest = [
        {
            "when": e.when[:10],
            "action": e.action,
            "kind": e.kind,
            "title": e.title,
            "src": e.src_uri,
        }
        for e in newest
    ]
    return {
        "columns": columns,
        "table": table,
        "total": len(records),
        "live": live,
        "recent": recent,
        "latest": latest,
        "recurring": [item(r, f"{r.entry.occurrences or 1}×") for r in recurring],
        "recalled": [item(r, f"{r.entry.hits} hits") for r in recalled],
        "stale": [item(r, f"{r.entry.stale} stale / {r.entry.helpful} helpful") for r in stale[:10]],
        "stale_count": len(stale),
        "review": [item(r, r.entry.updated[:10] if r.entry.updated else "") for r in review[:10]],
        "review_count": len(review),
        "drifted": [item(r, r.verdict.verdict if r.verdict else "") for r in drifted[:10]],
        "drifted_count": len(drifted),
        "pending_count": source.pending,
        "pending_shown": source.pending_shown,
        "conflicts": source.conflicts,
    }


def charts(source: FeedSource, now: datetime, token: str) -> dict[str, str]:
    """The home's charts, keyed by the placeholder paragraph each replaces."""
    key = format_iso(now)
    if source.figures is None or source.figures[0] != key:
        source.figures = (key, _charts(source, now))
    return {f"{token}-{name}": svg for name, svg in source.figures[1].items()}


def _charts(source: FeedSource, now: datetime) -> dict[str, str]:
    weeks = changelog.last_weeks(now, CHART_WEEKS)
    records, logs = _activity(source.timeline, weeks)
    traps = [r for r in source.records if r.entry.kind == "trap" and _live(r)]
    severity = Counter(r.entry.severity or "unrated" for r in traps)
    layers = Counter(shown_layer(r.entry.layer) for r in traps)
    order = [s for s in (*SEVERITY_ORDER, "unrated") if severity[s]]
    return {
        "activity": weekly_bars(
            "Activity per week",
            weeks,
            [
                ("records changed", records),
                ("log events", logs),
            ],
        ),
        "severity": horizontal_bars(
            "Live traps by severity",
            [(s, severity[s]) for s in order],
            css=[f"memosite-chart__bar--{s}" for s in order],
        ),
        "layer": horizontal_bars("Live traps by layer", layers.most_common(8)),
    }


def _activity(timeline: changelog.Timeline, weeks: Sequence[str]) -> tuple[list[int], list[int]]:
    """Records created or updated in each of ``weeks``, and log events, each counted by records."""
    records, logs = dict.fromkeys(weeks, 0), dict.fromkeys(weeks, 0)
    for week in weeks:
        for e in timeline.weeks.get(week, ()):
            if e.action == "created" or e.action == "updated":
                if e.kind == "log":
                    logs[week] += e.record_count
                else:
                    records[week] += e.record_count
    return list(records.values()), list(logs.values())


def _basis(source: FeedSource) -> tuple[Any, ...]:
    """Everything of a source the home's figures are computed from."""
    records = tuple((_FIGURE_FIELDS(r.entry), r.src_uri, r.inactive, r.verdict) for r in source.records)
    return (tuple(source.events), records, tuple(source.conflicts), source.pending, source.pending_shown)


def _remembered_figures(source: FeedSource, now: datetime, memo: DashboardMemo | None) -> None:
    """Give ``source`` the figures and charts of an earlier build when they still hold at ``now``
    (or keep the ones about to be computed for the next build)."""
    if memo is None or source.project is None:
        return
    basis = _basis(source)
    known = memo.figures.get(source.project)
    key = format_iso(now)
    if known is not None and known.holds(basis, now):
        source.stats, source.figures = (key, known.stats), (key, known.charts)
        return
    source.stats, source.figures = (key, _figures(source, now)), (key, _charts(source, now))
    memo.figures[source.project] = _Figures(
        basis,
        [e.when for e in reversed(source.timeline.newest)],
        _edges(now),
        changelog.last_weeks(now, CHART_WEEKS),
        source.stats[1],
        source.figures[1],
    )


def dashboard_page(
    env: jinja2.Environment, prefix: str, source: FeedSource, now: datetime, memo: DashboardMemo | None = None
) -> list[SitePage]:
    """A project's home page and its "What changed" page (with a ``memo``, figures and the
    changelog of the previous build are reused while they hold)."""
    project = source.project or ""
    base = f"{prefix}/{project}"
    token = f"MEMOSITECHART{project.replace('-', '').replace('.', '').replace('_', '')}"
    _remembered_figures(source, now, memo)
    figures = charts(source, now, token)
    home = env.get_template("site/dashboard.md.j2").render(
        project=project, stats=project_stats(source, now, base), charts=list(figures), now=format_iso(now)
    )
    events_basis = (prefix, tuple(source.events))
    known = memo.changes.get(project) if memo is not None else None
    if known is not None and known[0] == events_basis:
        changes = known[1]
    else:
        changes = _changes_markdown(env, project, base, source.timeline)
        if memo is not None:
            memo.changes[project] = (events_basis, changes)
    return [
        SitePage(f"{base}/index.md", home, "dashboard", f"{project} — overview", charts=figures),
        SitePage(f"{base}/CHANGES.md", changes, "changelog", f"What changed — {project}"),
    ]


def _changes_markdown(env: jinja2.Environment, project: str, base: str, timeline: changelog.Timeline) -> str:
    # The newest weeks list their newest events; older weeks are counted.
    grouped = timeline.weeks
    newest = sorted(grouped, reverse=True)
    weeks = [
        (
            week,
            [_event(e, base) for e in grouped[week][:CHANGELOG_EVENTS_PER_WEEK]],
            sum(e.record_count for e in grouped[week]),
        )
        for week in newest[:CHANGELOG_WEEKS]
    ]
    older = [(week, changelog.action_counts(grouped[week])) for week in newest[CHANGELOG_WEEKS:]]
    return env.get_template("site/changelog.md.j2").render(
        project=project, weeks=weeks, older=older, actions=changelog.ACTIONS
    )


def _event(event: changelog.ChangeEvent, base: str) -> dict[str, Any]:
    return {
        "when": event.when[:16].replace("T", " "),
        "action": event.action,
        "kind": event.kind,
        "id": event.record_id,
        "title": event.title,
        "count": event.record_count,
        "link": _link(event.src_uri, base) if event.src_uri else None,
    }


def overview_markdown(env: jinja2.Environment, overview: Overview, page_dir: str) -> tuple[str, dict[str, str]]:
    """The site-wide overview for a page in ``page_dir``, and its charts."""
    merged = FeedSource.merged(overview.sources)
    projects = []
    for source in overview.sources:
        stats = project_stats(source, overview.now, page_dir)
        projects.append(
            {
                "name": source.project,
                "home": _link(f"{overview.prefix}/{source.project}/index.md", page_dir),
                "changes": _link(f"{overview.prefix}/{source.project}/CHANGES.md", page_dir),
                "total": stats["total"],
                "live": stats["live"],
                "week": sum(stats["recent"][7].values()),
                "stale": stats["stale_count"],
                "review": stats["review_count"],
                "drifted": stats["drifted_count"],
                "pending": stats["pending_count"],
                "needs_review": _link(f"{overview.prefix}/{source.project}/NEEDS-REVIEW.md", page_dir),
            }
        )
    figures = charts(merged, overview.now, "MEMOSITECHARTSITE")
    text = env.get_template("site/overview.md.j2").render(
        projects=projects,
        stats=project_stats(merged, overview.now, page_dir),
        charts=list(figures),
        memory=_link(f"{overview.prefix}/index.md", page_dir),
        feed=_link(f"{overview.prefix}/feed.xml", page_dir),
    )
    return text, figures


def render_feed(
    source: FeedSource,
    *,
    src_uri: str,
    site_name: str,
    site_url: str | None,
    url_for: Callable[[str], str],
    now: datetime,
) -> str:
    """The Atom feed at ``src_uri``; with ``site_url`` its links are absolute."""
    feed_url = url_for(src_uri)
    base = (site_url or "").rstrip("/") + "/" if site_url else ""
    self_url = base + feed_url if base else posixpath.basename(feed_url)
    feed_dir = posixpath.dirname(feed_url)

    def page_url(uri: str) -> str:
        url = url_for(uri)
        return base + url if base else relative_url(url, feed_dir)

    name = source.project or "all projects"
    return changelog.atom_feed(
        title=f"{site_name}: what changed in {name}",
        feed_id=f"urn:memosite:{source.project or 'site'}",
        self_url=self_url,
        site_url=base or "./",
        newest=source.timeline.newest,
        url_for=page_url,
        now=now,
    )
