"""The ``memosite`` MkDocs plugin: a vault's records, views and Memory page as virtual pages.

Add it to any MkDocs site::

    plugins:
      - search
      - memosite:
          vault: ~/.memosite          # default: MEMOSITE_VAULT or ~/.memosite
          projects: [acme-shop]       # default: every project
          prefix: memory              # URL prefix of the memory section
          include_inactive_in_search: false

Nothing is written into ``docs_dir``: pages are generated in ``on_files``. Record pages stay out
of the navigation (a nav entry per record would make the site grow with the square of the
records). Record HTML is sanitised, and the build scans its own output for secrets and fails,
leaving nothing published, when it finds one.

The plugin keeps state between builds of one process (it defines ``on_startup``, so MkDocs reuses
the instance while serving): a page whose Markdown did not change is not rebuilt by a dirty build,
and the search index is completed from the previous build's entries, so a dirty rebuild stays
whole.
"""

from __future__ import annotations

import hashlib
import html
import logging
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mkdocs.config import config_options as c
from mkdocs.config.base import Config
from mkdocs.config.defaults import MkDocsConfig
from mkdocs.exceptions import PluginError
from mkdocs.livereload import LiveReloadServer
from mkdocs.plugins import BasePlugin, event_priority
from mkdocs.structure.files import File, Files, InclusionLevel
from mkdocs.structure.pages import Page
from mkdocs.structure.toc import AnchorLink

from memosite.errors import MemositeError

if TYPE_CHECKING:
    from memosite.secrets import SecretFinding
    from memosite.site.output import OutputScanner
    from memosite.site.pages import SiteContent, SitePage

log = logging.getLogger("mkdocs.plugins.memosite")

# Below this many pages a helper process costs more than it saves.
PARALLEL_SCAN_PAGES = 200
ASSETS = ("assets/memosite/memory.css", "assets/memosite/memory.js")


class MemositePluginConfig(Config):
    vault = c.Optional(c.Type(str))
    projects = c.ListOfItems(c.Type(str), default=[])
    prefix = c.Type(str, default="memory")
    include_inactive_in_search = c.Type(bool, default=False)


class _VirtualPage(File):
    """A generated page that knows whether the previous build already wrote this exact page."""

    unchanged = False

    def is_modified(self) -> bool:
        return not self.unchanged or not os.path.isfile(self.abs_dest_path)


@dataclass
class _BuildMemory:
    """What the last successful build into ``site_dir`` produced (for dirty rebuilds)."""

    key: tuple[Any, ...] = ()
    fingerprints: dict[str, str] = field(default_factory=dict)  # src_uri -> hash of its Markdown
    dest_paths: dict[str, str] = field(default_factory=dict)  # src_uri -> abs_dest_path
    search_docs: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # page url -> docs


def _digest(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).hexdigest()


class MemositePlugin(BasePlugin[MemositePluginConfig]):
    """Publishes a memosite vault inside an MkDocs site."""

    def __init__(self) -> None:
        super().__init__()
        self.vault_root: Path | None = None
        self.prefix = "memory"
        self.projects: list[str] = []
        # memosite's own ``serve`` runs its own vault watcher and turns this off.
        self.watch_vault_on_serve = True
        self._memory = _BuildMemory()
        self._content: SiteContent | None = None
        self._files: Files | None = None
        self._started_ns = 0
        self._scanner: OutputScanner | None = None

    @property
    def published_records(self) -> int:
        """How many records the last build published."""
        return len(self._content.records) if self._content is not None else 0

    # --- configuration -----------------------------------------------------------------------
    def on_startup(self, *, command: str, dirty: bool) -> None:
        """Defined so that MkDocs keeps this instance (and its page cache) across serve rebuilds."""

    def on_config(self, config: MkDocsConfig) -> MkDocsConfig:
        from memosite.config import resolve_vault_root
        from memosite.site.pages import nav_section, normalize_prefix, resolve_projects
        from memosite.vault import Vault

        self.vault_root = resolve_vault_root(self.config.vault, os.environ)
        try:
            self.prefix = normalize_prefix(self.config.prefix)
            self.projects = resolve_projects(Vault.open(self.vault_root, create=False), self.config.projects)
        except MemositeError as exc:
            raise PluginError(f"memosite: {exc.message}") from exc
        if config.nav is not None and not _nav_mentions(config.nav, self.prefix + "/"):
            config.nav.append(nav_section(self.prefix, self.projects))
        for asset, option in zip(ASSETS, (config.extra_css, config.extra_javascript), strict=True):
            if asset not in [str(item) for item in option]:
                option.append(asset)
        key = (
            str(self.vault_root),
            config.site_dir,
            self.prefix,
            tuple(self.projects),
            self.config.include_inactive_in_search,
            config.use_directory_urls,
        )
        if key != self._memory.key:
            self._memory = _BuildMemory(key=key)
        return config

    def on_pre_build(self, *, config: MkDocsConfig) -> None:
        self._started_ns = time.time_ns()

    # --- pages -------------------------------------------------------------------------------
    def on_files(self, files: Files, *, config: MkDocsConfig) -> Files:
        from memosite.indexing import ensure_index
        from memosite.resources import data_path
        from memosite.site.pages import collect_site_content
        from memosite.vault import Vault
        from memosite.watch import recompile_projects

        assert self.vault_root is not None
        try:
            vault = Vault.open(self.vault_root, create=False)
            try:
                ensure_index(vault)
                # Files first: edits made by hand since the last compile reach the index and the
                # vault's own views before the site is made from them.
                recompile_projects(vault, self.projects)
                content = collect_site_content(vault, prefix=self.prefix, projects=self.projects)
            finally:
                vault.close()
        except MemositeError as exc:
            raise PluginError(f"memosite: {exc.message}") from exc

        previous = self._memory.fingerprints
        for page in content.pages:
            existing = files.get_file_from_path(page.src_uri)
            if existing is not None:
                log.warning("memosite: '%s' in docs_dir replaces the generated page", page.src_uri)
                continue
            inclusion = InclusionLevel.NOT_IN_NAV if page.role == "record" else InclusionLevel.UNDEFINED
            virtual = _VirtualPage.generated(config, page.src_uri, content=page.markdown, inclusion=inclusion)
            assert isinstance(virtual, _VirtualPage)  # generated() builds an instance of its class
            virtual.unchanged = previous.get(page.src_uri) == _digest(page.fingerprint)
            files.append(virtual)
        urls = {file.src_uri: file.url for file in files}
        records_json = content.records_json(lambda uri: urls.get(uri, uri))
        files.append(File.generated(config, content.records_json_uri, content=records_json))
        assets = data_path("site_src")
        for asset in ASSETS:
            if asset not in files:
                files.append(File.generated(config, asset, abs_src_path=str(assets / asset)))
        self._content = content
        self._files = files
        return files

    def _site_page(self, page: Page) -> SitePage | None:
        return self._content.page(page.file.src_uri) if self._content is not None else None

    def on_page_markdown(self, markdown: str, *, page: Page, config: MkDocsConfig, files: Files) -> str:
        site_page = self._site_page(page)
        if site_page is None or site_page.record is None:
            return markdown
        # MkDocs themes print the title unescaped; hand them text that is already escaped.
        page.meta["title"] = html.escape(site_page.title, quote=False)
        if not site_page.record.searchable_by_default and not self.config.include_inactive_in_search:
            page.meta["search"] = {**(page.meta.get("search") or {}), "exclude": True}
        return markdown

    def on_page_content(self, html_text: str, *, page: Page, config: MkDocsConfig, files: Files) -> str:
        from memosite.sanitize import sanitize_html

        site_page = self._site_page(page)
        if site_page is None or site_page.role == "memory":
            return html_text
        _sanitize_toc(page.toc, sanitize_html)
        return sanitize_html(html_text)

    def on_env(self, env: Any, *, config: MkDocsConfig, files: Files) -> Any:
        from memosite.site.output import OutputScanner

        to_write = sum(1 for f in files.documentation_pages() if f.page is not None and f.page.content is not None)
        parallel = to_write >= PARALLEL_SCAN_PAGES and (os.cpu_count() or 1) > 1
        self._scanner = OutputScanner(Path(config.site_dir), parallel=parallel)
        return env

    @event_priority(-100)  # scan what is written, after every other plugin had its say
    def on_post_page(self, output: str, *, page: Page, config: MkDocsConfig) -> str:
        if self._scanner is not None:
            self._scanner.submit(page.file.abs_dest_path, output)
        return output

    # --- serving -----------------------------------------------------------------------------
    def on_serve(self, server: LiveReloadServer, *, config: MkDocsConfig, builder: Any) -> LiveReloadServer:
        if not self.watch_vault_on_serve or self.vault_root is None:
            return server
        # Record directories only: the views this plugin compiles live at each project's root,
        # and watching them would rebuild once more after every rebuild.
        from memosite.kinds import RECORD_DIRS

        projects_dir = self.vault_root / "projects"
        server.watch(str(projects_dir), recursive=False)
        for project in self.projects:
            for subdir in RECORD_DIRS:
                directory = projects_dir / project / subdir
                if directory.is_dir():
                    server.watch(str(directory))
        return server

    # --- after the build ---------------------------------------------------------------------
    @event_priority(-100)  # after the search plugin has written its index
    def on_post_build(self, *, config: MkDocsConfig) -> None:
        from memosite.site.output import (
            OutputScanner,
            clean_site_dir,
            complete_search_index,
            remove_outputs,
        )

        assert self._files is not None and self._content is not None
        site_dir = Path(config.site_dir)
        pages = [f.page for f in self._files.documentation_pages() if f.page is not None]
        rebuilt = {page.url for page in pages if page.content is not None}
        incremental = len(rebuilt) < len(pages)  # a dirty build skipped the unchanged pages
        self._memory.search_docs = complete_search_index(
            site_dir, [page.url for page in pages], rebuilt, self._memory.search_docs, rewrite=incremental
        )
        generated = {f.src_uri: f.abs_dest_path for f in self._files if isinstance(f, _VirtualPage)}
        if incremental:
            remove_outputs(site_dir, [p for uri, p in self._memory.dest_paths.items() if uri not in generated])
        scanner = self._scanner or OutputScanner(site_dir, parallel=False)
        self._scanner = None
        findings = scanner.finish(modified_since_ns=self._started_ns - 1_000_000_000 if incremental else None)
        if findings:
            clean_site_dir(site_dir)
            self._memory = _BuildMemory(key=self._memory.key)
            raise PluginError(_refusal(findings))
        self._memory.fingerprints = {
            page.src_uri: _digest(page.fingerprint) for page in self._content.pages if page.src_uri in generated
        }
        self._memory.dest_paths = generated

    def on_build_error(self, *, error: Exception) -> None:
        # A failed build may leave a half-written site: the next one must rebuild every page.
        self._memory = _BuildMemory(key=self._memory.key)
        if self._scanner is not None:
            self._scanner.close()
            self._scanner = None


def _refusal(findings: list[SecretFinding]) -> str:
    places = "; ".join(f"{f.kind} in {f.where}" + (f" line {f.line}" if f.line else "") for f in findings[:3])
    more = f"; and {len(findings) - 3} more" if len(findings) > 3 else ""
    return f"memosite: refusing to publish: {places}{more}. Nothing was published."


def _nav_mentions(nav: Any, prefix: str) -> bool:
    """Whether a user's ``nav`` already places pages of the memory section itself."""
    if isinstance(nav, str):
        return nav.startswith(prefix)
    if isinstance(nav, dict):
        return any(_nav_mentions(value, prefix) for value in nav.values())
    if isinstance(nav, list):
        return any(_nav_mentions(item, prefix) for item in nav)
    return False


def _sanitize_toc(items: Any, clean: Any) -> None:
    # Material prints table-of-contents titles as HTML, and they come from record headings.
    for item in items or ():
        if isinstance(item, AnchorLink):
            item.title = clean(item.title)
            _sanitize_toc(item.children, clean)
