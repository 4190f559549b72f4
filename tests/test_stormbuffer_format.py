"""The Stormbuffer record format: canonical rendering, strict schema rules, exact bodies."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memosite.errors import InvalidArguments, InvalidRecord
from memosite.stormbuffer.codec import parse_record, render_record
from memosite.stormbuffer.model import (
    check_frontmatter,
    format_timestamp,
    new_uuid,
    parse_timestamp,
    validate_record,
)

CANONICAL = """\
+++
format_version = 1
id = "01989af2-4305-7b19-88b1-e8ae4ea9a02b"
title = "Keep project memory out of source control"
kind = "decision"
scope = "project:01989af2-4305-7b19-88b1-e8ae4ea9a03b"
status = "active"
access = "agent"
created_at = "2026-08-05T20:09:00-05:00"
updated_at = "2026-08-05T20:09:00-05:00"
tags = ["privacy", "source-control"]
aliases = ["ignore project memory"]
supersedes = []

[[sources]]
kind = "conversation"
reference = "stormbuffer://session/2026-08-05"
actor = "user"
observed_at = "2026-08-05T20:09:00-05:00"
revision = "session-42"
content_hash = "blake3:8db6c6f72c33..."
+++

Project memory is private unless the team chooses to share it.
"""


def with_line(old: str, new: str) -> str:
    assert old in CANONICAL
    return CANONICAL.replace(old, new, 1)


def test_canonical_example_renders_back_byte_identical() -> None:
    record = parse_record(CANONICAL)
    assert render_record(record) == CANONICAL
    assert record.body == "Project memory is private unless the team chooses to share it.\n"
    assert record.sources[0].content_hash == "blake3:8db6c6f72c33..."


def test_timestamps_keep_their_offset_as_written() -> None:
    record = parse_record(CANONICAL)
    assert record.created_at == "2026-08-05T20:09:00-05:00"
    assert record.sources[0].observed_at == "2026-08-05T20:09:00-05:00"
    assert '"2026-08-05T20:09:00-05:00"' in render_record(record)


@pytest.mark.parametrize(
    ("old", "new", "field"),
    [
        ("format_version = 1", "format_version = 2", "format_version"),
        ("format_version = 1", "format_version = true", "format_version"),
        ("format_version = 1\n", "", "format_version"),
        ('access = "agent"', 'access = "agent"\ncolor = "blue"', "color"),
        ('id = "01989af2-4305-7b19-88b1-e8ae4ea9a02b"', 'id = "00000000-0000-0000-0000-000000000000"', "id"),
        ('id = "01989af2-4305-7b19-88b1-e8ae4ea9a02b"', 'id = "not-a-uuid"', "id"),
        ('scope = "project:01989af2-4305-7b19-88b1-e8ae4ea9a03b"', 'scope = "team:x"', "scope"),
        ('scope = "project:01989af2-4305-7b19-88b1-e8ae4ea9a03b"', 'scope = "project:shop"', "scope"),
        ('access = "agent"', 'access = "robot"', "access"),
        ('kind = "decision"', 'kind = "trap"', "kind"),
        ('status = "active"', 'status = "paused"', "status"),
        ('kind = "conversation"', 'kind = "email"', "sources[0].kind"),
        ('actor = "user"', 'actor = "user"\nurl = "x"', "sources[0].url"),
        ('reference = "stormbuffer://session/2026-08-05"\n', "", "sources[0].reference"),
        ('updated_at = "2026-08-05T20:09:00-05:00"', 'updated_at = "2026-08-05T20:08:59-05:00"', "updated_at"),
        ('created_at = "2026-08-05T20:09:00-05:00"', 'created_at = "2026-08-05 20:09"', "created_at"),
        ('created_at = "2026-08-05T20:09:00-05:00"', 'created_at = "2026-08-05T20:09:00"', "created_at"),
        ('observed_at = "2026-08-05T20:09:00-05:00"', 'observed_at = "yesterday"', "sources[0].observed_at"),
        ("supersedes = []", 'supersedes = ["01989af2-4305-7b19-88b1-e8ae4ea9a02b"]', "supersedes[0]"),
        ('tags = ["privacy", "source-control"]', "tags = [1]", "tags[0]"),
        ('title = "Keep project memory out of source control"', 'title = " "', "title"),
    ],
)
def test_strict_rule_rejects_and_names_the_field(old: str, new: str, field: str) -> None:
    with pytest.raises(InvalidRecord) as caught:
        parse_record(with_line(old, new))
    assert caught.value.code == "INVALID_RECORD"
    assert caught.value.details["field"] == field
    assert field in caught.value.message


def test_updated_at_compares_instants_not_text() -> None:
    # 20:09-05:00 is 01:09 UTC the next day: 01:08Z precedes it, though it sorts later as text.
    text = with_line('updated_at = "2026-08-05T20:09:00-05:00"', 'updated_at = "2026-08-06T01:08:00Z"')
    with pytest.raises(InvalidRecord, match="updated_at"):
        parse_record(text)
    later = with_line('updated_at = "2026-08-05T20:09:00-05:00"', 'updated_at = "2026-08-06T01:09:00Z"')
    assert parse_record(later).updated_at == "2026-08-06T01:09:00Z"


def test_all_problems_are_reported_not_only_the_first() -> None:
    data = {"format_version": 3, "id": "x", "kind": "note", "extra": 1}
    fields = {problem.field for problem in check_frontmatter(data)}
    assert {"format_version", "id", "kind", "extra", "title", "scope", "status"} <= fields


def test_records_built_in_code_raise_invalid_arguments() -> None:
    record = parse_record(CANONICAL)
    with pytest.raises(InvalidArguments) as caught:
        record.evolve(access="robot")
    assert caught.value.code == "INVALID_ARGUMENTS"
    assert caught.value.details["field"] == "access"


@pytest.mark.parametrize(
    "broken",
    ["no fence\n", "+++\ntitle = 'x'\n", "+++\ntitle = = 'x'\n+++\n\nbody\n"],
)
def test_broken_files_are_invalid_records(broken: str) -> None:
    with pytest.raises(InvalidRecord):
        parse_record(broken)


def test_new_ids_are_version_7_uuids_in_time_order() -> None:
    import uuid

    first, second = new_uuid(), new_uuid()
    assert uuid.UUID(first).version == 7
    assert first[:8] <= second[:8]


def test_format_timestamp_writes_z_for_utc_and_keeps_other_offsets() -> None:
    assert format_timestamp(parse_timestamp("2026-08-06T01:09:00Z")) == "2026-08-06T01:09:00Z"
    assert format_timestamp(parse_timestamp("2026-08-05T20:09:00-05:00")) == "2026-08-05T20:09:00-05:00"


_BASE = parse_record(CANONICAL)


@settings(max_examples=200, deadline=None)
@given(body=st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=300))
def test_body_is_preserved_exactly_through_render_and_parse(body: str) -> None:
    record = validate_record(replace(_BASE, body=body))
    text = render_record(record)
    again = parse_record(text)
    assert again.body == body
    assert render_record(again) == text


@settings(max_examples=100, deadline=None)
@given(
    title=st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=60).filter(str.strip),
    tags=st.lists(st.text(min_size=1, max_size=12).filter(str.strip), max_size=4),
)
def test_frontmatter_values_survive_render_and_parse(title: str, tags: list[str]) -> None:
    record = _BASE.evolve(title=title, tags=tuple(tags))
    again = parse_record(render_record(record))
    assert again == record
