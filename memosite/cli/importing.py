"""``memosite import FORMAT PATH``: bring AGENTS.md, Cursor rules, Claude Code's auto memory, ADRs
and basic-memory notes into the project's records."""

from __future__ import annotations

import click

from memosite.cli._common import App, vault_options

FORMAT_NAMES = ("agents-md", "cursor-rules", "claude-memory", "adr", "basic-memory", "auto")


@click.command(name="import")
@click.argument("fmt", metavar="FORMAT", type=click.Choice(FORMAT_NAMES))
@click.argument("path", metavar="PATH", type=click.Path(path_type=str))
@click.option("--dry-run", is_flag=True, help="Show what would be imported and change nothing.")
@vault_options
def import_(app: App, fmt: str, path: str, dry_run: bool) -> None:
    """Import what the team already keeps, as records of the project.

    FORMAT is agents-md (AGENTS.md, CLAUDE.md), cursor-rules (.cursor/rules/*.mdc), claude-memory
    (~/.claude/projects/<project>/memory/), adr (Nygard, MADR or log4brains decision records),
    basic-memory (a folder of notes), or auto to guess from PATH. Records are marked
    `source: imported` with the file and heading they come from: importing again changes nothing
    unless the source changed, and then updates the same records. One import is one commit.
    """
    from pathlib import Path

    from memosite.config import holds_vault
    from memosite.importers import import_path

    root = app.vault_root
    exists = root.is_dir() and holds_vault(root)
    vault = app.vault if exists or not dry_run else None
    plan = import_path(vault, app.project, fmt, Path(path).expanduser(), dry_run=dry_run)

    def text() -> str:
        lines = [planned.line(done=not plan.dry_run) for planned in plan.records if planned.action != "unchanged"]
        lines += [f"skipped   {item.source_path}: {item.reason}" for item in plan.skipped]
        return "\n".join([*lines, plan.summary()])

    app.emit(plan.to_json(), text)
