"""The hook protocols of the coding agents memosite serves: what each sends on stdin, what it
reads back on stdout. Sources, as documented:

* **Claude Code** — code.claude.com/docs/en/hooks; the shapes as the Claude Agent SDK types them
  (``claude_agent_sdk/types.py``: ``BaseHookInput``, ``UserPromptSubmitHookInput``,
  ``PreCompactHookInput``, ``SessionStartHookSpecificOutput``, ``SyncHookJSONOutput``). Every
  payload has ``session_id``, ``transcript_path``, ``cwd`` and ``hook_event_name``;
  ``SessionStart`` adds ``source`` (startup, resume, clear, compact), ``UserPromptSubmit``
  ``prompt``, ``PreCompact`` ``trigger``, ``SessionEnd`` ``reason``. Context goes back as
  ``{"hookSpecificOutput": {"hookEventName": …, "additionalContext": …}}`` on exit 0; exit 2 is a
  *blocking* error (it would refuse the prompt), so a hook of memosite never exits 2.
* **Gemini CLI** — google-gemini/gemini-cli ``docs/hooks/reference.md``: the same base fields
  plus ``timestamp``; ``SessionStart`` (``source``), ``BeforeAgent`` (``prompt``),
  ``PreCompress`` (``trigger``), ``SessionEnd`` (``reason``); context in
  ``hookSpecificOutput.additionalContext``; stdout must hold nothing but that JSON.
* **Cursor** — cursor.com/docs/agent/hooks: ``sessionStart`` (``session_id``,
  ``conversation_id``, ``workspace_roots``…) answers ``{"additional_context": …}``;
  ``beforeSubmitPrompt`` can only let a prompt through or stop it, so Cursor gets no prompt hook;
  ``sessionEnd`` is fire-and-forget.

Not supported, and why: GitHub Copilot's hooks (``.github/hooks/*.json``) ignore the output of
``sessionStart`` and ``userPromptSubmitted`` (docs.github.com, "Hooks configuration"), so nothing
can be brought in — Copilot reads the compiled ``.github/copilot-instructions.md`` and
``.instructions.md`` files instead; OpenAI Codex's hooks are experimental, behind a feature flag
whose name has changed, and Codex reads ``AGENTS.md``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from memosite.agentfiles.hookagents import AGENTS, ENDING_EVENTS, HANDLERS, UNSUPPORTED, Handler, HookAgent, agent_named
from memosite.errors import InvalidArguments


@dataclass(frozen=True)
class HookInput:
    """What a hook payload says, in the agents' common terms (every field may be missing)."""

    event: str | None = None
    session_id: str | None = None
    cwd: str | None = None
    prompt: str | None = None
    transcript_path: str | None = None
    reason: str | None = None  # how the session started or ended, or what compacts it


def _text(data: dict[str, Any], *keys: str) -> str | None:
    for key in keys:
        value = data.get(key)
        if isinstance(value, str) and value.strip() and "\x00" not in value:
            return value
    return None


def parse_payload(raw: bytes) -> HookInput:
    """The payload on stdin (INVALID_ARGUMENTS when it is not a JSON object)."""
    try:
        data = json.loads(raw.decode("utf-8", errors="strict")) if raw.strip() else {}
    except (UnicodeDecodeError, ValueError) as exc:
        raise InvalidArguments(f"the hook payload is not JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise InvalidArguments("the hook payload is not a JSON object")
    roots = data.get("workspace_roots")
    cwd = _text(data, "cwd")
    if cwd is None and isinstance(roots, list) and roots and isinstance(roots[0], str):
        cwd = roots[0]  # Cursor names the workspace instead
    return HookInput(
        event=_text(data, "hook_event_name"),
        session_id=_text(data, "session_id", "conversation_id", "sessionId"),
        cwd=cwd,
        prompt=data.get("prompt") if isinstance(data.get("prompt"), str) else None,
        transcript_path=_text(data, "transcript_path"),
        reason=_text(data, "reason", "source", "trigger"),
    )


# Answers are written with ASCII escapes: JSON all the same to the agent, and safe whatever
# encoding the hook's stdout has (a Windows pipe is not UTF-8).


def context_answer(agent: HookAgent, event: str, context: str) -> str:
    """stdout that adds ``context`` to the agent's session (for the event that ran the hook)."""
    if agent.context_shape == "additional_context":
        return json.dumps({"additional_context": context, "continue": True})
    return json.dumps({"hookSpecificOutput": {"hookEventName": event, "additionalContext": context}})


def notice_answer(agent: HookAgent, message: str) -> str:
    """stdout that shows ``message`` to the person (not to the model)."""
    if agent.context_shape == "additional_context":
        return agent.empty_answer
    return json.dumps({"systemMessage": message})


__all__ = [
    "AGENTS",
    "ENDING_EVENTS",
    "HANDLERS",
    "UNSUPPORTED",
    "Handler",
    "HookAgent",
    "HookInput",
    "agent_named",
    "context_answer",
    "notice_answer",
    "parse_payload",
]
