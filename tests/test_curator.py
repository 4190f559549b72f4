"""Curator gc rules of seed 001: sweep, archive vs purge, plan compaction, log roll-up, dry run."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from memosite.cli import cli
from memosite.curator import (
    compact_monthly_logs,
    compact_plan_record,
    run_gc,
    sweep_expired_records,
)
from memosite.recordfile import read_record
from memosite.schema import Record, format_iso, parse_record
from memosite.search import search_records
from memosite.store import append_event, upsert_record
from memosite.vault import TEMP_PREFIX, Vault

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
P = "demo"


def days_ago(days: float) -> datetime:
    return NOW - timedelta(days=days)


def put(vault: Vault, kind: str, slug: str, *, age: float = 1, body: str | None = None, **fm: Any) -> Path:
    """Write a record through the store as if it had been written ``age`` days before NOW."""
    result = upsert_record(
        vault,
        P,
        kind=kind,
        slug=slug,
        body=body or f"Body of {slug}: something worth remembering.\n",
        frontmatter={"title": slug.replace("-", " ").capitalize(), **fm},
        allow_duplicate=True,
        now=days_ago(age),
    )
    return vault.root / result.path


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` except the disposable index and lock."""
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.name.startswith(("index.sqlite", "vault.lock"))
    }


@pytest.fixture
def mixed(vault: Vault) -> Vault:
    """A project with something for every gc rule."""
    put(vault, "trap", "expired-trap", age=10, ttl="7d", severity="high")
    put(vault, "trap", "live-trap", age=10, ttl="30d", severity="high")
    put(vault, "decision", "expired-decision", age=10, expires_at=format_iso(days_ago(1)))
    put(vault, "plan", "expired-plan", age=20, ttl="14d")
    put(
        vault,
        "plan",
        "shipped-plan",
        age=5,
        status="shipped",
        outcome="Checkout is one page.",
        verifiedAtSha="4f2a9c1",
        relatedSlug="checkout-v2",
    )
    put(vault, "state", "old-state", age=3, ttl="1d")
    put(vault, "scratch", "old-scratch", age=8)
    put(vault, "scratch", "new-scratch", age=2)
    put(vault, "review", "old-review", age=15)
    put(vault, "review", "new-review", age=13)
    put(vault, "spec", "expired-spec", age=10, ttl="1d")  # specs/ is outside the sweep scope
    for days, text in (
        (70, "Deployed v1.0"),
        (65, "Rolled back v1.0"),
        (40, "Deployed v1.1"),
        (1, "Tests pass"),
    ):
        append_event(vault, P, event=text, details={"n": days}, now=days_ago(days))
    return vault


def test_expired_trap_decision_plan_archived_with_reason_content_kept(mixed: Vault) -> None:
    before = read_record(mixed.record_path(P, "trap", "expired-trap"))
    result = run_gc(mixed, P, now=NOW)
    assert (
        result.traps_archived_count,
        result.decisions_archived_count,
        result.plans_archived_count,
    ) == (1, 1, 1)
    for kind, slug in (
        ("trap", "expired-trap"),
        ("decision", "expired-decision"),
        ("plan", "expired-plan"),
    ):
        record = read_record(mixed.record_path(P, kind, slug))
        assert record.status == "archived"
        assert record.frontmatter["archivedReason"] == "expired"
        assert record.frontmatter["updated"] == format_iso(NOW)
    after = read_record(mixed.record_path(P, "trap", "expired-trap"))
    assert after.body == before.body
    assert after.frontmatter["created"] == before.frontmatter["created"]
    assert read_record(mixed.record_path(P, "trap", "live-trap")).status == "active"
    tombstoned = {entry["path"] for entry in mixed.read_tombstones()}
    assert not any("expired-trap" in path for path in tombstoned)  # archiving keeps the file: no tombstone


def test_expired_scratch_review_state_purged_tombstoned_and_unindexed(mixed: Vault) -> None:
    result = run_gc(mixed, P, now=NOW)
    assert result.purged_scratch_count == 1
    assert result.purged_review_count == 1
    gone = ["scratch/old-scratch.md", "reviews/old-review.md", "plans/old-state.md"]
    assert sorted(result.purged_files) == sorted(f"projects/{P}/{g}" for g in gone)
    for relative in gone:
        assert not (mixed.project_dir(P) / relative).exists()
        assert mixed.index().by_path(f"projects/{P}/{relative}") is None
    reasons = {e["path"]: e["reason"] for e in mixed.read_tombstones()}
    assert all(reasons[f"projects/{P}/{g}"] == "gc-expired" for g in gone)
    assert mixed.record_path(P, "scratch", "new-scratch").exists()
    assert mixed.record_path(P, "review", "new-review").exists()


def test_records_outside_the_sweep_directories_are_not_swept(mixed: Vault) -> None:
    run_gc(mixed, P, now=NOW)
    assert read_record(mixed.record_path(P, "spec", "expired-spec")).status == "active"


def test_purge_unlinks_expired_trap_decision_plan_instead_of_archiving(mixed: Vault) -> None:
    result = run_gc(mixed, P, now=NOW, purge=True)
    assert (
        result.traps_archived_count,
        result.decisions_archived_count,
        result.plans_archived_count,
    ) == (0, 0, 0)
    for kind, slug in (
        ("trap", "expired-trap"),
        ("decision", "expired-decision"),
        ("plan", "expired-plan"),
    ):
        path = mixed.record_path(P, kind, slug)
        assert not path.exists()
        assert mixed.relative(path) in result.purged_files
    assert {e["reason"] for e in mixed.read_tombstones() if "expired-trap" in e["path"]} == {"gc-expired"}


def test_already_archived_or_compacted_records_are_skipped(vault: Vault) -> None:
    archived = put(vault, "trap", "gone", age=30, ttl="1d", status="archived")
    compacted = put(vault, "plan", "done", age=30, ttl="1d", status="shipped", compacted=True)
    before = snapshot(vault.project_dir(P))
    result = run_gc(vault, P, now=NOW, purge=True)
    assert result.purged_files == [] and result.compacted_plans_count == 0
    assert archived.read_bytes() == before[f"traps/{archived.name}"]
    assert compacted.read_bytes() == before[f"plans/{compacted.name}"]


def test_superseded_decision_is_not_rewritten_to_archived(vault: Vault) -> None:
    put(vault, "decision", "old-way", age=20, ttl="5d")
    put(vault, "decision", "new-way", age=19, supersedes="old-way")
    result = run_gc(vault, P, now=NOW)
    assert result.decisions_archived_count == 0
    assert read_record(vault.record_path(P, "decision", "old-way")).status == "superseded"


def test_conflict_sidecars_are_untouched(vault: Vault) -> None:
    put(vault, "scratch", "keep", age=1)
    sidecar = vault.kind_dir(P, "scratch") / "note.conflict.laptop.md"
    sidecar.write_text("---\nid: note\nkind: scratch\n---\nold\n", encoding="utf-8")
    broken_sidecar = vault.kind_dir(P, "scratch") / "junk.conflict.md"
    broken_sidecar.write_text("not a record", encoding="utf-8")
    old = (NOW - timedelta(days=60)).timestamp()
    os.utime(sidecar, (old, old))
    os.utime(broken_sidecar, (old, old))
    run_gc(vault, P, now=NOW, purge=True)
    assert sidecar.read_text(encoding="utf-8").endswith("old\n")
    assert broken_sidecar.exists()


def test_unparseable_scratch_file_deleted_by_mtime(vault: Vault) -> None:
    put(vault, "scratch", "fine", age=1)
    scratch = vault.kind_dir(P, "scratch")
    stale = scratch / "garbled.md"
    stale.write_text("---\nid: [unclosed\n---\nbody\n", encoding="utf-8")
    fresh = scratch / "garbled-today.md"
    fresh.write_text("no frontmatter at all\n", encoding="utf-8")
    broken_trap = vault.kind_dir(P, "trap") / "broken.md"
    broken_trap.parent.mkdir(parents=True)
    broken_trap.write_text("no frontmatter at all\n", encoding="utf-8")
    old = (NOW - timedelta(days=8)).timestamp()
    for path in (stale, broken_trap):
        os.utime(path, (old, old))
    os.utime(fresh, ((NOW - timedelta(days=6)).timestamp(),) * 2)
    result = run_gc(vault, P, now=NOW)
    assert not stale.exists()
    assert fresh.exists() and broken_trap.exists()  # too young / not scratch: a person may fix it
    assert result.purged_scratch_count == 1
    assert result.purged_files == [vault.relative(stale)]
    assert any(e["id"] == "garbled" for e in vault.read_tombstones())


def test_shipped_plan_compacted_in_place_with_summary(mixed: Vault) -> None:
    path = mixed.record_path(P, "plan", "shipped-plan")
    completed = read_record(path).frontmatter["updated"][:10]
    result = run_gc(mixed, P, now=NOW)
    assert result.compacted_plans_count == 1
    assert result.compacted_plans == [mixed.relative(path)]
    record = read_record(path)
    assert record.frontmatter["compacted"] is True
    assert record.frontmatter["updated"] == format_iso(NOW)
    assert record.status == "shipped"
    for line in (
        "**Status:** Shipped",
        "**Outcome:** Checkout is one page.",
        f"**Completion Date:** {completed}",
        "**Verified Commit:** `4f2a9c1`",
        "**Related Slug:** `checkout-v2`",
    ):
        assert line in record.body
    assert run_gc(mixed, P, now=NOW).compacted_plans_count == 0  # compacted once


def test_compact_plan_record_without_optional_fields_uses_first_paragraph() -> None:
    text = (
        "---\nid: p\nkind: plan\nproject: demo\nstatus: shipped\n"
        "created: 2026-10-01T00:00:00.000Z\nupdated: 2026-10-05T00:00:00.000Z\n---\n"
        "# Rollout\n\nMoved images to the CDN.\n\nMore detail.\n"
    )
    record: Record = compact_plan_record(parse_record(text), NOW)
    assert "**Outcome:** Moved images to the CDN." in record.body
    assert "**Completion Date:** 2026-10-05" in record.body
    assert "Verified Commit" not in record.body and "Related Slug" not in record.body
    assert record.frontmatter["title"] == "Rollout"


def test_monthly_rollup_keeps_every_event_time_text_and_details(mixed: Vault) -> None:
    logs = mixed.kind_dir(P, "log")
    events = {read_record(p).id: read_record(p) for p in logs.glob("log-*.md")}
    result = run_gc(mixed, P, now=NOW)
    assert result.compacted_logs_count == 3
    months = {p.name for p in logs.glob("log-rollup-*.md")}
    assert months == {"log-rollup-2026-09.md", "log-rollup-2026-10.md"}
    september = read_record(logs / "log-rollup-2026-09.md")
    for record in events.values():
        if record.frontmatter["created"].startswith("2026-09"):
            assert f"## {record.frontmatter['created']} · `{record.id}`" in september.body
            assert record.body.strip() in september.body
            assert json.dumps(record.frontmatter["details"]) in september.body
    body = september.body
    assert body.index("Deployed v1.0") < body.index("Rolled back v1.0")  # chronological
    remaining = [read_record(p).body for p in logs.glob("log-2*.md")]
    assert remaining == ["Tests pass\n"]  # this month's young event stays
    assert {e["reason"] for e in mixed.read_tombstones() if "/logs/" in e["path"]} == {"gc-rollup"}
    assert all(mixed.index().by_path(path) is None for path in result.compacted_logs)


def test_rollup_frontmatter_matches_the_seed(mixed: Vault) -> None:
    run_gc(mixed, P, now=NOW)
    fm = read_record(mixed.kind_dir(P, "log") / "log-rollup-2026-09.md").frontmatter
    assert fm["id"] == "log-rollup-2026-09"
    assert (fm["kind"], fm["status"], fm["compacted"]) == ("log", "active", True)
    assert fm["tags"] == ["rollup", "monthly-log", "2026-09"]
    assert fm["created"] == format_iso(days_ago(70))  # the earliest merged event


def test_log_thirty_days_old_in_current_month_is_eligible(vault: Vault) -> None:
    now = datetime(2026, 10, 31, 12, 0, tzinfo=UTC)
    append_event(vault, P, event="first of the month", now=datetime(2026, 10, 1, 11, 0, tzinfo=UTC))
    append_event(vault, P, event="mid month", now=datetime(2026, 10, 15, tzinfo=UTC))
    result = run_gc(vault, P, now=now)
    assert result.compacted_logs_count == 1
    rollup = read_record(vault.kind_dir(P, "log") / "log-rollup-2026-10.md")
    assert "first of the month" in rollup.body and "mid month" not in rollup.body


def test_rollup_extended_by_second_gc_without_losing_text(vault: Vault) -> None:
    append_event(vault, P, event="early october", details={"step": 1}, now=datetime(2026, 10, 2, tzinfo=UTC))
    run_gc(vault, P, now=datetime(2026, 11, 1, tzinfo=UTC))
    rollup = vault.kind_dir(P, "log") / "log-rollup-2026-10.md"
    first_body = read_record(rollup).body
    # An October event that arrives late (synced from another machine, say) is merged next time.
    append_event(
        vault,
        P,
        event="late october\n\nwith a second paragraph",
        details={"step": 2},
        now=datetime(2026, 9, 30, 23, 0, tzinfo=UTC) + timedelta(days=20),
    )
    append_event(vault, P, event="even earlier", now=datetime(2026, 10, 1, 0, 0, tzinfo=UTC))
    result = run_gc(vault, P, now=NOW)
    assert result.compacted_logs_count == 2
    record = read_record(rollup)
    assert record.body.startswith(first_body)  # extended, not replaced
    for text in (
        "early october",
        "late october\n\nwith a second paragraph",
        '{"step": 2}',
        "even earlier",
    ):
        assert text in record.body
    assert record.frontmatter["created"] == "2026-10-01T00:00:00.000Z"
    assert record.frontmatter["eventCount"] == 3


def test_dry_run_reports_same_counts_as_real_run_and_changes_nothing(mixed: Vault) -> None:
    temp = mixed.kind_dir(P, "scratch") / f"{TEMP_PREFIX}abandoned"
    temp.write_text("half a write", encoding="utf-8")
    os.utime(temp, (time.time() - 120,) * 2)
    before = snapshot(mixed.root)
    dry = run_gc(mixed, P, now=NOW, dry_run=True)
    assert snapshot(mixed.root) == before
    assert dry.dry_run and not dry.rebuilt_fts and not dry.rebuilt_views
    real = run_gc(mixed, P, now=NOW)
    assert not real.dry_run and real.rebuilt_fts and real.rebuilt_views
    strip = {"dryRun", "rebuiltFts", "rebuiltViews"}
    assert {k: v for k, v in dry.to_json().items() if k not in strip} == {
        k: v for k, v in real.to_json().items() if k not in strip
    }
    assert dry.removed_temp_files == real.removed_temp_files == [mixed.relative(temp)]
    assert (
        sum(
            [
                real.purged_scratch_count,
                real.purged_review_count,
                real.traps_archived_count,
                real.compacted_plans_count,
                real.compacted_logs_count,
            ]
        )
        > 0
    )


def test_gc_removes_temp_files_older_than_a_minute_only(vault: Vault) -> None:
    put(vault, "trap", "t", age=1)
    old_temp = vault.kind_dir(P, "trap") / f"{TEMP_PREFIX}old"
    new_temp = vault.project_dir(P) / f"{TEMP_PREFIX}new"
    root_temp = vault.root / f"{TEMP_PREFIX}config"
    for path in (old_temp, new_temp, root_temp):
        path.write_text("partial", encoding="utf-8")
    for path in (old_temp, root_temp):
        os.utime(path, (time.time() - 61,) * 2)
    result = run_gc(vault, P, now=NOW)
    assert not old_temp.exists() and not root_temp.exists()
    assert new_temp.exists()
    assert sorted(result.removed_temp_files) == sorted([vault.relative(old_temp), vault.relative(root_temp)])


def test_gc_never_touches_files_outside_the_vault(vault: Vault, tmp_path: Path) -> None:
    outside = tmp_path / "product-repo"
    outside.mkdir()
    note = outside / "note.md"
    note.write_text(
        "---\nid: note\nkind: scratch\nproject: demo\ncreated: 2020-01-01T00:00:00.000Z\n"
        "updated: 2020-01-01T00:00:00.000Z\n---\nnot vault data\n",
        encoding="utf-8",
    )
    garbled = outside / "garbled.md"
    garbled.write_text("garbage", encoding="utf-8")
    temp = outside / f"{TEMP_PREFIX}x"
    temp.write_text("someone else's temp", encoding="utf-8")
    for path in (note, garbled, temp):
        os.utime(path, (time.time() - 90 * 86400,) * 2)
    put(vault, "trap", "t", age=1)
    (vault.project_dir(P) / "scratch").symlink_to(outside, target_is_directory=True)
    (vault.kind_dir(P, "trap") / "linked.md").symlink_to(note)
    before = snapshot(outside)
    run_gc(vault, P, now=NOW, purge=True)
    assert snapshot(outside) == before


def test_gc_rebuilds_index_and_views(mixed: Vault) -> None:
    run_gc(mixed, P, now=NOW)
    traps_view = (mixed.project_dir(P) / "TRAPS.md").read_text(encoding="utf-8")
    active, inactive = traps_view.split("## Inactive traps")
    assert "### [HIGH] Live trap" in active and "Expired trap" not in active
    assert "[Expired trap](traps/expired-trap.md) · trap · archived" in inactive
    found = search_records(mixed, P, "expired trap", kinds=["trap"], now=NOW)
    assert "expired-trap" not in [hit.id for hit in found.results]  # "Live trap" holds the word trap
    archived = search_records(mixed, P, "expired trap", kinds=["trap"], status="archived", now=NOW)
    assert [hit.id for hit in archived.results] == ["expired-trap"]


def test_gc_requests_a_vault_commit(vault_dir: Path) -> None:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    vault_dir.mkdir(parents=True)
    (vault_dir / "config.json").write_text(
        json.dumps({"vaultGit": {"enabled": True, "atomic": False}}), encoding="utf-8"
    )
    vault = Vault.open(vault_dir)
    put(vault, "scratch", "old", age=30)
    run_gc(vault, P, now=NOW)
    log = subprocess.run(
        ["git", "-C", str(vault_dir), "log", "--format=%B"],
        capture_output=True,
        text=True,
        encoding="utf-8",
        check=True,
    ).stdout
    assert f"gc {P}" in log
    status = subprocess.run(
        ["git", "-C", str(vault_dir), "status", "--porcelain"],
        capture_output=True,
        text=True,
        encoding="utf-8",
        check=True,
    ).stdout
    assert status == ""


def test_sweep_and_log_compaction_run_on_their_own(mixed: Vault) -> None:
    sweep = sweep_expired_records(mixed, P, now=NOW)
    assert sweep.traps_archived_count == 1 and sweep.compacted_logs_count == 0
    assert not (mixed.kind_dir(P, "log") / "log-rollup-2026-09.md").exists()
    logs = compact_monthly_logs(mixed, P, now=NOW)
    assert logs.compacted_logs_count == 3 and logs.traps_archived_count == 0


def test_gc_of_a_project_without_records_reports_zero(vault: Vault) -> None:
    result = run_gc(vault, "nothing-here", now=NOW)
    assert result.to_json()["details"] == {
        "purgedFiles": [],
        "compactedPlans": [],
        "compactedLogs": [],
    }
    assert not vault.project_dir("nothing-here").exists()


GC_KEYS = {
    "projectId",
    "purgedScratchCount",
    "purgedReviewCount",
    "trapsArchivedCount",
    "decisionsArchivedCount",
    "plansArchivedCount",
    "compactedPlansCount",
    "compactedLogsCount",
    "rebuiltFts",
    "rebuiltViews",
    "dryRun",
    "details",
}


def test_cli_gc_json_has_exactly_the_seed_fields(vault: Vault) -> None:
    upsert_record(
        vault,
        P,
        kind="scratch",
        body="old\n",
        slug="old",
        now=datetime.now(UTC) - timedelta(days=9),
    )
    runner = CliRunner()
    dry = runner.invoke(cli, ["gc", "--dry-run", "--json"])
    assert dry.exit_code == 0, dry.output
    data = json.loads(dry.stdout)
    assert set(data) == GC_KEYS
    assert set(data["details"]) == {"purgedFiles", "compactedPlans", "compactedLogs"}
    assert data["dryRun"] is True and data["purgedScratchCount"] == 1
    real = json.loads(runner.invoke(cli, ["gc", "--json"]).stdout)
    assert real["purgedScratchCount"] == 1 and real["rebuiltFts"] is True and real["projectId"] == P


def test_cli_gc_prints_a_readable_summary_without_progress_bar_off_terminal(vault: Vault) -> None:
    upsert_record(
        vault,
        P,
        kind="review",
        body="old review\n",
        slug="r",
        now=datetime.now(UTC) - timedelta(days=20),
    )
    result = CliRunner().invoke(cli, ["gc"])
    assert result.exit_code == 0, result.output
    assert "purged reviews" in result.stdout and "reviews/r.md" in result.stdout
    assert result.stderr == ""


def test_a_log_saved_under_a_rollup_file_name_is_extended_not_lost(vault: Vault) -> None:
    from memosite.curator import run_gc
    from memosite.recordfile import read_record
    from memosite.store import append_event, upsert_record

    now = datetime(2026, 11, 30, tzinfo=UTC)
    upsert_record(
        vault,
        "demo",
        kind="log",
        slug="log-rollup-2026-09",
        body="Refunds were double-issued\n",
        frontmatter={"id": "sept-incident", "created": "2026-09-10T00:00:00Z"},
        now=now,
    )
    append_event(vault, "demo", event="September deploy", now=datetime(2026, 9, 12, tzinfo=UTC))
    run_gc(vault, "demo", now=now)
    rollup = vault.kind_dir("demo", "log") / "log-rollup-2026-09.md"
    text = read_record(rollup).body
    assert "Refunds were double-issued" in text and "September deploy" in text
