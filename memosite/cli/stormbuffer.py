"""``memosite stormbuffer``: Stormbuffer-format stores (TOML ``+++`` records in ``.sbuf/``)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from memosite.cli._common import App, read_body, vault_options
from memosite.config import working_directory

if TYPE_CHECKING:
    from memosite.stormbuffer.model import Source
    from memosite.stormbuffer.store import Store, StoredStormRecord

_STORE_HELP = "The store directory (default: the nearest .sbuf upward from the working directory)."
_GLOBAL_HELP = "Use Stormbuffer's global store (in the user data directory) instead of a project store."


def _store_option(func: Any) -> Any:
    func = click.option("--global", "global_store", is_flag=True, help=_GLOBAL_HELP)(func)
    return click.option("--store", "store_dir", metavar="DIR", help=_STORE_HELP)(func)


def _store_path(app: App, store_dir: str | None, global_store: bool) -> Path:
    from memosite.errors import InvalidArguments
    from memosite.stormbuffer.store import global_store_dir, resolve_store_dir

    if global_store:
        if store_dir is not None:
            raise InvalidArguments("give --store or --global, not both")
        return global_store_dir(app.env, sys.platform)
    return resolve_store_dir(store_dir, working_directory())


def _open(app: App, store_dir: str | None, global_store: bool = False) -> Store:
    from memosite.stormbuffer.store import Store

    return Store.open(_store_path(app, store_dir, global_store), "global" if global_store else None)


def _line(item: StoredStormRecord) -> str:
    record = item.record
    return f"{record.id}  {record.status:<10} {record.kind:<10} {record.title}"


def _changed(app: App, verb: str, item: StoredStormRecord) -> None:
    """``promoted <id> → active``; the status only when the verb does not already say it."""
    status = item.record.status
    app.emit(item.to_json(body=False), f"{verb} {item.record.id}" + ("" if verb == status else f" → {status}"))


@click.group()
def stormbuffer() -> None:
    """Read and write Stormbuffer-format stores (.sbuf/: store.toml + TOML-frontmatter records).

    Stores are laid out as Stormbuffer's `sbuf` lays them out (records/<id>.md, locks/,
    .gitignore), so both tools work on the same store. Records are fact, decision, procedure or
    checkpoint; their lifecycle is candidate → active → superseded, candidate → archived
    (reject) and active ⇄ archived. `import` and `export` move records between a store and the
    current memosite project.
    """


@stormbuffer.command()
@click.option(
    "--store", "store_dir", metavar="DIR", help="Where to create the store (default: the nearest .sbuf, else ./.sbuf)."
)
@click.option("--global", "global_store", is_flag=True, help=_GLOBAL_HELP)
@click.option("--name", help="Project name (default: the name of the directory holding .sbuf).")
@click.option("--shared", is_flag=True, help="Track the records in git (the default store is private).")
@vault_options
def init(app: App, store_dir: str | None, global_store: bool, name: str | None, shared: bool) -> None:
    """Create a store, or complete an existing one (its .gitignore; memosite's old store.toml keys).

    A project store gets a new stable project id and a .gitignore: a private store (the
    default) keeps everything out of git, a shared one lets git track store.toml and records.
    """
    from memosite.stormbuffer.store import STORE_DIR_NAME, Store, find_store

    if store_dir is None and not global_store:
        here = working_directory()
        path = find_store(here) or here / STORE_DIR_NAME
    else:
        path = _store_path(app, store_dir, global_store)
    info = Store.init(path, name=name, shared=shared, global_store=global_store).info
    verb = "created" if info.created else "upgraded" if info.upgraded else "already initialised:"
    what = f"project {info.name!r}, id {info.project_id}" if info.project_id else "global store"
    app.emit(info.to_json(), f"{verb} {info.path} ({what}, {info.config.visibility})")


@stormbuffer.command()
@click.argument("name")
@_store_option
@vault_options
def rename(app: App, name: str, store_dir: str | None, global_store: bool) -> None:
    """Change the store's project name; its project id (and every scope) stays."""
    info = _open(app, store_dir, global_store).rename(name)
    app.emit(info.to_json(), f"renamed to {info.name!r} (id {info.project_id} unchanged)")


def _sources(
    kinds: tuple[str, ...], refs: tuple[str, ...], extras: dict[str, tuple[str, ...]], access: str
) -> list[Source]:
    """The sources given on the command line; a source without --source-actor is the writer's."""
    from memosite.errors import InvalidArguments
    from memosite.stormbuffer.model import source_from_json

    if len(kinds) != len(refs):
        raise InvalidArguments("give --source-kind and --source-ref in pairs, once per source")
    for option, values in extras.items():
        if values and len(values) != len(kinds):
            raise InvalidArguments(f"--source-{option.replace('_', '-')} must be given once per source")
    sources = []
    for position, (kind, ref) in enumerate(zip(kinds, refs, strict=True)):
        data = {"kind": kind, "reference": ref, "actor": access}
        data.update({name: values[position] for name, values in extras.items() if values})
        sources.append(source_from_json(data, position))
    return sources


@stormbuffer.command()
@click.option("--kind", required=True, help="fact, decision, procedure or checkpoint.")
@click.option("--title", required=True)
@click.option("--body", help="The Markdown body.")
@click.option("--body-file", help="Read the body from a file, or '-' for stdin.")
@click.option("--scope", help="The record scope; it must be the store's ('global' in the global store).")
@click.option(
    "--access",
    default="agent",
    show_default=True,
    help="Who writes it: agent (starts as candidate) or human (may start active).",
)
@click.option("--status", help="candidate or active (default: candidate for agents, active for humans).")
@click.option("--tag", "tags", multiple=True, help="A tag (repeatable).")
@click.option("--alias", "aliases", multiple=True, help="Another name to find it by (repeatable).")
@click.option("--source-kind", "source_kinds", multiple=True, help="conversation, document, issue or url (repeatable).")
@click.option("--source-ref", "source_refs", multiple=True, help="The source reference, paired with --source-kind.")
@click.option(
    "--source-actor", "source_actor", multiple=True, help="Who the source is from (one per source; default: --access)."
)
@click.option("--source-observed-at", "source_observed_at", multiple=True, help="RFC 3339 time it was observed.")
@click.option("--source-revision", "source_revision", multiple=True, help="e.g. a Git revision (one per source).")
@click.option("--source-hash", "source_hash", multiple=True, help="A stable content hash (one per source).")
@click.option(
    "--supersedes",
    help="Id of an active record this one replaces (a candidate replaces it when promoted).",
)
@_store_option
@vault_options
def add(
    app: App,
    store_dir: str | None,
    global_store: bool,
    body: str | None,
    body_file: str | None,
    source_kinds: tuple[str, ...],
    source_refs: tuple[str, ...],
    source_actor: tuple[str, ...],
    source_observed_at: tuple[str, ...],
    source_revision: tuple[str, ...],
    source_hash: tuple[str, ...],
    **fields: Any,
) -> None:
    """Add a record to records/<id>.md (without --source-*, its source is this command, by --access).
    --access human is refused in a coding agent's shell: an agent proposes candidates."""
    if fields.get("access") not in (None, "agent"):
        app.require_person(f"stormbuffer add --access {fields['access']}")
    sources = _sources(
        source_kinds,
        source_refs,
        {
            "actor": source_actor,
            "observed_at": source_observed_at,
            "revision": source_revision,
            "content_hash": source_hash,
        },
        str(fields.get("access") or "agent"),
    )
    item = _open(app, store_dir, global_store).add(body=read_body(body, body_file), sources=sources, **fields)
    app.emit(item.to_json(body=False), f"added {item.record.kind} {item.record.id} ({item.record.status})")


@stormbuffer.command()
@click.argument("record_id", metavar="ID")
@_store_option
@vault_options
def show(app: App, record_id: str, store_dir: str | None, global_store: bool) -> None:
    """Print one record (an unambiguous id prefix of 4+ characters is enough)."""
    item = _open(app, store_dir, global_store).get(record_id)
    app.emit(item.to_json(), lambda: item.path.read_bytes().decode("utf-8"))


@stormbuffer.command(name="list")
@click.option("--all", "include_all", is_flag=True, help="Include superseded and archived records.")
@click.option("--kind", "kinds", multiple=True, help="Only this kind (repeatable).")
@_store_option
@vault_options
def list_(app: App, include_all: bool, kinds: tuple[str, ...], store_dir: str | None, global_store: bool) -> None:
    """List candidate and active records (history too with --all), oldest first."""
    store = _open(app, store_dir, global_store)
    items = store.list(include_all=include_all, kinds=kinds or None)
    data = {
        "store": str(store.path),
        "project_id": store.info.project_id,
        "count": len(items),
        "records": [item.to_json(body=False) for item in items],
    }
    app.emit(data, lambda: "\n".join(_line(item) for item in items) or "(no records)")


@stormbuffer.command()
@click.argument("record_id", metavar="ID")
@_store_option
@vault_options
def promote(app: App, record_id: str, store_dir: str | None, global_store: bool) -> None:
    """candidate → active (a candidate that names one record in supersedes retires it). A person's
    decision: refused in a coding agent's shell."""
    app.require_person("stormbuffer promote")
    _changed(app, "promoted", _open(app, store_dir, global_store).promote(record_id))


@stormbuffer.command()
@click.argument("record_id", metavar="ID")
@_store_option
@vault_options
def reject(app: App, record_id: str, store_dir: str | None, global_store: bool) -> None:
    """candidate → archived (the proposal is kept as history). A person's decision: refused in a
    coding agent's shell."""
    app.require_person("stormbuffer reject")
    _changed(app, "rejected", _open(app, store_dir, global_store).reject(record_id))


@stormbuffer.command()
@click.argument("record_id", metavar="ID")
@_store_option
@vault_options
def archive(app: App, record_id: str, store_dir: str | None, global_store: bool) -> None:
    """active → archived (kept as history; `restore` brings it back)."""
    _changed(app, "archived", _open(app, store_dir, global_store).archive(record_id))


@stormbuffer.command()
@click.argument("record_id", metavar="ID")
@_store_option
@vault_options
def restore(app: App, record_id: str, store_dir: str | None, global_store: bool) -> None:
    """archived → active."""
    _changed(app, "restored", _open(app, store_dir, global_store).restore(record_id))


@stormbuffer.command()
@click.argument("old_id", metavar="OLD_ID")
@click.option("--by", "new_id", required=True, metavar="NEW_ID", help="The record that replaces it.")
@_store_option
@vault_options
def supersede(app: App, old_id: str, new_id: str, store_dir: str | None, global_store: bool) -> None:
    """Mark OLD_ID superseded by NEW_ID (the old record's text is kept as history). Refused in a
    coding agent's shell: an agent's candidate names what it supersedes, and promoting it is a
    person's decision."""
    app.require_person("stormbuffer supersede")
    old, new = _open(app, store_dir, global_store).supersede(old_id, by=new_id)
    app.emit(
        {"superseded": old.to_json(body=False), "by": new.to_json(body=False)},
        f"{old.record.id} superseded by {new.record.id}",
    )


@stormbuffer.command()
@click.argument("record_id", metavar="ID")
@click.option("--destroy", is_flag=True, help="Required: delete the record file permanently.")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation (required when not interactive).")
@_store_option
@vault_options
def forget(app: App, record_id: str, destroy: bool, yes: bool, store_dir: str | None, global_store: bool) -> None:
    """Delete a record permanently (needs --destroy; --yes too when not interactive). Refused in a
    coding agent's shell: only a person destroys."""
    from memosite.errors import InvalidArguments

    if destroy:
        app.require_person("stormbuffer forget --destroy")
    store = _open(app, store_dir, global_store)
    if not destroy:
        store.forget(record_id, destroy=False)  # raises: explains --destroy and archive
    if not yes:
        if not sys.stdin.isatty():
            raise InvalidArguments("refusing to destroy a record without --yes in non-interactive use")
        target = store.get(record_id).record
        if not click.confirm(f"Permanently delete {target.id} ({target.title!r})?", err=True):
            raise InvalidArguments("not confirmed; nothing was deleted")
    outcome = store.forget(record_id, destroy=True)
    app.emit(outcome.to_json(), f"destroyed {outcome.id} ({outcome.path})")


@stormbuffer.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@_store_option
@vault_options
def validate(app: App, paths: tuple[Path, ...], store_dir: str | None, global_store: bool) -> None:
    """Check record files strictly, as Stormbuffer would (default: the whole store).

    A store check covers store.toml, a shared store's .gitignore, every record, records outside
    the store's scope and two files holding one id. Prints one line per problem
    (file: field: message) and exits 1 if there is any.
    """
    from memosite.errors import InvalidRecord
    from memosite.stormbuffer.store import Store, find_store
    from memosite.stormbuffer.storefile import STORE_FILE
    from memosite.stormbuffer.validation import validate_files, validate_store

    if paths:
        missing = [str(p) for p in paths if not p.exists()]
        if missing:
            raise InvalidRecord(f"no such file: {', '.join(missing)}", details={"field": "file"})
        found = (
            _store_path(app, store_dir, global_store) if store_dir or global_store else find_store(working_directory())
        )
        store = Store.open(found) if found is not None and (found / STORE_FILE).is_file() else None
        report = validate_files(list(paths), store)
    else:
        report = validate_store(_store_path(app, store_dir, global_store))
    if report.valid:
        app.emit(report.to_json(), f"{report.checked} file(s) checked: all valid")
        return
    if not app.as_json:
        app.emit(None, "\n".join(problem.describe() for problem in report.problems))
    files = report.to_json()["files_with_problems"]
    raise InvalidRecord(
        f"{len(report.problems)} problem(s) in {files} of {report.checked} file(s)",
        details=report.to_json(),
    )


@stormbuffer.command(name="import")
@_store_option
@vault_options
def import_(app: App, store_dir: str | None, global_store: bool) -> None:
    """Import every record of the store into the memosite project (history included). In a coding
    agent's shell the records are the agent's (source agent, reviewed as its writes are), and a
    store record that claims a person (access human, a person's source or review) is refused."""
    from memosite.stormbuffer.bridge import import_store

    result = import_store(app.vault, app.project, _open(app, store_dir, global_store))
    app.emit(result.to_json(), lambda: _bridge_text(result.to_json()))


@stormbuffer.command()
@click.option(
    "--store",
    "store_dir",
    metavar="DIR",
    help="The store to write (created if missing; default: the nearest .sbuf upward from the working directory).",
)
@click.option("--global", "global_store", is_flag=True, help="Write to Stormbuffer's global store (it must exist).")
@click.option("--name", help="Project name for a new store (default: the memosite project).")
@vault_options
def export(app: App, store_dir: str | None, global_store: bool, name: str | None) -> None:
    """Export the project's decisions, specs, traps, plans and state to a Stormbuffer store.

    Every record written is one Stormbuffer accepts; records it cannot hold (no body text, a
    global record bound for a project store) are listed as skipped.
    """
    from memosite.stormbuffer.bridge import export_project
    from memosite.stormbuffer.store import STORE_DIR_NAME, STORE_FILE, Store

    if global_store or store_dir is None:
        path = _store_path(app, store_dir, global_store)  # an existing store, found as every command finds it
        Store.open(path, "global" if global_store else None)
    else:
        path = Path(store_dir).expanduser().absolute()
        if not (path / STORE_FILE).exists() and (path / STORE_DIR_NAME / STORE_FILE).exists():
            path = path / STORE_DIR_NAME
        if (path / STORE_FILE).exists():
            Store.open(path)  # refused before the vault is read: a global store in a .sbuf, a bad store.toml
        elif name is None:
            name = app.project
    result = export_project(app.vault, app.project, path, name=name)
    app.emit(result.to_json(), lambda: _bridge_text(result.to_json()))


def _bridge_text(data: dict[str, Any]) -> str:
    verb = "imported" if data["direction"] == "import" else "exported"
    lines = [
        f"{verb} {data['count']} record(s) ({data['unchanged']} unchanged) "
        f"{'from' if verb == 'imported' else 'to'} {data['store']}"
    ]
    lines += [f"  {r['id']}  {r['storm_kind']} ↔ {r['memosite_kind']}  {r['status']}" for r in data["records"]]
    skipped: dict[str, int] = {}
    for item in data["skipped"]:
        skipped[item["kind"]] = skipped.get(item["kind"], 0) + 1
    if skipped:
        counts = ", ".join(f"{count} {kind}" for kind, count in sorted(skipped.items()))
        lines.append(f"  skipped {len(data['skipped'])} with no counterpart kind or no body: {counts}")
    return "\n".join(lines)
