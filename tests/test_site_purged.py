"""A purged record is counted on the site and in the feeds, never named (issue 21): the changelog,
the project home, the site's overview and both Atom feeds said ``purged · decision · <id>``, so
what a person purged stayed published under its title-derived id, and the vault's commits named it
too."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import pytest

from memosite.curator import run_gc
from memosite.site.changelog import tombstone_events
from memosite.store import upsert_record
from memosite.vault import Vault

ATOM = "{http://www.w3.org/2005/Atom}"
SECRET_TITLE = "Secret plan: drop Stripe for Миграция 日本"
# What would name the purged record: its title, any word of it, its id (the slug of its title).
NAMES = re.compile(r"secret|stripe|миграция|migratsiya|日本", re.IGNORECASE)


def _git_vault(vault_dir: Path) -> None:
    vault_dir.mkdir(parents=True, exist_ok=True)
    (vault_dir / "config.json").write_text(json.dumps({"vaultGit": {"enabled": True}}), encoding="utf-8")


def _published_texts(root: Path) -> dict[str, str]:
    return {
        path.relative_to(root).as_posix(): path.read_text(encoding="utf-8", errors="replace")
        for path in root.rglob("*")
        if path.is_file() and path.suffix in (".html", ".xml", ".json", ".md", ".txt")
    }


def _purge_a_persons_decision(vault_dir: Path, run_cli: Callable[..., Any]) -> str:
    _git_vault(vault_dir)
    made = run_cli("upsert", "--kind", "decision", "--title", SECRET_TITLE, "--body", "We leave.", "--json")
    assert made.exit_code == 0, made.stderr
    record_id = made.json()["id"]
    assert NAMES.search(record_id)  # the id is made from the title
    assert run_cli("upsert", "--kind", "trap", "--title", "Cache leak", "--body", "Kept.").exit_code == 0
    assert run_cli("forget", record_id, "--purge").exit_code == 0
    return str(record_id)


@pytest.mark.slow
def test_a_purged_record_is_counted_and_never_named_on_the_built_site(
    vault_dir: Path, tmp_path: Path, run_cli: Callable[..., Any]
) -> None:
    _purge_a_persons_decision(vault_dir, run_cli)
    site = tmp_path / "site"
    assert run_cli("build", "--out", str(site)).exit_code == 0
    texts = _published_texts(site)
    named = {path: NAMES.search(text).group(0) for path, text in texts.items() if NAMES.search(text)}  # type: ignore[union-attr]
    assert named == {}
    changes = texts["memory/demo/CHANGES/index.html"]
    assert "1 record purged" in changes and "Cache leak" in changes
    home = texts["memory/demo/index.html"]
    assert "1 record purged" in home
    assert re.search(r"<td>Purged</td>\s*<td[^>]*>1</td>", home)
    for feed in ("memory/demo/feed.xml", "memory/feed.xml"):
        entries = ElementTree.fromstring(texts[feed]).findall(f"{ATOM}entry")
        titles = [entry.findtext(f"{ATOM}title") for entry in entries]
        assert "1 record purged (decision)" in titles, feed
        assert any((t or "").startswith("Created: Cache leak") for t in titles)


def test_a_purged_record_is_counted_and_never_named_in_the_export(
    vault_dir: Path, tmp_path: Path, run_cli: Callable[..., Any]
) -> None:
    _purge_a_persons_decision(vault_dir, run_cli)
    assert run_cli("export-docs", str(tmp_path / "docs")).exit_code == 0
    texts = _published_texts(tmp_path / "docs")
    assert not [path for path, text in texts.items() if NAMES.search(text)]
    assert "1 record purged" in texts["memory/demo/CHANGES.md"]


def test_one_purge_of_many_records_is_one_event_that_counts_them(vault: Vault) -> None:
    for n in range(3):
        upsert_record(
            vault,
            "demo",
            kind="scratch",
            body=f"scratch {n}",
            slug=f"private-name-{n}",
            frontmatter={"expires_at": "2020-01-01"},
        )
    run_gc(vault, "demo", purge=True)
    events = tombstone_events(vault, "demo")
    assert [(e.action, e.kind, e.record_count, e.title, e.record_id) for e in events] == [
        ("purged", "scratch", 3, "3 records purged", "")
    ]


@pytest.mark.slow
@pytest.mark.parametrize("republished", [True, False])
def test_commits_naming_a_purged_record_leave_the_history_unless_a_record_carries_the_id_again(
    vault_dir: Path, tmp_path: Path, run_cli: Callable[..., Any], republished: bool
) -> None:
    record_id = _purge_a_persons_decision(vault_dir, run_cli)
    if republished:
        assert (
            run_cli("upsert", "--kind", "decision", "--id", record_id, "--title", "Back", "--body", "b").exit_code == 0
        )
    out = tmp_path / "docs"
    assert run_cli("export-docs", str(out)).exit_code == 0
    changes = (out / "memory/demo/CHANGES.md").read_text(encoding="utf-8")
    assert ("decision:" + record_id in changes.replace("\\", "")) == republished
    assert "upsert trap:cache-leak" in changes.replace("\\", "")
