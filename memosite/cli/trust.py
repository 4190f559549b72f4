"""Memory a team can trust: ``memosite verify`` (freshness against the code) and ``memosite review``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from memosite.cli._common import App, vault_options


@click.command()
@click.option("--repo", "repo_dir", metavar="DIR", help="The product repository (default: the one you are in).")
@click.option("--update", "update_id", metavar="ID", help="Re-pin this record's citations: it still holds.")
@click.option(
    "--drop", "drop", multiple=True, metavar="PATH", help="With --update: remove the citation of PATH (repeatable)."
)
@click.option(
    "--strict",
    is_flag=True,
    help="Exit 1 when a record's cited code drifted or is missing (for CI); the report is printed as usual.",
)
@vault_options
def verify(app: App, repo_dir: str | None, update_id: str | None, drop: tuple[str, ...], strict: bool) -> None:
    """Check every record that cites code: fresh, drifted (with the changed lines and the commits
    since) or missing. Verdicts are kept in the index; records are not changed (but by --update).
    With --strict a drifted or missing verdict makes the exit status 1."""
    from memosite.errors import InvalidArguments
    from memosite.verify import repin_record, verify_project

    if update_id:
        app.require_person("verify --update")  # a person confirms the record still holds
    root = Path(repo_dir).absolute() if repo_dir else app.product_root
    if root is None:
        raise InvalidArguments("no repository here: run this in the product repository, or give --repo DIR")
    if drop and not update_id:
        raise InvalidArguments("--drop goes with --update ID: it removes a citation of that record")
    if strict and update_id:
        raise InvalidArguments("--strict checks every record: run it without --update")
    if update_id:
        repinned = repin_record(app.vault, app.project, root, update_id, drop=drop)
        judged = repinned.verdict
        said = (
            f"re-pinned {judged.kind} {judged.id}: {judged.verdict}"
            if judged.cites
            else (f"{judged.kind} {judged.id} cites no code any more")
        )
        for move in repinned.moved:
            said += f"\n  followed the rename {move.old} → {move.new} in {', '.join(move.fields)}"
        app.emit(repinned.to_json(), said)
        return
    result = verify_project(app.vault, app.project, root)

    def text() -> str:
        counts = result.counts()
        where = f"at {result.commit[:12]}" if result.commit else "in the working tree"
        if result.commit and result.uncommitted:
            where += " and changes not committed yet"
        noun = "record cites" if len(result.records) == 1 else "records cite"
        lines = [
            f"{len(result.records)} {noun} code in {app.project}: "
            f"{counts['fresh']} fresh, {counts['drifted']} drifted, {counts['missing']} missing ({where})"
        ]
        for record in result.records:
            if record.verdict == "fresh":
                continue
            lines.append(f"  {record.verdict:8} {record.kind} {record.id} — {record.title}")
            for cite in record.cites:
                if cite.verdict == "fresh":
                    continue
                detail = cite.cite.label
                if cite.changed_lines:
                    detail += f" changed at lines {cite.changed_lines[0]}-{cite.changed_lines[1]}"
                if cite.renamed_to:
                    detail += f" (renamed to {cite.renamed_to}?)"
                if cite.uncommitted:
                    detail += " (not committed yet)"
                lines.append(f"           {detail}")
                lines.extend(f"             {commit}" for commit in cite.commits)
        if counts["drifted"] or counts["missing"]:
            lines.append("confirm a record still holds with: memosite verify --update ID")
        gone = any(c.verdict == "missing" and not c.renamed_to for r in result.records for c in r.cites)
        if gone:
            lines.append("a cited file that is gone for good: memosite verify --update ID --drop PATH")
        return "\n".join(lines)

    app.emit(result.to_json(), text)
    counts = result.counts()
    if strict and (counts["drifted"] or counts["missing"]):
        sys.stdout.flush()
        sys.stderr.write(
            f"memosite: verify --strict: {counts['drifted']} drifted, {counts['missing']} missing in {app.project}\n"
        )
        raise SystemExit(1)


@click.command()
@click.argument("action", required=False, type=click.Choice(["list", "approve", "reject"]))
@click.argument("ids", nargs=-1, metavar="[ID]…")
@click.option("--reason", help="Why a record is rejected (required for reject): kept with it.")
@vault_options
def review(app: App, action: str | None, ids: tuple[str, ...], reason: str | None) -> None:
    """What agents wrote that waits for a person: their records of the kinds config.json
    review.required names, and their proposed changes of records a person approved.

    `memosite review` lists them, newest first, each with its diff against the version it would
    replace; `review approve ID…` accepts them (a proposed change replaces the record, a supersede
    it names happens) and `review reject ID… --reason TEXT` refuses them (a new record is archived
    with the reason, a proposed change is dropped and the record stays as it was). Each is one
    commit naming you and, for a rejection, the reason. Only a person decides: approve and reject
    are refused in a coding agent's shell.
    """
    from memosite.errors import InvalidArguments
    from memosite.review import approve_records, list_pending, reject_records

    if action in (None, "list"):
        if ids:
            raise InvalidArguments("review lists every pending record: drop the ids, or say approve or reject")
        _list(app, list_pending(app.vault, app.project))
        return
    app.require_person(f"review {action}")
    if action == "approve":
        approved = approve_records(app.vault, app.project, list(ids))
        app.emit(approved.to_json(), "\n".join(f"approved {r['kind']} {r['id']}" for r in approved.records))
        return
    if reason is None:
        raise click.UsageError("reject needs --reason TEXT")
    rejected = reject_records(app.vault, app.project, list(ids), reason=reason)
    app.emit(rejected.to_json(), "\n".join(f"rejected {r['kind']} {r['id']}: {r['outcome']}" for r in rejected.records))


def _list(app: App, found: list[Any]) -> None:
    from memosite.text import counted

    def text() -> str:
        if not found:
            return f"nothing waits for review in {app.project}"
        waits = "waits" if len(found) == 1 else "wait"
        parts = [f"{counted(len(found), 'record')} {waits} for review in {app.project}", ""]
        for item in found:
            who = item.author or item.source or "an agent"
            edited = f"; fields edited by {item.edited_by}" if item.edited_by else ""
            state = "proposed change" if item.proposal else "changed" if item.replaces else "new"
            then = f"; approving it supersedes {item.supersedes}" if item.supersedes else ""
            parts.append(f"{item.kind} {item.id} — {item.title} ({state}, by {who}{edited}{then})")
            parts.append(item.diff.rstrip("\n"))
            parts.append("")
        parts.append("memosite review approve ID…   |   memosite review reject ID… --reason TEXT")
        return "\n".join(parts)

    app.emit({"project": app.project, "pending": [item.to_json() for item in found]}, text)
