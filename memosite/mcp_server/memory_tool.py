"""The ``memory`` tool: Claude's memory tool commands over MCP, for clients whose model knows that
tool but talk MCP. One implementation with the SDK classes: :class:`memosite.memorytool.MemoryBackend`.

Arguments are the memory tool's own (``command``, ``path``, ``view_range``, ``file_text``,
``old_str``, ``new_str``, ``insert_line``, ``insert_text``, ``old_path``, ``new_path``), plus the
``projectId`` every memosite tool takes. A result is the tool's text; a refusal is an error result
whose text is the tool's error text (its structured content still carries the memosite code).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field

from memosite.mcp_server.runtime import ToolCall, ToolRuntime, tool_hints
from memosite.mcp_server.store_tools import ProjectId
from memosite.vault import Vault

MemoryCommand = Literal["view", "create", "str_replace", "insert", "delete", "rename"]


class MemoryTool:
    """The bound ``memory`` method registered as an MCP tool."""

    def __init__(self, runtime: ToolRuntime) -> None:
        self.runtime = runtime

    async def memory(
        self,
        command: Annotated[MemoryCommand, Field(description="The memory command to run.")],
        path: Annotated[
            str | None, Field(description="The file or directory, under /memories (view, create, str_replace, …).")
        ] = None,
        view_range: Annotated[
            list[int] | None, Field(description="view: the first and last line to show; -1 as last means the end.")
        ] = None,
        file_text: Annotated[str | None, Field(description="create: the whole text of the new file.")] = None,
        old_str: Annotated[str | None, Field(description="str_replace: the text to replace (exactly once).")] = None,
        new_str: Annotated[str | None, Field(description="str_replace: the text to put in its place.")] = None,
        insert_line: Annotated[
            int | None, Field(description="insert: the line after which to insert (0: top).")
        ] = None,
        insert_text: Annotated[str | None, Field(description="insert: the text to insert.")] = None,
        old_path: Annotated[str | None, Field(description="rename: the file or directory to move.")] = None,
        new_path: Annotated[str | None, Field(description="rename: where it goes.")] = None,
        projectId: ProjectId = None,
    ) -> CallToolResult:
        """Claude's memory tool (view, create, str_replace, insert, delete, rename files under
        /memories), kept as this project's memosite records.

        /memories/traps/, /memories/decisions/, /memories/specs/ and /memories/plans/ hold records
        of that kind; any other file is a working note (it expires 30 days after its last write).
        Start with `view /memories`: it lists the files, newest first. A file's --- block holds its
        fields (title, tags, severity, …); delete archives a file, it is never destroyed.
        """
        from memosite.memorytool.backend import MemoryBackend

        arguments: dict[str, Any] = {
            "command": command,
            "path": path,
            "view_range": view_range,
            "file_text": file_text,
            "old_str": old_str,
            "new_str": new_str,
            "insert_line": insert_line,
            "insert_text": insert_text,
            "old_path": old_path,
            "new_path": new_path,
        }

        def run(vault: Vault, project: str) -> dict[str, Any]:
            return {"result": MemoryBackend(vault, project).run(arguments)}

        reads = command == "view"
        result = await self.runtime.call(
            ToolCall(run, projectId, writes=not reads, creates=not reads, text=lambda data: str(data["result"])),
            name="memory",
        )
        error = (result.structured_content or {}).get("error") if result.is_error else None
        if isinstance(error, dict):
            if reads and error.get("code") == "VAULT_NOT_FOUND" and isinstance(path, str):
                return _view_empty(path)
            # The tool's own text, as a model trained on the memory tool expects it.
            result.content = [TextContent(type="text", text=str(error.get("message", "")))]
        return result


def _view_empty(path: str) -> CallToolResult:
    from memosite.errors import MemositeError
    from memosite.mcp_server.runtime import error_result
    from memosite.memorytool.reading import view_without_vault

    try:
        text = view_without_vault(path)
    except MemositeError as exc:
        failed = error_result(exc)
        failed.content = [TextContent(type="text", text=exc.message)]
        return failed
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content={"result": text})


MEMORY_TOOL_HINTS: dict[str, ToolAnnotations] = {
    "memory": tool_hints(read_only=False, title="Claude's memory tool (/memories) on this project's memory"),
}
