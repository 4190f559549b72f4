"""The record: frontmatter validation and a faithful parse/serialize (seed 000, "Frontmatter validation")."""

from __future__ import annotations

import string
from datetime import UTC, date, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memosite.errors import InvalidArguments, InvalidRecord
from memosite.schema import (
    KIND_DIRS,
    KINDS,
    LAYERS,
    SEVERITIES,
    SOURCES,
    STATUSES,
    Record,
    dump_yaml,
    load_yaml,
    parse_record,
    serialize_record,
    validate_frontmatter,
    validate_slug,
)

BASE = {"id": "r1", "kind": "trap", "project": "p", "created": "2026-01-02", "updated": "2026-01-02"}


def _record(extra: str = "", body: str = "Body.\n") -> str:
    return (
        "---\nid: r1\nkind: trap\nproject: p\ncreated: 2026-01-02T03:04:05Z\n"
        f"updated: 2026-01-02T03:04:05Z\n{extra}---\n{body}"
    )


def test_enums_have_the_seed_members() -> None:
    assert len(KINDS) == 10 and len(STATUSES) == 6 and len(SOURCES) == 3
    assert SEVERITIES == ("low", "medium", "high", "critical")
    assert len(LAYERS) == 7


def test_kind_to_directory_mapping_puts_state_in_plans() -> None:
    assert KIND_DIRS["state"] == "plans"
    assert KIND_DIRS["trap"] == "traps" and KIND_DIRS["scratch"] == "scratch"
    assert KIND_DIRS["review"] == "reviews" and KIND_DIRS["session"] == "sessions"


@pytest.mark.parametrize("missing", ["id", "kind", "project", "created", "updated"])
def test_required_fields_are_enforced(missing: str) -> None:
    data = dict(BASE)
    del data[missing]
    with pytest.raises(InvalidArguments, match=missing):
        validate_frontmatter(data)


def test_defaults_status_active_and_source_agent() -> None:
    fm = validate_frontmatter(BASE)
    assert fm["status"] == "active" and fm["source"] == "agent"


@pytest.mark.parametrize(
    ("field", "raw", "expected"),
    [
        ("kind", " TRAP ", "trap"),
        ("status", "Shipped", "shipped"),
        ("source", " Human", "human"),
        ("severity", "CRITICAL ", "critical"),
        ("layer", "Web", "web"),
    ],
)
def test_enum_values_are_trimmed_and_lowercased(field: str, raw: str, expected: str) -> None:
    assert validate_frontmatter({**BASE, field: raw})[field] == expected


def test_invalid_enum_names_field_and_allowed_values() -> None:
    with pytest.raises(InvalidArguments) as info:
        validate_frontmatter({**BASE, "severity": "urgent"})
    assert "severity" in info.value.message
    assert "low, medium, high, critical" in info.value.message


def test_unknown_keys_pass_through() -> None:
    fm = validate_frontmatter({**BASE, "owner": {"team": "payments"}, "x-custom": [1, 2]})
    assert fm["owner"] == {"team": "payments"} and fm["x-custom"] == [1, 2]


@pytest.mark.parametrize(
    ("field", "raw", "expected"),
    [
        ("occurrences", "3", 3),
        ("occurrences", 2.0, 2),
        ("hits", "0", 0),
        ("helpfulCount", 5, 5),
        ("staleCount", "7", 7),
        ("turn", "4", 4),
    ],
)
def test_numeric_fields_are_coerced(field: str, raw: object, expected: int) -> None:
    assert validate_frontmatter({**BASE, field: raw})[field] == expected


@pytest.mark.parametrize(
    ("field", "raw"),
    [
        ("occurrences", 0),
        ("hits", -1),
        ("turn", 0),
        ("helpfulCount", "many"),
        ("staleCount", True),
        ("occurrences", 1.5),
    ],
)
def test_numeric_bounds_are_enforced(field: str, raw: object) -> None:
    with pytest.raises(InvalidArguments, match=field):
        validate_frontmatter({**BASE, field: raw})


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("2026-11-30", "2026-11-30T00:00:00.000Z"),
        (date(2026, 11, 30), "2026-11-30T00:00:00.000Z"),
        ("2026-11-30T00:36:39.123456Z", "2026-11-30T00:36:39.123Z"),
        ("2026-11-30T01:36:39+01:00", "2026-11-30T00:36:39.000Z"),
        (datetime(2026, 11, 30, 0, 36, 39, 123000, tzinfo=UTC), "2026-11-30T00:36:39.123Z"),
    ],
)
def test_dates_are_normalised_to_iso_utc(raw: object, expected: str) -> None:
    assert validate_frontmatter({**BASE, "lastSeen": raw})["lastSeen"] == expected


def test_date_only_expires_at_means_end_of_that_utc_day() -> None:
    assert validate_frontmatter({**BASE, "expires_at": "2026-12-01"})["expires_at"] == "2026-12-01T23:59:59.999Z"


def test_invalid_date_is_rejected() -> None:
    with pytest.raises(InvalidArguments, match="lastHit"):
        validate_frontmatter({**BASE, "lastHit": "yesterday"})


def test_links_need_a_target_and_a_known_type() -> None:
    ok = validate_frontmatter({**BASE, "links": [{"target": "t2", "type": "Fixes"}]})
    assert ok["links"] == [{"target": "t2", "type": "fixes"}]
    with pytest.raises(InvalidArguments, match="target"):
        validate_frontmatter({**BASE, "links": [{"target": " ", "type": "fixes"}]})
    with pytest.raises(InvalidArguments, match="fixes, contradicts, causes"):
        validate_frontmatter({**BASE, "links": [{"target": "t2", "type": "relates"}]})


def test_deliverables_types_are_pr_commit_or_spec() -> None:
    ok = validate_frontmatter({**BASE, "deliverables": [{"type": "PR", "url": "https://x/1"}]})
    assert ok["deliverables"][0]["type"] == "pr"
    with pytest.raises(InvalidArguments, match="pr, commit, spec"):
        validate_frontmatter({**BASE, "deliverables": [{"type": "ticket"}]})


def test_parse_rejects_files_without_frontmatter() -> None:
    with pytest.raises(InvalidRecord):
        parse_record("just text\n")
    with pytest.raises(InvalidRecord):
        parse_record("---\nid: a\n")
    with pytest.raises(InvalidRecord):
        parse_record("---\n: : :\n---\n")


def test_yaml_11_lookalikes_are_read_as_strings() -> None:
    record = parse_record(_record("start: 10:00\nflag: yes\nversion: 1.10\n"))
    assert record.frontmatter["start"] == "10:00"
    assert record.frontmatter["flag"] == "yes"
    assert record.frontmatter["version"] == 1.1


def test_rewrite_keeps_untouched_values_text_exactly() -> None:
    extra = "start: 10:00\nflag: yes\nversion: 1.10\n# a comment\nwhen: 2026-05-01\nnested:\n  a: [1, 2]\n"
    text = _record(extra)
    record = parse_record(text)
    record.frontmatter["status"] = "archived"
    out = serialize_record(record)
    for line in extra.splitlines():
        assert line in out.splitlines()
    assert parse_record(out).frontmatter["status"] == "archived"


def test_serialize_drops_keys_set_to_none() -> None:
    record = parse_record(_record("severity: high\n"))
    record.frontmatter["severity"] = None
    assert "severity" not in serialize_record(record)


_text = st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00\r"), max_size=200)


@settings(max_examples=150, deadline=None)
@given(body=_text)
def test_body_is_kept_byte_for_byte(body: str) -> None:
    record = parse_record(_record(body=body))
    assert record.body == body
    assert parse_record(serialize_record(record)).body == body


_scalar_text = st.sampled_from(
    [
        "10:00",
        "yes",
        "no",
        "on",
        "off",
        "1.10",
        "2026-01-01",
        "2026-01-01T10:00:00Z",
        "0x1F",
        "0o17",
        "1_000",
        "~",
        "null",
        "true",
        "@at",
        "a: b",
        "#hash",
        "- item",
        "'quoted'",
        '"dq"',
        "1e3",
        ".inf",
    ]
) | st.text(alphabet=string.ascii_letters + string.digits + " :-._/#'\"", max_size=20)
_value = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**6), 10**6) | _scalar_text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(["a", "b", "c"]), inner, max_size=3),
    max_leaves=6,
)


@settings(max_examples=200, deadline=None)
@given(
    extras=st.dictionaries(st.sampled_from(["alpha", "beta", "gamma", "delta"]), _value, max_size=4),
    touched=st.sampled_from(["status", "hits", "title"]),
)
def test_rewrite_never_changes_a_value_it_did_not_touch(extras: dict[str, object], touched: str) -> None:
    from memosite.schema import dump_yaml

    text = _record("".join(dump_yaml({k: v}) for k, v in extras.items()))
    before = parse_record(text)
    before.frontmatter[touched] = {"status": "paused", "hits": 3, "title": "changed"}[touched]
    after = parse_record(serialize_record(before))
    for key in extras:
        assert after.frontmatter[key] == parse_record(text).frontmatter[key]
    assert after.frontmatter[touched] == before.frontmatter[touched]


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(["10:00", "yes", "1.10", "2026-01-01", "0o17", "1:30:00", "No", "~"]))
def test_hand_written_yaml11_traps_survive_a_rewrite_verbatim(raw: str) -> None:
    text = _record(f"value: {raw}\n")
    record = parse_record(text)
    record.frontmatter["hits"] = 1
    assert f"value: {raw}\n" in serialize_record(record)


@pytest.mark.parametrize("slug", ["../etc/passwd", "/abs", "a/b", "a\x00b", "..", ".hidden", "", "x.md", "a\\b"])
def test_unsafe_slugs_are_rejected(slug: str) -> None:
    with pytest.raises(InvalidArguments):
        validate_slug(slug)


def test_record_exposes_id_kind_status() -> None:
    record = Record(frontmatter=validate_frontmatter(BASE), body="")
    assert (record.id, record.kind, record.status) == ("r1", "trap", "active")


@settings(max_examples=300, deadline=None)
@given(value=_value)
def test_a_written_value_reads_back_unchanged(value: object) -> None:
    from memosite.schema import dump_yaml

    record = parse_record(_record(dump_yaml({"payload": value})))
    assert record.frontmatter["payload"] == value


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ("ratio: .nan\n", "finite"),
        ("big: .inf\n", "finite"),
        ("x: &a [*a]\n", "refers to itself"),
        (
            "a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n"
            + "".join(f"a{n}: &a{n} [{', '.join([f'*a{n - 1}'] * 9)}]\n" for n in range(1, 9)),
            "too large",
        ),
    ],
)
def test_frontmatter_must_be_plain_finite_acyclic_data(extra: str, message: str) -> None:
    with pytest.raises(InvalidRecord, match=message):
        parse_record(_record(extra))


_EVERY_SCRIPT = st.text(
    alphabet=st.sampled_from(list("ab: -'\"#\\Uéß ДЖ Ωλ 東京 数据 مرحبا 🚀😀🍜 𠮷 ✅\u200d")), min_size=1, max_size=40
)


@settings(max_examples=300, deadline=None)
@given(title=_EVERY_SCRIPT)
def test_frontmatter_text_is_written_as_typed_in_every_script(title: str) -> None:
    """An emoji or a character beyond the BMP stays itself in the file (a person edits it there),
    and every title reads back as it was written."""
    dumped = dump_yaml({"title": title})
    assert load_yaml(dumped)["title"] == title
    for char in set(title):
        if ord(char) > 0xFFFF:
            assert char in dumped


@pytest.mark.parametrize("title", ["release 0\x85🚀", "a\u2028b 😀", "x\u2029𠮷", "é\x85"])
def test_unicode_line_breaks_beside_emoji_read_back_unchanged(title: str) -> None:
    """NEL and the Unicode line/paragraph separators are line breaks to YAML: next to an emoji
    (which sends the text to the pure-Python emitter) they must not be folded into a space."""
    assert load_yaml(dump_yaml({"title": title}))["title"] == title
