"""Salience rules: hits once per session (across processes), feedback and flagged stale, rank."""

from __future__ import annotations

import json
import os
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner

from memosite.cli import cli
from memosite.errors import InvalidArguments, RecordNotFound
from memosite.indexing import read_record
from memosite.salience import prune_session_seen_sets, rank_traps, record_feedback, record_hits
from memosite.schema import format_iso
from memosite.store import upsert_record
from memosite.vault import Vault

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
P = "demo"


def trap(vault: Vault, slug: str, **fm: object) -> Path:
    result = upsert_record(
        vault,
        P,
        kind="trap",
        slug=slug,
        body=f"{slug} bites when you forget it.\n",
        frontmatter={"title": slug, "severity": "high", **fm},
        allow_duplicate=True,
        now=NOW - timedelta(days=2),
    )
    return vault.root / result.path


def test_hit_counted_once_per_session(vault: Vault) -> None:
    path = trap(vault, "t1")
    assert record_hits(vault, P, ["t1"], session_id="s-1", now=NOW) == ["t1"]
    assert record_hits(vault, P, ["t1"], session_id="s-1", now=NOW) == []
    assert record_hits(vault, P, ["t1"], session_id="s-2", now=NOW) == ["t1"]
    fm = read_record(path).frontmatter
    assert fm["hits"] == 2 and fm["lastHit"] == format_iso(NOW)


def test_hits_without_session_count_every_time(vault: Vault) -> None:
    path = trap(vault, "t1")
    record_hits(vault, P, ["t1", "t1"], now=NOW)  # duplicates in one call count once
    record_hits(vault, P, ["t1"], now=NOW)
    assert read_record(path).frontmatter["hits"] == 2


def test_hit_is_not_an_edit_updated_unchanged(vault: Vault) -> None:
    path = trap(vault, "t1")
    before = read_record(path).frontmatter["updated"]
    record_hits(vault, P, ["t1"], now=NOW)
    record_feedback(vault, P, "t1", helpful=True, now=NOW)
    assert read_record(path).frontmatter["updated"] == before


def test_hit_keeps_untouched_frontmatter_text(vault: Vault) -> None:
    path = trap(vault, "t1")
    text = path.read_text(encoding="utf-8").replace("---\n", "---\nwindow: 10:00  # deploy window\n", 1)
    path.write_text(text, encoding="utf-8")
    record_hits(vault, P, ["t1"], now=NOW)
    assert "window: 10:00  # deploy window\n" in path.read_text(encoding="utf-8")


def test_hit_on_unknown_id_is_skipped(vault: Vault) -> None:
    trap(vault, "t1")
    assert record_hits(vault, P, ["missing", "t1"], session_id="s", now=NOW) == ["t1"]


def test_hit_updates_index_and_trap_view(vault: Vault) -> None:
    trap(vault, "t1")
    record_hits(vault, P, ["t1"], now=NOW)
    assert vault.index().by_id("t1", P)[0].hits == 1
    assert "Hits: 1" in (vault.project_dir(P) / "TRAPS.md").read_text(encoding="utf-8")


def test_get_counts_hit_once_per_session_across_processes(vault: Vault, memosite_exe: Path) -> None:
    path = trap(vault, "t1")
    for session in ("agent-a", "agent-a", "agent-b"):
        done = subprocess.run(
            [str(memosite_exe), "get", "--id", "t1", "--session-id", session, "--json"],
            capture_output=True,
            text=True,
            encoding="utf-8",
            check=False,
            timeout=60,
            env=os.environ.copy(),
        )
        assert done.returncode == 0, done.stderr
    assert read_record(path).frontmatter["hits"] == 2


def test_feedback_bumps_counts_and_sets_last_feedback(vault: Vault) -> None:
    path = trap(vault, "t1")
    record_feedback(vault, P, "t1", helpful=True, now=NOW)
    result = record_feedback(vault, P, "t1", helpful=False, now=NOW + timedelta(hours=1))
    assert (result.helpful_count, result.stale_count, result.flagged_stale) == (1, 1, False)
    fm = read_record(path).frontmatter
    assert (fm["helpfulCount"], fm["staleCount"]) == (1, 1)
    assert fm["lastFeedback"] == format_iso(NOW + timedelta(hours=1))


def test_stale_outweighing_helpful_flags_record_in_views_and_rank(vault: Vault) -> None:
    trap(vault, "popular", occurrences=5)
    trap(vault, "quiet", occurrences=1)
    record_feedback(vault, P, "popular", helpful=False, now=NOW)
    result = record_feedback(vault, P, "popular", helpful=False, now=NOW)
    assert result.flagged_stale
    view = (vault.project_dir(P) / "TRAPS.md").read_text(encoding="utf-8")
    assert "Flagged stale" in view
    assert view.index("### [HIGH] quiet") < view.index("### [HIGH] popular")
    assert [t.id for t in rank_traps(vault, P, now=NOW).traps] == ["quiet", "popular"]


def test_feedback_on_unknown_record_is_not_found(vault: Vault) -> None:
    with pytest.raises(RecordNotFound):
        record_feedback(vault, P, "nope", helpful=True, now=NOW)


def test_rank_orders_active_traps_by_occurrences_then_hits(vault: Vault) -> None:
    trap(vault, "a", occurrences=2, hits=1)
    trap(vault, "b", occurrences=2, hits=7)
    trap(vault, "c", occurrences=9)
    trap(vault, "archived", occurrences=50, status="archived")
    trap(vault, "expired", occurrences=50, ttl="1d")
    result = rank_traps(vault, P, now=NOW)
    assert [t.id for t in result.traps] == ["c", "b", "a"]
    assert result.total == 3
    assert [t.id for t in rank_traps(vault, P, limit=1, now=NOW).traps] == ["c"]


def test_rank_filters_by_layer(vault: Vault) -> None:
    trap(vault, "web-trap", layer="web")
    trap(vault, "test-trap", layer="tests")
    assert [t.id for t in rank_traps(vault, P, layer="Tests", now=NOW).traps] == ["test-trap"]
    with pytest.raises(InvalidArguments, match="layer"):
        rank_traps(vault, P, layer="frontend", now=NOW)


def test_old_session_seen_sets_are_pruned(vault: Vault) -> None:
    trap(vault, "t1")
    record_hits(vault, P, ["t1"], session_id="old", now=NOW)
    record_hits(vault, P, ["t1"], session_id="new", now=NOW)
    files = sorted((vault.internal_dir / "hits").iterdir())
    old_time = (NOW - timedelta(days=45)).timestamp()
    os.utime(files[0], (old_time, old_time))
    assert prune_session_seen_sets(vault, NOW + timedelta(days=1), dry_run=True) == 1
    assert prune_session_seen_sets(vault, NOW + timedelta(days=1)) == 1
    assert [p.name for p in (vault.internal_dir / "hits").iterdir()] == [files[1].name]


def test_cli_feedback_and_rank_json(vault: Vault) -> None:
    trap(vault, "t1", occurrences=3)
    runner = CliRunner()
    voted = runner.invoke(cli, ["feedback", "t1", "--stale", "--json"])
    assert voted.exit_code == 0, voted.output
    assert json.loads(voted.stdout) == {
        "id": "t1",
        "kind": "trap",
        "project": P,
        "helpfulCount": 0,
        "staleCount": 1,
        "lastFeedback": json.loads(voted.stdout)["lastFeedback"],
        "flaggedStale": True,
    }
    ranked = json.loads(runner.invoke(cli, ["rank", "--json"]).stdout)
    assert ranked["traps"][0]["id"] == "t1" and ranked["traps"][0]["flaggedStale"] is True
    assert ranked["traps"][0]["occurrences"] == 3


def test_cli_feedback_errors_are_one_line(vault: Vault) -> None:
    runner = CliRunner()
    missing = runner.invoke(cli, ["feedback", "nope", "--helpful"])
    assert missing.exit_code == 1 and missing.stderr.startswith("memosite: error: Record not found")
    no_vote = runner.invoke(cli, ["feedback", "nope", "--json"])
    assert json.loads(no_vote.stdout)["error"]["code"] == "INVALID_ARGUMENTS"
