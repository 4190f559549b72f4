"""Curator and retrieval commands: gc, search, bootstrap, rank, feedback."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import click

from memosite.cli._common import App, vault_options

if TYPE_CHECKING:
    from memosite.bootstrap import BootstrapResult
    from memosite.curator import GcProgress, GcResult
    from memosite.salience import BackfillResult, RankResult
    from memosite.search import SearchResult

LARGE_VAULT_RECORDS = 500


class _ProgressBar:
    """A bar on stderr, only when stderr is a terminal and the project is large."""

    def __init__(self) -> None:
        self.bar: Any = None
        self.shown = 0

    def __call__(self, step: GcProgress) -> None:
        if self.bar is None:
            if step.records <= LARGE_VAULT_RECORDS or not sys.stderr.isatty() or not step.total:
                return
            self.bar = click.progressbar(length=step.total, label="gc", file=sys.stderr)
            self.bar.__enter__()
        self.bar.update(step.done - self.shown)
        self.shown = step.done

    def close(self) -> None:
        if self.bar is not None:
            self.bar.__exit__(None, None, None)


def _gc_summary(result: GcResult) -> str:
    verb = "would" if result.dry_run else "did"
    lines = [f"gc {result.project_id}{' (dry run: nothing changed)' if result.dry_run else ''}"]
    counts = [
        ("archived traps", result.traps_archived_count),
        ("archived decisions", result.decisions_archived_count),
        ("archived plans", result.plans_archived_count),
        ("purged scratch", result.purged_scratch_count),
        ("purged reviews", result.purged_review_count),
        ("purged files in all", len(result.purged_files)),
        ("compacted plans", result.compacted_plans_count),
        ("log events rolled up", result.compacted_logs_count),
        ("stale temp files removed", len(result.removed_temp_files)),
    ]
    lines += [f"  {label:26} {count}" for label, count in counts]
    for title, paths in (
        ("archived", result.archived_files),
        ("purged", result.purged_files),
        ("compacted", result.compacted_plans),
        ("rolled up into", result.rollup_files),
    ):
        lines += [f"  {title}: {path}" for path in paths]
    if not result.dry_run:
        lines.append("  index and views rebuilt: " + ("yes" if result.rebuilt_fts and result.rebuilt_views else "no"))
    elif not any(count for _, count in counts):
        lines.append(f"  nothing {verb} change")
    return "\n".join(lines)


@click.command()
@click.option("--dry-run", is_flag=True, help="Report what would change; write and delete nothing.")
@click.option(
    "--purge",
    is_flag=True,
    help="Unlink expired traps, decisions and plans instead of archiving them.",
)
@vault_options
def gc(app: App, dry_run: bool, purge: bool) -> None:
    """Sweep expired records, compact shipped plans and roll logs up by month."""
    from memosite.curator import run_gc

    bar = _ProgressBar()
    try:
        result = run_gc(app.vault, app.project, dry_run=dry_run, purge=purge, progress=bar)
    finally:
        bar.close()
    app.emit(result.to_json(), lambda: _gc_summary(result))


def _explain_line(explain: dict[str, Any]) -> str:
    """Where each ranking put a hit: ``words #2 · meaning #5 (similarity 0.61) · fused 0.0318``;
    a ranking that did not find it says so, and a search by words alone shows only its rank."""
    words = f"words #{explain['bm25Rank']}" if explain.get("bm25Rank") else "words: no match"
    if explain.get("fusedScore") is None:
        return words
    meaning = (
        f"meaning #{explain['vectorRank']} (similarity {explain['similarity']:.2f})"
        if explain.get("vectorRank")
        else "meaning: not among the most alike"
    )
    return f"{words} · {meaning} · fused {explain['fusedScore']:.4f}"


def _nothing_found(app: App, all_projects: bool) -> str:
    """What an empty search says: which project it searched and why that one, and the vault's other
    projects (a search run outside the project's repository lands in another project, and an empty
    answer would read as "nothing is known")."""
    if all_projects:
        return "no matches in any project of the vault"
    from memosite.cli.workspace import project_source

    project = app.project
    said = f"no matches in project {project} (from {project_source(app.identity.source)})"
    others = [name for name in app.vault.projects() if name != project]
    if not others:
        return said
    shown = ", ".join(others[:5]) + (f" and {len(others) - 5} more" if len(others) > 5 else "")
    return f"{said}; this vault also holds {shown}: --project {others[0]}, or --all-projects"


def _search_text(result: SearchResult, explain: bool = False, empty: str = "no matches") -> str:
    if not result.results:
        return empty
    lines = [f"(ranked by {'words and meaning' if result.ranking == 'hybrid' else 'words alone'})"] if explain else []
    terms = ", ".join(result.terms)
    if result.match == "any":
        lines.append(f"(no record holds every term; records holding some of {terms}, most relevant first)")
    elif result.match == "all" and result.holding_all is not None and result.total > result.holding_all:
        held = result.holding_all
        lines.append(
            f"({held} {'record holds' if held == 1 else 'records hold'} every term; "
            f"records holding some of {terms} rank among them by relevance)"
        )
    for hit in result.results:
        flags = "".join(f" [{flag}]" for flag in hit.flags)
        severity = f" {hit.severity}" if hit.severity else ""
        lines.append(f"{hit.kind:8} {hit.id}  {hit.status}{severity}{flags}  {hit.title}")
        if hit.snippet:
            lines.append(f"         {hit.snippet}")
        if explain and hit.explain is not None:
            lines.append(f"         {_explain_line(hit.explain)}")
    shown = len(result.results)
    if result.total > shown:
        lines.append(f"({shown} of {result.total} shown; raise --limit for more)")
    return "\n".join(lines)


@click.command()
@click.argument("query", nargs=-1)
@click.option("--kind", "kinds", multiple=True, help="Only this kind (repeatable).")
@click.option("--status", help="Only this status (archived and superseded are hidden unless asked for).")
@click.option("--tag", "tags", multiple=True, help="Only records with this tag (repeatable: all must match).")
@click.option("--path", help="Only records whose path patterns cover this file or directory.")
@click.option("--include-expired", is_flag=True, help="Include expired records, marked expired.")
@click.option("--as-of", help="Records active at this date (YYYY-MM-DD = end of that UTC day, or RFC 3339).")
@click.option(
    "--sort",
    type=click.Choice(["relevance", "occurrences", "updated", "hits"]),
    default="relevance",
    show_default=True,
)
@click.option("--limit", type=int, default=20, show_default=True)
@click.option("--hit-ids", help="Comma-separated ids the agent used: each counts a hit.")
@click.option("--session-id", help="Count each hit at most once per agent session.")
@click.option("--all-projects", is_flag=True, help="Search every project of the vault.")
@click.option("--include-pending", is_flag=True, help="Also records waiting for review (memosite review).")
@click.option("--author", help="Only records written by this author (part of the name is enough).")
@click.option("--explain", is_flag=True, help="Show each result's bm25 rank, rank by meaning and fused score.")
@vault_options
def search(
    app: App,
    query: tuple[str, ...],
    kinds: tuple[str, ...],
    status: str | None,
    tags: tuple[str, ...],
    path: str | None,
    include_expired: bool,
    as_of: str | None,
    sort: str,
    limit: int,
    hit_ids: str | None,
    session_id: str | None,
    all_projects: bool,
    include_pending: bool,
    author: str | None,
    explain: bool,
) -> None:
    """Full-text search (FTS5, bm25) over titles, bodies and tags, and by meaning.

    QUERY is read as a person means it: records holding all its words first, then (when those are
    fewer than --limit) records holding any of them, most words first. Stop words are ignored, the
    last word is also a prefix, "quoted phrases" stay phrases, accents do not matter, and Chinese or
    Japanese text is found as a substring. FTS5 syntax (OR, NOT, NEAR, title:word) is used as
    written; anything SQLite rejects is searched as plain words. Scratch notes are searched only
    with --kind scratch. With memosite[semantic] installed, relevance also ranks by meaning (records
    saying the same in other words), fused with the words' ranking; --explain shows both.
    """
    from memosite.hits import search_counting_hits

    result = search_counting_hits(
        app.vault,
        None if all_projects else app.project,
        " ".join(query) or None,
        kinds=kinds or None,
        status=status,
        tags=tags or None,
        path=path,
        include_expired=include_expired,
        as_of=as_of,
        sort=sort,
        limit=limit,
        hit_ids=[i for i in (hit_ids or "").split(",") if i.strip()] or None,
        session_id=session_id,
        include_pending=include_pending,
        author=author,
        explain=explain,
    )
    app.emit(result.to_json(), lambda: _search_text(result, explain, _nothing_found(app, all_projects)))


@click.command()
@click.option("--query", help="What the session is about (a sentence is fine): matching traps and decisions first.")
@click.option("--slug", help="The spec/plan/state slug being worked on.")
@click.option("--path", help="The file or directory being worked on: traps covering it come first.")
@click.option("--max-bytes", type=int, help="UTF-8 byte budget (default: bootstrap.maxBytes, 8192).")
@click.option(
    "--max-tokens",
    type=int,
    help="Token budget instead (estimated as bytes / 4); with --max-bytes too, the brief keeps within both.",
)
@click.option("--session-id", help="Count each included record's hit at most once per session.")
@click.option("--fresh-only", is_flag=True, help="Leave out records whose cited code verify found drifted or missing.")
@click.option("--explain", is_flag=True, help="After the brief, say in a few words why each record is in it.")
@vault_options
def bootstrap(
    app: App,
    query: str | None,
    slug: str | None,
    path: str | None,
    max_bytes: int | None,
    max_tokens: int | None,
    session_id: str | None,
    fresh_only: bool,
    explain: bool,
) -> None:
    """Print the session brief: current work, active traps and accepted decisions.

    The brief says when it left anything out (its last line, and truncated/omitted in --json);
    --json also gives its size in bytes and estimated tokens.
    """
    from memosite.hits import bootstrap_counting_hits

    result: BootstrapResult = bootstrap_counting_hits(
        app.vault,
        app.project,
        query=query,
        slug=slug,
        path=path,
        max_bytes=max_bytes,
        max_tokens=max_tokens,
        session_id=session_id,
        fresh_only=fresh_only,
    )
    app.emit(result.to_json(), (lambda: _brief_with_reasons(result)) if explain else result.markdown)


def _brief_with_reasons(result: BootstrapResult) -> str:
    """The brief, then one line per record it holds: its section, id and why it is there."""
    items = [*result.context, *result.traps, *result.decisions, *result.pending]
    lines = [result.markdown.rstrip("\n"), "", "---", "Why each record is in the brief:"]
    lines += [f"  {item.section:9} {item.id}: {item.why}" for item in items]
    if not items:
        lines.append("  (none)")
    return "\n".join(lines)


def _rank_text(result: RankResult) -> str:
    if not result.traps:
        return f"no active traps in {result.project}"
    lines = []
    for position, trap in enumerate(result.traps, 1):
        stale = " [stale]" if trap.flagged_stale else ""
        lines.append(
            f"{position:3}. {trap.occurrences:3}× {trap.hits:4} hits  "
            f"{(trap.severity or '-'):8} {trap.id}{stale}  {trap.title}"
        )
    return "\n".join(lines)


def _backfill_text(result: BackfillResult) -> str:
    verb = "would write" if result.dry_run else "wrote"
    lines = [f"backfill {result.project}: {result.scanned} traps read, {verb} {len(result.updated)}"]
    for trap in result.updated:
        fields = ", ".join(f"{key}={value}" for key, value in trap.fields.items())
        lines.append(f"  {trap.id}: {fields}")
    lines += [f"  skipped {item['path']}: {item['reason']}" for item in result.skipped]
    return "\n".join(lines)


@click.command()
@click.option("--layer", help="Only traps of this layer (or another name for it: frontend, infra, qa …).")
@click.option("--limit", type=int, default=10, show_default=True)
@click.option(
    "--backfill",
    is_flag=True,
    help="Instead: write layer, module, occurrences and lastSeen onto traps that lack them (one commit).",
)
@click.option("--dry-run", is_flag=True, help="With --backfill: report what would be written; write nothing.")
@vault_options
def rank(app: App, layer: str | None, limit: int, backfill: bool, dry_run: bool) -> None:
    """Active traps ranked by occurrences, then hits (flagged-stale traps last)."""
    from memosite.errors import InvalidArguments
    from memosite.salience import backfill_traps, rank_traps

    if backfill:
        if layer is not None:
            raise InvalidArguments("--backfill writes every trap of the project: it takes no --layer")
        done = backfill_traps(app.vault, app.project, dry_run=dry_run)
        app.emit(done.to_json(), lambda: _backfill_text(done))
        return
    if dry_run:
        raise InvalidArguments("--dry-run goes with --backfill")
    result = rank_traps(app.vault, app.project, layer=layer, limit=limit)
    app.emit(result.to_json(), lambda: _rank_text(result))


@click.command()
@click.argument("record_id", metavar="ID")
@click.option("--helpful/--stale", "helpful", default=None, help="Was the record helpful, or out of date?")
@vault_options
def feedback(app: App, record_id: str, helpful: bool | None) -> None:
    """Vote a record helpful or stale (stale outweighing helpful flags it)."""
    from memosite.errors import InvalidArguments
    from memosite.salience import record_feedback

    if helpful is None:
        raise InvalidArguments("say --helpful or --stale")
    result = record_feedback(app.vault, app.project, record_id, helpful=helpful)
    flag = " (flagged stale)" if result.flagged_stale else ""
    app.emit(
        result.to_json(),
        f"{result.id}: {result.helpful_count} helpful, {result.stale_count} stale{flag}",
    )
