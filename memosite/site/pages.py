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
from memosite.kinds import DURABLE_KINDS, VIEW_FILES
from memosite.schema import format_iso, parse_datetime, utc_now
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

_PREFIX_SEGMENT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_COMPILED_STAMP = re.compile(r"^> Last compiled: .*$", re.MULTILINE)


def normalize_prefix(prefix: str) -> str:
    """The URL prefix of the memory section: ``memory``, ``docs/memory``; never empty or ``..``."""
    cleaned = prefix.strip().strip("/")
    segments = cleaned.split("/") if cleaned else []
    if not segments or any(not _PREFIX_SEGMENT.match(s) or ".." in s for s in segments):
        raise InvalidArguments(
            f"invalid memosite prefix {prefix!r}: use one or more path segments of letters, digits,"
            " '.', '_' or '-' (for example 'memory')"
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


@dataclass(frozen=True)
class PublishedRecord:
    """A record that gets a page, with why (if at all) it is out of date."""

    entry: IndexEntry
    src_uri: str
    inactive: tuple[str, ...]

    @property
    def searchable_by_default(self) -> bool:
        return not self.inactive


@dataclass
class SitePage:
    """One virtual Markdown page of the memory section."""

    src_uri: str
    markdown: str
    role: str  # "record", "view" or "memory"
    title: str
    record: PublishedRecord | None = None

    @property
    def fingerprint(self) -> str:
        """The Markdown minus the views' compile stamp: equal fingerprints render equal pages."""
        if self.role == "view":
            return _COMPILED_STAMP.sub("", self.markdown)
        return self.markdown


@dataclass
class SiteContent:
    """Every page of the memory section of one build, and the records behind them."""

    prefix: str
    projects: list[str]
    records: list[PublishedRecord] = field(default_factory=list)
    pages: list[SitePage] = field(default_factory=list)
    _by_uri: dict[str, SitePage] = field(default_factory=dict, repr=False)

    @property
    def memory_uri(self) -> str:
        return f"{self.prefix}/index.md"

    @property
    def records_json_uri(self) -> str:
        return f"{self.prefix}/records.json"

    def add(self, page: SitePage) -> None:
        self.pages.append(page)
        self._by_uri[page.src_uri] = page
        if page.record is not None:
            self.records.append(page.record)

    def page(self, src_uri: str) -> SitePage | None:
        return self._by_uri.get(src_uri)

    def records_json(self, url_for: Callable[[str], str]) -> str:
        """``records.json``: every published record; ``url`` is relative to the JSON file itself."""
        base = posixpath.dirname(url_for(self.records_json_uri))
        rows = []
        for record in self.records:
            entry = record.entry
            url = url_for(record.src_uri)
            rows.append(
                {
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
                    "url": _relative_url(url, base),
                }
            )
        return json.dumps({"records": rows}, ensure_ascii=False, separators=(",", ":")) + "\n"


def nav_section(prefix: str, projects: Sequence[str], title: str = "Memory") -> dict[str, Any]:
    """An MkDocs ``nav`` entry for the memory section: the Memory page and each project's views."""
    children: list[Any] = [{"All records": f"{prefix}/index.md"}]
    for project in projects:
        children.append({project: [{VIEW_TITLES[name]: f"{prefix}/{project}/{name}"} for name in NAV_VIEW_ORDER]})
    return {title: children}


def _relative_url(url: str, base: str) -> str:
    if not base or base == ".":
        return url
    relative = posixpath.relpath(url.rstrip("/") or ".", base)
    return relative + "/" if url.endswith("/") and relative != "." else relative


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
    return {"title": target.title, "link": posixpath.relpath(link_for(target), posixpath.dirname(here))}


def _record_context(record: PublishedRecord, by_id: dict[str, IndexEntry]) -> dict[str, Any]:
    entry = record.entry
    here = link_for(entry)
    return {
        "title": entry.title,
        "id": entry.id,
        "project": entry.project,
        "kind": entry.kind,
        "status": entry.status,
        "severity": entry.severity,
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
        "body": entry.body,
        "path": entry.path,
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


def collect_site_content(
    vault: Vault,
    *,
    prefix: str,
    projects: Iterable[str],
    now: datetime | None = None,
) -> SiteContent:
    """The memory section's pages from the index (call ``refresh_project`` first to be current).

    state and scratch records never get a page, exactly as they never appear in a view.
    """
    now_iso = format_iso(now or utc_now())
    content = SiteContent(prefix=normalize_prefix(prefix), projects=list(projects))
    env = env_for(vault)
    record_template = env.get_template("site/record.md.j2")
    index = vault.index()
    for project in content.projects:
        entries = index.entries(project, kinds=DURABLE_KINDS)
        by_id = {entry.id: entry for entry in entries}
        for entry in sorted(entries, key=lambda e: e.path):
            src_uri = f"{content.prefix}/{project}/{link_for(entry)}"
            record = PublishedRecord(entry, src_uri, inactive_reasons(entry, now_iso))
            markdown = record_template.render(r=_record_context(record, by_id))
            content.add(SitePage(src_uri, markdown, "record", entry.title, record))
        for name in VIEW_FILES:
            content.add(
                SitePage(
                    f"{content.prefix}/{project}/{name}",
                    render_view(vault, project, name, now),
                    "view",
                    f"{VIEW_TITLES[name]} — {project}",
                )
            )
    memory = env.get_template("site/memory.md.j2").render(projects=content.projects)
    content.add(SitePage(content.memory_uri, memory, "memory", "Memory"))
    return content
