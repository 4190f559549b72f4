"""The block memosite keeps between its markers in ``AGENTS.md`` and its siblings.

Agents read these files into every session, so the block holds one line per record — its title,
its rule, the paths it is about and, when the site's address is configured, a link to its page —
and stops within a byte budget, saying how many records it left out and which search lists them.
The text is the same for the same memory: nothing in it depends on the time it was compiled, so
``agents compile --check`` can tell whether a committed file is up to date.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from memosite.agentfiles.markers import block_file
from memosite.agentfiles.selection import MemoryItem, Selection
from memosite.mdtext import code_span, markdown_text
from memosite.text import counted
from memosite.views import link_for_path

SITE_PREFIX = "memory"  # where memosite's own site (and its plugin by default) puts the records
GENERATED_NOTE = (
    "<!-- Written by `memosite agents compile` from this project's reviewed memory;"
    " edits between the memosite markers are replaced. -->"
)
MAX_PATHS_SHOWN = 3


def page_url(site_url: str | None, project: str, record_path: str) -> str | None:
    """The record's page on the published site (``<site>/memory/<project>/<kind dir>/<slug>/``)."""
    if not site_url:
        return None
    relative = link_for_path(record_path).removesuffix(".md")
    return f"{site_url}{SITE_PREFIX}/{project}/{relative}/"


def inert(text: str) -> str:
    """Record text as it may stand in the files: it can open no HTML comment, which would hide the
    rest of the block from a rendered view and could pose as memosite's own markers."""
    return text.replace("<!--", "&lt;!--").replace("-->", "--&gt;")


def record_line(item: MemoryItem, project: str, site_url: str | None) -> str:
    """One record as a Markdown list item."""
    label = f"[{(item.severity or 'unrated').upper()}] " if item.kind == "trap" else ""
    line = f"- **{label}{markdown_text(item.title)}**"
    if item.rule and item.rule != item.title:
        line += f" — {inert(item.rule)}"
    if item.path_patterns:
        shown = [code_span(pattern) for pattern in item.path_patterns[:MAX_PATHS_SHOWN]]
        more = len(item.path_patterns) - len(shown)
        line += f" Paths: {', '.join(shown)}{f' (+{more})' if more > 0 else ''}."
    url = page_url(site_url, project, item.path)
    if url:
        line += f" [Page]({url})"
    return inert(line) + "\n"


def _size(text: str) -> int:
    return len(text.encode("utf-8"))


@dataclass
class Block:
    """The block's inside and what it holds."""

    inner: str
    traps: list[str]
    decisions: list[str]
    left_out: dict[str, int]

    @property
    def bytes(self) -> int:
        """Its size in a file, markers included."""
        return _size(block_file(self.inner))


def _header(project: str) -> str:
    return (
        f"{GENERATED_NOTE}\n\n"
        "## Project memory\n\n"
        f"Traps and decisions of project {code_span(project)} that a person reviewed and memosite checked"
        " against the code. Before changing a file, look for more about it:"
        ' `memosite search "<words>" --path <file>` (or the memosite MCP tool `search`).\n'
    )


def _footer(left_out: dict[str, int]) -> str:
    parts = [counted(count, f"more {noun}", f"more {noun}s") for noun, count in left_out.items() if count]
    if not parts:
        return ""
    kinds = " ".join(f"--kind {noun}" for noun, count in left_out.items() if count)
    return f"\n_{' and '.join(parts)}: `memosite search {kinds}`._\n"


def render_block(selection: Selection, *, max_bytes: int, site_url: str | None) -> Block:
    """The block for ``selection`` within ``max_bytes`` (markers included), records in order until
    the next one would not fit; the last line names what was left out."""
    header = _header(selection.project)
    sections: list[tuple[str, str, list[MemoryItem]]] = [
        ("trap", "Traps", selection.traps),
        ("decision", "Decisions", selection.decisions),
    ]
    eligible = {"trap": len(selection.traps) + selection.more.get("traps", 0)}
    eligible["decision"] = len(selection.decisions) + selection.more.get("decisions", 0)
    # The footer is sized for the worst case so the block never has to be cut again.
    reserve = _size(_footer(eligible))
    used = _size(block_file(header))
    chosen: dict[str, list[tuple[str, str]]] = {"trap": [], "decision": []}
    full = False
    for noun, title, items in sections:
        heading = f"\n### {title}\n\n"
        for item in items:
            line = record_line(item, selection.project, site_url)
            extra = _size(line) + (0 if chosen[noun] else _size(heading))
            if full or used + extra + reserve > max_bytes:
                full = True
                break
            chosen[noun].append((item.id, line))
            used += extra
    left_out = {noun: eligible[noun] - len(chosen[noun]) for noun in ("trap", "decision")}
    parts = [header]
    for noun, title, _ in sections:
        if chosen[noun]:
            parts.append(f"\n### {title}\n\n" + "".join(line for _, line in chosen[noun]))
    if not any(eligible.values()):
        parts.append("\nNo reviewed traps or decisions to show yet.\n")
    parts.append(_footer(left_out))
    return Block(
        inner="".join(parts),
        traps=[record_id for record_id, _ in chosen["trap"]],
        decisions=[record_id for record_id, _ in chosen["decision"]],
        left_out=left_out,
    )


def ids(items: Iterable[MemoryItem]) -> list[str]:
    return [item.id for item in items]
