"""Where ``build --out`` and ``publish --to`` may write: only new, empty or memosite-built folders,
never into the vault, and a rebuild removes only what the previous build wrote."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest

from memosite.errors import BuildError, InvalidArguments
from memosite.site.build import build_site
from memosite.site.destination import MANIFEST
from memosite.site.engines import publish_to_dir
from memosite.store import upsert_record
from memosite.vault import Vault

PROJECT = "shop"


def _trap(vault: Vault, title: str, body: str) -> str:
    return upsert_record(
        vault, PROJECT, kind="trap", body=body, frontmatter={"title": title}, allow_duplicate=True
    ).path


def _tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _built_in_staging(vault: Vault, tmp_path: Path) -> tuple[Path, Any]:
    """A build of ``vault`` into a staging folder, as ``build_site`` makes one before it places it:
    the folder, and the plugin that says which pages the page cache holds."""
    from memosite.site.build import load_site_config, memosite_plugin, run_build

    staging = tmp_path / ".staging"
    staging.mkdir()
    config = load_site_config(vault, site_dir=staging)
    plugin = memosite_plugin(config)
    plugin.defer_cached_pages = True
    run_build(config)
    return staging, plugin


@pytest.fixture
def filled(vault: Vault) -> Vault:
    _trap(vault, "Café rounding — ошибка округления", "Rounding half-up: 1.005 → 1.01 (ελληνικά, 日本語, عربى, 🎉).")
    return vault


def test_a_users_folder_with_an_index_html_is_left_alone(filled: Vault, tmp_path: Path) -> None:
    project = tmp_path / "my-project"
    (project / "src").mkdir(parents=True)
    (project / "index.html").write_text("<h1>mine</h1>", encoding="utf-8")
    (project / "notes.txt").write_text("keep me", encoding="utf-8")
    (project / "src/main.py").write_text("print('hi')\n", encoding="utf-8")
    before = _tree(project)
    for publish in (
        lambda: build_site(filled, out_dir=project),
        lambda: publish_to_dir(filled, dest=project),
    ):
        with pytest.raises(InvalidArguments, match="memosite did not build it"):
            publish()
    assert _tree(project) == before
    assert [p.name for p in tmp_path.iterdir() if "memosite" in p.name] == []  # no staging left behind


def test_a_rebuild_removes_only_what_the_previous_build_wrote(filled: Vault, tmp_path: Path) -> None:
    site = tmp_path / "site"
    gone = filled.root / _trap(filled, "Flaky clock", "The test clock drifts.")
    build_site(filled, out_dir=site)
    manifest = json.loads((site / MANIFEST).read_text(encoding="utf-8"))
    assert "memory/shop/traps/flaky-clock/index.html" in manifest["files"]
    (site / "CNAME").write_text("memory.example.org\n", encoding="utf-8")  # a person's own file
    (site / "memory/README.txt").write_text("added by hand", encoding="utf-8")
    gone.unlink()

    build_site(filled, out_dir=site)

    assert (site / "CNAME").read_text(encoding="utf-8") == "memory.example.org\n"
    assert (site / "memory/README.txt").read_text(encoding="utf-8") == "added by hand"
    assert not (site / "memory/shop/traps/flaky-clock").exists()
    assert (site / "memory/shop/traps").is_dir()
    manifest = json.loads((site / MANIFEST).read_text(encoding="utf-8"))
    assert "CNAME" not in manifest["files"] and "memory/shop/traps/flaky-clock/index.html" not in manifest["files"]


def test_a_rebuild_never_replaces_a_file_memosite_did_not_write(filled: Vault, tmp_path: Path) -> None:
    site = tmp_path / "site"
    build_site(filled, out_dir=site)
    (site / "404.html").write_text("my 404", encoding="utf-8")  # a person made the page their own
    with pytest.raises(InvalidArguments, match=r"404\.html, which was changed after memosite wrote it"):
        build_site(filled, out_dir=site)
    assert (site / "404.html").read_text(encoding="utf-8") == "my 404"


def test_a_new_folder_reached_through_a_symlink_into_the_vault_is_refused(filled: Vault, tmp_path: Path) -> None:
    link = tmp_path / "public"
    link.symlink_to(filled.root / "projects" / PROJECT)
    before = _tree(filled.root / "projects")
    with pytest.raises(InvalidArguments, match="overlaps the vault"):
        build_site(filled, out_dir=link / "site")
    with pytest.raises(InvalidArguments, match="overlaps the vault"):
        publish_to_dir(filled, dest=link)
    assert _tree(filled.root / "projects") == before


def test_the_vault_itself_and_a_folder_holding_it_are_refused(filled: Vault, tmp_path: Path) -> None:
    for target in (filled.root, filled.root.parent, filled.root / ".memosite" / "site"):
        with pytest.raises(InvalidArguments, match="overlaps the vault"):
            build_site(filled, out_dir=target)


def test_cli_refusal_is_one_line_and_a_failing_exit(filled: Vault, tmp_path: Path, run_cli) -> None:  # type: ignore[no-untyped-def]
    project = tmp_path / "mine"
    project.mkdir()
    (project / "index.html").write_text("x", encoding="utf-8")
    (project / "notes.txt").write_text("keep", encoding="utf-8")
    for args in (["build", "--out", str(project)], ["publish", "--to", str(project)]):
        outcome = run_cli(*args)
        assert outcome.exit_code != 0
        lines = [line for line in outcome.stderr.splitlines() if line.strip()]
        assert len(lines) == 1 and "memosite did not build it" in lines[0] and "Traceback" not in outcome.stderr
    assert (project / "notes.txt").read_text(encoding="utf-8") == "keep"


def test_a_build_into_a_new_folder_publishes_it_whole_with_its_manifest(filled: Vault, tmp_path: Path) -> None:
    site = tmp_path / "out" / "site"
    cold = tmp_path / "cold"
    build_site(filled, out_dir=cold)  # fills the page cache: the next new folder gets cached pages too
    result = build_site(filled, out_dir=site)

    assert [p.name for p in site.parent.iterdir()] == ["site"]  # no staging left behind
    assert _tree(site) == _tree(cold) | {MANIFEST: (site / MANIFEST).read_bytes()}
    manifest = json.loads((site / MANIFEST).read_text(encoding="utf-8"))
    assert set(manifest["files"]) == set(_tree(site)) - {MANIFEST}
    assert result.pages == sum(1 for name in manifest["files"] if name.endswith(".html"))
    # The folder is memosite's: the next build replaces what changed and keeps a person's file.
    (site / "CNAME").write_text("memory.example.org\n", encoding="utf-8")
    _trap(filled, "Zeitzone — часовой пояс", "Store UTC; 東京 is +09:00.")
    build_site(filled, out_dir=site)
    assert any("Zeitzone" in p.read_text(encoding="utf-8") for p in (site / "memory/shop/traps").rglob("index.html"))
    assert (site / "CNAME").read_text(encoding="utf-8") == "memory.example.org\n"


def test_a_folder_that_appears_while_the_site_builds_keeps_a_persons_file(filled: Vault, tmp_path: Path) -> None:
    from memosite.site.destination import check_destination
    from memosite.site.output import update_site

    site = tmp_path / "site"
    destination = check_destination(site, filled.root)  # new: nothing there yet
    staging, plugin = _built_in_staging(filled, tmp_path)
    site.mkdir()  # a person made the folder meanwhile, and put a file there
    (site / "notes.txt").write_text("keep me — сохранить", encoding="utf-8")

    update_site(staging, destination, plugin.cached_pages, plugin.page_cache)

    assert (site / "notes.txt").read_text(encoding="utf-8") == "keep me — сохранить"
    assert (site / "memory/index.html").is_file()
    assert not staging.exists()
    manifest = json.loads((site / MANIFEST).read_text(encoding="utf-8"))
    assert "notes.txt" not in manifest["files"] and "memory/index.html" in manifest["files"]


@pytest.mark.parametrize("umask", [0o002, 0o022, 0o077], ids=["shared", "usual", "private"])
def test_a_new_site_folder_gets_the_mode_any_new_folder_gets(umask: int, filled: Vault, tmp_path: Path) -> None:
    # A team's shared folder (umask 002) stays writable by the group, a private one (077) unreadable
    # by others: the folder the build publishes whole is made as its subfolders are.
    site = tmp_path / "out" / "site"
    (tmp_path / "out").mkdir()
    before = os.umask(umask)
    try:
        build_site(filled, out_dir=site)
        (tmp_path / "made by hand").mkdir()
    finally:
        os.umask(before)
    assert stat.S_IMODE(site.stat().st_mode) == stat.S_IMODE((tmp_path / "made by hand").stat().st_mode)
    assert stat.S_IMODE(site.stat().st_mode) == stat.S_IMODE((site / "memory").stat().st_mode)


@pytest.mark.parametrize("umask", [0o002, 0o022, 0o077], ids=["shared", "usual", "private"])
def test_a_page_from_the_page_cache_gets_the_mode_the_engine_gives_a_page_it_writes(
    umask: int, filled: Vault, tmp_path: Path
) -> None:
    before = os.umask(umask)
    try:
        build_site(filled, out_dir=tmp_path / "cold")  # renders every page, and fills the cache
        build_site(filled, out_dir=tmp_path / "warm")  # takes the record pages from the cache
    finally:
        os.umask(before)
    modes = {
        site: {p.relative_to(site).as_posix(): stat.S_IMODE(p.stat().st_mode) for p in site.rglob("*.html")}
        for site in (tmp_path / "cold", tmp_path / "warm")
    }
    assert modes[tmp_path / "warm"] == modes[tmp_path / "cold"]
    assert set(modes[tmp_path / "warm"].values()) == {0o666 & ~umask}


def test_a_build_that_died_half_way_in_place_never_stops_the_next_one(filled: Vault, tmp_path: Path) -> None:
    # The attack: a rebuild stopped while it puts files in (kill -9, Ctrl-C, a page the cache lost;
    # here the last). The files it put in are not what the manifest lists, yet they are exactly
    # what memosite writes there: "build again", as the error says, must publish the site.
    from memosite.site.cache import CACHE_DIR, PACKS_DIR
    from memosite.site.destination import check_destination
    from memosite.site.output import update_site

    site = tmp_path / "site"
    build_site(filled, out_dir=site)
    _trap(filled, "Zeitzone — часовой пояс", "Store UTC; 東京 is +09:00 (Ελλάδα, مصر, 🎉).")
    destination = check_destination(site, filled.root)
    staging, plugin = _built_in_staging(filled, tmp_path)
    # The unchanged records' pages come from the cache; one is missing from the folder, and the
    # cache loses it while the built files go in.
    (site / min(plugin.cached_pages)).unlink()
    for pack in (filled.internal_dir / CACHE_DIR / PACKS_DIR).iterdir():
        os.truncate(pack, 0)
    with pytest.raises(BuildError, match="build again"):
        update_site(staging, destination, plugin.cached_pages, plugin.page_cache)

    build_site(filled, out_dir=site)

    build_site(filled, out_dir=tmp_path / "cold")
    assert {k: v for k, v in _tree(site).items() if k != MANIFEST} == {
        k: v for k, v in _tree(tmp_path / "cold").items() if k != MANIFEST
    }


@pytest.mark.parametrize("placed", ["index.html", "the new record's page"])
def test_a_build_killed_half_way_in_place_never_stops_the_next_one(placed: str, filled: Vault, tmp_path: Path) -> None:
    # What kill -9 leaves while a rebuild puts its files in: some files are this build's, byte for
    # byte, and the manifest still lists the last build's. The next build publishes the site.
    site = tmp_path / "site"
    build_site(filled, out_dir=site)
    _trap(filled, "Zeitzone — часовой пояс", "Store UTC; 東京 is +09:00 (Ελλάδα, مصر, 🎉).")
    build_site(filled, out_dir=tmp_path / "elsewhere")  # the dying build: its pages are in the cache
    new = _tree(tmp_path / "elsewhere")
    name = "index.html" if placed == "index.html" else next(n for n in new if "zeitzone" in n)
    assert new[name] != _tree(site).get(name)
    (site / name).parent.mkdir(parents=True, exist_ok=True)
    (site / name).write_bytes(new[name])

    build_site(filled, out_dir=site)

    assert {k: v for k, v in _tree(site).items() if k != MANIFEST} == {k: v for k, v in new.items() if k != MANIFEST}


_CTRL_C_WHILE_PLACING = """
import os, signal, sys
from memosite.console import main

real_replace = os.replace
sent = []
vault, site = sys.argv[1], sys.argv[2]


def replace(src, dst, *args, **kwargs):
    # The person presses Ctrl-C as the first page goes into the site folder.
    if not sent and str(dst).startswith(site + os.sep):
        sent.append(True)
        signal.raise_signal(signal.SIGINT)
    return real_replace(src, dst, *args, **kwargs)


os.replace = replace
sys.argv = ["memosite", "--vault", vault, "build", "--engine", "mkdocs", "--out", site]
main()
print("sent" if sent else "not sent", file=sys.stderr)
"""


def test_ctrl_c_while_a_rebuild_places_its_files_finishes_the_site_and_says_so(filled: Vault, tmp_path: Path) -> None:
    import subprocess
    import sys

    site = tmp_path / "site"
    build_site(filled, out_dir=site)
    _trap(filled, "Ein neuer Fehler — новая ошибка", "Πρώτα UTC; 東京 +09:00 🚀")
    done = subprocess.run(
        [sys.executable, "-P", "-c", _CTRL_C_WHILE_PLACING, str(filled.root), str(site)],
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=300,
        check=False,
    )
    assert "sent" in done.stderr.split() and "Traceback" not in done.stderr
    assert done.returncode == 0, done.stderr
    assert "interrupted after the change was made: it is complete" in done.stderr
    assert "before anything was changed" not in done.stderr
    manifest = json.loads((site / MANIFEST).read_text(encoding="utf-8"))
    assert set(manifest["files"]) == set(_tree(site)) - {MANIFEST}
    assert any(
        "Ein neuer Fehler" in p.read_text(encoding="utf-8") for p in (site / "memory/shop/traps").rglob("*.html")
    )


def test_a_staging_folder_a_killed_build_left_long_ago_is_removed_by_the_next_build(
    filled: Vault, tmp_path: Path
) -> None:
    import os
    import time

    site = tmp_path / "site"
    dead = tmp_path / ".site.memosite-build-dead1234"
    (dead / "memory" / "shop").mkdir(parents=True)
    (dead / "memory" / "shop" / "index.html").write_text("half a build — половина", encoding="utf-8")
    running = tmp_path / ".site.memosite-build-live5678"  # another build, still filling its folder
    running.mkdir()
    mine = tmp_path / "site-notes"  # a person's folder of a like name is never touched
    mine.mkdir()
    long_ago = time.time() - 2 * 24 * 3600
    for path in (dead, mine):
        os.utime(path, (long_ago, long_ago))

    build_site(filled, out_dir=site)

    assert not dead.exists()
    assert running.is_dir() and mine.is_dir()
    assert sorted(p.name for p in tmp_path.iterdir() if "memosite-build" in p.name) == [running.name]
