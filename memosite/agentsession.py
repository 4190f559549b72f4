"""An agent's session, recorded when its hook says it ended (or is about to be compacted).

:func:`read_transcript` learns from the transcript the agent names (Claude Code's JSONL, Gemini
CLI's JSON) which files the agent edited and whether it saved a trap to memosite;
:func:`record_agent_session` writes what the vault keeps of it in one unit of work: the ``session``
record ``session-<agent>-<id>`` (rewritten at each checkpoint of the same session) and a ``log``
event. Only files inside the repository are named, relative to its root; the rest are counted,
so no path of this machine reaches a vault a team shares.

The transcript path comes from the agent's payload: it is read as data (JSON, bounded in size),
never run, and a file that is not a transcript yields nothing.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from memosite.errors import InvalidArguments
from memosite.mdtext import code_span
from memosite.mutation import mutation
from memosite.schema import format_iso, utc_now
from memosite.store import append_event, upsert_record
from memosite.text import counted
from memosite.vault import Vault

MAX_TRANSCRIPT_BYTES = 64 * 1024 * 1024
MAX_FILES_NAMED = 200
# The tools agents edit files with, and the argument naming the file (Claude Code: Edit, Write,
# MultiEdit, NotebookEdit; Gemini CLI: write_file, replace).
EDIT_TOOLS = frozenset({"Edit", "Write", "MultiEdit", "NotebookEdit", "write_file", "replace", "edit_file"})
_PATH_ARGS = ("file_path", "notebook_path", "absolute_path", "path")
SHELL_TOOLS = frozenset({"Bash", "run_shell_command", "shell"})
_MEMOSITE_TOOL = re.compile(r"memosite.*upsert$")
_CLI_TRAP = re.compile(r"\bmemosite\b[^\n|;&]*\bupsert\b[^\n|;&]*--kind[ =]+trap\b")


@dataclass
class TranscriptFacts:
    """What a transcript says the agent did."""

    touched: list[str] = field(default_factory=list)  # repository files, relative to its root
    outside: int = 0  # files edited outside the repository (not named)
    saved_traps: int = 0  # traps saved to memosite (MCP upsert or the CLI)
    started: str | None = None  # the transcript's first timestamp


@dataclass(frozen=True)
class SessionReport:
    agent: str  # "claude-code", "gemini-cli", "cursor"
    agent_title: str  # "Claude Code"
    session_id: str
    ended: bool  # False: a checkpoint before the agent compacts its context
    reason: str | None = None
    facts: TranscriptFacts = field(default_factory=TranscriptFacts)


def _values(data: Any) -> Iterator[dict[str, Any]]:
    """Every JSON object inside ``data``, depth first (iteratively: a transcript may nest deep)."""
    stack = [data]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            yield item
            stack.extend(reversed(list(item.values())))
        elif isinstance(item, list):
            stack.extend(reversed(item))


def _tool_call(obj: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    name = obj.get("name") or obj.get("tool_name") or obj.get("toolName")
    args = next((obj[key] for key in ("input", "args", "arguments", "tool_input") if key in obj), None)
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except ValueError:
            return None
    if isinstance(name, str) and isinstance(args, dict):
        return name, args
    return None


def _relative(raw: str, root: Path | None) -> str | None:
    path = Path(raw)
    if not path.is_absolute():
        cleaned = raw.strip().replace("\\", "/").removeprefix("./")
        return cleaned if cleaned and ".." not in cleaned.split("/") else None
    if root is None:
        return None
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except (OSError, ValueError):
        return None


def _lines(path: Path) -> Iterator[Any]:
    with open(path, "rb") as handle:
        data = handle.read(MAX_TRANSCRIPT_BYTES)
    text = data.decode("utf-8", errors="replace")
    stripped = text.lstrip()
    if stripped.startswith(("{", "[")):
        try:
            yield json.loads(stripped)  # one JSON document (Gemini CLI)
            return
        except ValueError:
            pass
    for line in text.splitlines():  # JSON lines (Claude Code)
        line = line.strip()
        if line.startswith("{"):
            try:
                yield json.loads(line)
            except ValueError:
                continue


def _saves_a_trap(name: str, args: dict[str, Any]) -> bool:
    """A call of memosite's MCP ``upsert`` with ``kind: trap``, or ``memosite upsert --kind trap``
    run in the agent's shell."""
    if _MEMOSITE_TOOL.search(name):
        return str(args.get("kind", "")).strip().lower() == "trap"
    return name in SHELL_TOOLS and bool(_CLI_TRAP.search(str(args.get("command", ""))))


def read_transcript(transcript: str | None, root: Path | None) -> TranscriptFacts:
    """What the transcript at ``transcript`` says the agent did in the repository at ``root``;
    nothing when there is no such file or it is no transcript."""
    facts = TranscriptFacts()
    if not transcript or not isinstance(transcript, str) or "\x00" in transcript:
        return facts
    path = Path(transcript).expanduser()
    try:
        if not path.is_file():
            return facts
        documents = list(_lines(path))
    except OSError:
        return facts
    touched: dict[str, None] = {}
    for document in documents:
        for obj in _values(document):
            stamp = obj.get("timestamp")
            if facts.started is None and isinstance(stamp, str) and stamp[:4].isdigit():
                facts.started = stamp
            call = _tool_call(obj)
            if call is None:
                continue
            name, args = call
            if name in EDIT_TOOLS:
                raw = next((args[key] for key in _PATH_ARGS if isinstance(args.get(key), str)), None)
                if raw:
                    relative = _relative(raw, root)
                    if relative is None:
                        facts.outside += 1
                    else:
                        touched[relative] = None
            elif _saves_a_trap(name, args):
                facts.saved_traps += 1
    facts.touched = list(touched)
    return facts


def session_slug(agent: str, session_id: str) -> str:
    """The session record's slug: ``session-<agent>-<id>``; an id that is no safe file name is
    named by its digest."""
    cleaned = re.sub(r"[^A-Za-z0-9._-]", "-", session_id.strip())[:80].strip(".-")
    if not cleaned or cleaned != session_id.strip() or ".." in cleaned:
        cleaned = hashlib.sha256(session_id.encode("utf-8")).hexdigest()[:24]
    return f"session-{agent}-{cleaned}"


@dataclass(frozen=True)
class RecordedSession:
    slug: str
    touched: int
    log_id: str


def _body(report: SessionReport) -> str:
    facts = report.facts
    # The session id and the file names come from the agent and its transcript: each stands in a
    # code span of its own, so no name can start a heading, a link or HTML in the record.
    lines = [f"{report.agent_title} session {code_span(report.session_id)}."]
    if facts.touched:
        lines += ["", f"Files it changed ({len(facts.touched)}):", ""]
        lines += [f"- {code_span(path)}" for path in facts.touched[:MAX_FILES_NAMED]]
        if len(facts.touched) > MAX_FILES_NAMED:
            lines.append(f"- … and {len(facts.touched) - MAX_FILES_NAMED} more")
    else:
        lines += ["", "It changed no file of the repository."]
    if facts.outside:
        lines += ["", f"It also changed {counted(facts.outside, 'file')} outside the repository."]
    if facts.saved_traps:
        lines += ["", f"It saved {counted(facts.saved_traps, 'trap')} to memosite."]
    return "\n".join(lines) + "\n"


def record_agent_session(
    vault: Vault, project: str, report: SessionReport, *, now: datetime | None = None
) -> RecordedSession:
    """Write the session record and a log event for ``report``, in one unit of work."""
    if not report.session_id.strip():
        raise InvalidArguments("an agent session needs an id")
    now = now or utc_now()
    slug = session_slug(report.agent, report.session_id)
    facts = report.facts
    frontmatter: dict[str, Any] = {
        "title": f"{report.agent_title} session {report.session_id[:12]}",
        "sessionId": report.session_id,
        "agent": report.agent,
        "status": "completed" if report.ended else "active",
        "endTime": format_iso(now) if report.ended else None,
        "startTime": facts.started,
        "endReason": report.reason if report.ended else None,
        "touchedFiles": facts.touched[:MAX_FILES_NAMED],
        "savedTraps": facts.saved_traps,
    }
    frontmatter = {key: value for key, value in frontmatter.items() if value is not None}
    what = "ended" if report.ended else "checkpoint before compaction"
    event = (
        f"{report.agent_title} session {report.session_id[:12]} {what}: changed {counted(len(facts.touched), 'file')}"
    )
    details = {
        "sessionId": report.session_id,
        "agent": report.agent,
        "touched": facts.touched[:MAX_FILES_NAMED],
        "outside": facts.outside,
        "savedTraps": facts.saved_traps,
        "reason": report.reason,
    }
    with mutation(vault, f"agent session {slug}"):
        upsert_record(vault, project, kind="session", slug=slug, body=_body(report), frontmatter=frontmatter, now=now)
        logged = append_event(vault, project, event=event, details=details, now=now)
    return RecordedSession(slug, len(facts.touched), logged.id)
