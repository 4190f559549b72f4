"""Compiled views: TRAPS.md, DECISIONS.md, INDEX.md, PROMPTS.md, SESSIONS.md, rendered with Jinja.

Each record's fragments are rendered once, when it is indexed, and kept in the index; a view is
assembled from them. A view stays readable, and cheap to write, at any size:

* a section that shows records in full (live traps, most severe first; accepted and proposed
  decisions) shows its first :data:`VIEW_ROWS`, then up to :data:`LINE_ROWS` more in one line each;
  any other section (inactive traps, expired and archived decisions, superseded ones, prompts,
  sessions, each kind's table in INDEX.md) shows its first :data:`LINE_ROWS`;
* after a cut section, a line says how many it leaves out (live traps by severity) and where they
  all are: INDEX.md, the kind's monthly inventory and the site;
* a kind with more records than INDEX.md lists gets its whole inventory beside the views, one file
  per month of ``updated``: ``INDEX.<kind dir>.<YYYY-MM>.md``, newest first.

A write compiles only the views its kinds appear in (and any view missing), and re-emits only the
monthly files whose records changed; a file whose new content equals the old one apart from its
``Last compiled`` stamp is left untouched, stamp included. state and scratch records never appear in
a view.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, BinaryIO

import jinja2

from memosite.codelayers import shown_layer
from memosite.errors import SafetyViolation
from memosite.index import Index, IndexEntry, fragments
from memosite.kinds import DURABLE_KINDS, KIND_FACTS, UNDATED, VIEW_FILES, inventory_file, is_view_file
from memosite.reviewstate import is_pending
from memosite.schema import format_iso, utc_now
from memosite.template_env import VaultSandbox, environment_for, sandbox_refusals
from memosite.vault import Vault, atomic_write_bytes, warn

# (section name, project, kind, rows shown, rows in all) -> Markdown placed after a cut section
MoreNote = Callable[[str, str, str, int, int], str]
# kind -> record files a rendering leaves out (records pending review have no rows to leave out)
Hidden = Mapping[str, Collection[str]]

KIND_TITLES = {kind: facts.title for kind, facts in KIND_FACTS.items() if facts.durable}
SEVERITY_NAMES = {4: "critical", 3: "high", 2: "medium", 1: "low", 0: "unrated"}

# The bounds of a compiled view (see the module docstring): records in full, then lines.
VIEW_ROWS = 50
LINE_ROWS = 100
INVENTORY_TEMPLATE = "views/inventory.md.j2"
# The stamp a view carries; two renderings that differ only there are the same view.
_STAMP = re.compile(rb"^> Last compiled: [^\n]*$", re.MULTILINE)
# The instant a view file says it was compiled at (its stamp), read from its head; its line may
# end in "\r\n" (a Windows checkout with core.autocrlf, or an editor, wrote the file so).
_STAMPED_AT = re.compile(rb"^> Last compiled: (\d{4}-\d\d-\d\dT[\d:.]+Z)[ \t]*\r?$", re.MULTILINE)
_STAMP_HEAD_BYTES = 4096
_STAMP_CHUNK_BYTES = 1 << 20
# The stamp as a template writes it (memosite's own do; an override may too).
_STAMP_SOURCE = re.compile(r"^> Last compiled: \{\{-? *compiled *-?\}\}[ \t]*$", re.MULTILINE)
# (templates checksum, template) -> whether it shows the compile instant outside its stamp.
_SHOWS_INSTANT: dict[tuple[str, str], bool] = {}
_ROW_COLUMN = re.compile(r"\brow_(?:view|index|line)\b")

DIGEST_CHARS = 320
_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n")
_FENCE = re.compile(r"^\s*(```|~~~)", re.MULTILINE)


# What a decision record's opening holds besides what it says: its metadata lines (adr-tools'
# "Date: …", MADR's "Deciders: …"), the paragraph under a "Status" heading, and editor comments.
_METADATA_LINE = re.compile(
    r"^\s*(?:[-*+]\s+)?[*_]*(date|status|deciders?|decision[- ]makers|consulted|informed|technical story|authors?|tags"
    r"|supersedes|superseded by|amends|amended by)[*_]*\s*:",
    re.IGNORECASE,
)
_STATUS_HEADING = re.compile(
    r"^#+\s*(status|statut|estado|stato|статус|κατάσταση|状态|狀態|ステータス)\s*$", re.IGNORECASE
)
_COMMENT = re.compile(r"^<!--.*?-->$", re.DOTALL)


def digest(body: str, limit: int = DIGEST_CHARS) -> tuple[str, bool]:
    """What a compiled view shows of a body, and whether anything was left out.

    A short body is shown whole. A longer one is summed up by its first paragraph that says
    something (not a heading, a status section, metadata lines or an HTML comment; up to a code
    fence, cut at a word near ``limit``): a view with thousands of records stays readable and
    cheap to rewrite, and the record's own page holds the rest.
    """
    text = body.strip()
    if len(text) <= limit:
        return text, False
    paragraphs = [p.strip() for p in _PARAGRAPH_BREAK.split(text) if p.strip()]
    first = next(iter(_telling_paragraphs(paragraphs)), paragraphs[0])
    fence = _FENCE.search(first)
    if fence is not None:
        first = first[: fence.start()].rstrip() or "(starts with a code block)"
    if len(first) > limit:
        first = first[:limit].rsplit(" ", 1)[0].rstrip() + " …"
    return first, first != text


def _telling_paragraphs(paragraphs: list[str]) -> Iterable[str]:
    under_status = False
    for paragraph in paragraphs:
        if paragraph.startswith("#"):
            under_status = _STATUS_HEADING.match(paragraph) is not None
            continue
        lines = paragraph.splitlines()
        if under_status or _COMMENT.match(paragraph) or all(_METADATA_LINE.match(line) for line in lines):
            continue
        yield paragraph


def env_for(vault: Vault) -> jinja2.Environment:
    """The vault's template environment (its ``templates/`` over memosite's own)."""
    return environment_for(vault, {"digest": digest})[0]


def link_for_path(path: str) -> str:
    """A record's file relative to its project directory (where the views live)."""
    return path.split("/", 2)[2] if path.startswith("projects/") else path


def link_for(entry: IndexEntry) -> str:
    return link_for_path(entry.path)


@dataclass
class _RowView:
    """What the row macros see: the entry plus its link."""

    entry: IndexEntry
    link: str

    def __getattr__(self, name: str) -> Any:
        return getattr(self.entry, name)

    @property
    def shown_layer(self) -> str:
        return shown_layer(self.entry.layer)


def render_fragments(entry: IndexEntry, env: jinja2.Environment) -> None:
    """Fill ``row_view`` / ``row_index`` / ``row_line`` of an entry from ``rows.md.j2``. A record
    waiting for review gets none: no view shows or counts it until a person approves it."""
    if entry.kind not in DURABLE_KINDS or is_pending(entry.frontmatter):
        entry.row_view = entry.row_index = entry.row_line = ""
        return
    try:
        with sandbox_refusals(env):  # macros run outside render(), which reports refusals itself
            macros: Any = env.get_template("rows.md.j2").module
            view = _RowView(entry, link_for(entry))
            macro_name = KIND_FACTS[entry.kind].row_macro
            entry.row_view = str(getattr(macros, macro_name)(view)) if macro_name else ""
            entry.row_index = str(macros.index_row(view))
            entry.row_line = str(macros.line(view))
    except (SafetyViolation, jinja2.TemplateError, AttributeError, TypeError) as exc:
        if not isinstance(env, VaultSandbox):
            raise  # memosite's own rows always render: anything else is a bug to see
        # A vault's rows.md.j2 (a teammate's, synced) that cannot render a row costs the views
        # their rows, not the index: reads, writes and sync go on.
        entry.row_view = entry.row_index = entry.row_line = ""
        if not env.rows_failed:
            env.rows_failed = True
            reason = exc.message if isinstance(exc, SafetyViolation) else f"{type(exc).__name__}: {exc}"
            warn(f"the views show no rows: the vault's templates/rows.md.j2 cannot render one ({reason})")


# --- sections --------------------------------------------------------------------------------


def _as_written(stat: os.stat_result) -> tuple[int, int, int, int]:
    """What tells a view file apart from the one this process wrote: its inode (a write replaces
    the file), size, modification and status-change times. The status-change time is there for an
    edit that keeps the size and puts the modification time back (os.utime moves it too)."""
    return stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns


def _last_change_ns(stat: os.stat_result) -> int:
    """The later of a file's modification and status-change times: what the index remembers of a
    monthly file it wrote (one number, for every process). Putting the modification time back
    after an edit moves the status-change time (Windows reports the creation time there: the
    modification time is then the later one)."""
    return max(stat.st_mtime_ns, stat.st_ctime_ns)


@dataclass
class _Compiler:
    """The sections of one view of one project at one instant.

    For the vault's own files (``site`` False) sections are bounded as the module docstring says.
    The site asks for ``limit`` rows of each section's own rendering (all of them when None) and
    adds ``more`` after a cut one; ``hidden`` leaves records out of every section and count.
    """

    index: Index
    project: str
    now_iso: str
    site: bool = False
    limit: int | None = None
    more: MoreNote | None = None
    hidden: Hidden = field(default_factory=dict)
    _months: dict[str, dict[str, int]] | None = None
    _until: dict[str, str | None] = field(default_factory=dict)  # kind -> its first expiry after now
    _live: dict[str, dict[int, int]] = field(default_factory=dict)  # kind -> live rows by severity
    _reads: dict[str, set[str]] = field(default_factory=dict)  # kind -> fragment columns the view shows

    def section(
        self, spec: fragments.Section, kind: str, *, in_full: bool = False, note: bool = True
    ) -> tuple[int, str]:
        """A section's row count and Markdown (its shown rows and, when cut, the note after them).
        ``in_full``: the section shows records in full, so the vault's files list more in brief;
        ``note``: a vault file says after a cut section how many it leaves out and where they are.
        The vault's sections are remembered until their kind changes or one of its records
        expires: a write compiles the sections of the kinds it touched, the rest are at hand."""
        if self.site:
            return self._section(spec, kind, in_full=in_full, note=note)
        # The rows it shows render these fragment columns (the brief lines after records in full:
        # row_line): a change of the kind's fragments in other columns alone leaves it as it is.
        reads = frozenset(_ROW_COLUMN.findall(spec.expression)) | ({"row_line"} if in_full else frozenset())
        self._reads.setdefault(kind, set()).update(reads)
        key = (self.project, kind, "section", spec.name, in_full, note)
        remembered = self._remembered(key)
        if remembered is None:
            remembered = self._remember(key, kind, self._section(spec, kind, in_full=in_full, note=note), reads)
        count, text = remembered
        return int(count), str(text)

    def count(self, spec: fragments.Section, kind: str) -> int:
        """How many rows ``spec`` has: the live rows and the others from the chunk counts (see
        :meth:`by_severity`), any other section from an index."""
        hidden = self.hidden.get(kind, ())
        if self.site and hidden:
            return fragments.section_count(self.index, spec, self.project, kind, self.now_iso, hidden)
        if spec.where in (fragments.LIVE_COUNT.where, fragments.TRAPS_INACTIVE.where):
            return sum(self.by_severity(spec, kind).values())
        if not spec.where:
            return self.kind_rows(kind)  # every row of the kind: the chunk counts, not a scan
        return fragments.section_count(self.index, spec, self.project, kind, self.now_iso)

    def by_severity(self, spec: fragments.Section, kind: str) -> dict[int, int]:
        """The rows of the live section (``LIVE_COUNT``, ``TRAPS_ACTIVE``) or of its complement
        (``TRAPS_INACTIVE``) by severity weight, from the chunk counts less the live rows that
        have expired; any other section from an index."""
        if spec.where not in (fragments.LIVE_COUNT.where, fragments.TRAPS_INACTIVE.where):
            return fragments.severity_counts(self.index, spec, self.project, kind, self.now_iso)
        if kind not in self._live:
            self._live[kind] = fragments.live_by_severity(self.index, self.project, kind, self.now_iso)
        live = self._live[kind]
        if spec.where == fragments.LIVE_COUNT.where:
            return dict(live)
        every = fragments.rows_by_severity(self.index, self.project, kind)
        return {weight: count - live.get(weight, 0) for weight, count in every.items() if count > live.get(weight, 0)}

    def _remembered(self, key: tuple[Any, ...]) -> Any:
        self.index.follow_other_connections()  # another process's write drops every section
        found = self.index.view_memo.get(key)
        if found is None:
            return None
        since, until, value, _reads = found
        return value if since <= self.now_iso and (until is None or self.now_iso < until) else None

    def _remember(self, key: tuple[Any, ...], kind: str, value: Any, reads: frozenset[str]) -> Any:
        """Remember ``value`` under ``key`` from now until the first record of ``kind`` expires;
        ``reads``: the fragment columns it shows of the kind's rows (see
        :func:`memosite.index.fragments.replace_fragment`)."""
        if kind not in self._until:
            self._until[kind] = fragments.kind_valid_until(self.index, self.project, kind, self.now_iso)
        self.index.view_memo[key] = (self.now_iso, self._until[kind], value, reads)
        return value

    def view_current(self, name: str, path: Path, templates: str) -> bool:
        """Whether the vault file ``name`` at ``path`` is as this process last wrote it and would
        be written the same now: none of its kinds' fragments (nor what it reads of the records
        table) changed since, none of its records expired, its templates are the same and the
        file is the one it wrote, untouched since (see :func:`_as_written`)."""
        written = {self._remembered((self.project, kind, "view", name)) for kind in _VIEW_KINDS[name]}
        if len(written) != 1 or None in written:
            return False
        (known,) = written
        try:
            stat = path.stat()
        except FileNotFoundError:
            return False
        return bool(known == (templates, *_as_written(stat)))

    def expired_since_compiled(self, name: str, path: Path) -> bool:
        """Whether a record the view file ``name`` at ``path`` shows expired after the instant its
        stamp names and by now: it then reads differently from what a compile writes now, though
        no write touched its kinds. The stamp is looked for in the file's head, then anywhere in
        it. False for a file without a stamp (a vault's template may leave it out): when it was
        compiled is not known. A file found as a compile writes it (:meth:`remember_compiled`) and
        untouched since is judged by when that compile said it would read differently: its stamp
        may be older (a compile that changes nothing but the stamp leaves the file as it is)."""
        known = fragments.written_file(self.index, self.project, name)
        if known is not None:
            try:
                stat = path.stat()
            except OSError:
                return False
            if (_last_change_ns(stat), stat.st_size) == (known.changed_ns, known.size):
                return known.valid_until is not None and known.valid_until <= self.now_iso
        try:
            with path.open("rb") as file:
                found = _stamp_in(file)
        except OSError:
            return False
        if found is None:
            return False
        compiled = found.group(1).decode("ascii")
        for kind in _VIEW_KINDS[name]:
            first = fragments.kind_valid_until(self.index, self.project, kind, compiled)
            if first is not None and first <= self.now_iso:
                return True
        return False

    def remember_compiled(self, name: str, path: Path) -> None:
        """Note in the index (for every process) that the view file ``name`` at ``path`` is as a
        compile writes it now, until the first of its records expires."""
        firsts = []
        for kind in _VIEW_KINDS[name]:
            if kind not in self._until:
                self._until[kind] = fragments.kind_valid_until(self.index, self.project, kind, self.now_iso)
            firsts.append(self._until[kind])
        until = min((first for first in firsts if first is not None), default=None)
        stat = path.stat()
        with self.index.cache_transaction():
            fragments.remember_file(
                self.index, self.project, name, fragments.WrittenFile(until, _last_change_ns(stat), stat.st_size)
            )

    def remember_view(self, name: str, path: Path, templates: str) -> None:
        """Note the vault file ``name`` just written (or found the same) at ``path`` as current, under
        each kind it shows: a change of any of them forgets it (memosite.index.fragments)."""
        written = (templates, *_as_written(path.stat()))
        for kind in _VIEW_KINDS[name]:
            reads = frozenset(self._reads.get(kind, ()))
            self._remember((self.project, kind, "view", name), kind, written, reads)

    def _section(self, spec: fragments.Section, kind: str, *, in_full: bool, note: bool) -> tuple[int, str]:
        hidden = self.hidden.get(kind, ())
        count = self.count(spec, kind)
        if not count:
            return 0, ""
        # Few of the kind's rows in the section: find them in an index instead of reading the kind.
        sparse = count * 4 < self.kind_rows(kind)
        if self.site:
            limit = -1 if self.limit is None else self.limit
            text = self._rows(spec, kind, limit=limit, hidden=hidden, sparse=sparse)
            if self.limit is not None and count > self.limit and self.more is not None:
                text += self.more(spec.name, self.project, kind, self.limit, count)
            return count, text
        shown = VIEW_ROWS if in_full else LINE_ROWS
        text = self._rows(spec, kind, limit=shown, sparse=sparse)
        if in_full and count > shown:
            brief = self._rows(spec, kind, limit=LINE_ROWS, offset=shown, expression=fragments.LINE, sparse=sparse)
            text += f"**More {_noun(spec.name, kind, 2)}, in brief:**\n\n{brief}\n"
            shown = min(count, shown + LINE_ROWS)
        if count > shown and note:
            text += self.left_out(spec.name, kind, shown, count, spec if kind == "trap" else None)
        return count, text

    def _rows(
        self,
        spec: fragments.Section,
        kind: str,
        *,
        limit: int,
        offset: int = 0,
        expression: str | None = None,
        hidden: Collection[str] = (),
        sparse: bool = False,
    ) -> str:
        return fragments.section_rows(
            self.index,
            spec,
            self.project,
            kind,
            self.now_iso,
            limit=limit,
            offset=offset,
            expression=expression,
            hidden=hidden,
            sparse=sparse,
        ).decode("utf-8")

    def kind_rows(self, kind: str) -> int:
        """How many records of ``kind`` have fragments."""
        return sum(self.months(kind).values())

    def left_out(
        self, name: str, kind: str, shown: int, count: int, by_severity_of: fragments.Section | None = None
    ) -> str:
        """The line after a cut section ``name`` of a vault file: how many it leaves out (by
        severity, counted over ``by_severity_of``), and where they all are. (A section is cut only
        when its kind has more records than INDEX.md lists: the monthly files then hold them.)"""
        rest = count - shown
        detail = ""
        if by_severity_of is not None:
            # The rows are in severity order: what is left out is the least severe part.
            by_severity = self.by_severity(by_severity_of, kind)
            left, parts = rest, []
            for weight in sorted(by_severity):
                taken = min(left, by_severity[weight])
                if taken:
                    parts.append((weight, taken))
                left -= taken
            detail = " (" + ", ".join(f"{n:,} {SEVERITY_NAMES.get(w, 'unrated')}" for w, n in reversed(parts)) + ")"
        title = KIND_TITLES[kind]
        return (
            f"\n*{rest:,} more {_noun(name, kind, rest)} {'is' if rest == 1 else 'are'} not shown here{detail}:"
            f" [INDEX.md](INDEX.md#{title.lower()}) lists every one of the {title.lower()}, month by month,"
            " and so does the site (`memosite serve`, or the published site's Memory page).*\n\n"
        )

    def months(self, kind: str) -> dict[str, int]:
        """month → records of ``kind`` (newest month first)."""
        if self._months is None:
            self._months = fragments.month_counts(self.index, self.project)
        return self._months.get(kind, {})

    def has_inventory(self, kind: str) -> bool:
        """Whether ``kind`` has more records than INDEX.md lists (its monthly files hold them all)."""
        return not self.site and sum(self.months(kind).values()) > LINE_ROWS

    def inventory_links(self, kind: str) -> str:
        """The note after a kind's INDEX.md table when the table is cut: its monthly files."""
        if not self.has_inventory(kind):
            return ""
        months = self.months(kind)
        links = " · ".join(
            f"[{month or UNDATED}]({inventory_file(kind, month)}) ({count:,})" for month, count in months.items()
        )
        total = sum(months.values())
        return (
            f"\n*The first {LINE_ROWS} of {total:,} are listed above; all of them, by the month they were last"
            f" updated in: {links}*\n"
        )


def _noun(section: str, kind: str, count: int) -> str:
    words = {
        "traps_active": ("active trap", "active traps"),
        "traps_inactive": ("inactive trap", "inactive traps"),
        "decisions_accepted": ("accepted decision", "accepted decisions"),
        "decisions_proposed": ("proposed decision", "proposed decisions"),
        "decisions_expired": ("expired decision", "expired decisions"),
        "decisions_archived": ("archived decision", "archived decisions"),
        "decisions_superseded": ("superseded decision", "superseded decisions"),
    }.get(section)
    if words is None:
        title = KIND_TITLES.get(kind, kind).lower()
        words = (title.removesuffix("s"), title)
    return words[0] if count == 1 else words[1]


def _traps_context(compiler: _Compiler) -> dict[str, Any]:
    active_count, active = compiler.section(fragments.TRAPS_ACTIVE, "trap", in_full=True)
    inactive_count, inactive = compiler.section(fragments.TRAPS_INACTIVE, "trap")
    return {"active": active, "active_count": active_count, "inactive": inactive, "inactive_count": inactive_count}


_DECISION_SECTIONS = {
    "accepted": (fragments.DECISIONS_ACCEPTED, True),
    "proposed": (fragments.DECISIONS_PROPOSED, True),
    "expired": (fragments.DECISIONS_EXPIRED, False),
    "archived": (fragments.DECISIONS_ARCHIVED, False),
}


def _decisions_context(compiler: _Compiler) -> dict[str, Any]:
    context: dict[str, Any] = {}
    for name, (spec, in_full) in _DECISION_SECTIONS.items():
        count, text = compiler.section(spec, "decision", in_full=in_full)
        context[name] = text
        context[f"{name}_count"] = count
    hidden = compiler.hidden.get("decision", ())
    limit = -1 if compiler.site else LINE_ROWS
    superseded_count, rows = fragments.superseded_decisions(compiler.index, compiler.project, limit, hidden)
    superseded = []
    for row in rows:
        shown = row.successor_path is not None and row.successor_path not in hidden
        superseded.append(
            {
                "title": row.title,
                "link": link_for_path(row.path),
                "successor": row.successor,
                "successor_title": row.successor_title if shown else None,
                "successor_link": link_for_path(row.successor_path) if shown and row.successor_path else None,
            }
        )
    # Records waiting for review (all the site hides) have no fragments, so they are not counted.
    total = fragments.kind_counts(compiler.index, compiler.project).get("decision", 0)
    more = ""
    if superseded_count > len(superseded):
        more = compiler.left_out("decisions_superseded", "decision", len(superseded), superseded_count)
    return {
        **context,
        "superseded": superseded,
        "superseded_count": superseded_count,
        "superseded_more": more,
        "total": total,
    }


def _index_context(compiler: _Compiler) -> dict[str, Any]:
    counts = fragments.kind_counts(compiler.index, compiler.project)
    sections = []
    for kind in DURABLE_KINDS:
        count, active, rows = counts.get(kind, 0), 0, ""
        if count:
            active = compiler.count(fragments.LIVE_COUNT, kind)
            # INDEX.md's own note on a cut table names the kind's monthly files.
            count, rows = compiler.section(fragments.INDEX_ROWS, kind, note=False)
            rows += compiler.inventory_links(kind)
        sections.append({"kind": kind, "title": KIND_TITLES[kind], "count": count, "active": active, "rows": rows})
    return {
        "sections": sections,
        "total": sum(s["count"] for s in sections),
        "total_active": sum(s["active"] for s in sections),
    }


def _inventory_context(kind: str) -> Callable[[_Compiler], dict[str, Any]]:
    def build(compiler: _Compiler) -> dict[str, Any]:
        count, rows = compiler.section(fragments.INVENTORY, kind, note=False)
        rows += compiler.inventory_links(kind)
        return {"rows": rows, "count": count}

    return build


# The kinds whose fragments each view reads (DECISIONS.md also reads the records table: a change
# there forgets every view of the project, see memosite.index.fragments.forget_views).
_VIEW_KINDS: dict[str, tuple[str, ...]] = {
    "TRAPS.md": ("trap",),
    "DECISIONS.md": ("decision",),
    "INDEX.md": DURABLE_KINDS,
    "PROMPTS.md": ("prompt",),
    "SESSIONS.md": ("session",),
}

_CONTEXTS: dict[str, Callable[[_Compiler], dict[str, Any]]] = {
    "TRAPS.md": _traps_context,
    "DECISIONS.md": _decisions_context,
    "INDEX.md": _index_context,
    "PROMPTS.md": _inventory_context("prompt"),
    "SESSIONS.md": _inventory_context("session"),
}


def render_view_bytes(
    vault: Vault,
    project: str,
    name: str,
    now: datetime | None = None,
    *,
    limit: int | None = None,
    more: MoreNote | None = None,
    hidden: Hidden | None = None,
) -> list[bytes]:
    """The UTF-8 Markdown of one compiled view, from the index, as pieces to write in order.

    Without ``limit``, ``more`` and ``hidden`` this is the vault's own file, bounded as the module
    docstring says. The site passes them: each section shows only its first ``limit`` rows (all of
    them when None) followed by ``more(section, project, kind, shown, total)``, and ``hidden``
    (kind -> record files) leaves those records out of every section and count."""
    return [render_view(vault, project, name, now, limit=limit, more=more, hidden=hidden).encode("utf-8")]


def render_view(
    vault: Vault,
    project: str,
    name: str,
    now: datetime | None = None,
    *,
    limit: int | None = None,
    more: MoreNote | None = None,
    hidden: Hidden | None = None,
) -> str:
    """The Markdown of one compiled view, from the index (see :func:`render_view_bytes`)."""
    now_iso = format_iso(now or utc_now())
    site = limit is not None or more is not None or hidden is not None
    compiler = _Compiler(vault.index(), project, now_iso, site, limit, more, hidden or {})
    return _render(vault, compiler, name, env_for(vault))


def _render(vault: Vault, compiler: _Compiler, name: str, env: jinja2.Environment) -> str:
    compiler._reads.clear()
    context = _CONTEXTS[name](compiler)
    return env.get_template(f"views/{name}.j2").render(project=compiler.project, compiled=compiler.now_iso, **context)


def _stamp_in(file: BinaryIO) -> re.Match[bytes] | None:
    """The first stamp of a view file, looked for in its head, then (a vault's template may sign
    the view further down, at its foot) in the rest, a chunk at a time: a file made huge by hand
    is read through, never held whole."""
    carry = b""
    size = _STAMP_HEAD_BYTES
    while chunk := file.read(size):
        data = carry + chunk
        end = data.rfind(b"\n") + 1  # whole lines; the last one, cut, is read with the next chunk
        found = _STAMPED_AT.search(data, 0, end)
        if found is not None:
            return found
        carry = data[end:]
        if len(carry) > _STAMP_HEAD_BYTES:
            carry = b"-"  # a line this long is no stamp: what follows in it starts no line either
        size = _STAMP_CHUNK_BYTES
    return _STAMPED_AT.search(carry)


def shows_compile_instant(env: jinja2.Environment, templates: str, name: str) -> bool:
    """Whether the template ``name`` (or one it includes, imports or extends) shows the compile
    instant anywhere but in its stamp line (a vault's override may): what it renders then reads
    differently at every instant, so no file it wrote is ever current. ``templates``: the checksum
    ``env`` was built for."""
    key = (templates, name)
    if key not in _SHOWS_INSTANT:
        _SHOWS_INSTANT[key] = _reads_compiled(env, name)
    return _SHOWS_INSTANT[key]


def _reads_compiled(env: jinja2.Environment, name: str) -> bool:
    import jinja2.meta

    assert env.loader is not None
    seen: set[str] = set()
    waiting = [name]
    while waiting:
        current = waiting.pop()
        if current in seen:
            continue
        seen.add(current)
        try:
            tree = env.parse(_STAMP_SOURCE.sub("", env.loader.get_source(env, current)[0]))
        except (jinja2.TemplateError, SafetyViolation):
            return True  # not known: taken as showing it (rendering it says what is wrong)
        referenced = list(jinja2.meta.find_referenced_templates(tree))
        if "compiled" in jinja2.meta.find_undeclared_variables(tree) or None in referenced:
            return True  # a template named by an expression is not known either
        waiting += [str(other) for other in referenced]
    return False


def _unstamped(data: bytes) -> bytes:
    return _STAMP.sub(b"", data, count=1)


def _write_if_changed(path: Path, data: bytes) -> bool:
    """Write ``data`` to ``path`` (atomic; views are derived, so no fsync) unless the file already
    holds it apart from its ``Last compiled`` stamp; whether it was written."""
    try:
        # The stamp is of fixed width: a file of another size holds other content, unread.
        old = path.read_bytes() if path.stat().st_size == len(data) else None
    except FileNotFoundError:
        old = None
    if old is not None and _unstamped(old) == _unstamped(data):
        return False
    atomic_write_bytes(path, data, durable=False)
    return True


def write_views(
    vault: Vault, project: str, names: Iterable[str] = VIEW_FILES, now: datetime | None = None
) -> list[Path]:
    """Compile the named views of a project, any of the five that is missing, and any in which a
    record expired since it was compiled (every write leaves every view as a compile now writes
    it); with INDEX.md, bring its monthly inventory files in step too. Returns the files written
    or removed: a view whose content is unchanged but for its stamp is left as it is (see the
    module docstring)."""
    now = now or utc_now()
    now_iso = format_iso(now)
    directory = vault.project_dir(project)
    asked = set(names)
    changed = []
    index = vault.index()
    env, templates = environment_for(vault, {"digest": digest})
    compiler = _Compiler(index, project, now_iso)
    for name in VIEW_FILES:
        path = directory / name
        if name not in asked and path.is_file():
            if not compiler.expired_since_compiled(name, path):
                continue
            asked.add(name)  # (INDEX.md: its monthly files too)
        timeless = not shows_compile_instant(env, templates, f"views/{name}.j2")
        if timeless and compiler.view_current(name, path, templates):
            continue  # nothing it shows changed since this process wrote it, and the file is as written
        if _write_if_changed(path, _render(vault, compiler, name, env).encode("utf-8")):
            changed.append(path)
        if timeless:
            compiler.remember_view(name, path, templates)
            compiler.remember_compiled(name, path)
    if "INDEX.md" in asked:
        changed += write_inventory(vault, project, now)
    return changed


def write_inventory(vault: Vault, project: str, now: datetime | None = None) -> list[Path]:
    """Bring the project's monthly inventory files in step with the index: one per month of each
    kind with more records than INDEX.md lists, re-emitted only when its records changed, it
    reads differently since (a record expired) or its file is not as it was written; files no
    kind needs any more are removed. Returns the files written or removed."""
    index = vault.index()
    now_iso = format_iso(now or utc_now())
    compiler = _Compiler(index, project, now_iso)
    directory = vault.project_dir(project)
    wanted = {
        inventory_file(kind, month): (kind, month)
        for kind in DURABLE_KINDS
        if compiler.has_inventory(kind)
        for month in compiler.months(kind)
    }
    changed: list[Path] = []
    with index.cache_transaction():
        with os.scandir(directory) as found:
            leftovers = [e.name for e in found if e.name not in VIEW_FILES and is_view_file(e.name)]
        for name in leftovers:
            if name not in wanted:
                (directory / name).unlink(missing_ok=True)
                fragments.forget_file(index, project, name)
                changed.append(directory / name)
        env, templates = environment_for(vault, {"digest": digest})
        # A template that shows the compile instant writes every month anew each time.
        timeless = not wanted or not shows_compile_instant(env, templates, INVENTORY_TEMPLATE)
        written = fragments.written_files(index, project) if timeless else {}
        template = env.get_template(INVENTORY_TEMPLATE) if wanted else None
        for name, (kind, month) in wanted.items():
            path = directory / name
            known = written.get(name)
            if known is not None and (known.valid_until is None or now_iso < known.valid_until):
                try:
                    stat = path.stat()
                except FileNotFoundError:
                    stat = None
                if stat is not None and (_last_change_ns(stat), stat.st_size) == (known.changed_ns, known.size):
                    continue
            assert template is not None
            rows = fragments.month_rows(index, project, kind, month, now_iso)
            text = template.render(
                project=project,
                compiled=now_iso,
                kind=kind,
                title=KIND_TITLES[kind],
                directory=KIND_FACTS[kind].directory,
                month=month or UNDATED,
                count=rows.count,
                rows=rows.rows.decode("utf-8"),
            )
            if _write_if_changed(path, text.encode("utf-8")):
                changed.append(path)
            stat = path.stat()
            fragments.remember_file(
                index, project, name, fragments.WrittenFile(rows.valid_until, _last_change_ns(stat), stat.st_size)
            )
    return changed
