"""vtcode-memory sessions both ways: memosite opens vtcode's session directories, and writes its
own in the shapes vtcode reads (checked with tests/vtcode_reader.py, written from vtcode's code).

The corpus under tests/corpus/vtcode holds a workspace's ``.vtcode/sessions`` laid out as
vtcode's serde_json writes it: a completed two-turn session with reasoning, tool and agent
message items, a malformed lifecycle line, an unknown event type and a failed turn, a crashed
(still active) session whose manifest names a raw id its directory name sanitised, and a stray
directory that is not a session.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import vtcode_reader as vt
from click.testing import CliRunner

from memosite.cli import cli
from memosite.sessions import Session, list_sessions, pack_session, search_sessions, verify_session
from memosite.sessions.errors import SessionForeign
from memosite.sessions.paths import SessionPaths
from memosite.vault import Vault

CORPUS = Path(__file__).parent / "corpus" / "vtcode" / "workspace"
SESSION = "sess-2026-08-23-a"


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, vault: Vault) -> Path:
    """A copy of the corpus workspace as the working directory (the vault exists too)."""
    target = tmp_path / "workspace"
    shutil.copytree(CORPUS, target)
    monkeypatch.chdir(target)
    return target


def run_json(*args: str, ok: bool = True) -> Any:
    result = CliRunner().invoke(cli, ["session", *args, "--json"])
    assert (result.exit_code == 0) is ok, result.output
    return json.loads(result.stdout)


def snapshot(directory: Path) -> dict[str, bytes]:
    return {p.relative_to(directory).as_posix(): p.read_bytes() for p in directory.rglob("*") if p.is_file()}


# --- opening vtcode's sessions -------------------------------------------------------------------


def test_show_dir_reads_a_vtcode_session_as_vtcode_counts_it(workspace: Path) -> None:
    session_dir = workspace / ".vtcode" / "sessions" / SESSION
    before = snapshot(session_dir)
    expected = vt.scan(session_dir)
    shown = run_json("show", "--dir", str(session_dir), "--events", "20")
    assert shown["events"] == expected.manifest["event_count"] == 15
    assert shown["turns"] == 2 and shown["status"] == "ended" and shown["malformedLines"] == 1
    assert shown["startTime"] == "2026-08-23T05:11:10.123456789+00:00"
    types = [event["type"] for event in shown["recent"]]
    assert types[:2] == ["session.started", "turn.started"] and types[-1] == "session.ended"
    messages = [e["payload"]["text"] for e in shown["recent"] if e["type"] == "message"]
    assert messages == [
        "Renamed the ledger parser module and updated its three imports.",
        "Документация обновлена; 東京 の設定も確認しました — café ✅",
    ]
    assert all(event["foreign"] for event in shown["recent"])
    assert [e["turn"] for e in shown["recent"] if e["type"] == "message"] == [1, 2]
    assert snapshot(session_dir) == before  # reading writes nothing into vtcode's directory


def test_memosite_finds_the_turns_vtcode_indexed(workspace: Path, vault: Vault) -> None:
    root = workspace / ".vtcode" / "sessions"
    indexed = json.loads((root / SESSION / "index" / "turns.json").read_text(encoding="utf-8"))["entries"]
    with Session.open(vault, "demo", SESSION, writable=False, root=root) as session:
        spans = session.log.turns
        assert [(s.turn, s.start_offset, s.last_end, s.event_count) for s in spans] == [
            (e["turn_number"], e["start_offset"], e["end_offset"], e["event_count"]) for e in indexed
        ]
        assert [s.status for s in spans] == ["completed", "failed"]


def test_search_finds_the_text_of_vtcode_agent_messages(workspace: Path) -> None:
    session_dir = workspace / ".vtcode" / "sessions" / SESSION
    hits = run_json("search", "ledger parser imports", "--dir", str(session_dir))["hits"]
    assert hits[0]["type"] == "message" and hits[0]["turn"] == 1
    assert "updated its three imports" in hits[0]["snippet"]
    for word, turn in (("Документация", 2), ("東京", 2), ("café", 2)):
        found = run_json("search", word, "--dir", str(session_dir))["hits"]
        assert found and found[0]["turn"] == turn, word
    tool = run_json("search", "ledger_parser", "--dir", str(session_dir))["hits"]
    assert {hit["type"] for hit in tool} >= {"item.completed"}  # tool arguments and outputs
    failed = run_json("search", "missing crate", "--dir", str(session_dir))["hits"]
    assert failed[0]["type"] == "turn.failed"


def test_session_search_folds_diacritics_and_finds_words_inside_unspaced_text(workspace: Path) -> None:
    """As record search does: ``cafe`` finds ``café``, ``設定`` is found inside ``の設定も``."""
    message = "Документация обновлена; 東京 の設定も確認しました — café ✅"
    for query in ("cafe", "CAFÉ", "設定", "確認", "東", "しました", "документация", "ДОКУМЕНТАЦИЯ", "обновлена"):
        hits = run_json("search", query, "--root", ".vtcode/sessions")["hits"]
        assert [(hit["sessionId"], hit["type"], hit["snippet"]) for hit in hits] == [
            (SESSION, "message", message)  # the emoji too: it is searchable text, not a gap
        ], query
    assert [hit["type"] for hit in run_json("search", "✅", "--root", ".vtcode/sessions")["hits"]] == ["message"]


def test_in_progress_item_snapshots_are_not_searched_their_completed_item_is(workspace: Path) -> None:
    """vtcode streams an item as item.started/item.updated snapshots and then item.completed, the
    item's final state (msg-1 here: "Renaming" → "Renaming the ledger" → "Renamed the ledger
    parser module …"). vtcode's own memory search reads only what completed items leave behind, so
    the snapshots are not indexed: text the agent replaced is not found, and a finished message is
    one hit, not one per snapshot."""
    session_dir = workspace / ".vtcode" / "sessions" / SESSION
    lines = [
        json.loads(line)["event"] for line in (session_dir / "events.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    snapshots = [e["item"]["text"] for e in lines if e["type"] in ("item.started", "item.updated")]
    assert snapshots == ["Renaming", "Renaming the ledger"]
    assert run_json("search", "Renaming", "--dir", str(session_dir))["hits"] == []
    ledger = [
        hit for hit in run_json("search", "ledger", "--dir", str(session_dir))["hits"] if hit["type"] == "message"
    ]
    assert [hit["line"] for hit in ledger] == [8]  # the completed msg-1 alone
    assert ledger[0]["snippet"].startswith("Renamed the ledger parser module")


def test_a_sessions_root_lists_and_searches_every_vtcode_session(workspace: Path) -> None:
    listed = run_json("list", "--root", ".vtcode/sessions")["sessions"]
    assert {row["sessionId"]: row["status"] for row in listed} == {SESSION: "ended", "exec_task_9c01": "active"}
    hits = run_json("search", "invoices cents", "--root", ".vtcode/sessions")
    assert hits["sessions"] == ["exec_task_9c01", SESSION]
    assert hits["hits"][0]["sessionId"] == "exec_task_9c01"


def test_a_configured_sessions_root_is_used_by_every_command(workspace: Path, vault_dir: Path) -> None:
    Vault.open(vault_dir).close()
    machine = vault_dir / "config.local.json"  # sessions.root is this machine's setting
    config = json.loads(machine.read_text(encoding="utf-8"))
    config["sessions"] = {"root": ".vtcode/sessions"}
    machine.write_text(json.dumps(config), encoding="utf-8")
    assert {row["sessionId"] for row in run_json("list")["sessions"]} == {SESSION, "exec_task_9c01"}
    assert run_json("show", SESSION)["turns"] == 2
    config["sessions"]["root"] = 7
    machine.write_text(json.dumps(config), encoding="utf-8")
    assert "sessions.root" in run_json("list", ok=False)["error"]["message"]


def test_a_vtcode_workspace_is_read_without_any_memosite_vault(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A vtcode user points memosite at their sessions: reading them needs no vault, creates none."""
    target = tmp_path / "workspace"
    shutil.copytree(CORPUS, target)
    monkeypatch.chdir(target)
    absent = tmp_path / "no-vault-here"
    monkeypatch.setenv("MEMOSITE_VAULT", str(absent))
    root = target / ".vtcode" / "sessions"
    before = snapshot(root)
    assert run_json("show", "--dir", str(root / SESSION))["turns"] == 2
    assert {row["sessionId"] for row in run_json("list", "--root", ".vtcode/sessions")["sessions"]} == {
        SESSION, "exec_task_9c01",
    }  # fmt: skip
    hits = run_json("search", "ledger parser imports", "--root", ".vtcode/sessions")["hits"]
    assert hits and hits[0]["sessionId"] == SESSION
    refused = run_json("verify", "--dir", str(root / SESSION), ok=False)
    assert "no audit pack" in refused["error"]["message"]
    assert not absent.exists() and snapshot(root) == before
    # The project's own sessions live in a vault: without one, that is what the error says.
    own = run_json("show", SESSION, ok=False)
    assert own["error"]["code"] == "VAULT_NOT_FOUND" and "MEMOSITE_VAULT" in own["error"]["message"]


def test_pack_and_verify_a_vtcode_session_dir(workspace: Path) -> None:
    session_dir = workspace / ".vtcode" / "sessions" / SESSION
    log_before = (session_dir / "events.jsonl").read_bytes()
    manifest_before = (session_dir / "manifest.json").read_bytes()
    packed = run_json("pack", "--dir", str(session_dir))
    pack = json.loads((session_dir / "derived" / "audit-pack.json").read_text(encoding="utf-8"))
    assert {entry["path"] for entry in pack["entries"]} == {
        "events.jsonl", "manifest.json", "index/turns.json", "derived/memory.json",
    }  # fmt: skip
    assert packed["sessionId"] == SESSION and pack["session_id"] == SESSION
    assert (session_dir / "events.jsonl").read_bytes() == log_before
    assert (session_dir / "manifest.json").read_bytes() == manifest_before
    assert run_json("verify", "--dir", str(session_dir))["ok"] is True
    (session_dir / "events.jsonl").write_bytes(log_before + b'{"schema_version":"0.11.0","event":{"type":"x"}}\n')
    result = CliRunner().invoke(cli, ["session", "verify", "--dir", str(session_dir)])
    assert result.exit_code == 1 and "changed: events.jsonl" in result.stdout


def test_memosite_never_writes_into_a_vtcode_session(workspace: Path, vault: Vault) -> None:
    root = workspace / ".vtcode" / "sessions"
    before = snapshot(root / SESSION)
    with pytest.raises(SessionForeign):
        Session.open(vault, "demo", SESSION, root=root)
    result = CliRunner().invoke(
        cli, ["session", "append", "--root", str(root), "--session", SESSION, "--type", "fact", "--text", "x"]
    )
    assert result.exit_code == 1 and result.stderr.count("\n") == 1 and "written by vtcode" in result.stderr
    assert snapshot(root / SESSION) == before


def test_a_crashed_vtcode_session_with_a_sanitised_name_is_active(workspace: Path, vault: Vault) -> None:
    root = workspace / ".vtcode" / "sessions"
    with Session.open(vault, "demo", "exec_task_9c01", writable=False, root=root) as session:
        summary = session.summary()
    assert (summary.status, summary.open_turn, summary.events) == ("active", 1, 3)
    entries = {entry.session_id: entry for entry in list_sessions(vault, "demo", root=root)}
    assert entries["exec_task_9c01"].active and not entries[SESSION].active
    assert "not-a-session" not in entries


def write_migrated(root: Path, session_id: str, facts: list[str], *, updated: str) -> Path:
    """A session as vtcode's migrate_legacy leaves it: the legacy memory envelope copied to
    derived/memory.json, a pretty-printed SessionManifest with status "completed", no log."""
    directory = root / session_id
    (directory / "derived").mkdir(parents=True)
    memory = {"session_id": session_id, "summary": "imported", "grounded_facts": [{"fact": f} for f in facts]}
    (directory / "derived" / "memory.json").write_text(json.dumps(memory, indent=2), encoding="utf-8")
    manifest = {
        "session_id": session_id, "schema_version": 1, "created_at": updated, "updated_at": updated,
        "turn_count": 0, "event_count": 0, "status": "completed",
    }  # fmt: skip
    (directory / "manifest.json").write_text(json.dumps(manifest, indent=2), encoding="utf-8")
    return directory


def test_show_list_and_retain_agree_that_a_migrated_vtcode_session_has_ended(workspace: Path) -> None:
    root = workspace / ".vtcode" / "sessions"
    migrated = write_migrated(root, "session-foo", ["the widget is blue"], updated="2020-01-01T00:00:00+00:00")
    before = snapshot(migrated)
    shown = run_json("show", "--dir", str(migrated))
    assert (shown["status"], shown["hasLog"], shown["rescanReason"]) == ("ended", False, None)
    listed = {row["sessionId"]: row["status"] for row in run_json("list", "--root", ".vtcode/sessions")["sessions"]}
    assert listed["session-foo"] == "ended"
    report = run_json("retain", "--root", ".vtcode/sessions", "--dry-run")
    decisions = [d for d in report["decisions"] if d["sessionId"] == "session-foo"]
    assert [d["action"] for d in decisions] == ["remove"] and report["skipped"] == []
    assert "session-foo" in report["removed"]
    assert snapshot(migrated) == before


def test_memosite_never_writes_into_a_migrated_vtcode_session(workspace: Path, vault: Vault) -> None:
    root = workspace / ".vtcode" / "sessions"
    migrated = write_migrated(root, "session-foo", ["the widget is blue"], updated="2020-01-01T00:00:00+00:00")
    before = snapshot(migrated)
    with pytest.raises(SessionForeign):
        Session.open(vault, "demo", "session-foo", root=root)
    run_json("pack", "--dir", str(migrated))  # the pack is the one file memosite adds, beside vtcode's
    assert {k: v for k, v in snapshot(migrated).items() if k != "derived/audit-pack.json"} == before


def test_the_grounded_facts_of_a_migrated_vtcode_session_are_counted_and_found(workspace: Path) -> None:
    root = workspace / ".vtcode" / "sessions"
    facts = ["the widget is blue", "Платёжный сертификат хранится в keychain"]
    migrated = write_migrated(root, "session-foo", facts, updated="2020-01-01T00:00:00+00:00")
    before = snapshot(migrated)
    shown = run_json("show", "--dir", str(migrated))
    assert shown["facts"] == 2 and "- the widget is blue" in shown["handoff"]
    hits = run_json("search", "widget blue", "--root", ".vtcode/sessions")["hits"]
    assert [(h["sessionId"], h["type"], h["chunkId"], h["snippet"]) for h in hits] == [
        ("session-foo", "fact", "session-foo:fact:0000:0000", "the widget is blue")
    ]
    assert (
        run_json("search", "сертификат", "--dir", str(migrated))["hits"][0]["chunkId"] == "session-foo:fact:0001:0000"
    )
    text = CliRunner().invoke(cli, ["session", "search", "widget", "--dir", str(migrated)]).stdout
    assert "session-foo  derived/memory.json  fact" in text
    assert snapshot(migrated) == before  # read-only: no index, no views written into vtcode's directory


def test_the_grounded_facts_vtcode_keeps_beside_its_log_count_with_the_logs(workspace: Path) -> None:
    session_dir = workspace / ".vtcode" / "sessions" / SESSION
    before = snapshot(session_dir)
    assert run_json("show", "--dir", str(session_dir))["facts"] == 1
    hits = run_json("search", "parser lives", "--dir", str(session_dir))["hits"]
    assert hits[0]["type"] == "fact" and hits[0]["snippet"] == "the ledger parser lives in src/ledger_parser.rs"
    assert snapshot(session_dir) == before


# --- vtcode reads what memosite writes -------------------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.ticks = 0

    def __call__(self) -> str:
        self.ticks += 1
        return f"2026-09-01T12:00:{self.ticks // 1000:02d}.{self.ticks % 1000:03d}Z"


def write_session(vault: Vault, root: Path | None = None, session_id: str = "m1") -> SessionPaths:
    with Session.start(
        vault, "demo", session_id=session_id, goals=["ship the ledger"], clock=Clock(), sync_record=False, root=root
    ) as session:
        session.start_turn()
        session.append("message", text="Прочитал код; 東京 café ✅")
        session.append("tool", data={"name": "grep", "args": {"pattern": "ledger"}})
        session.append("fact", text="the ledger uses integer cents")
        session.end_turn()
        session.start_turn()
        session.append("message", text="the build failed")
        session.end_turn("failed")
        session.append("goal.progress", data={"goal": "g1"}, text="halfway")
        session.start_turn()
        session.end()
    return SessionPaths.for_session(vault, "demo", session_id, root)


def test_vtcode_opens_a_memosite_session_through_its_fast_path(vault: Vault) -> None:
    paths = write_session(vault)
    opened = vt.open_session(paths.dir)
    assert not opened.scanned
    scanned = vt.scan(paths.dir)
    assert opened.manifest["event_count"] == scanned.manifest["event_count"] == 14
    assert opened.manifest["turn_count"] == scanned.manifest["turn_count"] == 3
    assert opened.manifest["status"] == scanned.manifest["status"] == "completed"
    assert [
        {k: e[k] for k in ("turn_number", "start_offset", "end_offset", "event_count")} for e in opened.entries
    ] == (scanned.entries)
    assert opened.manifest["session_id"] == "m1" and opened.manifest["schema_version"] == 1


def test_every_line_memosite_writes_is_a_versioned_thread_event(vault: Vault) -> None:
    paths = write_session(vault)
    lines = paths.events.read_text(encoding="utf-8").splitlines()
    assert lines and all(vt.versioned_decodes(line) for line in lines)
    turn_one = vt.reconstruct_turn(paths.dir, vt.open_session(paths.dir), 1)
    assert [event["type"] for event in turn_one] == ["turn.started", "item.completed", "tool", "fact", "turn.completed"]
    assert turn_one[1]["item"]["text"] == "Прочитал код; 東京 café ✅"
    last = json.loads(lines[-1])["event"]
    assert last["type"] == "thread.completed" and last["num_turns"] == 3


def test_vtcode_reads_memosites_derived_facts_and_progress(vault: Vault) -> None:
    paths = write_session(vault)
    assert vt.query_facts(paths.dir) == ["the ledger uses integer cents"]
    ledger = vt.load_progress(paths.dir)
    assert ledger is not None and ledger["session_id"] == "m1" and ledger["goal"] == "ship the ledger"
    assert ledger["milestones"] == [{"id": "g1", "description": "ship the ledger", "status": "in_progress"}]


def test_a_session_written_into_a_vtcode_root_is_one_vtcode_lists(workspace: Path, vault: Vault) -> None:
    root = workspace / ".vtcode" / "sessions"
    paths = write_session(vault, root, "memosite-run")
    assert vt.open_session(paths.dir).manifest["status"] == "completed"
    assert {row.session_id for row in list_sessions(vault, "demo", root=root)} == {
        SESSION, "exec_task_9c01", "memosite-run",
    }  # fmt: skip
    hits = search_sessions(vault, "demo", "integer cents", root=root)
    assert hits.hits[0].session_id == "memosite-run"
    pack_session(vault, "demo", "memosite-run", root=root)
    assert verify_session(vault, "demo", "memosite-run", root=root).ok
    assert (paths.dir / "derived" / "audit-pack.json").is_file()


def test_a_vault_session_named_by_dir_shares_the_lock_of_its_id(vault: Vault) -> None:
    from memosite.sessions.paths import sessions_root
    from memosite.sessions.session import session_lock_path

    own = session_lock_path(vault, "demo", "s1")
    assert session_lock_path(vault, "demo", "s1", sessions_root(vault, "demo")) == own
    assert session_lock_path(vault, "demo", "s1", Path("elsewhere")) != own
