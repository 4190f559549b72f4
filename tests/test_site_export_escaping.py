"""``export-docs`` writes every frontmatter value it puts into front matter, nav or HTML as inert
text (issue 21): plain MkDocs (Material) and Zensical print a front matter title unescaped into
the page title, the header, the nav and the search index, so a record titled
``<img src=x onerror=…>`` ran script on every page of an exported site."""

from __future__ import annotations

import html
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from browser_support import serving
from hypothesis import given, settings
from hypothesis import strategies as st

from memosite.site.export import export_docs, front_matter_title
from memosite.store import upsert_record
from memosite.vault import Vault

PROJECT = "shop"
IMG = '<img src=x onerror="window.__pwned=1">'
SCRIPT = '"quoted" </title><script>window.__pwned=2</script>'
HOSTILE_TITLES = [
    IMG,
    f"Cache: stale # not a comment {SCRIPT}",
    "---",
    "key: value",
    "Café ошибка ελληνικά 日本語 عربى 🎉 <b>bold</b>",
]
# Written by hand: YAML escapes for a line break, a line separator, a next-line character, a bell.
RAW_TITLE_YAML = '"line one\\nline two <svg onload=window.__pwned=3>\\Lthree\\Nfour\\a"'
CONFIG = """site_name: Team docs
theme:
  name: material
markdown_extensions:
  - admonition
  - attr_list
  - tables
  - toc:
      permalink: true
extra_css: [assets/memosite/memory.css]
extra_javascript: [assets/memosite/memory.js]
"""
# The payloads as live markup (as text they read &lt;img …).
LIVE_MARKUP = re.compile(r"<img src=x|<script>window\.__pwned|<svg onload|<b>bold</b>", re.IGNORECASE)


def _generator(name: str) -> Path:
    found = Path(sys.executable).parent / name
    if not found.exists():
        pytest.skip(f"{name} is not installed next to {sys.executable}")
    return found


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("export")
    vault = Vault.open(base / "vault")
    for title in HOSTILE_TITLES:
        upsert_record(vault, PROJECT, kind="trap", body="Body.", frontmatter={"title": title}, allow_duplicate=True)
    raw = vault.project_dir(PROJECT) / "traps" / "by-hand.md"
    raw.write_text(
        f"---\nid: by-hand\nkind: trap\nproject: {PROJECT}\ntitle: {RAW_TITLE_YAML}\nstatus: active\n"
        "created: '2026-01-05T10:00:00.000Z'\nupdated: '2026-01-05T10:00:00.000Z'\n---\nWritten by hand.\n",
        encoding="utf-8",
    )
    project = base / "team"
    (project / "docs").mkdir(parents=True)
    (project / "docs/index.md").write_text("# Team docs\n", encoding="utf-8")
    (project / "mkdocs.yml").write_text(CONFIG, encoding="utf-8")
    result = export_docs(vault, project / "docs")
    vault.close()
    assert result.records == len(HOSTILE_TITLES) + 1
    return project


@pytest.fixture(scope="module", params=["mkdocs", "zensical"])
def built(request: pytest.FixtureRequest, exported: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp(request.param)
    shutil.copytree(exported, work / "team")
    done = subprocess.run(
        [str(_generator(request.param)), "build"],
        cwd=work / "team",
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return work / "team/site"


@pytest.mark.slow
def test_every_exported_front_matter_parses_to_the_title_as_html_text(exported: Path) -> None:
    pages = sorted((exported / "docs/memory").rglob("*.md"))
    titles = []
    for page in pages:
        text = page.read_text(encoding="utf-8")
        assert text.startswith("---\n")
        meta = yaml.safe_load(text[4 : text.index("\n---\n", 3)])
        assert set(meta) <= {"title", "search", "hide"}, page
        titles.append(meta["title"])
        assert not LIVE_MARKUP.search(meta["title"])
    assert html.escape(IMG) in titles
    assert "line one line two &lt;svg onload=window.__pwned=3&gt; three four&#x7;" in titles


@pytest.mark.slow
def test_a_title_with_markup_is_inert_in_every_built_page(built: Path) -> None:
    pages = list(built.rglob("*.html"))
    assert len(pages) > 10
    for page in pages:
        assert not LIVE_MARKUP.search(page.read_text(encoding="utf-8")), page
    record = next(built.glob("memory/shop/traps/img-src*/index.html")).read_text(encoding="utf-8")
    assert html.escape(IMG, quote=False) in record or html.escape(IMG) in record  # shown as the text it is


@pytest.mark.slow
def test_the_search_index_holds_titles_as_escaped_text(built: Path) -> None:
    index = next(built.rglob("search*.json"), None)
    if index is None:
        pytest.skip("this generator writes no JSON search index")
    text = index.read_text(encoding="utf-8")
    assert not LIVE_MARKUP.search(text.replace("\\u003c", "<"))


@settings(max_examples=300, deadline=None)
@given(title=st.text(alphabet=st.characters(exclude_categories=["Cs"]), max_size=80))
def test_front_matter_title_is_one_yaml_line_that_reads_back_as_the_title(title: str) -> None:
    value = front_matter_title(title)
    assert "\n" not in value and "\r" not in value
    parsed = yaml.safe_load(f"---\ntitle: {value}\n")["title"]
    assert "<" not in parsed and ">" not in parsed and '"' not in parsed
    controls = re.compile("[\x00-\x1f\x7f-\x9f]")
    if not controls.search(title):
        assert html.unescape(parsed) == title


def test_an_apostrophe_in_a_title_is_written_as_itself() -> None:
    # Zensical shows the title as text in its search results: "&#x27;" would read as it is written.
    assert front_matter_title("Refunds reuse the charge's key") == '"Refunds reuse the charge\'s key"'
    assert front_matter_title('Say "no" to <b>') == '"Say &quot;no&quot; to &lt;b&gt;"'


@pytest.mark.slow
@pytest.mark.browser
def test_no_script_runs_on_an_exported_page_in_chromium(built: Path, browser: object) -> None:
    context = browser.new_context()  # type: ignore[attr-defined]
    with serving(built) as url:
        try:
            page = context.new_page()
            base = url.rstrip("/")
            record = next(built.glob("memory/shop/traps/img-src*/index.html")).parent.relative_to(built).as_posix()
            for path in ("/", f"/{record}/", "/memory/shop/"):
                page.goto(base + path)
                page.wait_for_load_state("load")
                assert page.evaluate("window.__pwned") is None, path
            assert IMG in page.title() or IMG in page.content().replace("&lt;", "<").replace("&gt;", ">")
        finally:
            context.close()


# --- every other value, and a body that opens the details' element ------------------------------

# A record's details fold into `<details markdown>`; without the generator's md_in_html extension
# (the exported pages name it, a site may not turn it on) that element is raw HTML up to its end.
# Before, a tag, a module or a citation shown there as a code span, or a body line under a copy of
# the details' opening line, reached the page as live markup: script ran on the record's page.
FIELD_IMG = '<img src=x onerror="window.__pwned={n}">'
BODY_OPENING_THE_DETAILS = """Intro in Ελληνικά and 日本語.

<details class="memosite-details" markdown data-search-exclude>
`<img src=x onerror="window.__pwned=21">`

```
<img src=x onerror="window.__pwned=22">
```

    <img src=x onerror="window.__pwned=23">
</details>

<div class="memosite-links" markdown>
`<img src=x onerror="window.__pwned=24">` and `a|b` in Кириллица 🦊
"""
FIELD_LIVE_MARKUP = re.compile(r"<img src=x", re.IGNORECASE)


@pytest.fixture(scope="module")
def exported_fields(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("export-fields")
    vault = Vault.open(base / "vault")
    upsert_record(
        vault,
        PROJECT,
        kind="decision",
        body="We chose it.",
        frontmatter={
            "title": "Every field",
            "tags": [FIELD_IMG.format(n=11), "café"],
            "module": FIELD_IMG.format(n=12),
            "pathPatterns": [FIELD_IMG.format(n=13)],
            "supersededBy": FIELD_IMG.format(n=14),
            "sessionId": FIELD_IMG.format(n=15),
            "severity": "high",
        },
    )
    upsert_record(vault, PROJECT, kind="trap", body=BODY_OPENING_THE_DETAILS, frontmatter={"title": "Opens details"})
    project = base / "team"
    (project / "docs").mkdir(parents=True)
    (project / "docs/index.md").write_text("# Team docs\n", encoding="utf-8")
    export_docs(vault, project / "docs")
    vault.close()
    return project


@pytest.fixture(scope="module", params=["without md_in_html", "with md_in_html"])
def built_fields(
    request: pytest.FixtureRequest, exported_fields: Path, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    work = tmp_path_factory.mktemp("fields-mkdocs")
    shutil.copytree(exported_fields, work / "team")
    config = (
        CONFIG.replace("  - attr_list\n", "  - attr_list\n  - md_in_html\n")
        if request.param == "with md_in_html"
        else CONFIG
    )
    (work / "team/mkdocs.yml").write_text(config, encoding="utf-8")
    done = subprocess.run(
        [str(_generator("mkdocs")), "build"],
        cwd=work / "team",
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return work / "team/site"


def test_no_value_of_a_records_details_is_live_markup_in_a_plain_mkdocs_build(built_fields: Path) -> None:
    pages = list(built_fields.rglob("*.html"))
    for page in pages:
        assert not FIELD_LIVE_MARKUP.search(page.read_text(encoding="utf-8")), page
    decision = (built_fields / "memory/shop/decisions/every-field/index.html").read_text(encoding="utf-8")
    assert "&lt;img src=x onerror=" in decision  # each value shown as the text it is
    assert '<span class="memosite-severity memosite-severity--high">high</span>' in decision


@pytest.mark.browser
def test_no_script_runs_on_any_exported_page_whatever_a_records_fields_and_body_hold(
    built_fields: Path, browser: object
) -> None:
    context = browser.new_context()  # type: ignore[attr-defined]
    dialogs: list[str] = []
    with serving(built_fields) as url:
        try:
            page = context.new_page()
            page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
            base = url.rstrip("/")
            for html_file in sorted(built_fields.rglob("index.html")):
                path = "/" + html_file.parent.relative_to(built_fields).as_posix() + "/"
                page.goto(base + path.replace("/./", "/"))
                page.wait_for_load_state("load")
                assert page.evaluate("window.__pwned") is None, path
            assert dialogs == []
        finally:
            context.close()
