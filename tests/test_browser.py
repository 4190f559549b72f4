"""The built site in real headless Chromium (Debian's, through Playwright): Memory page, search, banners."""

from __future__ import annotations

import functools
import http.server
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from memosite.site.build import build_site
from memosite.store import upsert_record
from memosite.vault import Vault

pytestmark = pytest.mark.browser

PROJECT = "shop"
ACTIVE = "Payment retries need idempotency keys"
EXPIRED = "Staging used personal credentials"
OLD_DECISION = "Orders live in PostgreSQL"
RECENT = "Cookie loses SameSite"
HOSTILE = '<img src=x onerror="window.__pwned = 1">'
SCRIPTS = "Cache key lost after a deploy"
SCRIPTS_BODY = "Ключ кэша теряется после деплоя. Η κλειδαριά χάνεται. المفتاح مطلوب دائما. 数据库迁移会锁表几分钟。"


def _fill(vault: Vault) -> None:
    def upsert(kind: str, title: str, body: str, **frontmatter: object) -> None:
        upsert_record(
            vault, PROJECT, kind=kind, body=body, frontmatter={"title": title, **frontmatter}, allow_duplicate=True
        )

    upsert(
        "trap",
        ACTIVE,
        "Retrying a charge without a key double-charges, as the zanzibar incident showed.",
        severity="critical",
        created="2021-04-01T00:00:00.000Z",
    )
    upsert(
        "trap",
        EXPIRED,
        "The deploy script read the developer's shell credentials.",
        severity="medium",
        created="2021-01-01T00:00:00.000Z",
        expires_at="2021-03-01",
    )
    upsert(
        "decision", OLD_DECISION, "One transactional store for payments and stock.", created="2020-06-01T00:00:00.000Z"
    )
    upsert("trap", RECENT, "Behind the CDN the session cookie loses SameSite.", severity="high")
    upsert("trap", HOSTILE, "A title that tries to be markup.", severity="low")
    upsert("trap", SCRIPTS, SCRIPTS_BODY, severity="low")


BUILT: dict[str, Path] = {}


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def site_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    base = tmp_path_factory.mktemp("browser")
    handler = functools.partial(_QuietHandler, directory=str(base / "site"))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    url = f"http://127.0.0.1:{server.server_address[1]}/"
    vault = Vault.open(base / "vault")
    _fill(vault)
    # Instant navigation only follows links listed in sitemap.xml, which needs the site's URL.
    build_site(vault, out_dir=base / "site", site_url=url)
    vault.close()
    BUILT["site"] = base / "site"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield url
    server.shutdown()
    server.server_close()
    thread.join(10)


@pytest.fixture
def page(browser: object) -> Iterator[object]:
    context = browser.new_context()  # type: ignore[attr-defined]
    opened = context.new_page()
    opened.set_default_timeout(60_000)
    errors: list[str] = []
    opened.on("pageerror", lambda error: errors.append(str(error)))
    yield opened
    context.close()
    assert not errors, errors


def _memory(page: object, site_url: str) -> None:
    page.goto(f"{site_url}memory/")  # type: ignore[attr-defined]
    page.wait_for_selector(".memosite-memory[data-memosite-loaded]")  # type: ignore[attr-defined]


def _titles(page: object) -> list[str]:
    return page.locator(".memosite-memory__table tbody tr td:first-child a").all_inner_texts()  # type: ignore[attr-defined]


@pytest.mark.slow
def test_memory_page_hides_expired_record_until_the_toggle_is_off(page: object, site_url: str) -> None:
    _memory(page, site_url)
    assert page.locator("input[name=hideExpired]").is_checked()  # type: ignore[attr-defined]
    titles = _titles(page)
    assert ACTIVE in titles and RECENT in titles and EXPIRED not in titles
    page.locator("input[name=hideExpired]").uncheck()  # type: ignore[attr-defined]
    assert EXPIRED in _titles(page)
    expired_row = page.locator("tr", has_text=EXPIRED)  # type: ignore[attr-defined]
    assert expired_row.locator(".memosite-chip--expired").inner_text() == "expired"


def test_as_of_narrows_the_table_to_the_records_active_that_day(page: object, site_url: str) -> None:
    _memory(page, site_url)
    page.locator("input[name=asOf]").fill("2021-02-01")  # type: ignore[attr-defined]
    assert sorted(_titles(page)) == sorted([OLD_DECISION, EXPIRED])
    page.locator("input[name=asOf]").fill("2021-05-01")  # type: ignore[attr-defined]
    assert sorted(_titles(page)) == sorted([OLD_DECISION, ACTIVE])  # the staging trap expired in March
    page.locator("input[name=hideExpired]").uncheck()  # type: ignore[attr-defined]
    assert sorted(_titles(page)) == sorted([OLD_DECISION, ACTIVE])  # As Of's own bound still holds


def test_filters_and_sorting_work_together(page: object, site_url: str) -> None:
    _memory(page, site_url)
    page.locator("select[name=kind]").select_option("trap")  # type: ignore[attr-defined]
    assert OLD_DECISION not in _titles(page)
    page.locator("select[name=severity]").select_option("critical")  # type: ignore[attr-defined]
    assert _titles(page) == [ACTIVE]
    page.locator("select[name=severity]").select_option("")  # type: ignore[attr-defined]
    page.locator("th[data-sort=title] button").click()  # type: ignore[attr-defined]
    titles = _titles(page)
    assert titles == sorted(titles, key=str.lower)
    page.locator("input[name=q]").fill("samesite")  # type: ignore[attr-defined]
    assert _titles(page) == [RECENT]


def test_memory_table_shows_record_text_as_text(page: object, site_url: str) -> None:
    _memory(page, site_url)
    assert HOSTILE in _titles(page)
    assert page.evaluate("window.__pwned === undefined")  # type: ignore[attr-defined]


def test_search_box_finds_a_trap_by_a_word_from_its_body(page: object, site_url: str) -> None:
    page.goto(site_url)  # type: ignore[attr-defined]
    page.locator("input.md-search__input").click()  # type: ignore[attr-defined]
    # Typed key by key, as a person does: the search box reacts to key presses.
    page.locator("input.md-search__input").press_sequentially("zanzibar", delay=20)  # type: ignore[attr-defined]
    result = page.locator(".md-search-result__item", has_text=ACTIVE).first  # type: ignore[attr-defined]
    result.wait_for()
    assert "traps/payment-retries-need-idempotency-keys/" in result.locator("a").first.get_attribute("href")


@pytest.mark.parametrize("word", ["теряется", "κλειδαριά", "مطلوب", "锁表"])
def test_search_box_finds_a_record_by_a_word_in_another_script(page: object, site_url: str, word: str) -> None:
    # Put in the box at once, as an input method does (Playwright types characters a US keyboard
    # lacks as text alone, with no key events, and the search box reacts to key events).
    page.goto(site_url)  # type: ignore[attr-defined]
    box = page.locator("input.md-search__input")  # type: ignore[attr-defined]
    box.click()
    box.fill(word)
    box.press("End")
    result = page.locator(".md-search-result__item", has_text=SCRIPTS).first  # type: ignore[attr-defined]
    result.wait_for()
    assert "traps/cache-key-lost-after-a-deploy/" in result.locator("a").first.get_attribute("href")
    assert word in result.inner_text()


def test_expired_record_page_shows_its_banner(page: object, site_url: str) -> None:
    page.goto(f"{site_url}memory/{PROJECT}/traps/staging-used-personal-credentials/")  # type: ignore[attr-defined]
    banner = page.locator(".admonition.warning")  # type: ignore[attr-defined]
    assert banner.locator(".admonition-title").inner_text() == "Expired"
    assert "2021-03-01" in banner.inner_text()


@pytest.mark.slow
def test_a_long_record_title_takes_the_lines_it_needs_and_no_more(browser: object, site_url: str) -> None:
    # The title's hidden permalink must not wrap onto a line of its own (an empty band).
    page = browser.new_page(viewport={"width": 1280, "height": 900})  # type: ignore[attr-defined]
    page.goto(f"{site_url}memory/{PROJECT}/traps/cookie-loses-samesite/")
    for width in range(360, 1300, 9):  # somewhere the words end just short of the line's end
        page.set_viewport_size({"width": width, "height": 900})
        lines = page.evaluate(
            """() => { const h = document.querySelector('article h1');
                const r = document.createRange(); r.selectNodeContents(h.firstChild);
                const text = r.getClientRects().length;  // lines the words themselves take
                const line = parseFloat(getComputedStyle(h).lineHeight);
                return [Math.round(h.getBoundingClientRect().height / line), text]; }"""
        )
        assert lines[0] == lines[1], (width, lines)
    page.close()


def test_memory_page_loads_through_instant_navigation(page: object, site_url: str) -> None:
    page.goto(site_url)  # type: ignore[attr-defined]
    page.evaluate("window.__sameDocument = true")  # type: ignore[attr-defined]
    page.locator("nav.md-nav--primary a", has_text="All records").first.click()  # type: ignore[attr-defined]
    page.wait_for_selector(".memosite-memory[data-memosite-loaded]")  # type: ignore[attr-defined]
    assert page.evaluate("window.__sameDocument === true")  # type: ignore[attr-defined]
    assert ACTIVE in _titles(page) and EXPIRED not in _titles(page)


def test_filters_live_in_the_url_and_a_shared_link_restores_them(page: object, site_url: str) -> None:
    _memory(page, site_url)
    page.locator("select[name=kind]").select_option("trap")  # type: ignore[attr-defined]
    page.locator("input[name=q]").fill("samesite")  # type: ignore[attr-defined]
    page.locator("input[name=hideExpired]").uncheck()  # type: ignore[attr-defined]
    shared = page.url  # type: ignore[attr-defined]
    assert "kind=trap" in shared and "q=samesite" in shared and "hideExpired=0" in shared
    page.goto("about:blank")  # type: ignore[attr-defined]
    page.goto(shared)  # type: ignore[attr-defined]
    page.wait_for_selector(".memosite-memory[data-memosite-loaded]")  # type: ignore[attr-defined]
    assert page.locator("select[name=kind]").input_value() == "trap"  # type: ignore[attr-defined]
    assert not page.locator("input[name=hideExpired]").is_checked()  # type: ignore[attr-defined]
    assert _titles(page) == [RECENT]
    page.goto(f"{site_url}memory/?project={PROJECT}&kind=decision")  # type: ignore[attr-defined]
    page.wait_for_selector(".memosite-memory[data-memosite-loaded]")  # type: ignore[attr-defined]
    assert _titles(page) == [OLD_DECISION]


def test_an_empty_result_says_so(page: object, site_url: str) -> None:
    _memory(page, site_url)
    empty = page.locator(".memosite-memory__empty")  # type: ignore[attr-defined]
    assert not empty.is_visible()
    page.locator("input[name=q]").fill("no-such-record-anywhere")  # type: ignore[attr-defined]
    assert empty.is_visible() and "No records match these filters" in empty.inner_text()
    assert page.locator(".memosite-memory__count").inner_text().startswith("Showing 0 of")  # type: ignore[attr-defined]


def test_chips_follow_the_as_of_date(page: object, site_url: str) -> None:
    _memory(page, site_url)
    page.locator("input[name=hideExpired]").uncheck()  # type: ignore[attr-defined]
    row = page.locator("tr", has_text=EXPIRED)  # type: ignore[attr-defined]
    assert row.locator(".memosite-chip--expired").count() == 1  # expired by now
    page.locator("input[name=asOf]").fill("2021-02-01")  # type: ignore[attr-defined]
    assert row.locator(".memosite-chip--expired").count() == 0  # not yet expired on that day


def test_the_whole_header_cell_sorts(page: object, site_url: str) -> None:
    _memory(page, site_url)
    header = page.locator("th[data-sort=title]")  # type: ignore[attr-defined]
    box = header.bounding_box()
    page.mouse.click(box["x"] + box["width"] - 3, box["y"] + box["height"] - 3)  # type: ignore[attr-defined]
    assert header.get_attribute("aria-sort") == "ascending"
    titles = _titles(page)
    assert titles == sorted(titles, key=str.lower)


def test_on_a_390_px_screen_the_table_scrolls_inside_its_box(browser: object, site_url: str) -> None:
    context = browser.new_context(viewport={"width": 390, "height": 844})  # type: ignore[attr-defined]
    try:
        page = context.new_page()
        _memory(page, site_url)
        widths = page.evaluate(
            """() => {
              const box = document.querySelector('.memosite-memory__scroll');
              return [box.scrollWidth, box.clientWidth, document.documentElement.scrollWidth, window.innerWidth];
            }"""
        )
        assert widths[0] > widths[1]  # the table is wider than its box, and scrolls there
        assert widths[2] <= widths[3]  # the page itself does not scroll sideways
    finally:
        context.close()


def test_opened_from_disk_the_memory_page_says_why_it_has_no_table(page: object, site_url: str) -> None:
    memory = (BUILT["site"] / "memory" / "index.html").as_uri()
    page.goto(memory)  # type: ignore[attr-defined]
    page.wait_for_selector(".memosite-memory[data-memosite-failed]")  # type: ignore[attr-defined]
    text = page.locator(".memosite-memory__count").inner_text()  # type: ignore[attr-defined]
    assert "file://" in text and "http.server" in text
