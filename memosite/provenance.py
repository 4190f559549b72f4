"""Who is changing the vault, and from where: the actor of a CLI call or an MCP session.

The composition root (a CLI command, the MCP server) says who acts by setting ``vault.actor``; the
core reads it to stamp provenance on records and to author vault-git commits. A CLI call acts for
the person whose git identity it runs under; an MCP session acts for the agent named by its
client (``<client name> via memosite``).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

Source = Literal["agent", "human", "imported"]


@dataclass(frozen=True)
class Actor:
    """The author of a change: ``name``/``email`` for git (None: git's own configured identity),
    ``client`` the MCP client's name and version, ``session_id`` the agent session when known."""

    source: Source
    name: str | None = None
    email: str | None = None
    client: str | None = None
    session_id: str | None = None

    @classmethod
    def person(cls, identity: str | None, source: Source = "human") -> Actor:
        """A CLI call: the person's git identity (``Name <email>``); ``source`` as ``--source`` says."""
        name, email = identity, None
        if identity and identity.endswith(">") and " <" in identity:
            name, email = identity[:-1].split(" <", 1)
        return cls(source=source, name=name, email=email)

    @classmethod
    def mcp_client(cls, client_name: str | None, client_version: str | None, session_id: str | None) -> Actor:
        name = " ".join((client_name or "mcp client").split())[:80]
        client = f"{name} {client_version}".strip() if client_version else name
        return cls(
            source="agent",
            name=f"{name} via memosite",
            email="agent@memosite.invalid",
            client=client,
            session_id=session_id,
        )


@dataclass(frozen=True)
class AgentShellMarker:
    """An environment variable a coding agent documents setting in the shells it runs commands in."""

    variable: str
    agent: str
    value: str | None = None  # None: any non-empty value


# The markers coding agents set for their shell tool (the list and its sources: see agent_shell).
AGENT_SHELL_MARKERS: tuple[AgentShellMarker, ...] = (
    AgentShellMarker("CLAUDECODE", "Claude Code", "1"),
    AgentShellMarker("GEMINI_CLI", "Gemini CLI", "1"),
)


def agent_shell(env: Mapping[str, str]) -> str | None:
    """The coding agent whose shell tool runs this process (by the markers agents document), or
    None for a person's own terminal. A marker protects against accidents and prompt-injected
    agents, not against a hostile local user, who can unset it."""
    for marker in AGENT_SHELL_MARKERS:
        value = env.get(marker.variable)
        if value and (marker.value is None or value.strip() == marker.value):
            return marker.agent
    return None


# What a record restored by a rejection says of the change turned down (reason, reviewer, when).
REJECTED_CHANGE_FIELDS = ("rejectedChangeReason", "rejectedChangeBy", "rejectedChangeAt")
# Fields only a person's review sets (an agent cannot write them over MCP).
REVIEW_FIELDS = ("review", "reviewedBy", "reviewedAt", "reviewReason", *REJECTED_CHANGE_FIELDS)


def git_identity(env: Mapping[str, str], cwd: Path | None = None) -> str | None:
    """The person's git identity (``Name <email>``): ``GIT_AUTHOR_NAME``, else ``git config``."""
    name = env.get("GIT_AUTHOR_NAME")
    email = env.get("GIT_AUTHOR_EMAIL")
    if not name:
        configured = _git_user(cwd)
        name = configured.get("user.name") or None  # set empty (to blank a global one): no name
        email = email or configured.get("user.email") or None
    if not name:
        return None
    return f"{name} <{email}>" if email else name


@functools.lru_cache(maxsize=8)
def _git_user(cwd: Path | None) -> dict[str, str]:
    """``user.name`` and ``user.email`` as git resolves them here, asked of one git process (the
    last value of a key wins, as ``git config --get`` has it)."""
    from memosite.gitcommand import run_git

    try:
        done = run_git(cwd or Path.cwd(), "config", "--null", "--get-regexp", args=[r"^user\.(name|email)$"])
    except OSError:
        return {}
    found: dict[str, str] = {}
    for entry in done.stdout.split("\0"):
        key, _, value = entry.partition("\n")
        if key:
            found[key.strip().lower()] = value.strip()  # an empty value counts: it blanks earlier ones
    return found


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
    or the MCP client's name and version) and ``repoCommit`` (the product repository's commit).
    Without an actor (the core called directly) only the commit is known."""
    fields: dict[str, str] = {}
    if actor is not None:
        fields["source"] = actor.source
        author = actor.client or (f"{actor.name} <{actor.email}>" if actor.name and actor.email else actor.name)
        if author:
            fields["author"] = author
    commit = repo_commit(product_root)
    if commit:
        fields["repoCommit"] = commit
    return fields
