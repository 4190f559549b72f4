"""The append-only log: ordering, buffering, durability order, reopen and rescan, permissions."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from memosite.errors import InvalidArguments, InvalidTransition
from memosite.sessions import Session, safefs
from memosite.sessions import log as log_module
from memosite.sessions.errors import SessionEnded, SessionExists, SessionNotFound, SymlinkRefused
from memosite.sessions.events import decode_event
from memosite.sessions.log import EventLog
from memosite.sessions.paths import SessionPaths
from memosite.vault import Vault


class Clock:
    """Deterministic event times, one millisecond apart."""

    def __init__(self) -> None:
        self.ticks = 0

    def __call__(self) -> str:
        self.ticks += 1
        seconds, millis = divmod(self.ticks, 1000)
        return f"2026-01-01T00:{seconds // 60:02d}:{seconds % 60:02d}.{millis:03d}Z"


def start(vault: Vault, session_id: str = "s1", **kwargs: object) -> Session:
    return Session.start(vault, "demo", session_id=session_id, clock=Clock(), sync_record=False, **kwargs)  # type: ignore[arg-type]


def reopen(vault: Vault, session_id: str = "s1", *, writable: bool = True) -> Session:
    return Session.open(vault, "demo", session_id, writable=writable, clock=Clock(), sync_record=False)


def paths(vault: Vault, session_id: str = "s1") -> SessionPaths:
    return SessionPaths.for_session(vault, "demo", session_id)


def raw_lines(vault: Vault, session_id: str = "s1") -> list[dict]:
    text = paths(vault, session_id).events.read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines()]


def log_lines(vault: Vault, session_id: str = "s1") -> list[dict]:
    """memosite's view of each line: seq, time, turn, type, payload."""
    result, offset = [], 0
    for line in paths(vault, session_id).events.read_bytes().splitlines(keepends=True):
        event = decode_event(line, offset)
        assert event is not None, line
        result.append(event.to_json())
        offset += len(line)
    return result


def one_turn_session(vault: Vault, session_id: str = "s1", turns: int = 2) -> None:
    with start(vault, session_id, goals=["ship it"]) as session:
        for number in range(turns):
            session.start_turn()
            session.append("message", text=f"work in turn {number + 1}")
            session.append("fact", text=f"fact {number + 1}")
            session.end_turn()


# --- ordering and the envelope ---------------------------------------------------------------


def test_events_keep_append_order_with_strictly_increasing_seq(vault: Vault) -> None:
    one_turn_session(vault)
    lines = log_lines(vault)
    assert [line["seq"] for line in lines] == list(range(1, len(lines) + 1))
    assert [line["type"] for line in lines] == [
        "session.started",
        "goal.set",
        "turn.started",
        "message",
        "fact",
        "turn.completed",
        "turn.started",
        "message",
        "fact",
        "turn.completed",
    ]
    assert [line["turn"] for line in lines] == [None, None, 1, 1, 1, 1, 2, 2, 2, 2]
    assert not any(line["foreign"] for line in lines)
    times = [line["time"] for line in lines]
    assert times == sorted(times) and all(t.endswith("Z") for t in times)


def test_every_line_is_a_vtcode_versioned_thread_event(vault: Vault) -> None:
    one_turn_session(vault)
    lines = raw_lines(vault)
    assert all(list(line) == ["schema_version", "event"] and line["schema_version"] == "0.11.0" for line in lines)
    assert [line["event"]["type"] for line in lines] == [
        "thread.started", "goal.set", "turn.started", "item.completed", "fact", "turn.completed",
        "turn.started", "item.completed", "fact", "turn.completed",
    ]  # fmt: skip
    assert lines[0]["event"]["thread_id"] == "s1"
    assert lines[3]["event"]["item"] == {"id": "s1-4", "type": "agent_message", "text": "work in turn 1"}
    assert lines[5]["event"]["usage"] == {
        "input_tokens": 0, "cached_input_tokens": 0, "cache_creation_tokens": 0, "output_tokens": 0,
    }  # fmt: skip
    assert lines[4]["event"]["text"] == "fact 1"
    assert lines[3]["event"]["memosite"] == {"seq": 4, "time": lines[3]["event"]["memosite"]["time"], "turn": 1}


def test_ending_a_session_writes_thread_completed_with_its_turns(vault: Vault) -> None:
    one_turn_session(vault)
    with reopen(vault) as session:
        session.end()
    last = raw_lines(vault)[-1]["event"]
    assert {k: last[k] for k in ("type", "thread_id", "session_id", "subtype", "outcome_code", "num_turns")} == {
        "type": "thread.completed", "thread_id": "s1", "session_id": "s1", "subtype": "success",
        "outcome_code": "completed", "num_turns": 2,
    }  # fmt: skip


def test_turn_index_maps_each_turn_to_its_byte_offsets(vault: Vault) -> None:
    one_turn_session(vault)
    data = paths(vault).events.read_bytes()
    index = json.loads(paths(vault).turns_index.read_text(encoding="utf-8"))
    entries = index["entries"]
    assert [entry["turn_number"] for entry in entries] == [1, 2]
    assert all(
        set(entry) == {"turn_number", "start_offset", "end_offset", "event_count", "ts", "memosite"}
        for entry in entries
    )
    for entry in entries:
        turn_bytes = data[entry["start_offset"] : entry["end_offset"]]
        turn_lines = [json.loads(line)["event"]["type"] for line in turn_bytes.splitlines()]
        assert turn_lines == ["turn.started", "item.completed", "fact", "turn.completed"]
        assert entry["event_count"] == 4 and turn_bytes.endswith(b"\n")
        end_line = data[entry["memosite"]["end"] :].split(b"\n", 1)[0]
        assert json.loads(end_line)["event"]["type"] == "turn.completed"
        assert entry["ts"].endswith("Z")


def test_manifest_has_vtcodes_fields(vault: Vault) -> None:
    one_turn_session(vault)
    manifest = json.loads(paths(vault).manifest.read_text(encoding="utf-8"))
    assert list(manifest)[:7] == [
        "session_id", "schema_version", "created_at", "updated_at", "turn_count", "event_count", "status",
    ]  # fmt: skip
    assert (manifest["session_id"], manifest["schema_version"], manifest["turn_count"]) == ("s1", 1, 2)
    assert (manifest["event_count"], manifest["status"]) == (10, "active")
    with reopen(vault) as session:
        session.start_turn()
    manifest = json.loads(paths(vault).manifest.read_text(encoding="utf-8"))
    assert manifest["turn_count"] == 2  # vtcode counts completed turns; turn 3 is open
    with reopen(vault) as session:
        session.end()
    manifest = json.loads(paths(vault).manifest.read_text(encoding="utf-8"))
    assert (manifest["status"], manifest["turn_count"]) == ("completed", 3)  # turn 3 ended as aborted (turn.failed)


# --- buffering boundaries --------------------------------------------------------------------


def test_appends_inside_a_turn_stay_buffered_until_the_turn_ends(vault: Vault) -> None:
    with start(vault) as session:
        session.start_turn()
        size_at_turn_start = paths(vault).events.stat().st_size
        manifest_before = paths(vault).manifest.read_bytes()
        for number in range(5):
            session.append("message", text=f"buffered {number}")
        assert paths(vault).events.stat().st_size == size_at_turn_start
        assert paths(vault).manifest.read_bytes() == manifest_before
        session.end_turn()
        assert paths(vault).events.stat().st_size > size_at_turn_start
    assert [line["payload"].get("text") for line in log_lines(vault)][-6:-1] == [f"buffered {n}" for n in range(5)]


def test_a_read_flushes_the_buffer_first(vault: Vault) -> None:
    with start(vault) as session:
        session.start_turn()
        session.append("message", text="not yet on disk")
        assert b"not yet on disk" not in paths(vault).events.read_bytes()
        assert [event.text for event in session.log.tail(1)] == ["not yet on disk"]
        assert b"not yet on disk" in paths(vault).events.read_bytes()


def test_close_flushes_buffered_events(vault: Vault) -> None:
    session = start(vault)
    session.append("note", text="written on close")
    assert b"written on close" not in paths(vault).events.read_bytes()
    session.close()
    assert log_lines(vault)[-1]["payload"] == {"text": "written on close"}
    with reopen(vault) as again:
        assert again.log.rescan_reason is None
        assert again.log.meta.event_count == 2


def test_a_large_buffer_flushes_without_waiting_for_a_boundary(vault: Vault, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(log_module, "FLUSH_BYTES", 2000)
    with start(vault) as session:
        session.start_turn()
        before = paths(vault).events.stat().st_size
        for _ in range(30):
            session.append("message", text="x" * 100)
        assert paths(vault).events.stat().st_size > before


def test_event_bytes_are_synced_before_turn_index_before_manifest(
    vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[str] = []
    real_append, real_write = safefs.append_private, safefs.write_private

    def spy_append(path: Path, data: bytes) -> None:
        real_append(path, data)
        calls.append(path.name)

    def spy_write(path: Path, data: bytes, *, durable: bool = True) -> None:
        real_write(path, data, durable=durable)
        calls.append(path.name)

    with start(vault) as session:
        session.start_turn()
        monkeypatch.setattr(safefs, "append_private", spy_append)
        monkeypatch.setattr(safefs, "write_private", spy_write)
        session.append("message", text="hello")
        session.end_turn()
        monkeypatch.undo()
    assert calls[:3] == ["events.jsonl", "turns.json", "manifest.json"]


def test_persistence_errors_reach_the_caller(vault: Vault, monkeypatch: pytest.MonkeyPatch) -> None:
    from memosite.errors import StorageError

    def broken(path: Path, data: bytes) -> None:
        raise StorageError(f"cannot append to {path}: No space left on device")

    with start(vault) as session:
        session.start_turn()
        monkeypatch.setattr(safefs, "append_private", broken)
        session.append("message", text="lost?")
        with pytest.raises(StorageError, match="No space left"):
            session.end_turn()
        monkeypatch.undo()
        with pytest.raises(StorageError, match="reopen"):
            session.append("message", text="after failure")


# --- reopen: trust valid metadata, rescan anything else --------------------------------------


def test_reopen_with_valid_metadata_does_not_read_the_log(vault: Vault, monkeypatch: pytest.MonkeyPatch) -> None:
    one_turn_session(vault)

    def no_rescan(self: EventLog, reason: str, **kwargs: object) -> None:
        raise AssertionError(f"unexpected rescan: {reason}")

    monkeypatch.setattr(EventLog, "rescan", no_rescan)
    with reopen(vault) as session:
        assert session.log.meta.last_turn == 2
        assert session.log.meta.event_count == 10


def _expected_state(vault: Vault) -> tuple:
    with reopen(vault, writable=False) as session:
        meta = session.log.meta
        return (
            meta.event_count,
            meta.next_seq,
            meta.last_turn,
            meta.log_bytes,
            [span.to_json() for span in session.log.turns],
        )


def _damage_and_reopen(vault: Vault, damage) -> Session:  # type: ignore[no-untyped-def]
    damage(paths(vault))
    return reopen(vault)


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(lambda p: p.manifest.unlink(), id="deleted-manifest"),
        pytest.param(lambda p: p.manifest.write_bytes(p.manifest.read_bytes()[:40]), id="truncated-manifest"),
        pytest.param(lambda p: p.turns_index.unlink(), id="deleted-index"),
        pytest.param(lambda p: p.turns_index.write_bytes(b'{"version": 1, "turns": ['), id="truncated-index"),
    ],
)
def test_reopen_with_missing_or_torn_metadata_rescans_the_log(vault: Vault, damage) -> None:  # type: ignore[no-untyped-def]
    one_turn_session(vault)
    expected = _expected_state(vault)
    with _damage_and_reopen(vault, damage) as session:
        assert session.log.rescan_reason is not None
        meta = session.log.meta
        assert (
            meta.event_count,
            meta.next_seq,
            meta.last_turn,
            meta.log_bytes,
            [span.to_json() for span in session.log.turns],
        ) == expected
    with reopen(vault) as session:  # the rescan republished good metadata
        assert session.log.rescan_reason is None


def _edit_json(path: Path, memosite: dict[str, object] | None = None, **changes: object) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    data.update(changes)
    data["memosite"].update(memosite or {})
    path.write_text(json.dumps(data), encoding="utf-8")


def test_lying_manifest_about_sequence_numbers_is_caught(vault: Vault) -> None:
    one_turn_session(vault)
    p = paths(vault)
    _edit_json(p.manifest, {"nextSeq": 10}, event_count=9)
    _edit_json(p.turns_index, {"nextSeq": 10})
    with reopen(vault) as session:
        assert session.log.rescan_reason == "the last event does not carry the manifest's sequence number"
        assert session.log.meta.next_seq == 11
        event = session.append("note", text="next")
        assert event.seq == 11


def test_lying_manifest_about_status_is_caught(vault: Vault) -> None:
    one_turn_session(vault)
    _edit_json(paths(vault).manifest, status="completed")
    with reopen(vault) as session:
        assert session.log.rescan_reason is not None
        assert session.log.meta.status == "active"


def test_lying_turn_index_offsets_are_caught(vault: Vault) -> None:
    one_turn_session(vault)
    p = paths(vault)
    index = json.loads(p.turns_index.read_text(encoding="utf-8"))
    index["entries"][0]["start_offset"] += 1  # points into the middle of a line
    p.turns_index.write_text(json.dumps(index), encoding="utf-8")
    with reopen(vault) as session:
        assert session.log.rescan_reason == "turn 1 does not start where the index says"
        assert session.log.turns[0].start_offset == index["entries"][0]["start_offset"] - 1


def test_offsets_past_the_end_of_the_log_trigger_a_rescan(vault: Vault) -> None:
    one_turn_session(vault)
    p = paths(vault)
    size = p.events.stat().st_size
    index = json.loads(p.turns_index.read_text(encoding="utf-8"))
    index["entries"][1]["memosite"]["end"] = size + 500
    p.turns_index.write_text(json.dumps(index), encoding="utf-8")
    with reopen(vault) as session:
        assert "impossible offset" in (session.log.rescan_reason or "")
        assert session.log.turns[1].end_offset is not None and session.log.turns[1].end_offset < size


def test_truncated_log_behind_valid_metadata_is_rescanned(vault: Vault) -> None:
    one_turn_session(vault)
    p = paths(vault)
    data = p.events.read_bytes()
    last_turn_start = json.loads(p.turns_index.read_text(encoding="utf-8"))["entries"][1]["start_offset"]
    p.events.write_bytes(data[:last_turn_start])
    with reopen(vault) as session:
        assert session.log.rescan_reason is not None
        assert session.log.meta.last_turn == 1
        assert session.log.meta.open_turn is None
        session.start_turn()
        assert session.log.meta.last_turn == 2


def test_read_only_open_rescans_in_memory_without_writing(vault: Vault) -> None:
    one_turn_session(vault)
    p = paths(vault)
    p.manifest.unlink()
    with reopen(vault, writable=False) as session:
        assert session.log.rescan_reason == "manifest missing or malformed"
        assert session.log.meta.last_turn == 2
    assert not p.manifest.exists()


# --- malformed lines and killed writers -----------------------------------------------------


def _envelope(seq: int, kind: str, turn: int | None, **payload: object) -> bytes:
    return (
        json.dumps(
            {
                "version": 1,
                "seq": seq,
                "time": f"2026-01-01T00:00:{seq:02d}.000Z",
                "turn": turn,
                "type": kind,
                "payload": payload,
            }
        ).encode()
        + b"\n"
    )


def test_malformed_line_never_creates_phantom_turn(vault: Vault) -> None:
    start(vault).close()
    p = paths(vault)
    lines = [
        b'{"version": 1, "seq": 2, "type": "turn.started", "turn": 1\n',  # torn JSON
        _envelope(3, "turn.started", None),  # lifecycle event without a turn number
        json.dumps(
            {
                "version": 2,
                "seq": 4,
                "time": "2026-01-01T00:00:04.000Z",
                "turn": 1,
                "type": "turn.started",
                "payload": {},
            }
        ).encode()
        + b"\n",  # unknown version
        _envelope(5, "turn.completed", 1),  # an end without a start
        _envelope(6, "turn.started", 7),  # skips turn numbers
        _envelope(1, "message", None, text="sequence goes backwards"),
        _envelope(7, "message", None, text="fine"),
    ]
    with open(p.events, "ab") as handle:
        handle.write(b"".join(lines))
    p.manifest.unlink()
    with reopen(vault) as session:
        assert session.log.turns == []
        assert session.log.meta.last_turn == 0
        assert session.log.meta.malformed_lines == 6
        assert session.log.meta.event_count == 2
        assert session.log.meta.next_seq == 8
        assert session.start_turn().turn == 1


def test_torn_tail_is_closed_with_a_newline_not_removed(vault: Vault) -> None:
    start(vault).close()
    p = paths(vault)
    torn = b'{"version": 1, "seq": 2, "time": "2026-01-01T00:00:0'
    with open(p.events, "ab") as handle:
        handle.write(torn)
    with reopen(vault) as session:
        assert session.log.torn_tail_repaired
        session.append("message", text="after the tear")
    data = p.events.read_bytes()
    assert torn + b"\n" in data
    assert decode_event(data.splitlines()[-1]).text == "after the tear"  # type: ignore[union-attr]
    with reopen(vault) as session:
        assert session.log.rescan_reason is None
        assert session.log.meta.malformed_lines == 1


CHILD = textwrap.dedent(
    """
    import os, signal, sys
    from memosite.vault import Vault
    from memosite.sessions import Session
    from memosite.sessions.log import EventLog

    vault = Vault.open(sys.argv[1])
    session = Session.open(vault, "demo", "s1", sync_record=False)
    if sys.argv[2] == "after-events":
        # Die the moment the event bytes are durable, before any metadata is published.
        EventLog.publish_metadata = lambda self: os.kill(os.getpid(), signal.SIGKILL)
    session.start_turn()
    for number in range(3):
        session.append("message", text=f"child event {number}")
    if sys.argv[2] == "mid-turn":
        os.kill(os.getpid(), signal.SIGKILL)
    session.end_turn()
    """
)


def _run_child(vault: Vault, mode: str) -> int:
    result = subprocess.run([sys.executable, "-c", CHILD, str(vault.root), mode], capture_output=True, timeout=60)
    return result.returncode


def test_process_killed_between_event_write_and_metadata(vault: Vault) -> None:
    start(vault).close()
    manifest_before = paths(vault).manifest.read_bytes()
    assert _run_child(vault, "after-events") == -signal.SIGKILL
    # The turn.started flush already died: the manifest still describes the old log.
    assert paths(vault).manifest.read_bytes() == manifest_before
    with reopen(vault) as session:
        assert session.log.rescan_reason is not None
        assert session.log.meta.open_turn == 1  # the durable turn.started is kept, not invented
        assert session.log.meta.event_count == 2
        session.append("message", text="resumed")
        session.end_turn()
    assert [line["type"] for line in log_lines(vault)] == [
        "session.started",
        "turn.started",
        "message",
        "turn.completed",
    ]


def test_process_killed_with_buffered_events_loses_only_unflushed_events(vault: Vault) -> None:
    start(vault).close()
    assert _run_child(vault, "mid-turn") == -signal.SIGKILL
    with reopen(vault) as session:
        assert session.log.rescan_reason is None  # turn.started was flushed with its metadata
        assert session.log.meta.open_turn == 1
        assert session.log.meta.event_count == 2
    assert b"child event" not in paths(vault).events.read_bytes()


# --- session rules ---------------------------------------------------------------------------


def test_an_ended_session_refuses_more_events(vault: Vault) -> None:
    with start(vault) as session:
        session.end()
    with reopen(vault) as session:
        with pytest.raises(SessionEnded):
            session.append("message", text="too late")
        with pytest.raises(SessionEnded):
            session.start_turn()


def test_ending_a_session_aborts_its_open_turn(vault: Vault) -> None:
    with start(vault) as session:
        session.start_turn()
        session.end()
    assert [line["type"] for line in log_lines(vault)][-2:] == ["turn.aborted", "session.ended"]


@pytest.mark.parametrize(
    ("event_type", "data", "error"),
    [
        ("session.started", None, InvalidArguments),
        ("session.summary", None, InvalidArguments),
        ("Bad Type", None, InvalidArguments),
        ("message", [1, 2], InvalidArguments),
        ("fact", None, InvalidArguments),
        ("turn.completed", None, InvalidTransition),
        ("goal.progress", {"goal": "g9"}, InvalidArguments),
    ],
)
def test_bad_appends_are_refused_and_write_nothing(vault: Vault, event_type: str, data: object, error: type) -> None:
    with start(vault) as session:
        before = session.log.size
        with pytest.raises(error):
            session.append(event_type, data=data)  # type: ignore[arg-type]
        assert session.log.size == before
        assert session.log.meta.next_seq == 2


def test_payload_that_json_cannot_hold_is_refused(vault: Vault) -> None:
    with start(vault) as session, pytest.raises(InvalidArguments):
        session.append("message", data={"value": float("nan")})


def test_starting_an_existing_session_fails(vault: Vault) -> None:
    start(vault).close()
    with pytest.raises(SessionExists):
        start(vault)


@pytest.mark.parametrize("bad_id", ["../escape", "a/b", ".hidden", "x\x00y", "..", "a" * 121])
def test_session_ids_cannot_name_a_path(vault: Vault, bad_id: str) -> None:
    with pytest.raises(InvalidArguments):
        start(vault, bad_id)
    with pytest.raises(InvalidArguments):
        reopen(vault, bad_id)


def test_opening_an_unknown_session_fails(vault: Vault) -> None:
    with pytest.raises(SessionNotFound):
        reopen(vault, "nope")


# --- permissions and symlinks -----------------------------------------------------------------


def test_session_directories_are_0700_and_files_0600(vault: Vault) -> None:
    one_turn_session(vault)
    root = paths(vault).dir
    for current, _dirs, files in os.walk(root):
        assert stat.S_IMODE(os.stat(current).st_mode) == 0o700, current
        for name in files:
            assert stat.S_IMODE(os.stat(Path(current) / name).st_mode) == 0o600, name
    assert {p.name for p in root.iterdir()} >= {"events.jsonl", "manifest.json", "index", "derived"}


def test_symlinked_session_directory_is_refused(vault: Vault, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    one_turn_session(vault, "real")
    paths(vault, "real").dir.rename(elsewhere)
    paths(vault, "real").dir.symlink_to(elsewhere, target_is_directory=True)
    before = (elsewhere / "events.jsonl").read_bytes()
    with pytest.raises(SymlinkRefused):
        reopen(vault, "real")
    with pytest.raises(SymlinkRefused):
        reopen(vault, "real", writable=False)
    assert (elsewhere / "events.jsonl").read_bytes() == before


def test_symlinked_log_file_is_refused(vault: Vault, tmp_path: Path) -> None:
    one_turn_session(vault)
    outside = tmp_path / "outside.jsonl"
    outside.write_bytes(paths(vault).events.read_bytes())
    paths(vault).events.unlink()
    paths(vault).events.symlink_to(outside)
    with pytest.raises(SymlinkRefused):
        reopen(vault)
    assert outside.read_bytes().count(b"\n") == 10


def test_symlinked_manifest_is_refused(vault: Vault, tmp_path: Path) -> None:
    one_turn_session(vault)
    outside = tmp_path / "manifest.json"
    outside.write_bytes(paths(vault).manifest.read_bytes())
    paths(vault).manifest.unlink()
    paths(vault).manifest.symlink_to(outside)
    with pytest.raises(SymlinkRefused):
        reopen(vault)


# --- derived views -----------------------------------------------------------------------------


def test_derived_views_hold_the_ledger_and_the_facts(vault: Vault) -> None:
    with start(vault, goals=["ship it"]) as session:
        session.start_turn()
        session.append("goal.progress", data={"goal": "g1"}, text="half way")
        session.append("fact", text="the build needs python 3.11")
        session.append("goal.completed", data={"goal": "g1"})
        session.end_turn()
    progress = json.loads(paths(vault).progress.read_text(encoding="utf-8"))
    memory = json.loads(paths(vault).memory.read_text(encoding="utf-8"))
    assert [(g["id"], g["status"]) for g in progress["goals"]] == [("g1", "completed")]
    assert [n["text"] for n in progress["goals"][0]["notes"]] == ["half way"]
    assert [f["text"] for f in memory["facts"]] == ["the build needs python 3.11"]
    with pytest.raises(InvalidTransition), reopen(vault) as session:
        session.append("goal.completed", data={"goal": "g1"})


def test_stale_or_damaged_derived_views_are_rebuilt_from_the_log(vault: Vault) -> None:
    one_turn_session(vault)
    paths(vault).memory.write_text("{not json", encoding="utf-8")
    with reopen(vault) as session:
        assert [fact.text for fact in session.derived.facts] == ["fact 1", "fact 2"]
    memory = json.loads(paths(vault).memory.read_text(encoding="utf-8"))
    assert len(memory["facts"]) == 2


def test_derived_views_catch_up_from_their_stamp(vault: Vault) -> None:
    one_turn_session(vault)
    stale = paths(vault).memory.read_bytes(), paths(vault).progress.read_bytes()
    with reopen(vault) as session:
        session.append("fact", text="late fact")
    paths(vault).memory.write_bytes(stale[0])
    paths(vault).progress.write_bytes(stale[1])
    with reopen(vault, writable=False) as session:
        assert [fact.text for fact in session.derived.facts] == ["fact 1", "fact 2", "late fact"]


WRITER = textwrap.dedent(
    """
    import sys
    from memosite.vault import Vault
    from memosite.sessions import Session

    vault = Vault.open(sys.argv[1])
    for number in range(15):
        with Session.open(vault, "demo", "s1", sync_record=False) as session:
            session.append("message", text=f"writer {sys.argv[2]} event {number}")
    """
)


@pytest.mark.slow
def test_concurrent_writers_are_serialised_by_the_session_lock(vault: Vault) -> None:
    start(vault).close()
    writers = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(vault.root), str(n)], stderr=subprocess.PIPE)
        for n in range(3)
    ]
    for writer in writers:
        _, err = writer.communicate(timeout=120)
        assert writer.returncode == 0, err
    lines = log_lines(vault)
    assert [line["seq"] for line in lines] == list(range(1, 47))
    for n in range(3):
        mine = [line["payload"]["text"] for line in lines if line["payload"].get("text", "").startswith(f"writer {n} ")]
        assert mine == [f"writer {n} event {i}" for i in range(15)]
    with reopen(vault) as session:
        assert session.log.rescan_reason is None and session.log.meta.event_count == 46
