"""The ten record kinds and everything memosite decides by kind, in one table.

Each row says where a kind's files live, whether it is durable (shown in views and on the site) or
private (never returned from another project, never projected), its default time to live, what gc
does when one expires, which compiled views it appears in and what role it plays in the brief.
Every rule elsewhere that depends on the kind reads this table instead of keeping its own list.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

BootstrapRole = Literal["traps", "decisions", "context"]
TtlSetting = Literal["scratchDays", "reviewDays"]

VIEW_FILES = ("TRAPS.md", "DECISIONS.md", "INDEX.md", "PROMPTS.md", "SESSIONS.md")
# A kind with more records than INDEX.md lists gets its whole inventory beside the views, one file
# per month of ``updated``: ``INDEX.<kind dir>.<YYYY-MM>.md`` (see memosite.views).
UNDATED = "undated"
INVENTORY_PATTERN = "INDEX.*.md"  # the inventory files as a glob (git attributes)
_INVENTORY_FILE = re.compile(r"^INDEX\.([a-z]+)\.(\d{4}-\d{2}|undated)\.md$")
_MONTH = re.compile(r"^\d{4}-\d{2}$")


@dataclass(frozen=True)
class KindFacts:
    """What memosite knows of one kind."""

    name: str
    directory: str  # under projects/<project>/; state shares plans/ with plan (seed 000)
    title: str  # plural heading in INDEX.md and on the site
    durable: bool  # appears in the compiled views and on the site
    private: bool  # scratch, state, review: never returned from a sibling project
    default_ttl: TtlSetting | None  # config.json ttl.<setting> days, counted from created
    swept: bool  # gc's expiry sweep looks at it
    archive_on_expire: bool  # gc archives (keeps) it when it expires; the others are purged
    views: tuple[str, ...]  # the compiled views its records appear in
    bootstrap: BootstrapRole | None  # its section of the session brief
    row_macro: str | None  # the macro of rows.md.j2 that renders it in its own view
    searched_by_default: bool = True  # found by a search that names no kinds (scratch: only when asked)


KIND_FACTS: dict[str, KindFacts] = {
    facts.name: facts
    for facts in (
        KindFacts("trap", "traps", "Traps", True, False, None, True, True, ("TRAPS.md", "INDEX.md"), "traps", "trap"),
        KindFacts(
            "decision",
            "decisions",
            "Decisions",
            True,
            False,
            None,
            True,
            True,
            ("DECISIONS.md", "INDEX.md"),
            "decisions",
            "decision",
        ),
        KindFacts("spec", "specs", "Specs", True, False, None, False, False, ("INDEX.md",), "context", None),
        KindFacts("plan", "plans", "Plans", True, False, None, True, True, ("INDEX.md",), "context", None),
        KindFacts("state", "plans", "State", False, True, None, True, False, (), "context", None),
        KindFacts("log", "logs", "Logs", True, False, None, False, False, ("INDEX.md",), None, None),
        KindFacts(
            "scratch",
            "scratch",
            "Scratch",
            False,
            True,
            "scratchDays",
            True,
            False,
            (),
            None,
            None,
            searched_by_default=False,
        ),
        KindFacts("review", "reviews", "Reviews", True, True, "reviewDays", True, False, ("INDEX.md",), None, None),
        KindFacts(
            "prompt", "prompts", "Prompts", True, False, None, False, False, ("PROMPTS.md", "INDEX.md"), None, "prompt"
        ),
        KindFacts(
            "session",
            "sessions",
            "Sessions",
            True,
            False,
            None,
            False,
            False,
            ("SESSIONS.md", "INDEX.md"),
            None,
            "session",
        ),
    )
}

KINDS: tuple[str, ...] = tuple(KIND_FACTS)
DURABLE_KINDS: tuple[str, ...] = tuple(k for k, f in KIND_FACTS.items() if f.durable)
PRIVATE_KINDS: tuple[str, ...] = tuple(k for k, f in KIND_FACTS.items() if f.private)
SWEPT_KINDS: frozenset[str] = frozenset(k for k, f in KIND_FACTS.items() if f.swept)
ARCHIVE_ON_EXPIRE_KINDS: frozenset[str] = frozenset(k for k, f in KIND_FACTS.items() if f.archive_on_expire)
CONTEXT_KINDS: tuple[str, ...] = tuple(k for k, f in KIND_FACTS.items() if f.bootstrap == "context")
RECORD_DIRS: tuple[str, ...] = tuple(dict.fromkeys(f.directory for f in KIND_FACTS.values()))
UNSEARCHED_KINDS: tuple[str, ...] = tuple(k for k, f in KIND_FACTS.items() if not f.searched_by_default)


def kind_facts(kind: str) -> KindFacts:
    """The facts of a known kind (KeyError for anything else: validate the kind first)."""
    return KIND_FACTS[kind]


def directory_for_kind(kind: str) -> str:
    """The kind's directory; an unknown kind gets ``<kind>s`` (the seed's default branch)."""
    facts = KIND_FACTS.get(kind)
    return facts.directory if facts is not None else f"{kind}s"


def kinds_in_directory(directory: str) -> tuple[str, ...]:
    """The kinds whose records live in ``directory`` (``plans`` holds plan and state)."""
    return tuple(k for k, f in KIND_FACTS.items() if f.directory == directory)


def views_for_kinds(kinds: Iterable[str]) -> tuple[str, ...]:
    """The compiled views that records of ``kinds`` appear in, in view order."""
    wanted: set[str] = set()
    for kind in kinds:
        facts = KIND_FACTS.get(kind)
        if facts is not None:
            wanted.update(facts.views)
    return tuple(name for name in VIEW_FILES if name in wanted)


def month_of(updated: str | None) -> str:
    """The month (``YYYY-MM``) of a record's ``updated``, which names its inventory file; empty
    when it has none that reads as a date (its file is then the ``undated`` one)."""
    month = (updated or "")[:7]
    return month if _MONTH.match(month) else ""


def inventory_file(kind: str, month: str) -> str:
    """The name of the file, beside the views, that lists the records of ``kind`` updated in ``month``."""
    return f"INDEX.{directory_for_kind(kind)}.{month if _MONTH.match(month) else UNDATED}.md"


def is_view_file(name: str) -> bool:
    """Whether ``name``, at a project's root, is a compiled view: one of :data:`VIEW_FILES` or a
    monthly inventory file of a kind that appears in the views."""
    if name in VIEW_FILES:
        return True
    found = _INVENTORY_FILE.match(name)
    return found is not None and any(f.durable and f.directory == found.group(1) for f in KIND_FACTS.values())
