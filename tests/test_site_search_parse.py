"""Material's search reads the generated pages with one regular expression where their HTML allows
it, and makes exactly the entries html.parser's reading makes: event by event, and site-wide."""

from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from site_support import SCRIPTS, build_uncached, demo_with_every_script

from memosite.site.search_parse import events
from memosite.vault import Vault


class _Recorder(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.found: list[tuple[int, str, Any]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.found.append((1, tag, attrs))

    def handle_endtag(self, tag: str) -> None:
        self.found.append((2, tag, None))

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.found.append((3, tag, attrs))

    def handle_data(self, data: str) -> None:
        self.found.append((0, data, None))


def _html_parser_events(html: str) -> list[tuple[int, str, Any]]:
    recorder = _Recorder()
    recorder.feed(html)
    recorder.close()
    return recorder.found


_space = st.sampled_from(["", " ", "  ", "\n", "\t", "\r\n", "\f", "\x0b", "\u00a0", "\u2003"])
_text = st.one_of(
    st.sampled_from(
        [*SCRIPTS, "&amp;", "&lt;", "&gt;", "&copy", "&#233;", "&#x1F680;", "&nope;", "& ", "<", ">", "a<3"]
    ),
    st.text(max_size=8),
)
_name = st.sampled_from(
    ["p", "P", "h2", "a", "br", "img", "div", "li", "code", "pre", "script", "style", "title", "x-y"]
)
_attr_name = st.sampled_from(["id", "class", "href", "data-search-exclude", "ID", "data:x", "alt"])
_value = st.one_of(_text, st.sampled_from(["", "headerlink", "linenodiv", "a > b", "'q'"]))
_quoted = st.builds(lambda v, q: f"{q}{v.replace(q, '')}{q}", _value, st.sampled_from(['"', "'", ""]))
_attr = st.builds(
    lambda s, n, eq, v: f"{s or ' '}{n}" + (f"={v}" if eq else ""), _space, _attr_name, st.booleans(), _quoted
)
_start = st.builds(
    lambda n, attrs, s, slash: f"<{n}{''.join(attrs)}{s}{slash}>",
    _name,
    st.lists(_attr, max_size=3),
    _space,
    st.sampled_from(["", "/"]),
)
_end = st.builds(lambda n, s: f"</{n}{s}>", _name, _space)
_other = st.sampled_from(["<!-- note -->", "<!DOCTYPE html>", "<?pi?>", "<![CDATA[x]]>", "</ p>", "<p", "</"])
_piece = st.one_of(_start, _end, _text, _space, _other)


@settings(max_examples=500, deadline=None)
@given(pieces=st.lists(_piece, max_size=12))
def test_the_regular_expression_reports_what_html_parser_reports_or_leaves_the_page_to_it(pieces: list[str]) -> None:
    html = "".join(pieces)
    found = events(html)
    if found is not None:
        assert found == _html_parser_events(html), html


def test_a_generated_page_is_read_by_the_regular_expression() -> None:
    html = (
        '<h2 id="x">Café &amp; 数据<a class="headerlink" href="#x" title="Permanent link">¶</a></h2>\n'
        '<p class="memosite-breadcrumb"><a href="../">Up</a> · <code>value = 1</code><br/></p>\n'
    )
    assert events(html) == _html_parser_events(html)


def test_the_search_index_read_with_the_regular_expression_is_the_one_html_parser_makes(
    vault: Vault, tmp_path: Path
) -> None:
    demo_with_every_script(
        vault,
        lambda text: f"## {text}\n\nOn {text} & <b>{text}</b>.\n\n```python\nx = {text!r} < 3\n```\n\n- [x] {text}\n",
    )
    built: dict[bool, dict[str, bytes]] = {}
    for fast in (True, False):
        plugin, built[fast] = build_uncached(vault, tmp_path / f"site-{fast}", fast_search_reading=fast)
        assert (plugin.fast_search_pages > 20) is fast
    index = "search/search_index.json"
    assert json.loads(built[True][index]) == json.loads(built[False][index])
    assert built[True][index] == built[False][index]
    differing = [name for name in built[True] if built[True][name] != built[False].get(name)]
    assert differing == []
