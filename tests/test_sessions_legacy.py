"""Session logs memosite wrote before it used vtcode's shapes keep working: read both, write vtcode's.

tests/corpus/memosite-legacy holds a session written by the previous memosite (``{"version": 1,
"seq", ...}`` lines, camelCase manifest and turn index, ``<session>/audit-pack.json``).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import vtcode_reader as vt

from memosite.sessions import Session, list_sessions, pack_session, search_sessions, verify_session
from memosite.sessions.events import decode_event
from memosite.sessions.paths import SessionPaths, sessions_root
from memosite.vault import Vault

LEGACY = Path(__file__).parent / "corpus" / "memosite-legacy" / "projects" / "demo" / "sessions" / "legacy-1"


@pytest.fixture
def legacy(vault: Vault) -> SessionPaths:
    shutil.copytree(LEGACY, sessions_root(vault, "demo") / "legacy-1")
    return SessionPaths.for_session(vault, "demo", "legacy-1")


def snapshot(directory: Path) -> dict[str, bytes]:
    return {p.relative_to(directory).as_posix(): p.read_bytes() for p in directory.rglob("*") if p.is_file()}


def test_an_old_session_reads_as_it_was_written(vault: Vault, legacy: SessionPaths) -> None:
    before = snapshot(legacy.dir)
    with Session.open(vault, "demo", "legacy-1", writable=False, sync_record=False) as session:
        summary = session.summary(recent=20)
    assert (summary.status, summary.turns, summary.events, summary.facts) == ("ended", 2, 11, 1)
    assert [goal["status"] for goal in summary.goals] == ["completed"]
    assert [span.status for span in session.log.turns] == ["completed", "failed"]
    assert "Backfilled historical invoices — Счета обновлены." in [e.text for e in summary.recent]
    assert [entry.session_id for entry in list_sessions(vault, "demo")] == ["legacy-1"]
    assert search_sessions(vault, "demo", "счета").hits[0].session_id == "legacy-1"
    assert snapshot(legacy.dir) == before  # reading changes nothing


def test_an_old_audit_pack_still_verifies(vault: Vault, legacy: SessionPaths) -> None:
    assert legacy.legacy_audit_pack.is_file() and not legacy.audit_pack.exists()
    result = verify_session(vault, "demo", "legacy-1")
    assert result.ok and result.checked == 5 and result.unaccounted == []


def test_writing_to_an_old_session_appends_vtcode_lines_and_republishes_metadata(
    vault: Vault, legacy: SessionPaths
) -> None:
    old_lines = legacy.events.read_bytes().splitlines(keepends=True)
    legacy.events.write_bytes(b"".join(old_lines[:-1]))  # reopen it: drop session.ended
    with Session.open(vault, "demo", "legacy-1", sync_record=False) as session:
        assert session.log.rescan_reason == "the manifest was written by vtcode or an older memosite"
        session.start_turn()
        session.append("message", text="Written in vtcode's shape after the old lines.")
        session.end_turn()
        session.end()
    data = legacy.events.read_bytes()
    lines = data.splitlines(keepends=True)
    assert lines[: len(old_lines) - 1] == old_lines[:-1]  # history is never rewritten
    new = [json.loads(line) for line in lines[len(old_lines) - 1 :]]
    assert all(list(line) == ["schema_version", "event"] for line in new)
    offset, events = 0, []
    for line in lines:
        events.append(decode_event(line, offset))
        offset += len(line)
    assert all(event is not None for event in events)
    assert [event.seq for event in events if event] == list(range(1, len(lines) + 1))
    manifest = json.loads(legacy.manifest.read_text(encoding="utf-8"))
    assert (manifest["session_id"], manifest["status"], manifest["turn_count"]) == ("legacy-1", "completed", 3)
    assert "entries" in json.loads(legacy.turns_index.read_text(encoding="utf-8"))
    with Session.open(vault, "demo", "legacy-1", writable=False, sync_record=False) as session:
        assert session.log.rescan_reason is None and session.log.meta.last_turn == 3
    # vtcode opens it through the republished manifest and index; it cannot decode the old lines.
    assert vt.open_session(legacy.dir).manifest["turn_count"] == 3
    assert vt.scan(legacy.dir).manifest["event_count"] == len(new)
    pack_session(vault, "demo", "legacy-1")
    assert legacy.audit_pack.is_file() and not legacy.legacy_audit_pack.exists()
    assert verify_session(vault, "demo", "legacy-1").ok
