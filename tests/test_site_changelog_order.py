"""A project's events are put in order once (newest first, and by week) and every page reads that
order: the home's latest changes and counts, its activity chart, "What changed" and both feeds must
say exactly what picking from all the events for each of them says, for any events: equal instants,
every action, titles in many scripts, dates a person wrote by hand, text that is no date at all."""

from __future__ import annotations

import heapq
from collections import Counter
from datetime import UTC, date, datetime, timedelta

import jinja2
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from site_support import SCRIPTS

from memosite.index import IndexEntry
from memosite.schema import format_iso, parse_datetime
from memosite.site import changelog
from memosite.site.changelog import ACTIONS, ChangeEvent
from memosite.site.charts import weekly_bars
from memosite.site.dashboard import (
    CHANGELOG_EVENTS_PER_WEEK,
    CHANGELOG_WEEKS,
    CHART_WEEKS,
    RECENT_DAYS,
    FeedSource,
    charts,
    dashboard_page,
    project_stats,
    render_feed,
)
from memosite.site.sitepage import relative_path
from memosite.vault import Vault
from memosite.views import env_for

NOW = datetime(2026, 11, 30, 9, 30, tzinfo=UTC)

# Instants as the index holds them, on a few days around now (so that many are equal), and as a
# person may write them in a hand-edited record.
_INDEXED = st.builds(
    lambda days, minutes: format_iso(NOW - timedelta(days=days, minutes=minutes)),
    st.integers(min_value=-3, max_value=140),
    st.sampled_from([0, 0, 1, 90, 600, 1439]),
)
_WRITTEN = st.sampled_from(
    [
        "2026-11-23",
        "2026-11-29T23:30:00-05:00",
        "2026-11-30T01:00:00+09:00",
        "2026-11-16 08:00:00",
        "2026-11-02t10:00:00z",
        "2026-10-05T12:00:00.5+00:00",
        "2026-13-45T00:00:00.000Z",
        "20261130T000000Z",
        "yesterday",
        "вчера",
        "昨天",
        "",
    ]
)
_WHEN = st.one_of(_INDEXED, _INDEXED, _INDEXED, _WRITTEN)
_TEXT = st.sampled_from([*SCRIPTS, "", "a [link](x.md) *bold*", "<b>&amp;</b>"])
_EVENT = st.builds(
    ChangeEvent,
    when=_WHEN,
    project=st.just("demo"),
    action=st.sampled_from(ACTIONS),
    kind=st.sampled_from(["trap", "decision", "log", "commit", ""]),
    record_id=st.sampled_from(["a", "b", "ключ", "键", ""]),
    title=_TEXT,
    src_uri=st.sampled_from([None, "memory/demo/traps/a.md", "memory/demo/decisions/ключ.md"]),
    record_count=st.integers(min_value=1, max_value=3),
)
_EVENTS = st.lists(_EVENT, max_size=60)
# More events in one week than "What changed" lists, most of them at the same few instants.
_CROWDED_WEEK = st.lists(
    _EVENT.map(lambda e: e._replace(when=f"2026-11-24T10:0{e.record_count}:00.000Z")), min_size=95, max_size=130
)


def _order(event: ChangeEvent) -> tuple[str, int, str, str]:
    return (event.when, ACTIONS.index(event.action), event.record_id, event.kind)


def _week(moment: str) -> str:
    """The Monday of the UTC week of ``moment``, through datetime objects every time."""
    try:
        day = date.fromisoformat(moment[:10]) if moment.endswith("Z") else parse_datetime(moment).astimezone(UTC).date()
    except ValueError:
        return moment[:10]
    return (day - timedelta(days=day.weekday())).isoformat()


def _source(events: list[ChangeEvent]) -> FeedSource:
    return FeedSource("demo", [], events)


@settings(max_examples=300, deadline=None)
@given(moment=st.one_of(_WHEN, st.text(max_size=30), st.text(max_size=12).map(lambda t: t + "Z")))
def test_week_of_an_instant_is_the_monday_of_its_utc_week(moment: str) -> None:
    assert changelog.week_of(moment) == _week(moment)


@settings(max_examples=300, deadline=None)
@given(events=_EVENTS)
def test_events_ordered_once_read_as_picking_the_newest_of_each_list(events: list[ChangeEvent]) -> None:
    timeline = changelog.Timeline(events)
    assert timeline.newest == heapq.nlargest(len(events), events, key=_order)
    assert timeline.newest[:10] == changelog.newest_first(events, 10)
    weeks = {_week(e.when) for e in events}
    assert set(timeline.weeks) == weeks
    for week in weeks:
        these = [e for e in events if _week(e.when) == week]
        assert timeline.weeks[week] == heapq.nlargest(len(these), these, key=_order)


@settings(max_examples=200, deadline=None)
@given(events=_EVENTS)
def test_home_counts_and_latest_changes_equal_those_picked_from_every_event(events: list[ChangeEvent]) -> None:
    stats = project_stats(_source(events), NOW, "memory/demo")
    now_iso = format_iso(NOW)
    changed = [e for e in events if e.action != "committed" and e.when <= now_iso]
    for days in RECENT_DAYS:
        start = format_iso(NOW - timedelta(days=days))
        expected: Counter[str] = Counter()
        for e in changed:
            if e.when >= start:
                expected[e.action] += e.record_count
        assert stats["recent"][days] == expected
    latest = heapq.nlargest(10, changed, key=_order)
    assert [(i["when"], i["action"], i["kind"], i["title"], i["src"]) for i in stats["latest"]] == [
        (e.when[:10], e.action, e.kind, e.title, e.src_uri) for e in latest
    ]


@settings(max_examples=200, deadline=None)
@given(events=_EVENTS)
def test_activity_chart_counts_each_weeks_changed_records_and_log_events(events: list[ChangeEvent]) -> None:
    weeks = changelog.last_weeks(NOW, CHART_WEEKS)

    def per_week(logs: bool) -> list[int]:
        return [
            sum(
                e.record_count
                for e in events
                if e.action in ("created", "updated") and (e.kind == "log") is logs and _week(e.when) == week
            )
            for week in weeks
        ]

    expected = weekly_bars(
        "Activity per week", weeks, [("records changed", per_week(False)), ("log events", per_week(True))]
    )
    assert charts(_source(events), NOW, "T")["T-activity"] == expected


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> jinja2.Environment:
    return env_for(Vault.open(tmp_path_factory.mktemp("vault")))


@settings(max_examples=100, deadline=None)
@given(events=st.one_of(st.lists(_EVENT, max_size=150), _CROWDED_WEEK))
def test_what_changed_lists_each_weeks_newest_events_as_picking_them_does(
    env: jinja2.Environment, events: list[ChangeEvent]
) -> None:
    base = "memory/demo"
    weeks: dict[str, list[ChangeEvent]] = {}
    for e in events:
        weeks.setdefault(_week(e.when), []).append(e)
    newest = sorted(weeks, reverse=True)

    def shown(e: ChangeEvent) -> dict[str, object]:
        return {
            "when": e.when[:16].replace("T", " "),
            "action": e.action,
            "kind": e.kind,
            "id": e.record_id,
            "title": e.title,
            "count": e.record_count,
            "link": relative_path(e.src_uri, base) if e.src_uri else None,
        }

    def counts(these: list[ChangeEvent]) -> Counter[str]:
        found: Counter[str] = Counter()
        for e in these:
            found[e.action] += e.record_count
        return found

    expected = env.get_template("site/changelog.md.j2").render(
        project="demo",
        weeks=[
            (
                week,
                [shown(e) for e in heapq.nlargest(CHANGELOG_EVENTS_PER_WEEK, weeks[week], key=_order)],
                sum(e.record_count for e in weeks[week]),
            )
            for week in newest[:CHANGELOG_WEEKS]
        ],
        older=[(week, counts(weeks[week])) for week in newest[CHANGELOG_WEEKS:]],
        actions=ACTIONS,
    )
    pages = dashboard_page(env, "memory", _source(events), NOW)
    assert pages[1].markdown == expected


@settings(max_examples=200, deadline=None)
@given(events=st.lists(_EVENT, max_size=80))
def test_feeds_carry_the_newest_fifty_events_picked_from_every_event(events: list[ChangeEvent]) -> None:
    def url_for(uri: str) -> str:
        return uri.removesuffix(".md") + "/" if uri.endswith(".md") else uri

    site = "https://example.org/"
    source = _source(events)
    feed = render_feed(
        source, src_uri="memory/demo/feed.xml", site_name="Site", site_url=site, url_for=url_for, now=NOW
    )
    expected = changelog.atom_feed(
        title="Site: what changed in demo",
        feed_id="urn:memosite:demo",
        self_url=site + "memory/demo/feed.xml",
        site_url=site,
        newest=heapq.nlargest(50, events, key=_order),
        url_for=lambda uri: site + url_for(uri),
        now=NOW,
    )
    assert feed == expected
    # The site's feed: one project's events as they are, several projects' merged (a tie between
    # two projects' events keeps the order the projects come in).
    other = FeedSource("other", [], events[1::2])
    for sources in ([source], [FeedSource("demo", [], events[::2]), other]):
        merged = render_feed(
            FeedSource.merged(sources),
            src_uri="memory/feed.xml",
            site_name="Site",
            site_url=site,
            url_for=url_for,
            now=NOW,
        )
        assert merged == changelog.atom_feed(
            title="Site: what changed in all projects",
            feed_id="urn:memosite:site",
            self_url=site + "memory/feed.xml",
            site_url=site,
            newest=heapq.nlargest(50, [e for s in sources for e in s.events], key=_order),
            url_for=lambda uri: site + url_for(uri),
            now=NOW,
        )


def _entry(status: str, created: str | None, updated: str | None, expires_at: str | None, title: str) -> IndexEntry:
    return IndexEntry(
        "projects/demo/traps/a.md",
        "demo",
        "trap",
        "a",
        "a",
        title,
        status,
        created=created,
        updated=updated,
        expires_at=expires_at,
    )


_STAMP = st.one_of(st.none(), _WHEN)


@settings(max_examples=300, deadline=None)
@given(
    rows=st.lists(
        st.builds(
            _entry,
            status=st.sampled_from(["active", "superseded", "archived", "paused", "shipped"]),
            created=_STAMP,
            updated=_STAMP,
            expires_at=_STAMP,
            title=_TEXT,
        ),
        max_size=8,
    ),
    remembered=st.booleans(),
)
def test_record_events_are_its_creation_last_change_and_expiry(rows: list[IndexEntry], remembered: bool) -> None:
    now_iso = format_iso(NOW)
    expected = []
    for n, entry in enumerate(rows):
        page = f"memory/demo/traps/a{n}.md"

        def event(when: str, action: str, entry: IndexEntry = entry, page: str = page) -> ChangeEvent:
            return ChangeEvent(when, "demo", action, "trap", "a", entry.title, page)

        if entry.created:
            expected.append(event(entry.created, "created"))
        if entry.status in ("superseded", "archived"):
            if entry.updated:
                expected.append(event(entry.updated, entry.status))
        elif entry.updated and entry.updated != entry.created:
            expected.append(event(entry.updated, "updated"))
        if entry.expires_at and entry.expires_at <= now_iso:
            expected.append(event(entry.expires_at, "expired"))
    pairs = [(entry, f"memory/demo/traps/a{n}.md") for n, entry in enumerate(rows)]
    memo: changelog.RecordEventMemo | None = {} if remembered else None
    assert changelog.record_events(pairs, now_iso, memo) == expected
    if memo is not None:  # a second build from the same rows keeps their events
        assert changelog.record_events(pairs, now_iso, memo) == expected
