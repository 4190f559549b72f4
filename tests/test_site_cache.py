"""The build's secret scan: texts found clean are remembered, a sitemap is scanned entry by entry."""

from __future__ import annotations

import re

from memosite.site.cache import Scanner

# A GitHub token shape that the secret scanner recognises.
PLANTED_TOKEN = "ghp_" + "Zq8" * 12
ENTRY = re.compile(r"(?=<url>)")


def _sitemap(locs: list[str]) -> str:
    entries = "".join(f"    <url>\n         <loc>{loc}</loc>\n    </url>\n" for loc in locs)
    return '<?xml version="1.0" encoding="UTF-8"?>\n<urlset>\n' + entries + "</urlset>\n"


def test_sitemap_secret_is_found_at_its_line_in_the_whole_file() -> None:
    text = _sitemap(["https://example.com/a/", f"https://example.com/{PLANTED_TOKEN}/", "https://example.com/c/"])
    scanner = Scanner(set())
    assert not scanner.scan_entries(text, "sitemap.xml", ENTRY)
    [finding] = scanner.findings
    assert finding.where == "sitemap.xml"
    assert finding.kind == "GitHub token"
    assert text.splitlines()[finding.line - 1].strip().startswith("<loc>https://example.com/ghp_")


def test_sitemap_grown_by_one_entry_scans_only_that_entry() -> None:
    locs = [f"https://example.com/page-{n}/" for n in range(50)]
    first = Scanner(set())
    assert first.scan_entries(_sitemap(locs), "sitemap.xml", ENTRY)
    again = Scanner(first.clean)
    grown = _sitemap([*locs, "https://example.com/new/"])
    assert again.scan_entries(grown, "sitemap.xml", ENTRY)
    new_entry = "    <url>\n         <loc>https://example.com/new/</loc>\n    </url>\n"
    # The new entry, and the closing tag that now follows it instead of the old last entry.
    assert again.scanned_bytes <= len(new_entry) + len("</urlset>\n") + len(new_entry)
    assert again.scanned_bytes < len(grown) / 10


def test_secret_in_a_new_sitemap_entry_is_found_after_clean_scans() -> None:
    locs = [f"https://example.com/page-{n}/" for n in range(5)]
    first = Scanner(set())
    assert first.scan_entries(_sitemap(locs), "sitemap.xml", ENTRY)
    again = Scanner(first.clean)
    assert not again.scan_entries(_sitemap([*locs, f"https://example.com/{PLANTED_TOKEN}/"]), "sitemap.xml", ENTRY)
    assert [f.kind for f in again.findings] == ["GitHub token"]


def test_a_token_that_highlighting_split_into_spans_is_found_whole_on_every_engine() -> None:
    # MkDocs' pages and Zensical's built pages are read by one rule: markup out, nothing added.
    half = len(PLANTED_TOKEN) // 2
    page = f'<pre><code><span class="n">{PLANTED_TOKEN[:half]}</span><span class="n">{PLANTED_TOKEN[half:]}</span>'
    scanner = Scanner(set())
    assert not scanner.scan_html(page + "</code></pre>", "memory/index.html")
    assert [f.kind for f in scanner.findings] == ["GitHub token"]


def test_a_token_in_a_link_target_is_found() -> None:
    scanner = Scanner(set())
    assert not scanner.scan_html(f'<a href="https://example.com/?t={PLANTED_TOKEN}">docs</a>', "index.html", "Title")
    assert scanner.described() == "GitHub token in index.html line 1"
