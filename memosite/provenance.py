"""Who is changing the vault, and from where: the actor of a CLI call or an MCP session.

The composition root (a CLI command, the MCP server) says who acts by setting ``vault.actor``; the
core reads it to stamp provenance on records, to author vault-git commits and to refuse an agent
what only a person may do (:class:`~memosite.errors.PersonRequired`). A CLI call acts for the person
whose git identity it runs under, unless it runs in a coding agent's shell tool (recognised by the
environment markers agents document, :data:`AGENT_SHELL_MARKERS`): then it acts for that agent. An
MCP session acts for the agent named by its client. An agent's author always reads
``<agent> via memosite``, whatever the agent calls itself.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from memosite.errors import PersonRequired
from memosite.kinds import KIND_FACTS
from memosite.reviewstate import APPROVED

Source = Literal["agent", "human", "imported"]

AGENT_EMAIL = "agent@memosite.invalid"
AGENT_SUFFIX = " via memosite"
_LABEL_CHARS = 80


@dataclass(frozen=True)
class AgentShell:
    """A coding agent's shell tool runs this process: which agent, and the variable that said so."""

    agent: str
    variable: str

    def describe(self) -> str:
        return f"{self.agent}'s shell ({self.variable} is set)"


@dataclass(frozen=True)
class Actor:
    """The author of a change: ``name``/``email`` for git (None: git's own configured identity),
    ``client`` the agent's name (and version, over MCP), ``session_id`` the agent session when
    known, ``shell`` the agent shell a CLI call was recognised in."""

    source: Source
    name: str | None = None
    email: str | None = None
    client: str | None = None
    session_id: str | None = None
    shell: AgentShell | None = None

    @classmethod
    def person(cls, identity: str | None, source: Source = "human") -> Actor:
        """A CLI call: the person's git identity (``Name <email>``); ``source`` as ``--source`` says."""
        name, email = identity, None
        if identity and identity.endswith(">") and " <" in identity:
            name, email = identity[:-1].split(" <", 1)
        return cls(source=source, name=name, email=email)

    @classmethod
    def mcp_client(cls, client_name: str | None, client_version: str | None, session_id: str | None) -> Actor:
        """An MCP session: the client's name and version as labels (see :func:`agent_label`)."""
        name = agent_label(client_name, "mcp client")
        version = agent_label(client_version, "")
        client = f"{name} {version}".strip()
        return cls(source="agent", name=name + AGENT_SUFFIX, email=AGENT_EMAIL, client=client, session_id=session_id)

    @classmethod
    def in_agent_shell(cls, shell: AgentShell) -> Actor:
        """A CLI call from a coding agent's shell tool: the agent is the author. Git keeps the
        person's identity as the commit's committer (the machine and account it ran on)."""
        name = agent_label(shell.agent, "coding agent")
        return cls(source="agent", name=name + AGENT_SUFFIX, email=AGENT_EMAIL, client=name, shell=shell)

    @property
    def is_agent(self) -> bool:
        return self.source == "agent"

    def where(self) -> str:
        """How a refusal names the agent: its shell, or its MCP client."""
        if self.shell is not None:
            return self.shell.describe()
        return f"an agent's MCP session ({self.client or 'mcp client'})"

    def require_person(self, action: str) -> None:
        """PERSON_REQUIRED when this actor is an agent (see :func:`require_person`)."""
        if self.is_agent:
            raise PersonRequired(_refusal(action, self.where()))

    def refuse_claims(self, frontmatter: Mapping[str, Any], *, composed: bool = False) -> None:
        """PERSON_REQUIRED when this actor is an agent and ``frontmatter`` sets a field no agent
        write may (:func:`agent_claims`; with ``composed``, :func:`agent_write_claims`)."""
        if not self.is_agent:
            return
        claimed = agent_write_claims(frontmatter) if composed else agent_claims(frontmatter)
        if claimed:
            raise PersonRequired(
                f"{', '.join(claimed)} cannot be set by an agent ({self.where()}): review state and"
                " authorship are a person's to give, and memosite records the rest"
            )


def agent_label(text: str | None, fallback: str) -> str:
    """What may stand for an agent in ``author`` and in a commit: ``text`` on one line, without
    anything that looks like an e-mail address or a ``<…>`` identity, without control, format,
    private or unassigned characters or a ``via memosite`` of its own; at most 80 characters;
    ``fallback`` when nothing is left. An agent names itself: this is all its name is trusted with."""
    if not isinstance(text, str):
        return fallback
    kept = "".join(" " if unicodedata.category(ch)[0] == "C" or ch in "\u2028\u2029" else ch for ch in text)
    kept = _BRACKETED.sub(" ", kept)
    kept = _EMAIL_LIKE.sub(" ", kept)
    kept = " ".join(kept.replace("<", " ").replace(">", " ").split())
    while True:
        trimmed = _OWN_SUFFIX.sub("", kept).strip()
        if trimmed == kept:
            break
        kept = trimmed
    return kept[:_LABEL_CHARS].strip() or fallback


_BRACKETED = re.compile(r"<[^<>]*>")
_EMAIL_LIKE = re.compile(r"[^\s@]+@[^\s@]+")
_OWN_SUFFIX = re.compile(r"\s*\bvia\s+memosite\s*$", re.IGNORECASE)


@dataclass(frozen=True)
class AgentShellMarker:
    """An environment variable a coding agent sets in the shells it runs commands in."""

    variable: str
    agent: str | None  # None: the variable's value names the agent (the AI_AGENT convention)
    value: str | None = None  # the value the agent documents; None: any value


# The markers coding agents set for their shell tool, with where each is documented. A marker counts
# when its variable holds anything but an empty or "off" value (0, false, no, off): a detection that
# missed a spelling would let an agent act as a person, while a person misread as an agent is told
# so in one line.
AGENT_SHELL_MARKERS: tuple[AgentShellMarker, ...] = (
    # Claude Code: "CLAUDECODE — set to 1 in shell environments Claude Code spawns"
    # (https://code.claude.com/docs/en/env-vars).
    AgentShellMarker("CLAUDECODE", "Claude Code", "1"),
    # Gemini CLI: run_shell_command "sets the GEMINI_CLI=1 environment variable in the subprocess's
    # environment" (google-gemini/gemini-cli, docs/tools/shell.md, "Environment Variables").
    AgentShellMarker("GEMINI_CLI", "Gemini CLI", "1"),
    # OpenAI Codex: every shell command gets CODEX_THREAD_ID (openai/codex,
    # codex-rs/protocol/src/shell_environment.rs); sandboxed ones also CODEX_SANDBOX (codex-rs/core
    # spawn.rs: "seatbelt" on macOS) and CODEX_SANDBOX_NETWORK_DISABLED=1 (openai/codex AGENTS.md).
    AgentShellMarker("CODEX_THREAD_ID", "Codex"),
    AgentShellMarker("CODEX_SANDBOX", "Codex"),
    AgentShellMarker("CODEX_SANDBOX_NETWORK_DISABLED", "Codex", "1"),
    # Cursor's agent (editor and cursor-agent CLI): CURSOR_AGENT=1 (listed by vercel/vercel
    # packages/detect-agent and in microsoft/vscode#316267's table of agent markers). Cursor's own help
    # documents only CI=1 for agent commands (cursor.com/help/troubleshooting/agent-issues), which CI
    # systems set too; CURSOR_TRACE_ID is in every Cursor terminal, a person's included: neither counts.
    AgentShellMarker("CURSOR_AGENT", "Cursor", "1"),
    # GitHub Copilot: agent terminals in VS Code get COPILOT_AGENT=1 (microsoft/vscode#316267); the
    # Copilot CLI and the cloud coding agent set COPILOT_CLI=1, the coding agent also
    # COPILOT_AGENT_SESSION_ID (its environment as published in watson/is-ci#28).
    AgentShellMarker("COPILOT_AGENT", "GitHub Copilot", "1"),
    AgentShellMarker("COPILOT_CLI", "GitHub Copilot CLI", "1"),
    AgentShellMarker("COPILOT_AGENT_SESSION_ID", "GitHub Copilot coding agent"),
    # OpenCode sets OPENCODE=1 for the commands it runs (listed by expo/agent-cli-detector).
    AgentShellMarker("OPENCODE", "OpenCode", "1"),
    # The cross-agent convention: AI_AGENT=<agent name> ("The AI_AGENT Standard", vercel/vercel
    # packages/detect-agent/README.md; Crush sets AI_AGENT=crush).
    AgentShellMarker("AI_AGENT", None),
    # Aider documents no marker for the commands it runs (its AIDER_* variables are the user's own
    # settings, present in their terminal too): it is not recognised.
)

_OFF_VALUES = frozenset({"", "0", "false", "no", "off"})


def detect_agent_shell(env: Mapping[str, str]) -> AgentShell | None:
    """The coding agent whose shell tool runs this process (by :data:`AGENT_SHELL_MARKERS`), or
    None for a person's own terminal. A marker protects against accidents and prompt-injected
    agents, not against a hostile local user, who can unset it."""
    for marker in AGENT_SHELL_MARKERS:
        value = env.get(marker.variable)
        if value is None or value.strip().lower() in _OFF_VALUES:
            continue
        agent = marker.agent if marker.agent is not None else agent_label(value, "coding agent")
        return AgentShell(agent, marker.variable)
    return None


def agent_shell(env: Mapping[str, str]) -> str | None:
    """The name of the coding agent whose shell runs this process, or None (see
    :func:`detect_agent_shell`)."""
    found = detect_agent_shell(env)
    return found.agent if found is not None else None


def require_person(env: Mapping[str, str], action: str) -> None:
    """The guard of what only a person does from the command line (approving, rejecting,
    destroying, changing review policy): PERSON_REQUIRED, naming ``action`` and the agent, when
    ``env`` is an agent's shell. Call it before anything is read or written."""
    shell = detect_agent_shell(env)
    if shell is not None:
        raise PersonRequired(_refusal(action, shell.describe()))


def _refusal(action: str, where: str) -> str:
    return f"{action} is refused in {where}: only a person does this, from their own terminal"


# What makes a record a person's: see approved_by_person. The kinds whose records an agent's
# change waits for a person to approve, instead of replacing them: those the brief serves as the
# project's knowledge (traps, decisions, specs, plans, state). Event kinds (logs, prompts,
# sessions, reviews) are appended or derived, and scratch is throwaway.
GUARDED_KINDS: frozenset[str] = frozenset(kind for kind, facts in KIND_FACTS.items() if facts.bootstrap is not None)


def approved_by_person(frontmatter: Mapping[str, Any]) -> bool:
    """Whether a person stands behind the record as it is: a person's review approved it
    (``review: approved`` — only ``memosite review approve``, or a person's ``restore`` of a
    rejected record, writes it, and an agent can set no review field), or no review is under way
    (``review`` absent) and its text is not an agent's (``source`` human or imported; a file
    written by hand without a source reads as human). A record waiting for review or rejected in
    one is not."""
    review = frontmatter.get("review")
    if review == APPROVED:
        return True
    if review not in (None, ""):
        return False
    return frontmatter.get("source") != "agent"


# What a record restored by a rejection says of the change turned down (reason, reviewer, when):
# written by older versions, which gave back an accepted version with these fields.
REJECTED_CHANGE_FIELDS = ("rejectedChangeReason", "rejectedChangeBy", "rejectedChangeAt")
# Fields only a person's review sets (an agent cannot write them).
REVIEW_FIELDS = ("review", "reviewedBy", "reviewedAt", "reviewReason", *REJECTED_CHANGE_FIELDS)
# Provenance memosite records and no writer claims: who wrote the text, against which commit.
PROVENANCE_FIELDS = ("author", "repoCommit", "editedBy")


# How often a record recurred and was used, counted by memosite as it happens: a write that set
# them would rank its record first in `rank`, the brief and the views.
USAGE_FIELDS = ("occurrences", "lastSeen", "hits", "lastHit", "helpfulCount", "staleCount", "lastFeedback")
# Where a record stands, as memosite records it: its last edit (which decides whether a purge from
# another machine wins over it) and what replaced it. An import carries the dates its source
# gives; a write an agent composes itself does not set them.
PLACE_FIELDS = ("updated", "supersededBy", "archivedReason")


def agent_claims(frontmatter: Mapping[str, Any]) -> list[str]:
    """The fields of ``frontmatter`` no agent write may set: review state (it would approve
    itself), a ``source`` other than agent (it would pass for a person), the provenance memosite
    records and the usage it counts (it would rank itself first). Empty when the agent claims
    nothing."""
    claimed = [name for name in REVIEW_FIELDS if name in frontmatter]
    if frontmatter.get("source") not in (None, "agent"):
        claimed.append("source")
    claimed += [name for name in (*PROVENANCE_FIELDS, *USAGE_FIELDS) if name in frontmatter]
    return claimed


def agent_write_claims(frontmatter: Mapping[str, Any]) -> list[str]:
    """:func:`agent_claims` for a write an agent composes itself (an MCP ``upsert``, an ``upsert``
    in its shell), which also may not date itself or say what replaced a record
    (:data:`PLACE_FIELDS`): a record dated 2099 would outlive every purge a teammate makes."""
    return [*agent_claims(frontmatter), *(name for name in PLACE_FIELDS if name in frontmatter)]


# Fields memosite records of a record — its identity, who wrote it and when, its review, its place
# in a supersession chain, how often it recurred and was used — never taken from a text someone
# hands it (a file Claude's memory tool writes, a note an import reads): a text that could set them
# could claim a person's approval or push itself up the ranking.
RECORDED_FIELDS = frozenset(
    {
        "id",
        "kind",
        "project",
        "created",
        "updated",
        "source",
        "author",
        "repoCommit",
        "editedBy",
        "supersedes",
        "supersededBy",
        "archivedReason",
        "archivedFrom",
        "occurrences",
        "lastSeen",
        "hits",
        "lastHit",
        "helpfulCount",
        "staleCount",
        "lastFeedback",
        *REVIEW_FIELDS,
    }
)


def repo_commit(work_tree: Path | None) -> str | None:
    """The commit checked out in ``work_tree`` (its ``HEAD``), read from the files git keeps —
    no subprocess on the write path. None outside a repository or before its first commit."""
    if work_tree is None:
        return None
    try:
        git = work_tree / ".git"
        git_dir = git
        if git.is_file():  # a worktree or submodule: "gitdir: <path>"
            text = git.read_text(encoding="utf-8").strip()
            if not text.startswith("gitdir:"):
                return None
            git_dir = (work_tree / text.split(":", 1)[1].strip()).resolve()
        head = (git_dir / "HEAD").read_text(encoding="utf-8").strip()
        if not head.startswith("ref:"):
            return head if _SHA_RE.match(head) else None
        ref = head.split(":", 1)[1].strip()
        common = git_dir
        commondir = git_dir / "commondir"
        if commondir.is_file():
            common = (git_dir / commondir.read_text(encoding="utf-8").strip()).resolve()
        for base in (git_dir, common):
            loose = base / ref
            if loose.is_file():
                value = loose.read_text(encoding="utf-8").strip()
                return value if _SHA_RE.match(value) else None
        packed = common / "packed-refs"
        if packed.is_file():
            for line in packed.read_text(encoding="utf-8").splitlines():
                parts = line.split()
                if len(parts) == 2 and parts[1] == ref and _SHA_RE.match(parts[0]):
                    return parts[0]
    except OSError:
        return None
    return None


_SHA_RE = re.compile(r"^[0-9a-f]{40}([0-9a-f]{24})?$")


def provenance_fields(actor: Actor | None, product_root: Path | None) -> dict[str, str]:
    """What a write records of who and from where: ``source``, ``author`` (a person's git identity,
    or ``<agent> via memosite``: the MCP client's name and version, or the agent whose shell ran
    the command) and ``repoCommit`` (the product repository's commit).
    Without an actor (the core called directly) only the commit is known."""
    fields: dict[str, str] = {}
    if actor is not None:
        fields["source"] = actor.source
        if actor.is_agent:
            author: str | None = (actor.client or "coding agent") + AGENT_SUFFIX
        else:
            author = f"{actor.name} <{actor.email}>" if actor.name and actor.email else actor.name
        if author:
            fields["author"] = author
    commit = repo_commit(product_root)
    if commit:
        fields["repoCommit"] = commit
    return fields
