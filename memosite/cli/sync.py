"""Team sync commands: sync, conflicts, resolve."""

from __future__ import annotations

from typing import cast

import click

from memosite.cli._common import App, vault_options


@click.command()
@click.option(
    "--remote",
    metavar="NAME",
    help="A remote of the vault's repository, or a URL or path to sync with once, not kept as a remote"
    " unless the vault has none (default: vaultGit.remote, else origin).",
)
@click.option("--dry-run", is_flag=True, help="Say what a sync would do, changing nothing.")
@click.option(
    "--allow-unrelated",
    is_flag=True,
    help="Merge a remote whose history shares nothing with this vault's (two vaults become one).",
)
@vault_options
def sync(app: App, remote: str | None, dry_run: bool, allow_unrelated: bool) -> None:
    """Sync the vault with its git remote: commit, fetch, merge record by record, push.

    Records both sides changed merge field by field (hit counters add up, the later
    timestamps win); where both changed the same field or the body, your version stays
    and the remote one is kept beside it as <slug>.conflict.<id>.md (see `memosite
    conflicts`). A purge on another machine removes the record here, unless it was
    edited here after the purge.
    """
    if dry_run:
        from memosite.sync.preview import preview_sync

        result = preview_sync(app.vault, remote=remote)
    else:
        from memosite.sync.run import sync_vault

        result = sync_vault(app.vault, remote=remote, allow_unrelated=allow_unrelated)
    app.emit(result.to_json(), lambda: "\n".join(result.lines()))


@click.command()
@vault_options
def conflicts(app: App) -> None:
    """List the records (and vault files such as config.json) two machines changed in the same
    place: the version in place and the one in its sidecar, each with its updated, who wrote it
    and whether this machine did, and a diff (all projects; --project for one, with the vault's
    own files)."""
    from memosite.sync.conflicts import list_conflicts

    found = list_conflicts(app.vault, app.project_explicit, vault_files=True)

    def text() -> str:
        if not found:
            return "no conflicts"
        blocks = []
        for conflict in found:
            diff = conflict.diff.rstrip("\n")
            blocks.append("\n".join(conflict.lines()) + (f"\n{diff}" if diff else ""))
        return "\n\n".join(blocks)

    app.emit({"conflicts": [c.to_json() for c in found]}, text)


@click.command()
@click.argument("ref", metavar="ID")
@click.option(
    "--take",
    type=click.Choice(["mine", "theirs", "local", "remote", "in-place", "sidecar"]),  # conflicts.TAKES
    help="mine (or local): keep the version this machine wrote; theirs (or remote): keep the other"
    " machine's; in-place / sidecar: keep the version by where it is (for a machine that wrote"
    " neither). Without it: keep the record as you edited it.",
)
@vault_options
def resolve(app: App, ref: str, take: str | None) -> None:
    """End a conflict in one commit: ID is the record's id (or a sidecar's id from
    `memosite conflicts`). Edit the record by hand and run `memosite resolve ID`, or
    pick a version with --take; mine and theirs mean the same work on every machine."""
    from memosite.errors import RecordNotFound
    from memosite.sync.conflicts import Take, resolve_conflict

    chosen = cast("Take | None", take)  # click checked it against the same choices
    try:
        result = resolve_conflict(app.vault, ref, project=app.project, take=chosen)
    except RecordNotFound:
        if app.project_explicit is not None:
            raise
        result = resolve_conflict(app.vault, ref, project=None, take=chosen)
    app.emit(result.to_json(), result.line())
