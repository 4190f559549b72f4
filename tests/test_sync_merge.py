"""Record-aware merging, tombstone verdicts and sidecar names: the pure rules sync applies."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memosite.schema import Record, parse_record, serialize_record, validate_frontmatter
from memosite.sync.paths import blob_id, classify, parse_sidecar, sidecar_path
from memosite.sync.recordmerge import COUNTERS, merge_record
from memosite.sync.resolution import MergeContext, merge_config, merge_text_file, resolve_path, union_lines
from memosite.sync.tombstones import judge_deletion, latest_deletions, parse_tombstones

T0 = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)


def iso(minutes: float) -> str:
    moment = T0 + timedelta(minutes=minutes)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def record_text(body: str = "Locks bite.\n", **fields: Any) -> str:
    fm: dict[str, Any] = {
        "id": "lock-order",
        "kind": "trap",
        "project": "demo",
        "title": "Lock order",
        "created": iso(0),
        "updated": iso(0),
        "severity": "high",
        "occurrences": 1,
        "hits": 0,
    }
    for key, value in fields.items():
        if value is None:
            fm.pop(key, None)
        else:
            fm[key] = value
    return serialize_record(Record(validate_frontmatter(fm), body))


def fm(text: str) -> dict[str, Any]:
    return parse_record(text).frontmatter


# --- one side, both sides --------------------------------------------------------------------


def test_a_record_changed_on_one_side_takes_that_side_byte_for_byte() -> None:
    base = record_text()
    theirs = record_text(body="Locks bite harder.\n", updated=iso(5))
    assert merge_record(base, base, theirs).text == theirs
    assert merge_record(base, theirs, base).text == theirs


def test_fields_changed_on_different_sides_both_arrive() -> None:
    base = record_text()
    ours = record_text(severity="critical", updated=iso(3))
    theirs = record_text(body="Take locks in id order.\n", title="Lock order (σειρά κλειδώματος)", updated=iso(2))
    merged = merge_record(base, ours, theirs)
    assert not merged.conflict
    result = parse_record(merged.text)
    assert result.frontmatter["severity"] == "critical"
    assert result.frontmatter["title"] == "Lock order (σειρά κλειδώματος)"
    assert result.frontmatter["updated"] == iso(3)  # the later of the two
    assert result.body == "Take locks in id order.\n"


def test_counters_add_up_both_sides_increments() -> None:
    base = record_text(hits=3, occurrences=2, helpfulCount=1, staleCount=0)
    ours = record_text(hits=5, occurrences=3, helpfulCount=2, staleCount=0, lastHit=iso(4))
    theirs = record_text(hits=4, occurrences=4, helpfulCount=1, staleCount=2, lastHit=iso(7))
    merged = merge_record(base, ours, theirs)
    assert not merged.conflict
    result = fm(merged.text)
    assert (result["hits"], result["occurrences"], result["helpfulCount"], result["staleCount"]) == (6, 5, 2, 2)
    assert result["lastHit"] == iso(7)


def test_a_counter_absent_in_the_ancestor_counts_as_its_default() -> None:
    base = record_text(hits=None)
    ours, theirs = record_text(hits=1), record_text(hits=2)
    assert fm(merge_record(base, ours, theirs).text)["hits"] == 3


def test_last_seen_and_updated_take_the_later_instant() -> None:
    base = record_text(lastSeen=iso(1))
    ours = record_text(lastSeen=iso(9), updated=iso(2))
    theirs = record_text(lastSeen=iso(4), updated=iso(8))
    result = fm(merge_record(base, ours, theirs).text)
    assert result["lastSeen"] == iso(9) and result["updated"] == iso(8)


def test_both_sides_changing_one_field_is_a_conflict_that_keeps_ours_whole() -> None:
    base = record_text()
    ours, theirs = record_text(severity="low"), record_text(severity="critical")
    merged = merge_record(base, ours, theirs)
    assert merged.conflict and merged.fields == ("severity",) and merged.text == ours


def test_both_sides_changing_the_body_is_a_conflict() -> None:
    base = record_text()
    merged = merge_record(base, record_text(body="mine\n"), record_text(body="yours\n"))
    assert merged.conflict and merged.fields == ("body",)


def test_the_same_change_on_both_sides_is_no_conflict() -> None:
    base = record_text()
    same = record_text(body="同じ変更\n", updated=iso(3))
    assert merge_record(base, same, same) == merge_record(base, same, same)
    assert not merge_record(base, same, same).conflict


def test_both_sides_creating_one_record_merges_or_conflicts_on_the_body() -> None:
    ours = record_text(created=iso(1), updated=iso(1))
    theirs = record_text(created=iso(2), updated=iso(2))
    merged = merge_record(None, ours, theirs)
    assert not merged.conflict
    assert fm(merged.text)["created"] == iso(1) and fm(merged.text)["updated"] == iso(2)
    assert merge_record(None, record_text(body="a\n"), record_text(body="b\n")).conflict


def test_an_unparseable_version_is_a_conflict_never_a_guess() -> None:
    base = record_text()
    broken = "---\ntitle: [unclosed\n---\nbody\n"
    merged = merge_record(base, record_text(severity="low"), broken)
    assert merged.conflict and "not a valid record" in merged.reason


def test_untouched_fields_keep_their_original_text() -> None:
    base = (
        "---\nid: x\nkind: trap\nproject: demo\ncreated: 2026-11-01\nupdated: 2026-11-01\n"
        "when: '10:00'  # local time\n---\nb\n"
    )
    ours = base.replace("b\n", "b2\n")
    theirs = base.replace("kind: trap\n", "kind: trap\nseverity: low\n")
    merged = merge_record(base, ours, theirs).text
    assert "when: '10:00'  # local time\n" in merged and "created: 2026-11-01\n" in merged
    assert merged.endswith("---\nb2\n") and "severity: low" in merged


# --- properties --------------------------------------------------------------------------------

TITLES = [
    "Lock order",
    "Ordre des verrous",
    "Порядок блокировок",
    "ロックの順序",
    "ترتيب الأقفال",
    "ताला क्रम",
    "🔒 order",
]
BODIES = ["Locks bite.\n", "Take locks by id.\n", "Κλειδώματα.\n", "锁的顺序很重要。\n", "שמור על הסדר.\n"]

side_changes = st.fixed_dictionaries(
    {},
    optional={
        "title": st.sampled_from(TITLES),
        "severity": st.sampled_from(["low", "medium", "high", "critical"]),
        "hits": st.integers(0, 4),  # increments
        "occurrences": st.integers(0, 3),
        "lastHit": st.integers(1, 50),
        "updated": st.integers(1, 50),
        "tags": st.lists(st.sampled_from(["db", "ui", "ops"]), max_size=2, unique=True),
        "note": st.one_of(st.none(), st.sampled_from(["keep", "drop", "ändern"])),
        "body": st.sampled_from(BODIES),
    },
)


def apply(base_fields: dict[str, Any], changes: dict[str, Any]) -> str:
    fields = dict(base_fields)
    body = changes.get("body", "Locks bite.\n")
    for key, value in changes.items():
        if key in ("hits", "occurrences"):
            fields[key] = fields[key] + value
        elif key in ("lastHit", "updated"):
            fields[key] = iso(value)
        elif key != "body":
            fields[key] = value
    return record_text(body, **fields)


BASE_FIELDS: dict[str, Any] = {"hits": 2, "occurrences": 1, "note": "keep"}


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(mine=side_changes, yours=side_changes)
def test_merge_is_symmetric_and_loses_no_change(mine: dict[str, Any], yours: dict[str, Any]) -> None:
    base, ours, theirs = apply(BASE_FIELDS, {}), apply(BASE_FIELDS, mine), apply(BASE_FIELDS, yours)
    there, back = merge_record(base, ours, theirs), merge_record(base, theirs, ours)
    assert there.conflict == back.conflict
    if ours == theirs:  # the same change on both sides is one change (git's rule: no driver runs)
        assert there.text == ours and not there.conflict
        return
    if there.conflict:
        assert there.text == ours and back.text == theirs  # the local version stays whole
        return
    merged, mirrored = parse_record(there.text), parse_record(back.text)
    assert merged.frontmatter == mirrored.frontmatter and merged.body == mirrored.body
    b, o, t = fm(base), fm(ours), fm(theirs)
    for key in set(o) | set(t) | set(b):
        if key in COUNTERS:
            assert merged.frontmatter.get(key) == o.get(key, 0) + t.get(key, 0) - b.get(key, 0)
        elif key in ("updated", "lastHit") and key in o and key in t:
            assert merged.frontmatter[key] == max(o[key], t[key])
        elif o.get(key) != b.get(key):
            assert merged.frontmatter.get(key) == o.get(key)  # our change arrived
        elif t.get(key) != b.get(key):
            assert merged.frontmatter.get(key) == t.get(key)  # theirs arrived
    assert merged.body in {ours_body for ours_body in (parse_record(ours).body, parse_record(theirs).body)}
    assert "<<<<<<<" not in there.text


@settings(max_examples=200, deadline=None)
@given(
    base=st.lists(st.sampled_from([f"line {n}" for n in range(8)]), unique=True, max_size=6),
    ours_added=st.lists(st.sampled_from(["a1", "a2", "ü3", "x"]), unique=True, max_size=3),
    theirs_added=st.lists(st.sampled_from(["b1", "b2", "ü3", "x"]), unique=True, max_size=3),
)
def test_jsonl_union_keeps_every_line_of_both_sides(
    base: list[str], ours_added: list[str], theirs_added: list[str]
) -> None:
    encode = lambda lines: "".join(f"{line}\n" for line in lines).encode("utf-8")  # noqa: E731
    ours, theirs = encode(base + ours_added), encode(base + theirs_added)
    merged = union_lines(encode(base), ours, theirs).decode("utf-8").splitlines()
    assert set(merged) == set(base) | set(ours_added) | set(theirs_added)
    assert len(merged) == len(set(merged))
    assert set(union_lines(encode(base), theirs, ours).decode("utf-8").splitlines()) == set(merged)


def test_jsonl_union_drops_what_one_side_removed() -> None:
    assert union_lines(b"old\nkeep\n", b"keep\nnew\n", b"old\nkeep\n") == b"keep\nnew\n"


# --- files, views, sidecars ---------------------------------------------------------------------

NO_CONTEXT = MergeContext(lambda path: None, lambda side, path: None)


def test_a_file_merges_lines_or_keeps_ours_with_theirs_beside_it() -> None:
    base = b'{\n  "ttl": 7,\n  "a": 0,\n  "b": 0,\n  "x": 1\n}\n'
    ours = base.replace(b'"ttl": 7', b'"ttl": 8')
    theirs = base.replace(b'"x": 1', b'"x": 2')
    assert merge_text_file(base, ours, theirs) == ours.replace(b'"x": 1', b'"x": 2')
    resolution = resolve_path("config.json", base, ours, base.replace(b'"ttl": 7', b'"ttl": 9'), NO_CONTEXT)
    assert resolution.outcome == "conflict" and resolution.content == ours
    assert resolution.sidecar is not None and resolution.sidecar.startswith("config.conflict.")
    assert resolution.sidecar.endswith(".json") and b"<<<<<<<" not in (resolution.content or b"")


def test_config_merges_key_by_key_and_a_key_set_on_both_sides_is_a_conflict() -> None:
    base = b'{"bootstrap": {"maxBytes": 8192}, "ttl": {"scratchDays": 7}}'
    ours = b'{"bootstrap": {"maxBytes": 4096}, "ttl": {"scratchDays": 7}}'
    theirs = b'{"bootstrap": {"maxBytes": 8192}, "ttl": {"scratchDays": 3}}'
    merged = merge_config(base, ours, theirs)
    assert merged is not None
    assert json.loads(merged) == {"bootstrap": {"maxBytes": 4096}, "ttl": {"scratchDays": 3}}
    assert merge_config(base, ours, base) == ours  # nothing of theirs to take: ours byte for byte
    assert merge_config(base, ours, theirs.replace(b"8192", b"2048")) is None
    assert merge_config(base, ours, b"not json") is None


def test_config_left_at_its_default_on_one_side_takes_the_other_sides_value() -> None:
    joining = json.dumps({"ttl": {"scratchDays": 7}, "sessions": {"keep": 50}}).encode()
    team = json.dumps({"ttl": {"scratchDays": 2}, "sessions": {"keep": 9}}).encode()
    for ours, theirs in ((joining, team), (team, joining)):
        merged = merge_config(None, ours, theirs)  # unrelated histories: no common version
        assert merged is not None and json.loads(merged) == json.loads(team)
    assert resolve_path("config.json", None, joining, team, NO_CONTEXT).outcome == "merged"


def test_a_view_keeps_the_local_text_to_be_recompiled() -> None:
    resolution = resolve_path("projects/demo/TRAPS.md", b"base", b"ours", b"theirs", NO_CONTEXT)
    assert resolution.content == b"ours" and resolution.outcome == "merged"


def test_sidecar_names_carry_the_remote_versions_blob_id() -> None:
    remote = record_text(body="remote\n").encode("utf-8")
    sidecar = sidecar_path("projects/demo/traps/lock-order.md", remote)
    assert sidecar == f"projects/demo/traps/lock-order.conflict.{blob_id(remote)[:8]}.md"
    parsed = parse_sidecar(sidecar)
    assert parsed is not None and parsed.original == "projects/demo/traps/lock-order.md"
    assert classify(sidecar) == "sidecar" and classify("projects/demo/traps/lock-order.md") == "record"
    assert parse_sidecar(sidecar_path(".gitignore", b"x")) is not None
    assert parse_sidecar(sidecar_path(".gitignore", b"x")).original == ".gitignore"  # type: ignore[union-attr]


def test_blob_id_is_gits() -> None:
    assert blob_id(b"hello\n") == "ce013625030ba8dba906f756967f9e9ca394464a"


# --- tombstones ---------------------------------------------------------------------------------


def test_a_tombstone_newer_than_the_edit_wins() -> None:
    base = record_text()
    edited = record_text(severity="low", updated=iso(5))
    verdict = judge_deletion(
        base=base,
        edited=edited,
        tombstone_at=T0 + timedelta(minutes=6),
        deletion_commit_seconds=None,
        edit_commit_seconds=None,
    )
    assert verdict.deletion_wins


def test_an_edit_after_the_purge_keeps_the_record() -> None:
    verdict = judge_deletion(
        base=record_text(),
        edited=record_text(hits=1, lastHit=iso(9)),
        tombstone_at=T0 + timedelta(minutes=6),
        deletion_commit_seconds=None,
        edit_commit_seconds=None,
    )
    assert not verdict.deletion_wins and verdict.edited_at == T0 + timedelta(minutes=9)


def test_a_tie_keeps_the_record() -> None:
    verdict = judge_deletion(
        base=record_text(),
        edited=record_text(updated=iso(6)),
        tombstone_at=T0 + timedelta(minutes=6),
        deletion_commit_seconds=None,
        edit_commit_seconds=None,
    )
    assert not verdict.deletion_wins


def test_a_hand_edit_is_dated_by_its_commit() -> None:
    base = record_text()
    hand_edited = record_text(body="fixed by hand\n")  # no time field changed
    purge = T0 + timedelta(minutes=30)
    later = int((purge + timedelta(minutes=1)).timestamp())
    earlier = int((purge - timedelta(minutes=1)).timestamp())
    kwargs: dict[str, Any] = {
        "base": base,
        "edited": hand_edited,
        "tombstone_at": purge,
        "deletion_commit_seconds": None,
    }
    assert not judge_deletion(**kwargs, edit_commit_seconds=later).deletion_wins
    assert judge_deletion(**kwargs, edit_commit_seconds=earlier).deletion_wins


def test_latest_tombstone_of_each_path() -> None:
    lines = "\n".join(
        [
            '{"path": "projects/demo/traps/a.md", "deletedAt": "2026-11-01T12:00:00.000Z"}',
            '{"path": "projects/demo/traps/a.md", "deletedAt": "2026-11-02T12:00:00.000Z"}',
            "not json",
            '{"path": "projects/demo/traps/b.md", "deletedAt": "garbage"}',
        ]
    )
    latest = latest_deletions(parse_tombstones(lines))
    assert latest == {"projects/demo/traps/a.md": datetime(2026, 11, 2, 12, tzinfo=UTC)}
