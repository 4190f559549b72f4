"""Review before agent memory counts: what waits for a person, its diff, approval and rejection.

Two things wait. A record an agent wrote that is new, or that was waiting already, is written in
place as ``review: pending``: ``config.json`` ``review.required`` names the kinds this applies to,
and a new record that supersedes one a person approved waits whatever its kind
(:mod:`memosite.writeplan`). An agent's change of a record that serves — one a person approved, or
of a reviewed kind — is a proposal beside it (``<slug>.proposed.md``, :mod:`memosite.proposals`):
the record itself stays as it was, for search, ``get``, the brief, the views and the site, until a
person decides. Approving puts the change in place (and supersedes what it names); rejecting drops
it, leaving the approved record byte for byte as it was, or archives a new record with the reason.
Only a person decides (an agent is refused, PERSON_REQUIRED); each approval or rejection is one
unit of work whose commit names the reviewer and, for a rejection, the reason.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from memosite.archive import archive_fields
from memosite.errors import InvalidArguments, InvalidRecord, InvalidTransition, RecordNotFound
from memosite.lookup import locate_record, with_suggestions
from memosite.mutation import Mutation, mutation
from memosite.proposals import (
    drop_accepted_version,
    find_proposal,
    iter_proposals,
    parse_proposal,
    proposal_path,
    read_accepted,
    record_path_of,
)
from memosite.recordfile import path_defaults, record_label, record_title
from memosite.reviewstate import PENDING
from memosite.schema import Record, format_iso, parse_record, utc_now
from memosite.statuses import is_terminal
from memosite.store import mark_superseded
from memosite.vault import Vault


@dataclass
class PendingRecord:
    id: str
    kind: str
    project: str
    path: str
    title: str
    source: str | None
    author: str | None
    updated: str | None
    replaces: bool  # True: it changes a record that serves, ``diff`` is against that record
    diff: str
    edited_by: str | None = None  # who last changed only its fields, when not its author
    proposal: str | None = None  # the file the change waits in, when it is a proposal
    supersedes: str | None = None  # the record approving it supersedes

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind,
            "project": self.project,
            "path": self.path,
            "title": self.title,
            "source": self.source,
            "author": self.author,
            "editedBy": self.edited_by,
            "updated": self.updated,
            "replaces": self.replaces,
            "diff": self.diff,
            "proposal": self.proposal,
            "supersedes": self.supersedes,
        }


def list_pending(vault: Vault, project: str) -> list[PendingRecord]:
    """What waits for review, newest first: pending records, each with its diff against the
    accepted version an older memosite kept (a new record's diff is its whole text), and proposals,
    each with its diff against the record it would change."""
    from memosite.refresh import ensure_index

    ensure_index(vault)
    pending = []
    for entry in vault.index().pending_review(project):
        path = vault.root / entry.path
        try:
            current = path.read_text(encoding="utf-8")
        except OSError:
            continue
        before = read_accepted(vault, path) or ""
        fm = entry.frontmatter
        pending.append(
            PendingRecord(
                id=entry.id,
                kind=entry.kind,
                project=project,
                path=entry.path,
                title=entry.title,
                source=fm.get("source"),
                author=fm.get("author"),
                updated=entry.updated,
                replaces=bool(before),
                diff=_diff(before, current, entry.path, "(accepted)", "(pending)"),
                edited_by=fm.get("editedBy"),
                supersedes=_supersedes(fm),
            )
        )
    for proposal in iter_proposals(vault, project):
        found = _proposed(vault, project, proposal)
        if found is not None:
            pending.append(found)
    pending.sort(key=lambda item: (item.updated or "", item.path), reverse=True)
    return pending


def _proposed(vault: Vault, project: str, proposal: Path) -> PendingRecord | None:
    target = record_path_of(proposal)
    relative = vault.relative(target)
    try:
        text = proposal.read_text(encoding="utf-8")
        record = parse_proposal(proposal)
    except (OSError, UnicodeDecodeError, InvalidRecord):
        return None
    try:
        before = target.read_text(encoding="utf-8")
    except OSError:
        before = ""  # the record is gone (purged elsewhere): approving the change creates it
    fm = record.frontmatter
    return PendingRecord(
        id=record.id,
        kind=record.kind,
        project=project,
        path=relative,
        title=record_title(record),
        source=fm.get("source"),
        author=fm.get("author"),
        updated=str(fm.get("updated")) if fm.get("updated") else None,
        replaces=bool(before),
        diff=_diff(before, text, relative, "(approved)", "(proposed)"),
        edited_by=fm.get("editedBy"),
        proposal=vault.relative(proposal),
        supersedes=_supersedes(fm),
    )


def _diff(before: str, after: str, path: str, was: str, becomes: str) -> str:
    return "".join(
        difflib.unified_diff(
            before.splitlines(keepends=True),
            after.splitlines(keepends=True),
            fromfile=f"{path} {was}" if before else "/dev/null",
            tofile=f"{path} {becomes}",
        )
    )


def _supersedes(frontmatter: dict[str, Any]) -> str | None:
    older = frontmatter.get("supersedes")
    return str(older) if older not in (None, "") else None


@dataclass
class ReviewResult:
    decision: str  # "approved" or "rejected"
    reviewer: str
    records: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"decision": self.decision, "reviewer": self.reviewer, "records": self.records}


def _reviewer(vault: Vault, action: str) -> str:
    """Who decides: the person acting (an agent is refused, PERSON_REQUIRED)."""
    actor = vault.actor
    if actor is not None:
        actor.require_person(action)
    if actor is None or not actor.name:
        return "a person"
    return f"{actor.name} <{actor.email}>" if actor.email else actor.name


@dataclass
class _Waiting:
    """What a review decides on: the pending record, where it goes, and the proposal file it
    waits in (None: it waits in place)."""

    record: Record
    path: Path
    proposal: Path | None


def _waiting(vault: Vault, project: str, record_id: str) -> _Waiting:
    try:
        record, path = locate_record(vault, project, record_id=record_id)
    except RecordNotFound as exc:
        orphan = find_proposal(vault, project, record_id)
        if orphan is None:
            raise with_suggestions(vault, project, exc, record_id=record_id) from None
        return _Waiting(parse_proposal(orphan), record_path_of(orphan), orphan)
    proposal = proposal_path(path)
    if proposal.is_file() and not proposal.is_symlink():
        return _Waiting(parse_proposal(proposal), path, proposal)
    state = record.frontmatter.get("review")
    if state != PENDING:
        named = f"{project}/{record.kind}/{path.stem} is not waiting for review"
        if state in ("approved", "rejected"):
            by = record.frontmatter.get("reviewedBy")
            raise InvalidTransition(f"{named}: it was {state}{f' by {by}' if by else ''}")
        raise InvalidTransition(named)
    return _Waiting(record, path, None)


def approve_records(vault: Vault, project: str, ids: list[str], *, now: datetime | None = None) -> ReviewResult:
    """Accept what waits for review: a pending record is approved in place, a proposal replaces
    the record it changes; a supersede the record names happens now. Each is one unit of work, its
    commit naming the reviewer."""
    if not ids:
        raise InvalidArguments("name the records to approve")
    reviewer = _reviewer(vault, "review approve")
    result = ReviewResult("approved", reviewer)
    stamp = format_iso(now or utc_now())
    for record_id in ids:
        with mutation(vault, f"approve {record_id} (reviewed by {reviewer})") as unit:
            waiting = _waiting(vault, project, record_id)
            record = waiting.record
            record.frontmatter.update(review="approved", reviewedBy=reviewer, reviewedAt=stamp)
            unit.retitle(f"approve {record.kind}:{record.id} (reviewed by {reviewer})")
            unit.write(record, waiting.path)
            if waiting.proposal is not None:
                unit.discard(waiting.proposal)
            drop_accepted_version(vault, waiting.path)
            superseded = _supersede_now(unit, project, record, stamp)
        entry: dict[str, Any] = {"id": record.id, "kind": record.kind, "review": "approved"}
        if superseded:
            entry["superseded"] = superseded
        result.records.append(entry)
    return result


def _supersede_now(unit: Mutation, project: str, record: Record, stamp: str) -> str | None:
    """The supersede an approved record named waited for its approval: it happens now (unless the
    older record is superseded already). Returns the id superseded."""
    older = _supersedes(record.frontmatter)
    if older is None or older == record.id:
        return None
    try:
        found, _ = locate_record(unit.vault, project, record_id=older)
    except (RecordNotFound, InvalidArguments, InvalidRecord):
        return None
    if is_terminal(found.status):
        return None
    return older if mark_superseded(unit, project, older, record.id, stamp) else None


def reject_records(
    vault: Vault, project: str, ids: list[str], *, reason: str, now: datetime | None = None
) -> ReviewResult:
    """Refuse what waits for review: a proposal is dropped and the record it would change stays
    byte for byte as it was; a change an older memosite wrote in place gives back the accepted
    version it kept, byte for byte; a new record is archived with the reason (and supersedes
    nothing). Each is one unit of work whose commit names the reviewer and the reason."""
    if not ids:
        raise InvalidArguments("name the records to reject")
    if not isinstance(reason, str) or not reason.strip():
        raise InvalidArguments("a rejection needs a reason (--reason TEXT)")
    reviewer = _reviewer(vault, "review reject")
    result = ReviewResult("rejected", reviewer)
    stamp = format_iso(now or utc_now())
    said = " ".join(reason.split())
    for record_id in ids:
        with mutation(vault, f"reject {record_id}") as unit:
            waiting = _waiting(vault, project, record_id)
            record, path = waiting.record, waiting.path
            unit.retitle(f"reject {record.kind}:{record.id} (reviewed by {reviewer}): {said}")
            accepted = read_accepted(vault, path) if waiting.proposal is None else None
            if waiting.proposal is not None:
                unit.discard(waiting.proposal)
                outcome = "dropped the proposed change; the approved version is unchanged"
            elif accepted is not None:
                kept = parse_record(accepted, path, defaults=path_defaults(path), where=record_label(path))
                unit.write(kept, path, text=accepted)
                drop_accepted_version(vault, path)
                outcome = "restored the accepted version"
            else:
                archive_fields(record.frontmatter, stamp, reason="rejected")
                record.frontmatter.update(
                    review="rejected",
                    reviewedBy=reviewer,
                    reviewedAt=stamp,
                    reviewReason=said,
                )
                unit.write(record, path)
                outcome = "archived"
        result.records.append({"id": record.id, "kind": record.kind, "title": record_title(record), "outcome": outcome})
    return result


__all__ = [
    "PendingRecord",
    "ReviewResult",
    "approve_records",
    "list_pending",
    "reject_records",
]
