"""The project store: identity, lifecycle, retrieval, supersession, forget, validation."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memosite.errors import InvalidArguments, InvalidTransition, RecordNotFound, SafetyViolation
from memosite.stormbuffer.codec import read_record
from memosite.stormbuffer.lifecycle import TRANSITIONS, can_transition, check_transition
from memosite.stormbuffer.model import STATUSES, Source
from memosite.stormbuffer.store import Store, find_store
from memosite.stormbuffer.validation import validate_store

NOW = datetime(2026, 8, 5, 20, 9, tzinfo=UTC)

ALLOWED = {
    ("candidate", "active"),
    ("active", "superseded"),
    ("active", "archived"),
    ("archived", "active"),
}


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store.init(tmp_path / "repo" / ".sbuf", name="Shop")


def add(store: Store, title: str = "Use Postgres", **options: object) -> str:
    options.setdefault("access", "human")
    item = store.add(kind="decision", title=title, body=f"{title}.\n", now=NOW, **options)  # type: ignore[arg-type]
    return item.record.id


@pytest.mark.parametrize("current", STATUSES)
@pytest.mark.parametrize("target", STATUSES)
def test_lifecycle_table_allows_exactly_the_seed_transitions(current: str, target: str) -> None:
    allowed = (current, target) in ALLOWED
    assert can_transition(current, target) is allowed
    if allowed:
        check_transition("r", current, target)
    else:
        with pytest.raises(InvalidTransition):
            check_transition("r", current, target)


def test_superseded_is_terminal() -> None:
    assert TRANSITIONS["superseded"] == frozenset()


def test_store_identity_survives_renaming_and_moving(store: Store, tmp_path: Path) -> None:
    project_id = store.info.project_id
    record_id = add(store)
    store.rename("Shop (renamed)")
    moved = tmp_path / "elsewhere"
    (tmp_path / "repo").rename(moved)
    reopened = Store.open(moved / ".sbuf")
    assert reopened.info.project_id == project_id
    assert reopened.info.name == "Shop (renamed)"
    assert reopened.get(record_id).record.scope == f"project:{project_id}"


def test_init_is_idempotent_and_refuses_a_silent_rename(store: Store) -> None:
    again = Store.init(store.path)
    assert again.info.project_id == store.info.project_id and not again.info.created
    with pytest.raises(InvalidArguments, match="rename"):
        Store.init(store.path, name="Other")


def test_store_is_found_upward_like_git(store: Store, tmp_path: Path) -> None:
    deep = tmp_path / "repo" / "src" / "pkg"
    deep.mkdir(parents=True)
    assert find_store(deep) == store.path.absolute()


def test_agent_records_start_as_candidates_human_records_may_start_active(store: Store) -> None:
    agent = store.add(kind="fact", title="Python 3.11", body="x\n", access="agent")
    human = store.add(kind="fact", title="Python 3.12", body="y\n", access="human")
    assert agent.record.status == "candidate"
    assert human.record.status == "active"
    with pytest.raises(InvalidTransition):
        store.add(kind="fact", title="z", body="z\n", access="agent", status="active")


def test_add_writes_records_under_their_kind_with_the_store_scope(store: Store) -> None:
    item = store.add(
        kind="procedure",
        title="Release",
        body="1. tag\n",
        access="human",
        sources=[Source(kind="issue", reference="#42")],
        now=NOW,
    )
    assert item.path == store.path / "records" / "procedure" / f"{item.record.id}.md"
    assert read_record(item.path) == item.record
    assert item.record.scope == store.scope
    with pytest.raises(InvalidArguments) as caught:
        store.add(kind="fact", title="t", body="b\n", scope="project:01989af2-4305-7b19-88b1-e8ae4ea9a03b")
    assert caught.value.details["field"] == "scope"


def test_normal_retrieval_excludes_superseded_and_archived(store: Store) -> None:
    old, new, gone, idea = add(store, "Old"), add(store, "New"), add(store, "Gone"), add(store, "Idea", access="agent")
    store.supersede(old, by=new, now=NOW)
    store.archive(gone, now=NOW)
    assert {i.record.id for i in store.list()} == {new, idea}
    assert {i.record.id for i in store.list(include_all=True)} == {old, new, gone, idea}


def test_supersede_keeps_the_old_claim_and_only_changes_its_status(store: Store) -> None:
    old, new = add(store, "Old"), add(store, "New")
    before = store.get(old).record
    later = NOW + timedelta(hours=1)
    _, new_item = store.supersede(old, by=new, now=later)
    after = store.get(old).record
    assert after.status == "superseded"
    assert (after.title, after.body, after.sources, after.created_at) == (
        before.title,
        before.body,
        before.sources,
        before.created_at,
    )
    assert after.updated_at == "2026-08-05T21:09:00Z"
    assert new_item.record.supersedes == (old,)
    with pytest.raises(InvalidTransition, match="terminal"):
        store.restore(old)
    with pytest.raises(InvalidTransition):
        store.supersede(old, by=new)


def test_add_with_supersedes_replaces_in_one_step(store: Store) -> None:
    old = add(store, "Old")
    new = store.add(kind="decision", title="New", body="n\n", access="human", supersedes=old, now=NOW)
    assert new.record.supersedes == (old,)
    assert store.get(old).record.status == "superseded"


def test_archive_and_restore_round_trip(store: Store) -> None:
    record_id = add(store)
    assert store.archive(record_id, now=NOW).record.status == "archived"
    assert store.restore(record_id, now=NOW).record.status == "active"


def test_candidates_must_be_promoted_before_archiving(store: Store) -> None:
    record_id = add(store, access="agent")
    with pytest.raises(InvalidTransition, match="promote"):
        store.archive(record_id)
    assert store.promote(record_id).record.status == "active"


def test_updated_at_never_precedes_created_at_under_clock_skew(store: Store) -> None:
    record_id = add(store)
    skewed = store.archive(record_id, now=NOW - timedelta(days=1)).record
    assert skewed.updated_at == skewed.created_at


def test_forget_requires_destroy(store: Store) -> None:
    record_id = add(store)
    with pytest.raises(InvalidArguments, match="--destroy"):
        store.forget(record_id)
    assert store.get(record_id)
    outcome = store.forget(record_id, destroy=True)
    assert outcome.destroyed and not Path(outcome.path).exists()
    with pytest.raises(RecordNotFound):
        store.get(record_id)


def test_get_accepts_a_unique_prefix_and_refuses_an_ambiguous_one(store: Store) -> None:
    record_id = add(store)
    assert store.get(record_id[:13].upper()).record.id == record_id
    add(store, "Second")
    with pytest.raises(InvalidArguments, match="ambiguous"):
        store.get(record_id[:4])
    with pytest.raises(InvalidArguments):
        store.get("../../etc/passwd")


def test_secrets_are_refused_before_anything_is_written(store: Store) -> None:
    with pytest.raises(SafetyViolation):
        store.add(kind="fact", title="token", body="ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8\n")
    assert list(store.record_files()) == []


def test_validate_reports_every_problem_with_file_and_field(store: Store) -> None:
    good = add(store)
    bad = store.path / "records" / "fact" / "01989af2-4305-7b19-88b1-e8ae4ea9a02b.md"
    text = (store.path / "records" / "decision" / f"{good}.md").read_text(encoding="utf-8")
    bad.parent.mkdir(parents=True, exist_ok=True)
    bad.write_text(text.replace('access = "human"', 'access = "robot"\nmood = "calm"'), encoding="utf-8")
    report = validate_store(store.path)
    assert report.checked == 3
    found = {(Path(p.path).name, p.field) for p in report.problems}
    assert ("01989af2-4305-7b19-88b1-e8ae4ea9a02b.md", "access") in found
    assert ("01989af2-4305-7b19-88b1-e8ae4ea9a02b.md", "mood") in found
    assert ("01989af2-4305-7b19-88b1-e8ae4ea9a02b.md", "id") in found  # file name ≠ id
    assert ("01989af2-4305-7b19-88b1-e8ae4ea9a02b.md", "kind") in found  # decision under fact/
