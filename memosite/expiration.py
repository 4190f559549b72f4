"""Record TTL: duration parsing, ``expires_at`` resolution, expired and active-at tests (UTC).

Precedence: an explicit ``expires_at`` beats ``created + ttl``, which beats the kind's default
TTL (``scratch`` 7 days and ``review`` 14 days unless ``config.json`` says otherwise). A record
with none of them never expires.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from memosite.config import VaultConfig
from memosite.errors import InvalidArguments
from memosite.kinds import KIND_FACTS
from memosite.schema import format_iso, parse_datetime

# The seed's grammar. Digits are ASCII only (Python's ``\d`` would also take Arabic-Indic
# digits) and the unit is case-insensitive, so ``7D`` reads like ``7d``.
DURATION_RE = re.compile(r"([0-9]+(?:\.[0-9]+)?)\s*([dhms]|days?|hours?|mins?|minutes?|secs?|seconds?)?", re.IGNORECASE)
_UNIT_SECONDS = {"d": 86400.0, "h": 3600.0, "m": 60.0, "s": 1.0}
_DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}(?:[Tt ].+)?$")


def parse_duration(text: str) -> timedelta | None:
    """``7d``, ``48h``, ``30m``, ``90s``, ``1.5 days``, ``3`` (days) → timedelta; None when ``text``
    is not a duration. A duration too long to represent raises INVALID_ARGUMENTS."""
    match = DURATION_RE.fullmatch(text.strip())
    if match is None:
        return None
    amount = float(match.group(1))
    unit = (match.group(2) or "d").lower()
    if unit.startswith("min"):
        unit = "m"
    return _span(amount * _UNIT_SECONDS[unit[0]], text)


def _span(seconds: float, original: Any) -> timedelta:
    try:
        return timedelta(seconds=seconds)
    except OverflowError as exc:
        raise InvalidArguments(
            f'Invalid ttl duration or date: "{original}" (too long)',
            details={"value": str(original)},
        ) from exc


def parse_expires_at(value: Any) -> datetime | None:
    """RFC 3339 or ``YYYY-MM-DD`` (the last millisecond of that UTC day); None when not a date."""
    if isinstance(value, str) and not _DATE_RE.match(value.strip()):
        return None
    try:
        return parse_datetime(value, end_of_day=True)
    except ValueError:
        return None


def _invalid(value: Any) -> InvalidArguments:
    return InvalidArguments(f'Invalid ttl duration or date: "{value}"', details={"value": str(value)})


def validate_ttl_input(value: Any) -> None:
    """Raise INVALID_ARGUMENTS unless ``value`` is a duration or a date."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if math.isfinite(value) and value >= 0:
            _span(float(value) * 86400.0, value)
            return
        raise _invalid(value)
    if isinstance(value, str) and (parse_duration(value) is not None or parse_expires_at(value)):
        return
    if not isinstance(value, str) and parse_expires_at(value) is not None:
        return
    raise _invalid(value)


def compute_expires_at(created: Any, ttl: Any) -> datetime:
    """``created + ttl`` for a duration (a bare number counts days); the date itself when ``ttl``
    is a date. Raises INVALID_ARGUMENTS for anything else, or when the sum leaves the calendar."""
    duration: timedelta | None = None
    if isinstance(ttl, (int, float)) and not isinstance(ttl, bool):
        if not math.isfinite(ttl) or ttl < 0:
            raise _invalid(ttl)
        duration = _span(float(ttl) * 86400.0, ttl)
    elif isinstance(ttl, str):
        duration = parse_duration(ttl)
    if duration is not None:
        try:
            return parse_datetime(created) + duration
        except OverflowError as exc:
            raise _invalid(ttl) from exc
    moment = parse_expires_at(ttl)
    if moment is None:
        raise _invalid(ttl)
    return moment


def default_ttl_days_for_kind(kind: str, config: VaultConfig) -> float | None:
    """The kind's default time to live in days (``config.json`` ``ttl.<setting>``), or None."""
    facts = KIND_FACTS.get(kind)
    if facts is None or facts.default_ttl is None:
        return None
    return config.ttl_days(facts.default_ttl)


def resolve_expires_at(frontmatter: Mapping[str, Any], config: VaultConfig) -> datetime | None:
    """The instant a record expires, or None when it is evergreen. Bad values count as absent."""
    explicit = frontmatter.get("expires_at")
    if explicit:
        moment = parse_expires_at(explicit)
        if moment is not None:
            return moment
    created = frontmatter.get("created")
    ttl = frontmatter.get("ttl")
    if ttl not in (None, "") and created:
        try:
            return compute_expires_at(created, ttl)
        except (InvalidArguments, ValueError, OverflowError):
            pass
    days = default_ttl_days_for_kind(str(frontmatter.get("kind", "")), config)
    if days is not None and created:
        try:
            return parse_datetime(created) + timedelta(days=days)
        except (ValueError, OverflowError):
            return None
    return None


def is_expired_at(expires_at: datetime | None, now: datetime) -> bool:
    """Expired from the exact expiry instant on: ``now >= expires_at``."""
    return expires_at is not None and now >= expires_at


def is_expired_iso(expires_at: str | None, now_iso: str) -> bool:
    """:func:`is_expired_at` on the index's ISO strings (``format_iso``: fixed width, so they
    compare as the instants do)."""
    return expires_at is not None and expires_at <= now_iso


# The same rules over the index's columns; each takes the ISO instant as its ``?`` parameter(s).
def not_expired_sql(column: str = "expires_at") -> str:
    """Not expired at ``?``: no expiry, or the expiry is still ahead (one parameter: now)."""
    return f"({column} IS NULL OR {column} > ?)"


def expired_sql(column: str = "expires_at") -> str:
    """Expired at ``?`` (one parameter: now)."""
    return f"({column} IS NOT NULL AND {column} <= ?)"


def active_at_sql(created: str = "created", expires_at: str = "expires_at") -> str:
    """:func:`is_active_at` at ``?`` (two parameters, both the as-of instant)."""
    return f"(({created} IS NULL OR {created} <= ?) AND ({expires_at} IS NULL OR ? < {expires_at}))"


def is_record_expired_at(frontmatter: Mapping[str, Any], now: datetime, config: VaultConfig) -> bool:
    return is_expired_at(resolve_expires_at(frontmatter, config), now)


def is_active_at(created: datetime | None, expires_at: datetime | None, as_of: datetime) -> bool:
    """Active on ``as_of``: ``created <= as_of`` and not yet expired (``as_of < expires_at``)."""
    if created is not None and created > as_of:
        return False
    return expires_at is None or as_of < expires_at


def is_record_active_at(frontmatter: Mapping[str, Any], as_of: datetime, config: VaultConfig) -> bool:
    """The active-at test on a record's frontmatter (a bad ``created`` counts as absent)."""
    try:
        created = parse_datetime(frontmatter["created"]) if frontmatter.get("created") else None
    except ValueError:
        created = None
    return is_active_at(created, resolve_expires_at(frontmatter, config), as_of)


def parse_as_of(value: str | datetime) -> datetime:
    """An ``--as-of`` moment: RFC 3339, or ``YYYY-MM-DD`` meaning the end of that UTC day (so a
    record created during that day counts, and one expiring during it does not)."""
    if isinstance(value, datetime):
        return parse_datetime(value)
    moment = parse_expires_at(value)
    if moment is None:
        raise InvalidArguments(f'invalid --as-of date: "{value}" (use YYYY-MM-DD or RFC 3339)')
    return moment


def iso_or_none(moment: datetime | None) -> str | None:
    return format_iso(moment) if moment is not None else None
