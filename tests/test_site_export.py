"""``memosite export-docs``: plain Markdown that plain MkDocs, ProperDocs and Zensical build without
the plugin, neutralised and secret-checked, with a Memory page that works in Chromium on each."""

from __future__ import annotations

import html
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from browser_support import serving
from hypothesis import given, settings
from hypothesis import strategies as st

from memosite.errors import InvalidArguments, SafetyViolation
from memosite.site.export import export_docs, front_matter, neutralise_markdown
from memosite.store import upsert_record
from memosite.vault import Vault

PROJECT = "shop"
SCRIPTS = "Café ошибка ελληνικά 日本語 عربى 🎉"
HOSTILE_BODY = (
    "Rounding is half-up.\n\n<script>window.__pwned = 1</script>\n"
    '<img src="x.png" onerror="window.__pwned = 2">\n\n[click](javascript:alert(1))\n\n'
    "```html\n<b>code stays code</b>\n```\n"
)
CONFIG = """site_name: Team docs
theme:
  name: material
markdown_extensions:
  - admonition
  - attr_list
  - tables
  - md_in_html
  - toc:
      permalink: true
  - pymdownx.superfences
  - pymdownx.tasklist:
      custom_checkbox: true
extra_css: [assets/memosite/memory.css]
extra_javascript: [assets/memosite/memory.js]
"""


def _fill(vault: Vault) -> None:
    for title, body, extra in (
        (f"Invoice rounding {SCRIPTS}", HOSTILE_BODY, {"severity": "critical"}),
        ("Cookie loses SameSite", "Behind the CDN the cookie loses SameSite.", {"severity": "high"}),
        ("Expired staging creds", "Old.", {"expires_at": "2021-03-01"}),
    ):
        upsert_record(
            vault, PROJECT, kind="trap", body=body, frontmatter={"title": title, **extra}, allow_duplicate=True
        )


def _generator(name: str) -> Path:
    found = Path(sys.executable).parent / name
    if not found.exists():
        pytest.skip(f"{name} is not installed next to {sys.executable}")
    return found


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("export")
    vault = Vault.open(base / "vault")
    _fill(vault)
    project = base / "team"
    (project / "docs").mkdir(parents=True)
    (project / "docs/index.md").write_text("# Team docs\n\nOur handbook.\n", encoding="utf-8")
    (project / "mkdocs.yml").write_text(CONFIG, encoding="utf-8")
    result = export_docs(vault, project / "docs")
    vault.close()
    assert result.records == 3
    return project


@pytest.fixture(scope="module", params=["mkdocs", "properdocs", "zensical"])
def built(request: pytest.FixtureRequest, exported: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp(request.param)
    shutil.copytree(exported, work / "team")
    command = [str(_generator(request.param)), "build"] + (["--strict"] if request.param != "zensical" else [])
    done = subprocess.run(
        command, cwd=work / "team", capture_output=True, text=True, encoding="utf-8", timeout=600, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return work / "team/site"


def test_export_writes_plain_markdown_pages_assets_records_and_feeds(exported: Path) -> None:
    docs = exported / "docs"
    for relative in (
        "memory/index.md",
        "memory/records.json",
        "memory/feed.xml",
        "memory/shop/index.md",
        "memory/shop/CHANGES.md",
        "memory/shop/TRAPS.md",
        "memory/shop/feed.xml",
        "assets/memosite/memory.js",
        "assets/memosite/memory.css",
    ):
        assert (docs / relative).is_file(), relative
    assert (docs / "index.md").read_text(encoding="utf-8") == "# Team docs\n\nOur handbook.\n"
    page = next((docs / "memory/shop/traps").glob("invoice-rounding*.md")).read_text(encoding="utf-8")
    assert "<script>" not in page and "<img" not in page and "](javascript:" not in page
    assert "&lt;script>" in page and "<b>code stays code</b>" in page  # code stays literal code
    records = json.loads((docs / "memory/records.json").read_text(encoding="utf-8"))["records"]
    assert all(r["url"].endswith("/") for r in records)


def test_both_generators_build_the_export_without_the_plugin(built: Path) -> None:
    page = next((built / "memory/shop/traps").glob("invoice-rounding*/index.html")).read_text(encoding="utf-8")
    assert "Rounding is half-up." in page and SCRIPTS in page
    assert "<script>window.__pwned" not in page and "<img" not in page and 'href="javascript:' not in page
    assert "&lt;script&gt;window.__pwned" in page  # shown as the text it is
    assert '<span class="memosite-severity memosite-severity--critical">critical</span>' in page
    assert (built / "memory/records.json").is_file() and (built / "memory/shop/feed.xml").is_file()


@pytest.mark.browser
def test_memory_page_of_the_export_lists_records_in_chromium(built: Path, browser: object) -> None:
    context = browser.new_context()  # type: ignore[attr-defined]
    with serving(built) as url:
        try:
            page = context.new_page()
            errors: list[str] = []
            page.on("pageerror", lambda error: errors.append(str(error)))
            page.goto(f"{url}memory/")
            page.wait_for_selector(".memosite-memory[data-memosite-loaded]", timeout=60_000)
            titles = page.locator(".memosite-memory__table tbody tr td:first-child a").all_inner_texts()
            assert sorted(titles) == ["Cookie loses SameSite", f"Invoice rounding {SCRIPTS}"]  # expired hidden
            page.locator(".memosite-memory__table tbody a", has_text="Cookie loses").click()
            page.wait_for_load_state()
            assert "Behind the CDN" in page.content()
            assert not errors and page.evaluate("window.__pwned") is None
        finally:
            context.close()


def test_export_refuses_a_folder_inside_the_vault_and_a_foreign_memory_folder(tmp_path: Path, vault: Vault) -> None:
    _fill(vault)
    with pytest.raises(InvalidArguments, match="overlaps the vault"):
        export_docs(vault, vault.root / "projects")
    docs = tmp_path / "docs"
    (docs / "memory").mkdir(parents=True)
    (docs / "memory/mine.md").write_text("mine", encoding="utf-8")
    with pytest.raises(InvalidArguments, match="memosite did not export it"):
        export_docs(vault, docs)
    assert (docs / "memory/mine.md").read_text(encoding="utf-8") == "mine"


def test_export_with_a_planted_secret_writes_nothing(tmp_path: Path, vault: Vault) -> None:
    path = vault.root / upsert_record(vault, PROJECT, kind="trap", body="clean", frontmatter={"title": "Deploy"}).path
    path.write_text(path.read_text(encoding="utf-8").replace("clean", "token ghp_" + "Zq8" * 12), encoding="utf-8")
    with pytest.raises(SafetyViolation, match="Nothing was written"):
        export_docs(vault, tmp_path / "docs")
    assert not (tmp_path / "docs/memory").exists()


def test_a_second_export_replaces_only_what_the_first_wrote(tmp_path: Path, vault: Vault) -> None:
    _fill(vault)
    docs = tmp_path / "docs"
    export_docs(vault, docs)
    (docs / "memory/notes.md").write_text("kept", encoding="utf-8")
    export_docs(vault, docs)
    assert (docs / "memory/notes.md").read_text(encoding="utf-8") == "kept"


def test_cli_export_docs_prints_the_lines_to_add(tmp_path: Path, vault: Vault, run_cli) -> None:  # type: ignore[no-untyped-def]
    _fill(vault)
    outcome = run_cli("export-docs", str(tmp_path / "docs"))
    assert outcome.exit_code == 0, outcome.stderr
    assert "extra_javascript: [assets/memosite/memory.js]" in outcome.stdout
    bad = run_cli("export-docs", str(vault.root))
    assert bad.exit_code != 0 and len(bad.stderr.strip().splitlines()) == 1 and "Traceback" not in bad.stderr


@pytest.mark.parametrize(
    ("markdown", "expected"),
    [
        ("<script>x</script>", "&lt;script>x&lt;/script>"),
        ("[a](javascript:alert(1))", "a (javascript&#58;alert(1)"),
        ("[a](https://example.org) and [b](../x.md)", "[a](https://example.org) and [b](../x.md)"),
        ("`<b>` stays", "`<b>` stays"),
        ("    <indented code>", "    <indented code>"),
    ],
)
def test_neutralise_markdown(markdown: str, expected: str) -> None:
    assert neutralise_markdown(markdown).startswith(expected)


def test_every_exported_page_has_one_front_matter_block(exported: Path) -> None:
    for path in sorted((exported / "docs/memory").rglob("*.md")):
        text = path.read_text(encoding="utf-8")
        assert text.startswith("---\ntitle: "), path
        block, _, rest = text[4:].partition("\n---\n")
        assert "\n---" not in block and not rest.lstrip("\n").startswith("---"), path
    memory = (exported / "docs/memory/index.md").read_text(encoding="utf-8")
    assert memory.startswith('---\ntitle: "Memory"\nhide:\n  - toc\nsearch:\n  exclude: true\n---\n')


def test_the_memory_page_hides_its_table_of_contents_on_every_generator(built: Path) -> None:
    page = (built / "memory/index.html").read_text(encoding="utf-8")
    assert "hide:" not in page and "- toc" not in page and "memosite-memory__table" in page


@settings(max_examples=150, deadline=None)
@given(
    title=st.text(min_size=1, max_size=40),
    tags=st.lists(st.text(min_size=1, max_size=20), max_size=4),
    hide=st.booleans(),
    searchable=st.booleans(),
)
def test_front_matter_is_one_block_whose_values_read_back_as_escaped_text(
    title: str, tags: list[str], hide: bool, searchable: bool
) -> None:
    meta = {"tags": tags, **({"hide": ["toc", "<script>"]} if hide else {})}
    block = front_matter(title, meta, searchable=searchable)
    assert block.startswith("---\n") and block.endswith("\n---\n") and block.count("\n---\n") == 1
    data = yaml.safe_load(block[4:-5])
    assert html.unescape(data["title"]) == title.replace("\r\n", "\n") or "&#x" in data["title"]
    assert "<" not in data["title"] and all("<" not in tag for tag in data.get("tags", []))
    assert len(data.get("tags", [])) == len(tags)
    assert data.get("hide") == (["toc"] if hide else None)
    assert (data.get("search") == {"exclude": True}) is not searchable
