"""The MCP server: memosite's core API as tools over stdio, built on the SDK's ``MCPServer``."""

from __future__ import annotations

import contextlib
import inspect
import logging
import sys
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.types import ToolAnnotations
from pydantic import ConfigDict, ValidationError

from memosite.config import ProjectIdentity
from memosite.errors import InvalidArguments, MemositeError
from memosite.inputs import check_arguments
from memosite.mcp_server.project import SessionProject
from memosite.mcp_server.runtime import ToolRuntime, error_result
from memosite.mcp_server.schemas import OUTPUT_SCHEMAS
from memosite.vault import Vault
from memosite.version import __version__

logger = logging.getLogger("memosite.mcp")

SERVER_NAME = "memosite"


def _instructions(project: str | None, read_only: bool) -> str:
    which = f"project {project!r}" if project else "the project of your first root"
    mode = (
        "This server is read-only: it can look memory up but not change it."
        if read_only
        else "Write with upsert (traps, decisions, specs, plans, state), append (log events), forget/restore and gc."
    )
    return (
        f"memosite is this project's durable memory ({which}). At the start of a task "
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
            check_arguments(arguments or {})
            await self.runtime.prepare(_session_of(context))
            return await super().call_tool(name, arguments, context)
        except MemositeError as exc:
            return error_result(exc)
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


WRITE_TOOL_NAMES = frozenset({"upsert", "append", "forget", "restore", "gc", "memory"})


def _session_of(context: Any) -> Any:
    """The client session behind a tool call's context (None outside a request)."""
    try:
        return context.request_context.session if context is not None else None
    except (AttributeError, ValueError, LookupError):
        return None


def describe_validation_error(tool: str, error: ValidationError) -> str:
    """One line naming each bad argument and what was expected (never echoing the value)."""
    unknown = [str(item["loc"][0]) for item in error.errors() if item.get("type") == "extra_forbidden" and item["loc"]]
    problems = [f"unknown argument{'s' if len(unknown) > 1 else ''} {', '.join(unknown)}"] if unknown else []
    for item in error.errors():
        if item.get("type") == "extra_forbidden":
            continue
        where = ".".join(str(part) for part in item.get("loc", ())) or "arguments"
        problems.append(f"{where}: {item.get('msg', 'invalid value')}")
    return f"invalid arguments for {tool}: " + "; ".join(problems)


def _make_strict(tool: Any) -> None:
    """Refuse arguments the tool does not take (an agent's misspelt or invented argument must not
    be dropped without a word), in the advertised schema and in validation; and take each value only
    as the type its schema says: ``"yes"`` is no boolean (``purge: "yes"`` must not purge) and
    ``"5"`` no integer."""
    model = tool.fn_metadata.arg_model
    config = ConfigDict(extra="forbid", arbitrary_types_allowed=True, strict=True)
    strict = type(model.__name__, (model,), {"model_config": config})
    tool.fn_metadata.arg_model = strict
    tool.parameters = {**tool.parameters, "additionalProperties": False}


def build_server(
    vault: Vault,
    project: SessionProject | str | None,
    *,
    read_only: bool = False,
    env: Mapping[str, str] | None = None,
) -> MemositeMCP:
    """A server exposing memosite's tools for ``vault``; ``read_only`` keeps only the read tools.

    ``project`` is the session's project as known at start (a plain id pins it). The vault's root
    is shared, not the object: every worker thread opens its own ``Vault``.
    """
    if not isinstance(project, SessionProject):
        if project is not None:
            vault.project_dir(project)  # reject a bad project id before serving
        identity = ProjectIdentity(project, project, "explicit") if project is not None else None
        project = SessionProject(identity, "pinned by the caller" if identity else "no project")
    runtime = ToolRuntime(vault.root, project, read_only=read_only, env=env)
    server = MemositeMCP(
        runtime,
        name=SERVER_NAME,
        title="memosite",
        description="Durable project memory for coding agents, kept as Markdown.",
        instructions=_instructions(runtime.default_project, read_only),
        version=__version__,
        lifespan=_stdout_guard,
        log_level="WARNING",
    )
    for name, fn, hints in _tool_table(runtime):
        if read_only and not hints.read_only_hint:
            continue
        server.add_tool(fn, name=name, title=hints.title, description=inspect.getdoc(fn), annotations=hints)
        tool = server._tool_manager.get_tool(name)
        assert tool is not None
        _make_strict(tool)
        if name in OUTPUT_SCHEMAS:
            tool.fn_metadata.output_schema = OUTPUT_SCHEMAS[name]
            tool.__dict__.pop("output_schema", None)  # a cached_property: read it again
    return server


def _tool_table(runtime: ToolRuntime) -> list[tuple[str, Callable[..., Any], ToolAnnotations]]:
    from memosite.mcp_server.memory_tool import MEMORY_TOOL_HINTS, MemoryTool
    from memosite.mcp_server.retrieval_tools import RETRIEVAL_TOOL_HINTS, RetrievalTools
    from memosite.mcp_server.store_tools import STORE_TOOL_HINTS, StoreTools

    store = StoreTools(runtime)
    retrieval = RetrievalTools(runtime)
    memory = MemoryTool(runtime)
    table: list[tuple[str, Callable[..., Any], ToolAnnotations]] = []
    for name, hints in STORE_TOOL_HINTS.items():
        table.append((name, getattr(store, name), hints))
    for name, hints in RETRIEVAL_TOOL_HINTS.items():
        table.append((name, getattr(retrieval, name), hints))
    for name, hints in MEMORY_TOOL_HINTS.items():
        table.append((name, getattr(memory, name), hints))
    return table


@contextlib.asynccontextmanager
async def _stdout_guard(_server: MCPServer[Any]) -> AsyncIterator[dict[str, Any]]:
    """While serving, anything that writes to ``sys.stdout`` lands on stderr.

    The stdio transport already owns the protocol stream; this keeps a stray ``print`` in a
    library from corrupting it. It runs after the transport has claimed stdout.
    """
    with contextlib.redirect_stdout(sys.stderr):
        yield {}


def run_stdio(
    vault: Vault, project: SessionProject | str | None, *, read_only: bool = False, env: Mapping[str, str] | None = None
) -> None:
    """Serve over stdin/stdout until the client closes the connection."""
    server = build_server(vault, project, read_only=read_only, env=env)
    with contextlib.suppress(KeyboardInterrupt):
        anyio.run(server.run_stdio_async)


__all__ = ["MemositeMCP", "build_server", "describe_validation_error", "run_stdio"]
