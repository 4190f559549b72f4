"""``memosite hooks install|uninstall|status`` and ``memosite hook <event>`` (what agents run)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

import click

from memosite.cli._common import App, vault_options

_AGENT_HELP = "claude-code, gemini-cli or cursor"
_SCOPE = click.Choice(["project", "local", "user"])
_SCOPE_HELP = (
    "project: the repository's shared settings (plain `memosite` on each machine's PATH); local"
    " (Claude Code only) and user: this machine's, with absolute paths."
)


def _memosite_program() -> str:
    """The absolute path of this memosite, for settings only this machine reads."""
    running = Path(sys.argv[0])
    if running.name in ("memosite", "memosite.exe") and running.is_file():
        return str(running.absolute())
    sibling = Path(sys.executable).parent / "memosite"
    if sibling.is_file():
        return str(sibling.absolute())
    found = shutil.which("memosite")
    return str(Path(found).absolute()) if found else "memosite"


def _lines(statuses: list[Any]) -> str:
    out = []
    for status in statuses:
        state = "complete" if status.complete else ("not installed" if not status.installed else "partly installed")
        where = status.path if status.exists else f"{status.path} (no file)"
        line = f"{status.agent} [{status.scope}] {where}: memosite hooks {state}"
        if status.installed:
            line += " — " + ", ".join(
                f"{event} → {handler}" for handler, events in status.installed.items() for event in events
            )
        if status.others:
            line += f"; {status.others} other hooks kept"
        out.append(line)
        if status.note:
            out.append(f"  note: {status.note}")
    return "\n".join(out)


@click.group()
def hooks() -> None:
    """Install memosite's hooks into a coding agent: the brief at session start, matching memory
    on each prompt, the session recorded when it ends.

    Agents with a hook protocol memosite uses: claude-code, gemini-cli, cursor (no prompt hook).
    Copilot and Codex read the files `memosite agents compile` writes instead.
    """


@hooks.command()
@click.argument("agent", metavar="AGENT")
@click.option("--scope", type=_SCOPE, default="project", show_default=True, help=_SCOPE_HELP)
@vault_options
def install(app: App, agent: str, scope: str) -> None:
    """Add memosite's hooks to AGENT's settings (claude-code, gemini-cli or cursor); the settings'
    other keys and hooks stay as they are. Running it again changes nothing."""
    from memosite.agentfiles.hooksettings import HookCommand, install_hooks

    app.require_person("hooks install")
    command = HookCommand() if scope == "project" else HookCommand(_memosite_program(), str(app.vault_root))
    status = install_hooks(
        agent, scope, root=app.product_root, home=_home(app), command=command, shown=_shown(agent, scope)
    )
    said = "installed" if status.changed else "already installed"
    app.emit(status.to_json(), f"memosite hooks {said} for {agent}\n{_lines([status])}")


@hooks.command()
@click.argument("agent", metavar="AGENT")
@click.option("--scope", type=_SCOPE, default="project", show_default=True, help=_SCOPE_HELP)
@vault_options
def uninstall(app: App, agent: str, scope: str) -> None:
    """Remove memosite's hooks from AGENT's settings; nothing else in them changes."""
    from memosite.agentfiles.hooksettings import uninstall_hooks

    app.require_person("hooks uninstall")
    status = uninstall_hooks(agent, scope, root=app.product_root, home=_home(app), shown=_shown(agent, scope))
    said = "removed" if status.changed else "were not installed"
    app.emit(status.to_json(), f"memosite hooks {said} for {agent} ({status.path})")


@hooks.command()
@click.argument("agent", metavar="AGENT", required=False)
@vault_options
def status(app: App, agent: str | None) -> None:
    """Where memosite's hooks are set: for AGENT, or for every agent with a hook protocol."""
    from memosite.agentfiles.hooksettings import hook_status

    found = hook_status(agent, root=app.product_root, home=_home(app))
    app.emit({"hooks": [s.to_json() for s in found]}, _lines(found))


def _home(app: App) -> Path:
    return Path(app.env.get("HOME") or Path.home())


def _shown(agent: str, scope: str) -> str:
    from memosite.agentfiles.hookagents import agent_named

    return agent_named(agent).settings.get(scope, scope)


@click.command(
    context_settings={"ignore_unknown_options": True, "allow_extra_args": True, "help_option_names": []},
    add_help_option=False,
)
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
@click.pass_context
def hook(ctx: click.Context, args: tuple[str, ...]) -> None:
    """Run one of memosite's hooks (what an agent runs; `memosite hooks install` sets it up):
    session-start, prompt or session-end, with the agent's JSON payload on stdin."""
    from memosite.hooks.runner import main

    shared = ctx.find_root().obj if isinstance(ctx.find_root().obj, dict) else {}
    extra = [*args]
    for option, key in (("--vault", "vault"), ("--project", "project")):
        if shared.get(key) and not any(a == option or a.startswith(option + "=") for a in extra):
            extra += [option, shared[key]]
    raise SystemExit(main(extra))
