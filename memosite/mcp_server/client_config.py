"""Configuration snippets that register memosite's MCP server with a client.

Pure functions of the launch command, so the CLI can print them and tests can check them without
the SDK. Each snippet starts the server with absolute paths: clients spawn it from their own
working directory, often with a reduced ``PATH``.
"""

from __future__ import annotations

import json
import shlex
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

CLIENTS = ("claude", "cursor", "vscode")
SERVER_KEY = "memosite"


@dataclass(frozen=True)
class LaunchCommand:
    """How a client starts the server: ``command`` plus ``args``."""

    command: str
    args: list[str]

    def to_json(self) -> dict[str, object]:
        return {"command": self.command, "args": list(self.args)}


@dataclass(frozen=True)
class ClientConfig:
    """The snippet to print and a one-line hint on where it goes."""

    client: str
    snippet: str
    hint: str


def memosite_executable(argv0: str | None = None, python: str | None = None) -> list[str]:
    """The absolute command that runs this memosite: the running script when it is ``memosite``,
    else the one installed next to the interpreter, else ``python -m memosite``."""
    argv0 = sys.argv[0] if argv0 is None else argv0
    python = sys.executable if python is None else python
    running = Path(argv0)
    if running.name in ("memosite", "memosite.exe") and running.is_file():
        return [str(running.absolute())]
    sibling = Path(python).parent / "memosite"
    if sibling.is_file():
        return [str(sibling.absolute())]
    found = shutil.which("memosite")
    if found:
        return [str(Path(found).absolute())]
    return [str(Path(python).absolute()), "-m", "memosite"]


def launch_command(
    executable: list[str], vault: Path, *, project: str | None = None, read_only: bool = False
) -> LaunchCommand:
    """The server's command line. The project is pinned only when asked: left out, the server
    derives it from the directory the client starts it in (the repository being worked on)."""
    args = [*executable[1:], "mcp", "--vault", str(vault)]
    if project:
        args += ["--project", project]
    if read_only:
        args.append("--read-only")
    return LaunchCommand(command=executable[0], args=args)


def client_config(client: str, launch: LaunchCommand) -> ClientConfig:
    """The snippet for ``client`` (one of :data:`CLIENTS`)."""
    if client == "claude":
        words = ["claude", "mcp", "add", SERVER_KEY, "--", launch.command, *launch.args]
        return ClientConfig(
            client,
            shlex.join(words) + "\n",
            "Run this in your repository (add `--scope project` after `add` to share it through "
            ".mcp.json, whose `mcpServers` entry looks like `--print-config cursor`).",
        )
    if client == "cursor":
        snippet = {"mcpServers": {SERVER_KEY: launch.to_json()}}
        return ClientConfig(
            client,
            json.dumps(snippet, indent=2) + "\n",
            "Merge into ~/.cursor/mcp.json or .cursor/mcp.json (Cursor), "
            "claude_desktop_config.json (Claude Desktop) or .mcp.json (Claude Code).",
        )
    if client == "vscode":
        snippet = {"servers": {SERVER_KEY: {"type": "stdio", **launch.to_json()}}}
        return ClientConfig(
            client,
            json.dumps(snippet, indent=2) + "\n",
            "Merge into .vscode/mcp.json in your workspace (or run 'MCP: Open User Configuration').",
        )
    raise ValueError(f"unknown client {client!r}; expected one of {', '.join(CLIENTS)}")
