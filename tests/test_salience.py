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
from memosite.recordfile import read_record
from memosite.salience import backfill_traps, prune_session_seen_sets, rank_traps, record_feedback, record_hits
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


@pytest.mark.slow
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


def test_rank_never_counts_a_pending_trap(vault_dir: Path) -> None:
    # An agent's trap of a reviewed kind waits for a person: however often it claims to have bitten,
    # it neither ranks nor counts until a person approves it.
    vault_dir.mkdir(parents=True, exist_ok=True)
    (vault_dir / "config.json").write_text(json.dumps({"review": {"required": ["trap"]}}), encoding="utf-8")
    vault = Vault.open(vault_dir)
    try:
        trap(vault, "known", occurrences=1, source="human")
        waiting = trap(vault, "waiting", occurrences=40, source="agent")
        assert read_record(waiting).frontmatter["review"] == "pending"
        result = rank_traps(vault, P, now=NOW)
        assert [t.id for t in result.traps] == ["known"] and result.total == 1
        assert rank_traps(vault, P, layer="other", now=NOW).total == 1  # with a layer too
    finally:
        vault.close()


def test_rank_filters_by_layer(vault: Vault) -> None:
    trap(vault, "web-trap", layer="web")
    trap(vault, "test-trap", layer="tests")
    assert [t.id for t in rank_traps(vault, P, layer="Tests", now=NOW).traps] == ["test-trap"]
    with pytest.raises(InvalidArguments, match="layer"):
        rank_traps(vault, P, layer="bananas", now=NOW)


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
    assert missing.exit_code == 1 and missing.stderr.startswith("memosite: error: record not found")
    no_vote = runner.invoke(cli, ["feedback", "nope", "--json"])
    assert json.loads(no_vote.stdout)["error"]["code"] == "INVALID_ARGUMENTS"


# --- rank through layer aliases; occurrences missing count once --------------------------------


def test_rank_layer_accepts_another_name_for_the_layer(vault: Vault, run_cli) -> None:  # type: ignore[no-untyped-def]
    trap(vault, "web-trap", layer="web")
    trap(vault, "infra-trap", layer="infrastructure")
    assert [t.id for t in rank_traps(vault, P, layer="frontend", now=NOW).traps] == ["web-trap"]
    data = run_cli("rank", "--layer", "infra", "--json").json()
    assert (data["layer"], [t["id"] for t in data["traps"]]) == ("infrastructure", ["infra-trap"])
    bad = run_cli("rank", "--layer", "bananas")
    assert bad.exit_code == 1 and bad.stderr.count("\n") == 1 and "frontend" in bad.stderr


def _hand_trap(vault: Vault, slug: str, body: str, extra: str = "") -> Path:
    path = vault.record_path(P, "trap", slug)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        f"---\nid: {slug}\nkind: trap\nproject: {P}\ntitle: {slug}\nseverity: high\n"
        f"created: 2026-10-01T00:00:00.000Z\nupdated: 2026-10-02T00:00:00.000Z\n{extra}---\n{body}",
        encoding="utf-8",
    )
    return path


def test_rank_reports_a_trap_without_occurrences_as_seen_once(vault: Vault) -> None:
    from memosite.refresh import refresh_project

    _hand_trap(vault, "old-style", "Written before occurrences existed.\n")
    trap(vault, "twice", occurrences=2)
    refresh_project(vault, P)
    ranked = rank_traps(vault, P, now=NOW)
    assert [(t.id, t.occurrences) for t in ranked.traps] == [("twice", 2), ("old-style", 1)]


# --- rank --backfill ---------------------------------------------------------------------------


def test_backfill_writes_layer_module_occurrences_and_last_seen_onto_traps_that_lack_them(vault: Vault) -> None:
    body = "Checkout loses the session.\n\n**Layer**: Frontend\n**Module**: Checkout / Payments\n"
    old = _hand_trap(vault, "old", body)
    done = _hand_trap(vault, "done", "Complete.\n", "layer: tests\nmodule: ci\noccurrences: 3\nlastSeen: 2026-10-02\n")
    before_done = done.read_bytes()
    result = backfill_traps(vault, P, now=NOW)
    assert [(t.id, t.fields) for t in result.updated] == [
        (
            "old",
            {
                "layer": "web",
                "module": "Checkout / Payments",
                "occurrences": 1,
                "lastSeen": "2026-10-02T00:00:00.000Z",
            },
        )
    ]
    fm = read_record(old).frontmatter
    assert (fm["layer"], fm["module"], fm["occurrences"], fm["lastSeen"]) == (
        "web",
        "Checkout / Payments",
        1,
        "2026-10-02T00:00:00.000Z",
    )
    assert old.read_text(encoding="utf-8").endswith("---\n" + body)  # the body, byte for byte
    assert done.read_bytes() == before_done  # nothing to fill: not rewritten


def test_backfill_normalises_a_layer_written_under_another_name(vault: Vault) -> None:
    path = _hand_trap(vault, "aliased", "Text.\n", "layer: Frontend\n")
    result = backfill_traps(vault, P, now=NOW)
    assert result.updated[0].fields["layer"] == "web" and read_record(path).frontmatter["layer"] == "web"
    assert "layer: web\n" in path.read_text(encoding="utf-8") and "Frontend" not in path.read_text(encoding="utf-8")
    assert rank_traps(vault, P, layer="web", now=NOW).traps[0].id == "aliased"


def test_backfill_classifies_as_upsert_does_a_security_label_in_any_language_becomes_a_tag(vault: Vault) -> None:
    from memosite.store import upsert_record

    body = "O token vaza no log.\n\nCamada: segurança\n"
    path = _hand_trap(vault, "hand", body)
    upsert_record(vault, P, kind="trap", slug="upserted", body=body, allow_duplicate=True)
    backfill_traps(vault, P, now=NOW)
    backfilled, upserted = (
        read_record(path).frontmatter,
        read_record(vault.record_path(P, "trap", "upserted")).frontmatter,
    )
    assert "security" in backfilled["tags"]
    assert (backfilled["tags"], backfilled["layer"]) == (upserted["tags"], upserted["layer"])
    assert path.read_text(encoding="utf-8").endswith("---\n" + body)
    assert backfill_traps(vault, P, now=NOW).updated == []  # classified once, then nothing to fill


def test_backfill_is_one_unit_of_work_one_commit(vault_dir: Path) -> None:
    import json as _json
    import shutil

    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    vault_dir.mkdir(parents=True, exist_ok=True)
    (vault_dir / "config.json").write_text(_json.dumps({"vaultGit": {"enabled": True, "atomic": True}}), "utf-8")
    vault = Vault.open(vault_dir)
    for number in range(5):
        _hand_trap(vault, f"old-{number}", f"Old trap {number}.\n")

    def commits() -> list[str]:
        done = subprocess.run(
            ["git", "-C", str(vault_dir), "log", "--format=%s"], capture_output=True, text=True, encoding="utf-8"
        )
        return done.stdout.splitlines() if done.returncode == 0 else []

    before = commits()
    result = backfill_traps(vault, P, now=NOW)
    after = commits()
    assert len(result.updated) == 5
    assert len(after) == len(before) + 1 and after[0] == f"rank backfill {P}: 5 traps"
    assert backfill_traps(vault, P, now=NOW).updated == [] and commits() == after  # nothing left: no commit
    vault.close()


def test_backfill_dry_run_writes_nothing(vault: Vault, run_cli) -> None:  # type: ignore[no-untyped-def]
    path = _hand_trap(vault, "old", "Old.\n")
    before = path.read_bytes()
    data = run_cli("rank", "--backfill", "--dry-run", "--json").json()
    assert data["dryRun"] is True and [t["id"] for t in data["updated"]] == ["old"]
    assert path.read_bytes() == before
    text = run_cli("rank", "--backfill").stdout
    assert text.startswith(f"backfill {P}: 1 traps read, wrote 1") and path.read_bytes() != before


@pytest.mark.parametrize(
    ("args", "message"),
    [(("rank", "--dry-run"), "--dry-run goes with --backfill"), (("rank", "--backfill", "--layer", "web"), "--layer")],
)
def test_backfill_option_mistakes_are_one_line(run_cli, args: tuple[str, ...], message: str) -> None:  # type: ignore[no-untyped-def]
    bad = run_cli(*args)
    assert bad.exit_code == 1 and message in bad.stderr and bad.stderr.count("\n") == 1


# --- hits that count ---------------------------------------------------------------------------


def test_scratch_never_counts_hits(vault: Vault) -> None:
    upsert_record(vault, P, kind="scratch", slug="note", body="private note\n", now=NOW)
    assert record_hits(vault, P, ["note"], session_id="s", now=NOW) == []
    assert record_hits(vault, P, ["note"], now=NOW) == []
    assert "hits" not in read_record(vault.record_path(P, "scratch", "note")).frontmatter


def test_a_session_rereading_what_it_counted_writes_nothing(vault: Vault) -> None:
    path = trap(vault, "t1")
    record_hits(vault, P, ["t1"], session_id="s", now=NOW)
    stamp = path.stat().st_mtime_ns
    assert record_hits(vault, P, ["t1"], session_id="s", now=NOW) == []
    assert path.stat().st_mtime_ns == stamp
