"""Parts of Material's pages rendered once for the pages that see them the same.

Material renders its whole navigation (``partials/nav.html`` and the ``nav-item.html`` macros) into
every page: about a third of the theme's work on a site of a thousand record pages. A page the
navigation does not list (memosite's record pages) makes no item of it active or current, so the
sidebar's HTML depends on that page only through the ``url`` filter, which writes every link
relative to the page's address. Two pages in the same folder get the same relative links unless a
link leads into the folder of one of them; the render records the links it writes, and its HTML is
reused for the next page of that folder whose own folder none of them enters. The header's search
box and colour palette depend on no page at all: they are rendered once a build.

Only Material 9's own templates are reused this way (a site that overrides one of them, or what
they include: logo, repository, table of contents, translations, keeps rendering it per page), and
only with MkDocs' own ``url`` filter. A test builds a site both ways and compares every file.
"""

from __future__ import annotations

import os
import posixpath
import sys
from collections.abc import Callable, Iterator
from typing import Any

import jinja2

NAV = "partials/nav.html"
# Everything the sidebar renders: the partial, its macros and what they include.
_PARTIALS = (NAV, "partials/nav-item.html", "partials/logo.html", "partials/source.html", "partials/toc.html")
# Partials that read only the configuration and the translations (and icons).
CONSTANT = ("partials/search.html", "partials/palette.html")

_Parts = tuple[str, ...]


def _parts(path: str) -> _Parts:
    """``path`` as MkDocs' relative-URL arithmetic sees it: normalised, split at slashes."""
    normal = posixpath.normpath(path if path.startswith("/") else "/" + path)[1:]
    return tuple(normal.split("/")) if normal else ()


def _page_folder(url: str) -> _Parts:
    """The folder links on a page at ``url`` are relative to (a last part with a dot is a file)."""
    folder, _, last = url.rpartition("/")
    return _parts(folder if "." in last else url)


def _items(items: Any) -> Iterator[Any]:
    for item in items or ():
        yield item
        yield from _items(getattr(item, "children", None))


class ThemeReuse:
    """Renders Material's sidebar once per group of pages that see it the same."""

    def __init__(self, env: jinja2.Environment, template: jinja2.Template, url_filter: Callable[..., str]) -> None:
        self._env = env
        self._url = url_filter
        self._render = template.root_render_func
        # folder of the page -> HTML; parent folder -> (HTML, every prefix of every link it holds)
        self._exact: dict[_Parts, str] = {}
        self._shared: dict[_Parts, tuple[str, frozenset[_Parts]]] = {}
        self.rendered = 0  # sidebars rendered
        self.reused = 0  # sidebars taken from an earlier render
        template.root_render_func = self._root

    @classmethod
    def install(cls, env: jinja2.Environment, language: str = "en") -> ThemeReuse | None:
        """Have ``env`` reuse the sidebar where it may, and the partials of :data:`CONSTANT`; None
        where the theme or engine is not the one this was checked against. ``language`` is the
        theme's (its translations are read by every partial reused)."""
        material = sys.modules.get("material")
        engine = sys.modules.get(f"{sys.modules['mkdocs'].__name__}.utils.templates")
        url_filter = env.filters.get("url")
        if material is None or material.__file__ is None or engine is None:
            return None
        # The release line whose sidebar partials this was checked against.
        if not str(getattr(material, "__version__", "")).startswith("9."):
            return None
        if url_filter is None or url_filter is not getattr(engine, "url_filter", None):
            return None
        templates = os.path.join(os.path.dirname(os.path.abspath(material.__file__)), "templates") + os.sep
        translations = ("partials/language.html", "partials/languages/en.html", f"partials/languages/{language}.html")
        try:
            loaded = [env.get_template(name) for name in (*_PARTIALS, *translations, *CONSTANT)]
        except jinja2.TemplateError:
            return None
        if not all(t.filename and os.path.abspath(t.filename).startswith(templates) for t in loaded):
            return None
        for template in loaded[-len(CONSTANT) :]:
            _render_once(template)
        return cls(env, loaded[0], env.filters["url"])

    def _root(self, context: jinja2.runtime.Context) -> Iterator[str]:
        folder = self._folder(context)
        if folder is None:
            yield from self._render(context)
            return
        html = self._exact.get(folder)
        if html is None and folder:
            shared = self._shared.get(folder[:-1])
            if shared is not None and folder not in shared[1]:
                html = shared[0]
        if html is not None:
            self.reused += 1
            yield html
            return
        html, prefixes = self._recorded(context)
        self._exact[folder] = html
        if folder and folder not in prefixes:
            self._shared.setdefault(folder[:-1], (html, prefixes))
        yield html

    def _folder(self, context: jinja2.runtime.Context) -> _Parts | None:
        """The page's folder when the sidebar depends on nothing else of the page, else None."""
        page, nav = context.get("page"), context.get("nav")
        url = getattr(page, "url", None)
        if nav is None or not isinstance(url, str):
            return None
        for item in _items(getattr(nav, "items", None)):
            # What the macros ask of the page: an item active, the page itself, or among an item's pages.
            if getattr(item, "active", False) or item == page:
                return None
            pages = getattr(item, "pages", None)
            if pages and page in pages:
                return None
        return _page_folder(url)

    def _recorded(self, context: jinja2.runtime.Context) -> tuple[str, frozenset[_Parts]]:
        """The sidebar rendered for this page, and every prefix of every link written in it."""
        prefixes: set[_Parts] = set()
        url = self._url

        @jinja2.pass_context
        def recording(ctx: jinja2.runtime.Context, value: Any) -> str:
            parts = _parts(str(value))
            prefixes.update(parts[:n] for n in range(1, len(parts) + 1))
            return url(ctx, value)

        # Templates look their filters up when they render: the sidebar's, and only its, record.
        self._env.filters["url"] = recording
        try:
            html = self._env.concat(self._render(context))
        finally:
            self._env.filters["url"] = url
        self.rendered += 1
        return html, frozenset(prefixes)


def _render_once(template: jinja2.Template) -> None:
    """Have ``template`` render once, its HTML reused for every later render of this environment."""
    render = template.root_render_func
    done: list[str] = []

    def root(context: jinja2.runtime.Context) -> Iterator[str]:
        if not done:
            done.append(template.environment.concat(render(context)))
        yield done[0]

    template.root_render_func = root
