"""Real MkDocs builds of a vault: what the site shows, what it hides, and what it refuses to publish."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from memosite.cli import cli
from memosite.errors import BuildError, InvalidArguments
from memosite.resources import data_path
from memosite.site.build import build_site, load_site_config, run_build
from memosite.store import upsert_record
from memosite.vault import Vault

PROJECT = "shop"
HOSTILE_BODY = """Rounding is half-up for invoices.

<script>alert('owned')</script>
<img src="x.png" onerror="alert(1)">
<a href="javascript:alert(2)">click me</a>
<div onmouseover="alert(3)">hover</div>

## Heading <span onclick="alert(4)">with markup</span>

## Labelled { data-toc-label="<img src=y onerror=alert(6)>" }

!!! warning "Keep this"
    Admonitions survive sanitising.

```python
total = Decimal("1.005").quantize(Decimal("0.01"), ROUND_HALF_UP)
```
"""
# A GitHub token shape that the secret scanner recognises; planted by hand, past upsert's scan.
PLANTED_TOKEN = "ghp_" + "Zq8" * 12


def _trap(vault: Vault, title: str, body: str, **frontmatter: object) -> str:
    result = upsert_record(
        vault,
        PROJECT,
        kind="trap",
        body=body,
        frontmatter={"title": title, **frontmatter},
        allow_duplicate=True,
    )
    return result.path


def _fill(vault: Vault) -> dict[str, str]:
    """A small vault with one record in every state the site treats differently."""
    paths = {
        "active": _trap(
            vault,
            "Payment retries need idempotency keys",
            "Retrying a charge without a key double-charges the customer.",
            severity="critical",
        ),
        "expired": _trap(
            vault,
            "Staging used personal credentials",
            "Fixed by the CI role; kept until cleanup.",
            expires_at="2021-03-01",
        ),
        "archived": _trap(
            vault, "Old flaky checkout test", "The checkout test raced the mail stub.", status="archived"
        ),
        "hostile": _trap(vault, "Invoice rounding </title><script>alert(5)</script>", HOSTILE_BODY),
    }
    upsert_record(
        vault,
        PROJECT,
        kind="decision",
        body="Search used LIKE queries.",
        frontmatter={"title": "Search with LIKE", "id": "search-like"},
    )
    upsert_record(
        vault,
        PROJECT,
        kind="decision",
        body="Search uses full-text indexes.",
        frontmatter={"title": "Search with full-text indexes", "id": "search-fts", "supersedes": "search-like"},
    )
    upsert_record(
        vault,
        PROJECT,
        kind="state",
        body="Working on checkout.",
        frontmatter={"title": "Checkout working state", "id": "checkout-state"},
    )
    upsert_record(
        vault,
        PROJECT,
        kind="scratch",
        body="Try EXPLAIN ANALYZE.",
        frontmatter={"title": "Scratch idea", "id": "scratch-idea"},
    )
    return paths


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """One default-site build shared by the read-only tests of this module."""
    base = tmp_path_factory.mktemp("site-build")
    vault = Vault.open(base / "vault")
    paths = _fill(vault)
    docs_before = sorted(p.relative_to(data_path("site_src")) for p in data_path("site_src").rglob("*"))
    result = build_site(vault, out_dir=base / "site")
    docs_after = sorted(p.relative_to(data_path("site_src")) for p in data_path("site_src").rglob("*"))
    vault.close()
    return {"site": base / "site", "result": result, "paths": paths, "docs": (docs_before, docs_after)}


def _page(site: Path, vault_path: str) -> Path:
    """The built page of a record file ``projects/<p>/<dir>/<slug>.md``."""
    _, project, subdir, name = vault_path.split("/")
    return site / "memory" / project / subdir / name[:-3] / "index.html"


def _article(html: str) -> str:
    return html[html.index("<article") : html.index("</article>")]


def test_default_site_has_landing_memory_view_and_record_pages(built: dict) -> None:
    site: Path = built["site"]
    for relative in (
        "index.html",
        "memory/index.html",
        "memory/records.json",
        "search/search_index.json",
        f"memory/{PROJECT}/TRAPS/index.html",
        f"memory/{PROJECT}/DECISIONS/index.html",
        f"memory/{PROJECT}/INDEX/index.html",
        "assets/memosite/memory.js",
    ):
        assert (site / relative).is_file(), relative
    assert _page(site, built["paths"]["active"]).is_file()
    assert built["result"].records == 6  # four traps, two decisions; no state, no scratch


def test_build_writes_nothing_into_docs_dir(built: dict) -> None:
    before, after = built["docs"]
    assert before == after


def test_state_and_scratch_records_are_never_published(built: dict) -> None:
    site: Path = built["site"]
    assert not (site / "memory" / PROJECT / "plans").exists()
    assert not (site / "memory" / PROJECT / "scratch").exists()
    records = json.loads((site / "memory/records.json").read_text(encoding="utf-8"))["records"]
    assert {r["kind"] for r in records} == {"trap", "decision"}
    index = (site / "search/search_index.json").read_text(encoding="utf-8")
    assert "Checkout working state" not in index and "Scratch idea" not in index


def test_record_pages_stay_out_of_navigation(built: dict) -> None:
    # Every page carries the whole navigation, so look at the chrome of a record page itself.
    html = _page(built["site"], built["paths"]["active"]).read_text(encoding="utf-8")
    chrome = html.replace(_article(html), "")
    links = re.findall(r'href="([^"]+)"', chrome)
    assert "../../TRAPS/" in links and "../../../" in links
    assert not [link for link in links if "/traps/" in link or "/decisions/" in link]


def test_record_body_html_is_published_inert(built: dict) -> None:
    html = _page(built["site"], built["paths"]["hostile"]).read_text(encoding="utf-8")
    for handler in ("onerror", "onclick", "onmouseover"):  # the table of contents included
        assert handler not in html
    article = _article(html)
    assert "<script" not in article
    assert not re.search(r"\son\w+\s*=", article)  # no event-handler attribute of any kind
    assert "javascript:" not in article
    assert "click me" in article and "hover" in article  # text stays, behaviour goes


def test_sanitising_keeps_admonitions_highlighting_and_anchors(built: dict) -> None:
    article = _article(_page(built["site"], built["paths"]["hostile"]).read_text(encoding="utf-8"))
    assert '<div class="admonition warning">' in article
    assert 'class="highlight"' in article and '<span class="n">' in article
    assert 'class="headerlink"' in article and 'id="heading-with-markup"' in article


def test_record_title_cannot_break_out_of_the_page_title(built: dict) -> None:
    html = _page(built["site"], built["paths"]["hostile"]).read_text(encoding="utf-8")
    assert "<script>alert(5)" not in html
    head = html[: html.index("</head>")]
    assert head.count("<title>") == 1 and "&lt;/title&gt;" in head


def test_records_json_lists_every_published_record(built: dict) -> None:
    site: Path = built["site"]
    records = json.loads((site / "memory/records.json").read_text(encoding="utf-8"))["records"]
    by_title = {r["title"]: r for r in records}
    assert set(by_title) >= {
        "Payment retries need idempotency keys",
        "Staging used personal credentials",
        "Search with LIKE",
        "Search with full-text indexes",
    }
    expired = by_title["Staging used personal credentials"]
    assert expired["expires_at"] == "2021-03-01T23:59:59.999Z"
    assert by_title["Search with LIKE"]["status"] == "superseded"
    fields = {
        "id",
        "kind",
        "project",
        "title",
        "status",
        "severity",
        "layer",
        "tags",
        "created",
        "updated",
        "expires_at",
        "freshness",
        "review",
        "url",
    }
    for record in records:
        assert set(record) == fields
        assert (site / "memory" / record["url"] / "index.html").is_file()


def test_expired_archived_and_superseded_records_are_left_out_of_search(built: dict) -> None:
    site: Path = built["site"]
    docs = json.loads((site / "search/search_index.json").read_text(encoding="utf-8"))["docs"]
    pages = {doc["location"].split("#")[0] for doc in docs}
    assert "memory/shop/traps/payment-retries-need-idempotency-keys/" in pages
    assert "memory/shop/decisions/search-fts/" in pages
    for hidden in (
        "traps/staging-used-personal-credentials/",
        "traps/old-flaky-checkout-test/",
        "decisions/search-like/",
    ):
        assert f"memory/shop/{hidden}" not in pages
        assert (site / "memory/shop" / hidden / "index.html").is_file()  # still browsable


def test_expired_record_page_shows_its_banner(built: dict) -> None:
    article = _article(_page(built["site"], built["paths"]["expired"]).read_text(encoding="utf-8"))
    assert '<p class="admonition-title">Expired</p>' in article
    assert "2021-03-01 23:59 UTC" in article


def test_superseded_decision_links_to_its_successor(built: dict) -> None:
    old = (built["site"] / "memory/shop/decisions/search-like/index.html").read_text(encoding="utf-8")
    article = _article(old)
    assert '<p class="admonition-title">Superseded</p>' in article
    assert '<a href="../search-fts/">Search with full-text indexes</a>' in article
    new = _article((built["site"] / "memory/shop/decisions/search-fts/index.html").read_text(encoding="utf-8"))
    assert '<a href="../search-like/">Search with LIKE</a>' in new


def test_include_inactive_in_search_option_puts_them_back(tmp_path: Path) -> None:
    vault = Vault.open(tmp_path / "vault")
    _trap(vault, "Expired note about queues", "Queues were retried forever.", expires_at="2021-01-01")
    config = tmp_path / "mkdocs.yml"
    config.write_text(
        data_path("mkdocs.yml")
        .read_text(encoding="utf-8")
        .replace("docs_dir: site_src", f"docs_dir: {data_path('site_src')}")
        .replace("custom_dir: site_src/overrides", f"custom_dir: {data_path('site_src') / 'overrides'}")
        .replace("  - memosite\n", "  - memosite:\n      include_inactive_in_search: true\n"),
        encoding="utf-8",
    )
    build_site(vault, out_dir=tmp_path / "site", config_file=config)
    index = (tmp_path / "site/search/search_index.json").read_text(encoding="utf-8")
    assert "memory/shop/traps/expired-note-about-queues/" in index


def test_planted_secret_fails_the_build_and_publishes_nothing(tmp_path: Path) -> None:
    vault = Vault.open(tmp_path / "vault")
    path = vault.root / _trap(vault, "Deploy notes", "Deploy with the CI role.")
    out = tmp_path / "site"
    build_site(vault, out_dir=out)
    before = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    # A human edits the record by hand, past upsert's secret scan.
    path.write_text(path.read_text(encoding="utf-8") + f"\nUse token {PLANTED_TOKEN} for the API.\n", encoding="utf-8")
    with pytest.raises(BuildError) as failure:
        build_site(vault, out_dir=out)
    assert "GitHub token" in failure.value.message
    assert "memory/shop/traps/deploy-notes/index.html" in failure.value.message
    after = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert after == before  # the previous site is untouched
    assert not [p for p in tmp_path.iterdir() if "memosite-" in p.name]  # no staging left behind


@pytest.mark.slow
def test_cli_build_reports_a_planted_secret_on_one_line(
    tmp_path: Path, vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = vault.root / _trap(vault, "Deploy notes", "Deploy with the CI role.")
    path.write_text(path.read_text(encoding="utf-8") + f"\n{PLANTED_TOKEN}\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(cli, ["build"])
    assert result.exit_code == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "GitHub token" in lines[0] and "Traceback" not in result.output
    assert not (tmp_path / "site").exists()


def test_cli_build_writes_site_where_out_says(tmp_path: Path, vault: Vault, monkeypatch: pytest.MonkeyPatch) -> None:
    _trap(vault, "Cookie loses SameSite", "Behind the CDN the cookie loses SameSite.")
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(cli, ["build", "--out", "site", "--json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["site_dir"] == str(tmp_path / "site") and payload["records"] == 1
    assert (tmp_path / "site/memory/shop/traps/cookie-loses-samesite/index.html").is_file()


def test_build_refuses_to_replace_a_directory_that_is_not_a_site(tmp_path: Path, vault: Vault) -> None:
    precious = tmp_path / "notes"
    precious.mkdir()
    (precious / "todo.txt").write_text("keep me", encoding="utf-8")
    with pytest.raises(InvalidArguments):
        build_site(vault, out_dir=precious)
    assert (precious / "todo.txt").read_text(encoding="utf-8") == "keep me"


@pytest.mark.slow
def test_strict_build_fails_on_a_broken_link_in_a_record(tmp_path: Path, vault: Vault) -> None:
    _trap(vault, "Linked note", "See [the runbook](missing-runbook.md).")
    with pytest.raises(BuildError) as failure:
        build_site(vault, out_dir=tmp_path / "site", strict=True)
    assert "missing-runbook.md" in failure.value.message
    build_site(vault, out_dir=tmp_path / "site")  # without --strict it is a warning only


def test_a_strict_build_run_again_fails_again_on_the_same_broken_link(tmp_path: Path, vault: Vault) -> None:
    # The attack: run `memosite build --strict` twice, the second taking the failed build's pages
    # from the page cache (no render, no link check) and publishing the broken link.
    _trap(vault, "Ссылка 🔗 rota", "See [the runbook](missing-runbook.md) (数据).")
    for _attempt in range(2):
        with pytest.raises(BuildError) as failure:
            build_site(vault, out_dir=tmp_path / "site", strict=True)
        assert "missing-runbook.md" in failure.value.message
    assert not (tmp_path / "site").exists() or not any((tmp_path / "site").iterdir())


def test_plugin_inside_an_existing_mkdocs_project_with_a_prefix(tmp_path: Path, vault: Vault) -> None:
    from mkdocs.commands.build import build
    from mkdocs.config import load_config

    _trap(vault, "Cache stampede on deploy", "Warm the cache before switching traffic.")
    project = tmp_path / "team-docs"
    (project / "docs").mkdir(parents=True)
    (project / "docs/index.md").write_text("# Team docs\n\nOur handbook.\n", encoding="utf-8")
    (project / "docs/guide.md").write_text("# Guide\n\nHow we work.\n", encoding="utf-8")
    (project / "mkdocs.yml").write_text(
        "site_name: Team docs\n"
        "theme:\n  name: mkdocs\n"
        "nav:\n  - Home: index.md\n  - Guide: guide.md\n"
        "plugins:\n"
        "  - search\n"
        f"  - memosite:\n      vault: {vault.root}\n      prefix: handbook/memory\n",
        encoding="utf-8",
    )
    docs_before = sorted((project / "docs").rglob("*"))
    config = load_config(str(project / "mkdocs.yml"))
    build(config)
    site = project / "site"
    assert (site / "guide/index.html").is_file()
    assert (site / "handbook/memory/shop/traps/cache-stampede-on-deploy/index.html").is_file()
    assert (site / "handbook/memory/records.json").is_file()
    assert (site / "assets/memosite/memory.js").is_file()  # shipped by the plugin, not by their docs
    home = (site / "index.html").read_text(encoding="utf-8")
    assert "Guide" in home and "handbook/memory/" in home and "handbook/memory/shop/TRAPS/" in home
    assert sorted((project / "docs").rglob("*")) == docs_before


def test_dirty_rebuild_keeps_search_index_and_records_json_whole(tmp_path: Path, vault: Vault) -> None:
    changed = vault.root / _trap(vault, "Queue retries", "Retries back off exponentially.")
    _trap(vault, "Locale bug", "Dates print in the server locale.")
    gone = vault.root / _trap(vault, "Flaky clock", "The test clock drifts.")
    config = load_site_config(vault, site_dir=tmp_path / "site")
    run_build(config)
    site = tmp_path / "site"
    full_pages = _search_pages(site)
    kept_page = site / "memory/shop/traps/locale-bug/index.html"
    kept_mtime = kept_page.stat().st_mtime_ns

    changed.write_text(changed.read_text(encoding="utf-8").replace("exponentially", "with jitter"), encoding="utf-8")
    gone.unlink()
    run_build(load_site_config(vault, site_dir=site), dirty=True)

    assert kept_page.stat().st_mtime_ns == kept_mtime  # not rebuilt
    assert "with jitter" in (site / "memory/shop/traps/queue-retries/index.html").read_text(encoding="utf-8")
    assert not (site / "memory/shop/traps/flaky-clock").exists()
    assert _search_pages(site) == full_pages - {"memory/shop/traps/flaky-clock/"}
    index = (site / "search/search_index.json").read_text(encoding="utf-8")
    assert "with jitter" in index and "exponentially" not in index
    records = json.loads((site / "memory/records.json").read_text(encoding="utf-8"))["records"]
    assert sorted(r["title"] for r in records) == ["Locale bug", "Queue retries"]


def _search_pages(site: Path) -> set[str]:
    docs = json.loads((site / "search/search_index.json").read_text(encoding="utf-8"))["docs"]
    return {doc["location"].split("#")[0] for doc in docs}


def test_missing_vault_is_a_clear_error(tmp_path: Path) -> None:
    from mkdocs.config import load_config
    from mkdocs.exceptions import PluginError

    config_path = tmp_path / "mkdocs.yml"
    config_path.write_text(
        f"site_name: x\nplugins:\n  - memosite:\n      vault: {tmp_path / 'nowhere'}\n", encoding="utf-8"
    )
    (tmp_path / "docs").mkdir()
    config = load_config(str(config_path))
    with pytest.raises(PluginError, match="vault not found"):
        config.plugins.on_config(config)
    shutil.rmtree(tmp_path / "docs")
