"""The coding agents that publish a hook protocol memosite can use, and where their hooks are set.

Each entry says which of the agent's events run which memosite hook (``session-start``,
``prompt``, ``session-end``), where its settings live and how it writes a hook there:

* **Claude Code** (code.claude.com/docs/en/hooks) — ``.claude/settings.json`` (shared),
  ``.claude/settings.local.json`` (this machine) or ``~/.claude/settings.json``:
  ``{"hooks": {"<Event>": [{"matcher": …, "hooks": [{"type": "command", "command": …,
  "timeout": <seconds>}]}]}}``. Events: ``SessionStart`` (also after ``/clear`` and compaction, so
  the brief comes back), ``UserPromptSubmit``, ``PreCompact`` and ``SessionEnd``.
* **Gemini CLI** (google-gemini/gemini-cli ``docs/hooks/reference.md``) — ``.gemini/settings.json``
  or ``~/.gemini/settings.json``, the same layout with ``name`` and ``timeout`` in milliseconds.
  Events: ``SessionStart``, ``BeforeAgent``, ``PreCompress``, ``SessionEnd``. Gemini CLI runs
  hooks only while its hooks system is on (``/settings``, "Enable Hooks System").
* **Cursor** (cursor.com/docs/agent/hooks) — ``.cursor/hooks.json`` or ``~/.cursor/hooks.json``:
  ``{"version": 1, "hooks": {"<event>": [{"command": …}]}}``. Events: ``sessionStart`` and
  ``sessionEnd``; its ``beforeSubmitPrompt`` can only let a prompt through or stop it, so Cursor
  has no prompt hook.

Not here, and why: GitHub Copilot's hooks (``.github/hooks/*.json``, docs.github.com "Hooks
configuration") ignore what ``sessionStart`` and ``userPromptSubmitted`` print, so they cannot
bring memory in; OpenAI Codex's hooks are experimental, behind a feature flag that has been
renamed. Both read the files ``memosite agents compile`` writes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from memosite.errors import InvalidArguments

Handler = Literal["session-start", "prompt", "session-end"]
HANDLERS: tuple[Handler, ...] = ("session-start", "prompt", "session-end")
Layout = Literal["grouped", "flat"]


@dataclass(frozen=True)
class HookAgent:
    """One agent's hook protocol and settings."""

    name: str
    title: str
    # handler -> the agent's events that run it
    events: dict[Handler, tuple[str, ...]]
    # scope -> its settings file: relative to the repository, or to the home directory ("~/...")
    settings: dict[str, str]
    layout: Layout  # "grouped": {event: [{matcher, hooks: [...]}]}; "flat": {event: [{command}]}
    timeout_unit: Literal["s", "ms"] | None  # how the settings give a hook's time limit (None: not at all)
    context_shape: Literal["hookSpecificOutput", "additional_context"]
    empty_answer: str  # what stdout holds when a hook has nothing to add
    note: str = ""
    # The longest context the agent puts in front of the model as it is (None: none documented).
    context_chars: int | None = None


# How long an agent lets each hook run before it gives up on it: above memosite's own limits
# (memosite.hooks.runner.TIME_LIMITS) by the start-up of a fresh process, so memosite answers first.
AGENT_TIME_LIMITS: dict[Handler, int] = {"session-start": 10, "prompt": 3, "session-end": 30}

AGENTS: dict[str, HookAgent] = {
    "claude-code": HookAgent(
        name="claude-code",
        title="Claude Code",
        events={
            "session-start": ("SessionStart",),
            "prompt": ("UserPromptSubmit",),
            "session-end": ("PreCompact", "SessionEnd"),
        },
        settings={
            "project": ".claude/settings.json",
            "local": ".claude/settings.local.json",
            "user": "~/.claude/settings.json",
        },
        layout="grouped",
        timeout_unit="s",
        context_shape="hookSpecificOutput",
        empty_answer="",  # empty stdout on exit 0 adds nothing (plain text would become context)
        # "Hook output injected into context … is capped at 10,000 characters": longer, it is saved
        # to a file and the model gets a 2 KB preview of it.
        context_chars=10_000,
    ),
    "gemini-cli": HookAgent(
        name="gemini-cli",
        title="Gemini CLI",
        events={
            "session-start": ("SessionStart",),
            "prompt": ("BeforeAgent",),
            "session-end": ("PreCompress", "SessionEnd"),
        },
        settings={"project": ".gemini/settings.json", "user": "~/.gemini/settings.json"},
        layout="grouped",
        timeout_unit="ms",
        context_shape="hookSpecificOutput",
        empty_answer="{}",  # stdout is parsed as JSON: it must hold an object
        note="Gemini CLI runs hooks only while its hooks system is on (/settings, Enable Hooks System)",
    ),
    "cursor": HookAgent(
        name="cursor",
        title="Cursor",
        events={"session-start": ("sessionStart",), "session-end": ("sessionEnd",)},
        settings={"project": ".cursor/hooks.json", "user": "~/.cursor/hooks.json"},
        layout="flat",
        timeout_unit=None,
        context_shape="additional_context",
        empty_answer="{}",
        note="Cursor's beforeSubmitPrompt cannot add context, so Cursor gets the brief but no prompt hook",
    ),
}
UNSUPPORTED = {
    "copilot": "Copilot's hooks ignore what sessionStart and userPromptSubmitted print; it reads the files"
    " `memosite agents compile` writes (.github/copilot-instructions.md, .github/instructions/)",
    "codex": "Codex's hooks are experimental and behind a renamed feature flag; it reads AGENTS.md, which"
    " `memosite agents compile` writes",
}
# The end of a session, as opposed to a checkpoint before the agent compacts its context.
ENDING_EVENTS = frozenset({"SessionEnd", "sessionEnd"})


def agent_named(name: str) -> HookAgent:
    """The agent called ``name``; INVALID_ARGUMENTS (saying why) for one memosite has no hooks for."""
    agent = AGENTS.get(name)
    if agent is None:
        why = UNSUPPORTED.get(name)
        if why:
            raise InvalidArguments(f"no hooks for {name}: {why}")
        raise InvalidArguments(f"unknown agent {name!r}: expected {', '.join(AGENTS)}")
    return agent
