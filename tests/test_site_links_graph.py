"""A project's link graph skips the bodies that hold no bracket (most link nowhere) and names each
record once per name; what links to a record and what a record's body may link to must be what
reading every body with both link patterns says, for any bodies: links of every form, brackets that
are no link, names shared by several records, files named apart from their slug, text in many
scripts."""

from __future__ import annotations

import posixpath
import re
from urllib.parse import unquote

from hypothesis import given, settings
from hypothesis import strategies as st
from site_support import SCRIPTS

from memosite.index import IndexEntry
from memosite.kinds import RECORD_DIRS
from memosite.site.links import ProjectLinks, link_targets, may_link

_NAMES = ["cache", "кэш", "缓存", "db-lock", "🚀"]
_LINK_FORMS = [
    "[see]({name}.md)",
    "[see](../traps/{name}.md)",
    "[see](../decisions/{name}.md#why)",
    "[see]( <../traps/{name}.md> )",
    "[[{name}]]",
    "[[{name}|shown]]",
    "[[ {name} ]]",
    "[see](https://example.org/{name}.md)",
    "[see](#{name})",
    "[see] ({name}.md)",
    "- [ ] {name}",
    "]({name}",
    "[[",
    "[]()",
]
_PIECE = st.one_of(
    st.sampled_from(SCRIPTS),
    st.builds(str.format, st.sampled_from(_LINK_FORMS), name=st.sampled_from(_NAMES)),
    st.text(alphabet="[]()<>#|/.: \nab", max_size=12),
)
_BODY = st.lists(_PIECE, max_size=5).map(" ".join)


def _reference_targets(body: str) -> set[tuple[str, str]]:
    """Both link patterns run over the whole body, whatever it holds."""
    found: set[tuple[str, str]] = set()
    for raw in re.findall(r"\]\(\s*<?([^)\s>]+)", body):
        if re.match(r"^[A-Za-z][A-Za-z0-9+.-]*:", raw) or raw.startswith("#"):
            continue
        path = unquote(raw.split("#", 1)[0].split("?", 1)[0]).rstrip("/")
        name = posixpath.basename(path).removesuffix(".md")
        if name and name not in ("index", "..", "."):
            directory = posixpath.basename(posixpath.dirname(path))
            found.add((directory if directory in RECORD_DIRS else "", name))
    for name in re.findall(r"\[\[([^\]|#\n]+)", body):
        if name.strip():
            found.add(("", name.strip()))
    return found


@settings(max_examples=500, deadline=None)
@given(body=st.one_of(_BODY, st.text(max_size=60)))
def test_a_body_without_brackets_links_nowhere_and_one_with_them_is_read_in_full(body: str) -> None:
    assert link_targets(body) == _reference_targets(body)
    if not may_link(body):
        assert _reference_targets(body) == set()


def _entry(n: int, kind_dir: str, slug: str, stem: str, record_id: str, body: str) -> IndexEntry:
    kind = {"traps": "trap", "decisions": "decision"}[kind_dir]
    return IndexEntry(
        f"projects/demo/{kind_dir}/{stem}.md",
        "demo",
        kind,
        record_id,
        slug,
        f"{SCRIPTS[n % 6]} {n}",
        "active",
        body=body,
    )


_ROW = st.tuples(
    st.sampled_from(["traps", "decisions"]),
    st.sampled_from(_NAMES),
    st.sampled_from([None, *_NAMES]),
    st.sampled_from([None, *_NAMES]),
    _BODY,
)


@settings(max_examples=300, deadline=None)
@given(rows=st.lists(_ROW, max_size=8, unique_by=lambda row: (row[0], row[2] or row[1])), remembered=st.booleans())
def test_links_here_and_links_to_are_what_every_body_says(
    rows: list[tuple[str, str, str | None, str | None, str]], remembered: bool
) -> None:
    entries = [
        _entry(n, kind_dir, slug, stem or slug, record_id or slug, body)
        for n, (kind_dir, slug, stem, record_id, body) in enumerate(rows)
    ]

    def names(entry: IndexEntry) -> set[tuple[str, str]]:
        kind_dir = entry.path.split("/")[2]
        return {(kind_dir, entry.slug), ("", entry.slug), ("", entry.id)}

    def files(entry: IndexEntry) -> set[tuple[str, str]]:
        stem = posixpath.basename(entry.path).removesuffix(".md")
        return set() if stem == entry.slug else {(entry.path.split("/")[2], stem), ("", stem)}

    graph = ProjectLinks(entries, {} if remembered else None)
    for entry in entries:
        links = _reference_targets(entry.body)
        assert graph.links_to(entry) == tuple(sorted({t.path for t in entries if links & (names(t) | files(t))}))
        linking = [e for e in entries if e.path != entry.path and _reference_targets(e.body) & names(entry)]
        linking.sort(key=lambda e: (e.title.casefold(), e.path))
        assert [r.title for r in graph.links_here(entry).linking] == [e.title for e in linking]
