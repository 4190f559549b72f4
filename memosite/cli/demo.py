"""``memosite demo``: write a realistic sample vault and compile its views."""

from __future__ import annotations

import shlex

import click

from memosite.cli._common import App, vault_options_with


@click.command()
@click.option("--serve", "serve_site", is_flag=True, help="Then build the site and serve it with live reload.")
@click.option("--dev-addr", default="127.0.0.1:8000", show_default=True, help="Where --serve listens.")
@vault_options_with(
    vault_help="Where the demo vault goes (default: ~/.local/share/memosite/demo, or $XDG_DATA_HOME/memosite/demo;"
    " never MEMOSITE_VAULT or ~/.memosite).",
    project_help="The demo's project (default: acme-shop).",
)
def demo(app: App, serve_site: bool, dev_addr: str) -> None:
    """Write a sample vault: every kind, TTLs, a superseded decision, logs over two months.

    The demo vault goes to ~/.local/share/memosite/demo (or --vault DIR), never into your real
    vault nor the directory you are in; the files agents read (AGENTS.md and rule files, as
    `memosite agents compile` writes them) go beside it, to demo-repo. It then prints the commands
    that query it from any directory. Run again, it adds only what is missing.
    """
    from pathlib import Path

    from memosite.demo import (
        DEMO_PROJECT,
        default_demo_root,
        demo_commands,
        demo_repository,
        write_demo_agent_files,
        write_demo_vault,
    )

    if serve_site:
        from memosite.site.server import parse_dev_addr

        parse_dev_addr(dev_addr)  # a bad address fails before anything is written
    from memosite.errors import SafetyViolation
    from memosite.mcp_server.client_config import memosite_executable, portable_executable
    from memosite.vault import Vault
    from memosite.views import write_views
    from memosite.workspace import check_vault_placement

    root = Path(app.vault_arg).absolute() if app.vault_arg else default_demo_root(app.env)
    # A demo inside the repository you stand in could not be written to later (memosite refuses a
    # vault there) and would show in its git status: refused before anything is created.
    try:
        for place in (root, demo_repository(root)):
            check_vault_placement(place, app.product_root)
    except SafetyViolation as exc:
        raise SafetyViolation(
            f"refusing to write the demo into {root}: it lies inside the repository {app.product_root}, where"
            " memosite will not write a vault; leave --vault out (the demo then goes to"
            f" {default_demo_root(app.env)}) or name a directory outside the repository",
            details=exc.details,
        ) from None
    vault = Vault.open(root)
    project = app.project_arg or DEMO_PROJECT
    try:
        result = write_demo_vault(vault, project)
        with vault.lock():
            views = write_views(vault, project)
        agent_files = write_demo_agent_files(vault, project)
    finally:
        vault.close()
    written = f"{result.records} sample records written" if result.records else "sample records already there"
    lines = [f"demo vault: {vault.root}, project {project} ({written})"]
    lines += [f"  {vault.relative(path)}" for path in views]
    program, _ = portable_executable(memosite_executable(), app.env)
    data = {**result.to_json(), "views": [vault.relative(p) for p in views]}
    if agent_files is None:
        where = demo_repository(vault)
        lines.append(f"files agents read: left alone, {where} is not the demo's (choose another --vault)")
        data["agentFiles"] = {"repository": str(where), "files": []}
    else:
        compiled = [change.path for change in agent_files.changes if change.action != "skip"]
        lines.append(f"files agents read (memosite agents compile): {agent_files.root}")
        lines += [f"  {path}" for path in compiled]
        again = [*program, "--vault", str(vault.root), "--project", project, "agents", "compile"]
        again += ["--repo", str(agent_files.root), "--check"]
        lines.append(f"  compile them again, or check them as CI would: {shlex.join(again)}")
        data["agentFiles"] = {"repository": str(agent_files.root), "files": compiled}
    commands = demo_commands(vault.root, project, shlex.join(program))
    lines.append("query it from any directory:")
    lines += [f"  {command}" for command in commands]
    data["commands"] = commands
    app.emit(data, "\n".join(lines))
    if serve_site:
        from memosite.cli.site import serve_with_logs

        serve_with_logs(Vault.open(root), dev_addr=dev_addr)
