"""Stormbuffer's value rules, each written once: UUIDs, RFC 3339 timestamps, text and scopes.

They follow what ``stormbuffer-core`` accepts through its dependencies, not a stricter or looser
reading of the specs:

* ids parse like the ``uuid`` crate's ``Uuid::parse_str``: hyphenated, plain 32 hex digits,
  ``{braced}`` or ``urn:uuid:``, any case; the nil UUID is refused. Files and renders use the
  canonical lower-case hyphenated form. A project id in ``store.toml`` must already be canonical.
* timestamps parse and render like the ``time`` crate's ``Rfc3339`` (0.3): any single separator
  between date and time, ``Z``/``z`` or ``±HH:MM`` (hours up to 23), up to nine fraction digits
  kept (more are ignored), a leap second only as the last second of a UTC month. Rendering writes
  ``T``, ``Z`` for a zero offset and the fraction without trailing zeros.
* text fields are non-empty, without surrounding Unicode ``White_Space`` (Rust's ``trim``) and
  without control characters (Unicode ``Cc``).
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass
from datetime import UTC, datetime

# Unicode White_Space: what Rust's str::trim and char::is_whitespace use. Python's str.isspace
# also counts U+001C..U+001F, so it cannot stand in for it.
WHITE_SPACE = frozenset(
    "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)
NIL_UUID = "00000000-0000-0000-0000-000000000000"
GLOBAL_SCOPE = "global"
PROJECT_SCOPE_PREFIX = "project:"

_HEX = frozenset("0123456789abcdefABCDEF")
_HYPHENS = (8, 13, 18, 23)


def is_control(char: str) -> bool:
    """Unicode general category Cc (Rust's ``char::is_control``)."""
    code = ord(char)
    return code < 0x20 or 0x7F <= code <= 0x9F


def rust_trim(value: str) -> str:
    """``value`` without leading and trailing Unicode White_Space."""
    start, end = 0, len(value)
    while start < end and value[start] in WHITE_SPACE:
        start += 1
    while end > start and value[end - 1] in WHITE_SPACE:
        end -= 1
    return value[start:end]


def text_problem(value: object) -> str | None:
    """Why ``value`` is not a valid Stormbuffer text field, or None."""
    if not isinstance(value, str):
        return "must be a string"
    if not value or rust_trim(value) != value:
        return "must be non-empty and have no surrounding whitespace"
    if any(is_control(char) for char in value):
        return "must not contain control characters"
    return None


# --- UUIDs -------------------------------------------------------------------------------------


def parse_uuid(value: object) -> str | None:
    """The canonical (lower-case, hyphenated) form of a UUID in any accepted spelling, or None."""
    if not isinstance(value, str):
        return None
    raw = value.encode("utf-8")
    if len(raw) == 45 and raw.startswith(b"urn:uuid:"):
        raw = raw[9:]
    elif len(raw) == 38 and raw.startswith(b"{") and raw.endswith(b"}"):
        raw = raw[1:-1]
    if len(raw) == 36:
        if any(raw[position] != ord("-") for position in _HYPHENS):
            return None
        digits = raw.replace(b"-", b"")
        if len(digits) != 32:
            return None
    elif len(raw) == 32:
        digits = raw
    else:
        return None
    text = digits.decode("ascii", errors="replace")
    if not all(char in _HEX for char in text):
        return None
    text = text.lower()
    return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"


def record_id_problem(value: object) -> str | None:
    """Why ``value`` is not a record id (``RecordId::parse``), or None."""
    if not isinstance(value, str) or not value or rust_trim(value) != value:
        return "must be a non-empty UUID without surrounding whitespace"
    canonical = parse_uuid(value)
    if canonical is None:
        return "must be a valid UUID"
    if canonical == NIL_UUID:
        return "must not be the nil UUID"
    return None


def is_uuid(value: object) -> bool:
    """A record id Stormbuffer accepts (any UUID spelling, not nil)."""
    return record_id_problem(value) is None


def is_canonical_project_id(value: object) -> bool:
    """A ``store.toml`` project id: a non-nil UUID already in canonical form."""
    return isinstance(value, str) and parse_uuid(value) == value and value != NIL_UUID


def new_uuid(now: float | None = None) -> str:
    """A fresh UUIDv7 (RFC 9562): time-ordered, so file listings sort by creation."""
    millis = int((time.time() if now is None else now) * 1000) & ((1 << 48) - 1)
    rand_a = int.from_bytes(os.urandom(2), "big") & 0xFFF
    rand_b = int.from_bytes(os.urandom(8), "big") & ((1 << 62) - 1)
    value = millis << 80 | 0x7 << 76 | rand_a << 64 | 0b10 << 62 | rand_b
    text = f"{value:032x}"
    return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"


# --- scopes ------------------------------------------------------------------------------------


def scope_problem(value: object) -> str | None:
    """Why ``value`` is not a record scope (``Scope::parse``), or None."""
    if not isinstance(value, str) or not value or rust_trim(value) != value:
        return "must be a non-empty scope without surrounding whitespace"
    if value == GLOBAL_SCOPE:
        return None
    if not value.startswith(PROJECT_SCOPE_PREFIX):
        return "must be `global` or use the `project:<uuid>` form"
    name = value[len(PROJECT_SCOPE_PREFIX) :]
    if not name or any(char in WHITE_SPACE or is_control(char) or char == ":" for char in name):
        return "project scope names must be non-empty and contain no whitespace or colons"
    return None


def project_scope(project_id: str) -> str:
    return f"{PROJECT_SCOPE_PREFIX}{project_id}"


def scope_project_id(scope: str) -> str | None:
    """The project part of a ``project:<id>`` scope, None for ``global``."""
    return scope[len(PROJECT_SCOPE_PREFIX) :] if scope.startswith(PROJECT_SCOPE_PREFIX) else None


# --- timestamps --------------------------------------------------------------------------------

_DIGITS = re.compile(rb"[0-9]+")


@dataclass(frozen=True, order=False)
class Timestamp:
    """An RFC 3339 moment with nanoseconds and its own offset (minutes east of UTC)."""

    year: int
    month: int
    day: int
    hour: int
    minute: int
    second: int
    nanosecond: int
    offset_minutes: int

    @property
    def instant(self) -> tuple[int, int]:
        """(seconds since the epoch in UTC, nanoseconds): what comparisons use."""
        days = _days_from_civil(self.year, self.month, self.day)
        local = days * 86400 + self.hour * 3600 + self.minute * 60 + self.second
        return local - self.offset_minutes * 60, self.nanosecond

    def render(self) -> str:
        """The text the ``time`` crate's ``Rfc3339`` formatter writes for this moment."""
        text = f"{self.year:04d}-{self.month:02d}-{self.day:02d}T{self.hour:02d}:{self.minute:02d}:{self.second:02d}"
        if self.nanosecond:
            text += "." + f"{self.nanosecond:09d}".rstrip("0")
        if self.offset_minutes == 0:
            return text + "Z"
        sign = "-" if self.offset_minutes < 0 else "+"
        hours, minutes = divmod(abs(self.offset_minutes), 60)
        return f"{text}{sign}{hours:02d}:{minutes:02d}"

    def to_datetime(self) -> datetime:
        """The moment as an aware UTC datetime, to the microsecond (ValueError before year 1)."""
        seconds, nanos = self.instant
        days, second_of_day = divmod(seconds, 86400)
        year, month, day = _civil_from_days(days)
        if not 1 <= year <= 9999:
            raise ValueError(f"{self.render()} is outside the years 1 to 9999")
        hour, rest = divmod(second_of_day, 3600)
        return datetime(year, month, day, hour, rest // 60, rest % 60, nanos // 1000, tzinfo=UTC)

    @classmethod
    def from_datetime(cls, moment: datetime) -> Timestamp:
        """A timestamp in UTC for an aware (or local naive) datetime, to the microsecond."""
        moment = moment.astimezone(UTC)
        return cls(
            moment.year, moment.month, moment.day, moment.hour, moment.minute, moment.second,
            moment.microsecond * 1000, 0,
        )  # fmt: skip

    @classmethod
    def now(cls) -> Timestamp:
        return cls.from_datetime(datetime.now(UTC))


def _take(raw: bytes, position: int, count: int) -> int | None:
    piece = raw[position : position + count]
    if len(piece) != count or not piece.isdigit():
        return None
    return int(piece)


def _days_from_civil(year: int, month: int, day: int) -> int:
    """Days since 1970-01-01 in the proleptic Gregorian calendar (any year, 0 included)."""
    year -= month <= 2
    era = year // 400
    year_of_era = year - era * 400
    day_of_year = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    day_of_era = year_of_era * 365 + year_of_era // 4 - year_of_era // 100 + day_of_year
    return era * 146097 + day_of_era - 719468


def _is_leap(year: int) -> bool:
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)


def _last_day(year: int, month: int) -> int:
    if month == 2:
        return 29 if _is_leap(year) else 28
    return 30 if month in (4, 6, 9, 11) else 31


def parse_timestamp(value: object) -> Timestamp:
    """Parse like ``OffsetDateTime::parse(value, &Rfc3339)``; ValueError names what is wrong."""
    if not isinstance(value, str):
        raise ValueError("must be an RFC 3339 timestamp string")
    raw = value.encode("utf-8")

    def need(number: int | None, what: str) -> int:
        if number is None:
            raise ValueError(f"invalid {what}")
        return number

    year = need(_take(raw, 0, 4), "year")
    if raw[4:5] != b"-":
        raise ValueError("invalid literal after the year")
    month = need(_take(raw, 5, 2), "month")
    if raw[7:8] != b"-":
        raise ValueError("invalid literal after the month")
    day = need(_take(raw, 8, 2), "day")
    if len(raw) < 11:
        raise ValueError("invalid separator")
    # Any single byte separates date and time (the RFC's note allows a space; rusqlite uses one).
    hour = need(_take(raw, 11, 2), "hour")
    if raw[13:14] != b":":
        raise ValueError("invalid literal after the hour")
    minute = need(_take(raw, 14, 2), "minute")
    if raw[16:17] != b":":
        raise ValueError("invalid literal after the minute")
    second = need(_take(raw, 17, 2), "second")
    position = 19
    nanosecond = 0
    if raw[position : position + 1] == b".":
        digits = _DIGITS.match(raw, position + 1)
        if digits is None:
            raise ValueError("invalid subsecond")
        nanosecond = int(digits.group()[:9].ljust(9, b"0"))
        position = digits.end()
    mark = raw[position : position + 1]
    if mark in (b"Z", b"z"):
        offset = 0
        position += 1
    elif mark in (b"+", b"-"):
        offset_hour = _take(raw, position + 1, 2)
        if offset_hour is None or offset_hour > 23:
            raise ValueError("invalid offset hour")
        if raw[position + 3 : position + 4] != b":":
            raise ValueError("invalid literal in the offset")
        offset_minute = need(_take(raw, position + 4, 2), "offset minute")
        if offset_minute > 59:
            raise ValueError("offset minute out of range")
        offset = offset_hour * 60 + offset_minute
        offset = -offset if mark == b"-" else offset
        position += 6
    else:
        raise ValueError("invalid offset hour")
    if position != len(raw):
        raise ValueError("unexpected trailing characters")
    if not 1 <= month <= 12:
        raise ValueError("month out of range")
    if not 1 <= day <= _last_day(year, month):
        raise ValueError("day out of range")
    if hour > 23 or minute > 59 or second > 60:
        raise ValueError("time out of range")
    stamp = Timestamp(year, month, day, hour, minute, min(second, 59), nanosecond, offset)
    if second == 60:
        # Kept as the last nanosecond before it, and only where a leap second can be: the last
        # second of a month in UTC.
        stamp = Timestamp(year, month, day, hour, minute, 59, 999_999_999, offset)
        utc_seconds, _ = stamp.instant
        utc_days, second_of_day = divmod(utc_seconds, 86400)
        utc_year, utc_month, utc_day = _civil_from_days(utc_days)
        if second_of_day != 86399 or utc_day != _last_day(utc_year, utc_month):
            raise ValueError("a leap second must be the last second of a UTC month")
    return stamp


def _civil_from_days(days: int) -> tuple[int, int, int]:
    """(year, month, day) of ``days`` since 1970-01-01, the inverse of :func:`_days_from_civil`."""
    days += 719468
    era = days // 146097
    day_of_era = days - era * 146097
    year_of_era = (day_of_era - day_of_era // 1460 + day_of_era // 36524 - day_of_era // 146096) // 365
    day_of_year = day_of_era - (365 * year_of_era + year_of_era // 4 - year_of_era // 100)
    month_index = (5 * day_of_year + 2) // 153
    day = day_of_year - (153 * month_index + 2) // 5 + 1
    month = month_index + 3 if month_index < 10 else month_index - 9
    return year_of_era + era * 400 + (month <= 2), month, day


def timestamp_problem(value: object) -> str | None:
    try:
        parse_timestamp(value)
    except ValueError as exc:
        return f"must be an RFC 3339 timestamp: {exc}"
    return None


def canonical_timestamp(value: str) -> str:
    """The text Stormbuffer writes for a timestamp it has parsed (raises ValueError)."""
    return parse_timestamp(value).render()


def now_timestamp() -> str:
    return Timestamp.now().render()
