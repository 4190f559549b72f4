"""The Stormbuffer record format: sbuf's rendering, its strict schema rules, exact bodies."""

from __future__ import annotations

import tomllib
import uuid
from dataclasses import replace
from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memosite.errors import InvalidArguments, InvalidRecord
from memosite.stormbuffer.codec import parse_record, render_record, split_document
from memosite.stormbuffer.model import check_frontmatter, validate_record
from memosite.stormbuffer.tomlstyle import toml_string
from memosite.stormbuffer.values import (
    WHITE_SPACE,
    Timestamp,
    new_uuid,
    parse_timestamp,
    parse_uuid,
    rust_trim,
    text_problem,
)

# The seed's example record, as a person writes it (arrays on one line).
SEED_EXAMPLE = """\
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

# The same record as sbuf's render_markdown writes it (toml 0.8 pretty: two or more items a line each).
SBUF_RENDERED = SEED_EXAMPLE.replace(
    'tags = ["privacy", "source-control"]', 'tags = [\n    "privacy",\n    "source-control",\n]'
)


def with_line(old: str, new: str) -> str:
    assert old in SEED_EXAMPLE
    return SEED_EXAMPLE.replace(old, new, 1)


def test_rendering_is_what_sbuf_writes_and_renders_back_byte_identical() -> None:
    record = parse_record(SEED_EXAMPLE)
    assert render_record(record) == SBUF_RENDERED
    assert render_record(parse_record(SBUF_RENDERED)) == SBUF_RENDERED
    assert record.body == "Project memory is private unless the team chooses to share it.\n"
    assert record.sources[0].content_hash == "blake3:8db6c6f72c33..."


def test_rendering_writes_canonical_ids_and_timestamps() -> None:
    text = with_line('id = "01989af2-4305-7b19-88b1-e8ae4ea9a02b"', 'id = "01989AF243057B1988B1E8AE4EA9A02B"')
    text = text.replace('created_at = "2026-08-05T20:09:00-05:00"', 'created_at = "2026-08-06T01:08:00.500+00:00"')
    record = parse_record(text)
    assert record.id == "01989AF243057B1988B1E8AE4EA9A02B"  # held as written
    rendered = render_record(record)
    assert 'id = "01989af2-4305-7b19-88b1-e8ae4ea9a02b"' in rendered
    assert 'created_at = "2026-08-06T01:08:00.5Z"' in rendered


@pytest.mark.parametrize(
    ("old", "new", "field"),
    [
        ("format_version = 1", "format_version = 2", "format_version"),
        ("format_version = 1", "format_version = true", "format_version"),
        ("format_version = 1", "format_version = -1", "format_version"),
        ("format_version = 1\n", "", "format_version"),
        ('access = "agent"', 'access = "agent"\ncolor = "blue"', "color"),
        ('id = "01989af2-4305-7b19-88b1-e8ae4ea9a02b"', 'id = "00000000-0000-0000-0000-000000000000"', "id"),
        ('id = "01989af2-4305-7b19-88b1-e8ae4ea9a02b"', 'id = "not-a-uuid"', "id"),
        ('scope = "project:01989af2-4305-7b19-88b1-e8ae4ea9a03b"', 'scope = "team:x"', "scope"),
        ('scope = "project:01989af2-4305-7b19-88b1-e8ae4ea9a03b"', 'scope = "project:"', "scope"),
        ('scope = "project:01989af2-4305-7b19-88b1-e8ae4ea9a03b"', 'scope = "Global"', "scope"),
        ('access = "agent"', 'access = "robot"', "access"),
        ('kind = "decision"', 'kind = "trap"', "kind"),
        ('status = "active"', 'status = "paused"', "status"),
        ('kind = "conversation"', 'kind = "email"', "sources[0].kind"),
        ('actor = "user"', 'actor = "user"\nurl = "x"', "sources[0].url"),
        ('actor = "user"\n', "", "sources[0].actor"),
        ('actor = "user"', 'actor = "user "', "sources[0].actor"),
        ('reference = "stormbuffer://session/2026-08-05"\n', "", "sources[0].reference"),
        ('revision = "session-42"', 'revision = ""', "sources[0].revision"),
        ('content_hash = "blake3:8db6c6f72c33..."', 'content_hash = "a\\u0000b"', "sources[0].content_hash"),
        ('updated_at = "2026-08-05T20:09:00-05:00"', 'updated_at = "2026-08-05T20:08:59-05:00"', "updated_at"),
        ('created_at = "2026-08-05T20:09:00-05:00"', 'created_at = "2026-08-05 20:09"', "created_at"),
        ('created_at = "2026-08-05T20:09:00-05:00"', 'created_at = "2026-08-05T20:09:00"', "created_at"),
        ('observed_at = "2026-08-05T20:09:00-05:00"', 'observed_at = "yesterday"', "sources[0].observed_at"),
        ("supersedes = []", 'supersedes = ["01989af2-4305-7b19-88b1-e8ae4ea9a02b"]', "supersedes"),
        ("supersedes = []\n", "", "supersedes"),
        ('tags = ["privacy", "source-control"]\n', "", "tags"),
        ('aliases = ["ignore project memory"]\n', "", "aliases"),
        ('tags = ["privacy", "source-control"]', "tags = [1]", "tags"),
        ('tags = ["privacy", "source-control"]', 'tags = ["privacy", "line\\nbreak"]', "tags[1]"),
        ('title = "Keep project memory out of source control"', 'title = " "', "title"),
        ('title = "Keep project memory out of source control"', 'title = "Keep\\u0085"', "title"),
    ],
)
def test_strict_rule_rejects_and_names_the_field(old: str, new: str, field: str) -> None:
    with pytest.raises(InvalidRecord) as caught:
        parse_record(with_line(old, new))
    assert caught.value.code == "INVALID_RECORD"
    assert caught.value.details["field"] == field
    assert field in caught.value.message


@pytest.mark.parametrize(
    ("old", "new"),
    [
        # Stormbuffer's own valid fixtures use a slug after project:, not a UUID.
        ('scope = "project:01989af2-4305-7b19-88b1-e8ae4ea9a03b"', 'scope = "project:stormbuffer"'),
        ('scope = "project:01989af2-4305-7b19-88b1-e8ae4ea9a03b"', 'scope = "global"'),
        ('id = "01989af2-4305-7b19-88b1-e8ae4ea9a02b"', 'id = "01989af243057b1988b1e8ae4ea9a02b"'),
        ('id = "01989af2-4305-7b19-88b1-e8ae4ea9a02b"', 'id = "{01989AF2-4305-7B19-88B1-E8AE4EA9A02B}"'),
        ('id = "01989af2-4305-7b19-88b1-e8ae4ea9a02b"', 'id = "urn:uuid:01989af2-4305-7b19-88b1-e8ae4ea9a02b"'),
        ("supersedes = []", 'supersedes = ["01989af2-4305-7b19-88b1-e8ae4ea9a02c"]'),
        ('created_at = "2026-08-05T20:09:00-05:00"', 'created_at = "2026-08-05 20:08:59.123456789123-05:00"'),
        ('created_at = "2026-08-05T20:09:00-05:00"', 'created_at = "2016-12-31t23:59:60z"'),
        ("tags = [", "tags = [  "),
        ('actor = "user"', 'actor = "Zoë und 王"'),
    ],
)
def test_what_stormbuffer_accepts_is_accepted(old: str, new: str) -> None:
    assert parse_record(with_line(old, new)).title == "Keep project memory out of source control"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("no fence\n", "opening delimiter"),
        ("+++ \ntitle = 'x'\n+++\n\nbody\n", "opening delimiter"),
        ("+++\ntitle = 'x'\n", "closing TOML delimiter"),
        ("+++\ntitle = 'x'\n+++ \n\nbody\n", "closing TOML delimiter"),
        ("+++\ntitle = 'x'\n+++\nbody\n", "blank line"),
        ("+++\ntitle = 'x'\n+++\n", "blank line"),
        ("\ufeff+++\ntitle = 'x'\n+++\n\nbody\n", "opening delimiter"),
    ],
)
def test_fences_are_exactly_plus_lines_with_a_blank_line_after(text: str, message: str) -> None:
    with pytest.raises(InvalidRecord, match=message):
        split_document(text)


def test_crlf_files_split_like_sbuf_and_keep_their_body() -> None:
    toml_text, body = split_document("+++\r\na = 1\r\n+++\r\n\r\nline one\r\nline two")
    assert toml_text == "a = 1" and body == "line one\r\nline two"
    record = parse_record(SEED_EXAMPLE.replace("\n", "\r\n"))
    assert record.body == "Project memory is private unless the team chooses to share it.\r\n"


@pytest.mark.parametrize(
    ("body", "ok"),
    [
        (" \t\n\u3000\u2028", False),  # only Unicode White_Space
        ("\x1c", True),  # not White_Space (Python's isspace says otherwise)
        ("text\x00more", False),
        ("+++\n\nstill body", True),
    ],
)
def test_body_needs_non_whitespace_text_and_no_nul(body: str, ok: bool) -> None:
    text = SEED_EXAMPLE.split("+++\n\n", 1)[0] + "+++\n\n" + body
    if ok:
        assert parse_record(text).body == body
    else:
        with pytest.raises(InvalidRecord) as caught:
            parse_record(text)
        assert caught.value.details["field"] == "body"


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
    assert {"format_version", "id", "kind", "extra", "title", "scope", "status", "tags", "sources"} <= fields


def test_records_built_in_code_raise_invalid_arguments() -> None:
    record = parse_record(SEED_EXAMPLE)
    with pytest.raises(InvalidArguments) as caught:
        record.evolve(access="robot")
    assert caught.value.code == "INVALID_ARGUMENTS"
    assert caught.value.details["field"] == "access"
    with pytest.raises(InvalidArguments, match="sources"):
        record.evolve(sources=())


def test_new_ids_are_version_7_uuids_in_time_order() -> None:
    first, second = new_uuid(), new_uuid()
    assert uuid.UUID(first).version == 7
    assert first[:8] <= second[:8]


@pytest.mark.parametrize(
    ("written", "rendered"),
    [
        ("2026-08-06T01:09:00Z", "2026-08-06T01:09:00Z"),
        ("2026-08-06T01:09:00+00:00", "2026-08-06T01:09:00Z"),
        ("2026-08-06T01:09:00-00:00", "2026-08-06T01:09:00Z"),
        ("2026-08-05T20:09:00-05:00", "2026-08-05T20:09:00-05:00"),
        ("2026-08-05 20:09:00.120000+05:30", "2026-08-05T20:09:00.12+05:30"),
        ("2026-08-05T20:09:00.1234567891z", "2026-08-05T20:09:00.123456789Z"),
        ("2016-12-31T23:59:60Z", "2016-12-31T23:59:59.999999999Z"),
    ],
)
def test_timestamps_render_as_the_time_crate_does(written: str, rendered: str) -> None:
    assert parse_timestamp(written).render() == rendered


@pytest.mark.parametrize(
    "written",
    ["2026-02-29T00:00:00Z", "2026-08-06T24:00:00Z", "2026-08-06T01:09:00+24:00", "2016-12-30T23:59:60Z",
     "2026-08-06T01:09:00.Z", "2026-08-06T01:09Z", "2026-8-06T01:09:00Z", "2026-08-06T01:09:00+0100"],
)  # fmt: skip
def test_timestamps_the_time_crate_refuses_are_refused(written: str) -> None:
    with pytest.raises(ValueError):
        parse_timestamp(written)


_OFFSETS = st.integers(min_value=-(23 * 60 + 59), max_value=23 * 60 + 59).map(
    lambda minutes: timezone(timedelta(minutes=minutes))
)


@settings(max_examples=300, deadline=None)
@given(st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30), timezones=_OFFSETS))
def test_timestamp_render_parse_is_identity_on_instants(moment: datetime) -> None:
    stamp = Timestamp.from_datetime(moment)
    again = parse_timestamp(stamp.render())
    assert again.instant == stamp.instant
    assert again.to_datetime() == moment


@settings(max_examples=300, deadline=None)
@given(st.uuids())
def test_every_uuid_spelling_parses_to_the_canonical_form(value: uuid.UUID) -> None:
    canonical = str(value)
    for spelling in (canonical, canonical.upper(), value.hex, value.hex.upper(), f"{{{canonical}}}", value.urn):
        assert parse_uuid(spelling) == canonical
    assert parse_uuid(canonical[:-1]) is None
    assert parse_uuid(f"URN:UUID:{canonical}") is None


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=12))
def test_trim_uses_unicode_white_space_only(value: str) -> None:
    trimmed = rust_trim(value)
    assert not trimmed or (trimmed[0] not in WHITE_SPACE and trimmed[-1] not in WHITE_SPACE)
    assert trimmed in value


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=40))
def test_toml_strings_are_written_so_that_toml_reads_them_back(value: str) -> None:
    assert tomllib.loads(f"v = {toml_string(value)}\n")["v"] == value


@pytest.mark.parametrize(
    ("value", "written"),
    [
        ("plain", '"plain"'),
        ("C:\\data", "'C:\\data'"),
        ('say "hi"', "'say \"hi\"'"),
        ('it\'s "x"', '"""it\'s "x""""'),
        ('it\'s \\ "x"', "'''it's \\ \"x\"'''"),
        ("tab\there", '"tab\\there"'),
        ("a\u0007b", '"a\\u0007b"'),
        ("Zoë 東京", '"Zoë 東京"'),
    ],
)
def test_toml_strings_take_the_form_the_toml_crate_picks(value: str, written: str) -> None:
    assert toml_string(value) == written


_BASE = parse_record(SEED_EXAMPLE)


@settings(max_examples=200, deadline=None)
@given(body=st.text(alphabet=st.characters(codec="utf-8"), max_size=300).filter(rust_trim))
def test_body_is_preserved_exactly_through_render_and_parse(body: str) -> None:
    if "\x00" in body:
        return
    record = validate_record(replace(_BASE, body=body))
    text = render_record(record)
    again = parse_record(text)
    assert again.body == body
    assert render_record(again) == text


_TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=40).filter(
    lambda value: text_problem(value) is None
)


@settings(max_examples=150, deadline=None)
@given(title=_TEXT, tags=st.lists(_TEXT, max_size=4), actor=_TEXT)
def test_frontmatter_values_survive_render_and_parse(title: str, tags: list[str], actor: str) -> None:
    source = replace(_BASE.sources[0], actor=actor)
    record = _BASE.evolve(title=title, tags=tuple(tags), sources=(source,))
    text = render_record(record)
    again = parse_record(text)
    assert again == record
    assert render_record(again) == text
