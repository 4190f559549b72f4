"""``memosite hook session-start|prompt|session-end``: the commands agents run at their hooks.

A hook never stands in the agent's way, as the agents' docs ask of one:

* it answers within a time limit (:data:`TIME_LIMITS`: one second for a prompt) — whatever is not
  done by then is abandoned, the agent gets the empty answer;
* any failure (no vault, a bad payload, a locked vault, a bug) is written to a log —
  ``<vault>/.memosite/hooks.log``, or ``hooks.log`` in the user's state directory when there is no
  vault — and the hook still exits 0 with the empty answer;
* it never exits 2, which Claude Code and Gemini CLI read as "block this": a wrong argument is one
  line on stderr and exit 1, a non-blocking error.

The command is parsed here, without click, so a hook in a fresh process loads only what it uses.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, TextIO

from memosite.errors import InvalidArguments, MemositeError
from memosite.hooks.protocol import (
    AGENTS,
    ENDING_EVENTS,
    HANDLERS,
    Handler,
    HookAgent,
    HookInput,
    agent_named,
    context_answer,
    notice_answer,
    parse_payload,
)

if TYPE_CHECKING:
    from memosite.vault import Vault

TIME_LIMITS: dict[Handler, float] = {"session-start": 5.0, "prompt": 1.0, "session-end": 20.0}
MAX_PAYLOAD = 8 * 1024 * 1024
LOG_NAME = "hooks.log"
LOG_MAX_BYTES = 256 * 1024
USAGE = (
    "usage: memosite hook session-start|prompt|session-end [--agent claude-code|gemini-cli|cursor]"
    " [--vault DIR] [--project ID] [--time-limit SECONDS]  (the agent's JSON payload on stdin)"
)
_OPTIONS = ("--agent", "--vault", "--project", "--time-limit")
SAVE_HINT = (
    "When something in this project bites you (a wrong assumption, a failing fix, a surprise), save it"
    ' for the next session: `memosite upsert --kind trap --title "…" --path <file> --body "…"`'
    " (or the memosite MCP tool `upsert`)."
)


@dataclass(frozen=True)
class HookArgs:
    handler: Handler
    agent: HookAgent
    vault: str | None = None
    project: str | None = None
    time_limit: float | None = None  # None: the handler's own (TIME_LIMITS)


def parse_args(argv: list[str]) -> HookArgs | None:
    """The command line after ``hook``; None for ``--help``. INVALID_ARGUMENTS for anything else."""
    if not argv or argv[0] in ("-h", "--help"):
        return None
    handler, rest = argv[0], argv[1:]
    if handler not in HANDLERS:
        raise InvalidArguments(f"unknown hook {handler!r}: expected {', '.join(HANDLERS)}")
    values: dict[str, str] = {}
    position = 0
    while position < len(rest):
        item = rest[position]
        name, equals, value = item.partition("=")
        if name not in _OPTIONS:
            raise InvalidArguments(f"unknown argument {item!r} for memosite hook {handler}")
        if not equals:
            position += 1
            if position == len(rest):
                raise InvalidArguments(f"{name} needs a value")
            value = rest[position]
        if name in values:
            raise InvalidArguments(f"{name} given twice")
        values[name] = value
        position += 1
    agent = agent_named(values.get("--agent", "claude-code"))
    if handler not in agent.events:
        raise InvalidArguments(f"{agent.title} has no {handler} hook")
    limit = None
    if "--time-limit" in values:
        try:
            limit = float(values["--time-limit"])
        except ValueError:
            limit = -1.0
        if not 0 < limit <= 600:
            raise InvalidArguments(
                f"invalid --time-limit {values['--time-limit']!r}: expected seconds, above 0 and at most 600"
            )
    return HookArgs(handler, agent, values.get("--vault"), values.get("--project"), limit)


# --- the failure log ---------------------------------------------------------------------------


def log_path(env: Mapping[str, str], vault_root: Path | None) -> Path:
    """Where failures are written: the vault's ``.memosite/`` when it exists, else the state dir."""
    if vault_root is not None and (vault_root / ".memosite").is_dir() and not (vault_root / ".memosite").is_symlink():
        return vault_root / ".memosite" / LOG_NAME
    state = env.get("XDG_STATE_HOME") or str(Path(env.get("HOME") or Path.home()) / ".local" / "state")
    return Path(state) / "memosite" / LOG_NAME


def log_failure(env: Mapping[str, str], vault_root: Path | None, what: str, message: str) -> None:
    """Append one line to the hooks' log (kept under :data:`LOG_MAX_BYTES`: the older half goes)."""
    from memosite.schema import format_iso, utc_now

    line = f"{format_iso(utc_now())} {what}: {' '.join(message.split())}\n"
    try:
        path = log_path(env, vault_root)
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.is_file() and path.stat().st_size > LOG_MAX_BYTES:
            kept = path.read_bytes()[-(LOG_MAX_BYTES // 2) :]
            path.write_bytes(kept[kept.find(b"\n") + 1 :])
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(line)
    except OSError:
        pass  # a hook that cannot even log still must not stand in the agent's way


# --- reading the payload -----------------------------------------------------------------------


def read_payload(stream: BinaryIO) -> bytes:
    """The JSON object on ``stream``: read until it is complete or the stream ends (an agent may
    keep stdin open after writing the payload, so waiting for the end alone could hang)."""
    decoder = json.JSONDecoder()
    data = bytearray()  # grown in place: a pasted log of megabytes is not copied at every read
    try:
        fd: int | None = stream.fileno()  # read what is there, never wait to fill a buffer
    except (AttributeError, OSError, ValueError):
        fd = None  # an in-memory stream
    while len(data) <= MAX_PAYLOAD:
        chunk = os.read(fd, 65536) if fd is not None else stream.read(65536)
        if not chunk:
            break
        data += chunk
        if not (chunk.rstrip() or bytes(data[-256:]).rstrip()).endswith(b"}"):
            continue  # an object is not complete before its closing brace: no need to parse again
        try:
            decoder.raw_decode(data.decode("utf-8").lstrip())
        except (UnicodeDecodeError, ValueError):
            continue
        break
    if len(data) > MAX_PAYLOAD:
        raise InvalidArguments(f"the hook payload is larger than {MAX_PAYLOAD // (1024 * 1024)} MB")
    return bytes(data)


# --- the handlers --------------------------------------------------------------------------------


@dataclass
class HookContext:
    args: HookArgs
    payload: HookInput
    env: Mapping[str, str]
    now: datetime

    @property
    def event(self) -> str:
        """The agent's event this hook runs at: the payload's when it is one the hook is installed
        for, else the hook's own (an answer naming any other event fails the agent's schema)."""
        events = self.args.agent.events[self.args.handler]
        return self.payload.event if self.payload.event in events else events[-1]


def _cwd(payload: HookInput) -> Path | None:
    if payload.cwd is None:
        return None
    path = Path(payload.cwd)
    return path if path.is_absolute() and path.is_dir() else None


def _answer(context: HookContext) -> str:
    from memosite.config import holds_vault, resolve_project, resolve_vault_root
    from memosite.provenance import Actor
    from memosite.vault import Vault

    args = context.args
    root = resolve_vault_root(args.vault, context.env)
    if not (root.is_dir() and holds_vault(root)):
        return args.agent.empty_answer  # memosite is not set up on this machine: nothing to add
    cwd = _cwd(context.payload)
    project = resolve_project(args.project, context.env, cwd).id
    vault = Vault.open(root, create=False)
    try:
        if args.handler == "session-end":  # only a write needs the repository (provenance, placement)
            from memosite.sync.autopush import register_auto_push
            from memosite.workspace import find_work_tree

            register_auto_push()

            vault.product_root = find_work_tree(cwd or Path.cwd(), context.env)
        # What a hook writes, the agent wrote: it counts as agent memory (and waits for review
        # where the team asks for it).
        vault.actor = Actor(
            source="agent",
            name=f"{args.agent.title} via memosite",
            email="agent@memosite.invalid",
            client=f"{args.agent.title} hook",
            session_id=context.payload.session_id,
        )
        handler = _HANDLERS[args.handler]
        return handler(context, vault, project)
    finally:
        vault.close()


def _session_start(context: HookContext, vault: Vault, project: str) -> str:
    from memosite.bootstrap import build_bootstrap
    from memosite.recall import forget_old_sessions, remember_shown

    brief = build_bootstrap(vault, project, now=context.now)
    cap = context.args.agent.context_chars
    if cap is not None and len(brief.markdown) + len(SAVE_HINT) + 2 > cap:
        # A brief past what the agent shows as it is (a larger bootstrap.maxBytes, say) is cut to
        # fit: the model gets all of a shorter brief rather than a preview of a longer one.
        brief = build_bootstrap(vault, project, max_bytes=cap - len(SAVE_HINT) - 2, now=context.now)
    items = [*brief.context, *brief.traps, *brief.decisions, *brief.pending]
    if not items:
        return context.args.agent.empty_answer
    remember_shown(vault, project, context.payload.session_id, [item.id for item in items])
    forget_old_sessions(vault, context.now)
    text = f"{brief.markdown.rstrip()}\n\n{SAVE_HINT}\n"
    return context_answer(context.args.agent, context.event, text)


def _prompt(context: HookContext, vault: Vault, project: str) -> str:
    from memosite.recall import recall_for_prompt, remember_shown, shown_in_session

    prompt = context.payload.prompt
    if not prompt or not prompt.strip():
        return context.args.agent.empty_answer
    session = context.payload.session_id
    recall = recall_for_prompt(
        vault, project, prompt, exclude=shown_in_session(vault, project, session), now=context.now
    )
    if not recall.records:
        return context.args.agent.empty_answer
    remember_shown(vault, project, session, [record.id for record in recall.records])
    return context_answer(context.args.agent, context.event, recall.markdown())


def _session_end(context: HookContext, vault: Vault, project: str) -> str:
    from memosite.agentsession import SessionReport, read_transcript, record_agent_session

    payload, agent = context.payload, context.args.agent
    if not payload.session_id:
        raise InvalidArguments("the payload names no session_id: nothing to record")
    root = vault.product_root or _cwd(payload)
    facts = read_transcript(payload.transcript_path, root)
    ended = context.event in ENDING_EVENTS
    report = SessionReport(agent.name, agent.title, payload.session_id, ended, payload.reason, facts)
    record_agent_session(vault, project, report, now=context.now)
    if facts.touched and not facts.saved_traps:
        files = "1 file" if len(facts.touched) == 1 else f"{len(facts.touched)} files"
        return notice_answer(
            agent,
            f"memosite: this session changed {files} and saved no trap. If something bit you, save it for"
            ' the next session: memosite upsert --kind trap --title "…" --path <file> --body "…"',
        )
    return agent.empty_answer


_HANDLERS: dict[Handler, Callable[[HookContext, Vault, str], str]] = {
    "session-start": _session_start,
    "prompt": _prompt,
    "session-end": _session_end,
}


# --- the entry point ----------------------------------------------------------------------------


def main(
    argv: list[str],
    *,
    stdin: BinaryIO | None = None,
    stdout: TextIO | None = None,
    env: Mapping[str, str] | None = None,
    time_limit: float | None = None,
) -> int:
    """Run one hook: its answer on ``stdout``, exit status 0 (1 for a wrong command line)."""
    env = os.environ if env is None else env
    out = stdout or sys.stdout
    try:
        args = parse_args(argv)
    except InvalidArguments as exc:
        sys.stderr.write(f"memosite hook: {exc.message} (memosite hook --help)\n")
        return 1
    if args is None:
        out.write(USAGE + "\n")
        return 0
    stream = stdin or sys.stdin.buffer
    what = f"{args.handler} ({args.agent.name})"
    vault_hint = _vault_hint(args, env)
    box: dict[str, str] = {}

    def work() -> None:
        from memosite.schema import utc_now

        try:
            payload = parse_payload(read_payload(stream))
            box["answer"] = _answer(HookContext(args, payload, env, utc_now()))
        except MemositeError as exc:
            box["failure"] = f"{exc.code}: {exc.message}"
        except Exception as exc:  # a hook swallows every failure, as the agents ask: it is logged
            box["failure"] = f"{type(exc).__name__}: {exc}"

    worker = threading.Thread(target=work, name=f"memosite-hook-{args.handler}", daemon=True)
    worker.start()
    limit = time_limit or args.time_limit or TIME_LIMITS[args.handler]
    worker.join(limit)
    if worker.is_alive():
        log_failure(env, vault_hint, what, f"no answer within {limit:g} s: answered with nothing")
        _write(out, args.agent.empty_answer)
        # The worker may hold a read of stdin or a lock: the process ends without waiting for it.
        os._exit(0)
    if "failure" in box:
        log_failure(env, vault_hint, what, box["failure"])
    _write(out, box.get("answer", args.agent.empty_answer))
    return 0


def _vault_hint(args: HookArgs, env: Mapping[str, str]) -> Path | None:
    try:
        from memosite.config import resolve_vault_root

        return resolve_vault_root(args.vault, env)
    except MemositeError:
        return None


def _write(out: TextIO, answer: str) -> None:
    try:
        if answer:
            out.write(answer if answer.endswith("\n") else answer + "\n")
        out.flush()
    except (BrokenPipeError, ValueError):
        pass


__all__ = ["AGENTS", "TIME_LIMITS", "main", "parse_args"]
