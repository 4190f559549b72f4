"""Sanitising record HTML, and the pure rules of what the site publishes."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memosite.errors import InvalidArguments
from memosite.index import IndexEntry
from memosite.plugin import _PLAIN_TITLE
from memosite.sanitize import sanitize_html
from memosite.site.pages import SiteContent, inactive_reasons, normalize_prefix

NOW = "2026-06-01T00:00:00.000Z"


@pytest.mark.parametrize(
    ("dirty", "gone"),
    [
        ("<p>x<script>alert(1)</script></p>", "alert(1)"),
        ('<img src="a.png" onerror="alert(1)">', "onerror"),
        ('<a href="javascript:alert(1)">x</a>', "javascript:"),
        ('<a href="JaVaScRiPt&#58;alert(1)">x</a>', "alert(1)"),
        ('<a href="data:text/html;base64,PHNjcmlwdD4=">x</a>', "data:"),
        ('<svg onload="alert(1)"><circle/></svg>', "onload"),
        ('<iframe src="https://evil.example"></iframe>', "iframe"),
        ('<form action="https://evil.example"><input name="q"></form>', "form"),
        ("<style>body{display:none}</style>", "display:none"),
        ('<meta http-equiv="refresh" content="0;url=https://evil.example">', "refresh"),
        ('<div style="background:url(javascript:alert(1))">x</div>', "javascript"),
        ("<p>x<!-- hidden --></p>", "hidden"),
    ],
)
def test_dangerous_markup_is_removed(dirty: str, gone: str) -> None:
    assert gone not in sanitize_html(dirty)


def test_markdown_output_survives_sanitising() -> None:
    html = (
        '<h2 id="setup">Setup<a class="headerlink" href="#setup" title="Permanent link">&para;</a></h2>\n'
        '<div class="admonition warning">\n<p class="admonition-title">Careful</p>\n<p>Text</p>\n</div>\n'
        '<div class="highlight"><pre><span></span><code><a id="__codelineno-0-1" name="__codelineno-0-1" '
        'href="#__codelineno-0-1"></a><span class="n">x</span></code></pre></div>\n'
        '<table><thead><tr><th style="text-align: left;">a</th></tr></thead></table>\n'
        '<p><a href="../decisions/db/">Database</a> and <a href="https://example.org/">docs</a></p>'
    )
    clean = sanitize_html(html)
    for kept in (
        'id="setup"',
        'class="headerlink"',
        'href="#setup"',
        '<div class="admonition warning">',
        '<p class="admonition-title">',
        '<div class="highlight">',
        '<span class="n">',
        'name="__codelineno-0-1"',
        'style="text-align:left"',
        'href="../decisions/db/"',
        'href="https://example.org/"',
    ):
        assert kept in clean, kept


def _entry(**values: object) -> IndexEntry:
    fields = {
        "path": "projects/shop/traps/x.md",
        "project": "shop",
        "kind": "trap",
        "id": "x",
        "slug": "x",
        "title": "X",
        "status": "active",
    }
    fields.update(values)
    return IndexEntry(**fields)  # type: ignore[arg-type]


def test_expiry_is_judged_from_the_exact_instant() -> None:
    assert inactive_reasons(_entry(expires_at=NOW), NOW) == ("expired",)
    assert inactive_reasons(_entry(expires_at="2026-06-01T00:00:00.001Z"), NOW) == ()


def test_superseded_and_archived_records_are_inactive() -> None:
    assert inactive_reasons(_entry(status="superseded"), NOW) == ("superseded",)
    assert inactive_reasons(_entry(status="archived", expires_at="2020-01-01T00:00:00.000Z"), NOW) == (
        "expired",
        "archived",
    )
    assert inactive_reasons(_entry(status="paused"), NOW) == ()


@pytest.mark.parametrize("prefix", ["", "/", "..", "a/../b", "memory/ x", "-memory"])
def test_bad_prefixes_are_rejected(prefix: str) -> None:
    with pytest.raises(InvalidArguments):
        normalize_prefix(prefix)


@pytest.mark.parametrize("prefix", ["-memory", "_m", "team/.hidden"])
def test_a_refused_prefix_says_the_rule_it_breaks(prefix: str) -> None:
    with pytest.raises(InvalidArguments, match="each beginning with a letter or a digit"):
        normalize_prefix(prefix)


def test_prefix_is_normalised() -> None:
    assert normalize_prefix("/team/memory/") == "team/memory"


def test_records_json_urls_are_relative_to_the_json_file() -> None:
    from memosite.site.pages import PublishedRecord

    content = SiteContent(prefix="team/memory", projects=["shop"])
    content.records.append(PublishedRecord(_entry(), "team/memory/shop/traps/x.md", ()))
    urls = {
        "team/memory/records.json": "team/memory/records.json",
        "team/memory/shop/traps/x.md": "team/memory/shop/traps/x/",
    }
    data = json.loads(content.records_json(urls.__getitem__))
    assert data["records"][0]["url"] == "shop/traps/x/"
    flat = {
        "team/memory/records.json": "team/memory/records.json",
        "team/memory/shop/traps/x.md": "team/memory/shop/traps/x.html",
    }
    assert json.loads(content.records_json(flat.__getitem__))["records"][0]["url"] == "shop/traps/x.html"


@given(st.text(max_size=40))
def test_a_toc_title_the_plugin_leaves_unsanitised_is_one_the_sanitiser_leaves_unchanged(title: str) -> None:
    if _PLAIN_TITLE.fullmatch(title):
        assert sanitize_html(title) == title


@pytest.mark.parametrize("title", ["A <b>bold</b> heading", "Tom &amp; Jerry", "x\u00a0y", "cr\rlf", "\ufeffbom"])
def test_a_toc_title_with_markup_or_rewritten_characters_is_sanitised(title: str) -> None:
    assert not _PLAIN_TITLE.fullmatch(title)
