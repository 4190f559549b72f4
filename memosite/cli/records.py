"""Record commands: upsert, get, append, forget, restore, list, compile, reindex."""

from __future__ import annotations

from typing import Any

import click

from memosite.cli._common import App, parse_json_option, read_optional_body, vault_options


@click.command()
@click.option(
    "--kind", required=True, help="trap, decision, spec, plan, state, log, scratch, review, prompt or session."
)
@click.option("--body", help="The Markdown body (a new record needs one; an existing one keeps its body without).")
@click.option("--body-file", help="Read the body from a file, or '-' for stdin.")
@click.option("--slug", help="File name (without .md); derived from the id or title when absent.")
@click.option("--id", "record_id", help="The record's id: update that record (with --kind when ids repeat).")
@click.option("--title")
@click.option("--status", help="active, paused, shipped, superseded, archived or completed.")
@click.option("--severity", help="low, medium, high or critical.")
@click.option("--layer", help="application, domain, web, infrastructure, tests, devops or other.")
@click.option("--module")
@click.option("--tag", "tags", multiple=True, help="A tag (repeatable).")
@click.option("--path", "path", help="A file path the record is about (folded into pathPatterns).")
@click.option("--path-patterns", "path_patterns", multiple=True, help="A path glob (repeatable).")
@click.option("--supersedes", help="Id of the record this one replaces (refused when there is no such record).")
@click.option(
    "--supersedes-missing-ok",
    is_flag=True,
    help="With --supersedes: the record it names is gone on purpose; write anyway (nothing is superseded).",
)
@click.option("--source", help="agent, human or imported.")
@click.option("--ttl", help="Time to live: 7d, 48h, 30m, 90s, '1.5 days', or a date.")
@click.option("--expires-at", help="Expiry: RFC 3339 or YYYY-MM-DD (end of that UTC day).")
@click.option("--frontmatter", "frontmatter_json", help="Extra frontmatter as a JSON object.")
@click.option("--allow-duplicate", is_flag=True, help="Skip trap recurrence dedup.")
@click.option(
    "--cite",
    "cites",
    multiple=True,
    metavar="PATH[:START-END]",
    help="Code the record is about, pinned by hash so `memosite verify` can tell when it changes (repeatable).",
)
@click.option("--session-id", help="The agent session this write comes from (recorded as provenance).")
@vault_options
def upsert(
    app: App,
    kind: str,
    body: str | None,
    body_file: str | None,
    slug: str | None,
    record_id: str | None,
    frontmatter_json: str | None,
    tags: tuple[str, ...],
    path_patterns: tuple[str, ...],
    path: str | None,
    allow_duplicate: bool,
    supersedes_missing_ok: bool,
    cites: tuple[str, ...],
    session_id: str | None,
    **fields: str | None,
) -> None:
    """Create or update a record.

    In a coding agent's shell the write is the agent's (source agent): a change of a record a
    person approved is proposed for review, and --source human is refused.
    """
    from memosite.errors import InvalidArguments
    from memosite.store import upsert_record

    if supersedes_missing_ok and fields.get("supersedes") is None:
        raise InvalidArguments("--supersedes-missing-ok goes with --supersedes ID")
    if fields.get("source") not in (None, "agent"):
        app.require_person(f"upsert --source {fields['source']}")
    frontmatter = parse_json_option("--frontmatter", frontmatter_json) or {}
    if not isinstance(frontmatter, dict):
        raise InvalidArguments("--frontmatter must be a JSON object")
    names = {"expires_at": "expires_at"}
    for option, value in fields.items():
        if value is not None:
            frontmatter[names.get(option, option)] = value
    if record_id is not None:
        frontmatter["id"] = record_id
    if session_id is not None:
        frontmatter["sessionId"] = session_id
    if tags:
        frontmatter["tags"] = list(tags)
    if path_patterns:
        frontmatter["pathPatterns"] = list(path_patterns)
    if app.vault.actor is not None:
        app.vault.actor.refuse_claims(frontmatter, composed=True)
    result = upsert_record(
        app.vault,
        app.project,
        kind=kind,
        body=read_optional_body(body, body_file),
        slug=slug,
        frontmatter=frontmatter,
        path=path,
        allow_duplicate=allow_duplicate,
        cites=list(cites),
        supersedes_missing_ok=supersedes_missing_ok,
    )
    app.emit(result.to_json(), result.summary())


def _id_argument(func: Any) -> Any:
    """``ID`` as a plain argument beside ``--id`` (``memosite get lock-order``), as edit and
    feedback take it."""
    return click.argument("positional_id", metavar="[ID]", required=False)(func)


def _one_id(option: str | None, positional: str | None) -> str | None:
    from memosite.errors import InvalidArguments

    if option is not None and positional is not None and option != positional:
        raise InvalidArguments(f"two different ids given: {positional!r} and --id {option!r}")
    return option if option is not None else positional


@click.command()
@_id_argument
@click.option("--id", "record_id")
@click.option("--kind")
@click.option("--slug")
@click.option("--session-id", help="Agent session id: the fetch counts as a hit, once per session.")
@vault_options
def get(
    app: App,
    positional_id: str | None,
    record_id: str | None,
    kind: str | None,
    slug: str | None,
    session_id: str | None,
) -> None:
    """Print one record (annotated `expired` when past its expiry, `unreviewed` while it waits for
    review). ID may be given as an argument or with --id."""
    from memosite.hits import get_record_counting_hit

    record_id = _one_id(record_id, positional_id)

    found = get_record_counting_hit(
        app.vault,
        app.project,
        record_id=record_id,
        kind=kind,
        slug=slug,
        cross_project=app.project_explicit is None,
        session_id=session_id,
    )

    def text() -> str:
        from memosite.schema import serialize_frontmatter

        marks = [mark for mark, on in (("expired", found.expired), ("unreviewed", found.pending)) if on]
        banner = f"({', '.join(marks)})\n" if marks else ""
        return f"{banner}---\n{serialize_frontmatter(found.frontmatter)}---\n{found.body}"

    app.emit(found.to_json(), text)


@click.command()
@click.option("--event", required=True, help="What happened.")
@click.option("--kind", default="log", show_default=True)
@click.option("--details", "details_json", help="Structured details as JSON.")
@vault_options
def append(app: App, event: str, kind: str, details_json: str | None) -> None:
    """Append an event record (write-only: earlier events are never rewritten)."""
    from memosite.store import append_event

    result = append_event(
        app.vault,
        app.project,
        event=event,
        kind=kind,
        details=parse_json_option("--details", details_json),
    )
    said = " ".join(result.event.split())
    shown = said if len(said) <= 80 else said[:79] + "…"
    app.emit(result.to_json(), f"appended {result.kind} {result.id}: {shown} → {result.path}")


@click.command()
@_id_argument
@click.option("--id", "record_id")
@click.option("--kind")
@click.option("--slug")
@click.option("--purge", is_flag=True, help="Unlink the file (a tombstone is kept) instead of archiving.")
@vault_options
def forget(
    app: App, positional_id: str | None, record_id: str | None, kind: str | None, slug: str | None, purge: bool
) -> None:
    """Archive a record, or purge it with --purge (ID as an argument or with --id). From an
    agent's shell a record a person approved can be archived, not purged."""
    from memosite.store import forget_record

    record_id = _one_id(record_id, positional_id)

    result = forget_record(app.vault, app.project, record_id=record_id, kind=kind, slug=slug, purge=purge)
    revived = f"; {', '.join(result.restored)} active again" if result.restored else ""
    app.emit(result.to_json(), f"{result.status} {result.kind} {result.id}{revived}")


@click.command()
@_id_argument
@click.option("--id", "record_id")
@click.option("--kind")
@click.option("--slug")
@vault_options
def restore(app: App, positional_id: str | None, record_id: str | None, kind: str | None, slug: str | None) -> None:
    """Bring an archived record back with the status it had before it was archived (ID as an
    argument or with --id)."""
    from memosite.store import restore_record

    record_id = _one_id(record_id, positional_id)

    result = restore_record(app.vault, app.project, record_id=record_id, kind=kind, slug=slug)
    app.emit(result.to_json(), f"restored {result.kind} {result.id} ({result.status})")


@click.command("list")
@click.option("--kind", "kinds", multiple=True, help="Only this kind (repeatable).")
@click.option("--status", "statuses", multiple=True, help="Only this status (repeatable).")
@vault_options
def list_(app: App, kinds: tuple[str, ...], statuses: tuple[str, ...]) -> None:
    """List the project's records."""
    from memosite.store import list_records

    records = list_records(app.vault, app.project, kinds=kinds or None, statuses=statuses or None)

    def text() -> str:
        if not records:
            return f"no records in project {app.project}"
        width = max(len(r.id) for r in records)
        return "\n".join(
            f"{r.kind:9} {r.id:{width}}  {r.status:10} {'expired ' if r.expired else ''}"
            f"{'unreviewed ' if r.pending else ''}{r.title}"
            for r in records
        )

    app.emit({"project": app.project, "records": [r.to_json() for r in records], "total": len(records)}, text)


@click.command("compile")
@vault_options
def compile_(app: App) -> None:
    """Rebuild the compiled views (TRAPS.md, DECISIONS.md, INDEX.md, PROMPTS.md, SESSIONS.md).

    Records edited by hand since memosite last saw them are picked up first.
    """
    from memosite.recompile import compile_project

    paths = compile_project(app.vault, app.project)
    app.emit(
        {"project": app.project, "views": [app.vault.relative(p) for p in paths]},
        "\n".join(f"compiled {app.vault.relative(p)}" for p in paths),
    )


@click.command()
@click.option("--all-projects", is_flag=True, help="Rebuild every project, not only the current one.")
@vault_options
def reindex(app: App, all_projects: bool) -> None:
    """Rebuild the search index and the views from the Markdown files."""
    from memosite.refresh import reindex as rebuild
    from memosite.text import counted

    counts = rebuild(app.vault, None if all_projects else [app.project])
    app.emit(
        {"projects": counts, "total": sum(counts.values())},
        "\n".join(f"indexed {counted(n, 'record')} in {project}" for project, n in counts.items()) or "no projects",
    )


@click.command()
@click.argument("record_id", metavar="ID")
@click.option("--kind", help="The record's kind, when its id names records of several kinds.")
@vault_options
def edit(app: App, record_id: str, kind: str | None) -> None:
    """Edit a record in $VISUAL or $EDITOR; the saved file is checked before it replaces the record.

    An invalid save (broken frontmatter, a secret, a wrong field) is refused with the reason and the
    record stays as it was; what you wrote is kept in a file whose name the error gives.
    """
    import sys
    import tempfile
    from pathlib import Path

    from memosite.edit import apply_edit, begin_edit
    from memosite.errors import InvalidArguments

    # A person's editor: an agent changes records with upsert, where a change of a person's
    # record waits for review.
    app.require_person("memosite edit")
    if not sys.stdin.isatty() and not (app.env.get("VISUAL") or app.env.get("EDITOR")):
        raise InvalidArguments("edit needs a terminal, or an editor command in $VISUAL or $EDITOR")
    session = begin_edit(app.vault, app.project, record_id=record_id, kind=kind)
    scratch = Path(tempfile.mkdtemp(prefix="memosite-edit-")) / session.file_name
    scratch.write_text(session.original, encoding="utf-8")
    try:
        click.edit(filename=str(scratch), require_save=False)
    except click.ClickException as exc:
        raise InvalidArguments(f"the editor failed ({exc.format_message()}); the record is unchanged") from exc
    try:
        edited = scratch.read_bytes().decode("utf-8")
    except FileNotFoundError as exc:
        raise InvalidArguments("the editor removed the file it was given; the record is unchanged") from exc
    except UnicodeDecodeError as exc:
        raise InvalidArguments(
            f"edit refused: the saved file is not UTF-8 (byte {exc.start}); the record is unchanged"
            f" (your text is in {scratch})"
        ) from exc
    result = apply_edit(app.vault, session, edited, rescue=scratch)
    if result.changed:
        scratch.unlink(missing_ok=True)
        scratch.parent.rmdir()
    app.emit(result.to_json(), result.summary())
