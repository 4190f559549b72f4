"""How a tool call meets the core: per-thread vaults, write serialisation, results and errors.

Every tool body is a plain function of a :class:`~memosite.vault.Vault` that calls the core API.
:meth:`ToolRuntime.call` runs it on a worker thread (the event loop keeps serving pings and other
calls meanwhile) and turns whatever happens into a ``CallToolResult``: the result's ``to_json()`` as
structured content, or an error result carrying the stable error code.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import os
import secrets
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import anyio
import anyio.to_thread
from mcp.types import CallToolResult, TextContent, ToolAnnotations

from memosite.config import holds_vault
from memosite.errors import MemositeError, VaultNotFound, from_exception
from memosite.mcp_server.project import SessionProject, agent_actor, announce, from_roots, require
from memosite.provenance import Actor
from memosite.sync.autopush import register_auto_push
from memosite.vault import Vault
from memosite.workspace import check_vault_placement

logger = logging.getLogger("memosite.mcp")

# Bounds the worker threads (and so the SQLite connections) one server process opens.
MAX_WORKER_THREADS = 8


class JsonResult(Protocol):
    def to_json(self) -> dict[str, Any]: ...


@dataclass(frozen=True)
class ToolCall:
    """One unit of work: ``run(vault, project)`` on the resolved project, and whether it writes.

    ``text`` picks the text block from the result's JSON when plain JSON would serve a model
    badly (the bootstrap brief is Markdown meant to be read as it is).
    """

    run: Callable[[Vault, str], JsonResult | dict[str, Any]]
    project_id: str | None = None
    writes: bool = False
    creates: bool | None = None  # may create the vault (default: when it writes)
    text: Callable[[dict[str, Any]], str] | None = None


def tool_hints(*, title: str, read_only: bool, destructive: bool = False, idempotent: bool = False) -> ToolAnnotations:
    """Annotations for a tool that only touches the local vault (a closed world)."""
    return ToolAnnotations(
        title=title,
        read_only_hint=read_only,
        destructive_hint=destructive,
        idempotent_hint=idempotent,
        open_world_hint=False,
    )


def success_result(data: dict[str, Any], text: str | None = None) -> CallToolResult:
    """Structured content plus the same JSON as text, for clients that only read text."""
    # A JSON round trip turns dates or paths a frontmatter may hold into plain strings, the
    # same way the CLI's --json prints them.
    serialised = json.dumps(data, ensure_ascii=False, default=str)
    return CallToolResult(
        content=[TextContent(type="text", text=text if text is not None else serialised)],
        structured_content=json.loads(serialised),
    )


def error_result(error: MemositeError) -> CallToolResult:
    """A tool error: ``CODE: message`` as text and ``{"error": {...}}`` as structured content."""
    payload = json.loads(json.dumps(error.to_json(), ensure_ascii=False, default=str))
    return CallToolResult(
        content=[TextContent(type="text", text=f"{error.code}: {error.message}")],
        structured_content=payload,
        is_error=True,
    )


class ToolRuntime:
    """The state one server shares between tool calls.

    Writes are serialised with an :class:`asyncio.Lock`: the vault's file lock excludes other
    processes and threads, but not two asyncio tasks waiting on worker threads of one process, and
    queueing them here keeps the thread pool free for reads. Each worker thread gets its own
    :class:`Vault` (and so its own SQLite connection, which may not cross threads).
    """

    def __init__(
        self,
        vault_root: Path,
        project: SessionProject,
        *,
        read_only: bool = False,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.vault_root = vault_root
        self.project = project
        self.read_only = read_only
        self.env = dict(env or {})
        # One server process serves one agent session: its hits count once per record.
        self.session_id = f"mcp-{os.getpid()}-{secrets.token_hex(4)}"
        self.actor: Actor = Actor.mcp_client(None, None, self.session_id)
        self._prepared = False
        self._write_lock = asyncio.Lock()
        self._limiter = anyio.CapacityLimiter(MAX_WORKER_THREADS)
        self._local = threading.local()

    @property
    def default_project(self) -> str | None:
        return self.project.identity.id if self.project.identity is not None else None

    async def prepare(self, session: Any) -> None:
        """Once per session, before the first tool runs: who the agent is (``initialize``) and,
        unless a project was pinned, the project of the client's first root."""
        if self._prepared or session is None:
            return
        self._prepared = True
        self.actor = agent_actor(session, self.session_id)
        if not self.project.reason.startswith("pinned"):
            rooted = await from_roots(session, self.env)
            if rooted is not None:
                self.project = rooted
                announce(rooted)
            elif self.project.awaiting_roots:
                self.project = dataclasses.replace(self.project, awaiting_roots=False)
                announce(self.project)  # asked, and the client named no usable root

    def vault(self, *, create: bool = True) -> Vault:
        """The calling thread's vault, opened on first use; a missing vault is created only by a
        call that may create it (a read says there is none)."""
        opened: Vault | None = getattr(self._local, "vault", None)
        if opened is None:
            if not create and not (self.vault_root.is_dir() and holds_vault(self.vault_root)):
                raise VaultNotFound("no vault yet: the first upsert or append creates it")
            register_auto_push()  # the agents' commits are pushed when the vault says so
            opened = Vault.open(self.vault_root)
            self._local.vault = opened
        return opened

    async def call(self, work: ToolCall, *, name: str) -> CallToolResult:
        """Run ``work`` off the event loop; never raises for anything the work does."""
        try:
            if work.writes:
                async with self._write_lock:
                    data = await self._in_thread(work)
            else:
                data = await self._in_thread(work)
        except MemositeError as exc:
            logger.info("tool %s failed: %s %s", name, exc.code, exc.message)
            return error_result(exc)
        except Exception as exc:
            logger.exception("tool %s raised unexpectedly", name)
            return error_result(from_exception(exc))
        return success_result(data, work.text(data) if work.text is not None else None)

    async def _in_thread(self, work: ToolCall) -> dict[str, Any]:
        def run() -> dict[str, Any]:
            creates = work.writes if work.creates is None else work.creates
            if creates:
                check_vault_placement(self.vault_root, self.project.product_root)  # before anything is made
            vault = self.vault(create=creates)
            vault.actor = self.actor
            vault.product_root = self.project.product_root
            project = work.project_id if work.project_id is not None else require(self.project)
            # Validates the id (no separators, no '..') before any path is built from it.
            vault.project_dir(project)
            result = work.run(vault, project)
            return result if isinstance(result, dict) else result.to_json()

        # Not abandoned on cancellation: a write that has started always runs to its end.
        return await anyio.to_thread.run_sync(run, limiter=self._limiter)
