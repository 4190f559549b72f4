"""Frontmatter text placed in Markdown: escaped so that it shows as the characters it is.

Only a record's body is Markdown. A title, tag, module, path, session id or goal such as
``[Login](https://evil.example/x)`` or ``**bold** # heading`` must not become a link or markup in
a compiled view or on the site, so templates pass such values through :func:`markdown_text`
(running text, table cells, headings) or :func:`code_span` (values shown as code).

A body, which is Markdown, is summed up on one line by :func:`rule_line` wherever one line stands
for a record (the files agents read, what a prompt hook adds).
"""

from __future__ import annotations

import re
from typing import Any

# Characters Python-Markdown (with the tables and attr_list extensions) reads as markup inline:
# emphasis, code, links and images, attribute lists, headings' closing hashes, table cells.
_ESCAPED = re.compile(r"([\\`*_{}\[\]#|!])")
_ENTITY = re.compile(r"&(?=#?[0-9A-Za-z]+;)")
_BACKTICKS = re.compile(r"`+")
_FENCE = re.compile(r"(`{3,}|~{3,})")
_HEADING = re.compile(r"#{1,6}(\s|$)")


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


def rule_line(body: str, limit: int) -> str:
    """A record's rule on one line: the prose of ``body`` (its lines outside headings and code
    blocks) with whitespace folded, cut at a word near ``limit`` characters (`` …`` says so); ""
    for a body that holds no prose."""
    prose: list[str] = []
    size = 0
    fence = ""  # the fence of the code block the line is in, if any
    for raw in body.splitlines():
        line = raw.strip()
        if fence:
            fence = "" if line.startswith(fence) else fence
            continue
        opening = _FENCE.match(line)
        if opening is not None:
            fence = opening.group(1)
        elif line and not _HEADING.match(line):
            prose.append(line)
            size += len(line) + 1
            if size > limit:
                break
    text = " ".join(" ".join(prose).split())
    return text if len(text) <= limit else text[:limit].rsplit(" ", 1)[0] + " …"
