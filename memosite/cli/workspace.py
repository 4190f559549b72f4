"""Setting up and looking around: ``memosite init`` and ``memosite status``."""

from __future__ import annotations

import click

from memosite.cli._common import App, vault_options
from memosite.config import working_directory


@click.command()
@click.option("--name", help="The project's display name (default: the id).")
@click.option("--no-pin", is_flag=True, help="Do not write .memosite.toml into the repository.")
@vault_options
def init(app: App, name: str | None, no_pin: bool) -> None:
    """Create the vault and this project, and pin the project id in .memosite.toml.

    The file goes to the root of the git repository you run it in (or the current directory), so
    every clone and worktree of the repository uses the same project. Commit it.
    """
    from memosite.workspace import check_vault_placement, init_workspace

    root = app.vault_root
    product_root = app.product_root
    check_vault_placement(root, product_root)
    identity = app.identity
    pin_in = None if no_pin else (product_root or working_directory())
    result = init_workspace(root, identity.id, name or identity.name, pin_in=pin_in)

    def text() -> str:
        made = ", ".join(result.created) if result.created else "nothing new (already set up)"
        lines = [f"vault    {result.vault}", f"project  {result.project}", f"created  {made}"]
        if result.project_file:
            lines.append(f"pinned   {result.project_file}")
        lines += ["", "Next:", *(f"  {step}" for step in result.next_steps)]
        return "\n".join(lines)

    app.emit(result.to_json(), text)


@click.command()
@vault_options
def status(app: App) -> None:
    """Where the vault is, which project (and why), record counts, index freshness, expired records
    awaiting gc, conflicts and vault git. Changes nothing."""
    from memosite.status import vault_status
    from memosite.text import counted

    report = vault_status(app.vault_root, app.vault_source, app.identity)

    def text() -> str:
        lines = [
            f"vault      {report.vault} ({report.vault_source}){'' if report.vault_exists else ' — not created yet'}",
            f"project    {report.project} ({project_source(report.project_source)})",
        ]
        if not report.vault_exists:
            lines.append("next       memosite init")
            return "\n".join(lines)
        kinds = ", ".join(
            f"{kind} {sum(by.values())}" + (f" ({', '.join(f'{s} {n}' for s, n in by.items())})" if len(by) > 1 else "")
            for kind, by in report.counts.items()
        )
        lines.append(f"records    {report.total}{': ' + kinds if kinds else ''}")
        index = report.index
        if index.missing:
            lines.append("index      not built yet: the next command builds it (or memosite reindex)")
        elif index.up_to_date:
            lines.append(f"index      up to date ({counted(index.indexed, 'record')})")
        else:
            parts = [
                f"{len(index.changed)} edited since indexed" if index.changed else "",
                f"{len(index.not_indexed)} not indexed" if index.not_indexed else "",
                f"{len(index.not_on_disk)} indexed but gone" if index.not_on_disk else "",
                counted(index.interrupted, "interrupted write") if index.interrupted else "",
            ]
            lines.append(f"index      behind the files: {', '.join(p for p in parts if p)} (any command catches up)")
        if index.invalid:
            lines.append(
                f"invalid    {counted(len(index.invalid), 'file')} skipped, not valid records"
                " (memosite reindex says why for each)" + "".join(f"\n  {path}" for path in index.invalid)
            )
        for record_id, paths in report.shared_ids.items():
            lines.append(
                f"shared id  {record_id} is held by {len(paths)} files (give each its own id):"
                + "".join(f"\n  {path}" for path in paths)
            )
        lines.append(
            f"gc         {counted(report.expired_awaiting_gc, 'expired record')}"
            f" {'awaits' if report.expired_awaiting_gc == 1 else 'await'} gc (memosite gc --dry-run)"
            if report.expired_awaiting_gc
            else "gc         nothing expired"
        )
        lines.append(f"conflicts  {len(report.conflicts)}" + "".join(f"\n  {c}" for c in report.conflicts))
        v = report.verdicts
        if any(v.values()):
            lines.append(
                f"freshness  {v['fresh']} fresh, {v['drifted']} drifted, {v['missing']} missing (memosite verify)"
            )
        if report.pending_review:
            waits = "waits" if report.pending_review == 1 else "wait"
            lines.append(f"review     {counted(report.pending_review, 'record')} {waits} for review (memosite review)")
        git = report.git
        if git is not None:
            state = "off" if not git.enabled else "on" + (" (no commit yet)" if not git.repository else "")
            if git.pending_commits:
                state += f", {counted(git.pending_commits, 'change')} queued for the next commit"
            lines.append(f"vault git  {state}")
        if report.sync is not None and git is not None and git.enabled:
            lines.extend(f"sync       {line}" for line in report.sync.lines())
        lines.extend(f"config     {line}" for line in report.config.lines())
        lines.extend(f"problem    {problem}" for problem in report.problems)
        return "\n".join(lines)

    app.emit(report.to_json(), text)
    if report.problems:
        raise SystemExit(1)


def project_source(source: str) -> str:
    """How ``status`` and an empty search say where the project came from."""
    return {
        "explicit": "--project",
        "env": "MEMOSITE_PROJECT",
        "vault": "the vault's project folder you are in",
        "project-file": ".memosite.toml",
        "git": "the git repository's name",
        "directory": "the directory's name",
    }.get(source, source)
