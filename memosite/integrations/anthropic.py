"""Claude's memory tool with memosite as its storage: ``BetaAbstractMemoryTool`` subclasses.

Needs the ``anthropic`` extra (``pip install 'memosite[anthropic]'``)::

    from anthropic import Anthropic
    from memosite.integrations.anthropic import MemositeMemoryTool

    memory = MemositeMemoryTool(vault="~/.memosite", project="shop")
    runner = Anthropic().beta.messages.tool_runner(
        model=..., max_tokens=2048, tools=[memory], messages=[{"role": "user", "content": "..."}]
    )

What the model keeps under ``/memories`` becomes records of the project (see
:mod:`memosite.memorytool`): it acts as an agent, so its writes are ``source: agent`` (author the
``client`` name given here) and wait for review where the vault's policy requires it. A command the
tool refuses raises the SDK's ``ToolError`` with the text the memory tool's documentation gives.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread

try:
    from anthropic.lib.tools import BetaAbstractMemoryTool, BetaAsyncAbstractMemoryTool, ToolError
    from anthropic.types.beta import (
        BetaCacheControlEphemeralParam,
        BetaMemoryTool20250818CreateCommand,
        BetaMemoryTool20250818DeleteCommand,
        BetaMemoryTool20250818InsertCommand,
        BetaMemoryTool20250818RenameCommand,
        BetaMemoryTool20250818StrReplaceCommand,
        BetaMemoryTool20250818ViewCommand,
    )
except ImportError as exc:  # pragma: no cover - depends on the installed extras
    raise ImportError(
        "memosite.integrations.anthropic needs the anthropic SDK: pip install 'memosite[anthropic]'"
    ) from exc

from memosite.errors import MemositeError, from_exception
from memosite.memorytool.backend import DEFAULT_IDLE_TTL, MemoryBackend
from memosite.provenance import Actor
from memosite.sync.autopush import register_auto_push
from memosite.vault import Vault

DEFAULT_CLIENT = "claude memory tool"
_FIELDS = (
    "path",
    "view_range",
    "file_text",
    "old_str",
    "new_str",
    "insert_line",
    "insert_text",
    "old_path",
    "new_path",
)


def _arguments(command: Any) -> dict[str, Any]:
    """A command as the API sent it: the tool-use block's input as it is, or a command model (the
    SDK builds those unchecked: absent fields are absent)."""
    if isinstance(command, dict):
        return dict(command)
    found = {name: getattr(command, name, None) for name in _FIELDS}
    return {"command": getattr(command, "command", None), **{k: v for k, v in found.items() if v is not None}}


class _Backends:
    """One backend per thread (a vault's index connection may not cross threads)."""

    def __init__(self, vault: str | Path, project: str, client: str, idle_ttl: str) -> None:
        self.root = Path(vault).expanduser()
        self.project = project
        self.actor = Actor.mcp_client(client, None, None)
        self.idle_ttl = idle_ttl
        self._local = threading.local()
        self.get()  # a bad project id or an unusable vault fails here, not on the first command

    def get(self) -> MemoryBackend:
        backend: MemoryBackend | None = getattr(self._local, "backend", None)
        if backend is None:
            register_auto_push()  # the agent's commits are pushed when the vault says so
            vault = Vault.open(self.root)
            vault.actor = self.actor
            backend = MemoryBackend(vault, self.project, idle_ttl=self.idle_ttl)
            self._local.backend = backend
        return backend

    def run(self, command: Any) -> str:
        try:
            return self.get().run(_arguments(command))
        except MemositeError as exc:
            raise ToolError(exc.message) from exc
        except Exception as exc:  # an unexpected failure still reaches the model as one clear line
            raise ToolError(f"Error: {from_exception(exc).message}") from exc


class MemositeMemoryTool(BetaAbstractMemoryTool):
    """The memory tool backed by the memosite vault at ``vault``, for ``project``.

    ``client`` names the application in the records' provenance (``author``) and the vault's
    commits (``<client> via memosite``); ``idle_ttl`` is how long a working note the model keeps
    outside the kind directories lives after its last write (``"30d"``).
    """

    def __init__(
        self,
        *,
        vault: str | Path,
        project: str,
        client: str = DEFAULT_CLIENT,
        idle_ttl: str = DEFAULT_IDLE_TTL,
        cache_control: BetaCacheControlEphemeralParam | None = None,
    ) -> None:
        super().__init__(cache_control=cache_control)
        self._backends = _Backends(vault, project, client, idle_ttl)

    def call(self, input: object) -> str:
        """Run one tool-use block's input (the SDK's runner calls this): checked here, whole, so an
        unknown command or a stray argument is the tool's refusal, not an exception."""
        return self._backends.run(input)

    def execute(self, command: Any) -> str:
        return self._backends.run(command)

    def view(self, command: BetaMemoryTool20250818ViewCommand) -> str:
        return self._backends.run(command)

    def create(self, command: BetaMemoryTool20250818CreateCommand) -> str:
        return self._backends.run(command)

    def str_replace(self, command: BetaMemoryTool20250818StrReplaceCommand) -> str:
        return self._backends.run(command)

    def insert(self, command: BetaMemoryTool20250818InsertCommand) -> str:
        return self._backends.run(command)

    def delete(self, command: BetaMemoryTool20250818DeleteCommand) -> str:
        return self._backends.run(command)

    def rename(self, command: BetaMemoryTool20250818RenameCommand) -> str:
        return self._backends.run(command)

    def clear_all_memory(self) -> str:
        """Refused: an agent never clears a team's memory (a person archives records with the CLI)."""
        raise ToolError("Error: clearing all memory is not available: memosite keeps the team's memory")


class AsyncMemositeMemoryTool(BetaAsyncAbstractMemoryTool):
    """:class:`MemositeMemoryTool` for the async client: each command runs on a worker thread, one
    at a time."""

    def __init__(
        self,
        *,
        vault: str | Path,
        project: str,
        client: str = DEFAULT_CLIENT,
        idle_ttl: str = DEFAULT_IDLE_TTL,
        cache_control: BetaCacheControlEphemeralParam | None = None,
    ) -> None:
        super().__init__(cache_control=cache_control)
        self._backends = _Backends(vault, project, client, idle_ttl)
        self._lock = anyio.Lock()

    async def call(self, input: object) -> str:
        """Run one tool-use block's input (the SDK's runner awaits this)."""
        return await self._run(input)

    async def execute(self, command: Any) -> str:
        return await self._run(command)

    async def _run(self, command: Any) -> str:
        run: Callable[[Any], str] = self._backends.run
        async with self._lock:
            return await anyio.to_thread.run_sync(run, command)

    async def view(self, command: BetaMemoryTool20250818ViewCommand) -> str:
        return await self._run(command)

    async def create(self, command: BetaMemoryTool20250818CreateCommand) -> str:
        return await self._run(command)

    async def str_replace(self, command: BetaMemoryTool20250818StrReplaceCommand) -> str:
        return await self._run(command)

    async def insert(self, command: BetaMemoryTool20250818InsertCommand) -> str:
        return await self._run(command)

    async def delete(self, command: BetaMemoryTool20250818DeleteCommand) -> str:
        return await self._run(command)

    async def rename(self, command: BetaMemoryTool20250818RenameCommand) -> str:
        return await self._run(command)

    async def clear_all_memory(self) -> str:
        raise ToolError("Error: clearing all memory is not available: memosite keeps the team's memory")


__all__ = ["AsyncMemositeMemoryTool", "MemositeMemoryTool"]
