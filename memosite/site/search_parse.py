"""Material's search entries for a page, read from its HTML with one regular expression.

Material's search plugin reads every rendered page with ``html.parser``, whose tokeniser is plain
Python: about a tenth of a cold build of a thousand record pages. The HTML of the generated pages
is well formed (it went through the sanitiser): tags with double-quoted attributes, text with no
``<``. For HTML of that shape alone, one regular expression finds the same tags, attributes and
text ``html.parser`` finds and hands them, in the same order and pieces, to Material's own parser
(its handlers decide the entries); anything else (comments, declarations, script or style,
single-quoted or bare attributes, a stray ``<``) goes through ``html.parser`` as before.

A test feeds both with generated HTML and compares the sections they make, and builds a site both
ways and compares ``search_index.json``.
"""

from __future__ import annotations

import re
import sys
from html import unescape
from typing import Any

_WS = "[ \t\n\r\f]"
# A start tag (name, attributes, "/" when self-closing) or an end tag (name): a strict subset of
# what html.parser reads as one, with only ASCII white space where html.parser splits on it.
_TAG = re.compile(
    rf"<([a-zA-Z][a-zA-Z0-9-]*)((?:{_WS}+[a-zA-Z_:][-a-zA-Z0-9_:.]*(?:=\"[^\"<>]*\")?)*){_WS}*(/?)>"
    rf"|</([a-zA-Z][-.a-zA-Z0-9:_]*){_WS}*>"
)
_ATTR = re.compile(rf"{_WS}+([a-zA-Z_:][-a-zA-Z0-9_:.]*)(?:=\"([^\"<>]*)\")?")
# Elements whose content some version of html.parser reads as raw text: never on the fast path.
_RAW_TEXT = frozenset(
    {"script", "style", "xmp", "iframe", "noembed", "noframes", "noscript", "textarea", "title", "plaintext"}
)

_Event = tuple[int, str, Any]
_DATA, _START, _END, _STARTEND = 0, 1, 2, 3


def events(html: str) -> list[_Event] | None:
    """What html.parser (``convert_charrefs=True``) reports for ``html`` fed whole and closed, in
    order; None when ``html`` is not of the shape read here."""
    found: list[_Event] = []
    position = 0
    for match in _TAG.finditer(html):
        start = match.start()
        if start > position:
            text = html[position:start]
            if "<" in text:
                return None
            found.append((_DATA, unescape(text), None))
        position = match.end()
        name = match.group(1)
        if name is None:
            tag = match.group(4).lower()
            if tag in _RAW_TEXT:
                return None
            found.append((_END, tag, None))
            continue
        tag = name.lower()
        if tag in _RAW_TEXT:
            return None
        found.append((_STARTEND if match.group(3) else _START, tag, _attrs(match.group(2))))
    if position < len(html):
        text = html[position:]
        if "<" in text:
            return None
        found.append((_DATA, unescape(text), None))
    return found


def _attrs(text: str) -> list[tuple[str, str | None]]:
    attrs: list[tuple[str, str | None]] = []
    for match in _ATTR.finditer(text):
        value = match.group(2)
        attrs.append((match.group(1).lower(), unescape(value) if value else value))
    return attrs


def replay(parser: Any, found: list[_Event]) -> None:
    """Hand ``found`` to ``parser``'s handlers as ``HTMLParser.feed`` would."""
    for kind, value, attrs in found:
        if kind == _DATA:
            parser.handle_data(value)
        elif kind == _START:
            parser.handle_starttag(value, attrs)
        elif kind == _END:
            parser.handle_endtag(value)
        else:
            parser.handle_startendtag(value, attrs)


class Reading:
    """How the pages of one build were read for search."""

    def __init__(self) -> None:
        self.fast = 0  # pages read through :func:`events`
        self.parsed = 0  # pages html.parser read


def install(search_plugin: Any) -> Reading | None:
    """Have Material's search plugin read the pages of this build through :func:`events` where
    it can; None where the plugin is not the one this was checked against."""
    index = getattr(search_plugin, "search_index", None)
    name = type(search_plugin).__module__
    material = sys.modules.get("material")
    # The release line whose search plugin this was checked against (its parser's handlers and
    # how it turns sections into entries): another keeps html.parser's reading whole.
    if not name.startswith("material.") or not str(getattr(material, "__version__", "")).startswith("9."):
        return None
    module = sys.modules.get(name)
    base = getattr(module, "Parser", None)
    if index is None or not isinstance(base, type) or not callable(getattr(index, "create_entry_for_section", None)):
        return None
    reading = Reading()

    class Parser(base):  # type: ignore[misc,valid-type]
        def feed(self, data: str) -> None:
            found = events(data) if not self.rawdata else None
            if found is None:
                reading.parsed += 1
                super().feed(data)
            else:
                reading.fast += 1
                replay(self, found)

    def add_entry_from_context(page: Any) -> None:
        # As Material's own: a page that asks to stay out of search adds nothing; every section
        # of the page not marked excluded becomes an entry.
        if (page.meta.get("search") or {}).get("exclude"):
            return
        parser = Parser()
        parser.feed(page.content)
        parser.close()
        for section in parser.data:
            if not section.is_excluded():
                index.create_entry_for_section(section, page.toc, page.url, page)

    index.add_entry_from_context = add_entry_from_context
    return reading
