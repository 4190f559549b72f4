"""Building the site: the MkDocs configuration for a vault, one build, and an ``--out`` build.

A build never touches the destination until it has succeeded: what MkDocs renders goes into a
staging directory next to it and is scanned for secrets (by the plugin, as are the pages it takes
from the page cache); only then is the destination brought in step, in place, file by file
(:func:`memosite.site.output.update_site`): a build after one record changed writes that record's
page and the pages that list it, and nothing else.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memosite.errors import BuildError, InvalidArguments
from memosite.resources import data_path
from memosite.site.collector import fewer_collections
from memosite.site.destination import check_destination
from memosite.vault import Vault

if TYPE_CHECKING:
    from mkdocs.config.defaults import MkDocsConfig

    from memosite.plugin import MemositePlugin

PLUGIN_NAME = "memosite"
# MkDocs logs under "mkdocs"; ProperDocs (which answers MkDocs' imports in its build process,
# see memosite.site.engines) under "properdocs".
ENGINE_LOGGERS = ("mkdocs", "properdocs")


@dataclass
class BuildResult:
    """What one build produced."""

    site_dir: str
    projects: list[str]
    records: int
    pages: int
    bytes: int
    seconds: float
    warnings: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)  # files of the previous build a person edited since

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@contextlib.contextmanager
def _collect_mkdocs_warnings() -> Iterator[list[str]]:
    """MkDocs' warnings of this build, as a list (and not on stderr unless the caller says so)."""
    handler = _Collect()
    loggers = [logging.getLogger(name) for name in ENGINE_LOGGERS]
    for logger in loggers:
        logger.addHandler(handler)
    try:
        yield handler.messages
    finally:
        for logger in loggers:
            logger.removeHandler(handler)


def _failure(exc: BaseException, warnings: Sequence[str]) -> BuildError:
    cause = exc.__context__ if exc.__context__ is not None else exc
    message = str(cause).strip() or str(exc)
    message = message.removeprefix("memosite: ")
    # mkdocs reports errors in its log and aborts with a generic line; the log says what broke.
    if message.startswith("Aborted with") and warnings:
        message = f"{message} {warnings[-1]}"
    return BuildError(f"site build failed: {message}", details={"warnings": list(warnings)})


def memosite_plugin(config: MkDocsConfig) -> MemositePlugin:
    from memosite.plugin import MemositePlugin

    plugin = config.plugins.get(PLUGIN_NAME)
    if not isinstance(plugin, MemositePlugin):
        raise BuildError(
            f"{config.config_file_path or 'the MkDocs config'} does not use the memosite plugin;"
            " add `- memosite` under `plugins:`"
        )
    return plugin


def load_site_config(
    vault: Vault,
    *,
    site_dir: Path,
    config_file: str | Path | None = None,
    strict: bool = False,
    projects: Sequence[str] | None = None,
    dev_addr: str | None = None,
    site_url: str | None = None,
    fallback_site_url: str | None = None,
    site_name: str | None = None,
    include_pending: bool = False,
) -> MkDocsConfig:
    """The MkDocs configuration that publishes ``vault`` into ``site_dir``.

    Without ``config_file`` this is memosite's own site (the packaged ``mkdocs.yml`` with its
    ``site_src``), named ``site_name`` or "<project> memory" (the one project published; "Project
    memory" for several). The vault is always the one given here, whatever a config file says.
    ``site_url`` (where the site will be served) overrides the config's; Material's instant
    navigation and ``sitemap.xml`` need one; ``fallback_site_url`` is used when neither gives one.
    ``include_pending`` publishes records waiting for review (a config file may also say so).
    """
    from mkdocs.config import load_config
    from mkdocs.exceptions import MkDocsException

    from memosite.site.pages import default_site_name

    overrides: dict[str, Any] = {"site_dir": str(site_dir)}
    if config_file is None:
        path = data_path("mkdocs.yml")
        overrides["docs_dir"] = str(data_path("site_src"))
        published = list(projects) if projects else vault.projects()
        overrides["site_name"] = site_name or default_site_name(published)
    else:
        path = Path(config_file)
        if not path.is_file():
            raise InvalidArguments(f"no MkDocs config at {path}")
        if site_name:
            overrides["site_name"] = site_name
    if strict:
        overrides["strict"] = True
    if dev_addr:
        overrides["dev_addr"] = dev_addr
    if site_url:
        overrides["site_url"] = site_url
    with _collect_mkdocs_warnings() as warnings:
        try:
            config = load_config(str(path), **overrides)
        except (MkDocsException, SystemExit) as exc:
            raise _failure(exc, warnings) from None
    if not config.site_url and fallback_site_url:
        config.site_url = fallback_site_url.rstrip("/") + "/"
    plugin = memosite_plugin(config)
    # MkDocs keeps one plugin instance per process: say afresh what this build is.
    plugin.serving = False
    plugin.recompile_vault = True
    plugin.watch_vault_on_serve = True
    plugin.defer_cached_pages = False
    plugin.reuse_markdown = True
    plugin.reuse_theme_partials = True
    plugin.fast_search_reading = True
    plugin.config.vault = str(vault.root)
    if projects:
        plugin.config.projects = list(projects)
    if include_pending:
        plugin.config.include_pending = True
    return config


class _NoDirtyNotice(logging.Filter):
    """memosite's builds are 'dirty' on purpose (the page cache decides what is rendered); MkDocs'
    notice about it would count as a warning under --strict."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "'dirty' build is being performed" not in record.getMessage()


def run_build(config: MkDocsConfig, *, dirty: bool = True, serve_url: str | None = None) -> list[str]:
    """One MkDocs build of ``config``; returns its warnings, raises BuildError when it fails.

    ``dirty`` lets the memosite plugin skip generated pages its cache already holds (MkDocs then
    renders only pages it is told changed); the site directory is not emptied first."""
    from mkdocs.commands.build import build
    from mkdocs.exceptions import MkDocsException

    quiet = _NoDirtyNotice()
    loggers = [logging.getLogger(f"{name}.commands.build") for name in ENGINE_LOGGERS]
    for logger in loggers:
        logger.addFilter(quiet)
    with _collect_mkdocs_warnings() as warnings:
        try:
            build(config, dirty=dirty, serve_url=serve_url)
        except (MkDocsException, SystemExit) as exc:
            raise _failure(exc, warnings) from None
        finally:
            for logger in loggers:
                logger.removeFilter(quiet)
    return list(warnings)


def site_size(site_dir: Path) -> tuple[int, int]:
    """How many HTML pages and bytes a built site holds."""
    pages = total = 0
    for directory, _dirs, names in os.walk(site_dir):
        for name in names:
            total += os.path.getsize(os.path.join(directory, name))
            pages += name.endswith(".html")
    return pages, total


# A build's staging folder that has not changed for this long belongs to no running build (a build
# touches its folder as it fills it): one a killed build left, which nothing else would remove.
DEAD_STAGING_SECONDS = 24 * 3600


def _staging_prefix(out_dir: Path) -> str:
    return f".{out_dir.name}.memosite-build-"


def _remove_dead_staging(out_dir: Path) -> None:
    """Remove the staging folders beside ``out_dir`` that builds of this user, killed long ago, left."""
    prefix, now, me = _staging_prefix(out_dir), time.time(), os.getuid()
    try:
        entries = list(os.scandir(out_dir.parent))
    except OSError:
        return
    for entry in entries:
        if not entry.name.startswith(prefix):
            continue
        with contextlib.suppress(OSError):
            info = entry.stat(follow_symlinks=False)
            if entry.is_dir(follow_symlinks=False) and info.st_uid == me and now - info.st_mtime > DEAD_STAGING_SECONDS:
                shutil.rmtree(entry.path, ignore_errors=True)


@fewer_collections()
def build_site(
    vault: Vault,
    *,
    out_dir: str | Path,
    config_file: str | Path | None = None,
    strict: bool = False,
    projects: Sequence[str] | None = None,
    site_url: str | None = None,
    fallback_site_url: str | None = None,
    site_name: str | None = None,
    include_pending: bool = False,
) -> BuildResult:
    """Build the vault's site into ``out_dir``, replacing a previous build there only on success.

    A failed build (MkDocs error, strict-mode warning, secret found in the output) leaves
    ``out_dir`` exactly as it was. ``out_dir`` must be new, empty or a site memosite built (see
    :mod:`memosite.site.destination`); files a person keeps there beside the site stay, and so do
    files of the previous build a person edited since (``kept``). Python's cycle collector runs
    rarely meanwhile (:mod:`memosite.site.collector`).
    """
    from memosite.site.output import update_site

    destination = check_destination(out_dir, vault.root)
    out_dir = destination.path
    started = time.monotonic()
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    _remove_dead_staging(out_dir)
    staging = Path(tempfile.mkdtemp(prefix=_staging_prefix(out_dir), dir=out_dir.parent))
    try:
        os.chmod(staging, 0o755)
        config = load_site_config(
            vault,
            site_dir=staging,
            config_file=config_file,
            strict=strict,
            projects=projects,
            site_url=site_url,
            fallback_site_url=fallback_site_url,
            site_name=site_name,
            include_pending=include_pending,
        )
        plugin = memosite_plugin(config)
        plugin.defer_cached_pages = True
        warnings = run_build(config)
        update = update_site(staging, destination, plugin.cached_pages, plugin.page_cache)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    files = update.manifest.files if update.manifest is not None else {}
    return BuildResult(
        site_dir=str(out_dir),
        projects=list(plugin.projects),
        records=plugin.published_records,
        pages=sum(1 for name in files if name.endswith(".html")),
        bytes=sum(written.size for written in files.values()),
        seconds=round(time.monotonic() - started, 3),
        warnings=warnings,
        kept=update.kept,
    )
