"""Which memory goes out to the agents' files: only what a person could stand behind.

A record goes out when it is **approved** (not waiting for review), **live** (an active trap, an
accepted decision) and **not expired** — the brief's and search's own rules, asked of
:func:`memosite.bootstrap.build_bootstrap` and :func:`memosite.search.search_records` — and when the
code it cites is neither **drifted** nor **missing**: by the verdict ``memosite verify`` stored, and
again by judging its citations against the repository being compiled into, now
(:func:`memosite.freshness.judge_cite`), so a file compiled after the code changed never carries
memory the change made wrong.

The block's traps and decisions are the brief's, in the brief's order (severity, recurrence, hits,
recency; flagged-stale records last); the rule files take every eligible trap that names paths.
Reading memory never changes it: no hit is counted.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from memosite.agentfiles.settings import MAX_MAX_BYTES
from memosite.bootstrap import BriefItem, build_bootstrap
from memosite.errors import InvalidArguments
from memosite.freshness import RecordVerdict, Repository, judge_cite, read_cites
from memosite.index import IndexEntry
from memosite.mdtext import rule_line
from memosite.search import MAX_LIMIT, search_records
from memosite.vault import Vault

RULE_CHARS = 240  # one line per record: its rule, not its story
# The brief is read with room for everything the largest block can hold; the block's own budget
# decides what is shown.
_BRIEF_READ_BYTES = MAX_MAX_BYTES


@dataclass(frozen=True)
class MemoryItem:
    """One record as the agents' files show it."""

    id: str
    kind: str
    title: str
    rule: str
    path: str  # the record's file in the vault (``projects/<p>/<kind dir>/<slug>.md``)
    severity: str | None = None
    occurrences: int = 0
    hits: int = 0
    path_patterns: tuple[str, ...] = ()


@dataclass
class Selection:
    """What may go out, in order, and what was held back."""

    project: str
    traps: list[MemoryItem] = field(default_factory=list)
    decisions: list[MemoryItem] = field(default_factory=list)
    scoped: list[MemoryItem] = field(default_factory=list)
    # Eligible records the brief did not read (beyond its cap on traps): named by count only.
    more: dict[str, int] = field(default_factory=dict)
    # Records held back because their cited code is not what they were written about, by verdict.
    unfresh: dict[str, list[str]] = field(default_factory=dict)


class _Freshness:
    """Judges the citations of the records about to go out against the repository, once each."""

    def __init__(self, vault: Vault, repo_root: Path | None) -> None:
        self.index = vault.index()
        self.repo = Repository(repo_root) if repo_root is not None else None
        self.verdicts: dict[str, str] = {}

    def verdict(self, record_path: str) -> str:
        if record_path not in self.verdicts:
            self.verdicts[record_path] = self._judge(record_path)
        return self.verdicts[record_path]

    def _judge(self, record_path: str) -> str:
        if self.repo is None:
            return "fresh"  # nothing to judge against: the stored verdict already applied
        entry = self.index.by_path(record_path)
        if entry is None:
            return "missing"
        try:
            cites = read_cites(entry.frontmatter)
        except InvalidArguments:
            return "missing"  # citations that do not parse cannot vouch for the record
        if not cites:
            return "fresh"
        judged = [judge_cite(self.repo, cite) for cite in cites]
        return RecordVerdict(entry.path, entry.project, entry.kind, entry.id, entry.title, judged).verdict


def _item(source: BriefItem | IndexEntry) -> MemoryItem:
    """A brief's item or an index row (both carry what an agent file shows) as a memory item."""
    return MemoryItem(
        id=source.id,
        kind=source.kind,
        title=source.title,
        rule=rule_line(source.body, RULE_CHARS),
        path=source.path,
        severity=source.severity,
        occurrences=source.occurrences or 1,
        hits=source.hits,
        path_patterns=tuple(source.path_patterns),
    )


def select_memory(vault: Vault, project: str, repo_root: Path | None, *, now: datetime) -> Selection:
    """The memory of ``project`` that may go out to agents (see the module docstring)."""
    selection = Selection(project)
    fresh = _Freshness(vault, repo_root)
    brief = build_bootstrap(vault, project, max_bytes=_BRIEF_READ_BYTES, fresh_only=True, now=now)
    selection.traps = list(_keep_fresh(fresh, selection, [_item(item) for item in brief.traps]))
    selection.decisions = list(_keep_fresh(fresh, selection, [_item(item) for item in brief.decisions]))
    for omission in brief.omitted:
        if omission.section in ("traps", "decisions") and omission.reason != "freshness":
            selection.more[omission.section] = selection.more.get(omission.section, 0) + omission.count
    found = search_records(
        vault, project, kinds=["trap"], status="active", sort="occurrences", limit=MAX_LIMIT, now=now
    )
    index = vault.index()
    scoped: list[MemoryItem] = []
    for hit in found.results:
        if not hit.path_patterns or hit.freshness in ("drifted", "missing"):
            continue
        entry = index.by_path(hit.path)
        if entry is not None:
            scoped.append(_item(entry))
    selection.scoped = list(_keep_fresh(fresh, selection, scoped))
    return selection


def _keep_fresh(fresh: _Freshness, selection: Selection, items: Iterable[MemoryItem]) -> Iterable[MemoryItem]:
    for item in items:
        verdict = fresh.verdict(item.path)
        if verdict == "fresh":
            yield item
            continue
        held = selection.unfresh.setdefault(verdict, [])
        if item.id not in held:
            held.append(item.id)
