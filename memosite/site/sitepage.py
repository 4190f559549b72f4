"""A page of the published site, and the record behind a record page: what the page builders share.

:mod:`memosite.site.pages` assembles the memory section from these; the dashboards
(:mod:`memosite.site.dashboard`) and the trust pages (:mod:`memosite.site.trust`) make their own.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from memosite.index import IndexEntry
from memosite.index.verdicts import StoredVerdict
from memosite.statuses import is_inactive

_COMPILED_STAMP = re.compile(r"^> Last compiled: .*$", re.MULTILINE)


@dataclass(frozen=True)
class PublishedRecord:
    """A record that gets a page, with why (if at all) it is out of date, what ``verify`` last
    found of the code it cites, and whether it waits for review (published only when asked)."""

    entry: IndexEntry
    src_uri: str
    inactive: tuple[str, ...]
    verdict: StoredVerdict | None = None
    pending: bool = False

    @property
    def searchable_by_default(self) -> bool:
        return not self.inactive


@dataclass
class SitePage:
    """One virtual Markdown page of the memory section.

    ``charts`` maps a placeholder paragraph of the Markdown to the SVG that replaces it once the
    page is HTML (SVG is made here, escaped, and never passes through the sanitiser). ``meta`` is
    the page's front matter besides its title (``hide``, ``tags``): the plugin sets it on the page,
    an export writes it as the page's one front-matter block."""

    src_uri: str
    markdown: str
    role: str  # "record", "view", "memory", "dashboard", "changelog" or "trust"
    title: str
    record: PublishedRecord | None = None
    charts: dict[str, str] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)
    # A record page's digest of what it is made from (see ``record_basis``); its Markdown is left
    # empty when the caller already holds the page built from that basis.
    basis: str = ""

    @property
    def searchable(self) -> bool:
        """Site search finds records: views, dashboards and the changelog are left out."""
        return self.role == "record"

    @property
    def fingerprint(self) -> str:
        """The Markdown minus the views' compile stamp: equal fingerprints render equal pages."""
        if self.role == "view":
            return _COMPILED_STAMP.sub("", self.markdown)
        return self.markdown


def relative_url(url: str, base: str) -> str:
    """``url`` (a site path) as a link from the directory ``base`` (unchanged when there is none)."""
    if not base or base == ".":
        return url
    relative = relative_path(url.rstrip("/") or ".", base)
    return relative + "/" if url.endswith("/") and relative != "." else relative


_NOT_PLAIN = frozenset({"", ".", ".."})


def relative_path(path: str, base: str) -> str:
    """``posixpath.relpath(path, base)``. The site's own paths (relative, with no empty, ``.`` or
    ``..`` segment) are worked out from their segments: ``relpath`` asks the system for the
    working directory on every call, and a build makes a link per record and per event."""
    parts = path.split("/")
    start = base.split("/") if base and base != "." else []
    if _NOT_PLAIN.intersection(parts) or _NOT_PLAIN.intersection(start):
        return posixpath.relpath(path, base or ".")
    common = 0
    for mine, theirs in zip(parts, start, strict=False):
        if mine != theirs:
            break
        common += 1
    return "/".join([".."] * (len(start) - common) + parts[common:]) or "."


def shown_status(entry: IndexEntry, inactive: Sequence[str]) -> str:
    """The status a reader sees: "expired" once the record has expired, unless it already reads
    as archived or superseded (the rule of the views, memosite.index.fragments.SHOWS_EXPIRED)."""
    if "expired" in inactive and not is_inactive(entry.status):
        return "expired"
    return entry.status
