"""The ``memosite`` MkDocs plugin: a vault's records, views, dashboards and Memory page as virtual
pages.

Add it to any MkDocs site::

    plugins:
      - search
      - memosite:
          vault: ~/.memosite          # default: MEMOSITE_VAULT or ~/.memosite
          projects: [acme-shop]       # default: every project
          prefix: memory              # URL prefix of the memory section
          include_inactive_in_search: false
          include_pending: false      # publish records waiting for review (and a Review page)
          author_emails: false        # publish authors' e-mail addresses (default: names only)
          cache: auto                 # the page cache: auto, true or false

Nothing is written into ``docs_dir``: pages are generated in ``on_files``. Record pages stay out
of the navigation (a nav entry per record would make the site grow with the square of the
records). The plugin turns on the Markdown extensions its pages use (attr_list, md_in_html,
admonition, tables) and gives site search memosite's word separator (:mod:`memosite.site.search`)
unless the site sets one. Record HTML is sanitised, and the build scans what it publishes for secrets (each page's
content, title and table of contents, every other output file, ``records.json``, the feeds and
the search index) and fails, leaving nothing published, when it finds one.

Pages are cached by what they depend on (:mod:`memosite.site.cache`). A build run with
``dirty=True`` (``memosite build`` and ``serve`` do) renders only pages whose key changed and
copies the others from the cache; the search index is completed from the cached entries. The
plugin keeps its state between builds of one process (it defines ``on_startup``, so MkDocs reuses
the instance while serving).
"""

from __future__ import annotations

import functools
import html
import json
import logging
import os
import posixpath
import re
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import jinja2
import jinja2.bccache
from mkdocs.config import config_options as c
from mkdocs.config.base import Config
from mkdocs.config.defaults import MkDocsConfig
from mkdocs.exceptions import PluginError
from mkdocs.plugins import BasePlugin, event_priority
from mkdocs.structure.files import File, Files, InclusionLevel
from mkdocs.structure.pages import Page
from mkdocs.structure.toc import AnchorLink

from memosite.errors import MemositeError
from memosite.resources import SITE_ASSETS as ASSETS
from memosite.site.dashboard import OVERVIEW_MARK
from memosite.site.generated_files import GeneratedPage, PageMaker
from memosite.site.search import with_folded_fields

if TYPE_CHECKING:
    from mkdocs.livereload import LiveReloadServer  # a build never needs it (nor its watchdog, http.server)

    from memosite.site.cache import CachedPage, PageCache, Scanner
    from memosite.site.markdown_reuse import SharedMarkdown
    from memosite.site.pages import RecordMemo, SiteContent, SitePage
    from memosite.site.search_parse import Reading
    from memosite.site.theme_reuse import ThemeReuse

# Under the logger of the engine running (ProperDocs answers MkDocs' imports): --strict counts it.
log = logging.getLogger(f"{sys.modules['mkdocs'].__name__}.plugins.memosite")

SEARCH_INDEX = "search/search_index.json"
# Changes when the search entries a build caches change (the folded fields, how their words are
# read): no older cache entry is reused.
SEARCH_FORMAT = 3
# The Markdown extensions the generated pages use (attribute lists, HTML blocks holding Markdown,
# banners, tables).
PAGE_EXTENSIONS = ("attr_list", "md_in_html", "admonition", "tables")
SCANNED_SUFFIXES = (".html", ".json", ".xml", ".txt")
# Plugins whose output for a page depends only on that page and the configuration: with any other
# plugin in the site, cache: auto keeps no pages (the plugin may add something else, e.g. a date).
DETERMINISTIC_PLUGINS = frozenset({"search", "material/search", "memosite", "tags", "material/tags", "offline"})
# pymdownx.tasklist's checkboxes (the sanitiser removes every <input>): kept through it as tokens.
_TASK = re.compile(r'<label class="task-list-control"><input type="checkbox" disabled( checked)?/>')
_TASK_TOKEN = re.compile(r"MEMOSITETASK(ON|OFF)\.")
# A heading's text with no markup, entity or character the sanitiser would rewrite (no < > &).
_PLAIN_TITLE = re.compile(r"[\w \t.,:;!?'\"()/+*=#%@$^~|\[\]{}-]*")
# Where each entry of a sitemap starts (the text before it is cut off as a piece of its own).
_SITEMAP_ENTRY = re.compile(r"(?=<url>)")
_BADGE = re.compile(r"(<h3[^>]*>)\[(CRITICAL|HIGH|MEDIUM|LOW|UNRATED)\] ")


class MemositePluginConfig(Config):
    vault = c.Optional(c.Type(str))
    projects = c.ListOfItems(c.Type(str), default=[])
    prefix = c.Type(str, default="memory")
    include_inactive_in_search = c.Type(bool, default=False)
    include_pending = c.Type(bool, default=False)
    author_emails = c.Type(bool, default=False)
    cache = c.Choice(("auto", "true", "false", True, False), default="auto")


class _ThemeBytecodeCache(jinja2.BytecodeCache):
    """Compiled theme templates, by template name and source checksum: in this process's memory
    (serve renders with them on every rebuild) and in this user's cache directory, so a new build
    process does not compile Material's templates again."""

    def __init__(self) -> None:
        self._store: dict[str, bytes] = {}
        self._disk: jinja2.BytecodeCache | bool | None = False  # False: not opened yet

    def _on_disk(self) -> jinja2.BytecodeCache | None:
        if self._disk is False:
            from memosite.template_env import file_bytecode_cache, theme_bytecode_dir

            self._disk = file_bytecode_cache(theme_bytecode_dir())
        return self._disk if isinstance(self._disk, jinja2.BytecodeCache) else None

    def load_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        code = self._store.get(bucket.key)
        if code is not None:
            bucket.bytecode_from_string(code)
            return
        disk = self._on_disk()
        if disk is not None:
            disk.load_bytecode(bucket)
            if bucket.code is not None:
                self._store[bucket.key] = bucket.bytecode_to_string()

    def dump_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        self._store[bucket.key] = bucket.bytecode_to_string()
        disk = self._on_disk()
        if disk is not None:
            disk.dump_bytecode(bucket)


_THEME_BYTECODE = _ThemeBytecodeCache()

# MkDocs lists the theme's files on every build (a walk of each theme directory and a dozen
# patterns matched per file); serve builds again after each edit. An installed theme cannot change
# under a running process, so its listing is kept, by directories and patterns; the site's own theme
# directory (custom_dir) is listed afresh each time, since serve rebuilds when it changes.
_THEME_LISTINGS: dict[tuple[Any, ...], frozenset[str]] = {}


def _keep_theme_listing(theme: Any) -> None:
    """Make the environments ``theme`` hands out list the installed theme's files once per process."""
    if getattr(theme, "_memosite_listing", False):
        return
    original = theme.get_env

    def get_env() -> Any:
        env = original()
        env.list_templates = functools.partial(_list_theme_templates, env, tuple(theme.static_templates))
        return env

    theme.get_env = get_env
    theme._memosite_listing = True


def _list_theme_templates(
    env: jinja2.Environment,
    static: tuple[str, ...],
    extensions: Any = None,
    filter_func: Any = None,
) -> list[str]:
    """``env.list_templates``, the same names in the same order, the installed directories' part
    remembered."""
    loader = env.loader
    if extensions is not None or filter_func is None or not isinstance(loader, jinja2.FileSystemLoader):
        return jinja2.Environment.list_templates(env, extensions, filter_func)
    installed = tuple(str(d) for d in loader.searchpath if "site-packages" in str(d))
    own = [str(d) for d in loader.searchpath if "site-packages" not in str(d)]
    key = (installed, static, getattr(filter_func, "__qualname__", repr(filter_func)))
    names = _THEME_LISTINGS.get(key)
    if names is None and installed:
        # Kept across processes too (per user): a new build process need not walk Material again.
        from memosite.site.theme_listing import listing_key, load_listing, store_listing

        disk_key = listing_key(installed, *_versions(), *sorted(static), key[2])
        names = load_listing(disk_key)
        if names is None:
            listed = jinja2.FileSystemLoader(list(installed)).list_templates()
            names = frozenset(name for name in listed if filter_func(name))
            store_listing(disk_key, names)
        _THEME_LISTINGS[key] = names
    if names is None:
        names = _THEME_LISTINGS[key] = frozenset()
    if own:
        names = names | {name for name in jinja2.FileSystemLoader(own).list_templates() if filter_func(name)}
    return sorted(names)


class _AlwaysBuilt(File):
    """A page of the user's docs that shows the overview: it changes with the vault."""

    def is_modified(self) -> bool:
        return True


@dataclass
class _PageState:
    key: str
    search: str = ""  # its search entries as JSON text (memosite.site.cache.docs_text)


@dataclass
class _BuildMemory:
    """What the last successful build into ``site_dir`` produced (serve rebuilds from it)."""

    key: tuple[Any, ...] = ()
    written: dict[str, _PageState] = field(default_factory=dict)  # src_uri -> page in site_dir
    # src_uri -> the page's file (its abs_dest_path, worked out only for the pages asked about)
    files: dict[str, GeneratedPage] = field(default_factory=dict)
    other_search: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # url -> docs (user pages)


class MemositePlugin(BasePlugin[MemositePluginConfig]):
    """Publishes a memosite vault inside an MkDocs site."""

    def __init__(self) -> None:
        super().__init__()
        self.vault_root: Path | None = None
        self.prefix = "memory"
        self.projects: list[str] = []
        # memosite's own ``serve`` runs its own vault watcher and turns these off after the first build.
        self.watch_vault_on_serve = True
        self.recompile_vault = True
        self._memory = _BuildMemory()
        self._memo: RecordMemo | None = None
        self._content: SiteContent | None = None
        self._files: Files | None = None
        self._cache: PageCache | None = None
        self._scanner: Scanner | None = None
        self._keys: dict[str, str] = {}  # src_uri -> key of this build
        self._reuse: dict[str, CachedPage | _PageState] = {}  # src_uri -> where an unrendered page comes from
        self._rendered: set[str] = set()  # src_uris of virtual pages rendered by this build
        self._handled: set[str] = set()  # abs paths of outputs already scanned
        self._started_ns = 0
        self._site_name = ""
        self._scope = ""
        self._overview_charts: dict[str, str] | None = None
        self._search_text: dict[str, str] = {}  # src_uri -> its search entries as JSON (serve)
        self._files_by_uri: dict[str, GeneratedPage] = {}  # src_uri -> this build's file (serve reuses them)
        self._rows: dict[str, tuple[str, str]] = {}  # src_uri -> (what it was made from, records.json row)
        # src_uri -> (scope, fingerprint, charts, key): a page whose Markdown is unchanged keeps its key.
        self._page_keys: dict[str, tuple[str, str, tuple[str, ...], str]] = {}
        self._record_keys: dict[str, tuple[str, str, str]] = {}  # src_uri -> (scope, basis, key)
        self._present: set[str] = set()  # outputs of the last build this build found in place
        # True while serving (mkdocs serve, memosite serve): the page cache stays in memory.
        self.serving = False
        self._cache_dirty = False
        # memosite build places the pages taken from the page cache into its destination itself
        # (only those the destination lacks): the build then leaves them out of site_dir and lists
        # them here (site path -> src_uri), for :attr:`page_cache`.
        self.defer_cached_pages = False
        self.cached_pages: dict[str, str] = {}
        # Generated pages are rendered with one Markdown converter per build (made when the first
        # page is rendered; None where the site's extensions or engine do not allow it).
        self.reuse_markdown = True
        self._shared_markdown: SharedMarkdown | None = None
        self._shared_markdown_asked = False
        self.rows_made = 0  # records.json rows the last build made afresh (the others were kept)
        # Outside serve, a record page taken from the page cache is not handed to MkDocs at all (no
        # Page, no reading, no rendering): its File stays, excluded, so links to it still resolve;
        # the plugin puts it in the sitemap and the search index itself. src_uris of this build.
        self._withheld: set[str] = set()
        self._nav: Any = None
        # Parts of Material's pages rendered once for the pages that see them the same (memosite.site.theme_reuse).
        self.reuse_theme_partials = True
        self._nav_reuse: ThemeReuse | None = None
        # Material's search reads the generated pages' HTML with one regular expression where it
        # can (memosite.site.search_parse).
        self.fast_search_reading = True
        self._search_reading: Reading | None = None
        # Under strict mode, the warnings of this build: a build the engine will abort keeps none
        # of its pages in the page cache (the next build would take them unread and unchecked).
        self._strict_warnings: _WarningCount | None = None

    @property
    def published_records(self) -> int:
        """How many records the last build published."""
        return len(self._content.records) if self._content is not None else 0

    @property
    def page_cache(self) -> PageCache | None:
        """The page cache of the last build (it holds :attr:`cached_pages`)."""
        return self._cache

    @property
    def rendered_pages(self) -> int:
        """How many generated pages the last build rendered (the rest came from the cache)."""
        return len(self._rendered)

    @property
    def pages_handed_to_mkdocs(self) -> int:
        """How many generated pages the last build let MkDocs read (the rest it never saw as pages)."""
        return sum(1 for file in self._files_by_uri.values() if file.src_uri not in self._withheld)

    @property
    def shared_markdown_pages(self) -> int:
        """How many pages the last build rendered with its one shared Markdown converter."""
        return self._shared_markdown.rendered if self._shared_markdown is not None else 0

    @property
    def reused_nav_sidebars(self) -> int:
        """How many pages of the last build took Material's sidebar from an earlier page's render."""
        return self._nav_reuse.reused if self._nav_reuse is not None else 0

    @property
    def fast_search_pages(self) -> int:
        """How many pages of the last build Material's search read without html.parser."""
        return self._search_reading.fast if self._search_reading is not None else 0

    # --- configuration -----------------------------------------------------------------------
    def on_startup(self, *, command: str, dirty: bool) -> None:
        """Defined so that MkDocs keeps this instance (and its page cache) across serve rebuilds."""
        self.serving = command == "serve"

    def on_shutdown(self) -> None:
        """Serving keeps the page cache in memory between rebuilds and writes it out when it ends."""
        if self._cache is not None and self._cache_dirty:
            self._cache.save()
            self._cache_dirty = False

    @event_priority(50)  # before the search plugin reads its settings
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
        _use_page_extensions(config)
        _use_search_separator(config)
        _keep_theme_listing(config.theme)
        self._site_name = config.site_name
        key = (
            str(self.vault_root),
            config.site_dir,
            self.prefix,
            tuple(self.projects),
            self.config.include_inactive_in_search,
            self.config.include_pending,
            self.config.author_emails,
            config.use_directory_urls,
        )
        if key != self._memory.key:
            self._memory = _BuildMemory(key=key)
            self._memo = None
            self._files_by_uri, self._rows, self._page_keys, self._record_keys = {}, {}, {}, {}
        return config

    def on_pre_build(self, *, config: MkDocsConfig) -> None:
        self._started_ns = time.time_ns()
        self._shared_markdown, self._shared_markdown_asked = None, False
        self._search_reading = None
        self._count_warnings(config)
        search = next((config.plugins[name] for name in ("search", "material/search") if name in config.plugins), None)
        if self.fast_search_reading and search is not None:
            from memosite.site.search_parse import install

            self._search_reading = install(search)

    def on_pre_page(self, page: Page, *, config: MkDocsConfig, files: Files) -> Page:
        earlier = getattr(type(page), "shared_markdown", None)
        if earlier is not None:
            # Serving: a page an earlier build rendered goes back to MkDocs' class (that build's
            # converter may have another configuration); this build decides afresh.
            page.__class__ = earlier.base_class
        if not (self.reuse_markdown and isinstance(page.file, GeneratedPage)):
            return page
        if not self._shared_markdown_asked:
            from memosite.site.markdown_reuse import SharedMarkdown

            self._shared_markdown = SharedMarkdown.for_config(config)
            self._shared_markdown_asked = True
        shared = self._shared_markdown
        # Only a page MkDocs made as it makes every page (another plugin may have its own class).
        if shared is not None and type(page) is shared.base_class:
            page.__class__ = shared.page_class
        return page

    def _cache_wanted(self, config: MkDocsConfig) -> bool:
        setting = self.config.cache
        if setting in (True, "true"):
            return True
        if setting in (False, "false"):
            return False
        return all(name in DETERMINISTIC_PLUGINS for name in config.plugins)

    # --- pages -------------------------------------------------------------------------------
    def on_files(self, files: Files, *, config: MkDocsConfig) -> Files:
        from memosite.refresh import ensure_index
        from memosite.resources import data_path
        from memosite.site.cache import PageCache, Scanner, digest
        from memosite.site.pages import RecordMemo, collect_site_content
        from memosite.template_files import templates_checksum_for
        from memosite.vault import Vault
        from memosite.watch import recompile_projects

        assert self.vault_root is not None
        if self._memo is None:
            self._memo = RecordMemo() if self.serving else RecordMemo(dashboards=None)
        docs = list(files.documentation_pages())
        self._present = set()
        try:
            vault = Vault.open(self.vault_root, create=False)
            try:
                ensure_index(vault)
                if self.recompile_vault:
                    # Files first: edits made by hand since the last compile reach the index and the
                    # vault's own views before the site is made from them. The site shows words, not
                    # vectors: the embedding model is left to the next search.
                    recompile_projects(vault, self.projects, embed=False)
                scope = _site_scope(config, docs, templates_checksum_for(vault))
                if not (self.serving and self._cache is not None and self._cache.scope == scope):
                    self._cache = PageCache.open(vault.internal_dir if self._cache_wanted(config) else None, scope)
                if self._memory.written and scope != self._scope:
                    self._memory.written = {}  # the configuration changed: what serve wrote is stale
                # A record page is looked up by what it is made from before it is rendered: an
                # unchanged record costs a digest, not a template rendering.
                content = collect_site_content(
                    vault,
                    prefix=self.prefix,
                    projects=self.projects,
                    memo=self._memo,
                    include_pending=self.config.include_pending,
                    author_emails=self.config.author_emails,
                    known=lambda uri, basis: self._holds(uri, self._record_key(scope, uri, basis)),
                )
            finally:
                vault.close()
        except MemositeError as exc:
            raise PluginError(f"memosite: {exc.message}") from exc
        assert self._cache is not None
        self._scanner = Scanner(self._cache.clean)
        self._scope = scope

        self._keys, self._reuse, self._rendered, self._handled = {}, {}, set(), set()
        self._withheld = set()
        _QUIET_LINKS.targets = self._withheld
        previous_files, self._files_by_uri = self._files_by_uri, {}
        make_page = PageMaker(config)
        present = {file.src_uri for file in files}
        previous_keys, self._page_keys = self._page_keys, {}
        for page in content.pages:
            if page.src_uri in present:
                log.warning("memosite: '%s' in docs_dir replaces the generated page", page.src_uri)
                continue
            if page.basis:
                key = self._record_key(scope, page.src_uri, page.basis)
            else:
                fingerprint, charts = page.fingerprint, tuple(sorted(page.charts.values()))
                known = previous_keys.get(page.src_uri)
                if known is not None and known[0] == scope and known[1] == fingerprint and known[2] == charts:
                    key = known[3]
                else:
                    key = digest(scope, page.src_uri, fingerprint, *charts)
                self._page_keys[page.src_uri] = (scope, fingerprint, charts, key)
            self._keys[page.src_uri] = key
            written = self._memory.written.get(page.src_uri)
            earlier = previous_files.get(page.src_uri)
            if (
                self.serving
                and earlier is not None
                and written is not None
                and written.key == key
                and earlier.page is not None
                and _in_place(earlier.abs_dest_path, self._present)
            ):
                # Serving, unchanged: last build's file (and its Page) stand as they are.
                virtual = earlier
                virtual.render_needed = False
                self._reuse[page.src_uri] = written
            else:
                # Records and the trust pages are reached from the project homes, not the nav.
                inclusion = InclusionLevel.NOT_IN_NAV if page.role in ("record", "trust") else InclusionLevel.UNDEFINED
                virtual = make_page(page.src_uri, page.markdown, inclusion)
                if written is not None and written.key == key and os.path.isfile(virtual.abs_dest_path):
                    self._reuse[page.src_uri] = written
                    virtual.render_needed = False
                elif (cached := self._cache.lookup(page.src_uri, key)) is not None:
                    self._reuse[page.src_uri] = cached
                    virtual.render_needed = False
                elif page.basis and not page.markdown:
                    # Held when the page was gathered, gone since (a pack removed meanwhile).
                    raise PluginError(
                        f"memosite: the page cache lost {page.src_uri}; build again (it rebuilds the page)"
                    )
                if not virtual.render_needed and page.role == "record" and not self.serving:
                    # serve previews excluded pages (it would render them): only builds withhold.
                    virtual.inclusion = InclusionLevel.EXCLUDED
                    self._withheld.add(page.src_uri)
            self._files_by_uri[page.src_uri] = virtual
            files.append(virtual)
        for file in docs:
            if _shows_overview(file):
                file.__class__ = _AlwaysBuilt
        self._content = content
        self._files = files
        urls = {file.src_uri: file.url for file in files}
        # A new process starts from the rows the page cache kept (each checked against its record).
        rows, self._rows, self.rows_made = content.records_rows(
            lambda uri: urls.get(uri, uri), self._rows or self._cache.rows
        )
        self._cache.rows = self._rows
        for row in rows:  # scanned row by row: an unchanged row is a digest lookup
            self._scanner.scan(row, content.records_json_uri)
        files.append(
            File.generated(
                config, content.records_json_uri, content=content.records_json(lambda uri: urls.get(uri, uri), rows)
            )
        )
        self._add_feeds(config, files, content, urls)
        assets = data_path("site_src")
        for asset in ASSETS:
            if asset not in files:
                files.append(File.generated(config, asset, abs_src_path=str(assets / asset)))
        return files

    def _record_key(self, scope: str, src_uri: str, basis: str) -> str:
        """:func:`_record_key`, remembered by page between the builds of one process."""
        held = self._record_keys.get(src_uri)
        if held is not None and held[0] == scope and held[1] == basis:
            return held[2]
        key = _record_key(scope, src_uri, basis)
        self._record_keys[src_uri] = (scope, basis, key)
        return key

    def _holds(self, src_uri: str, key: str) -> bool:
        """Whether the page ``key`` names is at hand without rendering it: in the page cache, or
        (serving) in the site directory from the last build."""
        written = self._memory.written.get(src_uri)
        if written is not None and written.key == key:
            file = self._memory.files.get(src_uri)
            if file is not None and _in_place(file.abs_dest_path, self._present):
                return True
        return self._cache is not None and self._cache.lookup(src_uri, key) is not None

    def _add_feeds(self, config: MkDocsConfig, files: Files, content: SiteContent, urls: dict[str, str]) -> None:
        from memosite.schema import utc_now
        from memosite.site.dashboard import render_feed

        now = utc_now()
        for uri, source in content.feeds.items():
            text = render_feed(
                source,
                src_uri=uri,
                site_name=config.site_name,
                site_url=config.site_url,
                url_for=lambda u: urls.get(u, u),
                now=now,
            )
            assert self._scanner is not None
            self._scanner.scan(text, uri)
            files.append(File.generated(config, uri, content=text))

    def _site_page(self, page: Page) -> SitePage | None:
        return self._content.page(page.file.src_uri) if self._content is not None else None

    def on_page_markdown(self, markdown: str, *, page: Page, config: MkDocsConfig, files: Files) -> str:
        site_page = self._site_page(page)
        if site_page is None:
            if OVERVIEW_MARK in markdown and self._content is not None and self._content.overview is not None:
                return self._with_overview(markdown, page)
            return markdown
        # MkDocs themes print the title unescaped; hand them text that is already escaped.
        page.meta["title"] = html.escape(site_page.title, quote=False)
        if "hide" in site_page.meta:
            page.meta["hide"] = list(site_page.meta["hide"])
        if site_page.meta.get("tags"):
            # Search indexes them (the theme prints them, unescaped, where a tags plugin runs).
            page.meta["tags"] = [html.escape(str(tag), quote=False) for tag in site_page.meta["tags"]]
        searchable = site_page.searchable and (
            site_page.record is None or site_page.record.searchable_by_default or self.config.include_inactive_in_search
        )
        if not searchable:
            page.meta["search"] = {**(page.meta.get("search") or {}), "exclude": True}
        return markdown

    def _with_overview(self, markdown: str, page: Page) -> str:
        from memosite.site.dashboard import overview_markdown
        from memosite.vault import Vault
        from memosite.views import env_for

        assert self._content is not None and self._content.overview is not None and self.vault_root is not None
        vault = Vault.open(self.vault_root, create=False)
        try:
            env = env_for(vault)
        finally:
            vault.close()
        text, charts = overview_markdown(env, self._content.overview, posixpath.dirname(page.file.src_uri))
        self._overview_charts = charts
        return markdown.replace(OVERVIEW_MARK, text)

    def on_page_content(self, html_text: str, *, page: Page, config: MkDocsConfig, files: Files) -> str:
        from memosite.sanitize import sanitize_html

        site_page = self._site_page(page)
        if site_page is None:
            charts = self._overview_charts
            if charts:
                self._overview_charts = None
                return _with_charts(html_text, charts)
            return html_text
        self._rendered.add(site_page.src_uri)
        if site_page.role != "memory":
            _sanitize_toc(page.toc, sanitize_html)
            if "task-list-control" in html_text:
                html_text = _TASK.sub(lambda m: "MEMOSITETASKON." if m.group(1) else "MEMOSITETASKOFF.", html_text)
            html_text = sanitize_html(html_text)
            if "MEMOSITETASK" in html_text:
                html_text = _TASK_TOKEN.sub(_checkbox, html_text)
        if site_page.role == "view":
            html_text = _BADGE.sub(_badge, html_text)
        if site_page.role in ("dashboard", "changelog", "trust"):
            html_text = html_text.replace("<p>", '<p class="memosite-breadcrumb">', 1)
        html_text = _with_charts(html_text, site_page.charts)
        if self._scanner is not None:
            self._scanner.scan_html(html_text, page.file.dest_uri, str(site_page.title), _toc_text(page.toc))
        return html_text

    def on_nav(self, nav: Any, *, config: MkDocsConfig, files: Files) -> Any:
        self._nav = nav  # the sitemap is rendered again with it when pages were withheld
        if self._withheld and self._content is not None:
            # A withheld record page the site's nav lists by path alone is never read, so its nav
            # item would have no title: it gets the one its front matter gives when read.
            for page in nav.pages:
                if page.file.src_uri in self._withheld and page.markdown is None and "title" not in vars(page):
                    site_page = self._content.page(page.file.src_uri)
                    if site_page is not None:
                        page.title = str(site_page.title)
        return nav

    def on_env(self, env: Any, *, config: MkDocsConfig, files: Files) -> Any:
        # MkDocs makes a new theme environment for every build; serve would compile every theme
        # template again on each rebuild. Compiled templates are kept by their source's checksum.
        if getattr(env, "bytecode_cache", None) is None:
            env.bytecode_cache = _THEME_BYTECODE
        self._nav_reuse = None
        if self.reuse_theme_partials:
            from memosite.site.theme_reuse import ThemeReuse

            self._nav_reuse = ThemeReuse.install(env, str(config.theme.get("language") or "en"))
        return env

    @event_priority(-100)  # scan what is written, after every other plugin had its say
    def on_post_page(self, output: str, *, page: Page, config: MkDocsConfig) -> str:
        site_page = self._site_page(page)
        if self._scanner is not None and (site_page is None or site_page.role != "record"):
            # Pages other than records are few: scan them whole, theme chrome (site name, nav) too.
            self._scanner.scan(output, page.file.dest_uri)
        self._handled.add(os.path.abspath(page.file.abs_dest_path))
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
        assert self._files is not None and self._content is not None and self._cache is not None
        assert self._scanner is not None
        site_dir = Path(config.site_dir)
        virtual = {f.src_uri: f for f in self._files if isinstance(f, GeneratedPage)}
        self.cached_pages = {}
        for uri, source in self._reuse.items():
            dest = virtual[uri].abs_dest_path
            if isinstance(source, _PageState):
                continue  # already in site_dir from the previous build
            if self.defer_cached_pages:
                # memosite build puts these in the destination itself, only where it lacks them.
                self.cached_pages[virtual[uri].dest_uri] = uri
                continue
            if not self._cache.copy_to(source, dest):
                raise PluginError(f"memosite: the page cache lost {uri}; build again (it rebuilds the page)")
            self._handled.add(os.path.abspath(dest))
        self._search_entries(site_dir, virtual)
        self._complete_sitemap(config)
        _remove_outputs(site_dir, [f.abs_dest_path for uri, f in self._memory.files.items() if uri not in virtual])
        self._scan_outputs(site_dir, virtual)
        if self._scanner.findings:
            from memosite.site.output import clean_site_dir

            clean_site_dir(site_dir)
            self._memory = _BuildMemory(key=self._memory.key)
            self._cache.forget_added()
            raise PluginError(f"memosite: refusing to publish: {self._scanner.described()}. Nothing was published.")
        if self._stop_counting():
            # Strict mode and a warning: the engine aborts this build after this event.
            self._memory = _BuildMemory(key=self._memory.key)
            self._cache.forget_added()
            return
        written: dict[str, _PageState] = {}
        for uri, file in virtual.items():
            key = self._keys[uri]
            reused = self._reuse.get(uri)
            if reused is None:
                search = self._search_text.get(uri, "")
                self._cache.store(uri, key, file.abs_dest_path, search)
            else:
                search = reused.search
                if not isinstance(reused, _PageState):
                    self._cache.keep(uri, reused)
                elif (entry := self._cache.pages.get(uri)) is not None and entry.key == key:
                    self._cache.keep(uri, entry)
            written[uri] = _PageState(key, search)
        self._cache.clean = self._scanner.used
        # A build writes its cache at once; serve, after its first build, only when it stops
        # (writing every page's entries on each save in an editor would cost more than the rebuild).
        if self.serving and self._memory.written:
            self._cache.commit()
            self._cache_dirty = True
        else:
            self._cache.save()
        self._memory.written = written
        self._memory.files = virtual

    def _search_entries(self, site_dir: Path, virtual: dict[str, GeneratedPage]) -> None:
        """Complete ``search_index.json``: entries of rendered pages (minus each record's "Record
        details" section), cached entries of every other page; each generated page's entries, as
        JSON text, go into ``_search_text``."""
        from memosite.site.cache import docs_text

        path = site_dir / SEARCH_INDEX
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (FileNotFoundError, ValueError):
            self._search_text = {}
            return
        by_url: dict[str, list[dict[str, Any]]] = {}
        docs = data.get("docs", [])
        # Folded words in fields of their own: "cafe" finds "Café" as the CLI's search does.
        config = with_folded_fields(data.get("config", {}), docs)
        for doc in docs:
            url = str(doc.get("location", "")).partition("#")[0]
            by_url.setdefault(url, []).append(doc)
        ours = {f.url: uri for uri, f in virtual.items()}
        parts: list[str] = []
        others = dict(self._memory.other_search)
        texts = self._search_text
        fresh_texts: dict[str, str] = {}
        assert self._files is not None and self._scanner is not None
        for file in self._published_pages():
            url = file.url
            if url in ours:
                uri = ours[url]
                reused = self._reuse.get(uri)
                if reused is None:
                    text = docs_text(by_url.get(url, []))
                else:
                    text = texts.get(uri, "") if isinstance(reused, _PageState) else reused.search
                fresh_texts[uri] = text
            else:
                rendered = file.page is not None and file.page.content is not None
                docs = by_url.get(url, []) if rendered else others.get(url, [])
                others[url] = docs
                text = docs_text(docs)
            if text:
                parts.append(text)
        self._memory.other_search = others
        self._search_text = fresh_texts
        for docs in by_url.values():
            self._scanner.scan(json.dumps(docs, ensure_ascii=False), SEARCH_INDEX)
        config_text = json.dumps(config, separators=(",", ":"), default=str)
        path.write_text('{"config":' + config_text + ',"docs":[' + ",".join(parts) + "]}", encoding="utf-8")
        self._handled.add(os.path.abspath(path))

    def _published_pages(self) -> list[File]:
        """The documentation pages this build publishes, in MkDocs' order, withheld ones too."""
        assert self._files is not None
        withheld = self._withheld
        if not withheld:
            return list(self._files.documentation_pages())
        return [
            file
            for file in self._files
            if file.is_documentation_page() and (file.inclusion.is_included() or file.src_uri in withheld)
        ]

    def _complete_sitemap(self, config: MkDocsConfig) -> None:
        """Render the theme's sitemap again as MkDocs does, withheld pages in their places (MkDocs
        lists only the pages it read)."""
        from mkdocs.commands.build import _build_theme_template

        if not (self._withheld and config.site_url) or "sitemap.xml" not in config.theme.static_templates:
            return  # with no site_url a page has no address to list: MkDocs' sitemap is complete
        if not (Path(config.site_dir) / "sitemap.xml").is_file():
            return  # the theme wrote none (an empty one is skipped)
        from urllib.parse import urljoin, urlsplit

        from mkdocs.utils import get_build_date

        base = config.site_url if config.site_url.endswith("/") else config.site_url + "/"
        date, withheld = get_build_date(), self._withheld
        pages: list[Any] = []
        for file in self._published_pages():
            if file.src_uri in withheld:
                # What a sitemap template reads of a page, as Page would set it.
                canonical = urljoin(base, file.url)
                pages.append(_Unread(_UnreadPage(file.url, canonical, urlsplit(canonical).path, date)))
            else:
                pages.append(file)
        assert self._files is not None
        env = config.plugins.on_env(config.theme.get_env(), config=config, files=self._files)
        _build_theme_template("sitemap.xml", env, _ListedPages(pages), config, self._nav)

    def _scan_outputs(self, site_dir: Path, virtual: dict[str, GeneratedPage]) -> None:
        """Every output file this build wrote that no other check covered (records.json, feeds,
        sitemap, the theme's and other plugins' files), each remembered when clean."""
        assert self._scanner is not None and self._content is not None
        # The memory section holds only generated pages (scanned as they were made or copied
        # from a clean cache), records.json and the feeds (scanned when generated).
        section = os.path.abspath(site_dir / self._content.prefix)
        for directory, dirs, names in os.walk(site_dir):
            if os.path.abspath(directory) == os.path.abspath(site_dir):
                dirs[:] = [d for d in dirs if os.path.abspath(os.path.join(directory, d)) != section]
            for name in names:
                if not name.endswith(SCANNED_SUFFIXES):
                    continue
                full = os.path.abspath(os.path.join(directory, name))
                if full in self._handled:
                    continue
                try:
                    if os.stat(full).st_mtime_ns < self._started_ns - 1_000_000_000:
                        continue  # not written by this build (serve's site_dir keeps older files)
                    text = Path(full).read_text(encoding="utf-8", errors="replace")
                except OSError:
                    continue
                where = Path(full).relative_to(site_dir).as_posix()
                if name.endswith(".xml") and _SITEMAP_ENTRY.search(text):
                    # The sitemap lists every page: one new page must not mean scanning all of it.
                    self._scanner.scan_entries(text, where, _SITEMAP_ENTRY)
                else:
                    self._scanner.scan(text, where)

    def _count_warnings(self, config: MkDocsConfig) -> None:
        self._stop_counting()
        if config.strict:
            self._strict_warnings = _WarningCount()
            logging.getLogger(sys.modules["mkdocs"].__name__).addHandler(self._strict_warnings)

    def _stop_counting(self) -> bool:
        """Stop counting this build's warnings; whether strict mode counted any."""
        counter, self._strict_warnings = self._strict_warnings, None
        if counter is None:
            return False
        logging.getLogger(sys.modules["mkdocs"].__name__).removeHandler(counter)
        return counter.count > 0

    def on_build_error(self, *, error: Exception) -> None:
        # A failed build may leave a half-written site: the next one must rebuild every page.
        self._stop_counting()
        self._memory = _BuildMemory(key=self._memory.key)
        self._files_by_uri = {}
        if self._cache is not None:
            self._cache.forget_added()


class _WarningCount(logging.Handler):
    """Counts the warnings logged under the engine's logger, as the engine's strict mode does."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        self.count += 1


@dataclass(frozen=True)
class _UnreadPage:
    """What a sitemap template reads of a page MkDocs never read."""

    url: str
    canonical_url: str
    abs_url: str
    update_date: str
    is_link: bool = False
    is_page: bool = True


@dataclass(frozen=True)
class _Unread:
    """A withheld page's file as a template sees it: ``file.page`` answers."""

    page: _UnreadPage


class _ListedPages(Files):
    """Files whose documentation pages are the given list (withheld pages in their places)."""

    def __init__(self, pages: list[Any]) -> None:
        super().__init__([])
        self._pages = pages

    def documentation_pages(self, *, inclusion: Any = None) -> Sequence[File]:
        return self._pages


class _WithheldLinks(logging.Filter):
    """Drops MkDocs' note that a page links to an excluded page when memosite withheld that page
    (it is published: placed from the page cache)."""

    _TAIL = "' which is excluded from the built site."
    _HEAD = "link to '"

    def __init__(self) -> None:
        super().__init__()
        self.targets: set[str] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        if not self.targets:
            return True
        message = record.getMessage()
        if not message.endswith(self._TAIL):
            return True
        start = message.rfind(self._HEAD)
        return start < 0 or message[start + len(self._HEAD) : -len(self._TAIL)] not in self.targets


_QUIET_LINKS = _WithheldLinks()
for _engine in ("mkdocs", "properdocs"):
    logging.getLogger(f"{_engine}.structure.pages").addFilter(_QUIET_LINKS)


@functools.cache
def _versions() -> tuple[str, ...]:
    from importlib.metadata import PackageNotFoundError, version

    # The engine running (ProperDocs answers MkDocs' imports), and what the search index holds.
    found = [f"engine={sys.modules['mkdocs'].__name__}", f"search={SEARCH_FORMAT}"]
    for package in ("memosite", "mkdocs", "properdocs", "mkdocs-material", "pymdown-extensions", "Markdown", "nh3"):
        try:
            found.append(f"{package}={version(package)}")
        except PackageNotFoundError:
            found.append(f"{package}=?")
    return tuple(found)


def _in_place(path: str, present: set[str]) -> bool:
    """Whether the last build's output ``path`` is still there, looked at once per build."""
    if path in present:
        return True
    if os.path.isfile(path):
        present.add(path)
        return True
    return False


def _record_key(scope: str, src_uri: str, basis: str) -> str:
    """The page cache's key of a record page: the site's scope and what the page is made from."""
    from memosite.site.cache import digest

    return digest(scope, src_uri, "record", basis)


def _site_scope(config: MkDocsConfig, docs: list[File], templates: str) -> str:
    """A digest of everything a generated page depends on besides its own Markdown."""
    from memosite.site.cache import digest

    versions = _versions()
    skipped = {"site_dir", "docs_dir", "config_file_path", "dev_addr", "plugins", "theme", "watch", "serve"}
    settings = {k: v for k, v in config.items() if k not in skipped}
    theme = {k: v for k, v in config.theme.items()}
    plugins = {name: dict(plugin.config) for name, plugin in config.plugins.items()}
    stamps = []
    for directory in [*config.theme.dirs]:
        if os.path.isdir(directory) and "site-packages" not in directory:
            for walked, _dirs, names in os.walk(directory):
                for name in sorted(names):
                    info = os.stat(os.path.join(walked, name))
                    stamps.append(f"{walked}/{name}:{info.st_mtime_ns}:{info.st_size}")
    for file in docs:
        if file.abs_src_path and os.path.isfile(file.abs_src_path):
            info = os.stat(file.abs_src_path)
            stamps.append(f"{file.src_uri}:{info.st_mtime_ns}:{info.st_size}")
    return digest(
        *versions,
        templates,
        json.dumps(settings, sort_keys=True, default=str),
        json.dumps(theme, sort_keys=True, default=str),
        json.dumps(plugins, sort_keys=True, default=str),
        *stamps,
    )


def _use_page_extensions(config: MkDocsConfig) -> None:
    names = [item if isinstance(item, str) else next(iter(item)) for item in config.markdown_extensions]
    for extension in PAGE_EXTENSIONS:
        if extension not in names:
            config.markdown_extensions.append(extension)


def _use_search_separator(config: MkDocsConfig) -> None:
    from memosite.site.search import separator

    for name in ("search", "material/search"):
        plugin = config.plugins.get(name)
        settings = getattr(plugin, "config", None)
        if settings is not None and "separator" in settings and not settings.get("separator"):
            settings["separator"] = separator()


def _shows_overview(file: File) -> bool:
    if not file.abs_src_path or not file.src_uri.endswith(".md"):
        return False
    try:
        with open(file.abs_src_path, encoding="utf-8", errors="replace") as handle:
            return OVERVIEW_MARK in handle.read()
    except OSError:
        return False


def _with_charts(html_text: str, charts: dict[str, str] | None) -> str:
    for token, svg in (charts or {}).items():
        html_text = html_text.replace(f"<p>{token}</p>", f'<figure class="memosite-figure">{svg}</figure>')
    return html_text


def _checkbox(match: re.Match[str]) -> str:
    checked = " checked" if match.group(1) == "ON" else ""
    return f'<label class="task-list-control"><input type="checkbox" disabled{checked}/>'


def _badge(match: re.Match[str]) -> str:
    level = match.group(2).lower()
    return f'{match.group(1)}<span class="memosite-severity memosite-severity--{level}">{level}</span> '


def _toc_text(items: Any) -> str:
    out: list[str] = []
    for item in items or ():
        if isinstance(item, AnchorLink):
            out.append(item.title)
            out.append(_toc_text(item.children))
    return "\n".join(out)


def _remove_outputs(site_dir: Path, paths: list[str]) -> None:
    from memosite.site.output import remove_outputs

    remove_outputs(site_dir, paths)


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
            if not _PLAIN_TITLE.fullmatch(item.title):  # plain words come out of it as they went in
                item.title = clean(item.title)
            _sanitize_toc(item.children, clean)
