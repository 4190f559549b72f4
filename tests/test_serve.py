"""``memosite serve`` on loopback: changes on disk reach the served site without a restart."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from memosite.errors import InvalidArguments
from memosite.site.server import SiteServer, _reload_server_class, parse_dev_addr
from memosite.store import upsert_record
from memosite.vault import Vault

PROJECT = "shop"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def _serve_command(vault: Vault, *extra: str) -> Iterator[int]:
    """``memosite serve`` in a real process on a free port; on leaving, it is terminated and must
    have exited cleanly, without a traceback."""
    port = _free_port()
    command = [str(Path(sys.executable).with_name("memosite")), "serve", "--vault", str(vault.root)]
    command += ["--dev-addr", f"127.0.0.1:{port}", *extra]
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, encoding="utf-8", env=dict(os.environ)
    ) as process:
        try:
            yield port
        finally:
            process.terminate()
            _, stderr = process.communicate(timeout=30)
    assert process.returncode == 0, stderr
    assert "Traceback" not in stderr


def _get(url: str, timeout: float = 10.0) -> str:
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return response.read().decode("utf-8")


def _eventually(url: str, predicate, timeout: float = 180.0, request_timeout: float = 10.0) -> str:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    text = ""
    while time.monotonic() < deadline:
        try:
            text = _get(url, request_timeout)
        except (urllib.error.URLError, OSError):
            text = ""
        if predicate(text):
            return text
        time.sleep(0.1)
    raise AssertionError(f"{url} did not change within {timeout} s")


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[SiteServer, Vault]]:
    vault = Vault.open(tmp_path_factory.mktemp("serve") / "vault")
    for title, body in (
        ("Cookie loses SameSite", "Behind the CDN the cookie loses SameSite."),
        ("Retry storm", "Clients retry in lockstep after a deploy."),
        ("Locale dates", "Dates print in the server locale."),
    ):
        upsert_record(vault, PROJECT, kind="trap", body=body, frontmatter={"title": title}, allow_duplicate=True)
    server = SiteServer(vault, dev_addr=f"127.0.0.1:{_free_port()}")
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    assert server.wait_ready(60)
    yield server, vault
    server.stop()
    thread.join(30)
    vault.close()
    assert not thread.is_alive()
    assert not server.site_dir.exists()  # the temporary site is cleaned up
    # Serving kept its page cache in memory and wrote it out when it stopped: the next start is warm.
    assert list((vault.root / ".memosite" / "site-cache").glob("index-*.index"))


def _record(vault: Vault, slug: str) -> Path:
    return vault.record_path(PROJECT, "trap", slug)


def test_served_page_shows_a_record_changed_on_disk(served: tuple[SiteServer, Vault]) -> None:
    server, vault = served
    page = f"{server.url}memory/{PROJECT}/traps/cookie-loses-samesite/"
    assert "Behind the CDN" in _get(page)
    path = _record(vault, "cookie-loses-samesite")
    path.write_text(
        path.read_text(encoding="utf-8").replace("Behind the CDN", "Behind the edge proxy"), encoding="utf-8"
    )
    assert "Behind the edge proxy" in _eventually(page, lambda text: "edge proxy" in text)
    # The vault's own compiled view followed the edit as well (the watch loop runs inside serve).
    assert "edge proxy" in (vault.project_dir(PROJECT) / "TRAPS.md").read_text(encoding="utf-8")


def test_search_index_and_records_json_stay_whole_after_a_change(served: tuple[SiteServer, Vault]) -> None:
    server, vault = served
    before = json.loads(_get(f"{server.url}search/search_index.json"))["docs"]
    pages = {doc["location"].split("#")[0] for doc in before}
    path = _record(vault, "retry-storm")
    path.write_text(path.read_text(encoding="utf-8").replace("lockstep", "unison"), encoding="utf-8")
    _eventually(f"{server.url}search/search_index.json", lambda text: "unison" in text)
    after = json.loads(_get(f"{server.url}search/search_index.json"))["docs"]
    assert {doc["location"].split("#")[0] for doc in after} == pages
    records = json.loads(_get(f"{server.url}memory/records.json"))["records"]
    assert len(records) >= 3


def test_new_record_file_is_served_and_listed(served: tuple[SiteServer, Vault]) -> None:
    server, vault = served
    fresh = _record(vault, "cron-drift")
    fresh.write_text(
        "---\nid: cron-drift\nkind: trap\nproject: shop\ncreated: 2026-01-01\nupdated: 2026-01-01\n"
        "title: Cron drifts across DST\n---\nSchedule jobs in UTC.\n",
        encoding="utf-8",
    )
    _eventually(f"{server.url}memory/records.json", lambda text: "Cron drifts across DST" in text)
    assert "Schedule jobs in UTC." in _get(f"{server.url}memory/{PROJECT}/traps/cron-drift/")


@pytest.mark.slow
def test_a_secret_planted_while_serving_takes_the_site_down_until_removed(
    served: tuple[SiteServer, Vault],
) -> None:
    server, vault = served
    page = f"{server.url}memory/{PROJECT}/traps/locale-dates/"
    path = _record(vault, "locale-dates")
    original = path.read_text(encoding="utf-8")
    path.write_text(original + "\nToken: ghp_" + "Zq8" * 12 + "\n", encoding="utf-8")
    # The failed build cleared the site, and the server holds requests until a build succeeds.
    _eventually(page, lambda text: text == "", request_timeout=1.0)
    path.write_text(original + "\nUse UTC everywhere.\n", encoding="utf-8")
    assert "Use UTC everywhere." in _eventually(page, lambda text: "Use UTC everywhere." in text)
    assert "Retry storm" in _get(f"{server.url}memory/{PROJECT}/traps/retry-storm/")


def test_served_pages_carry_the_live_reload_script(served: tuple[SiteServer, Vault]) -> None:
    server, _ = served
    assert "livereload(" in _get(server.url)


def test_a_vault_change_is_built_without_a_second_quiet_period(tmp_path: Path) -> None:
    # The vault watcher already waited for its burst of events to end; the server's own watcher
    # (the site's sources) still groups its bursts with MkDocs' build delay.
    server = _reload_server_class()(builder=lambda: None, host="127.0.0.1", port=0, root=str(tmp_path))
    try:
        assert server.build_delay > 0
        server.request_rebuild()  # type: ignore[attr-defined]
        assert server.build_delay == 0
        server.vault_request_taken()  # type: ignore[attr-defined]
        assert server.build_delay > 0
    finally:
        server.server_close()


def test_serve_binds_loopback_by_default(vault: Vault) -> None:
    server = SiteServer(vault)
    assert (server.host, server.port) == ("127.0.0.1", 8000)
    assert server.url == "http://127.0.0.1:8000/"


@pytest.mark.parametrize("bad", ["8000", "localhost", "127.0.0.1:http", ":8000", "127.0.0.1:70000"])
def test_invalid_dev_addr_is_rejected(bad: str) -> None:
    with pytest.raises(InvalidArguments):
        parse_dev_addr(bad)


def test_busy_port_is_a_clear_error(vault: Vault) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        server = SiteServer(vault, dev_addr=f"127.0.0.1:{port}")
        with pytest.raises(InvalidArguments, match="cannot listen"):
            server.serve_forever()
    assert not server.site_dir.exists()


@pytest.mark.slow
def test_serve_command_serves_until_terminated(vault: Vault) -> None:
    upsert_record(
        vault,
        PROJECT,
        kind="trap",
        body="Workers share one database file.",
        frontmatter={"title": "Shared test database"},
    )
    with _serve_command(vault) as port:
        page = _eventually(
            f"http://127.0.0.1:{port}/memory/{PROJECT}/traps/shared-test-database/",
            lambda text: "Workers share one database file." in text,
            timeout=60,
        )
        assert "Shared test database" in page


@pytest.mark.slow
def test_serve_include_pending_serves_pending_records_and_the_review_page(vault: Vault) -> None:
    path = vault.record_path(PROJECT, "trap", "agent-guess")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        "---\nid: agent-guess\nkind: trap\nproject: shop\ntitle: Agent guess\nstatus: active\nsource: agent\n"
        "author: codex 2.0\nreview: pending\ncreated: '2026-01-02T10:00:00.000Z'\n"
        "updated: '2026-01-02T10:00:00.000Z'\n---\nThe queue may drop messages — キュー.\n",
        encoding="utf-8",
    )
    with _serve_command(vault, "--include-pending") as port:
        page = _eventually(
            f"http://127.0.0.1:{port}/memory/{PROJECT}/traps/agent-guess/",
            lambda text: "unreviewed" in text,
            timeout=60,
        )
        assert "The queue may drop messages — キュー." in page
        review = _get(f"http://127.0.0.1:{port}/memory/{PROJECT}/REVIEW/")
        assert "Agent guess" in review and "+The queue may drop messages — キュー." in review


def test_serve_starts_from_the_page_cache_a_build_left_and_shows_an_edit(tmp_path: Path, vault: Vault) -> None:
    from memosite.site.build import build_site, memosite_plugin

    for title in ("Café rounding", "Ошибка округления", "丸め誤差 🎉"):
        upsert_record(vault, PROJECT, kind="trap", body=f"{title}: the body.", frontmatter={"title": title})
    build_site(vault, out_dir=tmp_path / "site")
    server = SiteServer(vault, dev_addr=f"127.0.0.1:{_free_port()}")
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        assert server.wait_ready(60)
        assert server._last_config is not None
        rendered = memosite_plugin(server._last_config)._rendered
        assert {uri for uri in rendered if "/traps/" in uri} == set()  # every record page came from the cache
        page = f"{server.url}memory/{PROJECT}/traps/cafe-rounding/"
        assert "Café rounding: the body." in _get(page)
        path = _record(vault, "cafe-rounding")
        path.write_text(path.read_text(encoding="utf-8").replace("the body", "the edited body"), encoding="utf-8")
        assert "the edited body" in _eventually(page, lambda text: "the edited body" in text)
    finally:
        server.stop()
        thread.join(30)
    assert not thread.is_alive()


def _article(html_text: str) -> str:
    start = html_text.index("<article")
    return html_text[start : html_text.index("</article>", start)]


def test_a_record_page_served_after_an_edit_equals_a_cold_builds(tmp_path: Path, vault: Vault) -> None:
    import shutil

    from memosite.site.build import build_site

    for title in ("Café rounding", "Ошибка округления", "丸め誤差 🎉", "خطأ التقريب"):
        upsert_record(vault, PROJECT, kind="trap", body=f"{title}: the body.", frontmatter={"title": title})
    build_site(vault, out_dir=tmp_path / "warm")
    server = SiteServer(vault, dev_addr=f"127.0.0.1:{_free_port()}")
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        assert server.wait_ready(60)
        page = f"{server.url}memory/{PROJECT}/traps/cafe-rounding/"
        path = _record(vault, "cafe-rounding")
        path.write_text(
            path.read_text(encoding="utf-8").replace("the body", "the body, edited · правка · 編集"), encoding="utf-8"
        )
        served = _eventually(page, lambda text: "編集" in text)
        served_files = {p.relative_to(server.site_dir).as_posix() for p in server.site_dir.rglob("*") if p.is_file()}
    finally:
        server.stop()
        thread.join(30)
    shutil.rmtree(vault.root / ".memosite" / "site-cache")
    build_site(vault, out_dir=tmp_path / "cold")
    cold = (tmp_path / "cold" / "memory" / PROJECT / "traps" / "cafe-rounding" / "index.html").read_text(
        encoding="utf-8"
    )
    assert _article(served) == _article(cold)
    # The theme's files (listed once per process while serving) are the ones a cold build copies.
    cold_assets = {p.relative_to(tmp_path / "cold").as_posix() for p in (tmp_path / "cold" / "assets").rglob("*")}
    theme_files = {name for name in cold_assets if "." in name.rsplit("/", 1)[-1]}
    assert theme_files and theme_files <= served_files
