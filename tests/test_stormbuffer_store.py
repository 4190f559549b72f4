"""A store as Stormbuffer lays it out: store.toml, .gitignore, flat records, the lock, lifecycle."""

from __future__ import annotations

import tomllib
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from memosite.errors import InvalidArguments, InvalidRecord, InvalidTransition, RecordNotFound, SafetyViolation
from memosite.stormbuffer.codec import read_record
from memosite.stormbuffer.lifecycle import OPERATIONS, TRANSITIONS, can_transition, check_operation
from memosite.stormbuffer.model import STATUSES, Source
from memosite.stormbuffer.store import Store, find_store, global_store_dir
from memosite.stormbuffer.storefile import PRIVATE_GITIGNORE, SHARED_GITIGNORE
from memosite.stormbuffer.validation import validate_store

NOW = datetime(2026, 8, 5, 20, 9, tzinfo=UTC)

# Stormbuffer's RecordStatus::can_transition_to, staying put aside.
ALLOWED = {
    ("candidate", "active"),
    ("candidate", "archived"),
    ("active", "superseded"),
    ("active", "archived"),
    ("archived", "active"),
}


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store.init(tmp_path / "shop" / ".sbuf")


def add(store: Store, title: str = "Use Postgres", **options: object) -> str:
    options.setdefault("access", "human")
    item = store.add(kind="decision", title=title, body=f"{title}.\n", now=NOW, **options)  # type: ignore[arg-type]
    return item.record.id


@pytest.mark.parametrize("current", STATUSES)
@pytest.mark.parametrize("target", STATUSES)
def test_lifecycle_table_allows_exactly_stormbuffers_transitions(current: str, target: str) -> None:
    assert can_transition(current, target) is ((current, target) in ALLOWED or current == target)


@pytest.mark.parametrize("operation", sorted(OPERATIONS))
@pytest.mark.parametrize("current", STATUSES)
def test_each_operation_starts_from_exactly_one_status(operation: str, current: str) -> None:
    required, target = OPERATIONS[operation]
    assert (required, target) in ALLOWED
    if current == required:
        assert check_operation("r", operation, current) == target
    else:
        with pytest.raises(InvalidTransition):
            check_operation("r", operation, current)


def test_a_refused_operation_names_the_status_it_needs_with_its_article() -> None:
    with pytest.raises(InvalidTransition, match="archive needs an active record"):
        check_operation("r1", "archive", "archived")
    with pytest.raises(InvalidTransition, match="reject needs a candidate record"):
        check_operation("r1", "reject", "active")


def test_superseded_is_terminal() -> None:
    assert TRANSITIONS["superseded"] == frozenset()


def test_init_writes_store_toml_with_exactly_stormbuffers_keys(store: Store) -> None:
    text = (store.path / "store.toml").read_text(encoding="utf-8")
    assert text == (
        'format_version = 1\nscope = "project"\nvisibility = "private"\n'
        f'project_id = "{store.info.project_id}"\nproject_name = "shop"\n'
    )
    assert list(tomllib.loads(text)) == ["format_version", "scope", "visibility", "project_id", "project_name"]
    assert store.scope == f"project:{store.info.project_id}"


def test_a_private_store_keeps_everything_out_of_git(store: Store) -> None:
    assert (store.path / ".gitignore").read_text(encoding="utf-8") == PRIVATE_GITIGNORE == "*\n!.gitignore\n"
    assert (store.path / "records").is_dir()


def test_a_shared_store_tracks_only_its_config_and_records(tmp_path: Path) -> None:
    shared = Store.init(tmp_path / "team" / ".sbuf", shared=True)
    assert shared.info.config.visibility == "shared"
    assert (shared.path / ".gitignore").read_text(encoding="utf-8") == SHARED_GITIGNORE
    Store.init(shared.path)  # again: fine
    (shared.path / ".gitignore").write_text(SHARED_GITIGNORE + "!index.sqlite3\n", encoding="utf-8")
    with pytest.raises(InvalidRecord, match="ignore rules are incomplete"):
        Store.init(shared.path)
    with pytest.raises(InvalidArguments, match="already private"):
        Store.init(tmp_path / "shop" / ".sbuf") and Store.init(tmp_path / "shop" / ".sbuf", shared=True)


def test_init_adds_a_missing_gitignore_to_an_existing_store(store: Store) -> None:
    (store.path / ".gitignore").unlink()
    Store.init(store.path)
    assert (store.path / ".gitignore").read_text(encoding="utf-8") == PRIVATE_GITIGNORE


@pytest.mark.parametrize(
    ("name", "ok"),
    [("Café Привет 東京 مرحبا 🎉", True), ("x" * 128, True), ("é" * 64, True), ("é" * 65, False),
     ("   ", False), ("tab\tname", False), ("", False)],
)  # fmt: skip
def test_project_names_follow_stormbuffers_rule(tmp_path: Path, name: str, ok: bool) -> None:
    if ok:
        created = Store.init(tmp_path / "p" / ".sbuf", name=name)
        assert Store.open(created.path).info.name == name
    else:
        with pytest.raises(InvalidArguments, match="project_name"):
            Store.init(tmp_path / "p" / ".sbuf", name=name)
        assert not (tmp_path / "p" / ".sbuf" / "store.toml").exists()


def test_store_identity_survives_renaming_and_moving(store: Store, tmp_path: Path) -> None:
    project_id = store.info.project_id
    record_id = add(store)
    store.rename("Shop (renamed)")
    moved = tmp_path / "elsewhere"
    (tmp_path / "shop").rename(moved)
    reopened = Store.open(moved / ".sbuf")
    assert reopened.info.project_id == project_id
    assert reopened.info.name == "Shop (renamed)"
    assert reopened.get(record_id).record.scope == f"project:{project_id}"


def test_init_is_idempotent_and_refuses_a_silent_rename(store: Store) -> None:
    again = Store.init(store.path)
    assert again.info.project_id == store.info.project_id and not again.info.created
    with pytest.raises(InvalidArguments, match="rename"):
        Store.init(store.path, name="Other")


@pytest.mark.parametrize(
    ("edit", "field"),
    [
        (lambda t: t + 'name = "x"\n', "name"),
        (lambda t: t.replace('scope = "project"', 'scope = "team"'), "scope"),
        (lambda t: t.replace('visibility = "private"', 'visibility = "public"'), "visibility"),
        (lambda t: t.replace("format_version = 1", "format_version = 2"), "format_version"),
        (lambda t: t.replace('visibility = "private"\n', ""), "visibility"),
        (lambda t: t.replace("project_name", "# project_name"), "project_name"),
        (lambda t: t.replace('project_name = "shop"', 'project_name = "  "'), "project_name"),
    ],
)
def test_store_toml_is_checked_as_strictly_as_stormbuffer(store: Store, edit: Any, field: str) -> None:
    path = store.path / "store.toml"
    path.write_text(edit(path.read_text(encoding="utf-8")), encoding="utf-8")
    with pytest.raises(InvalidRecord) as caught:
        Store.open(store.path)
    assert caught.value.details["field"] == field


@pytest.mark.parametrize("spelling", [str.upper, lambda s: s.replace("-", ""), lambda s: "{" + s + "}"])
def test_the_project_id_must_already_be_canonical(store: Store, spelling: Any) -> None:
    path = store.path / "store.toml"
    project_id = store.info.project_id
    assert project_id is not None
    path.write_text(path.read_text(encoding="utf-8").replace(project_id, spelling(project_id)), encoding="utf-8")
    with pytest.raises(InvalidRecord) as caught:
        Store.open(store.path)
    assert caught.value.details["field"] == "project_id"


def test_a_global_store_has_no_project_identity(tmp_path: Path) -> None:
    root = global_store_dir({"HOME": str(tmp_path), "XDG_DATA_HOME": str(tmp_path / "data")}, "linux")
    assert root == tmp_path / "data" / "stormbuffer"
    store = Store.init(root, global_store=True)
    assert (root / "store.toml").read_text(encoding="utf-8") == (
        'format_version = 1\nscope = "global"\nvisibility = "private"\n'
    )
    assert not (root / ".gitignore").exists()
    assert store.scope == "global"
    record = store.add(kind="fact", title="Prefer UTC", body="Store UTC.\n", access="human")
    assert record.record.scope == "global"
    with pytest.raises(InvalidArguments, match="shared stores require project scope"):
        Store.init(tmp_path / "g2", global_store=True, shared=True)
    path = root / "store.toml"
    path.write_text(path.read_text(encoding="utf-8") + 'project_name = "x"\n', encoding="utf-8")
    with pytest.raises(InvalidRecord, match="project identity"):
        Store.open(root)


def test_global_store_location_per_platform(tmp_path: Path) -> None:
    home = str(tmp_path)
    assert global_store_dir({"HOME": home}, "linux") == tmp_path / ".local" / "share" / "stormbuffer"
    assert global_store_dir({"HOME": home}, "darwin") == tmp_path / "Library" / "Application Support" / "stormbuffer"
    assert global_store_dir({"USERPROFILE": home, "LOCALAPPDATA": home + "/L"}, "win32") == Path(
        home + "/L/stormbuffer"
    )
    with pytest.raises(InvalidArguments, match="HOME"):
        global_store_dir({}, "linux")


def test_store_is_found_upward_like_git(store: Store, tmp_path: Path) -> None:
    deep = tmp_path / "shop" / "src" / "pkg"
    deep.mkdir(parents=True)
    assert find_store(deep) == store.path.absolute()


def test_agent_records_start_as_candidates_human_records_may_start_active(store: Store) -> None:
    agent = store.add(kind="fact", title="Python 3.11", body="x\n", access="agent")
    human = store.add(kind="fact", title="Python 3.12", body="y\n", access="human")
    assert agent.record.status == "candidate"
    assert human.record.status == "active"
    with pytest.raises(InvalidTransition):
        store.add(kind="fact", title="z", body="z\n", access="agent", status="active")


def test_add_writes_a_flat_file_named_by_the_id_that_stormbuffer_accepts(store: Store) -> None:
    item = store.add(
        kind="procedure",
        title="Release",
        body="1. tag\n",
        access="human",
        sources=[Source(kind="issue", reference="#42", actor="release-manager")],
        now=NOW,
    )
    assert item.path == store.path / "records" / f"{item.record.id}.md"
    assert read_record(item.path) == item.record
    assert item.record.scope == store.scope
    assert item.record.created_at == "2026-08-05T20:09:00Z"


def test_a_record_without_sources_gets_one_with_an_actor(store: Store) -> None:
    item = store.add(kind="fact", title="t", body="b\n", access="agent")
    (source,) = item.record.sources
    assert (source.kind, source.actor) == ("conversation", "agent")
    assert 'actor = "agent"' in item.path.read_text(encoding="utf-8")


@pytest.mark.parametrize("scope", ["global", "project:01989af2-4305-7b19-88b1-e8ae4ea9a03b", "project:shop"])
def test_a_record_of_another_scope_is_refused(store: Store, scope: str) -> None:
    with pytest.raises(InvalidArguments) as caught:
        store.add(kind="fact", title="t", body="b\n", scope=scope)
    assert caught.value.details["field"] == "scope"
    assert list(store.record_files()) == []


def test_records_are_found_by_the_id_inside_whatever_the_file_is_named(store: Store) -> None:
    record_id = add(store)
    path = store.path / "records" / f"{record_id}.md"
    renamed = store.path / "records" / "sub" / "example.md"
    renamed.parent.mkdir()
    path.rename(renamed)
    assert store.get(record_id).path == renamed
    promoted = store.archive(record_id, now=NOW)
    assert promoted.path == renamed  # rewritten in place
    assert sorted(p.name for p in store.record_files()) == ["example.md"]


def test_two_files_holding_one_id_stop_every_command_and_validate_names_both(store: Store) -> None:
    record_id = add(store)
    original = store.path / "records" / f"{record_id}.md"
    copy = store.path / "records" / "copy.md"
    copy.write_bytes(original.read_bytes())
    with pytest.raises(InvalidRecord, match="multiple files"):
        store.get(record_id)
    with pytest.raises(InvalidRecord, match="multiple files"):
        store.archive(record_id)
    report = validate_store(store.path)
    assert [(Path(p.path).name, p.field) for p in report.problems] == [("copy.md", "id")]
    assert f"{record_id}.md" in report.problems[0].message


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
    assert not (store.path / "locks" / "supersede.toml").exists()
    with pytest.raises(InvalidTransition, match="terminal"):
        store.restore(old)
    with pytest.raises(InvalidTransition):
        store.supersede(old, by=new)


def test_an_active_replacement_supersedes_at_once_a_candidate_when_promoted(store: Store) -> None:
    old = add(store, "Old")
    now_active = store.add(kind="decision", title="New", body="n\n", access="human", supersedes=old, now=NOW)
    assert now_active.record.supersedes == (old,)
    assert store.get(old).record.status == "superseded"
    older = add(store, "Older")
    proposal = store.add(kind="decision", title="Proposal", body="p\n", access="agent", supersedes=older, now=NOW)
    assert store.get(older).record.status == "active"
    store.promote(proposal.record.id)
    assert store.get(older).record.status == "superseded"
    assert store.get(proposal.record.id).record.status == "active"


@pytest.mark.parametrize("how", ["add active", "promote candidate", "supersede"])
def test_both_records_of_a_supersession_change_at_one_instant(store: Store, how: str) -> None:
    """As sbuf's commit_supersession: one `now` for the retired record and its replacement."""
    old = add(store, "Old")
    if how == "add active":
        new = store.add(kind="decision", title="New", body="n\n", access="human", supersedes=old).record.id
    elif how == "promote candidate":
        new = store.add(kind="decision", title="New", body="n\n", access="agent", supersedes=old).record.id
        store.promote(new)
    else:
        new = store.add(kind="decision", title="New", body="n\n", access="human").record.id
        store.supersede(old, by=new)
    retired, replacement = read_record(store.get(old).path), read_record(store.get(new).path)
    assert retired.status == "superseded" and replacement.supersedes == (old,)
    assert retired.updated_at == replacement.updated_at


def test_archive_and_restore_round_trip(store: Store) -> None:
    record_id = add(store)
    assert store.archive(record_id, now=NOW).record.status == "archived"
    assert store.restore(record_id, now=NOW).record.status == "active"


def test_reject_archives_a_candidate_and_nothing_else(store: Store) -> None:
    proposal = add(store, access="agent")
    rejected = store.reject(proposal, now=NOW + timedelta(minutes=5))
    assert rejected.record.status == "archived"
    assert rejected.record.updated_at == "2026-08-05T20:14:00Z"
    with pytest.raises(InvalidTransition, match="not candidate"):
        store.reject(add(store, "Active one"))


def test_candidates_must_be_promoted_or_rejected_before_archiving(store: Store) -> None:
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


def test_get_accepts_any_uuid_spelling_and_a_unique_prefix(store: Store) -> None:
    record_id = add(store)
    assert store.get(record_id[:13].upper()).record.id == record_id
    assert store.get(record_id.replace("-", "").upper()).record.id == record_id
    assert store.get("{" + record_id + "}").record.id == record_id
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
    bad = store.path / "records" / "anything.md"
    text = (store.path / "records" / f"{good}.md").read_text(encoding="utf-8")
    bad.write_text(
        text.replace('access = "human"', 'access = "robot"\nmood = "calm"').replace(
            good, "01989af2-4305-7b19-88b1-e8ae4ea9a02b"
        ),
        encoding="utf-8",
    )
    report = validate_store(store.path)
    assert report.checked == 3
    found = {(Path(p.path).name, p.field) for p in report.problems}
    assert found == {("anything.md", "access"), ("anything.md", "mood")}


@pytest.mark.parametrize(
    "source",
    [
        Source(kind="conversation", reference="chat", actor="Inference"),
        Source(kind="url", reference="inference://guess", actor="agent"),
        Source(kind="document", reference="inference:hunch", actor="agent"),
    ],
)
def test_inference_is_not_provenance_as_in_stormbuffer(store: Store, source: Source) -> None:
    with pytest.raises(InvalidArguments, match="inference"):
        store.add(kind="fact", title="Guess", body="a guess\n", sources=[source])
    assert list(store.record_files()) == []
    proposal = store.add(kind="fact", title="Fine", body="fine\n")
    path = proposal.path
    path.write_text(
        path.read_text(encoding="utf-8").replace('actor = "agent"', 'actor = "inference"'), encoding="utf-8"
    )
    with pytest.raises(InvalidArguments, match="inference"):
        store.promote(proposal.record.id)
    assert store.get(proposal.record.id).record.status == "candidate"
