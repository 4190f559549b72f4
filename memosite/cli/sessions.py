"""``memosite session ...``: per-session event logs. Every command calls ``memosite.sessions``."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from memosite.cli._common import App, parse_json_option, vault_options
from memosite.config import working_directory

if TYPE_CHECKING:
    from memosite.sessions import SearchResults, SessionSummary
    from memosite.vault import Vault

_ROOT_HELP = (
    "A sessions root to use instead of the project's, e.g. .vtcode/sessions "
    "(default: this machine's sessions.root, relative to the working directory)."
)
_DIR_HELP = "One session directory, e.g. .vtcode/sessions/<id> (its parent is the root, its name the id)."


def _root_option(func: Any) -> Any:
    return click.option("--root", "root_dir", metavar="DIR", help=_ROOT_HELP)(func)


def _dir_option(func: Any) -> Any:
    return click.option("--dir", "session_dir", metavar="PATH", help=_DIR_HELP)(func)


def _root(app: App, root_dir: str | None, *, create: bool = False) -> Path | None:
    """The sessions root of a command: --root (which must exist unless the command ``create``s
    sessions), else this machine's sessions.root (config.local.json), else the project's (None)."""
    from memosite.sessions.catalog import require_root
    from memosite.sessions.paths import configured_root

    if root_dir is not None:
        root = Path(root_dir).expanduser().absolute()
        return root if create else require_root(root)
    return configured_root(app.vault, working_directory())


def _reading(app: App, root_dir: str | None, session_dir: str | None) -> Vault:
    """The vault a read of sessions uses: a named root or directory (a vtcode workspace's) is read
    without a memosite vault; the project's own sessions need the vault."""
    return app.vault_for_reading() if root_dir is not None or session_dir is not None else app.vault


def _target(app: App, session_id: str | None, root_dir: str | None, session_dir: str | None) -> tuple[Path | None, str]:
    """(root, session id) from ID, --root and --dir."""
    from memosite.errors import InvalidArguments
    from memosite.sessions.errors import SessionNotFound
    from memosite.sessions.log import require_session_dir
    from memosite.sessions.paths import SessionPaths

    if session_dir is not None:
        if root_dir is not None:
            raise InvalidArguments("give --dir or --root, not both")
        path = Path(session_dir).expanduser().absolute()
        if not path.is_dir():
            raise SessionNotFound(f"no session directory {session_dir}")
        # Checked before any vault is opened, so every command says the same about a stray directory.
        require_session_dir(SessionPaths(path.parent, path.name))
        if session_id is not None and session_id != path.name:
            raise InvalidArguments(f"the session id {session_id!r} is not the name of --dir {path.name!r}")
        return path.parent, path.name
    if session_id is None:
        raise InvalidArguments("give a session ID (or --dir PATH)")
    return _root(app, root_dir), session_id


@click.group()
def session() -> None:
    """Agent session logs: start, append, turns, end, show, search, pack, verify, retain.

    Sessions are written in vtcode-memory's layout and shapes (events.jsonl of versioned
    ThreadEvent envelopes, manifest.json, index/turns.json, derived/), so an existing vtcode
    session directory opens too (--dir, --root, or `memosite config set sessions.root DIR`);
    memosite reads those sessions but does not append to them.
    """


@session.command()
@click.option("--id", "session_id", metavar="ID", help="Session id (default: UTC time plus a random suffix).")
@click.option("--goal", "goals", multiple=True, metavar="TEXT", help="A goal for this session (repeatable).")
@_root_option
@vault_options
def start(app: App, session_id: str | None, goals: tuple[str, ...], root_dir: str | None) -> None:
    """Start a session; prints its id and the previous session's handoff."""
    from memosite.sessions import Session, latest_handoff

    root = _root(app, root_dir, create=True)
    with Session.start(app.vault, app.project, session_id=session_id, goals=goals, root=root) as opened:
        summary = opened.summary()
    previous = latest_handoff(app.vault, app.project, exclude=summary.session_id, root=root)
    data = {**summary.to_json(), "previousHandoff": previous}
    text = f"started session {summary.session_id}"
    if previous:
        text += "\n\n" + previous
    app.emit(data, text)


@session.command()
@click.option("--session", "session_id", required=True, metavar="ID")
@click.option(
    "--type", "event_type", required=True, metavar="T", help="Event type, e.g. message, tool, fact, goal.set."
)
@click.option("--text", metavar="TEXT", help="The event's text (payload.text).")
@click.option("--data", "data_json", metavar="JSON", help="A JSON object merged into the payload.")
@_root_option
@vault_options
def append(
    app: App, session_id: str, event_type: str, text: str | None, data_json: str | None, root_dir: str | None
) -> None:
    """Append one event to a session's log (a message is written as vtcode's agent_message item)."""
    from memosite.sessions import Session

    data = parse_json_option("--data", data_json)
    with Session.open(app.vault, app.project, session_id, root=_root(app, root_dir)) as opened:
        event = opened.append(event_type, text=text, data=data)
    app.emit({"sessionId": session_id, "event": event.to_json()}, f"appended {event.type} #{event.seq} to {session_id}")


@session.group()
def turn() -> None:
    """Start or end a turn."""


@turn.command("start")
@click.option("--session", "session_id", required=True, metavar="ID")
@_root_option
@vault_options
def turn_start(app: App, session_id: str, root_dir: str | None) -> None:
    """Start the next turn (fails while a turn is open)."""
    from memosite.sessions import Session

    with Session.open(app.vault, app.project, session_id, root=_root(app, root_dir)) as opened:
        event = opened.start_turn()
    app.emit({"sessionId": session_id, "event": event.to_json()}, f"turn {event.turn} started in {session_id}")


@turn.command("end")
@click.option("--session", "session_id", required=True, metavar="ID")
@click.option("--status", default="completed", show_default=True, help="completed, failed or aborted.")
@_root_option
@vault_options
def turn_end(app: App, session_id: str, status: str, root_dir: str | None) -> None:
    """End the open turn."""
    from memosite.sessions import Session

    with Session.open(app.vault, app.project, session_id, root=_root(app, root_dir)) as opened:
        event = opened.end_turn(status)
        cap = opened.last_cap
    data = {"sessionId": session_id, "event": event.to_json(), "cap": cap.to_json() if cap else None}
    app.emit(data, f"turn {event.turn} {status} in {session_id}")


@session.command()
@click.option("--session", "session_id", required=True, metavar="ID")
@_root_option
@vault_options
def end(app: App, session_id: str, root_dir: str | None) -> None:
    """End a session (an open turn is aborted first)."""
    from memosite.sessions import Session

    with Session.open(app.vault, app.project, session_id, root=_root(app, root_dir)) as opened:
        opened.end()
        summary = opened.summary()
    app.emit(summary.to_json(), f"ended session {session_id}\n\n{summary.handoff}")


def _event_number(seq: int, line: int | None) -> str:
    """How an event is named to a person: memosite's sequence number, or the line of events.jsonl
    for an event vtcode wrote (which has no number of its own)."""
    return f"line {line}" if line is not None else f"#{seq}"


def _times(summary: SessionSummary) -> str:
    started = f"started {summary.start_time or '(time not recorded)'}"
    if summary.status != "ended":
        return f"{started}   still active" + (f", last update {summary.updated}" if summary.updated else "")
    if summary.end_time:
        return f"{started}   ended {summary.end_time}"
    # vtcode's events carry no times: its manifest's updated_at is the latest time known.
    known = f"; last update {summary.updated}" if summary.updated else ""
    return f"{started}   ended (time not recorded by vtcode{known})"


def _describe(summary: SessionSummary) -> str:
    from memosite.text import counted

    lines = [
        f"session {summary.session_id} ({summary.status})",
        f"  {_times(summary)}",
        f"  {counted(summary.turns, 'turn')}   {counted(summary.events, 'event')}   "
        f"{counted(summary.log_bytes, 'byte')}" + (f"   turn {summary.open_turn} open" if summary.open_turn else ""),
    ]
    if not summary.has_log:
        lines.append("  no events.jsonl: described by vtcode's manifest (a session vtcode imported)")
    if summary.rescan_reason:
        lines.append(f"  metadata was rebuilt from the log: {summary.rescan_reason}")
    if summary.malformed_lines:
        lines.append(f"  {counted(summary.malformed_lines, 'malformed line')} skipped")
    lines += ["", summary.handoff.rstrip()]
    if summary.recent:
        lines += ["", "Recent events:"]
        for event in summary.recent:
            text = event.text.replace("\n", " ")
            number = _event_number(event.seq, summary.recent_lines.get(event.seq))
            lines.append(f"  {number} turn {event.turn or '-'} {event.type}" + (f": {text[:100]}" if text else ""))
    return "\n".join(lines)


@session.command()
@click.argument("session_id", metavar="ID", required=False)
@click.option("--events", "recent", default=10, show_default=True, help="How many recent events to show.")
@_root_option
@_dir_option
@vault_options
def show(app: App, session_id: str | None, recent: int, root_dir: str | None, session_dir: str | None) -> None:
    """Show a session: status, turns, goals, facts and recent events."""
    from memosite.sessions import Session

    root, session_id = _target(app, session_id, root_dir, session_dir)
    vault = _reading(app, root_dir, session_dir)
    with Session.open(vault, app.project, session_id, writable=False, root=root) as opened:
        summary = opened.summary(recent=recent)
    app.emit(summary.to_json(), _describe(summary))


@session.command("list")
@_root_option
@vault_options
def list_(app: App, root_dir: str | None) -> None:
    """List the project's sessions (or those of a sessions root)."""
    from memosite.sessions import list_sessions
    from memosite.text import counted

    entries = list_sessions(_reading(app, root_dir, None), app.project, root=_root(app, root_dir))
    rows = [entry.to_json() for entry in entries]
    width = max((len(row["sessionId"]) for row in rows), default=0)
    text = (
        "\n".join(
            f"{row['sessionId']:<{width}}  {row['status']:<6}  {counted(row['turns'], 'turn'):>10}"
            f"  {counted(row['events'], 'event'):>14}  {row['updated'] or '-'}"
            for row in rows
        )
        or "no sessions"
    )
    app.emit({"sessions": rows}, text)


def _format_hits(results: SearchResults) -> str:
    if not results.hits:
        return f"no matches for {results.query!r}"
    lines = []
    for hit in results.hits:
        where = (
            "derived/memory.json"
            if hit.grounded_fact
            else f"turn {hit.turn or '-'}  {_event_number(hit.seq, hit.line)}"
        )
        lines.append(f"{hit.score:7.3f}  {hit.session_id}  {where}  {hit.type}")
        lines.append(f"         {hit.snippet}")
    return "\n".join(lines)


@session.command()
@click.argument("query")
@click.option("--session", "session_id", metavar="ID", help="Search only this session.")
@click.option("--limit", default=10, show_default=True, type=int)
@_root_option
@_dir_option
@vault_options
def search(
    app: App, query: str, session_id: str | None, limit: int, root_dir: str | None, session_dir: str | None
) -> None:
    """BM25 search over the event text of the sessions (agent messages, tools, facts, ...)."""
    from memosite.sessions import search_sessions

    if session_dir is not None:
        root, session_id = _target(app, session_id, root_dir, session_dir)
    else:
        root = _root(app, root_dir)
    vault = _reading(app, root_dir, session_dir)
    results = search_sessions(vault, app.project, query, session_id=session_id, limit=limit, root=root)
    app.emit(results.to_json(), _format_hits(results))


@session.command()
@click.argument("session_id", metavar="ID", required=False)
@_root_option
@_dir_option
@vault_options
def pack(app: App, session_id: str | None, root_dir: str | None, session_dir: str | None) -> None:
    """Write derived/audit-pack.json: the SHA-256 of every file of the session directory."""
    from memosite.sessions import pack_session

    root, session_id = _target(app, session_id, root_dir, session_dir)
    result = pack_session(app.vault, app.project, session_id, root=root)
    from memosite.text import counted

    app.emit(result.to_json(), f"packed {counted(len(result.entries), 'file')} of {session_id} → {result.pack_path}")


@session.command()
@click.argument("session_id", metavar="ID", required=False)
@_root_option
@_dir_option
@vault_options
def verify(app: App, session_id: str | None, root_dir: str | None, session_dir: str | None) -> None:
    """Check the session against its audit pack; exit 1 if a file changed or is missing."""
    from memosite.sessions import verify_session

    root, session_id = _target(app, session_id, root_dir, session_dir)
    result = verify_session(_reading(app, root_dir, session_dir), app.project, session_id, root=root)
    from memosite.text import counted

    lines = [f"{session_id}: {'ok' if result.ok else 'FAILED'} ({counted(result.checked, 'file')} checked)"]
    lines += [f"  changed: {path}" for path in result.changed]
    lines += [f"  missing: {path}" for path in result.missing]
    lines += [f"  unaccounted (added after packing): {path}" for path in result.unaccounted]
    app.emit(result.to_json(), "\n".join(lines))
    if not result.ok:
        raise SystemExit(1)


@session.command()
@click.option("--dry-run", is_flag=True, help="Only say what would be removed.")
@_root_option
@vault_options
def retain(app: App, dry_run: bool, root_dir: str | None) -> None:
    """Remove ended sessions beyond the newest sessions.keep or older than sessions.maxAgeDays (config.json)."""
    from memosite.sessions import apply_retention
    from memosite.text import counted

    result = apply_retention(app.vault, app.project, dry_run=dry_run, root=_root(app, root_dir))
    verb = "would remove" if dry_run else "removed"
    lines: list[Any] = [
        f"{verb} {counted(len(result.removed), 'session')}; kept {len(result.decisions) - len(result.removed)}"
    ]
    lines += [f"  {verb}: {name}" for name in result.removed]
    lines += [f"  skipped {item.session_id}: {item.reason}" for item in result.skipped]
    app.emit(result.to_json(), "\n".join(lines))
