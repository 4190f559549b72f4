"""Trust on the published site (issues 14 and 12): freshness badges and the Needs review page from
real `memosite verify` verdicts against a real git repository, records waiting for review kept off
the site unless the build asks, provenance on record pages, and the Conflicts page of a real sync
conflict, the one place a sidecar's text appears. Real mkdocs builds; Chromium for the Memory page."""

from __future__ import annotations

import contextlib
import functools
import http.server
import itertools
import json
import re
import shutil
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from test_sync_support import Team, make_team

from memosite.cli import cli
from memosite.refresh import ensure_index
from memosite.schema import format_iso, utc_now
from memosite.site.build import build_site
from memosite.site.export import export_docs
from memosite.site.pages import collect_site_content
from memosite.store import upsert_record
from memosite.sync.run import sync_vault
from memosite.vault import Vault

PROJECT = "demo"
CLIENT_CODE = "".join(f"line {n}: charge(order, key={n})\n" for n in range(1, 101))
HOSTILE_AUTHOR = "[x](https://evil.example) **bold**"
HOSTILE_SESSION = "[s](https://evil.example/s) <b>sess</b>"
HOSTILE_COMMIT = "drop the [key](https://evil.example/c) `tick` <i>now</i>"
PENDING_WORD = "zebrapending"  # in every record that waits for review, and nowhere else
PENDING_TITLE = f"Cache guess ошибка 草稿 {PENDING_WORD}"
PENDING_BODY = f"Maybe the cache leaks: πρόχειρο 草稿 <b>draft</b> {PENDING_WORD}.\n"
SCANNED = (".html", ".json", ".xml", ".txt")


@dataclass
class Trusted:
    base: Path
    vault: Path
    repo: Path
    edited: str  # short sha of the commit that changed the cited lines
    default: Path  # built without pending records
    included: Path  # built with --include-pending (publish --to)


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, encoding="utf-8", check=True)
    return done.stdout.strip()


def _cli(*args: str) -> Result:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result


_WRITES = itertools.count(1)


def _upsert(kind: str, slug: str, body: str, *extra: str) -> None:
    # Each write a later `updated` than the one before (the Review page orders by it), whatever
    # the clock did between them.
    updated = format_iso(utc_now() + timedelta(seconds=next(_WRITES)))
    _cli(
        "upsert",
        "--kind",
        kind,
        "--slug",
        slug,
        "--body",
        body,
        "--frontmatter",
        json.dumps({"updated": updated}),
        *extra,
    )


@contextlib.contextmanager
def _environment(base: Path, repo: Path) -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch:
        home = base / "home"
        home.mkdir(exist_ok=True)
        patch.setenv("HOME", str(home))
        patch.setenv("MEMOSITE_VAULT", str(base / "vault"))
        patch.setenv("MEMOSITE_PROJECT", PROJECT)
        patch.setenv("GIT_CONFIG_NOSYSTEM", "1")
        patch.setenv("GIT_AUTHOR_NAME", HOSTILE_AUTHOR)
        patch.setenv("GIT_AUTHOR_EMAIL", "dev@example.org")
        patch.setenv("GIT_COMMITTER_NAME", "Dev Person")
        patch.setenv("GIT_COMMITTER_EMAIL", "dev@example.org")
        patch.chdir(repo)
        yield


@pytest.fixture(scope="module")
def trusted(tmp_path_factory: pytest.TempPathFactory) -> Trusted:
    base = tmp_path_factory.mktemp("trust")
    repo = base / "shop"
    (repo / "src/pay").mkdir(parents=True)
    (repo / "src/pay/client.py").write_text(CLIENT_CODE, encoding="utf-8")
    (repo / "src/pay/refunds.py").write_text("def refund():\n    return 1\n", encoding="utf-8")
    vault_dir = base / "vault"
    vault_dir.mkdir()
    config = {"review": {"required": ["trap", "decision"]}, "vaultGit": {"enabled": True, "atomic": True}}
    (vault_dir / "config.json").write_text(json.dumps(config), encoding="utf-8")
    with _environment(base, repo):
        _git(repo, "init", "-q")
        _git(repo, "add", "-A")
        _git(repo, "commit", "-qm", "first")
        _upsert(
            "trap",
            "inside",
            "Charges need their key.",
            "--title",
            "Retries need keys ошибка 日本語",
            "--cite",
            "src/pay/client.py:40-50",
            "--session-id",
            HOSTILE_SESSION,
        )
        _upsert("trap", "after", "Later lines.", "--title", "Late lines", "--cite", "src/pay/client.py:60-70")
        _upsert("trap", "whole", "Refunds return one.", "--title", "Refunds return one", "--cite", "src/pay/refunds.py")
        _upsert("trap", "uncited", "No code cited.", "--title", "Uncited trap")
        _upsert("decision", "db", "Use Postgres.\n", "--title", "Database choice")
        # Written by an agent: reviewed kinds wait for a person.
        _upsert("trap", "guess", PENDING_BODY, "--title", PENDING_TITLE, "--source", "agent")
        _upsert("decision", "db", f"Use MongoDB instead — 数据库 {PENDING_WORD}.\n", "--source", "agent")
        _upsert(
            "trap",
            "pending-cite",
            f"Cited, {PENDING_WORD}.",
            "--title",
            f"Pending cite {PENDING_WORD}",
            "--source",
            "agent",
            "--cite",
            "src/pay/client.py:44-46",
        )
        lines = CLIENT_CODE.splitlines(keepends=True)
        lines[44] = "line 45: charge(order)  # the key went missing\n"
        lines.insert(0, "import retry\n")
        (repo / "src/pay/client.py").write_text("".join(lines), encoding="utf-8")
        _git(repo, "commit", "-qam", HOSTILE_COMMIT)
        edited = _git(repo, "rev-parse", "--short", "HEAD")
        _git(repo, "mv", "src/pay/refunds.py", "src/pay/refund_api.py")
        _git(repo, "commit", "-qm", "rename refunds")
        _cli("verify")
        _cli("build", "--out", str(base / "default"), "--strict")
        _cli("publish", "--to", str(base / "included"), "--include-pending", "--strict")
    return Trusted(base, vault_dir, repo, edited, base / "default", base / "included")


def _html(site: Path, relative: str) -> str:
    return (site / relative).read_text(encoding="utf-8")


def _article(text: str) -> str:
    return text[text.index("<article") : text.index("</article>")]


def _page(site: Path, relative: str) -> str:
    return _article(_html(site, f"memory/{PROJECT}/{relative}/index.html"))


def _outputs(site: Path) -> dict[str, str]:
    return {
        path.relative_to(site).as_posix(): path.read_text(encoding="utf-8", errors="replace")
        for path in sorted(site.rglob("*"))
        if path.is_file() and path.name.endswith(SCANNED)
    }


def _rows(site: Path) -> dict[str, dict[str, Any]]:
    return {row["id"]: row for row in json.loads(_html(site, "memory/records.json"))["records"]}


# --- freshness -----------------------------------------------------------------------------------


@pytest.mark.slow
def test_each_record_page_carries_its_verdict_and_the_commit_it_was_checked_at(trusted: Trusted) -> None:
    head = _git(trusted.repo, "rev-parse", "HEAD")[:12]
    badges = {}
    for slug in ("inside", "after", "whole", "uncited"):
        page = _page(trusted.default, f"traps/{slug}")
        found = re.findall(r'<span class="memosite-freshness memosite-freshness--(\w+)">(\w+)</span>', page)
        badges[slug] = {text for css, text in found if css == text}
        if found:
            assert f"checked at <code>{head}</code>" in page
    assert badges == {"inside": {"drifted"}, "after": {"fresh"}, "whole": {"missing"}, "uncited": set()}
    inside = _page(trusted.default, "traps/inside")
    assert "Cited code changed" in inside and "changed lines <code>46-46</code>" in inside
    assert "renamed to <code>src/pay/refund_api.py</code>" in _page(trusted.default, "traps/whole")
    assert "now at lines <code>61-71</code>" in _page(trusted.default, "traps/after")


@pytest.mark.slow
def test_memory_rows_and_view_rows_carry_the_verdict(trusted: Trusted) -> None:
    rows = _rows(trusted.default)
    assert {k: rows[k]["freshness"] for k in ("inside", "after", "whole", "uncited")} == {
        "inside": "drifted",
        "after": "fresh",
        "whole": "missing",
        "uncited": None,
    }
    traps = _article(_html(trusted.default, f"memory/{PROJECT}/TRAPS/index.html"))
    inside = traps[traps.index("Retries need keys") :]
    assert re.match(r"(?s).*?traps/inside/[^>]*>[^<]*</a> <span class=\"memosite-freshness", inside)
    index = _article(_html(trusted.default, f"memory/{PROJECT}/INDEX/index.html"))
    assert 'memosite-freshness--missing">missing</span>' in index


@pytest.mark.slow
def test_needs_review_lists_drifted_and_missing_records_with_what_changed(trusted: Trusted) -> None:
    page = _page(trusted.default, "NEEDS-REVIEW")
    titles = re.findall(r"<h2[^>]*>(.*?)<a class=\"headerlink\"", page)
    assert [t.strip() for t in titles] == ["Refunds return one", "Retries need keys ошибка 日本語"]  # missing first
    assert "changed lines <code>46-46</code>" in page
    assert f"{trusted.edited} drop the [key](https://evil.example/c) `tick` &lt;i&gt;now&lt;/i&gt;" in page
    assert 'href="https://evil.example' not in page and "<i>now</i>" not in page
    assert "git saw it renamed to <code>src/pay/refund_api.py</code>" in page
    assert "Late lines" not in page and "Uncited" not in page and PENDING_WORD not in page
    for link in re.findall(r'href="(\.\./traps/[^"]+)"', page):
        assert (trusted.default / f"memory/{PROJECT}/NEEDS-REVIEW" / link / "index.html").resolve().is_file()
    home = _page(trusted.default, "")
    assert 'href="NEEDS-REVIEW/"' in home and "Cited code changed" in home


@pytest.mark.slow
def test_a_changed_verdict_reaches_the_cached_page_on_the_next_build(trusted: Trusted, tmp_path: Path) -> None:
    shutil.copytree(trusted.vault, tmp_path / "vault")
    shutil.copytree(trusted.repo, tmp_path / "shop")
    site = tmp_path / "site"
    vault = Vault.open(tmp_path / "vault", create=False)
    try:
        build_site(vault, out_dir=site)
        assert 'freshness--drifted">drifted' in _page(site, "traps/inside")
        with _environment(tmp_path, tmp_path / "shop"):
            _cli("verify", "--update", "inside")
        build_site(vault, out_dir=site)
    finally:
        vault.close()
    assert 'freshness--fresh">fresh' in _page(site, "traps/inside")
    assert _rows(site)["inside"]["freshness"] == "fresh"
    assert "Retries need keys" not in _page(site, "NEEDS-REVIEW")


@pytest.mark.slow
def test_one_query_reads_every_verdict_of_a_build(trusted: Trusted) -> None:
    vault = Vault.open(trusted.vault, create=False)
    try:
        ensure_index(vault)
        statements: list[str] = []
        vault.index().conn.set_trace_callback(statements.append)
        content = collect_site_content(vault, prefix="memory", projects=[PROJECT])
        vault.index().conn.set_trace_callback(None)
    finally:
        vault.close()
    assert len(content.records) > 3
    assert len([s for s in statements if "verdicts" in s]) == 1
    assert not [s for s in statements if "json_extract(frontmatter, '$.review')" in s]  # pending: from the rows


# --- review --------------------------------------------------------------------------------------


@pytest.mark.slow
def test_a_build_without_include_pending_publishes_nothing_of_a_pending_record(trusted: Trusted) -> None:
    outputs = _outputs(trusted.default)
    assert [name for name, text in outputs.items() if PENDING_WORD in text] == []
    rows = _rows(trusted.default)
    assert not {"guess", "pending-cite"} & set(rows) and all(r["review"] is None for r in rows.values())
    assert not (trusted.default / f"memory/{PROJECT}/traps/guess").exists()
    assert not (trusted.default / f"memory/{PROJECT}/REVIEW").exists()
    feed = outputs[f"memory/{PROJECT}/feed.xml"]
    assert "trap:guess" not in feed and "trap:pending-cite" not in feed
    changes = _page(trusted.default, "CHANGES")
    assert "trap:guess" not in changes and "upsert trap:inside" in changes
    home = _page(trusted.default, "")
    assert "3 records wait for review: <code>memosite review</code>" in home  # an agent's change of db too
    assert "<strong>5</strong> live of <strong>5</strong> published records" in home
    # The agent's change of the person's decision waits beside it: the site shows what a person approved.
    db = _page(trusted.default, "decisions/db")
    assert "Use Postgres." in db and "MongoDB" not in db
    decisions = re.sub(r"\s+", " ", _page(trusted.default, "DECISIONS"))
    assert "database choice" in decisions.casefold() and "MongoDB" not in decisions
    assert decisions.count('<td style="text-align:right">1</td>') == 2  # accepted and Total
    inventory = re.sub(r"\s+", "", _page(trusted.default, "INDEX"))
    assert '<td>trap</td><tdstyle="text-align:right">4</td>' in inventory
    assert '<td>decision</td><tdstyle="text-align:right">1</td>' in inventory
    overview = _article(outputs["index.html"])
    assert re.search(r"<td[^>]*>3</td>\s*</tr>", overview)  # the overview's Awaiting review column


@pytest.mark.slow
def test_include_pending_publishes_them_marked_unreviewed_with_a_review_page(trusted: Trusted) -> None:
    rows = _rows(trusted.included)
    assert {k: rows[k]["review"] for k in ("guess", "db", "pending-cite", "inside")} == {
        "guess": "pending",
        "db": None,  # the approved version; the agent's change of it is on the Review page
        "pending-cite": "pending",
        "inside": None,
    }
    guess = _page(trusted.included, "traps/guess")
    assert '<span class="memosite-review memosite-review--pending">unreviewed</span>' in guess
    review = _page(trusted.included, "REVIEW")
    titles = [t.strip() for t in re.findall(r"<h2[^>]*>(.*?)<a class=\"headerlink\"", review)]
    assert titles == [f"Pending cite {PENDING_WORD}", "Database choice", PENDING_TITLE]  # newest first
    assert review.count("memosite-review--pending") == 3
    assert "-Use Postgres." in review and f"+Use MongoDB instead — 数据库 {PENDING_WORD}." in review
    assert "&lt;b&gt;draft&lt;/b&gt;" in review and "<b>draft</b>" not in review
    assert 'class="language-diff' in review or "highlight" in review
    home = _page(trusted.included, "")
    assert 'href="REVIEW/"' in home and "wait for review" not in home
    needs = _page(trusted.included, "NEEDS-REVIEW")
    assert f"Pending cite {PENDING_WORD}" in needs and "memosite-review--pending" in needs
    search = _html(trusted.included, "search/search_index.json")
    assert PENDING_WORD in search and "traps/guess/" in search


@pytest.mark.slow
def test_provenance_shows_on_record_pages_as_text(trusted: Trusted) -> None:
    head_at_writing = _git(trusted.repo, "rev-list", "--max-parents=0", "HEAD")
    page = _page(trusted.default, "traps/inside")
    details = page[page.index("Record details") :]
    assert "<td>Source</td>\n<td>human</td>" in details
    # The author's name, as text; the e-mail address is not published unless the site asks.
    assert "<td>Author</td>\n<td>[x](https://evil.example) **bold**</td>" in details
    assert "dev@example.org" not in details
    assert f"<code>{head_at_writing}</code>" in details
    assert "<code>[s](https://evil.example/s) &lt;b&gt;sess&lt;/b&gt;</code>" in details
    guess = _page(trusted.included, "traps/guess")
    assert "<td>Source</td>\n<td>agent</td>" in guess and "<td>Review</td>\n<td>pending</td>" in guess
    for site in (trusted.default, trusted.included):
        for name, text in _outputs(site).items():
            if name.endswith(".html"):
                assert 'href="https://evil.example' not in text and "<strong>bold</strong>" not in text, name


@pytest.mark.slow
def test_export_docs_keeps_the_badges_and_leaves_pending_records_out(trusted: Trusted, tmp_path: Path) -> None:
    vault = Vault.open(trusted.vault, create=False)
    try:
        export_docs(vault, tmp_path / "docs")
        export_docs(vault, tmp_path / "with", include_pending=True)
    finally:
        vault.close()
    page = (tmp_path / f"docs/memory/{PROJECT}/traps/inside.md").read_text(encoding="utf-8")
    assert '<span class="memosite-freshness memosite-freshness--drifted">drifted</span>' in page
    exported = "".join(p.read_text(encoding="utf-8") for p in (tmp_path / "docs").rglob("*") if p.is_file())
    assert PENDING_WORD not in exported
    review = (tmp_path / f"with/memory/{PROJECT}/REVIEW.md").read_text(encoding="utf-8")
    assert PENDING_WORD in review and '<span class="memosite-review memosite-review--pending">' in review


# --- conflicts -----------------------------------------------------------------------------------

REMOTE_WORD = "sidecaronly"
REMOTE_BODY = (
    f"Remote ```` fence <img src=x onerror=alert(1)> [l](https://evil.example/r) العربية 日本語 {REMOTE_WORD}\n"
)


@pytest.fixture
def team(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Team]:
    yield from make_team(tmp_path, monkeypatch)


@pytest.mark.slow
def test_the_conflicts_page_shows_both_versions_and_alone_holds_a_sidecars_text(team: Team, tmp_path: Path) -> None:
    a, b = team.machine("a"), team.machine("b")

    def trap(vault: Vault, body: str) -> None:
        upsert_record(vault, "shop", kind="trap", slug="lock-order", body=body, frontmatter={"title": "Lock order"})

    trap(a, "Take locks in id order.\n")
    sync_vault(a)
    sync_vault(b)
    trap(a, REMOTE_BODY)
    trap(b, "Local version: ελληνικά.\n")
    sync_vault(a)
    [conflict] = sync_vault(b).conflicts
    assert REMOTE_WORD in (b.root / conflict.sidecar).read_text(encoding="utf-8")
    site = tmp_path / "site"
    build_site(b, out_dir=site, strict=True)
    holding = [name for name, text in _outputs(site).items() if REMOTE_WORD in text]
    assert holding == ["memory/shop/CONFLICTS/index.html"]
    page = _article(_html(site, "memory/shop/CONFLICTS/index.html"))
    assert f"<code>{conflict.sidecar}</code>" in page and "<code>projects/shop/traps/lock-order.md</code>" in page
    assert page.count("<td>memosite</td>") == 2 and "memosite@localhost" not in page  # both versions' authors
    assert "+Remote ```` fence &lt;img src=x onerror=alert(1)&gt;" in html_text(page)
    assert "<img" not in page and 'href="https://evil.example' not in page
    assert "-Local version: ελληνικά." in html_text(page)
    assert "memosite resolve lock-order --take in-place|sidecar" in page  # the same on every machine
    assert "<th>In place</th>" in page and "<th>Beside it (sidecar)</th>" in page
    home = _article(_html(site, "memory/shop/index.html"))
    assert 'href="CONFLICTS/"' in home and REMOTE_WORD not in home
    # Nothing to review here: the page says so, and the home does not link to it.
    assert "Nothing to review" in _article(_html(site, "memory/shop/NEEDS-REVIEW/index.html"))
    assert "NEEDS-REVIEW" not in home


@pytest.mark.slow
def test_a_conflict_of_a_pending_record_shows_its_diff_only_when_pending_records_are_included(
    tmp_path: Path,
) -> None:
    vault = Vault.open(tmp_path / "hand")
    record = vault.record_path("shop", "trap", "agent-guess")
    record.parent.mkdir(parents=True, exist_ok=True)
    front = "---\nid: agent-guess\nkind: trap\nproject: shop\ntitle: Agent guess\nstatus: active\nreview: pending\n"
    stamp = "created: '2026-01-02T10:00:00.000Z'\nupdated: '2026-01-02T10:00:00.000Z'\n---\n"
    record.write_text(f"{front}{stamp}Local {PENDING_WORD}.\n", encoding="utf-8")
    sidecar = record.with_name("agent-guess.conflict.0a1b2c3d.md")  # written by hand, as sync names them
    sidecar.write_text(f"{front}{stamp}Remote {REMOTE_WORD} ```` <b>x</b>\n", encoding="utf-8")
    try:
        build_site(vault, out_dir=tmp_path / "default")
        build_site(vault, out_dir=tmp_path / "included", include_pending=True)
    finally:
        vault.close()
    page = _article(_html(tmp_path / "default", "memory/shop/CONFLICTS/index.html"))
    assert "<code>projects/shop/traps/agent-guess.conflict.0a1b2c3d.md</code>" in page
    assert "waits for review" in page
    assert [n for n, t in _outputs(tmp_path / "default").items() if REMOTE_WORD in t or PENDING_WORD in t] == []
    holding = [n for n, t in _outputs(tmp_path / "included").items() if REMOTE_WORD in t]
    assert holding == ["memory/shop/CONFLICTS/index.html"]
    shown = _article(_html(tmp_path / "included", "memory/shop/CONFLICTS/index.html"))
    assert f"+Remote {REMOTE_WORD} ```` &lt;b&gt;x&lt;/b&gt;" in html_text(shown)


def test_without_conflicts_the_home_has_no_conflicts_link(tmp_path: Path) -> None:
    vault = Vault.open(tmp_path / "plain")
    try:
        upsert_record(vault, "shop", kind="trap", body="Quiet.", frontmatter={"title": "Quiet"})
        build_site(vault, out_dir=tmp_path / "site")
    finally:
        vault.close()
    home = _article(_html(tmp_path / "site", "memory/shop/index.html"))
    assert "CONFLICTS" not in home and "wait for review" not in home
    assert "No sync conflicts" in _article(_html(tmp_path / "site", "memory/shop/CONFLICTS/index.html"))


def html_text(page: str) -> str:
    """The text a reader sees of some HTML (tags out, entities kept as written)."""
    return re.sub(r"<[^>]+>", "", page)


# --- the Memory page in Chromium -----------------------------------------------------------------


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def served(trusted: Trusted) -> Iterator[str]:
    handler = functools.partial(_QuietHandler, directory=str(trusted.included))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()
    thread.join(10)


@pytest.mark.slow
@pytest.mark.browser
def test_the_memory_table_shows_and_filters_by_cited_code_and_marks_unreviewed_rows(served: str) -> None:
    from browser_support import chromium

    assert shutil.which("git")
    with chromium() as browser:
        page = browser.new_page()  # type: ignore[attr-defined]
        errors: list[str] = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.goto(f"{served}memory/")
        page.wait_for_selector(".memosite-memory[data-memosite-loaded]")
        row = page.locator("tr", has_text="Retries need keys")
        assert row.locator(".memosite-chip--drifted").inner_text() == "drifted"
        assert page.locator("tr", has_text=PENDING_TITLE).locator(".memosite-chip--unreviewed").count() == 1
        page.locator("select[name=freshness]").select_option("missing")
        titles = page.locator(".memosite-memory__table tbody tr td:first-child a").all_inner_texts()
        assert titles == ["Refunds return one"]
        assert "freshness=missing" in page.url
        page.locator("select[name=freshness]").select_option("")
        page.locator("th[data-sort=freshness] button").click()
        first = page.locator(".memosite-memory__table tbody tr").first
        assert first.locator(".memosite-chip--missing").count() == 1  # missing sorts first, descending
        assert not errors, errors
