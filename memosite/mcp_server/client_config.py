"""Configuration snippets that register memosite's MCP server with a client.

Pure functions of the launch command, so the CLI can print them and tests can check them without
the SDK. A snippet is often shared (``.mcp.json``, ``.vscode/mcp.json`` in the repository), so it
names nothing of this machine it can do without: plain ``memosite`` when the ``memosite`` found on
``PATH`` is this very install, and no ``--vault`` when the vault is the default one (each teammate's
own ``~/.memosite``). Otherwise it names the absolute path, and a note says a teammate must change
it (clients spawn the server from their own working directory, so a relative path would not do).
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
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
    """The snippet to print, a one-line hint on where it goes, and notes on what in it is this
    machine's own (a teammate pasting it must change those)."""

    client: str
    snippet: str
    hint: str
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Portable:
    """The command and vault a snippet names, and why any of them is this machine's."""

    executable: list[str]
    vault: Path | None  # None: the default vault, left to each machine
    notes: list[str]


def _same_file(left: str | Path, right: str | Path) -> bool:
    try:
        return Path(left).resolve() == Path(right).resolve()
    except OSError:
        return False


def portable_executable(executable: list[str], env: Mapping[str, str]) -> tuple[list[str], str | None]:
    """``["memosite"]`` when the ``memosite`` on ``env``'s ``PATH`` resolves to the same script as
    ``executable``; else ``executable`` and why it is not (no memosite on PATH, or another one)."""
    found = shutil.which("memosite", path=env.get("PATH", os.defpath))
    if len(executable) == 1 and found is not None and _same_file(found, executable[0]):
        return ["memosite"], None
    return executable, "no memosite on PATH" if found is None else f"the memosite on PATH ({found}) is another install"


def portable_launch(executable: list[str], vault: Path, default_vault: Path, env: Mapping[str, str]) -> Portable:
    """:func:`portable_executable`, and no vault when ``vault`` is ``default_vault``. Notes say
    what stays absolute and why."""
    notes: list[str] = []
    executable, why = portable_executable(executable, env)
    if why is not None:
        notes.append(
            f"the command is this machine's {shlex.join(executable)} ({why}): a teammate puts their own"
            " memosite there, or `memosite` once it is on their PATH"
        )
    if _same_file(vault, default_vault):
        return Portable(executable, None, notes)
    notes.append(f"--vault {vault} is this machine's path: a teammate names their own vault there")
    return Portable(executable, vault, notes)


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
    executable: list[str], vault: Path | None, *, project: str | None = None, read_only: bool = False
) -> LaunchCommand:
    """The server's command line (``--vault`` only when a vault is named: None leaves the server
    its default). The project is pinned only when asked: left out, the server derives it from the
    directory the client starts it in (the repository being worked on)."""
    args = [*executable[1:], "mcp"]
    if vault is not None:
        args += ["--vault", str(vault)]
    if project:
        args += ["--project", project]
    if read_only:
        args.append("--read-only")
    return LaunchCommand(command=executable[0], args=args)


def client_config(client: str, launch: LaunchCommand, notes: list[str] | None = None) -> ClientConfig:
    """The snippet for ``client`` (one of :data:`CLIENTS`), with ``notes`` on what in it is this
    machine's."""
    notes = list(notes or [])
    if client == "claude":
        words = ["claude", "mcp", "add", SERVER_KEY, "--", launch.command, *launch.args]
        return ClientConfig(
            client,
            shlex.join(words) + "\n",
            "Run this in your repository (add `--scope project` after `add` to share it through "
            ".mcp.json, whose `mcpServers` entry looks like `--print-config cursor`).",
            notes,
        )
    if client == "cursor":
        snippet = {"mcpServers": {SERVER_KEY: launch.to_json()}}
        return ClientConfig(
            client,
            json.dumps(snippet, indent=2) + "\n",
            "Merge into ~/.cursor/mcp.json or .cursor/mcp.json (Cursor), "
            "claude_desktop_config.json (Claude Desktop) or .mcp.json (Claude Code).",
            notes,
        )
    if client == "vscode":
        snippet = {"servers": {SERVER_KEY: {"type": "stdio", **launch.to_json()}}}
        return ClientConfig(
            client,
            json.dumps(snippet, indent=2) + "\n",
            "Merge into .vscode/mcp.json in your workspace (or run 'MCP: Open User Configuration').",
            notes,
        )
    raise ValueError(f"unknown client {client!r}; expected one of {', '.join(CLIENTS)}")
