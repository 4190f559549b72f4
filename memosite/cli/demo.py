"""``memosite demo``: write a realistic sample vault and compile its views."""

from __future__ import annotations

import click

from memosite.cli._common import App, vault_options


@click.command()
@click.option("--serve", "serve_site", is_flag=True, help="Then build the site and serve it with live reload.")
@click.option("--dev-addr", default="127.0.0.1:8000", show_default=True, help="Where --serve listens.")
@vault_options
def demo(app: App, serve_site: bool, dev_addr: str) -> None:
    """Write a sample vault (every kind, TTLs, a superseded decision, logs over two months).

    Without --vault the demo goes to ./memosite-demo, never into your real vault.
    """
    import shlex
    from pathlib import Path

    from memosite.demo import DEMO_PROJECT, demo_repository, write_demo_agent_files, write_demo_vault

    if serve_site:
        from memosite.site.server import parse_dev_addr

        parse_dev_addr(dev_addr)  # a bad address fails before anything is written
    from memosite.vault import Vault
    from memosite.views import write_views

    root = Path(app.vault_arg) if app.vault_arg else Path("memosite-demo")
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
    data = {**result.to_json(), "views": [vault.relative(p) for p in views]}
    if agent_files is None:
        where = demo_repository(vault)
        lines.append(f"files agents read: left alone, {where} is not the demo's (choose another --vault)")
        data["agentFiles"] = {"repository": str(where), "files": []}
    else:
        compiled = [change.path for change in agent_files.changes if change.action != "skip"]
        lines.append(f"files agents read (memosite agents compile): {agent_files.root}")
        lines += [f"  {path}" for path in compiled]
        again = ["memosite", "--vault", str(vault.root), "--project", project, "agents", "compile"]
        again += ["--repo", str(agent_files.root), "--check"]
        lines.append(f"  compile them again, or check them as CI would: {shlex.join(again)}")
        data["agentFiles"] = {"repository": str(agent_files.root), "files": compiled}
    app.emit(data, "\n".join(lines))
    if serve_site:
        from memosite.cli.site import serve_with_logs

        serve_with_logs(Vault.open(root), dev_addr=dev_addr)
