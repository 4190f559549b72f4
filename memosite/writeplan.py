"""Planning an upsert without touching the disk: validate the request, then decide what it does.

:func:`normalize_upsert` checks and normalises what a caller sent (kind, body, frontmatter, TTL,
paths, secrets) into an :class:`UpsertRequest`. :func:`prepare_upsert` takes that request and what
the vault holds for it — the record at the target path, a trap it recurs, the record it supersedes —
and returns an :class:`UpsertPlan` saying what will happen (``created``, ``updated``, ``proposed``
or ``recurrence``) and the exact record to write. :mod:`memosite.store` gathers the inputs under the
vault lock and applies the plan inside one unit of work.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from memosite.config import VaultConfig
from memosite.errors import InvalidArguments, InvalidTransition
from memosite.expiration import compute_expires_at, parse_expires_at, validate_ttl_input
from memosite.provenance import GUARDED_KINDS, approved_by_person
from memosite.recurrence import classify_trap, trap_recurrence
from memosite.reviewstate import PENDING, is_pending
from memosite.schema import Record, format_iso, normalize_kind, validate_frontmatter, validate_slug
from memosite.secrets import assert_no_secrets
from memosite.statuses import is_terminal
from memosite.text import fold
from memosite.vault import is_record_name

UpsertAction = Literal["created", "updated", "proposed", "recurrence"]
_EXCLUDED_PATH_PARTS = (".git", "node_modules", "__pycache__", ".venv", ".memosite")
# Who wrote a record's text and against which commit: taken from the writer only when the write
# brings the text (a new record, or a new body). A write that only changes fields keeps them and
# names its writer in ``editedBy``.
CONTENT_PROVENANCE = ("source", "author", "repoCommit")


@dataclass(frozen=True)
class UpsertRequest:
    """A validated upsert: ``body`` None keeps an existing record's body (a new one needs one)."""

    kind: str
    body: str | None
    slug: str | None
    frontmatter: dict[str, Any]
    allow_duplicate: bool = False
    folded_paths: bool = False  # a path came with --path / path (added to the record's patterns)
    supersedes_missing_ok: bool = False  # the caller says the record ``supersedes`` names is gone on purpose

    @property
    def title(self) -> str | None:
        title = self.frontmatter.get("title")
        return title if isinstance(title, str) and title.strip() else None

    @property
    def supersedes(self) -> str | None:
        older = self.frontmatter.get("supersedes")
        return str(older) if older not in (None, "") else None


@dataclass
class UpsertPlan:
    """What an upsert will do: the record to write (at ``slug``) and its effect on others."""

    action: UpsertAction
    slug: str
    record: Record
    supersedes: str | None = None  # the id of the older record to mark superseded
    notes: list[str] = field(default_factory=list)

    @property
    def pending(self) -> bool:
        """The record waits for a person's review: a supersede it names waits with it."""
        return is_pending(self.record.frontmatter)

    @property
    def occurrences(self) -> int | None:
        value = self.record.frontmatter.get("occurrences")
        return int(value) if value is not None else None


def sanitize_paths(values: Sequence[Any]) -> list[str]:
    """Clean path patterns: relative, forward slashes, no captures of VCS/dependency/vault dirs."""
    cleaned: list[str] = []
    for value in values:
        if not isinstance(value, str) or "\x00" in value:
            raise InvalidArguments(f"invalid path {value!r}")
        path = value.strip().replace("\\", "/")
        if path.startswith("/") or re.match(r"^[A-Za-z]:/", path):
            raise InvalidArguments(f"invalid path {value!r}: give paths relative to the repository root")
        while path.startswith("./"):
            path = path[2:]
        if not path:
            continue
        parts = [part for part in path.split("/") if part]
        if any(part in _EXCLUDED_PATH_PARTS for part in parts):
            continue
        cleaned.append(path)
    return list(dict.fromkeys(cleaned))


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    return [value] if isinstance(value, str) else list(value) if isinstance(value, (list, tuple)) else [value]


def normalize_upsert(
    *,
    kind: str,
    body: str | None,
    slug: str | None = None,
    frontmatter: Mapping[str, Any] | None = None,
    path: str | None = None,
    allow_duplicate: bool = False,
    supersedes_missing_ok: bool = False,
) -> UpsertRequest:
    """Check an upsert's arguments and normalise them; INVALID_ARGUMENTS or SAFETY_VIOLATION
    (a secret) name what is wrong. Pure: reads nothing from disk."""
    kind = normalize_kind(kind)
    if body is not None and (not isinstance(body, str) or not body.strip()):
        raise InvalidArguments("body must not be empty")
    if body is not None and "\x00" in body:
        raise InvalidArguments("body holds a NUL character: a Markdown record is text")
    if frontmatter is not None and not isinstance(frontmatter, Mapping):
        raise InvalidArguments("frontmatter must be an object")
    incoming: dict[str, Any] = dict(frontmatter or {})
    incoming.pop("kind", None)
    if incoming.get("ttl") not in (None, ""):
        validate_ttl_input(incoming["ttl"])
    if incoming.get("expires_at") not in (None, ""):
        moment = parse_expires_at(incoming["expires_at"])
        if moment is None:
            raise InvalidArguments(
                f'Invalid ttl duration or date: "{incoming["expires_at"]}"', details={"field": "expires_at"}
            )
        incoming["expires_at"] = format_iso(moment)
    folded = [p for p in (path, incoming.pop("path", None)) if p]
    if folded or "pathPatterns" in incoming:
        incoming["pathPatterns"] = sanitize_paths([*_as_list(incoming.get("pathPatterns")), *folded])
    if folded or "linkedPaths" in incoming:
        incoming["linkedPaths"] = sanitize_paths([*_as_list(incoming.get("linkedPaths")), *folded])
    explicit = validate_slug(slug) if slug else None
    if incoming.get("id") not in (None, ""):
        validate_slug(str(incoming["id"]), "id")
    for what, name in (("slug", explicit), ("id", incoming.get("id"))):
        if name not in (None, "") and not is_record_name(f"{name}.md"):
            raise InvalidArguments(
                f"invalid {what} {name!r}: names ending in .proposed or .accepted or holding .conflict. are"
                " kept for the files memosite keeps beside a record (a change waiting for review, a sync"
                " conflict)"
            )
    if incoming.get("supersedes") not in (None, ""):
        older = validate_slug(str(incoming["supersedes"]), "supersedes id")
        if older in (incoming.get("id"), explicit):
            raise InvalidArguments(f"{older} cannot supersede itself")
    checked = validate_frontmatter({**incoming, "kind": kind}, require=False)
    if "layer" in incoming and "layer" not in checked:
        # A "security" layer is a topic: the record gets the tag, and (a trap) an inferred layer.
        del incoming["layer"]
        incoming["tags"] = checked["tags"]
    if incoming.get("cites") is not None:
        from memosite.freshness import read_cites

        read_cites(incoming)
    assert_no_secrets(body or "", incoming)
    return UpsertRequest(
        kind,
        body,
        explicit,
        incoming,
        bool(allow_duplicate),
        folded_paths=bool(folded),
        supersedes_missing_ok=bool(supersedes_missing_ok),
    )


def same_title(left: Any, right: Any) -> bool:
    """Two titles name the same record when they read the same (case, accents and spacing aside)."""
    if not isinstance(left, str) or not isinstance(right, str):
        return False
    return " ".join(fold(left).split()) == " ".join(fold(right).split())


def describe(record: Record) -> str:
    """How errors name a record: project, kind and slug, never a file system path."""
    slug = record.path.stem if record.path is not None else record.id
    return f"{record.frontmatter.get('project')}/{record.kind}/{slug}"


def check_target(request: UpsertRequest, existing: Record | None) -> None:
    """A write may replace only a record of its own kind, and never a superseded one."""
    if existing is None:
        return
    if existing.kind != request.kind:
        raise InvalidArguments(
            f"{describe(existing)} holds a {existing.kind}, not a {request.kind}: choose another slug",
            details={"existing": {"kind": existing.kind, "id": existing.id}},
        )
    if is_terminal(existing.status):
        successor = existing.frontmatter.get("supersededBy")
        raise InvalidTransition(
            f"{existing.id} is superseded{f' by {successor}' if successor else ''} (terminal):"
            " write the successor, or forget --purge this one"
        )


def prepare_upsert(
    request: UpsertRequest,
    *,
    project: str,
    slug: str,
    existing: Record | None,
    recurrence_of: Record | None = None,
    older: Record | None = None,
    proposed: Record | None = None,
    now: datetime,
    config: VaultConfig,
    provenance: Mapping[str, Any] | None = None,
) -> UpsertPlan:
    """Decide what the upsert does (see the module docstring).

    ``existing`` is the record at the target slug, ``recurrence_of`` a trap this trap repeats (its
    occurrences are bumped instead of writing the new text), ``older`` the record it supersedes,
    ``proposed`` an agent's change of ``existing`` already waiting for review.

    An agent's change of a record that serves (it does not wait for review) becomes a proposal
    (``proposed``: the record stays as it is until a person approves) when a person approved that
    record or ``review.required`` names its kind; a further agent change builds on the waiting one.
    An agent's new record that supersedes a record a person approved waits for review too, and the
    supersede with it.
    """
    now_iso = format_iso(now)
    check_target(request, existing)
    if recurrence_of is not None:
        fm = dict(recurrence_of.frontmatter)
        fm.update(trap_recurrence(fm, seen_at=now_iso, again=True))
        fm["updated"] = now_iso
        record = Record(validate_frontmatter(fm), recurrence_of.body, recurrence_of.path, recurrence_of.source)
        slug_of = recurrence_of.path.stem if recurrence_of.path is not None else recurrence_of.id
        return UpsertPlan("recurrence", slug_of, record)
    body = request.body if request.body is not None else (existing.body if existing is not None else None)
    if body is None:
        raise InvalidArguments("body must not be empty: a new record needs one (--body or --body-file)")
    incoming = dict(request.frontmatter)
    writer = dict(provenance or {})
    writer_source = str(
        incoming.get("source")
        or writer.get("source")
        or (existing.frontmatter.get("source") if existing is not None else None)
        or "agent"
    )
    # An agent's write waits for review whatever source it names (an import run by an agent too).
    reviewed_as = "agent" if (provenance or {}).get("source") == "agent" else writer_source
    proposal = reviewed_as == "agent" and _proposes(existing, request.kind, config, incoming, request.body)
    # A further agent change of a record with a change waiting builds on the waiting one.
    base = proposed if proposal and proposed is not None else existing
    if request.body is None and base is not None:
        body = base.body
    if base is not None and request.folded_paths:
        # A path given with --path is folded into what the record already names, not swapped in.
        for name in ("pathPatterns", "linkedPaths"):
            kept = [str(p) for p in base.frontmatter.get(name) or []]
            incoming[name] = list(dict.fromkeys([*kept, *incoming.get(name, [])]))
    merged: dict[str, Any] = dict(base.frontmatter) if base is not None else {}
    if base is not None and body == base.body:
        writer = _fields_edit(merged, writer)
    else:
        merged.pop("editedBy", None)
    merged.update({k: v for k, v in writer.items() if k not in incoming})
    merged.update(incoming)
    merged.setdefault("id", slug)
    merged["kind"] = request.kind
    merged["project"] = project
    merged["created"] = (
        (existing.frontmatter.get("created") if existing is not None else None) or incoming.get("created") or now_iso
    )
    merged["updated"] = incoming.get("updated") or now_iso
    if incoming.get("ttl") not in (None, "") and "expires_at" not in incoming:
        # A new record lives ttl from its creation; a ttl set on an existing one counts from now
        # (a week more, not a week after it was created long ago).
        start = merged["created"] if existing is None else now_iso
        merged["expires_at"] = format_iso(compute_expires_at(start, incoming["ttl"]))
    if request.kind == "trap":
        classify_trap(merged, body)
        # Rewording a trap must not lose how often it bit: the successor carries the count on.
        rewords = older is not None and older.kind == "trap" and existing is None and "occurrences" not in incoming
        succeeds = older.frontmatter if older is not None and rewords else None
        merged.update(trap_recurrence(merged, seen_at=now_iso, succeeds=succeeds))
    supersedes = request.supersedes
    if reviewed_as == "agent" and (
        proposal or request.kind in config.review_required or _displaces(older, supersedes, merged.get("id"))
    ):
        _wait_for_review(merged)
    record = Record(
        frontmatter=validate_frontmatter(merged),
        body=body,
        path=existing.path if existing is not None else None,
        source=existing.source if existing is not None else None,
    )
    if supersedes is not None and supersedes == record.id:
        raise InvalidArguments(f"{supersedes} cannot supersede itself")
    action: UpsertAction = "proposed" if proposal else "updated" if existing is not None else "created"
    return UpsertPlan(action, slug, record, supersedes=supersedes)


def _fields_edit(merged: dict[str, Any], writer: Mapping[str, Any]) -> dict[str, Any]:
    """A write that keeps the body: the text's own provenance (``source``, ``author``,
    ``repoCommit``) stays in ``merged``, which names the writer, when another, in ``editedBy``.
    Returns the writer's provenance that still applies."""
    editor = writer.get("author") or writer.get("source")
    if editor and editor != (merged.get("author") or merged.get("source")):
        merged["editedBy"] = editor
    elif editor:
        merged.pop("editedBy", None)  # the text's author changed it last: no one else to name
    return {k: v for k, v in writer.items() if k not in CONTENT_PROVENANCE}


# Fields that decide when gc removes a record: for its expired reviews and scratch that means a
# purge, which only a person decides for a record of theirs.
EXPIRY_FIELDS = ("expires_at", "ttl")


def _proposes(
    existing: Record | None, kind: str, config: VaultConfig, incoming: Mapping[str, Any], body: str | None
) -> bool:
    """An agent's change of ``existing`` waits beside it instead of replacing it: the record serves
    (no review of it is under way), and a person approved it (of a kind the brief serves, see
    :data:`~memosite.provenance.GUARDED_KINDS`; of any kind when the change moves its expiry; of
    any kind but scratch when it rewrites the text, the title or the status) or ``review.required`` names its
    kind. Whoever wrote the text: an agent changing a person's record only in its fields proposes
    too."""
    if existing is None or is_pending(existing.frontmatter):
        return False
    if kind in config.review_required:
        return True
    if not approved_by_person(existing.frontmatter):
        return False
    if kind in GUARDED_KINDS:
        return True
    # An agent that dated a person's review record in the past had the next gc (its own, over
    # MCP) purge it, on every machine: the expiry of a person's record is theirs to change. A
    # person's log, prompt or review rewritten in place was as good as destroyed, so its text is
    # theirs too; scratch is throwaway by definition.
    if any(name in incoming and incoming[name] != existing.frontmatter.get(name) for name in EXPIRY_FIELDS):
        return True
    retitles = "title" in incoming and incoming["title"] != existing.frontmatter.get("title")
    rewrites = body is not None and body != existing.body
    # A status set alone retires it as surely: superseded or archived, it is hidden and terminal.
    restatus = "status" in incoming and incoming["status"] != existing.status
    return kind != "scratch" and (retitles or rewrites or restatus)


def _displaces(older: Record | None, older_id: str | None, own_id: Any) -> bool:
    """An agent's record that supersedes a live record a person approved: it waits for review,
    and the supersede with it."""
    return (
        older is not None
        and older_id not in (None, own_id)
        and not is_terminal(older.status)
        and older.kind in GUARDED_KINDS
        and approved_by_person(older.frontmatter)
    )


def _wait_for_review(merged: dict[str, Any]) -> None:
    """``review: pending``, without what an earlier review of the record said."""
    merged["review"] = PENDING
    for stale in ("reviewedBy", "reviewedAt", "reviewReason"):
        merged.pop(stale, None)
