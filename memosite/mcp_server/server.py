"""The MCP server: memosite's core API as tools over stdio, built on the SDK's ``MCPServer``."""

from __future__ import annotations

import contextlib
import inspect
import logging
import sys
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.types import ToolAnnotations
from pydantic import ValidationError

from memosite import __version__
from memosite.errors import InvalidArguments, MemositeError
from memosite.mcp_server.runtime import ToolRuntime, error_result
from memosite.vault import Vault

logger = logging.getLogger("memosite.mcp")

SERVER_NAME = "memosite"


def _instructions(project: str, read_only: bool) -> str:
    mode = (
        "This server is read-only: it can look memory up but not change it."
        if read_only
        else "Write with upsert (traps, decisions, specs, plans, state), append (log events), forget/restore and gc."
    )
    return (
        f"memosite is this project's durable memory (project '{project}'). At the start of a task "
        "call bootstrap for a brief of the traps, decisions and current state; before changing a "
        "file, search with its path to see the traps recorded for it. When something bites you, "
        "upsert a trap; when you choose between options, upsert a decision with the reasons. "
        f"{mode} Errors come back as 'CODE: message' (for example RECORD_NOT_FOUND or "
        "INVALID_ARGUMENTS) and never need a retry of the connection."
    )


class MemositeMCP(MCPServer[Any]):
    """``MCPServer`` whose tool failures always carry a memosite error code.

    The SDK validates arguments against the input schema before a tool runs and reports a
    mismatch (or an unknown tool) as plain text; here those become ``INVALID_ARGUMENTS`` errors,
    and anything a tool lets escape becomes ``INTERNAL_ERROR``, so a client can branch on the code.
    """

    def __init__(self, runtime: ToolRuntime, **settings: Any) -> None:
        super().__init__(**settings)
        self.runtime = runtime

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        try:
            return await super().call_tool(name, arguments, context)
        except UnexpectedToolError as exc:
            cause = exc.__cause__
            if isinstance(cause, MemositeError):
                return error_result(cause)
            logger.error("tool %s raised unexpectedly: %r", name, cause)
            detail = f"{type(cause).__name__}: {cause}" if cause is not None else str(exc)
            return error_result(MemositeError(f"unexpected {detail}"))
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(cause, ValidationError):
                return error_result(InvalidArguments(describe_validation_error(name, cause)))
            if isinstance(cause, MemositeError):
                return error_result(cause)
            if await self._is_unknown(name):
                return error_result(InvalidArguments(self._unknown_message(name)))
            return error_result(InvalidArguments(str(exc)))

    async def _is_unknown(self, name: str) -> bool:
        return all(tool.name != name for tool in await self.list_tools())

    def _unknown_message(self, name: str) -> str:
        if self.runtime.read_only and name in WRITE_TOOL_NAMES:
            return f"tool {name!r} is not available: this server runs read-only (--read-only)"
        return f"unknown tool {name!r}"


WRITE_TOOL_NAMES = frozenset({"upsert", "append", "forget", "restore", "gc"})


def describe_validation_error(tool: str, error: ValidationError) -> str:
    """One line naming each bad argument and what was expected (never echoing the value)."""
    problems = []
    for item in error.errors():
        where = ".".join(str(part) for part in item.get("loc", ())) or "arguments"
        problems.append(f"{where}: {item.get('msg', 'invalid value')}")
    return f"invalid arguments for {tool}: " + "; ".join(problems)


def build_server(vault: Vault, default_project: str, *, read_only: bool = False) -> MemositeMCP:
    """A server exposing memosite's tools for ``vault``; ``read_only`` keeps only the read tools.

    The vault's root is shared, not the object: every worker thread opens its own ``Vault``.
    """
    vault.project_dir(default_project)  # reject a bad project id before serving
    runtime = ToolRuntime(vault.root, default_project, read_only=read_only)
    server = MemositeMCP(
        runtime,
        name=SERVER_NAME,
        title="memosite",
        description="Durable project memory for coding agents, kept as Markdown.",
        instructions=_instructions(default_project, read_only),
        version=__version__,
        lifespan=_stdout_guard,
        log_level="WARNING",
    )
    for name, fn, hints in _tool_table(runtime):
        if read_only and not hints.read_only_hint:
            continue
        server.add_tool(fn, name=name, title=hints.title, description=inspect.getdoc(fn), annotations=hints)
    return server


def _tool_table(runtime: ToolRuntime) -> list[tuple[str, Callable[..., Any], ToolAnnotations]]:
    from memosite.mcp_server.retrieval_tools import RETRIEVAL_TOOL_HINTS, RetrievalTools
    from memosite.mcp_server.store_tools import STORE_TOOL_HINTS, StoreTools

    store = StoreTools(runtime)
    retrieval = RetrievalTools(runtime)
    table: list[tuple[str, Callable[..., Any], ToolAnnotations]] = []
    for name, hints in STORE_TOOL_HINTS.items():
        table.append((name, getattr(store, name), hints))
    for name, hints in RETRIEVAL_TOOL_HINTS.items():
        table.append((name, getattr(retrieval, name), hints))
    return table


@contextlib.asynccontextmanager
async def _stdout_guard(_server: MCPServer[Any]) -> AsyncIterator[dict[str, Any]]:
    """While serving, anything that writes to ``sys.stdout`` lands on stderr.

    The stdio transport already owns the protocol stream; this keeps a stray ``print`` in a
    library from corrupting it. It runs after the transport has claimed stdout.
    """
    with contextlib.redirect_stdout(sys.stderr):
        yield {}


def run_stdio(vault: Vault, default_project: str, *, read_only: bool = False) -> None:
    """Serve over stdin/stdout until the client closes the connection."""
    server = build_server(vault, default_project, read_only=read_only)
    with contextlib.suppress(KeyboardInterrupt):
        anyio.run(server.run_stdio_async)


__all__ = ["MemositeMCP", "build_server", "describe_validation_error", "run_stdio"]
