"""The ``memosite`` command line: a thin layer that parses, calls the core API and prints.

Sub-commands live in small modules and are imported only when used, so a ``memosite search``
call does not pay for mkdocs, watchdog or the MCP SDK.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import sys
from typing import Any

import click

# command name -> "module:attribute"; modules are imported on first use.
COMMANDS: dict[str, str] = {
    "init": "memosite.cli.workspace:init",
    "status": "memosite.cli.workspace:status",
    "config": "memosite.cli.config:config",
    "edit": "memosite.cli.records:edit",
    "verify": "memosite.cli.trust:verify",
    "review": "memosite.cli.trust:review",
    "upsert": "memosite.cli.records:upsert",
    "get": "memosite.cli.records:get",
    "append": "memosite.cli.records:append",
    "forget": "memosite.cli.records:forget",
    "restore": "memosite.cli.records:restore",
    "list": "memosite.cli.records:list_",
    "compile": "memosite.cli.records:compile_",
    "reindex": "memosite.cli.records:reindex",
    "demo": "memosite.cli.demo:demo",
    "gc": "memosite.cli.curator:gc",
    "search": "memosite.cli.curator:search",
    "bootstrap": "memosite.cli.curator:bootstrap",
    "rank": "memosite.cli.curator:rank",
    "feedback": "memosite.cli.curator:feedback",
    "session": "memosite.cli.sessions:session",
    "mcp": "memosite.cli.mcp:mcp",
    "build": "memosite.cli.site:build",
    "serve": "memosite.cli.site:serve",
    "watch": "memosite.cli.site:watch",
    "publish": "memosite.cli.site:publish",
    "export-docs": "memosite.cli.export:export_docs",
    "stormbuffer": "memosite.cli.stormbuffer:stormbuffer",
    "import": "memosite.cli.importing:import_",
    "sync": "memosite.cli.sync:sync",
    "conflicts": "memosite.cli.sync:conflicts",
    "resolve": "memosite.cli.sync:resolve",
    "agents": "memosite.cli.agents:agents",
    "hooks": "memosite.cli.hooks:hooks",
    "hook": "memosite.cli.hooks:hook",
}


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(name for name in COMMANDS if self._available(name))

    @staticmethod
    def _available(name: str) -> bool:
        module_name = COMMANDS[name].split(":")[0]
        return importlib.util.find_spec(module_name) is not None

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(cmd_name)
        if target is None:
            return None
        module_name, attribute = target.split(":")
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name == module_name:
                return None
            raise
        command: click.Command = getattr(module, attribute)
        return command

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        """click names the closest commands only among those it has loaded (none, here): a
        mistyped command is answered with the closest names of :data:`COMMANDS` instead."""
        name = args[0] if args else ""
        if name and not name.startswith("-") and name not in COMMANDS and not ctx.resilient_parsing:
            from memosite.suggest import near_misses

            near = near_misses(name, self.list_commands(ctx))
            hint = f" Did you mean {' or '.join(repr(n) for n in near)}?" if near else ""
            raise click.UsageError(f"No such command {name!r}.{hint}", ctx)
        return super().resolve_command(ctx, args)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="memosite")
@click.option("--vault", "vault_arg", metavar="DIR", help="Vault directory, for every command after it.")
@click.option("--project", "project_arg", metavar="ID", help="Project id, for every command after it.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object on stdout.")
@click.pass_context
def cli(ctx: click.Context, vault_arg: str | None, project_arg: str | None, as_json: bool) -> None:
    """memosite: durable project memory for coding agents, kept as Markdown.

    Every command takes --vault DIR (or MEMOSITE_VAULT; default ~/.memosite),
    --project ID (or MEMOSITE_PROJECT; default from .memosite.toml, the git
    repository or the directory name) and --json for machine-readable output,
    before or after the command's name.
    """
    ctx.obj = {"vault": vault_arg, "project": project_arg, "json": as_json}


def main(argv: list[str] | None = None) -> Any:
    """Run the CLI on ``argv``. The console script (:mod:`memosite.console`) sends ``hook`` past
    click to the hook runner first; here ``hook`` is click's command like any other."""
    args = sys.argv[1:] if argv is None else argv
    try:
        return cli.main(args=args, prog_name="memosite", standalone_mode=False)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.Abort:
        sys.stderr.write("memosite: aborted\n")
        sys.exit(1)
    except click.ClickException as exc:
        # Usage errors: exit 2. With --json stdout still carries exactly one JSON object.
        if "--json" in args:
            payload = {"error": {"code": "USAGE_ERROR", "message": exc.format_message()}}
            sys.stdout.write(json.dumps(payload) + "\n")
        else:
            exc.show()
        sys.exit(exc.exit_code)
