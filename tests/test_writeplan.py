"""Planning an upsert without a disk: what it will do is decided from the request and what is there."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memosite.config import VaultConfig
from memosite.errors import InvalidArguments, InvalidTransition, SafetyViolation
from memosite.schema import Record, format_iso, validate_frontmatter
from memosite.writeplan import normalize_upsert, prepare_upsert, same_title

NOW = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
CONFIG = VaultConfig()


def record(kind: str, slug: str, body: str = "old body", **fm: object) -> Record:
    frontmatter = {"id": slug, "kind": kind, "project": "p", "created": "2026-01-01", "updated": "2026-01-02", **fm}
    return Record(validate_frontmatter(frontmatter), body)


def plan(request_kwargs: dict[str, object], **inputs: object):  # type: ignore[no-untyped-def]
    request = normalize_upsert(**request_kwargs)  # type: ignore[arg-type]
    return prepare_upsert(request, project="p", slug="s", now=NOW, config=CONFIG, **inputs)  # type: ignore[arg-type]


def test_a_new_record_is_created_with_its_dates_and_trap_counts() -> None:
    planned = plan({"kind": "trap", "body": "Beware.", "frontmatter": {"title": "T"}}, existing=None)
    fm = planned.record.frontmatter
    assert planned.action == "created" and planned.slug == "s"
    assert fm["created"] == fm["updated"] == format_iso(NOW)
    assert fm["occurrences"] == 1 and fm["lastSeen"] == format_iso(NOW) and fm["layer"] == "other"


def test_an_existing_record_is_updated_keeping_created_and_unknown_keys() -> None:
    existing = record("spec", "s", custom="kept")
    planned = plan({"kind": "spec", "body": "new", "frontmatter": {"title": "New"}}, existing=existing)
    fm = planned.record.frontmatter
    assert planned.action == "updated"
    assert fm["created"] == "2026-01-01T00:00:00.000Z" and fm["custom"] == "kept" and fm["title"] == "New"


def test_no_body_keeps_the_existing_one_and_a_new_record_needs_one() -> None:
    existing = record("spec", "s", body="kept body")
    assert plan({"kind": "spec", "body": None, "frontmatter": {"status": "paused"}}, existing=existing).record.body == (
        "kept body"
    )
    with pytest.raises(InvalidArguments, match="a new record needs one"):
        plan({"kind": "spec", "body": None}, existing=None)


def test_a_recurrence_bumps_the_trap_it_repeats() -> None:
    seen = record("trap", "t", occurrences=2)
    planned = plan({"kind": "trap", "body": "old body"}, existing=None, recurrence_of=seen)
    assert planned.action == "recurrence" and planned.occurrences == 3
    assert planned.record.body == "old body" and planned.record.frontmatter["lastSeen"] == format_iso(NOW)


def test_a_trap_that_supersedes_another_carries_its_occurrences_on() -> None:
    older = record("trap", "old", occurrences=4)
    planned = plan(
        {"kind": "trap", "body": "reworded", "frontmatter": {"supersedes": "old"}}, existing=None, older=older
    )
    assert planned.occurrences == 5 and planned.supersedes == "old"


def test_another_kind_at_the_target_is_refused_by_name() -> None:
    with pytest.raises(InvalidArguments, match="p/plan/s holds a plan, not a state"):
        plan({"kind": "state", "body": "x"}, existing=record("plan", "s"))


def test_a_superseded_record_is_terminal() -> None:
    with pytest.raises(InvalidTransition, match="superseded by b"):
        plan({"kind": "decision", "body": "x"}, existing=record("decision", "s", status="superseded", supersededBy="b"))


def test_normalizing_refuses_secrets_self_supersede_and_bad_ttl() -> None:
    with pytest.raises(SafetyViolation):
        normalize_upsert(kind="spec", body="key AKIA" + "Q7ZK2M9W4BT8NV1C")
    with pytest.raises(InvalidArguments, match="cannot supersede itself"):
        normalize_upsert(kind="spec", body="x", slug="a", frontmatter={"supersedes": "a"})
    with pytest.raises(InvalidArguments, match="Invalid ttl"):
        normalize_upsert(kind="spec", body="x", frontmatter={"ttl": "soon"})


def test_paths_fold_into_patterns_and_skip_vcs_directories() -> None:
    request = normalize_upsert(kind="trap", body="x", path="./src/a.py", frontmatter={"pathPatterns": ".git/config"})
    assert request.frontmatter["pathPatterns"] == ["src/a.py"]
    assert request.frontmatter["linkedPaths"] == ["src/a.py"]


@pytest.mark.parametrize(("left", "right"), [("Café  crème", "cafe creme"), ("ORDERS", "orders"), ("Ωμέγα", "ωμεγα")])
def test_titles_that_read_the_same_name_the_same_record(left: str, right: str) -> None:
    assert same_title(left, right)
    assert not same_title(left, right + "!")


REVIEWED = VaultConfig({"review": {"required": ["decision"]}})
PERSON = {"source": "human", "author": "Dev Person <dev@example.org>", "repoCommit": "b" * 40}


def test_a_fields_only_edit_keeps_who_wrote_the_text_and_names_the_editor() -> None:
    written = record("decision", "s", body="agent text", source="agent", author="codex 2.0", repoCommit="a" * 40)
    edited = plan(
        {"kind": "decision", "body": None, "frontmatter": {"status": "paused"}}, existing=written, provenance=PERSON
    ).record.frontmatter
    assert (edited["source"], edited["author"], edited["repoCommit"]) == ("agent", "codex 2.0", "a" * 40)
    assert edited["editedBy"] == "Dev Person <dev@example.org>"
    same_body = plan({"kind": "decision", "body": "agent text"}, existing=written, provenance=PERSON)
    assert same_body.record.frontmatter["author"] == "codex 2.0"
    rewritten = plan(
        {"kind": "decision", "body": "person text"},
        existing=record(
            "decision",
            "s",
            body="agent text",
            source="agent",
            author="codex 2.0",
            editedBy="Dev Person <dev@example.org>",
        ),
        provenance=PERSON,
    ).record.frontmatter
    assert (rewritten["source"], rewritten["author"]) == ("human", "Dev Person <dev@example.org>")
    assert "editedBy" not in rewritten


def test_review_follows_the_writer_not_the_text() -> None:
    accepted = record("decision", "s", body="person text", source="human", author="Dev Person <dev@example.org>")
    agent = {"source": "agent", "author": "codex 2.0"}
    request = normalize_upsert(kind="decision", body=None, frontmatter={"status": "paused"})
    by_agent = prepare_upsert(
        request, project="p", slug="s", existing=accepted, now=NOW, config=REVIEWED, provenance=agent
    )
    assert by_agent.record.frontmatter["review"] == "pending" and by_agent.action == "proposed"
    assert by_agent.record.frontmatter["source"] == "human" and by_agent.record.frontmatter["editedBy"] == "codex 2.0"
    approved = record("decision", "s", body="agent text", source="agent", author="codex 2.0", review="approved")
    by_person = prepare_upsert(
        request, project="p", slug="s", existing=approved, now=NOW, config=REVIEWED, provenance=PERSON
    )
    assert by_person.record.frontmatter["review"] == "approved" and by_person.action == "updated"


@pytest.mark.parametrize("name", ["db.accepted", "db.proposed", "db.conflict.1a2b3c4d"])
def test_names_of_the_files_kept_beside_a_record_are_not_slugs(name: str) -> None:
    with pytest.raises(InvalidArguments, match="kept for the files memosite keeps beside a record"):
        normalize_upsert(kind="decision", body="x", slug=name)
    with pytest.raises(InvalidArguments, match="kept for the files"):
        normalize_upsert(kind="decision", body="x", frontmatter={"id": name})
