"""Sanitising the HTML of agent-written records before it reaches the published site.

Python-Markdown passes raw HTML straight through, so a record body can carry ``<script>``, event
handlers or ``javascript:`` links. :func:`sanitize_html` keeps what Markdown and the site's
extensions produce (admonitions, highlighted code, tables, heading anchors) and drops the rest.
"""

from __future__ import annotations

import functools

import nh3

# Markup that Markdown and our extensions (admonition, pymdownx.highlight/superfences/details,
# tables, toc) emit, on top of nh3's conservative default set.
_EXTRA_TAGS = frozenset({"details", "summary", "figure", "figcaption", "mark", "abbr", "del", "ins"})

# data-search-exclude: the parts of a record page that site search leaves out (an empty marker).
_GENERIC_ATTRIBUTES = frozenset({"class", "id", "title", "lang", "dir", "data-search-exclude"})

_TAG_ATTRIBUTES: dict[str, set[str]] = {
    "a": {"href", "name", "hreflang"},
    "img": {"src", "alt", "width", "height", "loading"},
    "td": {"style", "align", "colspan", "rowspan"},
    "th": {"style", "align", "colspan", "rowspan", "scope"},
    "ol": {"start", "reversed", "type"},
    "li": {"value"},
    "details": {"open"},
    "code": set(),
    "time": {"datetime"},
}

_URL_SCHEMES = frozenset({"http", "https", "mailto"})


@functools.cache
def _cleaner() -> nh3.Cleaner:
    attributes = {tag: set(names) for tag, names in _TAG_ATTRIBUTES.items()}
    attributes["*"] = set(_GENERIC_ATTRIBUTES)
    return nh3.Cleaner(
        tags=set(nh3.ALLOWED_TAGS) | _EXTRA_TAGS,
        clean_content_tags={"script", "style"},
        attributes=attributes,
        url_schemes=set(_URL_SCHEMES),
        # Table alignment from the tables extension is the only inline style that survives.
        filter_style_properties={"text-align"},
        # No target= is allowed, so links cannot open a window that could reach back to us.
        link_rel=None,
        strip_comments=True,
    )


def sanitize_html(html: str) -> str:
    """``html`` with no script, style, event handler, form, frame or ``javascript:`` URL left.

    Classes, ids and titles survive everywhere, so admonitions, syntax highlighting and heading
    permalinks look as Markdown rendered them. Relative links pass unchanged.
    """
    if not html:
        return html
    return _cleaner().clean(html)
