"""Material's sidebar rendered once per group of record pages, and its search box and palette once
a build, come out exactly as Material renders them into every page: the whole site is
byte-for-byte the site rendered page by page."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from mkdocs.theme import Theme
from mkdocs.utils import get_relative_url
from site_support import SCRIPTS, build_uncached

from memosite.demo import write_demo_vault
from memosite.site.theme_reuse import ThemeReuse, _page_folder, _parts
from memosite.store import upsert_record
from memosite.vault import Vault


def _build_both_ways(vault: Vault, tmp_path: Path, **overrides: object) -> tuple[dict[bool, dict[str, bytes]], int]:
    built: dict[bool, dict[str, bytes]] = {}
    reused = 0
    for reuse in (True, False):
        plugin, built[reuse] = build_uncached(
            vault, tmp_path / f"site-{reuse}", config=overrides, reuse_theme_partials=reuse
        )
        if reuse:
            reused = plugin.reused_nav_sidebars
        else:
            assert plugin.reused_nav_sidebars == 0
    return built, reused


def _records_in_many_scripts(vault: Vault) -> None:
    write_demo_vault(vault)
    for n, text in enumerate(SCRIPTS):
        for kind in ("trap", "decision"):
            upsert_record(
                vault,
                "demo",
                kind=kind,
                body=f"## {text}\n\nOn {text}.\n\n## {text}\n",
                frontmatter={"title": f"{text} {n}"},
                allow_duplicate=True,
            )


@pytest.mark.parametrize("directory_urls", [True, False])
def test_the_site_built_with_reused_sidebars_is_byte_for_byte_the_site_material_renders(
    vault: Vault, tmp_path: Path, directory_urls: bool
) -> None:
    _records_in_many_scripts(vault)
    built, reused = _build_both_ways(vault, tmp_path, use_directory_urls=directory_urls)
    assert reused > 10
    assert built[True].keys() == built[False].keys()
    differing = [name for name in built[True] if built[True][name] != built[False][name]]
    assert differing == []


def test_a_link_into_a_record_pages_folder_is_written_for_that_page_alone(vault: Vault, tmp_path: Path) -> None:
    _records_in_many_scripts(vault)
    upsert_record(vault, "demo", kind="trap", slug="kept-apart", body="## Apart\n", frontmatter={"title": "Apart"})
    nav = [{"Home": "index.md"}, {"Inside a record": "memory/demo/traps/kept-apart/part/"}]
    built, reused = _build_both_ways(vault, tmp_path, nav=nav)
    page = "memory/demo/traps/kept-apart/index.html"
    assert b'href="part/"' in built[True][page]
    assert reused > 10
    differing = [name for name in built[True] if built[True][name] != built[False][name]]
    assert differing == []


@pytest.mark.parametrize(
    "partial",
    [
        "nav.html",
        "nav-item.html",
        "logo.html",
        "source.html",
        "toc.html",
        "search.html",
        "palette.html",
        "language.html",
        "languages/en.html",
    ],
)
def test_a_site_overriding_a_reused_partial_renders_it_on_every_page(tmp_path: Path, partial: str) -> None:
    assert ThemeReuse.install(Theme(name="material").get_env()) is not None
    (tmp_path / "partials" / partial).parent.mkdir(parents=True)
    (tmp_path / "partials" / partial).write_text("{{ page.title }}\n", encoding="utf-8")
    assert ThemeReuse.install(Theme(name="material", custom_dir=str(tmp_path)).get_env()) is None


_part = st.sampled_from(["a", "b", "notes", "заметки", "笔记", "x.html", "..", "."])
_path = st.lists(_part, max_size=4).map("/".join)


@given(target=_path, folder=st.lists(_part, max_size=3).map("/".join), one=_part, other=_part, slash=st.booleans())
def test_pages_of_one_folder_that_no_link_enters_get_the_same_relative_links(
    target: str, folder: str, one: str, other: str, slash: bool
) -> None:
    end = "/" if slash else ""
    first, second = f"{folder}/{one}{end}", f"{folder}/{other}{end}"
    found = _page_folder(first), _page_folder(second)
    if not (found[0] and found[1]) or found[0][:-1] != found[1][:-1]:
        return
    parts = _parts(target)
    entered = {parts[:n] for n in range(1, len(parts) + 1)}
    if found[0] in entered or found[1] in entered:
        return
    assert get_relative_url(target, first) == get_relative_url(target, second)
