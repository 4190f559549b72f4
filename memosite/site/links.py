"""What links to a record, for the "Links here" section of its page: the records it supersedes and
that supersede it (the whole chain, oldest first, as a short timeline), the records that cite the
same files, and the records whose body links to it.

Everything is computed from the published index rows of one project, once per build: a chain is
followed through ``supersedes`` and ``superseded_by`` (a cycle written by hand ends it), a link is
a Markdown link to the record's file or page (``../traps/<slug>.md``) or a wiki link naming its id
or slug (``[[<id>]]``). Titles are data: templates pass them through ``md``.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from urllib.parse import unquote

from memosite.index import IndexEntry
from memosite.kinds import RECORD_DIRS
from memosite.site.sitepage import relative_path
from memosite.views import link_for

# Each list of a page shows this many records and counts the rest.
SHOWN = 20
_MARKDOWN_LINK = re.compile(r"\]\(\s*<?([^)\s>]+)")
_WIKI_LINK = re.compile(r"\[\[([^\]|#\n]+)")
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


@dataclass(frozen=True)
class LinkedRecord:
    """Another record as a page names it: its title, a link relative to the page, its day and
    status; ``current`` marks the page's own record in a timeline."""

    title: str
    link: str
    day: str
    status: str
    kind: str
    current: bool = False


@dataclass(frozen=True)
class SharedCode:
    record: LinkedRecord
    paths: tuple[str, ...]  # the cited files both records name


@dataclass(frozen=True)
class LinksHere:
    """One record's "Links here"; equal values render equal sections (the page memo compares them)."""

    chain: tuple[LinkedRecord, ...] = ()  # oldest first, this record included; empty when alone
    same_code: tuple[SharedCode, ...] = ()
    same_code_more: int = 0
    linking: tuple[LinkedRecord, ...] = ()
    linking_more: int = 0

    @property
    def empty(self) -> bool:
        return not (self.chain or self.same_code or self.linking)


def cited_paths(entry: IndexEntry) -> tuple[str, ...]:
    """The repository files a record cites (its ``cites``), as written."""
    cites = entry.frontmatter.get("cites")
    if not isinstance(cites, list):
        return ()
    paths = (item.get("path") for item in cites if isinstance(item, dict))
    return tuple(dict.fromkeys(p for p in paths if isinstance(p, str) and p))


def _kind_dir(entry: IndexEntry) -> str:
    parts = entry.path.split("/")
    return parts[2] if len(parts) > 3 else ""


def link_targets(body: str) -> set[tuple[str, str]]:
    """``(kind dir or "", name)`` of every record a body links to (``name`` a slug or an id)."""
    found: set[tuple[str, str]] = set()
    if not may_link(body):
        return found
    for raw in _MARKDOWN_LINK.findall(body):
        if _SCHEME.match(raw) or raw.startswith("#"):
            continue
        path = unquote(raw.split("#", 1)[0].split("?", 1)[0]).rstrip("/")
        name = posixpath.basename(path)
        if name.endswith(".md"):
            name = name[:-3]
        if not name or name in ("index", "..", "."):
            continue
        directory = posixpath.basename(posixpath.dirname(path))
        found.add((directory if directory in RECORD_DIRS else "", name))
    for name in _WIKI_LINK.findall(body):
        if name.strip():
            found.add(("", name.strip()))
    return found


def may_link(body: str) -> bool:
    """Whether ``body`` holds a "]" (a Markdown link's target follows one) or a "[" (a wiki link
    starts with two), without which neither link pattern can match. Most bodies link nowhere, and
    looking for one character runs at memory speed, far faster than either pattern does."""
    return "]" in body or "[" in body


_NO_LINKS: frozenset[tuple[str, str]] = frozenset()
# (kind dir or "", a slug, an id or a file name) -> the records a link by that name may reach.
_ByName = dict[tuple[str, str], list[IndexEntry]]


@dataclass
class ProjectLinks:
    """The link graph of one project's published records."""

    entries: Sequence[IndexEntry]
    # path -> (the entry, what its body links to): a long-running process's memo, so that only
    # bodies that changed are searched for links again.
    targets: dict[str, tuple[IndexEntry, frozenset[tuple[str, str]]]] | None = None
    _by_id: dict[str, IndexEntry] = field(default_factory=dict, init=False)
    _successors: dict[str, list[IndexEntry]] = field(default_factory=dict, init=False)
    _by_path: dict[str, list[IndexEntry]] = field(default_factory=dict, init=False)
    _linked_from: dict[str, list[IndexEntry]] = field(default_factory=dict, init=False)
    _names: tuple[_ByName, _ByName] | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        linking: list[tuple[IndexEntry, frozenset[tuple[str, str]]]] = []
        for entry in self.entries:
            self._by_id.setdefault(entry.id, entry)
            if entry.supersedes:
                self._successors.setdefault(entry.supersedes, []).append(entry)
            for path in cited_paths(entry):
                self._by_path.setdefault(path, []).append(entry)
            links = self._links_of(entry)
            if links:
                linking.append((entry, links))
        if not linking:
            return  # no body links anywhere: no record needs to be found by its names
        by_name = self._names_of_records()[0]
        for entry, links in linking:
            targets = {t.path for key in links for t in by_name.get(key, ())}
            targets.discard(entry.path)
            for path in targets:
                self._linked_from.setdefault(path, []).append(entry)

    def _names_of_records(self) -> tuple[_ByName, _ByName]:
        """The records by each name a link may give them (``(kind dir or "", name)``): their own
        (the slug in its kind's directory and alone, the id), and their files' where a file is
        named apart from its slug (MkDocs resolves a page's Markdown link by the file it names).
        Made when a body first links somewhere."""
        if self._names is None:
            by_name: _ByName = {}
            by_file: _ByName = {}
            for entry in self.entries:
                kind_dir, slug = _kind_dir(entry), entry.slug
                by_name.setdefault((kind_dir, slug), []).append(entry)
                if kind_dir:
                    by_name.setdefault(("", slug), []).append(entry)
                if entry.id != slug:
                    by_name.setdefault(("", entry.id), []).append(entry)
                stem = entry.path.rpartition("/")[2].removesuffix(".md")
                if stem != slug:
                    for key in ((kind_dir, stem), ("", stem)):
                        by_file.setdefault(key, []).append(entry)
            self._names = (by_name, by_file)
        return self._names

    def _links_of(self, entry: IndexEntry) -> frozenset[tuple[str, str]]:
        if not may_link(entry.body):
            return _NO_LINKS
        if self.targets is None:
            return frozenset(link_targets(entry.body))
        held = self.targets.get(entry.path)
        if held is not None and held[0] is entry:
            return held[1]
        found = frozenset(link_targets(entry.body))
        self.targets[entry.path] = (entry, found)
        return found

    def links_basis(self, entry: IndexEntry) -> tuple[IndexEntry | None, ...]:
        """Every record :meth:`links_here` reads for ``entry``, in order: two bases holding the
        same objects (index rows are new objects when their file changed) give equal answers."""
        parts: list[IndexEntry | None] = [entry, *self.chain(entry), None]
        for path in cited_paths(entry):
            parts += self._by_path.get(path, ())
            parts.append(None)
        parts += self._linked_from.get(entry.path, ())
        return tuple(parts)

    def links_to(self, entry: IndexEntry) -> tuple[str, ...]:
        """The files of the records ``entry``'s body may link to, sorted: its page's links resolve
        (or stay as written) by whether those pages exist, so a record added or removed under a
        name the body links to changes the page even though the body did not change."""
        links = self._links_of(entry)
        if not links:
            return ()
        by_name, by_file = self._names_of_records()
        found = {t.path for key in links for t in (*by_name.get(key, ()), *by_file.get(key, ()))}
        return tuple(sorted(found))

    def chain(self, entry: IndexEntry) -> list[IndexEntry]:
        """The supersession chain through ``entry``, oldest first (just ``entry`` when alone)."""
        if not entry.supersedes and self._next(entry) is None:
            return [entry]  # most records are alone
        seen = {entry.path}
        older: list[IndexEntry] = []
        current = entry
        while current.supersedes and (previous := self._by_id.get(current.supersedes)) is not None:
            if previous.path in seen:
                break
            seen.add(previous.path)
            older.append(previous)
            current = previous
        newer: list[IndexEntry] = []
        current = entry
        while (following := self._next(current)) is not None and following.path not in seen:
            seen.add(following.path)
            newer.append(following)
            current = following
        return [*reversed(older), entry, *newer]

    def _next(self, entry: IndexEntry) -> IndexEntry | None:
        named = self._by_id.get(entry.superseded_by or "")
        if named is not None:
            return named
        candidates = self._successors.get(entry.id)
        return min(candidates, key=lambda e: (e.created or "", e.path)) if candidates else None

    def links_here(self, entry: IndexEntry) -> LinksHere:
        """What the record's page lists under "Links here"."""
        here = posixpath.dirname(link_for(entry))
        chain = self.chain(entry)
        shared: dict[str, tuple[IndexEntry, list[str]]] = {}
        for path in cited_paths(entry):
            for other in self._by_path.get(path, ()):
                if other.path != entry.path:
                    shared.setdefault(other.path, (other, []))[1].append(path)
        same = sorted(shared.values(), key=lambda item: (-len(item[1]), item[0].title.casefold(), item[0].path))
        linking = sorted(self._linked_from.get(entry.path, ()), key=lambda e: (e.title.casefold(), e.path))
        return LinksHere(
            chain=tuple(_named(e, here, current=e is entry) for e in chain) if len(chain) > 1 else (),
            same_code=tuple(SharedCode(_named(e, here), tuple(paths)) for e, paths in same[:SHOWN]),
            same_code_more=max(len(same) - SHOWN, 0),
            linking=tuple(_named(e, here) for e in linking[:SHOWN]),
            linking_more=max(len(linking) - SHOWN, 0),
        )


def _named(entry: IndexEntry, here: str, *, current: bool = False) -> LinkedRecord:
    return LinkedRecord(
        title=entry.title,
        link=relative_path(link_for(entry), here or "."),
        day=(entry.created or "")[:10],
        status=entry.status,
        kind=entry.kind,
        current=current,
    )


def project_links(entries: Iterable[IndexEntry]) -> ProjectLinks:
    return ProjectLinks(list(entries))
