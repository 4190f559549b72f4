"""TTL rules of seed 001: duration grammar, expires_at, precedence, expiry instant, active-at."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memosite.config import VaultConfig
from memosite.errors import InvalidArguments
from memosite.expiration import (
    compute_expires_at,
    default_ttl_days_for_kind,
    is_active_at,
    is_expired_at,
    is_record_active_at,
    is_record_expired_at,
    parse_as_of,
    parse_duration,
    parse_expires_at,
    resolve_expires_at,
    validate_ttl_input,
)
from memosite.lookup import get_record
from memosite.store import upsert_record

# The seed's regex, verbatim (JavaScript semantics: ``\d`` is ASCII there).
SEED_DURATION = re.compile(r"^([0-9]+(?:\.[0-9]+)?)\s*([dhms]|days?|hours?|mins?|minutes?|secs?|seconds?)?$")
CREATED = "2026-08-01T10:00:00.000Z"
T0 = datetime(2026, 8, 1, 10, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("7d", timedelta(days=7)),
        ("48h", timedelta(hours=48)),
        ("30m", timedelta(minutes=30)),
        ("90s", timedelta(seconds=90)),
        ("1.5 days", timedelta(days=1.5)),
        ("2 hours", timedelta(hours=2)),
        ("1 hour", timedelta(hours=1)),
        ("5 mins", timedelta(minutes=5)),
        ("15 minutes", timedelta(minutes=15)),
        ("10 secs", timedelta(seconds=10)),
        ("1 second", timedelta(seconds=1)),
        ("3", timedelta(days=3)),
        ("0.5", timedelta(hours=12)),
        (" 7d ", timedelta(days=7)),
    ],
)
def test_duration_grammar_of_the_seed(text: str, expected: timedelta) -> None:
    assert parse_duration(text) == expected


def test_bare_number_defaults_to_days() -> None:
    assert parse_duration("14") == timedelta(days=14)
    assert compute_expires_at(CREATED, 2) == T0 + timedelta(days=2)


@pytest.mark.parametrize("text", ["", "d", "7w", "-1d", "1e3", "7 d ago", "7dd", "٣d", "1,5d", "tomorrow"])
def test_non_durations_are_not_parsed(text: str) -> None:
    assert parse_duration(text) is None


@settings(max_examples=400, deadline=None)
@given(
    st.one_of(
        st.text(alphabet="0123456789.dhmsaynoiuecr \t", max_size=12),
        st.builds(
            lambda n, space, unit: f"{n}{space}{unit}",
            st.decimals(min_value=0, max_value=100000, places=3, allow_nan=False).map(str),
            st.sampled_from(["", " ", "  "]),
            st.sampled_from(
                [
                    "",
                    "d",
                    "h",
                    "m",
                    "s",
                    "day",
                    "days",
                    "hour",
                    "hours",
                    "min",
                    "mins",
                    "minute",
                    "minutes",
                    "sec",
                    "secs",
                    "second",
                    "seconds",
                    "weeks",
                    "x",
                ]
            ),
        ),
    )
)
def test_duration_parsing_agrees_with_seed_regex(text: str) -> None:
    """parse_duration accepts exactly what the seed's regex accepts (after trimming)."""
    matched = SEED_DURATION.match(text.strip())
    parsed = parse_duration(text)
    assert (parsed is not None) == (matched is not None)
    if matched:
        unit = (matched.group(2) or "d")[0]
        unit = "m" if (matched.group(2) or "").startswith("min") else unit
        seconds = float(matched.group(1)) * {"d": 86400, "h": 3600, "m": 60, "s": 1}[unit]
        assert parsed is not None and abs(parsed.total_seconds() - seconds) < 1e-3


def test_duration_too_long_is_invalid_not_a_crash() -> None:
    with pytest.raises(InvalidArguments, match="Invalid ttl duration or date"):
        parse_duration("99999999999999d")
    with pytest.raises(InvalidArguments):
        compute_expires_at(CREATED, "9999999d")  # beyond year 9999
    with pytest.raises(InvalidArguments):
        validate_ttl_input(float("inf"))


def test_expires_at_date_only_is_end_of_that_utc_day() -> None:
    assert parse_expires_at("2026-08-01") == datetime(2026, 8, 1, 23, 59, 59, 999000, tzinfo=UTC)


def test_expires_at_rfc3339_offset_is_converted_to_utc() -> None:
    assert parse_expires_at("2026-08-01T02:00:00+02:00") == datetime(2026, 8, 1, 0, 0, tzinfo=UTC)


@pytest.mark.parametrize("value", ["soon", "2026-13-01", "2026-02-30", "08/01/2026", "2026-08-01T25:00:00Z"])
def test_invalid_expires_at_is_not_a_date(value: str) -> None:
    assert parse_expires_at(value) is None


def test_precedence_explicit_expires_at_beats_ttl_and_kind_default() -> None:
    fm = {
        "kind": "scratch",
        "created": CREATED,
        "ttl": "1d",
        "expires_at": "2026-09-01T00:00:00.000Z",
    }
    assert resolve_expires_at(fm, VaultConfig()) == datetime(2026, 9, 1, tzinfo=UTC)


def test_precedence_created_plus_ttl_beats_kind_default() -> None:
    fm = {"kind": "review", "created": CREATED, "ttl": "48h"}
    assert resolve_expires_at(fm, VaultConfig()) == T0 + timedelta(hours=48)


def test_ttl_given_as_a_date_expires_at_that_date() -> None:
    fm = {"kind": "trap", "created": CREATED, "ttl": "2026-08-03"}
    assert resolve_expires_at(fm, VaultConfig()) == datetime(2026, 8, 3, 23, 59, 59, 999000, tzinfo=UTC)


def test_kind_default_ttl_scratch_seven_days_review_fourteen() -> None:
    config = VaultConfig()
    assert default_ttl_days_for_kind("scratch", config) == 7
    assert default_ttl_days_for_kind("review", config) == 14
    assert resolve_expires_at({"kind": "scratch", "created": CREATED}, config) == T0 + timedelta(days=7)
    assert resolve_expires_at({"kind": "review", "created": CREATED}, config) == T0 + timedelta(days=14)


@pytest.mark.parametrize("kind", ["state", "trap", "decision", "spec", "plan", "log", "prompt", "session"])
def test_other_kinds_without_ttl_are_evergreen(kind: str) -> None:
    fm = {"kind": kind, "created": "2000-01-01T00:00:00.000Z"}
    assert resolve_expires_at(fm, VaultConfig()) is None
    assert not is_record_expired_at(fm, datetime(2999, 1, 1, tzinfo=UTC), VaultConfig())


def test_kind_default_ttl_comes_from_config_json(vault_dir) -> None:  # type: ignore[no-untyped-def]
    from memosite.vault import Vault

    vault_dir.mkdir(parents=True)
    (vault_dir / "config.json").write_text(json.dumps({"ttl": {"scratchDays": 2, "reviewDays": 3}}), encoding="utf-8")
    config = Vault.open(vault_dir).config
    assert resolve_expires_at({"kind": "scratch", "created": CREATED}, config) == T0 + timedelta(days=2)
    assert resolve_expires_at({"kind": "review", "created": CREATED}, config) == T0 + timedelta(days=3)


def test_new_vault_writes_default_ttls_to_config_json(vault) -> None:  # type: ignore[no-untyped-def]
    data = json.loads((vault.root / "config.json").read_text(encoding="utf-8"))
    assert data["ttl"] == {"scratchDays": 7, "reviewDays": 14}


def test_expired_at_exact_expiry_instant() -> None:
    expires = datetime(2026, 8, 1, 23, 59, 59, 999000, tzinfo=UTC)
    assert is_expired_at(expires, expires)
    assert not is_expired_at(expires, expires - timedelta(milliseconds=1))
    assert is_expired_at(expires, expires + timedelta(milliseconds=1))
    assert not is_expired_at(None, datetime(2999, 1, 1, tzinfo=UTC))


def test_date_only_expires_at_still_active_at_last_millisecond_of_day() -> None:
    fm = {"kind": "trap", "created": CREATED, "expires_at": "2026-08-01"}
    config = VaultConfig()
    assert not is_record_expired_at(fm, datetime(2026, 8, 1, 23, 59, 59, 998000, tzinfo=UTC), config)
    assert is_record_expired_at(fm, datetime(2026, 8, 1, 23, 59, 59, 999000, tzinfo=UTC), config)


def test_active_at_requires_created_on_or_before_and_expiry_after() -> None:
    expires = T0 + timedelta(days=1)
    assert is_active_at(T0, expires, T0)  # created == as_of counts
    assert not is_active_at(T0, expires, T0 - timedelta(milliseconds=1))
    assert not is_active_at(T0, expires, expires)  # as_of == expires_at is already gone
    assert is_active_at(T0, None, datetime(2999, 1, 1, tzinfo=UTC))


def test_future_as_of_suppresses_records_expired_by_then() -> None:
    fm = {"kind": "trap", "created": CREATED, "ttl": "7d"}
    config = VaultConfig()
    assert is_record_active_at(fm, T0 + timedelta(days=6), config)
    assert not is_record_active_at(fm, T0 + timedelta(days=30), config)


def test_as_of_date_only_means_end_of_that_day() -> None:
    assert parse_as_of("2026-08-01") == datetime(2026, 8, 1, 23, 59, 59, 999000, tzinfo=UTC)
    with pytest.raises(InvalidArguments, match="as-of"):
        parse_as_of("last tuesday")


def test_upsert_ttl_writes_expires_at_from_created(vault) -> None:  # type: ignore[no-untyped-def]
    result = upsert_record(
        vault,
        "demo",
        kind="trap",
        body="Temporary rule while the CDN is migrated.\n",
        frontmatter={"title": "CDN freeze", "ttl": "7d"},
        now=T0,
    )
    assert result.expires_at == "2026-08-08T10:00:00.000Z"
    stored = get_record(vault, "demo", record_id=result.id, now=T0 + timedelta(days=7))
    assert stored.expired  # exactly at created + ttl


@pytest.mark.parametrize("bad", [{"ttl": "7w"}, {"ttl": "soon"}, {"expires_at": "next week"}, {"ttl": -3}])
def test_upsert_rejects_invalid_ttl_with_seed_message(vault, bad) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(InvalidArguments, match=r'^Invalid ttl duration or date: "'):
        upsert_record(vault, "demo", kind="trap", body="x\n", frontmatter={"title": "t", **bad})
    assert not list(vault.iter_record_files("demo"))


def test_get_returns_expired_record_annotated(vault) -> None:  # type: ignore[no-untyped-def]
    upsert_record(vault, "demo", kind="scratch", body="old idea\n", slug="idea", now=T0)
    stored = get_record(vault, "demo", kind="scratch", slug="idea", now=T0 + timedelta(days=8))
    assert stored.expired and stored.body == "old idea\n"
