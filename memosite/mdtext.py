"""Frontmatter text placed in Markdown: escaped so that it shows as the characters it is.

Only a record's body is Markdown. A title, tag, module, path, session id or goal such as
``[Login](https://evil.example/x)`` or ``**bold** # heading`` must not become a link or markup in
a compiled view or on the site, so templates pass such values through :func:`markdown_text`
(running text, table cells, headings) or :func:`code_span` (values shown as code).
"""

from __future__ import annotations

import re
from typing import Any

# Characters Python-Markdown (with the tables and attr_list extensions) reads as markup inline:
# emphasis, code, links and images, attribute lists, headings' closing hashes, table cells.
_ESCAPED = re.compile(r"([\\`*_{}\[\]#|!])")
_ENTITY = re.compile(r"&(?=#?[0-9A-Za-z]+;)")
_BACKTICKS = re.compile(r"`+")


def _one_line(value: Any) -> str:
    return " ".join(str(value if value is not None else "").split())


def markdown_text(value: Any) -> str:
    """``value`` on one line, escaped for Markdown: no link, emphasis, HTML or table cell break."""
    text = _ESCAPED.sub(r"\\\1", _one_line(value))
    text = _ENTITY.sub("&amp;", text)
    return text.replace("<", "&lt;").replace(">", "&gt;")


def code_span(value: Any) -> str:
    """``value`` on one line as an inline code span, whatever backticks it holds."""
    text = _one_line(value)
    if not text:
        return ""
    longest = max((len(run) for run in _BACKTICKS.findall(text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"
