"""What a new build process spends besides rendering: the installed theme's listing kept per user
across processes, no embedding model loaded for a site, links between pages worked out without
asking the system."""

from __future__ import annotations

import json
import os
import posixpath
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import jinja2
import pytest
from fresh_python import run_fresh
from hypothesis import given, settings
from hypothesis import strategies as st

from memosite import plugin as site_plugin
from memosite.search import search_records
from memosite.site.build import load_site_config
from memosite.site.sitepage import relative_path
from memosite.site.theme_listing import LISTING_DIR, load_listing
from memosite.store import upsert_record
from memosite.userdirs import user_cache_dir
from memosite.vault import Vault

P = "demo"
TITLES = ["Зачем нужен ключ идемпотентности", "数据库迁移会锁住订单表", "Café résumé naïve façade"]


def _stored_vectors(vault: Vault) -> dict[str, bytes]:
    with sqlite3.connect(vault.root / ".memosite" / "index.sqlite") as conn:
        rows = conn.execute("SELECT r.path, v.vec FROM vectors AS v JOIN records AS r USING (rowid)")
        return {path: bytes(blob) for path, blob in rows}


@pytest.fixture
def semantic_vault(tmp_path: Path) -> Iterator[Vault]:
    root = tmp_path / "semantic-vault"
    root.mkdir()
    (root / "config.local.json").write_text(json.dumps({"search": {"semantic": True}}), encoding="utf-8")
    vault = Vault.open(root)
    upsert_record(
        vault, P, kind="trap", slug="cdn-cookie", body="Users are signed out.\n", frontmatter={"title": "CDN"}
    )
    for n, title in enumerate(TITLES):
        upsert_record(vault, P, kind="decision", slug=f"d{n}", body=f"{title}.\n", frontmatter={"title": title})
    yield vault
    vault.close()


_BUILD = """
import sys
from memosite.site.build import build_site
from memosite.vault import Vault
build_site(Vault.open(sys.argv[1], create=False), out_dir=sys.argv[2])
print("numpy" in sys.modules, "memosite.bpe" in sys.modules)
"""


def test_a_site_build_after_a_hand_edit_never_loads_the_embedding_model(semantic_vault: Vault, tmp_path: Path) -> None:
    vault = semantic_vault
    assert len(_stored_vectors(vault)) == 4
    edited = vault.root / "projects" / P / "traps" / "cdn-cookie.md"
    text = edited.read_text(encoding="utf-8").replace("Users are signed out.", "The CDN drops the login cookie.")
    edited.write_text(text, encoding="utf-8")

    done = run_fresh(_BUILD, str(vault.root), str(tmp_path / "site"))

    assert done.stdout.split() == ["False", "False"]
    assert "drops the login cookie" in (
        tmp_path / "site" / "memory" / P / "traps" / "cdn-cookie" / "index.html"
    ).read_text(encoding="utf-8")
    # The edited record's old vector is gone with its old text; the next search by meaning makes it.
    assert "projects/demo/traps/cdn-cookie.md" not in _stored_vectors(vault)
    assert search_records(vault, P, "customers are logged out at checkout").ranking == "hybrid"
    assert len(_stored_vectors(vault)) == 4


def _material_env(vault: Vault, tmp_path: Path) -> jinja2.Environment:
    config = load_site_config(vault, site_dir=tmp_path / "site")
    config = config.plugins.on_config(config)  # the plugin's hold on the theme's listing
    return config.theme.get_env()


def _keep(name: str) -> bool:
    return not name.endswith((".html", ".py")) and not name.startswith(".")


def _theirs(env: jinja2.Environment) -> list[str]:
    """MkDocs' own listing: Jinja's, nothing remembered."""
    return jinja2.Environment.list_templates(env, filter_func=_keep)


def _forget_in_process() -> None:
    site_plugin._THEME_LISTINGS.clear()  # as a new process starts


def test_the_theme_listing_kept_across_processes_is_the_listing_mkdocs_makes(vault: Vault, tmp_path: Path) -> None:
    env = _material_env(vault, tmp_path)
    _forget_in_process()
    first = env.list_templates(filter_func=_keep)
    kept = list((user_cache_dir() / LISTING_DIR).glob("*.json"))
    assert len(kept) == 1
    _forget_in_process()
    assert env.list_templates(filter_func=_keep) == first == _theirs(env)
    assert any(name.startswith("assets/") for name in first)


@pytest.mark.parametrize(
    "damage",
    [
        '["../../../etc/passwd"]',
        '["/etc/passwd"]',
        '["assets/../../x"]',
        '{"names": []}',
        "not json",
        "[1, 2]",
    ],
)
def test_a_damaged_theme_listing_is_read_as_none_and_listed_afresh(vault: Vault, tmp_path: Path, damage: str) -> None:
    env = _material_env(vault, tmp_path)
    _forget_in_process()
    env.list_templates(filter_func=_keep)
    (kept,) = (user_cache_dir() / LISTING_DIR).glob("*.json")
    kept.write_text(damage, encoding="utf-8")
    assert load_listing(kept.stem) is None
    _forget_in_process()
    assert env.list_templates(filter_func=_keep) == _theirs(env)
    assert load_listing(kept.stem) is not None  # written again, whole


def test_a_theme_listing_reached_through_a_symlink_is_not_read(vault: Vault, tmp_path: Path) -> None:
    env = _material_env(vault, tmp_path)
    _forget_in_process()
    env.list_templates(filter_func=_keep)
    (kept,) = (user_cache_dir() / LISTING_DIR).glob("*.json")
    planted = tmp_path / "planted.json"
    planted.write_text('["assets/planted.js"]', encoding="utf-8")
    kept.unlink()
    os.symlink(planted, kept)
    assert load_listing(kept.stem) is None
    _forget_in_process()
    assert "assets/planted.js" not in env.list_templates(filter_func=_keep)


# --- links between pages -------------------------------------------------------------------------

_part = st.one_of(
    st.sampled_from(["memory", "demo", "traps", "index.md", "..", ".", "", "数据库", "Зачем", "café", "🚀"]),
    st.text(st.sampled_from("ab./é"), max_size=4),
)
_path = st.lists(_part, min_size=1, max_size=5).map("/".join)


@settings(max_examples=500)
@given(path=_path, start=_path)
def test_a_link_between_two_site_paths_is_what_posixpath_relpath_says(path: str, start: str) -> None:
    try:
        expected = posixpath.relpath(path, start)
    except ValueError:
        with pytest.raises(ValueError):
            relative_path(path, start)
        return
    assert relative_path(path, start) == expected
