"""Where the page cache keeps built pages: one pack file per build that rendered something, mostly
dead packs emptied into the next build's (packs never hold twice what is used), a lost or cut pack
rebuilt, nothing left by a failed build."""

from __future__ import annotations

from pathlib import Path

import pytest

from memosite.errors import BuildError
from memosite.site.build import build_site, load_site_config, memosite_plugin, run_build
from memosite.site.cache import INDEX_SUFFIX, index_packs
from memosite.store import upsert_record
from memosite.vault import TEMP_PREFIX, Vault

PROJECT = "shop"


def _trap(vault: Vault, title: str, body: str) -> Path:
    written = upsert_record(vault, PROJECT, kind="trap", body=body, frontmatter={"title": title, "severity": "high"})
    return vault.root / written.path


def _packs(vault: Vault) -> list[Path]:
    return sorted((vault.root / ".memosite/site-cache/packs").iterdir())


def _rendered_into(vault: Vault, site: Path) -> set[str]:
    config = load_site_config(vault, site_dir=site)
    run_build(config)
    return set(memosite_plugin(config)._rendered)


def _same_pages(a: Path, b: Path) -> None:
    pages = sorted(a.rglob("*.html"))
    assert pages
    for page in pages:
        assert (b / page.relative_to(a)).read_bytes() == page.read_bytes(), page


def test_a_cold_build_writes_its_pages_into_one_pack(tmp_path: Path, vault: Vault) -> None:
    for n in range(4):
        _trap(vault, f"Trap {n}", f"Body {n}.")
    build_site(vault, out_dir=tmp_path / "a")
    assert len(_packs(vault)) == 1
    assert not list((vault.root / ".memosite/site-cache").glob("pages"))
    assert _rendered_into(vault, tmp_path / "b") == set()
    _same_pages(tmp_path / "a", tmp_path / "b")


def test_a_warm_build_adds_a_pack_of_what_it_rendered_and_keeps_the_rest(tmp_path: Path, vault: Vault) -> None:
    paths = [_trap(vault, f"Trap {n}", f"Body {n} " + "words " * 400) for n in range(6)]
    build_site(vault, out_dir=tmp_path / "a")
    first = _packs(vault)
    paths[0].write_text(paths[0].read_text(encoding="utf-8").replace("Body 0", "Body zero"), encoding="utf-8")
    rendered = _rendered_into(vault, tmp_path / "b")
    assert "memory/shop/traps/trap-0.md" in rendered and "memory/shop/traps/trap-1.md" not in rendered
    assert first[0] in _packs(vault) and len(_packs(vault)) == 2
    assert _rendered_into(vault, tmp_path / "c") == set()
    _same_pages(tmp_path / "b", tmp_path / "c")
    assert "Body zero" in (tmp_path / "c/memory/shop/traps/trap-0/index.html").read_text(encoding="utf-8")


def _pack_bytes(vault: Vault) -> tuple[int, int]:
    """Bytes in packs, and bytes of them that the index (of the one site built here) refers to."""
    [index] = (vault.root / ".memosite/site-cache").glob(f"index-*{INDEX_SUFFIX}")
    return sum(p.stat().st_size for p in _packs(vault)), sum((index_packs(index) or {}).values())


@pytest.mark.slow
def test_packs_never_hold_more_than_twice_what_the_cache_uses(tmp_path: Path, vault: Vault) -> None:
    paths = [_trap(vault, f"Trap {n}", f"Body {n} " + "words " * 300) for n in range(5)]
    build_site(vault, out_dir=tmp_path / "site")
    for round_ in range(8):
        for path in paths[: 1 + round_ % 4]:
            text = path.read_text(encoding="utf-8")
            path.write_text(text.replace("Body", f"Body {round_}", 1), encoding="utf-8")
        build_site(vault, out_dir=tmp_path / "site")
        total, live = _pack_bytes(vault)
        assert total <= 2 * live, round_
    assert len(_packs(vault)) <= 3
    assert _rendered_into(vault, tmp_path / "again") == set()
    _same_pages(tmp_path / "site", tmp_path / "again")


@pytest.mark.parametrize("damage", ["cut", "lost"])
def test_a_cut_or_lost_pack_means_its_pages_are_built_again(tmp_path: Path, vault: Vault, damage: str) -> None:
    for n in range(3):
        _trap(vault, f"Trap {n}", f"Body {n}.")
    build_site(vault, out_dir=tmp_path / "a")
    (pack,) = _packs(vault)
    if damage == "cut":
        pack.write_bytes(pack.read_bytes()[:100])
    else:
        pack.unlink()
    assert "memory/shop/traps/trap-2.md" in _rendered_into(vault, tmp_path / "b")
    _same_pages(tmp_path / "a/memory/shop/traps", tmp_path / "b/memory/shop/traps")


def test_a_build_refused_for_a_secret_leaves_no_pack_behind(tmp_path: Path, vault: Vault) -> None:
    path = _trap(vault, "Deploy notes", "Nothing secret here.")
    build_site(vault, out_dir=tmp_path / "a")
    before = _packs(vault)
    token = "ghp_" + "Zq8" * 12
    path.write_text(path.read_text(encoding="utf-8").replace("Nothing secret here.", token), encoding="utf-8")
    with pytest.raises(BuildError, match="refusing to publish"):
        build_site(vault, out_dir=tmp_path / "b")
    assert _packs(vault) == before
    assert not any(p.name.startswith(TEMP_PREFIX) for p in _packs(vault))
