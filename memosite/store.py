"""The write engine: upsert, append, forget, restore, and listing (``get`` lives in :mod:`lookup`).

Every mutation runs in one unit of work (:mod:`memosite.mutation`): validated and secret-scanned
first, then under the vault lock the files change atomically, the index follows, the views of the
touched kinds are rewritten once and one vault commit is requested. An upsert is planned before it
is applied (:mod:`memosite.writeplan`), so its result says what it did: ``created``, ``updated``,
``proposed`` or ``recurrence``.

An agent may archive and restore any record, but never purge one a person approved, and its change
of such a record is only proposed (:mod:`memosite.proposals`): the approved record keeps serving
until a person approves the change.
"""

from __future__ import annotations

import os
import secrets as _random
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from memosite.archive import archive_fields, restore_fields
from memosite.errors import InvalidArguments, InvalidRecord, InvalidTransition, PersonRequired, RecordNotFound
from memosite.expiration import is_expired_iso, iso_or_none, resolve_expires_at
from memosite.index import queries
from memosite.kinds import KINDS
from memosite.lookup import files_holding_id, find_record, locate_record, shared_id_error, suggest_ids, writable_target
from memosite.mutation import Mutation, mutation
from memosite.proposals import drop_accepted_version, keep_legacy_copies, proposal_path, read_proposal
from memosite.provenance import approved_by_person, provenance_fields
from memosite.recordfile import read_record, record_label
from memosite.recurrence import is_recurrence, pattern_key, trap_occurrences
from memosite.refresh import ensure_index, refresh_project
from memosite.reviewstate import REJECTED, is_pending
from memosite.schema import (
    Record,
    format_iso,
    normalize_kind,
    serialize_record,
    slugify,
    utc_now,
    validate_frontmatter,
    validate_slug,
)
from memosite.secrets import assert_no_secrets
from memosite.statuses import is_inactive, is_terminal
from memosite.suggest import did_you_mean
from memosite.vault import Tombstone, Vault
from memosite.writeplan import (
    UpsertAction,
    UpsertPlan,
    UpsertRequest,
    describe,
    normalize_upsert,
    prepare_upsert,
    same_title,
    sanitize_paths,
)

__all__ = [
    "AppendResult",
    "ForgetResult",
    "RecordSummary",
    "UpsertResult",
    "append_event",
    "derive_slug",
    "forget_record",
    "list_records",
    "mark_superseded",
    "restore_record",
    "sanitize_paths",
    "slug_taken",
    "unique_slug_candidates",
    "upsert_record",
]

MAX_UNIQUE_SUFFIX = 1000


# --- results ---------------------------------------------------------------------------------


@dataclass
class UpsertResult:
    id: str
    kind: str
    project: str
    path: str
    status: str
    created: str
    updated: str
    expires_at: str | None
    action: UpsertAction = "updated"
    occurrences: int | None = None
    superseded: bool = False
    supersedes_missing: str | None = None  # the id ``supersedes`` named, when no such record exists
    pending: bool = False  # waits for a person's review (memosite review)
    supersedes_pending: str | None = None  # the record it supersedes once a person approves it

    @property
    def recurrence(self) -> bool:
        return self.action == "recurrence"

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind,
            "project": self.project,
            "path": self.path,
            "status": self.status,
            "created": self.created,
            "updated": self.updated,
            "expires_at": self.expires_at,
            "action": self.action,
            "recurrence": self.recurrence,
            "occurrences": self.occurrences,
            "superseded": self.superseded,
            "supersedesMissing": self.supersedes_missing,
            "pending": self.pending,
            "supersedesPending": self.supersedes_pending,
        }

    def summary(self) -> str:
        """The CLI's one line: what happened, to which record."""
        what = f"{self.kind} {self.id}"
        if self.action == "recurrence":
            return f"recurrence of {what} (occurrences {self.occurrences}) → {self.path}"
        if self.action == "proposed":
            return (
                f"proposed a change to {what}: it waits for a person's review (memosite review);"
                f" the approved version keeps serving → {self.path}"
            )
        extra = " (superseding its predecessor)" if self.superseded else ""
        if self.supersedes_missing:
            extra = f" (nothing superseded: no record {self.supersedes_missing})"
        if self.supersedes_pending:
            extra = f" (it supersedes {self.supersedes_pending} once a person approves it)"
        elif self.pending:
            extra += " (waits for a person's review: memosite review)"
        return f"{self.action} {what}{extra} → {self.path}"


@dataclass
class AppendResult:
    """The event written, echoed back: its id and file, what it says and when."""

    id: str
    kind: str
    project: str
    path: str
    event: str = ""
    details: Any = None
    created: str = ""

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class ForgetResult:
    id: str
    kind: str
    status: str  # "archived" or "purged"
    purged: bool
    restored: list[str] = field(default_factory=list)  # predecessors a purge made active again

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class RecordSummary:
    id: str
    kind: str
    project: str
    title: str
    status: str
    path: str
    updated: str | None
    expires_at: str | None
    expired: bool
    severity: str | None = None
    tags: list[str] = field(default_factory=list)
    pending: bool = False  # waiting for a person's review (memosite review)

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


# --- slugs -----------------------------------------------------------------------------------


def _epoch_ms(now: datetime) -> int:
    return int(now.timestamp() * 1000)


def _named_slug(kind: str, frontmatter: Mapping[str, Any], slug: str | None) -> str | None:
    """The slug when the caller named the record: an explicit slug, the id, or a prompt's or a
    session's own name (``prompt-<sessionId>-t<turn>``, ``session-<sessionId>``)."""
    if slug:
        return validate_slug(slug)
    if frontmatter.get("id"):
        return validate_slug(str(frontmatter["id"]), "id")
    session_id = frontmatter.get("sessionId")
    if kind == "prompt" and session_id and frontmatter.get("turn") is not None:
        return validate_slug(f"prompt-{slugify(str(session_id))}-t{frontmatter['turn']}")
    if kind == "session" and session_id:
        return validate_slug(f"session-{slugify(str(session_id))}")
    return None


def derive_slug(kind: str, frontmatter: Mapping[str, Any], slug: str | None, now: datetime) -> str:
    """explicit slug → frontmatter id → slugify(title) → ``<kind>-<ms>``.

    prompt and session records name themselves after their session first (after the id):
    ``prompt-<sessionId>-t<turn>`` and ``session-<sessionId>``, so their names say where they come
    from. Without those a prompt takes its title as any record does (the original gave it
    ``prompt-<ms>-<6 hex>`` even when titled; a person naming a prompt expects to find it by that
    name), and only an untitled one gets ``prompt-<ms>-<6 hex>``; a session ``session-<ms>``.
    """
    named = _named_slug(kind, frontmatter, slug)
    if named is not None:
        return named
    if kind == "session":
        return f"session-{_epoch_ms(now)}"
    title = frontmatter.get("title")
    if isinstance(title, str) and slugify(title):
        return slugify(title)
    if kind == "prompt":
        return f"prompt-{_epoch_ms(now)}-{_random.token_hex(3)}"
    return f"{kind}-{_epoch_ms(now)}"


def unique_slug_candidates(slug: str) -> Iterator[str]:
    """``slug``, then ``slug-2``, ``slug-3`` … (cut to stay a valid slug); INVALID_ARGUMENTS when
    they run out."""
    yield slug
    for n in range(2, MAX_UNIQUE_SUFFIX):
        suffix = f"-{n}"
        yield f"{slug[: 200 - len(suffix)]}{suffix}"
    raise InvalidArguments(f"no free slug left for {slug!r}: give one with --slug")


# --- upsert ----------------------------------------------------------------------------------


def _read_existing(path: Path) -> Record | None:
    if not path.exists():
        return None
    try:
        return read_record(path)
    except InvalidRecord as exc:
        # Never overwrite a file a person can still fix: refuse instead of losing it.
        raise InvalidRecord(f"{exc.message}; fix or remove the file before writing it again") from exc


def _refuse_taken_id(vault: Vault, project: str, request: UpsertRequest, slug: str, path: Path) -> None:
    """A write to ``slug`` whose frontmatter gives another id must not take the id of another
    record (a file named by it, or one holding it): two records under one id would shadow the
    first in the brief and the views and leave ``get`` unable to tell them apart (an agent named
    its record ``shadow.md`` with a person's decision's id, and the brief served the agent's)."""
    given = request.frontmatter.get("id")
    if given is None or str(given) == slug:
        return
    own_id = str(given)
    named = [other for kind in KINDS if (other := vault.record_path(project, kind, own_id)) != path and other.exists()]
    holders = [other for other in files_holding_id(vault, project, own_id) if other != path]
    taken = list(dict.fromkeys([*named, *holders]))
    if taken:
        raise InvalidArguments(
            f"id {own_id} is already the id of {', '.join(record_label(other) for other in taken)}: a record"
            f" written to {path.name} cannot take it (give it another id, or change that record)",
            details={"id": own_id, "files": [record_label(other) for other in taken]},
        )


def _locate_target(vault: Vault, project: str, request: UpsertRequest, now: datetime) -> tuple[str, Record | None]:
    """The slug to write and the record there now.

    A slug or id the caller gave names the record to update. A slug derived from the title (or a
    timestamp) only reaches a record of the same kind and title when the write cannot lose it: it
    changes fields only (no body), repeats its body, or is the same trap seen again. Any other
    record there is left alone and the next free ``<slug>-2``, ``<slug>-3`` … is used, so no upsert
    ever replaces a record it did not name.
    """
    named = _named_slug(request.kind, request.frontmatter, request.slug)
    if named is not None:
        path = writable_target(vault, vault.record_path(project, request.kind, named))
        _refuse_case_twin(vault, project, path)
        if request.slug is None and request.frontmatter.get("id") and not path.exists():
            # An id names the record wherever its file is (a hand-written file named otherwise).
            try:
                record, found = locate_record(vault, project, record_id=named, kind=request.kind)
                return found.stem, record
            except RecordNotFound:
                _refuse_other_kind(vault, project, named, request.kind)
        holders = [other for other in files_holding_id(vault, project, named, (request.kind,)) if other != path]
        if holders:
            # Another file of this kind holds the id: writing here would give two records one id.
            raise shared_id_error(named, [path, *holders] if path.exists() else holders)
        _refuse_taken_id(vault, project, request, named, path)
        return named, _read_existing(path)
    for candidate in unique_slug_candidates(derive_slug(request.kind, request.frontmatter, None, now)):
        path = writable_target(vault, vault.record_path(project, request.kind, candidate))
        taken = any(other != path for other in files_holding_id(vault, project, candidate))
        if taken or _case_twins(vault, project, path):
            continue  # the name, or the id it gives, is already another record's
        if not path.exists():
            return candidate, None
        try:
            existing = read_record(path)
        except InvalidRecord:
            continue  # a hand-written file that does not parse: never ours to overwrite
        if (
            existing.kind == request.kind
            and existing.status != "superseded"
            and request.title is not None
            and same_title(existing.frontmatter.get("title"), request.title)
            and (request.body is None or request.body == existing.body or _same_trap(request, existing))
        ):
            return candidate, existing
    raise AssertionError("unreachable")  # unique_slug_candidates raises when it runs out


def slug_taken(vault: Vault, project: str, kind: str, slug: str) -> bool:
    """Whether a new record of ``kind`` named ``slug`` would meet another: its file exists, a file
    of the project holds the id, or a file's name differs from it only in letter case."""
    path = vault.record_path(project, kind, slug)
    return path.exists() or bool(files_holding_id(vault, project, slug)) or bool(_case_twins(vault, project, path))


def _case_twins(vault: Vault, project: str, path: Path) -> list[str]:
    """Indexed record files whose name equals ``path``'s but for letter case: on macOS and Windows
    both names are one file, so creating one would overwrite the other."""
    return queries.paths_differing_in_case(vault.index(), project, vault.relative(path))


def _refuse_case_twin(vault: Vault, project: str, path: Path) -> None:
    """A named slug never makes a second file that differs from an existing one only in letter
    case. It is refused rather than mapped to that record: ``Foo`` and ``foo`` may well be
    different records to whoever named them, and only they can say which one they meant."""
    twins = _case_twins(vault, project, path)
    if twins:
        other = Path(twins[0])
        raise InvalidArguments(
            f"refusing to create {record_label(path)}: {record_label(vault.root / other)} exists and differs only in"
            f" letter case (one file on macOS and Windows): use --slug {other.stem} to update it, or another slug"
        )


def _refuse_other_kind(vault: Vault, project: str, record_id: str, kind: str) -> None:
    """An id that names a record of another kind: say so (rather than create a second record)."""
    try:
        other, _ = locate_record(vault, project, record_id=record_id)
    except (RecordNotFound, InvalidArguments):
        return
    if other.kind != kind:
        raise InvalidArguments(
            f"{describe(other)} is a {other.kind}, not a {kind}: give --kind {other.kind}, or another id"
        )


def _recurrence_text(title: Any, body: str) -> str:
    """What two traps are compared by: title and body (the same words under another title are
    another trap)."""
    return f"{title}\n{body}" if isinstance(title, str) and title.strip() else body


def _same_trap(request: UpsertRequest, existing: Record) -> bool:
    """The seed's recurrence rule: identical path patterns and ≥ 70 % token overlap."""
    if request.kind != "trap" or request.allow_duplicate or request.body is None or request.supersedes:
        return False
    if pattern_key(existing.frontmatter.get("pathPatterns") or []) != pattern_key(
        request.frontmatter.get("pathPatterns") or []
    ):
        return False
    return is_recurrence(
        _recurrence_text(request.title, request.body),
        _recurrence_text(existing.frontmatter.get("title"), existing.body),
    )


def _find_recurrence(vault: Vault, project: str, request: UpsertRequest) -> Record | None:
    assert request.body is not None
    patterns = request.frontmatter.get("pathPatterns") or []
    text = _recurrence_text(request.title, request.body)
    for candidate in queries.live_traps_with_patterns(vault.index(), project, pattern_key(patterns)):
        if is_recurrence(text, _recurrence_text(candidate.frontmatter.get("title"), candidate.body)):
            try:
                return read_record(vault.root / candidate.path)
            except InvalidRecord:
                continue
    return None


def _find_older(vault: Vault, project: str, older_id: str | None) -> tuple[Record, Path] | None:
    if older_id is None:
        return None
    try:
        return locate_record(vault, project, record_id=older_id)
    except (RecordNotFound, InvalidArguments, InvalidRecord):
        return None


def _nothing_to_supersede(vault: Vault, project: str, older_id: str) -> RecordNotFound:
    """A ``supersedes`` that names no record is most often a typo: writing anyway would leave the
    record meant to be replaced in force. Refused, naming the ids it was probably meant to be."""
    near = suggest_ids(vault, project, older_id)
    return RecordNotFound(
        f"supersedes {older_id}: no such record in project {project}{did_you_mean(near)}; nothing was written"
        " (when it is gone on purpose, say so: --supersedes-missing-ok, or supersedesMissingOk over MCP)",
        details={"supersedes": older_id, "suggestions": near},
    )


def plan_upsert(vault: Vault, project: str, request: UpsertRequest, now: datetime) -> tuple[UpsertPlan, Path]:
    """Gather what the vault holds for ``request`` (under the lock) and plan it."""
    slug, existing = _locate_target(vault, project, request, now)
    named = _named_slug(request.kind, request.frontmatter, request.slug) is not None
    recurrence = None
    if request.kind == "trap" and request.supersedes is None and not request.allow_duplicate and request.body:
        if existing is None:
            recurrence = _find_recurrence(vault, project, request)
        elif not named and not is_inactive(existing.status) and _same_trap(request, existing):
            # The same trap, by title, seen again: counted, not rewritten.
            recurrence = existing
    older = _find_older(vault, project, request.supersedes)
    if older is None and request.supersedes is not None and not request.supersedes_missing_ok:
        raise _nothing_to_supersede(vault, project, request.supersedes)
    target = existing.path if existing is not None and existing.path is not None else None
    plan = prepare_upsert(
        request,
        project=project,
        slug=slug,
        existing=existing,
        recurrence_of=recurrence,
        older=older[0] if older is not None else None,
        proposed=read_proposal(target) if target is not None else None,
        now=now,
        config=vault.config,
        provenance=provenance_fields(vault.actor, vault.product_root),
    )
    if plan.action == "recurrence" and recurrence is not None and recurrence.path is not None:
        return plan, recurrence.path
    return plan, vault.record_path(project, request.kind, slug)


def upsert_record(
    vault: Vault,
    project: str,
    *,
    kind: str,
    body: str | None,
    slug: str | None = None,
    frontmatter: Mapping[str, Any] | None = None,
    path: str | None = None,
    allow_duplicate: bool = False,
    cites: Sequence[str | Mapping[str, Any]] | None = None,
    supersedes_missing_ok: bool = False,
    now: datetime | None = None,
) -> UpsertResult:
    """Create or update one record; ``body`` None keeps an existing record's body. ``cites`` names
    code of the product repository (``path`` or ``path:start-end``) to pin in the record. A
    ``supersedes`` naming no record is refused (RECORD_NOT_FOUND, with the ids it was probably
    meant to be) unless ``supersedes_missing_ok``: then the record is written and the result says
    nothing was superseded."""
    now = now or utc_now()
    actor = vault.actor
    if actor is not None:
        actor.refuse_claims(frontmatter or {})
    title = (frontmatter or {}).get("title")
    if title is not None and not isinstance(title, str):
        # A hand-written file may hold `title: 2024` (read as it stands); a write says what it means.
        raise InvalidArguments(f"title must be text, not {type(title).__name__}", details={"field": "title"})
    if cites:
        frontmatter = {**(frontmatter or {}), "cites": _pin(vault, cites)}
    request = normalize_upsert(
        kind=kind,
        body=body,
        slug=slug,
        frontmatter=frontmatter,
        path=path,
        allow_duplicate=allow_duplicate,
        supersedes_missing_ok=supersedes_missing_ok,
    )
    with mutation(vault, f"upsert {request.kind}") as unit:
        plan, target = plan_upsert(vault, project, request, now)
        return apply_upsert(unit, project, plan, target, now)


def _pin(vault: Vault, cites: Sequence[str | Mapping[str, Any]]) -> list[dict[str, Any]]:
    from memosite.freshness import Repository, pin_cites

    if vault.product_root is None:
        raise InvalidArguments("cannot cite code outside a repository: run this in the repository the record is about")
    return pin_cites(Repository(vault.product_root), cites)


def apply_upsert(unit: Mutation, project: str, plan: UpsertPlan, target: Path, now: datetime) -> UpsertResult:
    """Write a planned upsert and its side effect on the record it supersedes: a proposal beside
    the record it would change; a supersede at once, or — when the record waits for review — once
    a person approves it."""
    vault = unit.vault
    record = plan.record
    verb = {"recurrence": "recurrence", "proposed": "propose"}.get(plan.action, "upsert")
    unit.retitle(f"{verb} {record.kind}:{record.id}")
    if plan.action == "proposed":
        unit.write_beside(proposal_path(target), serialize_record(record))
    else:
        if plan.action != "recurrence" and plan.pending:
            keep_legacy_copies(vault, target, created=plan.action == "created")
        if plan.action == "created" and proposal_path(target).is_file():
            unit.discard(proposal_path(target))  # left by a record of this name that is gone
        unit.write(record, target)
    superseded = False
    waits_for: str | None = None
    if plan.supersedes is not None and plan.supersedes != record.id:
        if plan.pending:
            waits_for = plan.supersedes if _find_older(vault, project, plan.supersedes) is not None else None
        else:
            superseded = mark_superseded(unit, project, plan.supersedes, record.id, format_iso(now))
    fm = record.frontmatter
    return UpsertResult(
        id=record.id,
        kind=record.kind,
        project=project,
        path=vault.relative(target),
        status=record.status,
        created=fm["created"],
        updated=fm["updated"],
        expires_at=iso_or_none(resolve_expires_at(fm, vault.config)),
        action=plan.action,
        occurrences=plan.occurrences if record.kind == "trap" else None,
        superseded=superseded,
        supersedes_missing=plan.supersedes if plan.supersedes and not (superseded or waits_for) else None,
        pending=plan.pending,
        supersedes_pending=waits_for,
    )


def mark_superseded(unit: Mutation, project: str, older_id: str, newer_id: str, now_iso: str) -> bool:
    """Mark the record ``older_id`` superseded by ``newer_id``; False when there is no such record."""
    found = _find_older(unit.vault, project, older_id)
    if found is None:
        return False
    record, path = found
    if record.status == "superseded" and record.frontmatter.get("supersededBy") == newer_id:
        return True  # already done: a rewrite of the newer record must not touch the older one
    record.frontmatter["status"] = "superseded"
    record.frontmatter["supersededBy"] = newer_id
    record.frontmatter["updated"] = now_iso
    unit.write(record, path)
    return True


# --- append ----------------------------------------------------------------------------------


def event_id(kind: str, now: datetime) -> str:
    stamp = format_iso(now).replace(":", "-").replace(".", "-")
    return f"{kind}-{stamp}-{os.getpid()}-{_random.token_hex(4)}"


def append_event(
    vault: Vault,
    project: str,
    *,
    event: str,
    kind: str = "log",
    details: Any = None,
    now: datetime | None = None,
) -> AppendResult:
    """Write one new event record. Events are write-only: an earlier one is never rewritten."""
    now = now or utc_now()
    kind = normalize_kind(kind)
    if not isinstance(event, str) or not event.strip():
        raise InvalidArguments("event must not be empty")
    if "\x00" in event:
        raise InvalidArguments("event holds a NUL character: a Markdown record is text")
    frontmatter: dict[str, Any] = {"title": " ".join(event.split())[:120]}
    if details is not None:
        frontmatter["details"] = details
    # Who appended it (an event is written once, so its writer is its author).
    frontmatter.update(provenance_fields(vault.actor, None))
    assert_no_secrets(event, frontmatter)
    now_iso = format_iso(now)
    with mutation(vault, f"append {kind}") as unit:
        while True:
            record_id = event_id(kind, now)
            path = writable_target(vault, vault.record_path(project, kind, record_id))
            if not path.exists():
                break
        fm = validate_frontmatter(
            {"id": record_id, "kind": kind, "project": project, "created": now_iso, "updated": now_iso, **frontmatter}
        )
        unit.retitle(f"append {kind}:{record_id}")
        unit.write(Record(frontmatter=fm, body=event if event.endswith("\n") else event + "\n", path=path), path)
    return AppendResult(
        id=record_id,
        kind=kind,
        project=project,
        path=vault.relative(path),
        event=event,
        details=details,
        created=now_iso,
    )


# --- forget / restore ------------------------------------------------------------------------


def forget_record(
    vault: Vault,
    project: str,
    *,
    record_id: str | None = None,
    kind: str | None = None,
    slug: str | None = None,
    purge: bool = False,
    now: datetime | None = None,
) -> ForgetResult:
    """Archive a record (file kept, ``status: archived``) or, with ``purge``, unlink it and
    record a tombstone (with the change waiting beside it, if any). Purging a successor makes the
    record it superseded active again. An agent never purges a record a person approved
    (PERSON_REQUIRED): it may archive it, which ``restore`` undoes."""
    now_iso = format_iso(now or utc_now())
    with mutation(vault, "forget") as unit:
        record, path = find_record(vault, project, record_id=record_id, kind=kind, slug=slug)
        unit.retitle(f"forget {record.kind}:{record.id}{' (purge)' if purge else ''}")
        restored: list[str] = []
        actor = vault.actor
        if purge and actor is not None and actor.is_agent and approved_by_person(record.frontmatter):
            raise PersonRequired(
                f"purging {describe(record)} is refused in {actor.where()}: a person approved it, so only a"
                " person destroys it (an agent may archive it: forget without purge, undone by restore)"
            )
        if purge:
            unit.remove([Tombstone(project, record.kind, record.id, path, "forget")])
            if is_pending(record.frontmatter):
                drop_accepted_version(vault, path)
            restored = _revive_predecessor(unit, project, record, now_iso)
            status = "purged"
        else:
            if record.status == "superseded":
                raise InvalidTransition(f"{record.id} is superseded (terminal); use --purge to remove it")
            if record.status != "archived":
                archive_fields(record.frontmatter, now_iso)
                unit.write(record, path)
            else:
                unit.touch(project, [record.kind])
            status = "archived"
    return ForgetResult(id=record.id, kind=record.kind, status=status, purged=purge, restored=restored)


def _revive_predecessor(unit: Mutation, project: str, purged: Record, now_iso: str) -> list[str]:
    """When a record that superseded another is purged, the older one must not point at nothing:
    if the purged record was itself superseded, the older one is linked to that newer successor
    (the chain closes over the gap); otherwise the older one is active again, the latest word."""
    found = _find_older(unit.vault, project, str(purged.frontmatter.get("supersedes") or "") or None)
    if found is None:
        return []
    older, path = found
    if older.status != "superseded" or older.frontmatter.get("supersededBy") != purged.id:
        return []
    newer_id = purged.frontmatter.get("supersededBy") if purged.status == "superseded" else None
    newer = _find_older(unit.vault, project, str(newer_id)) if newer_id else None
    older.frontmatter["updated"] = now_iso
    if newer is not None:
        older.frontmatter["supersededBy"] = newer[0].id
        unit.write(older, path)
        newer[0].frontmatter["supersedes"] = older.id
        unit.write(newer[0], newer[1])
        unit.note(f"{describe(older)} is now superseded by {newer[0].id} ({purged.id} was purged between them)")
        return []
    older.frontmatter["status"] = "active"
    older.frontmatter.pop("supersededBy", None)
    unit.write(older, path)
    unit.note(f"{describe(older)} is active again: its successor {purged.id} was purged")
    return [older.id]


def _successor_exists(vault: Vault, project: str, record: Record) -> bool:
    successor = record.frontmatter.get("supersededBy")
    return successor not in (None, "") and _find_older(vault, project, str(successor)) is not None


def restore_record(
    vault: Vault,
    project: str,
    *,
    record_id: str | None = None,
    kind: str | None = None,
    slug: str | None = None,
    now: datetime | None = None,
) -> UpsertResult:
    """archived → the status it had before it was archived (``active`` when that is not known).
    A superseded record is terminal while its successor exists; once the successor is gone it can
    be restored too (to ``active``)."""
    now_iso = format_iso(now or utc_now())
    with mutation(vault, "restore") as unit:
        record, path = find_record(vault, project, record_id=record_id, kind=kind, slug=slug)
        orphaned = is_terminal(record.status) and not _successor_exists(vault, project, record)
        if record.status != "archived" and not orphaned:
            reason = " (superseded is terminal)" if is_terminal(record.status) else ""
            raise InvalidTransition(
                f"cannot restore {record.id}: status is {record.status}, only archived records can be restored{reason}"
            )
        if record.frontmatter.get("review") == REJECTED:
            actor = vault.actor
            if actor is None or actor.source == "agent":
                raise InvalidTransition(
                    f"{record.id} was rejected in review: only a person brings it back (memosite restore)"
                )
            # A person restoring a rejected record accepts it.
            record.frontmatter.update(review="approved", reviewedBy=actor.name or "a person", reviewedAt=now_iso)
        status = restore_fields(record.frontmatter, now_iso)
        unit.retitle(f"restore {record.kind}:{record.id}")
        unit.write(record, path)
    fm = record.frontmatter
    return UpsertResult(
        id=record.id,
        kind=record.kind,
        project=project,
        path=vault.relative(path),
        status=status,
        created=fm["created"],
        updated=fm["updated"],
        expires_at=iso_or_none(resolve_expires_at(fm, vault.config)),
        action="updated",
        occurrences=trap_occurrences("trap", fm.get("occurrences")) if record.kind == "trap" else None,
    )


# --- list ------------------------------------------------------------------------------------


def list_records(
    vault: Vault,
    project: str,
    *,
    kinds: Sequence[str] | None = None,
    statuses: Sequence[str] | None = None,
    now: datetime | None = None,
) -> list[RecordSummary]:
    now_iso = format_iso(now or utc_now())
    kinds = [normalize_kind(k) for k in kinds] if kinds else None
    statuses = [str(validate_frontmatter({"status": s}, require=False)["status"]) for s in statuses or ()] or None
    with vault.lock():  # pick up edits made outside memosite
        ensure_index(vault)
        refresh_project(vault, project)
    return [
        RecordSummary(
            id=e.id,
            kind=e.kind,
            project=e.project,
            title=e.title,
            status=e.status,
            path=e.path,
            updated=e.updated,
            expires_at=e.expires_at,
            expired=is_expired_iso(e.expires_at, now_iso),
            severity=e.severity,
            tags=e.tags,
            pending=is_pending(e.frontmatter),
        )
        for e in vault.index().entries(project, kinds, statuses)
    ]
