"""A rebuild costs what changed (issue 24): a record page is looked up in the page cache by what it
is made from before anything renders it, and ``memosite build`` brings its folder in step in place:
a change rewrites the page of the record and the pages that list it, a record that left loses its
page, and every other file keeps its bytes, its inode and its time."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from memosite.errors import BuildError
from memosite.site.build import build_site, load_site_config, memosite_plugin, run_build
from memosite.store import forget_record, upsert_record
from memosite.vault import Vault

PROJECT = "shop"
TITLES = ("Café rounding", "Ошибка округления", "Σφάλμα", "丸め誤差", "خطأ التقريب", "Emoji 🎉 race", "Plain lock")


def _fill(vault: Vault) -> list[Path]:
    paths = []
    for n, title in enumerate(TITLES):
        written = upsert_record(
            vault,
            PROJECT,
            kind="trap",
            body=f"{title}: body {n}.",
            slug=f"trap-{n}",
            frontmatter={"title": title, "severity": ("low", "high")[n % 2]},
        )
        paths.append(vault.root / written.path)
    upsert_record(vault, PROJECT, kind="decision", body="Keep money in cents.", slug="cents")
    return paths


def _files(site: Path) -> dict[str, tuple[int, int, bytes]]:
    """Every file of the built site: its inode, modification time and bytes."""
    found = {}
    for directory, _dirs, names in os.walk(site):
        for name in names:
            path = Path(directory) / name
            info = path.stat()
            found[path.relative_to(site).as_posix()] = (info.st_ino, info.st_mtime_ns, path.read_bytes())
    return found


# What a changed record may rewrite besides its own page: the pages that list it (its project's
# home, views and changes, the Memory page's records.json), the feeds, the search index, the
# sitemap and the folder's manifest.
_LISTINGS = (
    "memory/shop/index.html",
    "memory/shop/TRAPS/index.html",
    "memory/shop/INDEX/index.html",
    "memory/shop/CHANGES/index.html",
    "memory/records.json",
    "memory/shop/feed.xml",
    "memory/feed.xml",
    "search/search_index.json",
    "sitemap.xml",
    "sitemap.xml.gz",
    ".memosite-site.json",
)


def test_a_rebuild_after_one_change_rewrites_only_the_pages_that_depend_on_it(tmp_path: Path, vault: Vault) -> None:
    paths = _fill(vault)
    site = tmp_path / "site"
    build_site(vault, out_dir=site)
    before = _files(site)
    paths[2].write_text(paths[2].read_text(encoding="utf-8").replace("body 2", "body two"), encoding="utf-8")
    build_site(vault, out_dir=site)
    after = _files(site)
    assert after.keys() == before.keys()
    changed = {name for name in after if after[name] != before[name]}
    assert "memory/shop/traps/trap-2/index.html" in changed
    assert "body two" in after["memory/shop/traps/trap-2/index.html"][2].decode("utf-8")
    assert changed - {"memory/shop/traps/trap-2/index.html"} <= set(_LISTINGS), sorted(changed)
    for n in (0, 1, 3, 4, 5, 6):
        page = f"memory/shop/traps/trap-{n}/index.html"
        assert after[page] == before[page], page  # same bytes, same inode, same time: never written


def test_a_rebuild_with_nothing_changed_writes_no_page(tmp_path: Path, vault: Vault) -> None:
    _fill(vault)
    site = tmp_path / "site"
    build_site(vault, out_dir=site)
    before = _files(site)
    build_site(vault, out_dir=site)
    after = _files(site)
    assert {name for name in after if after[name] != before[name]} <= {"sitemap.xml.gz", ".memosite-site.json"}


def test_a_purged_records_page_goes_and_every_other_stays(tmp_path: Path, vault: Vault) -> None:
    _fill(vault)
    site = tmp_path / "site"
    build_site(vault, out_dir=site)
    before = _files(site)
    forget_record(vault, PROJECT, record_id="trap-4", purge=True)
    build_site(vault, out_dir=site)
    after = _files(site)
    assert not (site / "memory/shop/traps/trap-4").exists()
    assert before.keys() - after.keys() == {"memory/shop/traps/trap-4/index.html"}
    for n in (0, 1, 2, 3, 5, 6):
        page = f"memory/shop/traps/trap-{n}/index.html"
        assert after[page] == before[page], page


def test_a_warm_build_renders_only_the_changed_record_and_gathers_no_other_page(tmp_path: Path, vault: Vault) -> None:
    paths = _fill(vault)
    build_site(vault, out_dir=tmp_path / "site")
    paths[0].write_text(paths[0].read_text(encoding="utf-8").replace("body 0", "body zero"), encoding="utf-8")
    config = load_site_config(vault, site_dir=tmp_path / "plain")
    run_build(config)
    plugin = memosite_plugin(config)
    assert {uri for uri in plugin._rendered if "/traps/" in uri} == {"memory/shop/traps/trap-0.md"}
    assert plugin._content is not None
    unrendered = {page.src_uri for page in plugin._content.pages if page.role == "record" and not page.markdown}
    assert unrendered == {f"memory/shop/traps/trap-{n}.md" for n in range(1, 7)} | {"memory/shop/decisions/cents.md"}
    # Built by plain MkDocs (no destination to update): the cached pages are copied into its folder.
    assert (tmp_path / "plain/memory/shop/traps/trap-3/index.html").is_file()


def test_a_rebuild_refused_for_a_secret_leaves_the_folder_as_it_was(tmp_path: Path, vault: Vault) -> None:
    paths = _fill(vault)
    site = tmp_path / "site"
    build_site(vault, out_dir=site)
    before = _files(site)
    token = "ghp_" + "Zq8" * 12
    paths[1].write_text(paths[1].read_text(encoding="utf-8").replace("body 1", token), encoding="utf-8")
    with pytest.raises(BuildError, match="refusing to publish"):
        build_site(vault, out_dir=site)
    assert _files(site) == before
    assert [p.name for p in tmp_path.iterdir() if "memosite-build" in p.name] == []  # no staging left


def test_a_link_planted_for_a_gone_records_folder_never_removes_a_file_outside_the_site(
    tmp_path: Path, vault: Vault
) -> None:
    _fill(vault)
    site = tmp_path / "site"
    build_site(vault, out_dir=site)
    outside = tmp_path / "outside"
    (site / "memory/shop/traps/trap-5").rename(outside)  # the very page memosite wrote, now elsewhere
    (site / "memory/shop/traps/trap-5").symlink_to(outside, target_is_directory=True)
    forget_record(vault, PROJECT, record_id="trap-5", purge=True)
    build_site(vault, out_dir=site)
    assert (outside / "index.html").is_file()  # the rebuild removed nothing through the link
