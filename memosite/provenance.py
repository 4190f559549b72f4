"""Who is changing the vault, and from where: the actor of a CLI call or an MCP session.

The composition root (a CLI command, the MCP server) says who acts by setting ``vault.actor``; the
core reads it to stamp provenance on records and to author vault-git commits. A CLI call acts for
the person whose git identity it runs under; an MCP session acts for the agent named by its
client (``<client name> via memosite``).
"""

from __future__ import annotations

from dataclasses import dataclass
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
