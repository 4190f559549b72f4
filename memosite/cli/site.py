"""``memosite build``, ``serve``, ``watch`` and ``publish``: the vault as a site."""

from __future__ import annotations

import logging
import sys
from typing import TYPE_CHECKING, Any

import click

from memosite.cli._common import App, vault_options

if TYPE_CHECKING:
    from memosite.site.build import BuildResult
    from memosite.vault import Vault
    from memosite.watch import WatchBatch


class _Quiet(logging.Filter):
    """Drops MkDocs' notice on every dirty rebuild: serving rebuilds that way on purpose."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "'dirty' build is being performed" not in record.getMessage()


def _log_to_stderr() -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(levelname)-7s -  %(message)s"))
    handler.addFilter(_Quiet())
    for name in ("mkdocs", "memosite"):
        logger = logging.getLogger(name)
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
    # Per-page chatter of a build stays out of a serving terminal.
    logging.getLogger("mkdocs.commands.build").setLevel(logging.WARNING)


def _stop_on_sigterm() -> None:
    """Let a service manager's SIGTERM end the loop like Ctrl-C, so cleanup runs."""
    import signal

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, interrupt)


def _projects(app: App) -> list[str] | None:
    return [app.project] if app.project_arg else None


def _summary(result: BuildResult, verb: str = "built", engine: str | None = None) -> str:
    megabytes = result.bytes / 1_000_000
    projects = ", ".join(result.projects) or "no projects"
    using = f" with {engine}" if engine else ""
    summary = (
        f"{verb} {result.records} records of {projects} into {result.site_dir}{using}"
        f" ({result.pages} pages, {megabytes:.1f} MB, {result.seconds:.1f} s)"
    )
    if result.kept:
        shown = ", ".join(result.kept[:5]) + (f" and {len(result.kept) - 5} more" if len(result.kept) > 5 else "")
        summary += f"\nkept {len(result.kept)} file(s) of the previous build that were edited since: {shown}"
    return summary


def _report_warnings(warnings: list[str]) -> None:
    for message in warnings:
        if "'dirty' build" not in message:
            sys.stderr.write(f"memosite: warning: {message}\n")


_engine_option = click.option(
    "--engine",
    type=click.Choice(["mkdocs", "properdocs", "zensical"]),
    help="The generator: mkdocs (MkDocs 1.6), properdocs (its maintained continuation) or zensical "
    "(builds memosite's exported pages). Default: properdocs when installed, else mkdocs.",
)
_config_option = click.option(
    "--config",
    "config_file",
    metavar="FILE",
    type=click.Path(dir_okay=False),
    help="An MkDocs config that uses the memosite plugin (default: memosite's own site).",
)
_site_url_option = click.option(
    "--site-url",
    metavar="URL",
    help="Where the site will be served, e.g. https://team.example.org/memory/. Material's instant "
    "navigation and sitemap.xml need it (--gh-pages works it out for GitHub remotes).",
)
_site_name_option = click.option(
    "--site-name",
    metavar="TEXT",
    help='The site\'s name in its header and title (default: "<project> memory").',
)
_strict_option = click.option("--strict", is_flag=True, help="Fail on any MkDocs warning (broken links, ...).")
_include_pending_option = click.option(
    "--include-pending",
    is_flag=True,
    help="Publish records that wait for review too, marked unreviewed, with a Review page per project "
    "(default: they stay off the site and each project home says how many wait).",
)


@click.command()
@click.option(
    "--out",
    "out_dir",
    metavar="DIR",
    help="Where the site goes: a new or empty folder, or one memosite built (a rebuild removes only the "
    "files the last one wrote, and only once it succeeded). Default: this vault's folder in your cache "
    "directory (~/.cache/memosite/sites/…), never the directory you are in.",
)
@_engine_option
@_config_option
@_site_url_option
@_site_name_option
@_strict_option
@_include_pending_option
@vault_options
def build(
    app: App,
    out_dir: str | None,
    engine: str | None,
    config_file: str | None,
    site_url: str | None,
    site_name: str | None,
    strict: bool,
    include_pending: bool,
) -> None:
    """Build the vault's static site (MkDocs Material) into --out DIR, by default into this vault's
    folder in your cache directory (the summary says where): never into the directory you are in,
    which is most often the repository you work on.

    Publishes every project of the vault (only the --project one if you name it). The build
    fails, and publishes nothing, if its output holds anything that looks like a secret.
    """
    from memosite.site.destination import default_site_dir
    from memosite.site.engines import build_with_engine, choose_engine

    chosen = choose_engine(engine)
    result = build_with_engine(
        app.vault,
        chosen,
        out_dir=out_dir if out_dir is not None else default_site_dir(app.vault.root, app.env),
        config_file=config_file,
        strict=strict,
        projects=_projects(app),
        site_url=site_url,
        site_name=site_name,
        include_pending=include_pending,
    )
    _report_warnings(result.warnings)
    app.emit({**result.to_json(), "engine": chosen}, _summary(result, engine=chosen))


@click.command()
@click.option(
    "--dev-addr",
    default="127.0.0.1:8000",
    show_default=True,
    metavar="HOST:PORT",
    help="Where to listen. Stays on this machine unless you choose another address.",
)
@click.option("--open", "open_browser", is_flag=True, help="Open the site in a browser.")
@_config_option
@_include_pending_option
@vault_options
def serve(app: App, dev_addr: str, open_browser: bool, config_file: str | None, include_pending: bool) -> None:
    """Serve the vault's site with live reload until Ctrl-C.

    Runs the watch loop too: a record saved in an editor updates the index, the vault's views
    and the open browser pages, without a restart.
    """
    serve_with_logs(
        app.vault,
        dev_addr=dev_addr,
        config_file=config_file,
        open_browser=open_browser,
        include_pending=include_pending,
    )


def serve_with_logs(
    vault: Vault,
    *,
    dev_addr: str,
    config_file: str | None = None,
    open_browser: bool = False,
    include_pending: bool = False,
) -> None:
    """Serve with mkdocs' and memosite's log lines (the address, rebuilds) on stderr."""
    from memosite.site.server import serve as serve_site

    _log_to_stderr()
    serve_site(
        vault,
        dev_addr=dev_addr,
        config_file=config_file,
        open_browser=open_browser,
        livereload=True,
        include_pending=include_pending,
    )


READY_SECONDS = 60.0


@click.command()
@click.option(
    "--quiet-seconds",
    default=0.25,
    show_default=True,
    type=click.FloatRange(0.01, 60),
    help="How long the files must stay unchanged before a burst of edits is compiled.",
)
@vault_options
def watch(app: App, quiet_seconds: float) -> None:
    """Keep the index and compiled views in step with edits made outside memosite.

    Watches the vault's projects until Ctrl-C. Each burst of changes (create, edit, delete,
    save-by-rename) is compiled once; files that do not parse are reported and skipped.
    With --json, prints one JSON object per compile.
    """
    import threading

    from memosite.watch import VaultWatcher

    root = app.vault.root

    def report(batch: WatchBatch) -> None:
        if batch.touched:
            app.emit(batch.to_json(), lambda: _describe(batch))
            sys.stdout.flush()

    stop = threading.Event()
    _stop_on_sigterm()
    watcher = VaultWatcher(root, on_change=report, quiet=quiet_seconds)
    watcher.start()
    # The line says the watcher sees the files: a change made after it is compiled.
    if not watcher.wait_ready(READY_SECONDS):
        sys.stderr.write(f"memosite: warning: the watcher does not see changes after {READY_SECONDS:g} s yet\n")
    sys.stderr.write(f"memosite: watching {root / 'projects'} (Ctrl-C to stop)\n")
    sys.stderr.flush()
    try:
        while not stop.wait(3600):
            pass
    except KeyboardInterrupt:
        pass
    finally:
        watcher.stop()


def _describe(batch: WatchBatch) -> str:
    lines = []
    for change in batch.projects:
        if not change.touched:
            continue
        parts = [f"{len(change.changed)} changed", f"{len(change.added)} added", f"{len(change.removed)} removed"]
        views = f"; views: {', '.join(change.views)}" if change.views else ""
        lines.append(f"{change.project}: {', '.join(parts)}{views}")
    return "\n".join(lines)


@click.command()
@click.option("--to", "dest", metavar="DIR", help="Write a finished static copy of the site to DIR.")
@click.option("--gh-pages", "gh_pages", is_flag=True, help="Commit the site to a branch of a git remote.")
@click.option(
    "--remote",
    default="origin",
    show_default=True,
    help="With --gh-pages: a remote of the current repository, or a URL or path.",
)
@click.option("--branch", default="gh-pages", show_default=True, help="With --gh-pages: the branch to commit to.")
@click.option("--message", "-m", metavar="TEXT", help="With --gh-pages: the commit message.")
@_engine_option
@_config_option
@_site_url_option
@_site_name_option
@_strict_option
@_include_pending_option
@vault_options
def publish(
    app: App,
    dest: str | None,
    gh_pages: bool,
    remote: str,
    branch: str,
    message: str | None,
    engine: str | None,
    config_file: str | None,
    site_url: str | None,
    site_name: str | None,
    strict: bool,
    include_pending: bool,
) -> None:
    """Publish the site: a static copy (--to DIR) or a git branch (--gh-pages).

    The site is built and checked for secrets first; nothing is published if that fails.
    --gh-pages commits on top of the branch's history and pushes, like `mkdocs gh-deploy`,
    without touching your working tree.
    """
    from memosite.errors import InvalidArguments
    from memosite.site.engines import choose_engine

    if bool(dest) == gh_pages:
        raise InvalidArguments("choose one destination: --to DIR or --gh-pages")
    chosen = choose_engine(engine)
    common: dict[str, Any] = {
        "config_file": config_file,
        "strict": strict,
        "projects": _projects(app),
        "site_url": site_url,
        "site_name": site_name,
        "include_pending": include_pending,
    }
    if dest:
        from memosite.site.engines import publish_to_dir

        result = publish_to_dir(app.vault, dest=dest, engine=chosen, **common)
        _report_warnings(result.warnings)
        app.emit({**result.to_json(), "engine": chosen}, _summary(result, "published", engine=chosen))
        return
    from memosite.site.ghpages import publish_gh_pages

    pushed = publish_gh_pages(app.vault, remote=remote, branch=branch, message=message, engine=chosen, **common)
    _report_warnings(pushed.build.warnings)
    app.emit(
        pushed.to_json(),
        f"published {pushed.build.records} records to {pushed.remote} branch {pushed.branch}"
        f" (commit {pushed.commit[:12]})",
    )
