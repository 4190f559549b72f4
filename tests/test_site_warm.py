"""A warm build (a new build, the page cache of the last one kept) publishes exactly what a cold
build of the same vault publishes, after every kind of change, and works again only on the records
the change reaches (issue 24): each test changes the vault, builds the kept site again, builds a
second site with no page cache at all, and compares the two folders file by file."""

from __future__ import annotations

import logging
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from site_support import site_files

from memosite.plugin import MemositePlugin
from memosite.site.build import build_site, load_site_config, memosite_plugin, run_build
from memosite.site.cache import CACHE_DIR
from memosite.site.destination import GENERATOR, MANIFEST
from memosite.site.manifest import manifest_key, read_manifest
from memosite.store import forget_record, upsert_record
from memosite.vault import Vault

PROJECT = "shop"
TITLES = ("Café rounding", "Ошибка округления", "Σφάλμα", "丸め誤差", "خطأ التقريب", "Emoji 🎉 race", "Plain lock")
# The one thing two builds of the same vault may disagree on: when each compiled its views.


def _fill(vault: Vault) -> None:
    for n, title in enumerate(TITLES):
        upsert_record(
            vault,
            PROJECT,
            kind="trap",
            # Each trap names the next one, so "Links here" ties the pages together.
            body=f"{title}: body {n}. See [[trap-{(n + 1) % len(TITLES)}]].",
            slug=f"trap-{n}",
            frontmatter={"title": title, "severity": ("low", "high")[n % 2]},
        )
    upsert_record(vault, PROJECT, kind="decision", body="Keep money in cents.", slug="cents")


def _tree(site: Path) -> dict[str, bytes]:
    return site_files(site, leave_out={MANIFEST})


def _cold(vault: Vault, out_dir: Path, **options: str) -> dict[str, bytes]:
    """A build of ``vault`` with no page cache (the kept one is set aside, then put back)."""
    cache = vault.internal_dir / CACHE_DIR
    aside = out_dir.parent / f"{out_dir.name}-cache-aside"
    if cache.exists():
        shutil.move(cache, aside)
    try:
        build_site(vault, out_dir=out_dir, **options)  # type: ignore[arg-type]
    finally:
        shutil.rmtree(cache, ignore_errors=True)
        if aside.exists():
            shutil.move(aside, cache)
    return _tree(out_dir)


def _assert_same(warm: dict[str, bytes], cold: dict[str, bytes]) -> None:
    assert warm.keys() == cold.keys()
    assert [name for name in sorted(warm) if warm[name] != cold[name]] == []


def _warm_equals_cold(tmp_path: Path, vault: Vault, change: Callable[[Vault], None], **options: str) -> None:
    _fill(vault)
    build_site(vault, out_dir=tmp_path / "warm")
    change(vault)
    build_site(vault, out_dir=tmp_path / "warm", **options)  # type: ignore[arg-type]
    _assert_same(_tree(tmp_path / "warm"), _cold(vault, tmp_path / "cold", **options))


def _record(vault: Vault, kind_dir: str, slug: str) -> Path:
    return vault.root / "projects" / PROJECT / kind_dir / f"{slug}.md"


def _edit(vault: Vault) -> None:
    path = _record(vault, "traps", "trap-2")
    path.write_text(path.read_text(encoding="utf-8").replace("body 2", "тело два 🎉"), encoding="utf-8")


def _new_record_linking_to_an_old_one(vault: Vault) -> None:
    upsert_record(vault, PROJECT, kind="trap", body="Also read [[trap-4]] (خطأ).", slug="trap-new")


def _delete(vault: Vault) -> None:
    forget_record(vault, PROJECT, record_id="trap-3", purge=True)


def _rename(vault: Vault) -> None:
    # By hand: the file moves to a new slug, its id (and the wiki links naming it) stay.
    old = _record(vault, "traps", "trap-5")
    old.rename(old.with_name("trap-five.md"))


def _supersede(vault: Vault) -> None:
    upsert_record(
        vault,
        PROJECT,
        kind="decision",
        body="Keep money in μ-cents.",
        slug="micro",
        frontmatter={"supersedes": "cents"},
    )


def _template(vault: Vault) -> None:
    from memosite.resources import data_path

    own = vault.root / "templates" / "site"
    own.mkdir(parents=True)
    original = (data_path("templates") / "site" / "record.md.j2").read_text(encoding="utf-8")
    (own / "record.md.j2").write_text(original + "\n\n*Ξ vault template*\n", encoding="utf-8")


@pytest.mark.parametrize(
    "change",
    [_edit, _new_record_linking_to_an_old_one, _delete, _rename, _supersede, _template],
    ids=["edit", "new-record", "deletion", "rename", "supersession", "template"],
)
def test_a_warm_build_publishes_what_a_cold_build_publishes(
    tmp_path: Path, vault: Vault, change: Callable[[Vault], None]
) -> None:
    _warm_equals_cold(tmp_path, vault, change)


def test_a_warm_build_after_a_configuration_change_publishes_what_a_cold_build_publishes(
    tmp_path: Path, vault: Vault
) -> None:
    _warm_equals_cold(tmp_path, vault, _edit, site_name="Лавка — mémoire")


def test_a_warm_build_shows_a_new_link_on_the_page_it_points_at(tmp_path: Path, vault: Vault) -> None:
    _fill(vault)
    build_site(vault, out_dir=tmp_path / "site")
    _new_record_linking_to_an_old_one(vault)
    build_site(vault, out_dir=tmp_path / "site")
    assert "trap-new" in (tmp_path / "site/memory/shop/traps/trap-4/index.html").read_text(encoding="utf-8")


def _link_by_hand(vault: Vault, target: str) -> None:
    """trap-1's body gains Markdown links (as a person writes them) to the record ``target``."""
    path = _record(vault, "traps", "trap-1")
    text = path.read_text(encoding="utf-8")
    path.write_text(f"{text}\nSee [Σφάλμα]({target}.md#same) and [丸め]({target}.md).\n", encoding="utf-8")


def test_a_warm_build_after_a_linked_record_is_deleted_publishes_the_links_a_cold_build_publishes(
    tmp_path: Path, vault: Vault
) -> None:
    _fill(vault)
    _link_by_hand(vault, "trap-3")
    build_site(vault, out_dir=tmp_path / "warm")
    _delete(vault)  # trap-1's own file is unchanged: only the page its links lead to is gone
    build_site(vault, out_dir=tmp_path / "warm")
    _assert_same(_tree(tmp_path / "warm"), _cold(vault, tmp_path / "cold"))
    assert b'href="trap-3.md"' in _tree(tmp_path / "warm")["memory/shop/traps/trap-1/index.html"]


def test_a_warm_build_after_a_linked_record_is_written_publishes_the_links_a_cold_build_publishes(
    tmp_path: Path, vault: Vault
) -> None:
    _fill(vault)
    _link_by_hand(vault, "trap-later")
    build_site(vault, out_dir=tmp_path / "warm")
    upsert_record(vault, PROJECT, kind="trap", body="Written after the link to it (Ошибка).", slug="trap-later")
    build_site(vault, out_dir=tmp_path / "warm")
    _assert_same(_tree(tmp_path / "warm"), _cold(vault, tmp_path / "cold"))
    assert b'href="../trap-later/"' in _tree(tmp_path / "warm")["memory/shop/traps/trap-1/index.html"]


def test_a_record_page_the_nav_lists_by_path_keeps_its_title_in_a_warm_build(tmp_path: Path, vault: Vault) -> None:
    # A person's mkdocs.yml lists a record in its nav without a title: MkDocs takes the title from
    # the page, which a warm build never reads (the page comes from the page cache).
    from memosite.resources import data_path

    sources = data_path("site_src")
    text = data_path("mkdocs.yml").read_text(encoding="utf-8")
    text = text.replace("docs_dir: site_src", f"docs_dir: {sources.as_posix()}")
    text = text.replace("custom_dir: site_src/overrides", f"custom_dir: {(sources / 'overrides').as_posix()}")
    nav = "nav:\n  - Home: index.md\n  - Memory:\n    - memory/shop/traps/trap-1.md\n"
    (tmp_path / "mkdocs.yml").write_text(text.replace("nav:\n  - Home: index.md\n", nav), encoding="utf-8")
    options = {"config_file": str(tmp_path / "mkdocs.yml")}
    _fill(vault)
    build_site(vault, out_dir=tmp_path / "warm", **options)  # type: ignore[arg-type]
    _edit(vault)
    build_site(vault, out_dir=tmp_path / "warm", **options)  # type: ignore[arg-type]
    _assert_same(_tree(tmp_path / "warm"), _cold(vault, tmp_path / "cold", **options))
    assert TITLES[1].encode() in _tree(tmp_path / "warm")["index.html"]


def _fresh_build(vault: Vault, site: Path) -> MemositePlugin:
    """One build by a new plugin (as a new ``memosite build`` process makes), for its counts."""
    config = load_site_config(vault, site_dir=site)
    run_build(config)
    return memosite_plugin(config)


def test_a_warm_build_makes_records_json_rows_only_for_changed_records(tmp_path: Path, vault: Vault) -> None:
    _fill(vault)
    _fresh_build(vault, tmp_path / "first")
    _edit(vault)
    plugin = _fresh_build(vault, tmp_path / "second")
    assert plugin.rows_made == 1
    # The edited trap's page, and the page whose "Links here" lists it (trap-2 names trap-3).
    rendered = {uri for uri in plugin._rendered if "/traps/" in uri or "/decisions/" in uri}
    assert rendered == {"memory/shop/traps/trap-2.md", "memory/shop/traps/trap-3.md"}


def test_a_warm_build_with_nothing_changed_makes_no_row_and_renders_no_record(tmp_path: Path, vault: Vault) -> None:
    _fill(vault)
    _fresh_build(vault, tmp_path / "first")
    plugin = _fresh_build(vault, tmp_path / "second")
    assert plugin.rows_made == 0
    assert not {uri for uri in plugin._rendered if "/traps/" in uri or "/decisions/" in uri}


def test_a_moved_site_folder_is_read_once_and_stat_ed_after(tmp_path: Path, vault: Vault) -> None:
    # A copy keeps every byte but gives each file a new inode and time: the first build into it
    # reads the files to know them as memosite's, and records their new stat for the next one.
    _fill(vault)
    build_site(vault, out_dir=tmp_path / "site")
    shutil.copytree(tmp_path / "site", tmp_path / "moved")
    shutil.rmtree(tmp_path / "site")
    build_site(vault, out_dir=tmp_path / "moved")
    manifest = read_manifest(tmp_path / "moved" / MANIFEST, GENERATOR, manifest_key())
    assert manifest is not None
    for name, written in manifest.files.items():
        info = os.lstat(tmp_path / "moved" / name)
        assert (written.inode, written.mtime_ns, written.size) == (info.st_ino, info.st_mtime_ns, info.st_size), name


def _new_project(vault: Vault) -> None:
    upsert_record(vault, "garden", kind="trap", body="Ρίζα 🌱 — see the shop's [[trap-1]].", slug="root")


def test_a_warm_build_after_a_project_is_added_publishes_what_a_cold_build_publishes(
    tmp_path: Path, vault: Vault
) -> None:
    _warm_equals_cold(tmp_path, vault, _new_project)


def test_a_warm_build_with_a_site_url_publishes_the_sitemap_and_search_index_of_a_cold_build(
    tmp_path: Path, vault: Vault
) -> None:
    # Pages taken from the page cache are never read by MkDocs: its sitemap would leave them out.
    url = "https://example.org/лавка/"
    _fill(vault)
    build_site(vault, out_dir=tmp_path / "warm", site_url=url)
    _edit(vault)
    build_site(vault, out_dir=tmp_path / "warm", site_url=url)
    warm, cold = _tree(tmp_path / "warm"), _cold(vault, tmp_path / "cold", site_url=url)
    _assert_same(warm, cold)
    sitemap = warm["sitemap.xml"].decode("utf-8")
    for n in range(len(TITLES)):
        assert f"/memory/shop/traps/trap-{n}/</loc>" in sitemap
    assert b"trap-0" in warm["search/search_index.json"]


def test_a_warm_build_hands_mkdocs_only_the_record_pages_it_renders(tmp_path: Path, vault: Vault) -> None:
    _fill(vault)
    _fresh_build(vault, tmp_path / "first")
    _edit(vault)
    plugin = _fresh_build(vault, tmp_path / "second")
    handed = {uri for uri in plugin._files_by_uri if uri not in plugin._withheld}
    records = {uri for uri in handed if "/traps/" in uri or "/decisions/" in uri}
    assert records == {"memory/shop/traps/trap-2.md", "memory/shop/traps/trap-3.md"}
    assert plugin.pages_handed_to_mkdocs == len(handed)
    assert len(plugin._withheld) == len(TITLES) + 1 - len(records)


def test_a_record_whose_links_here_changed_is_handed_to_mkdocs_again(tmp_path: Path, vault: Vault) -> None:
    _fill(vault)
    _fresh_build(vault, tmp_path / "first")
    _new_record_linking_to_an_old_one(vault)
    plugin = _fresh_build(vault, tmp_path / "second")
    assert "memory/shop/traps/trap-4.md" not in plugin._withheld
    assert "memory/shop/traps/trap-4.md" in plugin._rendered
    assert "memory/shop/traps/trap-0.md" in plugin._withheld


def test_links_to_withheld_pages_are_not_reported_as_links_to_excluded_pages(
    tmp_path: Path, vault: Vault, caplog: pytest.LogCaptureFixture
) -> None:
    # The rendered trap-2 lists trap-1 under "Links here": trap-1 is withheld, and published.
    _fill(vault)
    build_site(vault, out_dir=tmp_path / "site")
    _edit(vault)
    caplog.set_level(logging.DEBUG)
    build_site(vault, out_dir=tmp_path / "site")
    assert not [r.getMessage() for r in caplog.records if "excluded from the built site" in r.getMessage()]
    assert (tmp_path / "site/memory/shop/traps/trap-1/index.html").is_file()


def _thresholds_during(build: Callable[[], object]) -> list[tuple[int, int, int]]:
    """The cycle collector's thresholds at each collection it ran during ``build``."""
    import gc

    seen: list[tuple[int, int, int]] = []

    def note(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            seen.append(gc.get_threshold())

    gc.collect()
    gc.callbacks.append(note)
    try:
        build()
    finally:
        gc.callbacks.remove(note)
    return seen


def test_a_build_runs_the_cycle_collector_rarely_and_gives_its_thresholds_back(tmp_path: Path, vault: Vault) -> None:
    import gc

    from memosite.site.collector import BUILD_THRESHOLDS

    _fill(vault)
    build_site(vault, out_dir=tmp_path / "site")
    _edit(vault)
    before = gc.get_threshold()
    seen = _thresholds_during(lambda: build_site(vault, out_dir=tmp_path / "site"))
    assert gc.get_threshold() == before
    # A build makes far more than 10,000 objects: the collector ran, at the build's pace, except
    # at most once when the thresholds came back (what the build left counts against them then).
    assert seen
    assert sum(1 for threshold in seen if threshold < BUILD_THRESHOLDS) <= 1, seen


def test_a_failed_build_gives_the_cycle_collectors_thresholds_back(tmp_path: Path, vault: Vault) -> None:
    import gc

    from memosite.errors import MemositeError

    _fill(vault)
    (tmp_path / "mkdocs.yml").write_text(
        "site_name: ✗\nplugins:\n  - memosite\n  - no-such-plugin-ж\n", encoding="utf-8"
    )
    before = gc.get_threshold()
    with pytest.raises(MemositeError):
        build_site(vault, out_dir=tmp_path / "site", config_file=tmp_path / "mkdocs.yml")
    assert gc.get_threshold() == before
