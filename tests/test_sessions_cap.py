"""Cap eviction: the summary hook runs first, a failing hook leaves the log untouched, and the
goal ledger, facts and turn numbering survive the rewrite."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memosite.sessions import CapLimits, CapSummary, EvictionContext, Session
from memosite.sessions.cap import _clean_cuts, plan_cap_eviction
from memosite.sessions.errors import SummaryHookFailed
from memosite.sessions.events import Event, decode_event
from memosite.sessions.log import LoggedEvent
from memosite.sessions.paths import SessionPaths
from memosite.vault import Vault


def capped_vault(vault_dir: Path, *, events: int = 10_000, size: int = 16 * 1024 * 1024) -> Vault:
    Vault.open(vault_dir).close()  # creates the vault and its default config.json
    config = json.loads((vault_dir / "config.json").read_text(encoding="utf-8"))
    config["sessions"].update(capEvents=events, capBytes=size)
    (vault_dir / "config.json").write_text(json.dumps(config), encoding="utf-8")
    return Vault.open(vault_dir)


def open_session(vault: Vault, **kwargs: object) -> Session:
    return Session.open(vault, "demo", "s1", sync_record=False, **kwargs)  # type: ignore[arg-type]


def run_turns(session: Session, first: int, count: int, events_per_turn: int = 3) -> None:
    for number in range(first, first + count):
        session.start_turn()
        for item in range(events_per_turn):
            session.append("message", text=f"turn {number} message {item}")
        session.end_turn()


def lines(vault: Vault) -> list[dict]:
    """memosite's view of each line (seq, time, turn, type, payload)."""
    path = SessionPaths.for_session(vault, "demo", "s1").events
    result, offset = [], 0
    for line in path.read_bytes().splitlines(keepends=True):
        event = decode_event(line, offset)
        assert event is not None
        result.append(event.to_json())
        offset += len(line)
    return result


def raw(vault: Vault) -> list[dict]:
    path = SessionPaths.for_session(vault, "demo", "s1").events
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


# --- planning (pure) -------------------------------------------------------------------------------


def logged(types: list[str]) -> list[LoggedEvent]:
    entries = []
    turn = 0
    for position, kind in enumerate(types):
        if kind == "turn.started":
            turn += 1
        event = Event(seq=position + 1, time="2026-01-01T00:00:00.000Z", turn=turn or None, type=kind)
        entries.append(LoggedEvent(offset=position * 10, event=event, size=10))
    return entries


def test_cuts_never_split_a_turn_nor_drop_the_session_end() -> None:
    entries = logged(
        [
            "session.started",
            "turn.started",
            "message",
            "turn.completed",
            "note",
            "turn.started",
            "message",
            "turn.failed",
            "session.ended",
        ]
    )
    assert _clean_cuts(entries) == [1, 4, 5, 8]


def test_an_open_turn_is_never_evicted() -> None:
    entries = logged(
        ["session.started", "turn.started", "message", "turn.completed", "turn.started", "message", "message"]
    )
    plan = plan_cap_eviction(entries, CapLimits(max_events=2, max_bytes=10**9), log_size=70)
    assert plan.cut == 4  # everything before the open turn, nothing of it


def test_plan_evicts_the_smallest_prefix_that_reaches_the_low_water_mark() -> None:
    types = ["session.started"] + ["turn.started", "message", "turn.completed"] * 10
    entries = logged(types)
    plan = plan_cap_eviction(entries, CapLimits(max_events=20, max_bytes=10**9), log_size=310)
    # low water = 15 events: 31 - cut + 1 (summary) <= 15  ->  cut >= 17, next turn boundary is 19
    assert plan.cut == 19
    assert plan.evicted_bytes == entries[19].offset


def test_nothing_to_evict_when_the_log_is_one_open_turn() -> None:
    entries = logged(["turn.started"] + ["message"] * 9)
    assert plan_cap_eviction(entries, CapLimits(max_events=3, max_bytes=10**9), log_size=100).empty


# --- enforcing -----------------------------------------------------------------------------------


def test_passing_the_event_cap_replaces_old_turns_by_a_summary(vault_dir: Path) -> None:
    vault = capped_vault(vault_dir, events=40)
    with Session.start(vault, "demo", session_id="s1", goals=["keep the ledger"], sync_record=False) as session:
        run_turns(session, 1, 15)
        assert session.last_cap is not None and session.last_cap.rewritten
    written = lines(vault)
    assert written[0]["type"] == "session.summary"
    compacted = raw(vault)[0]["event"]
    assert (compacted["type"], compacted["thread_id"], compacted["trigger"], compacted["mode"]) == (
        "thread.compact_boundary", "s1", "auto", "local",
    )  # fmt: skip
    assert compacted["original_message_count"] == written[0]["payload"]["evicted"]["events"]
    assert len(written) <= 40
    seqs = [line["seq"] for line in written]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    summary = written[0]["payload"]
    assert summary["evicted"]["firstSeq"] == 1
    assert summary["evicted"]["lastSeq"] == written[0]["seq"]
    assert summary["text"].startswith("Replaced ")
    assert f"Turn {summary['lastTurn']} (completed" in summary["text"]
    assert [goal["id"] for goal in summary["ledger"]] == ["g1"]
    with open_session(vault) as session:
        assert session.log.rescan_reason is None
        assert session.log.meta.last_turn == 15
        assert session.log.meta.generation >= 2
        assert session.start_turn().turn == 16


def test_passing_the_byte_cap_also_triggers_eviction(vault_dir: Path) -> None:
    vault = capped_vault(vault_dir, size=6000)
    with Session.start(vault, "demo", session_id="s1", sync_record=False) as session:
        run_turns(session, 1, 30)
        rewrites = session.log.meta.generation - 1
    path = SessionPaths.for_session(vault, "demo", "s1").events
    assert path.stat().st_size <= 6000
    assert lines(vault)[0]["type"] == "session.summary"
    # Evicting down to the low-water mark (summary included) spaces the rewrites out:
    # 60 flushes, only a handful of rewrites.
    assert 2 <= rewrites <= 10


def test_goal_ledger_and_facts_survive_compaction(vault_dir: Path) -> None:
    vault = capped_vault(vault_dir, events=30)
    with Session.start(vault, "demo", session_id="s1", goals=["first goal"], sync_record=False) as session:
        session.start_turn()
        session.append("goal.progress", data={"goal": "g1"}, text="step one done")
        session.append("fact", text="an early fact")
        session.end_turn()
        run_turns(session, 2, 20)
        session.append("goal.completed", data={"goal": "g1"}, text="all done")
    assert all("an early fact" not in json.dumps(line) for line in lines(vault)[1:])
    progress_path = SessionPaths.for_session(vault, "demo", "s1").progress
    progress = json.loads(progress_path.read_text(encoding="utf-8"))
    assert progress["goals"][0]["status"] == "completed"
    assert [n["text"] for n in progress["goals"][0]["notes"]] == ["step one done", "all done"]
    # Rebuild the views from the compacted log alone: the summary carries the early state.
    progress_path.unlink()
    with open_session(vault, writable=False) as session:
        assert [fact.text for fact in session.derived.facts] == ["an early fact"]
        assert session.derived.ledger.goals["g1"].notes[0].text == "step one done"


def test_a_second_eviction_folds_the_earlier_summary_in(vault_dir: Path) -> None:
    vault = capped_vault(vault_dir, events=24)
    with Session.start(vault, "demo", session_id="s1", goals=["g"], sync_record=False) as session:
        session.append("fact", text="kept across two rewrites")
        run_turns(session, 1, 30)
    written = lines(vault)
    assert [line["type"] for line in written].count("session.summary") == 1
    assert written[0]["payload"]["facts"][0]["text"] == "kept across two rewrites"
    assert written[0]["payload"]["lastTurn"] >= 20


def test_failing_summary_hook_leaves_the_log_untouched(vault_dir: Path) -> None:
    vault = capped_vault(vault_dir, events=20)
    with Session.start(vault, "demo", session_id="s1", sync_record=False) as session:
        run_turns(session, 1, 3)
    paths = SessionPaths.for_session(vault, "demo", "s1")

    def failing_hook(context: EvictionContext) -> CapSummary:
        raise RuntimeError("summariser offline")

    session = Session.open(vault, "demo", "s1", sync_record=False, summary_hook=failing_hook)
    session.start_turn()
    for item in range(12):
        session.append("message", text=f"filler {item}")
    with pytest.raises(SummaryHookFailed, match="summariser offline"):
        session.end_turn()
    before = paths.events.read_bytes(), paths.manifest.read_bytes(), paths.turns_index.read_bytes()
    assert json.loads(before[0].splitlines()[0])["event"]["type"] == "thread.started"
    assert not paths.pending_rewrite.exists()
    with pytest.raises(SummaryHookFailed):
        session.close()
    assert (paths.events.read_bytes(), paths.manifest.read_bytes(), paths.turns_index.read_bytes()) == before
    with open_session(vault, writable=False) as reopened:
        assert reopened.log.rescan_reason is None
        assert reopened.log.meta.last_turn == 4


def test_a_hook_returning_the_wrong_type_is_a_failure(vault_dir: Path) -> None:
    vault = capped_vault(vault_dir, events=10)
    with (
        pytest.raises(SummaryHookFailed),
        Session.start(
            vault, "demo", session_id="s1", sync_record=False, summary_hook=lambda context: "just a string"
        ) as session,
    ):  # type: ignore[arg-type,return-value]
        run_turns(session, 1, 5)


def test_custom_hook_sees_the_evicted_events_first(vault_dir: Path) -> None:
    vault = capped_vault(vault_dir, events=20)
    seen: list[EvictionContext] = []

    def hook(context: EvictionContext) -> CapSummary:
        seen.append(context)
        return CapSummary(text=f"{len(context.evicted)} events summarised", data={"by": "test"})

    with Session.start(vault, "demo", session_id="s1", sync_record=False, summary_hook=hook) as session:
        run_turns(session, 1, 6)
    assert seen and seen[0].evicted[0].type == "session.started"
    assert lines(vault)[0]["payload"]["data"] == {"by": "test"}


def test_interrupted_rewrite_marker_forces_a_rescan(vault_dir: Path) -> None:
    vault = capped_vault(vault_dir, events=30)
    with Session.start(vault, "demo", session_id="s1", sync_record=False) as session:
        run_turns(session, 1, 12)
    paths = SessionPaths.for_session(vault, "demo", "s1")
    # As if the process died after replacing events.jsonl but before publishing metadata.
    paths.pending_rewrite.write_text('{"generation": 1}\n', encoding="utf-8")
    with open_session(vault) as session:
        assert session.log.rescan_reason == "a cap rewrite did not finish"
        assert session.log.meta.last_turn == 12
    assert not paths.pending_rewrite.exists()
    with open_session(vault) as session:
        assert session.log.rescan_reason is None


def test_a_zero_cap_is_disabled_as_max_events_zero_is_in_vtcode(vault_dir: Path) -> None:
    assert not CapLimits(max_events=0, max_bytes=0).exceeded(10**9, 10**12)
    assert CapLimits(max_events=0, max_bytes=100).exceeded(10**9, 101)
    assert not CapLimits(max_events=0, max_bytes=100).exceeded(10**9, 100)
    vault = capped_vault(vault_dir, events=0)
    with Session.start(vault, "demo", session_id="s1", goals=["keep everything"], sync_record=False) as session:
        run_turns(session, 1, 30)
        assert session.last_cap is None
    written = lines(vault)
    assert written[0]["type"] == "session.started" and len(written) == 2 + 30 * 5
    assert "session.summary" not in {line["type"] for line in written}


def test_with_the_event_cap_off_the_byte_cap_still_applies(vault_dir: Path) -> None:
    vault = capped_vault(vault_dir, events=0, size=12_000)
    with Session.start(vault, "demo", session_id="s1", sync_record=False) as session:
        run_turns(session, 1, 40)
        assert session.last_cap is not None and session.last_cap.rewritten
    path = SessionPaths.for_session(vault, "demo", "s1").events
    assert path.stat().st_size <= 12_000 and lines(vault)[0]["type"] == "session.summary"
