"""The generated pages rendered with one reused Markdown converter come out exactly as MkDocs'
own rendering (a new converter per page) makes them: page by page, and site-wide."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mkdocs.config import load_config
from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import Files, get_files
from mkdocs.structure.pages import Page
from mkdocs.structure.toc import AnchorLink
from site_support import SCRIPTS, build_uncached, demo_with_every_script

from memosite.plugin import MemositePlugin
from memosite.site.markdown_reuse import REUSABLE, SharedMarkdown
from memosite.vault import Vault

# Every extension the reuse allows, with the settings memosite's own site gives them.
EXTENSIONS: list[Any] = [
    "abbr",
    "admonition",
    "attr_list",
    "def_list",
    "fenced_code",
    "footnotes",
    "md_in_html",
    "sane_lists",
    "tables",
    {"toc": {"permalink": True}},
    {"pymdownx.highlight": {"anchor_linenums": True}},
    "pymdownx.inlinehilite",
    "pymdownx.superfences",
    "pymdownx.details",
    {"pymdownx.tasklist": {"custom_checkbox": True}},
]
# Pieces of pages that leave state behind in a converter if anything does: footnotes, abbreviations,
# heading ids (a second page with the same heading must not get "-1"), stashed HTML and code, links
# and anchors. ``{w}`` is a word in some script.
PIECES = [
    "# {w}\n",
    "## {w}\n\nText under it.\n",
    "## Same heading\n",
    "Text with a note[^n].\n\n[^n]: The note says {w}.\n",
    "*[API]: Application Programming Interface\n\nThe API of {w}.\n",
    "{w}\n: What the term means.\n",
    "| one | two |\n| --- | --- |\n| {w} | 2 |\n",
    '!!! warning "{w}"\n    Inside the banner.\n',
    '??? tip "{w}"\n    Folded away.\n',
    "```python\nvalue = {w!r}\n```\n",
    "Inline `#!python print({w!r})` code.\n",
    "- [x] done {w}\n- [ ] open\n",
    '<div markdown="1" id="box">\n**{w}**\n</div>\n',
    '<a name="kept"></a>Raw anchor {w}.\n',
    "[other](other.md#part), [here](#same-heading), [up](../index.md), [site](https://example.org/{w})\n",
    "## Labelled {{ #custom-id }}\n",
    "1. one\n2. two\n\n* other list {w}\n",
    "A [reference][ref] to {w}.\n\n[ref]: https://example.org/ref\n",
]
_word = st.one_of(st.sampled_from(SCRIPTS), st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=12))
_page = st.lists(st.tuples(st.sampled_from(PIECES), _word), min_size=0, max_size=6).map(
    lambda parts: "\n".join(piece.format(w=word) for piece, word in parts)
)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> tuple[MkDocsConfig, Files, list[Page]]:
    root = tmp_path_factory.mktemp("docs-site")
    docs = root / "docs"
    for name in ("index.md", "notes/first.md", "notes/other.md", "notes/third.md"):
        (docs / name).parent.mkdir(parents=True, exist_ok=True)
        (docs / name).write_text("# Page\n", encoding="utf-8")
    (root / "mkdocs.yml").write_text(
        yaml.safe_dump({"site_name": "Reuse", "docs_dir": "docs", "markdown_extensions": EXTENSIONS}),
        encoding="utf-8",
    )
    config = load_config(str(root / "mkdocs.yml"))
    files = get_files(config)
    found = [files.get_file_from_path(name) for name in ("notes/first.md", "notes/third.md")]
    pages = [Page(None, file, config) for file in found if file is not None]
    return config, files, pages


def _toc(items: Any) -> list[Any]:
    return [(i.title, i.id, i.level, _toc(i.children)) for i in items or () if isinstance(i, AnchorLink)]


def _rendered(page: Page) -> tuple[Any, ...]:
    links = {file.src_uri: dict(found) for file, found in (page.links_to_anchors or {}).items()}
    return (page.content, _toc(page.toc), page._title_from_render, page.present_anchor_ids, links)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts=st.lists(_page, min_size=1, max_size=5))
def test_a_reused_converter_renders_every_page_as_a_new_one_does(
    site: tuple[MkDocsConfig, Files, list[Page]], texts: list[str]
) -> None:
    config, files, pages = site
    shared = SharedMarkdown.for_config(config)
    assert shared is not None
    for n, text in enumerate(texts):
        page = pages[n % len(pages)]
        page.markdown = text
        Page.render(page, config, files)  # MkDocs' own: a new converter
        expected = _rendered(page)
        page.content = page.toc = None  # type: ignore[assignment]
        shared.render(page, config, files)
        assert _rendered(page) == expected, text
    assert shared.rendered == len(texts)


def test_footnote_ids_made_unique_per_page_are_those_a_new_converter_gives(tmp_path: Path) -> None:
    # Footnotes' UNIQUE_IDS numbers each document a converter converts (fn:2-1, fn:3-1, ...): a
    # reused converter must number every page as the first document of a new one.
    (tmp_path / "docs" / "notes").mkdir(parents=True)
    for name in ("first", "second"):
        (tmp_path / "docs" / "notes" / f"{name}.md").write_text("# Page\n", encoding="utf-8")
    (tmp_path / "mkdocs.yml").write_text(
        yaml.safe_dump(
            {"site_name": "Notes", "docs_dir": "docs", "markdown_extensions": [{"footnotes": {"UNIQUE_IDS": True}}]}
        ),
        encoding="utf-8",
    )
    config = load_config(str(tmp_path / "mkdocs.yml"))
    files = get_files(config)
    shared = SharedMarkdown.for_config(config)
    assert shared is not None
    for n, word in enumerate(SCRIPTS):
        file = files.get_file_from_path(f"notes/{('first', 'second')[n % 2]}.md")
        assert file is not None
        page = Page(None, file, config)
        page.markdown = f"{word}[^a] and again[^b].\n\n[^a]: {word}\n[^b]: ✓\n"
        Page.render(page, config, files)
        expected = _rendered(page)
        shared.render(page, config, files)
        assert _rendered(page) == expected


def test_every_allowed_extension_is_in_the_comparison() -> None:
    named = {item if isinstance(item, str) else next(iter(item)) for item in EXTENSIONS}
    assert {name.removeprefix("markdown.extensions.") for name in REUSABLE} == named


@pytest.mark.parametrize(
    "extensions",
    [["tables", "nl2br"], ["toc", "pymdownx.snippets"], ["toc", {"pymdownx.emoji": {}}]],
)
def test_a_site_with_an_extension_not_checked_keeps_mkdocs_own_rendering(tmp_path: Path, extensions: list[Any]) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "mkdocs.yml").write_text(
        yaml.safe_dump({"site_name": "Other", "docs_dir": "docs", "markdown_extensions": extensions}), encoding="utf-8"
    )
    assert SharedMarkdown.for_config(load_config(str(tmp_path / "mkdocs.yml"))) is None


def test_the_site_built_with_one_converter_is_byte_for_byte_the_site_mkdocs_renders(
    vault: Vault, tmp_path: Path
) -> None:
    demo_with_every_script(
        vault, lambda text: f"## {text}\n\nA note[^a] on {text}.\n\n[^a]: {text}\n\n## {text}\n\n- [x] {text}\n"
    )
    built: dict[bool, dict[str, bytes]] = {}
    for reuse in (True, False):
        plugin, built[reuse] = build_uncached(vault, tmp_path / f"site-{reuse}", reuse_markdown=reuse)
        assert (plugin.shared_markdown_pages > 30) is reuse
    assert built[True].keys() == built[False].keys()
    differing = [name for name in built[True] if built[True][name] != built[False][name]]
    assert differing == []


def test_a_page_an_earlier_build_rendered_is_mkdocs_own_again_when_this_build_does_not_share(
    site: tuple[MkDocsConfig, Files, list[Page]],
) -> None:
    config, files, _pages = site
    earlier = SharedMarkdown.for_config(config)
    assert earlier is not None
    file = files.get_file_from_path("index.md")
    assert file is not None
    page = Page(None, file, config)
    page.__class__ = earlier.page_class  # as serve's last build left it
    plugin = MemositePlugin()
    plugin.reuse_markdown = False
    assert type(plugin.on_pre_page(page, config=config, files=files)) is Page
