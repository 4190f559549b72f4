"""The one turn-lifecycle state machine, on its own and as used by append and rescan."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memosite.errors import InvalidTransition
from memosite.sessions.lifecycle import LifecycleKind, TurnState, kind_for_status
from memosite.sessions.log import EventLog
from memosite.sessions.metadata import Manifest
from memosite.sessions.paths import SessionPaths

STARTED, COMPLETED, FAILED, ABORTED = (
    LifecycleKind.STARTED,
    LifecycleKind.COMPLETED,
    LifecycleKind.FAILED,
    LifecycleKind.ABORTED,
)


def test_turns_are_numbered_from_one_without_gaps() -> None:
    state = TurnState()
    state.apply(STARTED, 1, seq=1, offset=0)
    state.apply(COMPLETED, 1, seq=2, offset=10)
    state.apply(STARTED, 2, seq=3, offset=20)
    assert [span.turn for span in state.turns] == [1, 2]
    assert state.open_turn is not None and state.open_turn.turn == 2
    with pytest.raises(InvalidTransition, match="out of order"):
        TurnState().apply(STARTED, 2, seq=1, offset=0)


def test_no_turn_starts_inside_a_turn() -> None:
    state = TurnState()
    state.apply(STARTED, 1, seq=1, offset=0)
    with pytest.raises(InvalidTransition, match="still open"):
        state.apply(STARTED, 2, seq=2, offset=10)
    assert len(state.turns) == 1


@pytest.mark.parametrize("end", [COMPLETED, FAILED, ABORTED])
def test_no_end_without_a_start(end: LifecycleKind) -> None:
    state = TurnState()
    with pytest.raises(InvalidTransition, match="no turn is open"):
        state.apply(end, 1, seq=1, offset=0)
    assert state.turns == []


def test_an_end_must_name_the_open_turn_and_ends_it_once() -> None:
    state = TurnState()
    state.apply(STARTED, 1, seq=1, offset=0)
    with pytest.raises(InvalidTransition, match="open turn is 1"):
        state.apply(FAILED, 2, seq=2, offset=10)
    state.apply(FAILED, 1, seq=2, offset=10)
    assert state.turns[0].status == "failed"
    with pytest.raises(InvalidTransition):
        state.apply(COMPLETED, 1, seq=3, offset=20)


def test_check_never_mutates() -> None:
    state = TurnState()
    state.check(STARTED, 1)
    assert state.turns == []


def test_a_summary_rebases_numbering_only_before_any_turn() -> None:
    state = TurnState()
    state.rebase(41)
    state.apply(STARTED, 42, seq=100, offset=0)
    assert state.last_turn == 42
    with pytest.raises(InvalidTransition):
        state.rebase(50)
    with pytest.raises(InvalidTransition):
        TurnState(base=5).rebase(3)
    with pytest.raises(InvalidTransition):
        TurnState().rebase("7")


def test_turn_status_names() -> None:
    assert kind_for_status("aborted") is ABORTED
    with pytest.raises(InvalidTransition):
        kind_for_status("started")


OPERATIONS = st.lists(
    st.sampled_from(["turn.started", "turn.completed", "turn.failed", "turn.aborted", "message"]),
    max_size=25,
)


@pytest.mark.slow
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(operations=OPERATIONS)
def test_append_and_rescan_agree_on_every_sequence(tmp_path: Path, operations: list[str]) -> None:
    """Whatever an agent tries, the turns a rescan reconstructs are the turns append accepted."""
    import uuid

    root = tmp_path / uuid.uuid4().hex
    paths = SessionPaths(root, "s")
    log = EventLog.create(paths, "demo", lock_path=root / "s.lock")
    accepted = []
    for operation in operations:
        try:
            log.append(operation, {"text": operation})
        except InvalidTransition:
            continue
        accepted.append(operation)
    log.close()
    appended = [span.to_json() for span in log.turns]
    paths.manifest.unlink()
    rescanned = EventLog.open(paths, "demo", writable=False)
    assert rescanned.rescan_reason is not None
    assert [span.to_json() for span in rescanned.turns] == appended
    assert rescanned.meta.malformed_lines == 0
    assert rescanned.meta.event_count == len(accepted)
    assert isinstance(rescanned.meta, Manifest)
