"""Team sync commands: sync, conflicts, resolve."""

from __future__ import annotations

import click

from memosite.cli._common import App, vault_options


@click.command()
@click.option(
    "--remote",
    metavar="NAME",
    help="A remote of the vault's repository, or a URL or path (default: vaultGit.remote, else origin).",
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
    """List the remote versions sync kept beside local ones, with both sides' updated,
    author and a diff (all projects; --project for one)."""
    from memosite.sync.conflicts import list_conflicts

    found = list_conflicts(app.vault, app.project_explicit)

    def text() -> str:
        if not found:
            return "no conflicts"
        blocks = []
        for conflict in found:
            name = f"{conflict.kind} {conflict.record_id}" if conflict.record_id else conflict.path
            head = [
                f"{name}: {conflict.path}  (remote version {conflict.sidecar}, id {conflict.short_id})",
                f"  local : updated {conflict.local.updated or '-'}, by {conflict.local.author or 'unknown'}"
                + (" (uncommitted changes)" if conflict.local.uncommitted else "")
                + ("" if conflict.local.exists else " (no local version: purged here)"),
                f"  remote: updated {conflict.remote.updated or '-'}, by {conflict.remote.author or 'unknown'}",
                f"  end it: memosite resolve {conflict.record_id or conflict.short_id} --take local|remote",
            ]
            blocks.append("\n".join(head) + ("\n" + conflict.diff.rstrip("\n") if conflict.diff else ""))
        return "\n\n".join(blocks)

    app.emit({"conflicts": [c.to_json() for c in found]}, text)


@click.command()
@click.argument("ref", metavar="ID")
@click.option(
    "--take",
    type=click.Choice(["local", "remote"]),
    help="Keep the local version, or put the remote one in its place. Without it: keep the file as you edited it.",
)
@vault_options
def resolve(app: App, ref: str, take: str | None) -> None:
    """End a conflict in one commit: ID is the record's id (or a sidecar's id from
    `memosite conflicts`). Edit the record by hand and run `memosite resolve ID`, or
    pick a side with --take."""
    from memosite.errors import RecordNotFound
    from memosite.sync.conflicts import Take, resolve_conflict

    chosen: Take | None = "local" if take == "local" else "remote" if take == "remote" else None
    try:
        result = resolve_conflict(app.vault, ref, project=app.project, take=chosen)
    except RecordNotFound:
        if app.project_explicit is not None:
            raise
        result = resolve_conflict(app.vault, ref, project=None, take=chosen)
    removed = ", ".join(result.removed_sidecars)
    app.emit(result.to_json(), f"resolved {result.path} ({result.take}); removed {removed}")
