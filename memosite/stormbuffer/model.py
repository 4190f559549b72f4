"""The Stormbuffer record: four kinds, a strict frontmatter schema, sources, timestamps.

Exactly as strict as ``stormbuffer-core``'s ``codec.rs`` and ``record.rs``, no more and no less:
every field is required (``tags``, ``aliases``, ``supersedes`` and ``sources`` included, with no
defaults), unknown fields are refused at the top level and in each source, ``format_version``
is the integer 1, a record has at least one source and every source an ``actor``, text fields
have no surrounding whitespace or control characters, ``supersedes`` holds neither the record's
own id nor a duplicate, and the body has non-whitespace text and no NUL. Value rules (ids,
timestamps, scopes, text) live in :mod:`.values`. Every problem names its field
(``sources[1].actor``) so a person can find it in the file; all of them are reported, not only
the first.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from memosite.errors import InvalidArguments, MemositeError
from memosite.stormbuffer.values import (
    GLOBAL_SCOPE,
    Timestamp,
    canonical_timestamp,
    is_uuid,
    new_uuid,
    parse_timestamp,
    parse_uuid,
    project_scope,
    record_id_problem,
    rust_trim,
    scope_problem,
    scope_project_id,
    text_problem,
    timestamp_problem,
)

FORMAT_VERSION = 1
KINDS = ("fact", "decision", "procedure", "checkpoint")
STATUSES = ("candidate", "active", "superseded", "archived")
ACCESS_LEVELS = ("human", "agent")
SOURCE_KINDS = ("conversation", "document", "issue", "url")

# The frontmatter in the order Stormbuffer's Frontmatter struct declares (and renders) it.
RECORD_FIELDS = (
    "format_version", "id", "title", "kind", "scope", "status", "access",
    "created_at", "updated_at", "tags", "aliases", "supersedes", "sources",
)  # fmt: skip
SOURCE_FIELDS = ("kind", "reference", "actor", "observed_at", "revision", "content_hash")
REQUIRED_SOURCE_FIELDS = SOURCE_FIELDS[:3]
_STRING_FIELDS = ("id", "title", "kind", "scope", "status", "access", "created_at", "updated_at")
_U32_MAX = 2**32 - 1


@dataclass(frozen=True)
class Source:
    """Where a memory came from. Freshness fields are kept for audits, never acted on."""

    kind: str
    reference: str
    actor: str
    observed_at: str | None = None
    revision: str | None = None
    content_hash: str | None = None

    def to_json(self) -> dict[str, str]:
        return {name: value for name in SOURCE_FIELDS if (value := getattr(self, name)) is not None}

    def rendered(self) -> dict[str, str]:
        """The table Stormbuffer writes: ``observed_at`` in its canonical form."""
        data = self.to_json()
        if self.observed_at is not None:
            data["observed_at"] = canonical_timestamp(self.observed_at)
        return data


@dataclass(frozen=True)
class StormRecord:
    """One validated record. Values are held as written; :meth:`frontmatter` renders them."""

    id: str
    title: str
    kind: str
    scope: str
    status: str
    access: str
    created_at: str
    updated_at: str
    body: str
    tags: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()
    supersedes: tuple[str, ...] = ()
    sources: tuple[Source, ...] = ()
    format_version: int = FORMAT_VERSION

    @property
    def key(self) -> str:
        """The canonical id (lower-case, hyphenated): file names and lookups use it."""
        return parse_uuid(self.id) or self.id.lower()

    @property
    def created(self) -> Timestamp:
        return parse_timestamp(self.created_at)

    @property
    def updated(self) -> Timestamp:
        return parse_timestamp(self.updated_at)

    @property
    def superseded_keys(self) -> tuple[str, ...]:
        return tuple(parse_uuid(item) or item.lower() for item in self.supersedes)

    def frontmatter(self) -> dict[str, Any]:
        """The mapping Stormbuffer renders: canonical ids and timestamps, declared order."""
        return {
            "format_version": FORMAT_VERSION,
            "id": self.key,
            "title": self.title,
            "kind": self.kind,
            "scope": self.scope,
            "status": self.status,
            "access": self.access,
            "created_at": canonical_timestamp(self.created_at),
            "updated_at": canonical_timestamp(self.updated_at),
            "tags": list(self.tags),
            "aliases": list(self.aliases),
            "supersedes": list(self.superseded_keys),
            "sources": [source.rendered() for source in self.sources],
        }

    def to_json(self, *, body: bool = True) -> dict[str, Any]:
        data: dict[str, Any] = {name: getattr(self, name) for name in RECORD_FIELDS[:9]}
        data.update(
            tags=list(self.tags),
            aliases=list(self.aliases),
            supersedes=list(self.supersedes),
            sources=[source.to_json() for source in self.sources],
        )
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


@dataclass
class _Checker:
    problems: list[Problem] = field(default_factory=list)

    def fail(self, name: str, message: str) -> None:
        self.problems.append(Problem(name, message))

    def check(self, name: str, message: str | None) -> None:
        if message is not None:
            self.fail(name, message)

    def choice(self, name: str, value: str, allowed: tuple[str, ...]) -> None:
        if value not in allowed:
            self.fail(name, f"{value!r} is not one of {', '.join(allowed)}")

    def string_list(self, name: str, value: Any) -> list[str] | None:
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            self.fail(name, "must be an array of strings")
            return None
        return value


def _unknown(check: _Checker, where: str, data: Mapping[str, Any], allowed: tuple[str, ...]) -> None:
    for name in data:
        if name not in allowed:
            check.fail(f"{where}{name}", "unknown field (allowed: " + ", ".join(allowed) + ")")


def _check_source(check: _Checker, position: int, source: Any) -> None:
    where = f"sources[{position}]"
    if not isinstance(source, Mapping):
        check.fail(where, "must be a table")
        return
    _unknown(check, f"{where}.", source, SOURCE_FIELDS)
    for name in SOURCE_FIELDS:
        if name not in source:
            if name in REQUIRED_SOURCE_FIELDS:
                check.fail(f"{where}.{name}", "required field is missing")
            continue
        value = source[name]
        if not isinstance(value, str):
            check.fail(f"{where}.{name}", "must be a string")
        elif name == "kind":
            check.choice(f"{where}.kind", value, SOURCE_KINDS)
        elif name == "observed_at":
            check.check(f"{where}.observed_at", timestamp_problem(value))
        else:
            check.check(f"{where}.{name}", text_problem(value))


def check_frontmatter(data: Mapping[str, Any], body: str | None = None) -> list[Problem]:
    """Every rule ``data`` (and ``body``, when given) breaks; empty for a valid record."""
    check = _Checker()
    _unknown(check, "", data, RECORD_FIELDS)
    for name in RECORD_FIELDS:
        if name not in data:
            check.fail(name, "required field is missing")
    present = {name: data[name] for name in RECORD_FIELDS if name in data}
    if "format_version" in present:
        version = present["format_version"]
        if type(version) is not int or not 0 <= version <= _U32_MAX:
            check.fail("format_version", f"must be an integer, got {version!r}")
        elif version != FORMAT_VERSION:
            check.fail("format_version", f"version {version} is unsupported; expected {FORMAT_VERSION}")
    for name in _STRING_FIELDS:
        if name in present and not isinstance(present[name], str):
            check.fail(name, "must be a string")
            del present[name]
    if "id" in present:
        check.check("id", record_id_problem(present["id"]))
    if "title" in present:
        check.check("title", text_problem(present["title"]))
    if "kind" in present:
        check.choice("kind", present["kind"], KINDS)
    if "scope" in present:
        check.check("scope", scope_problem(present["scope"]))
    if "status" in present:
        check.choice("status", present["status"], STATUSES)
    if "access" in present:
        check.choice("access", present["access"], ACCESS_LEVELS)
    stamps = {}
    for name in ("created_at", "updated_at"):
        if name in present:
            problem = timestamp_problem(present[name])
            check.check(name, problem)
            if problem is None:
                stamps[name] = parse_timestamp(present[name]).instant
    if len(stamps) == 2 and stamps["updated_at"] < stamps["created_at"]:
        check.fail("updated_at", "must not precede created_at")
    for name in ("tags", "aliases"):
        items = check.string_list(name, present[name]) if name in present else None
        for position, item in enumerate(items or ()):
            check.check(f"{name}[{position}]", text_problem(item))
    if "supersedes" in present:
        _check_supersedes(check, present["supersedes"], present.get("id"))
    if "sources" in present:
        sources = present["sources"]
        if not isinstance(sources, list):
            check.fail("sources", "must be an array of tables")
        elif not sources:
            check.fail("sources", "must contain at least one source")
        for position, source in enumerate(sources if isinstance(sources, list) else ()):
            _check_source(check, position, source)
    if body is not None:
        _check_body(check, body)
    return check.problems


def _check_supersedes(check: _Checker, value: Any, own_id: Any) -> None:
    items = check.string_list("supersedes", value)
    own = parse_uuid(own_id) if isinstance(own_id, str) else None
    seen: set[str] = set()
    for position, item in enumerate(items or ()):
        problem = record_id_problem(item)
        if problem is not None:
            check.fail(f"supersedes[{position}]", problem)
            continue
        canonical = parse_uuid(item)
        assert canonical is not None
        if canonical == own:
            check.fail("supersedes", "must not contain the record id")
        elif canonical in seen:
            check.fail("supersedes", "must not contain duplicates")
        seen.add(canonical)


def _check_body(check: _Checker, body: Any) -> None:
    if not isinstance(body, str):
        check.fail("body", "must be a string")
    elif not rust_trim(body):
        check.fail("body", "must contain non-whitespace text")
    elif "\x00" in body:
        check.fail("body", "must not contain NUL characters")


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


def source_from_mapping(data: Mapping[str, Any]) -> Source:
    return Source(**{name: data[name] for name in SOURCE_FIELDS if name in data})


def record_from_frontmatter(data: Mapping[str, Any], body: str) -> StormRecord:
    """Build a record from a parsed frontmatter and body; :class:`InvalidArguments` names the field."""
    raise_problems(check_frontmatter(data, body))
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
        tags=tuple(data["tags"]),
        aliases=tuple(data["aliases"]),
        supersedes=tuple(data["supersedes"]),
        sources=tuple(source_from_mapping(source) for source in data["sources"]),
        format_version=data["format_version"],
    )


def validate_record(record: StormRecord) -> StormRecord:
    """Check a record built in code against the same rules as a parsed one."""
    raise_problems(check_frontmatter(record.to_json(body=False), record.body))
    return record


def check_provenance(record: StormRecord) -> None:
    """Refuse sources Stormbuffer does not take as provenance when a record is proposed, approved
    or supersedes another: an ``inference`` actor or an ``inference:`` reference."""
    for position, source in enumerate(record.sources):
        if source.actor.lower() == "inference" or source.reference.startswith(("inference:", "inference://")):
            raise InvalidArguments(
                f"invalid sources[{position}]: unsupported inference cannot be used as provenance",
                details={"field": f"sources[{position}]"},
            )


def source_from_json(data: Mapping[str, Any], position: int = 0) -> Source:
    """A :class:`Source` from a mapping, checked like a frontmatter ``[[sources]]`` table."""
    check = _Checker()
    _check_source(check, position, data)
    raise_problems(check.problems)
    return source_from_mapping(data)


__all__ = [
    "ACCESS_LEVELS", "FORMAT_VERSION", "GLOBAL_SCOPE", "KINDS", "RECORD_FIELDS", "SOURCE_KINDS",
    "STATUSES", "Problem", "Source", "StormRecord", "check_frontmatter", "is_uuid", "new_uuid",
    "parse_timestamp", "project_scope", "raise_problems", "record_from_frontmatter",
    "scope_project_id", "source_from_json", "validate_record",
]  # fmt: skip
