"""``memosite mcp``: serve the vault to coding agents over MCP (stdio), or print client config."""

from __future__ import annotations

import os
import sys

import click

from memosite.config import working_directory


@click.command()
@click.option("--vault", "vault_arg", metavar="DIR", help="Vault directory (default: MEMOSITE_VAULT or ~/.memosite).")
@click.option(
    "--project",
    "project_arg",
    metavar="ID",
    help="Default project for tool calls (default: MEMOSITE_PROJECT, or derived from "
    "the directory the client starts the server in).",
)
@click.option(
    "--read-only", is_flag=True, help="Offer only the read tools (get, search, bootstrap, rank); count no hits."
)
@click.option(
    "--print-config",
    "client",
    type=click.Choice(["claude", "cursor", "vscode"]),
    help="Print the snippet that adds this server to Claude Code, Claude Desktop/Cursor or VS Code, then exit.",
)
def mcp(vault_arg: str | None, project_arg: str | None, read_only: bool, client: str | None) -> None:
    """Run memosite's MCP server on stdin/stdout.

    Agents get the tools upsert, get, append, forget, restore, gc, search, bootstrap and rank.
    Nothing but protocol goes to stdout; warnings and logs go to stderr. Several servers (one per
    agent session) may share a vault.
    """
    from memosite.config import VaultConfig, load_config, resolve_vault_root, validate_project_id
    from memosite.errors import MemositeError

    env = dict(os.environ)
    shared = click.get_current_context().find_root().obj or {}
    vault_arg = vault_arg if vault_arg is not None else shared.get("vault")
    project_arg = project_arg if project_arg is not None else shared.get("project")
    try:
        root = resolve_vault_root(vault_arg, env)
        if client is not None:
            _print_config(client, root, project_arg, read_only, env)
            return
        from memosite.mcp_server import run_stdio
        from memosite.mcp_server.project import announce, at_start
        from memosite.vault import Vault

        project = at_start(project_arg, env, working_directory())
        if project.identity is not None:
            validate_project_id(project.identity.id)
        # Opened, not created: the first write makes the vault, once it is known not to lie in the
        # repository being worked on (which may come from the client's roots).
        vault = Vault(root=root, config=load_config(root) if root.is_dir() else VaultConfig())
        if sys.stdin.isatty():
            sys.stderr.write(
                "memosite: serving MCP on stdin/stdout; a client starts this for you, see "
                "`memosite mcp --print-config claude`. Ctrl-C to stop.\n"
            )
        announce(project)
        run_stdio(vault, project, read_only=read_only, env=env)
    except MemositeError as exc:
        sys.stderr.write(f"memosite: error: {exc.message}\n")
        raise SystemExit(exc.exit_code) from None


def _print_config(client: str, root: object, project: str | None, read_only: bool, env: dict[str, str]) -> None:
    """The snippet always pins the project: a client starts the server wherever it likes (often
    ``/`` or the home directory), so the project of the directory this runs in is written in. It
    names this machine's paths only where it must (see :mod:`memosite.mcp_server.client_config`)."""
    from pathlib import Path

    from memosite.config import default_vault_root, resolve_project, validate_project_id
    from memosite.errors import InvalidArguments
    from memosite.mcp_server.client_config import client_config, launch_command, memosite_executable, portable_launch
    from memosite.mcp_server.project import is_meaningless_directory

    here = working_directory()
    if project:
        pinned = validate_project_id(project)
    elif env.get("MEMOSITE_PROJECT") or not is_meaningless_directory(here, env):
        pinned = resolve_project(None, env, cwd=here).id
    else:
        raise InvalidArguments(
            f"which project? {here} is no project: run this in your repository, or pass --project ID"
        )
    portable = portable_launch(memosite_executable(), Path(str(root)), default_vault_root(env), env)
    launch = launch_command(portable.executable, portable.vault, project=pinned, read_only=read_only)
    config = client_config(client, launch, portable.notes)
    sys.stdout.write(config.snippet)
    sys.stderr.write(f"# {config.hint}\n")
    for note in config.notes:
        sys.stderr.write(f"# note: {note}\n")
