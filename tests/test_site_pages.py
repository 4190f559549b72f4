"""What the built site says, as a reader sees it: frontmatter shown as text, expiry the same
everywhere, dashboards, the changelog and its feeds, search that finds records, and the page cache."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import feedparser
import pytest

from memosite.errors import BuildError
from memosite.site.build import build_site, load_site_config, memosite_plugin, run_build
from memosite.store import forget_record, upsert_record
from memosite.vault import Vault

PROJECT = "shop"
HOSTILE = "[Login](https://evil.example/x) **bold** # heading <b>x</b> `tick` _em_ {#hid .cls}"
SCRIPTS = "Café ошибка ελληνικά 日本語 عربى 🎉"


def _upsert(vault: Vault, kind: str, title: str, body: str, **frontmatter: object) -> str:
    return upsert_record(
        vault, PROJECT, kind=kind, body=body, frontmatter={"title": title, **frontmatter}, allow_duplicate=True
    ).path


def _fill(vault: Vault) -> dict[str, str]:
    return {
        "hostile": _upsert(
            vault,
            "trap",
            HOSTILE,
            "A body that is Markdown.\n\n- [x] done step\n- [ ] open step\n",
            severity="critical",
            layer="web",
            module="src/[m](https://evil.example/m)",
            tags=["[t](https://evil.example/t)", "**tag**", SCRIPTS],
            pathPatterns=["src/[p](https://evil.example/p)/*.py"],
            id="hostile-trap",
        ),
        "titled": _upsert(
            vault, "trap", f"Rounding {SCRIPTS}", f"# Rounding {SCRIPTS}\n\nRound half-up, zanzibar.", severity="high"
        ),
        "expired": _upsert(
            vault, "decision", "Old decision", "Decided long ago.", expires_at="2021-01-01", id="old-decision"
        ),
        "live": _upsert(vault, "decision", "Live decision", "Still holds.", id="live-decision"),
        "prompt": _upsert(vault, "prompt", HOSTILE, "Prompt text.", sessionId="[s](https://evil.example/s)", turn=1),
        "session": _upsert(vault, "session", HOSTILE, "Session text.", sessionId="s1", goal=HOSTILE, turns=2),
    }


def _hand_written(vault: Vault) -> str:
    """A record written by hand, with an id and a supersedes no upsert would have made."""
    path = vault.root / "projects" / PROJECT / "decisions" / "hand-written.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        "---\n"
        "id: '[Login](https://evil.example/id) **bold**'\n"
        "kind: decision\n"
        f"project: {PROJECT}\n"
        "title: Hand written\n"
        "status: active\n"
        "source: human\n"
        "supersedes: '[old](https://evil.example/sup)'\n"
        "created: '2026-11-01T10:00:00.000Z'\n"
        "updated: '2026-11-02T10:00:00.000Z'\n"
        "---\n"
        "Written in an editor.\n",
        encoding="utf-8",
    )
    return vault.relative(path)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    base = tmp_path_factory.mktemp("pages")
    vault = Vault.open(base / "vault")
    paths = _fill(vault)
    paths["hand"] = _hand_written(vault)
    result = build_site(vault, out_dir=base / "site", strict=True, site_url="https://memory.example.org/")
    vault.close()
    return {"site": base / "site", "paths": paths, "result": result, "vault": base / "vault"}


def _html(site: Path, relative: str) -> str:
    return (site / relative).read_text(encoding="utf-8")


def _article(text: str) -> str:
    return text[text.index("<article") : text.index("</article>")]


def _record_page(site: Path, vault_path: str) -> str:
    _, project, subdir, name = vault_path.split("/")
    return _html(site, f"memory/{project}/{subdir}/{name[:-3]}/index.html")


def test_frontmatter_shows_as_text_on_every_page_view_and_output(site: dict) -> None:
    root: Path = site["site"]
    for path in sorted(root.rglob("*.html")):
        text = path.read_text(encoding="utf-8")
        assert 'href="https://evil.example' not in text, path
        assert "<strong>bold</strong>" not in text and "<em>em</em>" not in text, path
        assert 'id="hid"' not in text and 'class="cls"' not in text, path
    page = _article(_record_page(root, site["paths"]["hostile"]))
    assert "[Login](https://evil.example/x) <strong>" not in page
    assert "[Login](https://evil.example/x) **bold** # heading &lt;b&gt;x&lt;/b&gt;" in page
    assert "[t](https://evil.example/t)" in page and "src/[m](https://evil.example/m)" in page
    traps = _article(_html(root, "memory/shop/TRAPS/index.html"))
    assert "[Login](https://evil.example/x) **bold**" in traps
    hand = _article(_record_page(root, site["paths"]["hand"]))
    assert "[Login](https://evil.example/id) **bold**" in hand and "[old](https://evil.example/sup)" in hand
    assert "[Login](https://evil.example/id) **bold**" in _article(_html(root, "memory/shop/INDEX/index.html"))
    records = json.loads(_html(root, "memory/records.json"))["records"]
    assert HOSTILE in [r["title"] for r in records]  # data, shown with textContent by the page
    index = json.loads(_html(root, "search/search_index.json"))["docs"]
    hostile = [d for d in index if d["location"].startswith("memory/shop/traps/hostile-trap/")]
    assert hostile and all("<a" not in d["title"] and "evil.example/x" in d["title"] for d in hostile)


def test_expired_reads_as_expired_on_its_page_views_and_home(site: dict) -> None:
    root: Path = site["site"]
    page = _article(_record_page(root, site["paths"]["expired"]))
    assert "decision · expired" in page and "(recorded as active)" in page
    index = _article(_html(root, "memory/shop/INDEX/index.html"))
    row = re.search(r"Old decision</td>\s*<td>([^<]*)</td>", index)
    assert row is not None and row.group(1) == "expired"
    decisions = _article(_html(root, "memory/shop/DECISIONS/index.html"))
    assert "Expired" in decisions and "Old decision" in decisions.split('id="expired"', 1)[1]
    home = _article(_html(root, "memory/shop/index.html"))
    decisions_row = re.search(r"<td>Decisions</td>(.*?)</tr>", home, re.S)
    assert decisions_row is not None
    figures = re.findall(r">(\d+)</td>", decisions_row.group(1))
    assert figures[:3] == ["3", "2", "1"]  # records, active, expired (the hand-written one is active)


def test_severity_badges_tasklists_breadcrumbs_and_a_single_h1(site: dict) -> None:
    root: Path = site["site"]
    page = _article(_record_page(root, site["paths"]["hostile"]))
    assert 'class="memosite-severity memosite-severity--critical"' in page
    assert 'type="checkbox"' in page and "task-list-item" in page
    crumbs = re.search(r'<p class="memosite-breadcrumb"[^>]*>(.*?)</p>', page)
    assert crumbs is not None
    assert 'href="../../../"' in crumbs.group(1) and 'href="../../"' in crumbs.group(1)
    assert 'href="../../TRAPS/"' in crumbs.group(1)
    titled = _article(_record_page(root, site["paths"]["titled"]))
    assert titled.count("<h1") == 1 and f"Rounding {SCRIPTS}" in titled and "zanzibar" in titled
    traps = _article(_html(root, "memory/shop/TRAPS/index.html"))
    assert '<span class="memosite-severity memosite-severity--critical">critical</span>' in traps


def test_site_name_defaults_to_the_project_and_the_strict_build_has_no_broken_link(site: dict) -> None:
    root: Path = site["site"]
    assert "<title>shop memory</title>" in _html(root, "index.html")
    assert site["result"].warnings == []  # built with strict=True: every link resolves


def test_search_finds_records_and_leaves_out_views_dashboards_and_record_details(site: dict) -> None:
    docs = json.loads(_html(site["site"], "search/search_index.json"))["docs"]
    locations = {d["location"] for d in docs}
    assert any(loc.startswith("memory/shop/traps/rounding") for loc in locations)
    for boilerplate in ("memory/shop/TRAPS/", "memory/shop/INDEX/", "memory/shop/", "memory/shop/CHANGES/", "memory/"):
        assert not any(loc.split("#")[0] == boilerplate for loc in locations), boilerplate
    assert not any(loc.endswith("#record-details") for loc in locations)
    assert any("zanzibar" in d["text"] for d in docs)


def test_record_details_fold_under_the_body_and_stay_out_of_search(tmp_path: Path, vault: Vault) -> None:
    body = "Retries need jitter, quokka.\n\n## Record details\n\nThe body's own section, wombat.\n"
    path = _upsert(vault, "trap", "Retry storms", body, severity="high", module="src/queue_zebra.py")
    build_site(vault, out_dir=tmp_path / "site")
    page = _article(_record_page(tmp_path / "site", path))
    details = page[page.index('<details class="memosite-details"') : page.index("</details>")]
    assert "<summary>Record details</summary>" in details and "queue_zebra" in details and "Occurrences" in details
    assert page.index("quokka") < page.index("wombat") < page.index('<details class="memosite-details"')
    docs = json.loads(_html(tmp_path / "site", "search/search_index.json"))["docs"]
    texts = [d["text"] for d in docs if d["location"].startswith("memory/shop/traps/retry-storms")]
    assert any("quokka" in t for t in texts) and any("wombat" in t for t in texts)
    assert not any("queue_zebra" in t or "Occurrences" in t or "Memory" in t for t in texts)


def test_project_home_has_counts_changes_traps_and_charts(site: dict) -> None:
    home = _article(_html(site["site"], "memory/shop/index.html"))
    assert "Records by kind and status" in home and "Recent changes" in home
    assert home.count('<svg xmlns="http://www.w3.org/2000/svg" class="memosite-chart"') == 3
    assert "<script" not in home.split('class="memosite-chart"', 1)[1]
    assert "Most recurring" in home and f"Rounding {SCRIPTS}" in home
    overview = _article(_html(site["site"], "index.html"))
    assert "memosite-overview" in overview and "Flagged stale" in overview and 'class="memosite-chart"' in overview


def test_feeds_are_valid_atom_with_absolute_links(site: dict) -> None:
    for relative in ("memory/shop/feed.xml", "memory/feed.xml"):
        feed = feedparser.parse(_html(site["site"], relative))
        assert feed.bozo == 0, feed.get("bozo_exception")
        assert feed.version == "atom10"
        titles = [entry.title for entry in feed.entries]
        assert any(f"Rounding {SCRIPTS}" in title for title in titles)
        links = [entry.link for entry in feed.entries]
        assert all(link.startswith("https://memory.example.org/memory/shop/") for link in links)


def test_changelog_lists_changes_week_by_week_with_purges(tmp_path: Path, vault: Vault) -> None:
    gone = _upsert(vault, "trap", "Flaky clock", "The test clock drifts.", id="flaky-clock")
    _upsert(vault, "trap", "Kept trap", "Stays.")
    forget_record(vault, PROJECT, record_id="flaky-clock", purge=True)
    build_site(vault, out_dir=tmp_path / "site")
    changes = _article(_html(tmp_path / "site", "memory/shop/CHANGES/index.html"))
    assert "Week of " in changes and "Purged" in changes and "1 record purged" in changes
    assert "flaky-clock" not in changes and "Flaky clock" not in changes  # counted, never named
    assert "Kept trap" in changes and "Created" in changes
    assert not (vault.root / gone).exists()


def test_changelog_shows_vault_git_history_when_it_is_on(tmp_path: Path, vault_dir: Path) -> None:
    Vault.open(vault_dir).close()
    machine = vault_dir / "config.local.json"  # vault git is this machine's setting
    config = json.loads(machine.read_text(encoding="utf-8"))
    config["vaultGit"] = {"enabled": True, "atomic": True}
    machine.write_text(json.dumps(config), encoding="utf-8")
    vault = Vault.open(vault_dir)
    try:
        _upsert(vault, "trap", "Committed trap", "In git.")
        log = subprocess.run(
            ["git", "-C", str(vault_dir), "log", "--format=%s"], capture_output=True, text=True, encoding="utf-8"
        ).stdout
        assert log.strip()
        build_site(vault, out_dir=tmp_path / "site")
    finally:
        vault.close()
    changes = _article(_html(tmp_path / "site", "memory/shop/CHANGES/index.html"))
    assert "Committed" in changes and log.splitlines()[0].split()[0] in changes


def test_a_second_build_takes_every_unchanged_page_from_the_cache(tmp_path: Path, vault: Vault) -> None:
    changed = vault.root / _upsert(vault, "trap", "Queue retries", "Retries back off exponentially.")
    for n in range(5):
        _upsert(vault, "trap", f"Other trap {n} {SCRIPTS}", f"Body {n}.")
    first = build_site(vault, out_dir=tmp_path / "a")
    config = load_site_config(vault, site_dir=tmp_path / "b")
    run_build(config)
    plugin = memosite_plugin(config)
    assert plugin.rendered_pages == 0  # a new site dir, every page from the cache
    for page in sorted((tmp_path / "a").rglob("*.html")):
        other = tmp_path / "b" / page.relative_to(tmp_path / "a")
        assert other.read_bytes() == page.read_bytes(), page
    assert (
        json.loads((tmp_path / "b/search/search_index.json").read_text(encoding="utf-8"))["docs"]
        == json.loads((tmp_path / "a/search/search_index.json").read_text(encoding="utf-8"))["docs"]
    )

    changed.write_text(changed.read_text(encoding="utf-8").replace("exponentially", "with jitter"), encoding="utf-8")
    config = load_site_config(vault, site_dir=tmp_path / "c")
    run_build(config)
    rendered = memosite_plugin(config)._rendered
    assert "memory/shop/traps/queue-retries.md" in rendered
    assert not any("other-trap" in uri for uri in rendered)
    assert "with jitter" in (tmp_path / "c/memory/shop/traps/queue-retries/index.html").read_text(encoding="utf-8")
    index = (tmp_path / "c/search/search_index.json").read_text(encoding="utf-8")
    assert "with jitter" in index and "exponentially" not in index and "Other trap 4" in index
    assert first.records == 6


def test_a_template_override_invalidates_the_cached_pages(tmp_path: Path, vault: Vault) -> None:
    _upsert(vault, "trap", "Cookie loses SameSite", "Behind the CDN.")
    build_site(vault, out_dir=tmp_path / "a")
    override = vault.root / "templates/site/record.md.j2"
    override.parent.mkdir(parents=True)
    override.write_text('{% extends "default:site/record.md.j2" %}\n', encoding="utf-8")
    original = (Path(__file__).parent.parent / "templates/site/record.md.j2").read_text(encoding="utf-8")
    override.write_text(original.replace("<summary>Record details", "<summary>Everything about it"), encoding="utf-8")
    build_site(vault, out_dir=tmp_path / "b")
    page = (tmp_path / "b/memory/shop/traps/cookie-loses-samesite/index.html").read_text(encoding="utf-8")
    assert "Everything about it" in page


def test_a_secret_planted_by_hand_after_a_cached_build_still_fails_the_build(tmp_path: Path, vault: Vault) -> None:
    path = vault.root / _upsert(vault, "trap", "Deploy notes", "Nothing secret here.")
    build_site(vault, out_dir=tmp_path / "site")
    token = "ghp_" + "Zq8" * 12
    planted = path.read_text(encoding="utf-8").replace("Nothing secret here.", f"token {token}")
    path.write_text(planted, encoding="utf-8")
    with pytest.raises(BuildError, match="refusing to publish"):
        build_site(vault, out_dir=tmp_path / "site")
    assert token not in (tmp_path / "site/memory/shop/traps/deploy-notes/index.html").read_text(encoding="utf-8")


@pytest.mark.slow
def test_site_name_comes_from_the_command_line_when_given(tmp_path: Path, vault: Vault, run_cli) -> None:  # type: ignore[no-untyped-def]
    _upsert(vault, "trap", "Named", "Body.")
    outcome = run_cli("build", "--out", str(tmp_path / "site"), "--site-name", "Équipe mémoire 🧠")
    assert outcome.exit_code == 0, outcome.stderr
    assert "<title>Équipe mémoire 🧠</title>" in _html(tmp_path / "site", "index.html")


def test_serve_and_build_keep_their_own_cached_pages(tmp_path: Path, vault: Vault) -> None:
    _upsert(vault, "trap", "Cookie loses SameSite", "Behind the CDN.")
    build_site(vault, out_dir=tmp_path / "a")
    build_site(vault, out_dir=tmp_path / "b", site_url="http://127.0.0.1:8000/")  # as serve does
    config = load_site_config(vault, site_dir=tmp_path / "c")
    run_build(config)
    assert memosite_plugin(config).rendered_pages == 0  # the first configuration's pages are still there


def _dashboard_pages(content: object) -> dict[str, str]:
    return {p.src_uri: p.markdown for p in content.pages if p.role in ("dashboard", "changelog")}  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("edit", "reused"),
    [
        (lambda text: text + "\nOne more line of body.\n", True),
        (lambda text: text.replace("severity: high", "severity: low"), False),
        (lambda text: text.replace("status: active", "status: archived"), False),
    ],
)
def test_a_rebuild_reuses_home_figures_only_while_what_they_show_is_unchanged(
    vault: Vault, edit: object, reused: bool
) -> None:
    from memosite.refresh import refresh_project
    from memosite.site.pages import RecordMemo, collect_site_content

    for n in range(3):
        upsert_record(
            vault, "shop", kind="trap", body=f"Trap {n}.", frontmatter={"title": f"Trap {n}", "severity": "high"}
        )
    memo = RecordMemo()
    collect_site_content(vault, prefix="memory", projects=["shop"], memo=memo)
    assert memo.dashboards is not None
    before = memo.dashboards.figures["shop"]
    path = sorted(vault.project_dir("shop").glob("traps/*.md"))[0]
    path.write_text(edit(path.read_text(encoding="utf-8")), encoding="utf-8")  # type: ignore[operator]
    refresh_project(vault, "shop")
    remembered = collect_site_content(vault, prefix="memory", projects=["shop"], memo=memo)
    fresh = collect_site_content(vault, prefix="memory", projects=["shop"])
    assert (memo.dashboards.figures["shop"] is before) is reused
    assert _dashboard_pages(remembered) == _dashboard_pages(fresh)


def _hand_record(vault: Vault, slug: str, title: str, body: str, extra: str = "") -> Path:
    path = vault.project_dir("shop") / "traps" / f"{slug}.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        f"---\nid: {slug}\nkind: trap\nproject: shop\ncreated: 2026-01-0{len(slug) % 9 + 1}\n"
        f"updated: 2026-01-01\ntitle: {title}\nseverity: high\n{extra}---\n{body}\n",
        encoding="utf-8",
    )
    return path


def _record_markdown(content: object) -> dict[str, str]:
    return {page.src_uri: page.markdown for page in content.pages if page.role == "record"}  # type: ignore[attr-defined]


CITES_SHARED = "cites:\n  - path: src/cookies.py\n"


@pytest.mark.parametrize(
    ("slug", "title", "body", "extra"),
    [
        ("alpha", "Alpha · Альфа", "Now links to [beta](beta.md) and [gamma](gamma.md).", ""),
        ("alpha", "Alpha", "Links to nothing any more.", ""),
        ("alpha", "Alpha renamed · 改名 🎉", "See [gamma](gamma.md).", ""),
        ("alpha", "Alpha", "See [gamma](gamma.md).", CITES_SHARED),
        ("alpha", "Alpha", "See [gamma](gamma.md).", "supersedes: delta\n"),
        ("delta", "Delta · دلتا", "Superseded.", "supersededBy: beta\n"),
        ("alpha", None, "", ""),
    ],
    ids=[
        "link-added",
        "link-removed",
        "title-of-a-linking-record",
        "code-shared",
        "supersedes",
        "superseded-by",
        "deleted",
    ],
)
def test_links_here_after_an_edit_in_a_long_running_build_equal_a_fresh_builds(
    vault: Vault, slug: str, title: str | None, body: str, extra: str
) -> None:
    from memosite.refresh import refresh_project
    from memosite.site.pages import RecordMemo, collect_site_content

    _hand_record(vault, "alpha", "Alpha", "See [gamma](gamma.md).")
    _hand_record(vault, "beta", "Beta", "Nothing links from here.")
    _hand_record(vault, "gamma", "Gamma · Гамма", "Links to [[alpha]].")
    _hand_record(vault, "delta", "Delta", "Cites the cookie code.", CITES_SHARED)
    _hand_record(vault, "epsilon", "Epsilon", "Also cites it.", CITES_SHARED + "supersedes: delta\n")
    refresh_project(vault, "shop")
    memo = RecordMemo()
    first = _record_markdown(collect_site_content(vault, prefix="memory", projects=["shop"], memo=memo))
    assert len(first) == 5
    if title is None:
        (vault.project_dir("shop") / "traps" / f"{slug}.md").unlink()
    else:
        _hand_record(vault, slug, title, body, extra)
    refresh_project(vault, "shop")
    remembered = _record_markdown(collect_site_content(vault, prefix="memory", projects=["shop"], memo=memo))
    fresh = _record_markdown(collect_site_content(vault, prefix="memory", projects=["shop"]))
    assert remembered == fresh
    assert remembered != first
