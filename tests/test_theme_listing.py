"""MkDocs lists the theme's files on every build; serve keeps the installed theme's listing."""

from __future__ import annotations

from pathlib import Path

import jinja2
from mkdocs.structure.files import Files
from mkdocs.theme import Theme

from memosite.plugin import _keep_theme_listing


def _listed(theme: Theme) -> list[str]:
    def accept(name: str) -> bool:
        return not name.endswith(".html")

    return list(theme.get_env().list_templates(filter_func=accept))


def test_a_kept_theme_listing_names_what_jinja_lists_and_follows_the_sites_own_directory(tmp_path: Path) -> None:
    own = tmp_path / "overrides"
    own.mkdir()
    (own / "extra.css").write_text("/* première · первый */\n", encoding="utf-8")
    theme = Theme(name="material", custom_dir=str(own))
    plain = _listed(theme)
    _keep_theme_listing(theme)
    assert _listed(theme) == plain and "extra.css" in plain
    (own / "ещё-один.js").write_text("// 新しい\n", encoding="utf-8")
    again = _listed(theme)
    assert "ещё-один.js" in again
    assert again == jinja2.Environment(loader=jinja2.FileSystemLoader(theme.dirs)).list_templates(
        filter_func=lambda name: not name.endswith(".html")
    )


def test_mkdocs_adds_the_same_theme_files_through_a_kept_listing(tmp_path: Path) -> None:
    from mkdocs.config.defaults import MkDocsConfig

    (tmp_path / "docs").mkdir()
    config = MkDocsConfig()
    config.load_dict({"site_name": "x", "docs_dir": str(tmp_path / "docs"), "site_dir": str(tmp_path / "site")})
    config.load_dict({"theme": {"name": "material"}})
    assert not config.validate()[0]
    plain = Files([])
    plain.add_files_from_theme(config.theme.get_env(), config)
    _keep_theme_listing(config.theme)
    kept = Files([])
    kept.add_files_from_theme(config.theme.get_env(), config)
    kept_again = Files([])
    kept_again.add_files_from_theme(config.theme.get_env(), config)
    names = [file.src_uri for file in plain]
    assert names and [file.src_uri for file in kept] == names == [file.src_uri for file in kept_again]
