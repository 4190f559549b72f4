"""What the published site shows, as Markdown: record pages, view pages and the Memory page.

Everything here is read from the index (never by parsing the record files) and knows nothing of
MkDocs, so the plugin, the benchmark and the tests share one definition of the site's pages.
Paths are ``<prefix>/<project>/<kind dir>/<slug>.md`` for records and
``<prefix>/<project>/<VIEW>.md`` for views, which is where the views' own relative links point.
"""

from __future__ import annotations

import json
import posixpath
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from memosite.errors import InvalidArguments
from memosite.expiration import is_expired_iso
from memosite.index import IndexEntry
from memosite.kinds import DURABLE_KINDS, KIND_FACTS, VIEW_FILES
from memosite.proposals import count_proposals
from memosite.schema import format_iso, parse_datetime, utc_now
from memosite.site import changelog, trust
from memosite.site.dashboard import DashboardMemo, FeedSource, Overview, dashboard_page, overview_markdown
from memosite.site.links import LinksHere, ProjectLinks
from memosite.site.sitepage import PublishedRecord, SitePage, relative_path, relative_url, shown_status
from memosite.template_files import DEFAULT_PREFIX, templates_checksum_for
from memosite.vault import Vault
from memosite.views import env_for, link_for, render_view

VIEW_TITLES = {
    "INDEX.md": "Index",
    "TRAPS.md": "Traps",
    "DECISIONS.md": "Decisions",
    "PROMPTS.md": "Prompts",
    "SESSIONS.md": "Sessions",
}
NAV_VIEW_ORDER = ("INDEX.md", "TRAPS.md", "DECISIONS.md", "PROMPTS.md", "SESSIONS.md")

# The site shows this many rows of each view section; the Memory table holds every record.
SITE_SECTION_ROWS = 100
SEVERITIES = ("critical", "high", "medium", "low")
_PREFIX_SEGMENT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


def normalize_prefix(prefix: str) -> str:
    """The URL prefix of the memory section: ``memory``, ``docs/memory``; never empty or ``..``."""
    cleaned = prefix.strip().strip("/")
    segments = cleaned.split("/") if cleaned else []
    if not segments or any(not _PREFIX_SEGMENT.match(s) or ".." in s for s in segments):
        raise InvalidArguments(
            f"invalid memosite prefix {prefix!r}: use one or more path segments of letters, digits,"
            " '.', '_' or '-', each beginning with a letter or a digit (for example 'memory')"
        )
    return "/".join(segments)


def _when(value: str | None) -> str:
    if not value:
        return ""
    try:
        moment = parse_datetime(value)
    except ValueError:
        return str(value)
    return moment.strftime("%Y-%m-%d %H:%M UTC")


@dataclass
class SiteContent:
    """Every page of the memory section of one build, and the records behind them."""

    prefix: str
    projects: list[str]
    records: list[PublishedRecord] = field(default_factory=list)
    pages: list[SitePage] = field(default_factory=list)
    feeds: dict[str, FeedSource] = field(default_factory=dict)  # src_uri -> what the feed lists
    overview: Overview | None = None
    _by_uri: dict[str, SitePage] = field(default_factory=dict, repr=False)

    @property
    def memory_uri(self) -> str:
        return f"{self.prefix}/index.md"

    @property
    def records_json_uri(self) -> str:
        return f"{self.prefix}/records.json"

    @property
    def feed_uri(self) -> str:
        return f"{self.prefix}/feed.xml"

    def add(self, page: SitePage) -> None:
        self.pages.append(page)
        self._by_uri[page.src_uri] = page
        if page.record is not None:
            self.records.append(page.record)

    def page(self, src_uri: str) -> SitePage | None:
        return self._by_uri.get(src_uri)

    def records_rows(
        self, url_for: Callable[[str], str], memo: dict[str, tuple[str, str]] | None = None
    ) -> tuple[list[str], dict[str, tuple[str, str]], int]:
        """Each published record's row of ``records.json``, as JSON text (``url`` is relative to
        the JSON file itself), the rows by page for the next build (a plain mapping of texts, so
        the page cache can keep it for the next process) and how many rows were made afresh: a
        row whose record file, computed fields, verdict, review state and URL are the ones it was
        made from is reused."""
        base = posixpath.dirname(url_for(self.records_json_uri))
        memo = memo or {}
        kept: dict[str, tuple[str, str]] = {}
        rows = []
        made = 0
        for record in self.records:
            entry = record.entry
            absolute = url_for(record.src_uri)
            freshness = record.verdict.verdict if record.verdict is not None else None
            stamp = f"{_file_stamp(entry)}\0{entry.layer or ''}\0{freshness}\0{record.pending}\0{absolute}"
            cached = memo.get(record.src_uri)
            if cached is not None and cached[0] == stamp:
                text = cached[1]
            else:
                url = relative_url(absolute, base)
                row = {
                    "id": entry.id,
                    "kind": entry.kind,
                    "project": entry.project,
                    "title": entry.title,
                    "status": entry.status,
                    "severity": entry.severity,
                    "layer": entry.layer,
                    "tags": list(entry.tags),
                    "created": entry.created,
                    "updated": entry.updated,
                    "expires_at": entry.expires_at,
                    "freshness": freshness,
                    "review": "pending" if record.pending else None,
                    "url": url,
                }
                text = json.dumps(row, ensure_ascii=False, separators=(",", ":"))
                made += 1
            kept[record.src_uri] = (stamp, text)
            rows.append(text)
        return rows, kept, made

    def records_json(self, url_for: Callable[[str], str], rows: list[str] | None = None) -> str:
        """``records.json``: every published record (see :meth:`records_rows`)."""
        rows = self.records_rows(url_for)[0] if rows is None else rows
        return '{"records":[' + ",".join(rows) + "]}\n"


def default_site_name(projects: Sequence[str]) -> str:
    """The site's name when none is given: "<project> memory" for one project, else "Project memory"."""
    return f"{projects[0]} memory" if len(projects) == 1 else "Project memory"


def nav_section(prefix: str, projects: Sequence[str], title: str = "Memory") -> dict[str, Any]:
    """An MkDocs ``nav`` entry for the memory section: the Memory page and, per project, its home,
    its changelog and its views."""
    children: list[Any] = [{"All records": f"{prefix}/index.md"}]
    for project in projects:
        pages = [{"Overview": f"{prefix}/{project}/index.md"}, {"What changed": f"{prefix}/{project}/CHANGES.md"}]
        pages += [{VIEW_TITLES[name]: f"{prefix}/{project}/{name}"} for name in NAV_VIEW_ORDER]
        children.append({project: pages})
    return {title: children}


def inactive_reasons(entry: IndexEntry, now_iso: str) -> tuple[str, ...]:
    """Why a record is out of date at ``now_iso``: superseded, expired, archived (or nothing)."""
    reasons = []
    if entry.status == "superseded":
        reasons.append("superseded")
    if is_expired_iso(entry.expires_at, now_iso):
        reasons.append("expired")
    if entry.status == "archived":
        reasons.append("archived")
    return tuple(reasons)


def _linked(target: IndexEntry | None, here: str) -> dict[str, str] | None:
    if target is None:
        return None
    return {"title": target.title, "link": relative_path(link_for(target), posixpath.dirname(here) or ".")}


_ATX_HEADING = re.compile(r"^\s{0,3}#\s+(.+?)\s*#*\s*$")


def _one_line(text: str) -> str:
    return " ".join(text.split()).casefold()


def body_without_title(body: str, title: str) -> str:
    """The body, minus a first ``# heading`` that only repeats the record's title (the page has
    its own H1)."""
    text = body.lstrip("\n")
    first, _, rest = text.partition("\n")
    match = _ATX_HEADING.match(first)
    if match and _one_line(match.group(1)) == _one_line(title):
        return rest
    return body


def _record_context(
    record: PublishedRecord, by_id: dict[str, IndexEntry], links: LinksHere, *, author_emails: bool
) -> dict[str, Any]:
    entry = record.entry
    here = link_for(entry)
    view = KIND_FACTS[entry.kind].views[0] if entry.kind in KIND_FACTS and KIND_FACTS[entry.kind].views else "INDEX.md"
    return {
        "title": entry.title,
        "id": entry.id,
        "project": entry.project,
        "kind": entry.kind,
        "status": entry.status,
        "shown_status": shown_status(entry, record.inactive),
        "view": view,
        "view_title": VIEW_TITLES[view],
        "severity": entry.severity,
        "severity_class": entry.severity if entry.severity in SEVERITIES else "unrated",
        "layer": entry.layer,
        "module": entry.module,
        "tags": entry.tags,
        "path_patterns": entry.path_patterns,
        "created": _when(entry.created),
        "updated": _when(entry.updated),
        "expires_at": _when(entry.expires_at),
        "occurrences": entry.occurrences,
        "hits": entry.hits,
        "helpful": entry.helpful,
        "stale": entry.stale,
        "stale_flagged": entry.is_stale_flagged,
        "supersedes": _linked(by_id.get(entry.supersedes or ""), here),
        "supersedes_id": entry.supersedes,
        "superseded_by": _linked(by_id.get(entry.superseded_by or ""), here),
        "superseded_by_id": entry.superseded_by,
        "inactive": record.inactive,
        "body": body_without_title(entry.body, entry.title),
        "path": entry.path,
        "freshness": trust.freshness(record.verdict),
        "provenance": trust.provenance(entry, author_emails=author_emails),
        "pending": record.pending,
        "links": links,
    }


def resolve_projects(vault: Vault, wanted: Sequence[str] | None) -> list[str]:
    """The projects to publish: all of the vault's, or the named ones (which must exist)."""
    available = vault.projects()
    if not wanted:
        return available
    missing = [name for name in wanted if name not in available]
    if missing:
        raise InvalidArguments(f"no such project in {vault.root}: {', '.join(missing)}")
    return list(dict.fromkeys(wanted))


def _more_note(prefix_to_memory: str) -> Callable[[str, str, str, int, int], str]:
    def note(section: str, project: str, kind: str, shown: int, total: int) -> str:
        return (
            f"\n\n*Showing the first {shown} of {total:,}. Every one of them is in the"
            f" [Memory table]({prefix_to_memory}?project={project}&kind={kind}).*\n\n"
        )

    return note


@dataclass
class RecordMemo:
    """What a long-running process (``serve``) keeps between builds: each published record's index
    row and rendered page, so a rebuild reads and renders only the records that changed."""

    entries: dict[str, dict[str, IndexEntry]] = field(default_factory=dict)  # project -> path -> entry
    # path -> (what the page was rendered from: entry, why inactive, linked entries; its Markdown)
    pages: dict[str, tuple[tuple[Any, ...], str]] = field(default_factory=dict)
    templates: str = ""
    # None: a one-off build, whose dashboards are not worth remembering (their figures' basis is
    # a tuple per record, for a next build that never comes).
    dashboards: DashboardMemo | None = field(default_factory=DashboardMemo)
    # path -> (the records its "Links here" was made from, the answer)
    links: dict[str, tuple[tuple[IndexEntry | None, ...], LinksHere]] = field(default_factory=dict)
    # path -> (the basis and pending flag a page's digest was made from, the digest)
    digests: dict[str, tuple[tuple[Any, ...], bool, str]] = field(default_factory=dict)
    targets: dict[str, tuple[IndexEntry, frozenset[tuple[str, str]]]] = field(default_factory=dict)

    def refresh(self, vault: Vault, project: str) -> list[IndexEntry]:
        """The project's durable records, re-reading only rows whose file changed."""
        index = vault.index()
        known = self.entries.get(project)
        if known is None:
            known = {e.path: e for e in index.entries(project, kinds=DURABLE_KINDS)}
        else:
            stats = index.file_stats(project)
            for path in [p for p in known if p not in stats]:
                del known[path]
            for path, stamp in stats.items():
                entry = known.get(path)
                if entry is None or (entry.mtime_ns, entry.size) != stamp:
                    fresh = index.by_path(path)
                    if fresh is not None and fresh.kind in DURABLE_KINDS:
                        known[path] = fresh
                    else:
                        known.pop(path, None)
        self.entries[project] = known
        return sorted(known.values(), key=lambda e: e.path)


def _links_here(
    graph: ProjectLinks, entry: IndexEntry, basis: tuple[IndexEntry | None, ...], memo: RecordMemo
) -> LinksHere:
    """``graph.links_here(entry)``, the last answer when it was made from the same records
    (``basis``: ``graph.links_basis(entry)``)."""
    held = memo.links.get(entry.path)
    if held is not None and _same_entries(held[0], basis):
        return held[1]
    links = graph.links_here(entry)
    memo.links[entry.path] = (basis, links)
    return links


def _same_entries(old: tuple[IndexEntry | None, ...], new: tuple[IndexEntry | None, ...]) -> bool:
    return len(old) == len(new) and all(a is b for a, b in zip(old, new, strict=True))


def _same_basis(old: tuple[Any, ...], new: tuple[Any, ...]) -> bool:
    return (
        old[0] is new[0]
        and old[1] == new[1]
        and old[2] is new[2]
        and old[3] is new[3]
        and old[4] == new[4]
        and _same_entries(old[5], new[5])
        and old[6] == new[6]
    )


def _file_stamp(entry: IndexEntry | None) -> str:
    """What a record's row was read from: its file (path, time, size) and the fields the index
    computes beside the file's own."""
    if entry is None:
        return ""
    return f"{entry.path}\0{entry.mtime_ns}\0{entry.size}\0{entry.status}\0{entry.expires_at or ''}"


def record_basis(templates: str, record: PublishedRecord, basis: tuple[Any, ...]) -> str:
    """A digest of everything a record page is made from: the templates (and the e-mail setting),
    the record's file as indexed (its path, time, size and computed expiry), why it is inactive
    now, whether it waits for review, the records it links to, its verdict and the records its
    "Links here" is made from (:meth:`ProjectLinks.links_basis`: equal files give an equal
    section, so it need not be computed to know the page is the same) and the records its own
    Markdown links may reach (their pages' existence decides where those links lead)."""
    from memosite.site.cache import digest

    entry, inactive, supersedes, superseded_by, verdict, linked, links_to = basis

    def named(target: IndexEntry | None) -> str:
        return "" if target is None else f"{target.path}\0{target.title}"

    return digest(
        templates,
        entry.path,
        str(entry.mtime_ns),
        str(entry.size),
        entry.expires_at or "",
        ",".join(inactive),
        str(record.pending),
        named(supersedes),
        named(superseded_by),
        repr(verdict),
        *map(_file_stamp, linked),
        "\0links to:",
        *links_to,
    )


def collect_site_content(
    vault: Vault,
    *,
    prefix: str,
    projects: Iterable[str],
    now: datetime | None = None,
    memo: RecordMemo | None = None,
    section_rows: int | None = SITE_SECTION_ROWS,
    include_pending: bool = False,
    author_emails: bool = False,
    known: Callable[[str, str], bool] | None = None,
) -> SiteContent:
    """The memory section's pages from the index (call ``refresh_project`` first to be current).

    state and scratch records never get a page, exactly as they never appear in a view; records
    waiting for review get none either (nor a row, a view row, a feed entry or a count) unless
    ``include_pending``. Authors' e-mail addresses are left out unless ``author_emails``. With a
    ``memo`` from the previous build, only changed records are read and rendered again. A record
    page for which ``known(src_uri, basis)`` is true is not rendered at all: the caller holds the
    page built from that basis (its Markdown is left empty).
    """
    from memosite.index.site import published_verdicts
    from memosite.sync.conflicts import list_conflicts

    now = now or utc_now()
    now_iso = format_iso(now)
    content = SiteContent(prefix=normalize_prefix(prefix), projects=list(projects))
    env = env_for(vault)
    checksum = templates_checksum_for(vault)
    memo = memo if memo is not None else RecordMemo()
    checksum = f"{checksum}:{int(author_emails)}"  # a memo keeps pages of one e-mail setting
    if memo.templates != checksum:
        memo.pages.clear()
        memo.digests.clear()
        if memo.dashboards is not None:
            memo.dashboards.clear()
        memo.templates = checksum
    record_template = env.get_template("site/record.md.j2")
    verdicts = published_verdicts(vault.index(), content.projects)  # one query for the whole build
    sources: list[FeedSource] = []
    for project in content.projects:
        entries = memo.refresh(vault, project)
        pending = [entry for entry in entries if trust.is_pending(entry)]
        hidden = [] if include_pending else pending
        if hidden:
            left_out = {id(entry) for entry in hidden}
            entries = [entry for entry in entries if id(entry) not in left_out]
        by_id = {entry.id: entry for entry in entries}
        graph = ProjectLinks(entries, memo.targets)
        published: list[PublishedRecord] = []
        for entry in entries:
            src_uri = f"{content.prefix}/{project}/{link_for(entry)}"
            verdict = verdicts.get(entry.path) if trust.cites_code(entry) else None
            record = PublishedRecord(
                entry, src_uri, inactive_reasons(entry, now_iso), verdict, include_pending and trust.is_pending(entry)
            )
            # A page depends on its row, on why it is inactive now, on the rows it links to, on its
            # verdict and on the records its "Links here" reads; rows are re-read only when their
            # file changed, so the same objects mean the same page.
            linked = graph.links_basis(entry)
            basis = (
                entry,
                record.inactive,
                by_id.get(entry.supersedes or ""),
                by_id.get(entry.superseded_by or ""),
                verdict,
                linked,
                graph.links_to(entry),
            )
            earlier = memo.digests.get(entry.path)
            if earlier is not None and earlier[1] == record.pending and _same_basis(earlier[0], basis):
                digest = earlier[2]
            else:
                digest = record_basis(checksum, record, basis)
                memo.digests[entry.path] = (basis, record.pending, digest)
            cached = memo.pages.get(entry.path)
            if cached is not None and _same_basis(cached[0], basis):
                markdown = cached[1]
            elif known is not None and known(src_uri, digest):
                markdown = ""  # the caller holds this page: never rendered
            else:
                links = _links_here(graph, entry, linked, memo)
                context = _record_context(record, by_id, links, author_emails=author_emails)
                markdown = record_template.render(r=context)
                memo.pages[entry.path] = (basis, markdown)
            meta = {"tags": [str(tag) for tag in entry.tags]} if entry.tags else {}
            content.add(SitePage(src_uri, markdown, "record", entry.title, record, meta=meta, basis=digest))
            published.append(record)
        more = _more_note("../index.md")
        hidden_by_kind: dict[str, list[str]] = {}
        for entry in hidden:
            hidden_by_kind.setdefault(entry.kind, []).append(entry.path)
        badges = trust.row_badges(published)
        for name in VIEW_FILES:
            view = render_view(vault, project, name, now, limit=section_rows, more=more, hidden=hidden_by_kind)
            content.add(
                SitePage(
                    f"{content.prefix}/{project}/{name}",
                    trust.with_row_badges(view, badges) if badges else view,
                    "view",
                    f"{VIEW_TITLES[name]} — {project}",
                )
            )
        conflicts = list_conflicts(vault, project, details=True)
        # What waits for review: records in place (never counted among the published ones unless
        # included) and agents' proposed changes, whose approved records are what the site shows.
        waiting = len(pending) + count_proposals(vault, project)
        source = FeedSource.for_project(
            vault,
            project,
            published,
            now,
            conflicts=[c.sidecar for c in conflicts],
            pending=waiting,
            pending_shown=include_pending,
            hidden=[f"{e.kind}:{e.id}" for e in hidden],
            memo=memo.dashboards,
        )
        sources.append(source)
        for page in dashboard_page(env, content.prefix, source, now, memo.dashboards):
            content.add(page)
        pages = trust.TrustPages(
            content.prefix,
            project,
            published,
            waiting,
            include_pending,
            conflicts,
            frozenset(entry.path for entry in hidden),
            author_emails,
        )
        content.add(pages.needs_review_page(env))
        content.add(pages.conflicts_page(env, vault))
        if include_pending:
            from memosite.review import list_pending

            content.add(pages.review_page(env, list_pending(vault, project) if waiting else []))
        content.feeds[f"{content.prefix}/{project}/feed.xml"] = source
    current = {path for known in memo.entries.values() for path in known}
    for held in (memo.pages, memo.digests, memo.links, memo.targets):
        for path in [p for p in held if p not in current]:
            del held[path]
    content.overview = Overview(content.prefix, sources, now)
    content.feeds[content.feed_uri] = FeedSource.merged(sources)
    # The Memory page is the one page published without sanitising (its form and table are HTML):
    # it comes from memosite's own template, whatever a vault's templates/ holds.
    memory = env.get_template(f"{DEFAULT_PREFIX}site/memory.md.j2").render(projects=content.projects)
    content.add(SitePage(content.memory_uri, memory, "memory", "Memory", meta={"hide": ["toc"]}))
    return content


__all__ = [
    "RecordMemo",
    "SiteContent",
    "SitePage",
    "changelog",
    "collect_site_content",
    "overview_markdown",
]
