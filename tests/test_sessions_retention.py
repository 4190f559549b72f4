"""Retention: newest N and younger than D days stay; only validated session directories go."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memosite.sessions import Session, apply_retention
from memosite.sessions.catalog import SessionEntry
from memosite.sessions.metadata import Manifest
from memosite.sessions.paths import sessions_root
from memosite.sessions.retention import plan_retention
from memosite.vault import Vault

NOW = datetime(2026, 3, 1, tzinfo=UTC)


def configured(vault_dir: Path, *, keep: int, days: float) -> Vault:
    Vault.open(vault_dir)
    config = json.loads((vault_dir / "config.json").read_text(encoding="utf-8"))
    config["sessions"].update(keep=keep, maxAgeDays=days)
    (vault_dir / "config.json").write_text(json.dumps(config), encoding="utf-8")
    return Vault.open(vault_dir)


def make(vault: Vault, session_id: str, day: str, *, ended: bool = True) -> Path:
    moment = f"{day}T10:00:00.000Z"
    with Session.start(vault, "demo", session_id=session_id, clock=lambda: moment, sync_record=False) as session:
        if ended:
            session.end()
    return sessions_root(vault, "demo") / session_id


def entry(session_id: str, updated: str, status: str = "ended") -> SessionEntry:
    manifest = Manifest(session_id, "demo", status=status, updated=updated)
    return SessionEntry(session_id, Path("/nowhere") / session_id, manifest)


def test_plan_removes_ended_sessions_beyond_the_newest_n_or_older_than_d_days() -> None:
    entries = [
        entry("newest", "2026-02-28T00:00:00.000Z"),
        entry("young", "2026-02-20T00:00:00.000Z"),
        entry("old-active", "2025-11-01T00:00:00.000Z", status="active"),
        entry("no-time", ""),
    ]
    decisions = {d.session_id: d for d in plan_retention(entries, keep=1, max_age_days=30, now=NOW)}
    assert not decisions["newest"].remove and "newest" in decisions["newest"].reason
    assert decisions["young"].remove and decisions["young"].reason == "beyond the newest 1 ended session"
    assert not decisions["old-active"].remove and decisions["old-active"].reason == "active"
    assert decisions["no-time"].remove  # beyond the newest 1 ended sessions, whatever its time


def test_plan_removes_an_old_session_even_among_the_newest_n() -> None:
    entries = [entry("old", "2025-12-01T00:00:00.000Z"), entry("no-time", "")]
    decisions = {d.session_id: d for d in plan_retention(entries, keep=50, max_age_days=30, now=NOW)}
    assert decisions["old"].remove and decisions["old"].reason == "older than 30 days"
    assert not decisions["no-time"].remove  # an unreadable time is never too old


def test_active_sessions_do_not_count_towards_the_newest_n() -> None:
    entries = [entry("active", "2026-02-28T00:00:00.000Z", status="active"), entry("ended", "2026-02-27T00:00:00.000Z")]
    decisions = {d.session_id: d for d in plan_retention(entries, keep=1, max_age_days=30, now=NOW)}
    assert not decisions["ended"].remove


def test_ended_sessions_beyond_the_newest_n_or_old_are_removed(vault_dir: Path) -> None:
    vault = configured(vault_dir, keep=2, days=30)
    newest = make(vault, "s-newest", "2026-02-27")
    old_among_newest = make(vault, "s-old", "2025-12-01")
    beyond = make(vault, "s-older", "2025-10-01")
    result = apply_retention(vault, "demo", now=NOW)
    assert sorted(result.removed) == ["s-old", "s-older"]
    assert newest.is_dir()
    assert not old_among_newest.exists() and not beyond.exists()
    assert [p.name for p in sessions_root(vault, "demo").iterdir() if p.name.startswith(".")] == []


def test_dry_run_removes_nothing(vault_dir: Path) -> None:
    vault = configured(vault_dir, keep=0, days=1)
    old = make(vault, "s-old", "2025-12-01")
    result = apply_retention(vault, "demo", dry_run=True, now=NOW)
    assert result.removed == ["s-old"] and result.dry_run
    assert old.is_dir()


def test_active_sessions_are_never_removed(vault_dir: Path) -> None:
    vault = configured(vault_dir, keep=0, days=1)
    active = make(vault, "s-active", "2025-01-01", ended=False)
    assert apply_retention(vault, "demo", now=NOW).removed == []
    assert active.is_dir()


def test_a_manifest_claiming_ended_does_not_outvote_the_log(vault_dir: Path) -> None:
    vault = configured(vault_dir, keep=0, days=1)
    active = make(vault, "s-active", "2025-01-01", ended=False)
    manifest = json.loads((active / "manifest.json").read_text(encoding="utf-8"))
    manifest["status"] = "ended"
    (active / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    result = apply_retention(vault, "demo", now=NOW)
    assert result.removed == []
    assert [s.reason for s in result.skipped] == ["active according to its log"]
    assert active.is_dir()


def test_planted_symlink_and_non_session_directory_survive(vault_dir: Path, tmp_path: Path) -> None:
    vault = configured(vault_dir, keep=0, days=1)
    old = make(vault, "s-old", "2025-01-01")
    root = sessions_root(vault, "demo")
    # A real, old, ended session outside the vault, linked in under a valid session name.
    outside_vault = configured(tmp_path / "other-vault", keep=0, days=1)
    target = make(outside_vault, "s-target", "2025-01-01")
    (root / "s-link").symlink_to(target, target_is_directory=True)
    # A directory that is not a session, with an old-looking manifest that names elsewhere.
    stray = root / "notes"
    stray.mkdir()
    (stray / "manifest.json").write_text(json.dumps({"sessionId": "s-target", "path": str(target)}), encoding="utf-8")
    (stray / "keep.txt").write_text("mine", encoding="utf-8")
    record = root / "session-s-old.md"
    record.write_text("---\nid: session-s-old\n---\nbody\n", encoding="utf-8")

    result = apply_retention(vault, "demo", now=NOW)

    assert result.removed == ["s-old"]
    assert not old.exists()
    assert (root / "s-link").is_symlink() and target.is_dir() and (target / "events.jsonl").exists()
    assert (stray / "keep.txt").read_text(encoding="utf-8") == "mine"
    assert record.exists()


def test_symlinks_inside_a_removed_session_are_not_followed(vault_dir: Path, tmp_path: Path) -> None:
    vault = configured(vault_dir, keep=0, days=1)
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "data.txt").write_text("do not delete", encoding="utf-8")
    old = make(vault, "s-old", "2025-01-01")
    (old / "derived" / "escape").symlink_to(precious, target_is_directory=True)
    assert apply_retention(vault, "demo", now=NOW).removed == ["s-old"]
    assert (precious / "data.txt").read_text(encoding="utf-8") == "do not delete"


def test_a_session_held_open_by_a_writer_is_skipped(vault_dir: Path) -> None:
    vault = configured(vault_dir, keep=0, days=1)
    old = make(vault, "s-old", "2025-01-01")
    with Session.open(vault, "demo", "s-old", sync_record=False):
        result = apply_retention(vault, "demo", now=NOW)
    assert result.removed == []
    assert [s.reason for s in result.skipped] == ["open in another process"]
    assert old.is_dir()


@pytest.mark.parametrize("keep", [0, 2])
def test_retention_reads_keep_and_age_from_config(vault_dir: Path, keep: int) -> None:
    vault = configured(vault_dir, keep=keep, days=1000)
    for number in range(3):
        make(vault, f"s{number}", f"2025-12-0{number + 1}")
    result = apply_retention(vault, "demo", now=NOW)
    assert (result.keep, result.max_age_days) == (keep, 1000)
    assert len(result.removed) == 3 - keep
    assert len(apply_retention(configured(vault_dir, keep=50, days=10), "demo", now=NOW).removed) == keep


# --- zero-turn and crashed sessions, vtcode's sessions -------------------------------------------


def test_a_session_that_never_started_a_turn_is_closed_once_it_has_ended(vault_dir: Path) -> None:
    vault = configured(vault_dir, keep=50, days=30)
    ended = make(vault, "zero-ended", "2025-10-01")
    young = make(vault, "zero-young", "2026-02-27")
    result = apply_retention(vault, "demo", now=NOW)
    assert result.removed == ["zero-ended"]
    assert not ended.exists() and young.is_dir()


def test_a_crashed_session_stays_active_and_is_kept(vault_dir: Path) -> None:
    vault = configured(vault_dir, keep=0, days=1)
    crashed = make(vault, "crashed-empty", "2025-01-01", ended=False)
    moment = "2025-01-02T10:00:00.000Z"
    with Session.start(vault, "demo", session_id="crashed-mid-turn", clock=lambda: moment, sync_record=False) as s:
        s.start_turn()
        s.append("message", text="the process died here")
    # Killed before any metadata: the manifest is gone, only the log tells what happened.
    (sessions_root(vault, "demo") / "crashed-mid-turn" / "manifest.json").unlink()
    result = apply_retention(vault, "demo", now=NOW)
    assert result.removed == []
    assert {d.session_id: d.reason for d in result.decisions} == {
        "crashed-empty": "active",
        "crashed-mid-turn": "active",
    }
    assert crashed.is_dir()


def test_a_directory_that_never_became_a_session_is_never_touched(vault_dir: Path) -> None:
    vault = configured(vault_dir, keep=0, days=0)
    stub = sessions_root(vault, "demo") / "half-made"
    stub.mkdir(parents=True)
    (stub / "events.jsonl").write_bytes(b"")
    result = apply_retention(vault, "demo", now=NOW)
    assert result.decisions == [] and stub.is_dir()


def test_retention_over_a_vtcode_root_follows_vtcodes_status(vault_dir: Path, tmp_path: Path) -> None:
    import shutil

    vault = configured(vault_dir, keep=0, days=30)
    root = tmp_path / "sessions"
    shutil.copytree(Path(__file__).parent / "corpus" / "vtcode" / "workspace" / ".vtcode" / "sessions", root)
    later = datetime(2026, 12, 1, tzinfo=UTC)
    dry = apply_retention(vault, "demo", now=later, root=root, dry_run=True)
    assert dry.removed == ["sess-2026-08-23-a"] and (root / "sess-2026-08-23-a").is_dir()
    result = apply_retention(vault, "demo", now=later, root=root)
    assert result.removed == ["sess-2026-08-23-a"]
    assert not (root / "sess-2026-08-23-a").exists()
    assert (root / "exec_task_9c01").is_dir()  # active: protected
    assert (root / "not-a-session" / "notes.txt").is_file()


# --- sessions vtcode's migrate_legacy imported: manifest.json and derived/, no log ----------------


def migrated(root: Path, session_id: str, *, updated: str, status: str = "completed") -> Path:
    """A session as vtcode's migrate_legacy leaves it: derived/memory.json (the legacy envelope,
    copied as it was) and a pretty-printed SessionManifest, no events.jsonl and no index/."""
    directory = root / session_id
    (directory / "derived").mkdir(parents=True)
    memory = {"session_id": session_id, "summary": "imported", "grounded_facts": [{"fact": "the widget is blue"}]}
    (directory / "derived" / "memory.json").write_text(json.dumps(memory, indent=2), encoding="utf-8")
    manifest = {
        "session_id": session_id,
        "schema_version": 1,
        "created_at": updated,
        "updated_at": updated,
        "turn_count": 0,
        "event_count": 0,
        "status": status,
    }
    (directory / "manifest.json").write_text(json.dumps(manifest, indent=2), encoding="utf-8")
    return directory


def test_a_migrated_session_has_the_status_its_manifest_gives_it(vault_dir: Path, tmp_path: Path) -> None:
    vault = configured(vault_dir, keep=0, days=30)
    root = tmp_path / ".vtcode" / "sessions"
    completed = migrated(root, "session-foo", updated="2025-01-01T00:00:00+00:00")
    active = migrated(root, "session-bar", updated="2025-01-01T00:00:00+00:00", status="active")
    with Session.open(vault, "demo", "session-foo", writable=False, root=root) as session:
        assert session.summary().status == "ended"
    result = apply_retention(vault, "demo", now=NOW, root=root)
    assert result.removed == ["session-foo"] and result.skipped == []
    assert {d.session_id: d.remove for d in result.decisions} == {"session-foo": True, "session-bar": False}
    assert not completed.exists() and active.is_dir()


def test_a_manifest_of_only_vtcodes_session_summary_fields_is_a_session(vault_dir: Path, tmp_path: Path) -> None:
    vault = configured(vault_dir, keep=0, days=0)
    root = tmp_path / "sessions"
    linked = root / "linked-session"
    linked.mkdir(parents=True)
    summary = {"session_id": "linked-session", "turn_count": 0, "event_count": 0, "status": "completed"}
    (linked / "manifest.json").write_text(json.dumps({**summary, "updated_at": "2020-01-01T00:00:00Z"}), "utf-8")
    with Session.open(vault, "demo", "linked-session", writable=False, root=root) as session:
        shown = session.summary()
    assert (shown.status, shown.updated, shown.rescan_reason) == ("ended", "2020-01-01T00:00:00Z", None)
    assert apply_retention(vault, "demo", now=NOW, root=root).removed == ["linked-session"]
    assert not linked.exists()


def test_a_session_the_recheck_keeps_has_one_decision_and_it_says_keep(vault_dir: Path) -> None:
    vault = configured(vault_dir, keep=0, days=1)
    active = make(vault, "s-active", "2025-01-01", ended=False)
    manifest = json.loads((active / "manifest.json").read_text(encoding="utf-8"))
    manifest["status"] = "completed"
    (active / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    report = apply_retention(vault, "demo", now=NOW, dry_run=True).to_json()
    assert report["removed"] == []
    kept = {"sessionId": "s-active", "action": "keep", "reason": "active according to its log"}
    assert report["decisions"] == report["skipped"] == [{**kept, "lastActivity": "2025-01-01T10:00:00.000Z"}]
