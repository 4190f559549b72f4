"""Reads never write; an agent's reads count their hits at the change layer (memosite.hits)."""

from __future__ import annotations

import json
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memosite.bootstrap import build_bootstrap
from memosite.hits import bootstrap_counting_hits, get_record_counting_hit, search_counting_hits
from memosite.lookup import get_record
from memosite.recordfile import read_record
from memosite.search import search_records
from memosite.store import upsert_record
from memosite.vault import Vault

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
P = "demo"
# Titles in several scripts: a hit rewrites two fields and must leave every other byte alone.
TITLES = {"lock": "Verrou à l'ordre des ids", "retry": "Повтор платежа", "cache": "キャッシュの無効化 🧊"}


@pytest.fixture
def git_vault(vault_dir: Path) -> Vault:
    vault_dir.mkdir(parents=True, exist_ok=True)
    (vault_dir / "config.json").write_text(json.dumps({"vaultGit": {"enabled": True}}), encoding="utf-8")
    vault = Vault.open(vault_dir)
    for slug, title in TITLES.items():
        upsert_record(vault, P, kind="trap", slug=slug, body=f"{title}: mind it.\n", frontmatter={"title": title})
    return vault


def snapshot(vault: Vault) -> tuple[dict[str, bytes], str]:
    files = {path.name: path.read_bytes() for path in sorted((vault.project_dir(P) / "traps").glob("*.md"))}
    log = subprocess.run(
        ["git", "-C", str(vault.root), "log", "--format=%H"], capture_output=True, text=True, encoding="utf-8"
    )
    return files, log.stdout


def test_get_search_and_bootstrap_write_nothing_and_commit_nothing(git_vault: Vault) -> None:
    before = snapshot(git_vault)
    assert get_record(git_vault, P, record_id="retry", now=NOW).id == "retry"
    assert [hit.id for hit in search_records(git_vault, P, "платежа", now=NOW).results] == ["retry"]
    assert build_bootstrap(git_vault, P, now=NOW).traps
    assert snapshot(git_vault) == before


def test_an_agents_get_counts_one_hit_per_session(git_vault: Vault) -> None:
    first = get_record_counting_hit(git_vault, P, record_id="cache", session_id="s1", now=NOW)
    again = get_record_counting_hit(git_vault, P, record_id="cache", session_id="s1", now=NOW)
    assert first.frontmatter["hits"] == 1 and again.frontmatter["hits"] == 1
    on_disk = read_record(git_vault.record_path(P, "trap", "cache"))
    assert on_disk.frontmatter["hits"] == 1 and on_disk.frontmatter["title"] == TITLES["cache"]


def test_a_persons_get_counts_no_hit(git_vault: Vault) -> None:
    before = snapshot(git_vault)
    found = get_record_counting_hit(git_vault, P, record_id="cache", session_id=None, now=NOW)
    assert "hits" not in found.frontmatter and snapshot(git_vault) == before


def test_a_search_counts_only_the_hits_the_caller_acknowledges(git_vault: Vault) -> None:
    result = search_counting_hits(git_vault, P, "mind", hit_ids=["lock"], session_id="s1", now=NOW)
    assert {hit.id for hit in result.results} == set(TITLES) and result.hits_recorded == ["lock"]
    assert read_record(git_vault.record_path(P, "trap", "lock")).frontmatter["hits"] == 1
    assert "hits" not in read_record(git_vault.record_path(P, "trap", "retry")).frontmatter


def test_a_search_of_every_project_counts_each_hit_in_the_project_holding_it(git_vault: Vault) -> None:
    result = search_counting_hits(git_vault, None, "mind", hit_ids=["lock", "nowhere"], session_id="s1", now=NOW)
    assert result.hits_recorded == ["lock"]
    assert read_record(git_vault.record_path(P, "trap", "lock")).frontmatter["hits"] == 1
    assert "hits" not in read_record(git_vault.record_path(P, "trap", "retry")).frontmatter


def test_a_brief_counts_a_hit_on_each_record_it_shows(git_vault: Vault) -> None:
    brief = bootstrap_counting_hits(git_vault, P, session_id="s1", now=NOW)
    assert sorted(brief.hits_recorded) == sorted(TITLES)
    assert bootstrap_counting_hits(git_vault, P, session_id="s1", now=NOW).hits_recorded == []
