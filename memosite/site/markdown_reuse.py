"""One Markdown converter for the pages memosite generates, reset between pages.

MkDocs makes a new ``markdown.Markdown`` for every page it renders, and with it every extension
(pymdown's highlighting alone deep-copies its settings three times a page): about a tenth of a
cold build of a thousand record pages. The generated pages all share one configuration, so one
converter does for all of them: ``Markdown.reset`` puts every registered extension back to its
start, and MkDocs' four per-page processors (raw HTML anchors, anchors, relative links, title)
are registered afresh for each page, as MkDocs registers them on its new instance.

Only extensions whose state ``reset`` clears completely are reused (:data:`REUSABLE`); a site
that names any other extension keeps MkDocs' own rendering, as does an engine whose page module
lacks the processors (another MkDocs version, ProperDocs). A test renders pages both ways and
compares the results.
"""

from __future__ import annotations

import importlib
import logging
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mkdocs.config.defaults import MkDocsConfig
    from mkdocs.structure.files import Files
    from mkdocs.structure.pages import Page

# The extensions checked (tests/test_site_markdown_reuse.py) to convert the same with a reused,
# reset instance as with a new one; both spellings of Python-Markdown's own.
_BUILTIN = [
    "abbr",
    "admonition",
    "attr_list",
    "def_list",
    "fenced_code",
    "footnotes",
    "md_in_html",
    "sane_lists",
    "tables",
    "toc",
]
_PYMDOWNX = ["highlight", "inlinehilite", "superfences", "details", "tasklist"]
REUSABLE = frozenset(
    _BUILTIN + [f"markdown.extensions.{name}" for name in _BUILTIN] + [f"pymdownx.{name}" for name in _PYMDOWNX]
)
# MkDocs' per-page processors, in the order MkDocs registers them (names and priorities are
# MkDocs' own, each registration replaces the last page's).
_PROCESSORS = (
    "_RawHTMLPreprocessor",
    "_ExtractAnchorsTreeprocessor",
    "_RelativePathTreeprocessor",
    "_ExtractTitleTreeprocessor",
)


def _extension_names(config: MkDocsConfig) -> list[str] | None:
    names: list[str] = []
    for item in config["markdown_extensions"]:
        if not isinstance(item, str):
            return None  # an extension object: its state is not ours to know
        names.append(item)
    return names


class SharedMarkdown:
    """Renders pages as ``Page.render`` does, with one converter for all of them."""

    def __init__(self, config: MkDocsConfig) -> None:
        import markdown

        engine = _engine(config)
        self._pages = importlib.import_module(f"{engine}.structure.pages")
        self._toc = importlib.import_module(f"{engine}.structure.toc")
        self._md = markdown.Markdown(
            extensions=config["markdown_extensions"], extension_configs=config["mdx_configs"] or {}
        )
        # Footnotes number each document a converter converts (``reset`` counts up) and write the
        # number into the ids under UNIQUE_IDS: every page gets the number a new converter's first
        # document gets, the one it holds now.
        self._numbered = [
            (ext, ext.unique_prefix)
            for ext in self._md.registeredExtensions
            if isinstance(getattr(ext, "unique_prefix", None), int)
        ]
        shared = self

        class SharedPage(self._pages.Page):  # type: ignore[misc,name-defined]
            shared_markdown = shared

            def render(self, config: MkDocsConfig, files: Files) -> None:
                shared.render(self, config, files)

        # A page's class is swapped to this one before MkDocs renders it (from MkDocs' own only).
        self.base_class: type[Page] = self._pages.Page
        self.page_class: type[Page] = SharedPage
        self.rendered = 0  # pages rendered through it

    @classmethod
    def for_config(cls, config: MkDocsConfig) -> SharedMarkdown | None:
        """A converter for the pages of ``config``, or None where MkDocs must render them itself."""
        names = _extension_names(config)
        if names is None or not set(names) <= REUSABLE:
            return None
        engine = _engine(config)
        try:
            pages = importlib.import_module(f"{engine}.structure.pages")
            importlib.import_module(f"{engine}.structure.toc")
        except ImportError:
            return None
        if not all(hasattr(pages, name) for name in _PROCESSORS):
            return None
        return cls(config)

    def render(self, page: Page, config: MkDocsConfig, files: Files) -> None:
        """Set ``page.content``, its table of contents, title, anchors and links to anchors, as
        MkDocs' ``Page.render`` would for the page's Markdown."""
        if page.markdown is None:
            raise RuntimeError(f"{page.file.src_uri}: no Markdown read before rendering")
        md = self._md.reset()
        for extension, number in self._numbered:
            extension.unique_prefix = number
        raw_html = self._pages._RawHTMLPreprocessor()
        anchors = self._pages._ExtractAnchorsTreeprocessor(page.file, files, config)
        links = self._pages._RelativePathTreeprocessor(page.file, files, config)
        title = self._pages._ExtractTitleTreeprocessor()
        for processor in (raw_html, anchors, links, title):
            processor._register(md)
        page.content = md.convert(page.markdown)
        self.rendered += 1
        page.toc = self._toc.get_toc(getattr(md, "toc_tokens", []))
        page._title_from_render = title.title
        page.present_anchor_ids = anchors.present_anchor_ids | raw_html.present_anchor_ids
        # MkDocs keeps the links only when it reports broken anchors (not at debug level).
        if logging.getLogger(self._pages.__name__).getEffectiveLevel() > logging.DEBUG:
            page.links_to_anchors = links.links_to_anchors


def _engine(config: MkDocsConfig) -> str:
    """The package answering MkDocs' imports in this build (``mkdocs``, or ProperDocs')."""
    return type(config).__module__.split(".")[0]
