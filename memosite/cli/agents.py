"""``memosite agents compile``: memory into AGENTS.md and the agents' rule files."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from memosite.cli._common import App, vault_options


@click.group()
def agents() -> None:
    """Compile memory into the files coding agents read (AGENTS.md, rule files)."""


@agents.command("compile")
@click.option("--check", is_flag=True, help="Change nothing; exit 1 when a generated file is out of date (for CI).")
@click.option("--diff", "show_diff", is_flag=True, help="Change nothing; show what a compile would change.")
@click.option("--init", is_flag=True, help="Add the memosite markers at the end of a file that has none yet.")
@click.option(
    "--with",
    "with_files",
    multiple=True,
    type=click.Choice(["claude", "copilot"]),
    help="Also create CLAUDE.md (claude) or .github/copilot-instructions.md (copilot) when missing.",
)
@click.option("--repo", "repo_dir", metavar="DIR", help="The product repository (default: the one you are in).")
@click.option(
    "--max-bytes", type=int, metavar="N", help="The block's budget in bytes (default: agents.maxBytes, 6144)."
)
@click.option("--site-url", metavar="URL", help="Link each record to its page there (default: site.url).")
@vault_options
def compile_(
    app: App,
    check: bool,
    show_diff: bool,
    init: bool,
    with_files: tuple[str, ...],
    repo_dir: str | None,
    max_bytes: int | None,
    site_url: str | None,
) -> None:
    """Write the project's reviewed, live, fresh memory into the repository: a marked block in
    AGENTS.md (and CLAUDE.md, .github/copilot-instructions.md when they exist or --with asks) and
    path-scoped rule files for Cursor, Claude Code and Copilot, listed in .memosite-agents.json.

    Only the text between <!-- memosite:begin --> and <!-- memosite:end --> is ever changed, and
    only rule files the manifest lists are rewritten or removed. --check and --diff change nothing.
    """
    from dataclasses import replace

    from memosite.agentfiles.compile import apply_plan, plan_compile
    from memosite.agentfiles.settings import AgentFilesSettings, check_max_bytes, check_site_url
    from memosite.errors import InvalidArguments
    from memosite.schema import utc_now

    writing = not (check or show_diff)
    if writing:
        app.require_person("agents compile (--check and --diff run anywhere)")
    root = Path(repo_dir).absolute() if repo_dir else app.product_root
    if root is None:
        raise InvalidArguments("no repository here: run this in the product repository, or give --repo DIR")
    project = app.project
    if repo_dir and app.project_explicit is None:
        # The memory compiled into a repository is that repository's project, wherever the
        # command runs: another project's traps must never land in it.
        from memosite.config import resolve_project

        project = resolve_project(None, app.env, root).id
    settings = AgentFilesSettings.from_config(app.vault.config)
    if max_bytes is not None:
        settings = replace(settings, max_bytes=check_max_bytes(max_bytes, "--max-bytes"))
    if site_url is not None:
        settings = replace(settings, site_url=check_site_url(site_url, "--site-url"))
    plan = plan_compile(app.vault, project, root, settings=settings, init=init, with_files=with_files, now=utc_now())
    if writing:
        apply_plan(plan)
    if show_diff and not app.as_json:
        sys.stdout.write(plan.diff())
    data = plan.to_json()
    if show_diff and app.as_json:
        data["diff"] = plan.diff()
    app.emit(data, "" if show_diff else _summary(plan, checking=check))
    if check and plan.out_of_date:
        raise SystemExit(1)


def _summary(plan: object, *, checking: bool) -> str:
    from memosite.agentfiles.compile import CompilePlan
    from memosite.text import counted

    assert isinstance(plan, CompilePlan)
    block = plan.block
    lines = [
        f"project {plan.project}: block {block.bytes} of {plan.max_bytes} bytes "
        f"({counted(len(block.traps), 'trap')}, {counted(len(block.decisions), 'decision')}"
        + "".join(f"; {counted(count, f'more {noun}')} left out" for noun, count in block.left_out.items() if count)
        + f"), {counted(len(plan.rules.groups), 'rule group')}"
    ]
    verbs = {"create": "created", "update": "updated", "delete": "removed", "unchanged": "up to date"}
    if checking:
        verbs = {"create": "missing", "update": "out of date", "delete": "stale", "unchanged": "up to date"}
    for change in plan.changes:
        # A file left alone says why in its own words ("has no memosite markers: left alone …").
        said = change.reason if change.action == "skip" else verbs[change.action]
        lines.append(f"  {change.path}: {said}")
    for verdict, ids in sorted(plan.selection.unfresh.items()):
        lines.append(f"  held back, cited code {verdict}: {', '.join(ids)} (memosite verify)")
    if plan.rules.unsafe_patterns:
        lines.append(f"  path patterns no agent's rule format can carry: {', '.join(plan.rules.unsafe_patterns)}")
    if checking:
        lines.append("out of date: run memosite agents compile" if plan.out_of_date else "up to date")
    return "\n".join(lines)
