"""Path-scoped rule files: traps an agent loads only when it touches the files they are about.

One file per path group (the directory a trap's first path pattern names, down to its module:
``src/payments``, ``src/agents/models``, ``tests``), never one per record, for each agent that
documents such files:

* **Cursor** — ``.cursor/rules/memosite-<group>.mdc`` with ``description``, ``globs`` (a
  comma-separated list, not YAML: Cursor's own editor writes it unquoted) and
  ``alwaysApply: false``, the "auto attached" kind (cursor.com/docs/context/rules).
* **Claude Code** — ``.claude/rules/memosite-<group>.md`` with ``paths``, a YAML list of quoted
  globs (code.claude.com/docs/en/memory, "Path-specific rules").
* **GitHub Copilot** — ``.github/instructions/memosite-<group>.instructions.md`` with ``applyTo``,
  globs comma-separated in one quoted string (docs.github.com, "Adding repository custom
  instructions for GitHub Copilot", path-specific instructions).

memosite's path patterns name a whole subtree (``src/payments`` covers ``src/payments/client.py``,
see :mod:`memosite.paths`); the agents' globs do not, so a directory pattern goes out as
``<dir>/**``. A pattern the agents' formats cannot carry safely (a comma, a quote, a backslash, a
control character, text that reads as YAML) stays out of every glob list, and the compile says so.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from memosite.agentfiles.block import inert, record_line
from memosite.agentfiles.selection import MemoryItem
from memosite.mdtext import code_span
from memosite.schema import SEVERITY_WEIGHT
from memosite.text import counted, slugify

RULE_MAX_BYTES = 4096  # a rule file joins the context each time a matching file is touched
RULE_PREFIX = "memosite-"
RULE_DIRS = {
    "cursor": (".cursor/rules", ".mdc"),
    "claude": (".claude/rules", ".md"),
    "copilot": (".github/instructions", ".instructions.md"),
}
# Directories that hold a project's code without naming a part of it: a group goes one deeper.
_CONTAINERS = frozenset({"src", "lib", "app", "apps", "packages", "pkg", "internal", "cmd", "source", "crates"})
_GROUP_DEPTH = 2  # segments after the containers: src/agents/models, packages/web/ui
_GLOB_CHARS = re.compile(r"[*?\[]")
_FILE_LIKE = re.compile(r"\.[A-Za-z0-9]{1,12}$")
# What every agent's frontmatter carries unquoted or quoted without harm.
_SAFE_PATTERN = re.compile(r"^[^\s,\"'`\\{}&!|>%@#:]([^\x00-\x1f\x7f,\"'`\\]*[^\s,\"'`\\])?$")
# The start of the note every rule file memosite writes carries (kept the same from one version to
# the next: it is how a file says it is memosite's).
NOTE_MARK = "<!-- Written by `memosite agents compile`"
_HEADER_NOTE = (
    f"{NOTE_MARK} from this project's reviewed memory; edits are replaced."
    " Keep your own rules in files of your own. -->"
)


def carries_note(data: bytes) -> bool:
    """Whether a rule file's bytes hold memosite's note (a file without it is a person's)."""
    return NOTE_MARK.encode("utf-8") in data


def safe_pattern(pattern: str) -> bool:
    """Whether ``pattern`` can go into every agent's glob list unchanged."""
    return bool(_SAFE_PATTERN.match(pattern)) and ": " not in pattern and " #" not in pattern


def agent_globs(pattern: str) -> list[str]:
    """The globs that cover what memosite's ``pattern`` covers: a file as itself, a directory
    and a wildcard pattern also with everything beneath them."""
    cleaned = pattern.strip().replace("\\", "/").removeprefix("./").strip("/")
    if not cleaned:
        return []
    last = cleaned.rsplit("/", 1)[-1]
    if cleaned.endswith("**"):
        return [cleaned]
    if not _GLOB_CHARS.search(cleaned):
        return [cleaned] if _FILE_LIKE.search(last) else [f"{cleaned}/**"]
    return [cleaned] if _FILE_LIKE.search(last) else [cleaned, f"{cleaned}/**"]


def group_of(pattern: str) -> str:
    """The path group a pattern belongs to: its literal directory, down to the module."""
    segments = [s for s in pattern.strip().replace("\\", "/").split("/") if s and s != "."]
    literal: list[str] = []
    for segment in segments:
        if _GLOB_CHARS.search(segment):
            break
        literal.append(segment)
    if literal and len(literal) == len(segments) and _FILE_LIKE.search(literal[-1]):
        literal = literal[:-1]  # a file: its directory
    depth = 0
    while depth < len(literal) and literal[depth].lower() in _CONTAINERS:
        depth += 1
    kept = literal[: depth + _GROUP_DEPTH]
    return "/".join(kept) if kept else "."


@dataclass
class RuleGroup:
    """Traps about one part of the code, and the globs that load them."""

    key: str
    name: str
    items: list[MemoryItem] = field(default_factory=list)
    globs: list[str] = field(default_factory=list)


@dataclass
class RuleSet:
    groups: list[RuleGroup]
    unsafe_patterns: list[str]  # patterns left out of every glob list


def group_traps(items: Sequence[MemoryItem]) -> RuleSet:
    """The rule groups of ``items`` (traps with path patterns); a group without a single usable
    glob is dropped."""
    groups: dict[str, RuleGroup] = {}
    unsafe: list[str] = []
    # In a file, as in TRAPS.md and the brief: the most severe first, then the most recurring.
    ordered = sorted(items, key=lambda i: (-SEVERITY_WEIGHT.get(str(i.severity), 0), -i.occurrences, -i.hits, i.id))
    for item in ordered:
        usable = [p for p in item.path_patterns if safe_pattern(p)]
        unsafe += [p for p in item.path_patterns if not safe_pattern(p) and p not in unsafe]
        if not usable:
            continue
        key = group_of(usable[0])
        group = groups.get(key)
        if group is None:
            group = groups[key] = RuleGroup(key, "")
        group.items.append(item)
        for pattern in usable:
            for glob in agent_globs(pattern):
                if glob not in group.globs:
                    group.globs.append(glob)
    named: dict[str, int] = {}
    for group in sorted(groups.values(), key=lambda g: g.key):
        base = _group_name(group.key)
        named[base] = named.get(base, 0) + 1
        group.name = base if named[base] == 1 else f"{base}-{named[base]}"
        group.globs.sort()
    return RuleSet(sorted(groups.values(), key=lambda g: g.name), unsafe)


def _group_name(key: str) -> str:
    segments = [s for s in key.split("/") if s.lower() not in _CONTAINERS and s != "."] or key.split("/")
    return slugify(" ".join(segments), 60) or "root"


def rule_path(agent: str, group: RuleGroup) -> str:
    directory, suffix = RULE_DIRS[agent]
    return f"{directory}/{RULE_PREFIX}{group.name}{suffix}"


def _frontmatter(agent: str, group: RuleGroup) -> str:
    description = f"Traps memosite recorded for {group.key} ({counted(len(group.items), 'trap')})"
    if agent == "cursor":
        return f"---\ndescription: {description}\nglobs: {','.join(group.globs)}\nalwaysApply: false\n---\n"
    if agent == "claude":
        listed = "".join(f"  - {json.dumps(glob, ensure_ascii=False)}\n" for glob in group.globs)
        return f"---\npaths:\n{listed}---\n"
    return f"---\napplyTo: {json.dumps(','.join(group.globs), ensure_ascii=False)}\n---\n"


def render_rule(agent: str, group: RuleGroup, project: str, site_url: str | None) -> str:
    """The rule file of ``group`` for ``agent``, within :data:`RULE_MAX_BYTES`."""
    head = (
        f"{_frontmatter(agent, group)}\n{_HEADER_NOTE}\n\n# Traps in {code_span(group.key)}\n\n"
        f"Recorded in project {code_span(project)}; reviewed, live and checked against the code.\n\n"
    )
    where = f" --path {group.key}" if group.key != "." else ""
    more_note = f"\n_{{count}} more: `memosite search --kind trap{where}`._\n"
    reserve = len(more_note.format(count=len(group.items)).encode("utf-8"))
    lines: list[str] = []
    used = len(head.encode("utf-8"))
    for item in group.items:
        line = record_line(item, project, site_url)
        if used + len(line.encode("utf-8")) + reserve > RULE_MAX_BYTES and lines:
            break
        lines.append(line)
        used += len(line.encode("utf-8"))
    left = len(group.items) - len(lines)
    tail = inert(more_note.format(count=left)) if left else ""
    return head + "".join(lines) + tail
