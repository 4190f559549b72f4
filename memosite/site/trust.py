"""What the site says about trust (issues 14 and 12): each record's freshness verdict, review
state and provenance, and the pages that list what waits for a person — "Needs review" (cited
code that changed), "Review" (records no person has accepted yet, only when a build includes
them) and "Conflicts" (sync sidecars, the one page that shows anything of their content).

Everything from a record, a verdict, git or a sidecar is text: templates pass it through ``md``
or ``mdcode``, and multi-line text (diffs) becomes a fenced code block here (:func:`code_block`).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import jinja2

from memosite.errors import InvalidRecord
from memosite.index import IndexEntry
from memosite.index.verdicts import StoredVerdict
from memosite.reviewstate import is_pending as is_pending_review
from memosite.schema import parse_datetime, parse_record
from memosite.site.sitepage import PublishedRecord, SitePage
from memosite.vault import Vault
from memosite.views import link_for, link_for_path

if TYPE_CHECKING:
    from memosite.review import PendingRecord
    from memosite.sync.conflicts import Conflict

NEEDS_REVIEW_PAGE = "NEEDS-REVIEW.md"
REVIEW_PAGE = "REVIEW.md"
CONFLICTS_PAGE = "CONFLICTS.md"
VERDICTS = ("fresh", "drifted", "missing")
NEEDS_REVIEW_VERDICTS = ("drifted", "missing")
COMMITS_SHOWN = 10
_EQUAL = "(the two versions are equal)\n"
_BACKTICKS = re.compile(r"`+")
# Control characters other than tab and newline: Python-Markdown uses some as placeholders.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
# An e-mail address in an author (``Name <address>``, or an address alone).
_ANGLED_EMAIL = re.compile(r"\s*<[^<>\s]*@[^<>\s]*>")
_BARE_EMAIL = re.compile(r"([^\s<>@]+)@[^\s<>@]+")
# A frontmatter line naming a person, as a diff shows it.
_PERSON_LINE = re.compile(r"^([ +-]\s*(?:author|editedBy|reviewedBy)\s*:\s*)(.*)$", re.MULTILINE)


def is_pending(entry: IndexEntry) -> bool:
    """Waiting for a person's review (``review: pending``, see :mod:`memosite.review`)."""
    return is_pending_review(entry.frontmatter)


def cites_code(entry: IndexEntry) -> bool:
    """Whether the record cites code now (a verdict of a record that stopped citing is stale)."""
    cites = entry.frontmatter.get("cites")
    return isinstance(cites, list) and bool(cites)


def needs_review(record: PublishedRecord) -> bool:
    """A live record whose cited code drifted or went missing (history is left alone)."""
    verdict = record.verdict
    return verdict is not None and verdict.verdict in NEEDS_REVIEW_VERDICTS and not record.inactive


def code_block(text: str, language: str = "") -> str:
    """``text`` as a fenced code block that nothing in it can close (its fence is longer than
    any run of backticks it holds); shown as the characters it is."""
    body = _CONTROL.sub("\ufffd", text.replace("\r\n", "\n").replace("\r", "\n"))
    if not body.endswith("\n"):
        body += "\n"
    longest = max((len(run) for run in _BACKTICKS.findall(body)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{language}\n{body}{fence}\n"


def _when(value: Any) -> str:
    if not value:
        return ""
    try:
        return parse_datetime(str(value)).strftime("%Y-%m-%d %H:%M UTC")
    except ValueError:
        return str(value)


def _text(value: Any) -> str | None:
    return None if value is None or value == "" else str(value)


def _css(verdict: str) -> str:
    return verdict if verdict in VERDICTS else "unknown"


def freshness(verdict: StoredVerdict | None) -> dict[str, Any] | None:
    """What a page shows of a stored verdict: its name, the commit and instant it was found at,
    and each citation's finding (changed lines, commits since, a rename git saw)."""
    if verdict is None:
        return None
    cites = []
    for item in verdict.detail:
        if not isinstance(item, Mapping):
            continue
        commits = item.get("commits")
        listed = [str(c) for c in commits] if isinstance(commits, list) else []
        cites.append(
            {
                "cite": str(item.get("cite", "")),
                "verdict": str(item.get("verdict", "")),
                "css": _css(str(item.get("verdict", ""))),
                "moved_to": _text(item.get("movedTo")),
                "changed_lines": _text(item.get("changedLines")),
                "renamed_to": _text(item.get("renamedTo")),
                "uncommitted": item.get("uncommitted") is True,
                "commits": listed[:COMMITS_SHOWN],
                "more_commits": max(len(listed) - COMMITS_SHOWN, 0),
            }
        )
    return {
        "verdict": verdict.verdict,
        "css": _css(verdict.verdict),
        "commit": (verdict.commit or "")[:12] or None,
        "uncommitted": any(c["uncommitted"] for c in cites),
        "checked": _when(verdict.checked_at),
        "cites": cites,
    }


def published_person(value: Any, *, author_emails: bool = False) -> str | None:
    """How the site names a person (an author, a reviewer, a commit's author): as written with
    ``author_emails``, else without the e-mail address (``Jane Doe <jane@example.org>`` → ``Jane
    Doe``; an address alone keeps only the part before the ``@``)."""
    text = _text(value)
    if text is None or author_emails:
        return text
    name = _BARE_EMAIL.sub(r"\1", _ANGLED_EMAIL.sub("", text)).strip()
    return name or None


def diff_without_emails(diff: str, *, author_emails: bool = False) -> str:
    """A record diff whose frontmatter lines naming a person read as :func:`published_person`."""
    if author_emails or "@" not in diff:
        return diff
    return _PERSON_LINE.sub(lambda m: m.group(1) + (published_person(m.group(2)) or ""), diff)


def provenance(entry: IndexEntry, *, author_emails: bool = False) -> dict[str, Any]:
    """Who wrote the record, from where, and what a person decided about it (e-mail addresses
    only with ``author_emails``)."""
    fm = entry.frontmatter
    return {
        "source": _text(fm.get("source")),
        "author": published_person(fm.get("author"), author_emails=author_emails),
        "repo_commit": _text(fm.get("repoCommit")),
        "session_id": _text(fm.get("sessionId")),
        "review": _text(fm.get("review")),
        "reviewed_by": published_person(fm.get("reviewedBy"), author_emails=author_emails),
        "reviewed_at": _when(fm.get("reviewedAt")),
        "review_reason": _text(fm.get("reviewReason")),
    }


def badge(kind: str, modifier: str, text: str) -> str:
    """The one piece of HTML these pages put into Markdown: a badge with a fixed class and text."""
    return f'<span class="memosite-{kind} memosite-{kind}--{modifier}">{text}</span>'


def row_badges(records: Iterable[PublishedRecord]) -> dict[str, str]:
    """Badges the site's view pages put after each link to a record that drifted, went missing
    or waits for review, by the link the views use (relative to the project)."""
    found: dict[str, str] = {}
    for record in records:
        parts = []
        if record.verdict is not None and record.verdict.verdict in NEEDS_REVIEW_VERDICTS:
            parts.append(badge("freshness", record.verdict.verdict, record.verdict.verdict))
        if record.pending:
            parts.append(badge("review", "pending", "unreviewed"))
        if parts:
            found[link_for(record.entry)] = " ".join(parts)
    return found


def with_row_badges(markdown: str, badges: Mapping[str, str]) -> str:
    """A view's Markdown with each badge placed after the links to its record."""
    for link, html in badges.items():
        markdown = markdown.replace(f"]({link})", f"]({link}) {html}")
    return markdown


# --- pages -------------------------------------------------------------------------------------


@dataclass
class TrustPages:
    """What one project's trust pages are made from."""

    prefix: str
    project: str
    records: Sequence[PublishedRecord]
    pending: int  # records waiting for review (published only when the build includes them)
    include_pending: bool
    conflicts: Sequence[Conflict]
    hidden: frozenset[str]  # record files the site leaves out (pending, not included)
    author_emails: bool = False  # publish authors' e-mail addresses

    @property
    def base(self) -> str:
        return f"{self.prefix}/{self.project}"

    def _diff(self, diff: str) -> str:
        return diff_without_emails(diff, author_emails=self.author_emails)

    def needs_review_page(self, env: jinja2.Environment) -> SitePage:
        # Missing code first (the record may describe nothing that exists), then drifted.
        listed = sorted(
            (r for r in self.records if needs_review(r)),
            key=lambda r: (r.verdict is None or r.verdict.verdict != "missing", r.entry.title.casefold(), r.src_uri),
        )
        items = [
            {
                "title": r.entry.title,
                "kind": r.entry.kind,
                "link": link_for(r.entry),
                "freshness": freshness(r.verdict),
                "pending": r.pending,
            }
            for r in listed
        ]
        markdown = env.get_template("site/needs-review.md.j2").render(project=self.project, records=items)
        return SitePage(
            f"{self.base}/{NEEDS_REVIEW_PAGE}", markdown, "trust", f"Needs review: cited code changed — {self.project}"
        )

    def review_page(self, env: jinja2.Environment, pending: Sequence[PendingRecord]) -> SitePage:
        published = {r.entry.path for r in self.records}
        items = [
            {
                "title": p.title,
                "id": p.id,
                "kind": p.kind,
                "source": p.source,
                "author": published_person(p.author, author_emails=self.author_emails),
                "updated": _when(p.updated),
                "replaces": p.replaces,
                "link": link_for_path(p.path) if p.path in published else None,
                "diff": code_block(self._diff(p.diff or "(no change)\n"), "diff"),
            }
            for p in pending
            if p.path in published
        ]
        markdown = env.get_template("site/review.md.j2").render(project=self.project, records=items)
        return SitePage(f"{self.base}/{REVIEW_PAGE}", markdown, "trust", f"Review: unreviewed records — {self.project}")

    def conflicts_page(self, env: jinja2.Environment, vault: Vault) -> SitePage:
        published = {r.entry.path for r in self.records}
        items = []
        sidecars = Counter(conflict.path for conflict in self.conflicts)
        for conflict in self.conflicts:
            withheld = not self.include_pending and (
                conflict.path in self.hidden or _pending_file(vault, conflict.sidecar)
            )
            items.append(
                {
                    "path": conflict.path,
                    "sidecar": conflict.sidecar,
                    # A record with several sidecars is resolved one sidecar at a time, by its id.
                    "ref": conflict.short_id if sidecars[conflict.path] > 1 else conflict.ref,
                    "link": link_for_path(conflict.path) if conflict.path in published else None,
                    "local": _version(conflict.local, self.author_emails),
                    "remote": _version(conflict.remote, self.author_emails),
                    "withheld": withheld,
                    "diff": None if withheld else code_block(self._diff(conflict.diff or _EQUAL), "diff"),
                }
            )
        markdown = env.get_template("site/conflicts.md.j2").render(project=self.project, conflicts=items)
        return SitePage(f"{self.base}/{CONFLICTS_PAGE}", markdown, "trust", f"Conflicts — {self.project}")


def _version(info: Any, author_emails: bool) -> dict[str, Any]:
    return {
        "exists": info.exists,
        "updated": _when(info.updated),
        "author": published_person(info.author, author_emails=author_emails),
        "authored_at": _when(info.authored_at),
        "commit": info.commit,
        "uncommitted": info.uncommitted,
    }


def _pending_file(vault: Vault, relative: str) -> bool:
    """Whether a sidecar holds a version that waits for review (kept off a build without them)."""
    try:
        text = (vault.root / relative).read_text(encoding="utf-8")
        return is_pending_review(parse_record(text, validate=False).frontmatter)
    except (OSError, UnicodeDecodeError, InvalidRecord):
        return False
