"""The Stormbuffer record: four kinds, a strict frontmatter schema, sources, timestamps as written.

Validation is strict on purpose: an unknown field is an error rather than something silently
dropped, ``format_version`` must be 1, ids are non-nil UUIDs, and ``updated_at`` may not precede
``created_at``. Every problem names the field it is about (``sources[1].kind``), so a person can
find it in the file.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

from memosite.errors import InvalidArguments, MemositeError

FORMAT_VERSION = 1
KINDS = ("fact", "decision", "procedure", "checkpoint")
STATUSES = ("candidate", "active", "superseded", "archived")
ACCESS_LEVELS = ("human", "agent")
SOURCE_KINDS = ("conversation", "document", "issue", "url")
GLOBAL_SCOPE = "global"
PROJECT_SCOPE_PREFIX = "project:"

# Canonical key order (the seed's example); rendering follows it.
RECORD_FIELDS = (
    "format_version", "id", "title", "kind", "scope", "status", "access",
    "created_at", "updated_at", "tags", "aliases", "supersedes", "sources",
)  # fmt: skip
REQUIRED_FIELDS = RECORD_FIELDS[:9]
SOURCE_FIELDS = ("kind", "reference", "actor", "observed_at", "revision", "content_hash")

_UUID_RE = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
_NIL_UUID = "00000000-0000-0000-0000-000000000000"
_RFC3339_RE = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(?:([Zz])|([+-])(\d{2}):(\d{2}))$"
)


# --- small value rules -------------------------------------------------------------------------


def is_uuid(value: Any) -> bool:
    """A hyphenated UUID string that is not the nil UUID."""
    return isinstance(value, str) and bool(_UUID_RE.match(value)) and value != _NIL_UUID


def new_uuid(now: datetime | None = None) -> str:
    """A fresh UUIDv7 (RFC 9562): time-ordered, so file listings sort by creation."""
    millis = int((now.timestamp() if now else time.time()) * 1000) & ((1 << 48) - 1)
    rand_a = int.from_bytes(os.urandom(2), "big") & 0xFFF
    rand_b = int.from_bytes(os.urandom(8), "big") & ((1 << 62) - 1)
    value = millis << 80 | 0x7 << 76 | rand_a << 64 | 0b10 << 62 | rand_b
    text = f"{value:032x}"
    return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"


def parse_timestamp(value: str) -> datetime:
    """Parse an RFC 3339 timestamp (offset required) into an aware datetime; ValueError if not."""
    match = _RFC3339_RE.match(value) if isinstance(value, str) else None
    if match is None:
        raise ValueError(f"not an RFC 3339 timestamp: {value!r}")
    year, month, day, hour, minute, second, fraction, zulu, sign, off_h, off_m = match.groups()
    if zulu:
        zone: timezone = UTC
    else:
        if int(off_h) > 23 or int(off_m) > 59:
            raise ValueError(f"bad offset in {value!r}")
        delta = timedelta(hours=int(off_h), minutes=int(off_m))
        zone = timezone(-delta if sign == "-" else delta)
    micros = int((fraction or "0")[:6].ljust(6, "0"))
    return datetime(int(year), int(month), int(day), int(hour), int(minute), int(second), micros, tzinfo=zone)


def format_timestamp(moment: datetime) -> str:
    """RFC 3339 with the moment's own offset, to the second (local time when naive)."""
    if moment.tzinfo is None:
        moment = moment.astimezone()
    text = moment.isoformat(timespec="seconds")
    return text[:-6] + "Z" if text.endswith("+00:00") else text


def project_scope(project_id: str) -> str:
    return f"{PROJECT_SCOPE_PREFIX}{project_id}"


def scope_project_id(scope: str) -> str | None:
    """The project id of a ``project:<id>`` scope, None for ``global``."""
    return scope[len(PROJECT_SCOPE_PREFIX) :] if scope.startswith(PROJECT_SCOPE_PREFIX) else None


# --- the record ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Source:
    """Where a memory came from. Freshness fields are kept for audits, never acted on."""

    kind: str
    reference: str
    actor: str | None = None
    observed_at: str | None = None
    revision: str | None = None
    content_hash: str | None = None

    def to_json(self) -> dict[str, str]:
        return {name: value for name in SOURCE_FIELDS if (value := getattr(self, name)) is not None}


@dataclass(frozen=True)
class StormRecord:
    """One validated record. Timestamps are the strings as written (offsets kept)."""

    id: str
    title: str
    kind: str
    scope: str
    status: str
    access: str
    created_at: str
    updated_at: str
    body: str = ""
    tags: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()
    supersedes: tuple[str, ...] = ()
    sources: tuple[Source, ...] = ()
    format_version: int = FORMAT_VERSION

    @property
    def key(self) -> str:
        """The id in the form used for file names and lookups."""
        return self.id.lower()

    @property
    def created(self) -> datetime:
        return parse_timestamp(self.created_at)

    @property
    def updated(self) -> datetime:
        return parse_timestamp(self.updated_at)

    def frontmatter(self) -> dict[str, Any]:
        """The frontmatter mapping in canonical key order (what the codec renders)."""
        data: dict[str, Any] = {name: getattr(self, name) for name in RECORD_FIELDS[:9]}
        data["tags"] = list(self.tags)
        data["aliases"] = list(self.aliases)
        data["supersedes"] = list(self.supersedes)
        data["sources"] = [source.to_json() for source in self.sources]
        return data

    def to_json(self, *, body: bool = True) -> dict[str, Any]:
        data = self.frontmatter()
        if body:
            data["body"] = self.body
        return data

    def evolve(self, **changes: Any) -> StormRecord:
        """A copy with ``changes`` applied and validated again."""
        return validate_record(replace(self, **changes))


@dataclass(frozen=True)
class Problem:
    """One broken rule, named by its field."""

    field: str
    message: str

    def describe(self) -> str:
        return f"{self.field}: {self.message}"

    def to_json(self) -> dict[str, str]:
        return {"field": self.field, "message": self.message}


# --- validation ----------------------------------------------------------------------------------


@dataclass
class _Checker:
    problems: list[Problem] = field(default_factory=list)

    def fail(self, name: str, message: str) -> None:
        self.problems.append(Problem(name, message))

    def choice(self, name: str, value: Any, allowed: tuple[str, ...]) -> None:
        if value not in allowed:
            self.fail(name, f"{value!r} is not one of {', '.join(allowed)}")

    def text(self, name: str, value: Any) -> None:
        if not isinstance(value, str) or not value.strip():
            self.fail(name, "must be a non-empty string")

    def timestamp(self, name: str, value: Any) -> datetime | None:
        if not isinstance(value, str):
            self.fail(name, "must be an RFC 3339 timestamp string with an offset")
            return None
        try:
            return parse_timestamp(value)
        except ValueError:
            self.fail(name, f"{value!r} is not an RFC 3339 timestamp with an offset")
            return None

    def string_list(self, name: str, value: Any) -> None:
        if not isinstance(value, (list, tuple)):
            self.fail(name, "must be a list of strings")
            return
        for position, item in enumerate(value):
            if not isinstance(item, str) or not item.strip():
                self.fail(f"{name}[{position}]", "must be a non-empty string")


def check_frontmatter(data: Mapping[str, Any]) -> list[Problem]:
    """Every rule the mapping breaks (empty when it is a valid record frontmatter)."""
    check = _Checker()
    for name in data:
        if name not in RECORD_FIELDS:
            check.fail(str(name), "unknown field (allowed: " + ", ".join(RECORD_FIELDS) + ")")
    for name in REQUIRED_FIELDS:
        if name not in data:
            check.fail(name, "required field is missing")
    version = data.get("format_version", FORMAT_VERSION)
    if type(version) is not int or version != FORMAT_VERSION:
        check.fail("format_version", f"must be {FORMAT_VERSION}, got {version!r}")
    if "id" in data and not is_uuid(data["id"]):
        check.fail("id", f"{data['id']!r} is not a non-nil UUID")
    if "title" in data:
        check.text("title", data["title"])
    if "kind" in data:
        check.choice("kind", data["kind"], KINDS)
    if "scope" in data:
        _check_scope(check, data["scope"])
    if "status" in data:
        check.choice("status", data["status"], STATUSES)
    if "access" in data:
        check.choice("access", data["access"], ACCESS_LEVELS)
    created = check.timestamp("created_at", data["created_at"]) if "created_at" in data else None
    updated = check.timestamp("updated_at", data["updated_at"]) if "updated_at" in data else None
    if created and updated and updated < created:
        check.fail("updated_at", f"{data['updated_at']} precedes created_at {data['created_at']}")
    for name in ("tags", "aliases"):
        if name in data:
            check.string_list(name, data[name])
    if "supersedes" in data:
        _check_supersedes(check, data["supersedes"], data.get("id"))
    if "sources" in data:
        _check_sources(check, data["sources"])
    return check.problems


def _check_scope(check: _Checker, scope: Any) -> None:
    if scope == GLOBAL_SCOPE:
        return
    if isinstance(scope, str) and scope.startswith(PROJECT_SCOPE_PREFIX):
        if not is_uuid(scope_project_id(scope)):
            check.fail("scope", f"{scope!r}: the project id must be a non-nil UUID")
        return
    check.fail("scope", f"{scope!r} is neither 'global' nor 'project:<project-id>'")


def _check_supersedes(check: _Checker, value: Any, own_id: Any) -> None:
    if not isinstance(value, (list, tuple)):
        check.fail("supersedes", "must be a list of record ids")
        return
    for position, item in enumerate(value):
        if not is_uuid(item):
            check.fail(f"supersedes[{position}]", f"{item!r} is not a non-nil UUID")
        elif isinstance(own_id, str) and item.lower() == own_id.lower():
            check.fail(f"supersedes[{position}]", "a record cannot supersede itself")


def _check_sources(check: _Checker, value: Any) -> None:
    if not isinstance(value, (list, tuple)):
        check.fail("sources", "must be a list of source tables")
        return
    for position, source in enumerate(value):
        where = f"sources[{position}]"
        if not isinstance(source, Mapping):
            check.fail(where, "must be a table")
            continue
        for name in source:
            if name not in SOURCE_FIELDS:
                check.fail(f"{where}.{name}", "unknown field (allowed: " + ", ".join(SOURCE_FIELDS) + ")")
        if "kind" not in source:
            check.fail(f"{where}.kind", "required field is missing")
        else:
            check.choice(f"{where}.kind", source["kind"], SOURCE_KINDS)
        if "reference" not in source:
            check.fail(f"{where}.reference", "required field is missing")
        else:
            check.text(f"{where}.reference", source["reference"])
        for name in ("actor", "revision", "content_hash"):
            if name in source:
                check.text(f"{where}.{name}", source[name])
        if "observed_at" in source:
            check.timestamp(f"{where}.observed_at", source["observed_at"])


def raise_problems(problems: list[Problem], error: type[MemositeError] = InvalidArguments, where: str = "") -> None:
    """Raise ``error`` naming the first problem's field; every problem goes into ``details``."""
    if not problems:
        return
    first = problems[0]
    more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
    prefix = f"{where}: " if where else ""
    raise error(
        f"{prefix}invalid {first.field}: {first.message}{more}",
        details={"field": first.field, "problems": [p.to_json() for p in problems]},
    )


def record_from_frontmatter(data: Mapping[str, Any], body: str) -> StormRecord:
    """Build a record from a frontmatter mapping; raises :class:`InvalidArguments` naming the field."""
    raise_problems(check_frontmatter(data))
    sources = tuple(
        Source(**{name: source[name] for name in SOURCE_FIELDS if name in source}) for source in data.get("sources", [])
    )
    return StormRecord(
        id=data["id"],
        title=data["title"],
        kind=data["kind"],
        scope=data["scope"],
        status=data["status"],
        access=data["access"],
        created_at=data["created_at"],
        updated_at=data["updated_at"],
        body=body,
        tags=tuple(data.get("tags", ())),
        aliases=tuple(data.get("aliases", ())),
        supersedes=tuple(data.get("supersedes", ())),
        sources=sources,
        format_version=data.get("format_version", FORMAT_VERSION),
    )


def validate_record(record: StormRecord) -> StormRecord:
    """Check a record built in code against the same rules as a parsed one."""
    if not isinstance(record.body, str):
        raise InvalidArguments("invalid body: must be a string", details={"field": "body"})
    raise_problems(check_frontmatter(record.frontmatter()))
    return record


def source_from_json(data: Mapping[str, Any], position: int = 0) -> Source:
    """A :class:`Source` from a mapping, checked like a frontmatter ``[[sources]]`` table."""
    check = _Checker()
    _check_sources(check, [data])
    raise_problems([Problem(p.field.replace("[0]", f"[{position}]", 1), p.message) for p in check.problems])
    return Source(**{name: data[name] for name in SOURCE_FIELDS if name in data})


__all__ = [
    "ACCESS_LEVELS", "FORMAT_VERSION", "GLOBAL_SCOPE", "KINDS", "RECORD_FIELDS", "SOURCE_KINDS",
    "STATUSES", "Problem", "Source", "StormRecord", "check_frontmatter", "format_timestamp",
    "is_uuid", "new_uuid", "parse_timestamp", "project_scope", "raise_problems",
    "record_from_frontmatter", "scope_project_id", "source_from_json", "validate_record",
]  # fmt: skip
