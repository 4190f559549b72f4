"""Review before agent memory counts: pending records, their diffs, approval and rejection.

``config.json`` ``review.required`` names the kinds whose records an agent writes (over MCP, or
with ``--source agent``) start as ``review: pending`` (see :mod:`memosite.writeplan`). When such a
write replaces a version a person already accepted, that version is kept beside the record as
``<slug>.accepted.md`` — vault Markdown, committed and synced with the record, never listed,
indexed, searched or published (:func:`memosite.vault.is_record_name`) — so the review shows what
changed on every machine and a rejection can put it back. Approval and rejection remove it. Older
versions kept it under ``.memosite/review-base/``, which is still read when no sidecar is there.
Only the command line approves; each approval or rejection is one unit of work whose commit
names the reviewer.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memosite.errors import InvalidArguments, InvalidTransition
from memosite.indexing import record_title
from memosite.lookup import locate_record, writable_target
from memosite.mutation import mutation
from memosite.provenance import REJECTED_CHANGE_FIELDS
from memosite.schema import format_iso, parse_record, utc_now
from memosite.vault import ACCEPTED_SUFFIX, Vault, atomic_write_bytes

if TYPE_CHECKING:
    from memosite.writeplan import UpsertPlan

LEGACY_BASE_DIR = "review-base"  # where memosite kept accepted versions before the sidecar


def accepted_path(record_path: Path) -> Path:
    """Where the accepted version of a record under review is kept: ``<slug>.accepted.md``."""
    return record_path.with_name(record_path.stem + ACCEPTED_SUFFIX)


def legacy_accepted_path(vault: Vault, record_path: Path) -> Path:
    return vault.internal_path(LEGACY_BASE_DIR, *Path(vault.relative(record_path)).parts)


def read_accepted(vault: Vault, record_path: Path) -> str | None:
    """The accepted version a pending record replaces, or None (a new record): the sidecar, else a
    copy an older memosite kept under ``.memosite/review-base/``."""
    for kept in (accepted_path(record_path), legacy_accepted_path(vault, record_path)):
        try:
            return kept.read_text(encoding="utf-8")
        except (FileNotFoundError, NotADirectoryError):
            continue
    return None


def keep_accepted_version(vault: Vault, record_path: Path, plan: UpsertPlan) -> None:
    """Before a pending write lands at ``record_path``: when it replaces an accepted version, keep
    that version (the file as it is now) beside the record; when it creates the record, drop a copy
    a removed namesake left; when it follows another pending write, keep what was kept (moving an
    older memosite's ``.memosite/review-base/`` copy beside the record, where git keeps it)."""
    sidecar = writable_target(vault, accepted_path(record_path))
    legacy = legacy_accepted_path(vault, record_path)
    if plan.review_base is not None and record_path.is_file():
        atomic_write_bytes(sidecar, record_path.read_bytes())
        legacy.unlink(missing_ok=True)
    elif plan.action == "created":
        drop_accepted_version(vault, record_path)
    elif not sidecar.exists() and legacy.is_file():
        atomic_write_bytes(sidecar, legacy.read_bytes())
        legacy.unlink()


def drop_accepted_version(vault: Vault, record_path: Path) -> None:
    """The review is over (or the record is gone): the kept accepted version goes."""
    writable_target(vault, accepted_path(record_path)).unlink(missing_ok=True)
    legacy_accepted_path(vault, record_path).unlink(missing_ok=True)


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
    replaces: bool  # True: an accepted version exists, ``diff`` is against it
    diff: str
    edited_by: str | None = None  # who last changed only its fields, when not its author

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
        }


def list_pending(vault: Vault, project: str) -> list[PendingRecord]:
    """Pending records, newest first, each with its diff against the version it replaces (a new
    record's diff is its whole text)."""
    from memosite.indexing import ensure_index

    ensure_index(vault)
    pending = []
    for entry in vault.index().pending_review(project):
        path = vault.root / entry.path
        try:
            current = path.read_text(encoding="utf-8")
        except OSError:
            continue
        before = read_accepted(vault, path) or ""
        diff = "".join(
            difflib.unified_diff(
                before.splitlines(keepends=True),
                current.splitlines(keepends=True),
                fromfile=f"{entry.path} (accepted)" if before else "/dev/null",
                tofile=f"{entry.path} (pending)",
            )
        )
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
                diff=diff,
                edited_by=fm.get("editedBy"),
            )
        )
    return pending


@dataclass
class ReviewResult:
    decision: str  # "approved" or "rejected"
    reviewer: str
    records: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"decision": self.decision, "reviewer": self.reviewer, "records": self.records}


def _reviewer(vault: Vault) -> str:
    actor = vault.actor
    if actor is None or not actor.name:
        return "a person"
    return f"{actor.name} <{actor.email}>" if actor.email else actor.name


def _pending_record(vault: Vault, project: str, record_id: str) -> tuple[Any, Path]:
    record, path = locate_record(vault, project, record_id=record_id)
    state = record.frontmatter.get("review")
    if state != "pending":
        named = f"{project}/{record.kind}/{path.stem} is not waiting for review"
        if state in ("approved", "rejected"):
            by = record.frontmatter.get("reviewedBy")
            raise InvalidTransition(f"{named}: it was {state}{f' by {by}' if by else ''}")
        raise InvalidTransition(named)
    return record, path


def approve_records(vault: Vault, project: str, ids: list[str], *, now: datetime | None = None) -> ReviewResult:
    """Accept pending records: each one unit of work, its commit naming the reviewer."""
    if not ids:
        raise InvalidArguments("name the records to approve")
    reviewer = _reviewer(vault)
    result = ReviewResult("approved", reviewer)
    stamp = format_iso(now or utc_now())
    for record_id in ids:
        with mutation(vault, f"approve {record_id} (reviewed by {reviewer})") as unit:
            record, path = _pending_record(vault, project, record_id)
            record.frontmatter.update(review="approved", reviewedBy=reviewer, reviewedAt=stamp)
            unit.retitle(f"approve {record.kind}:{record.id} (reviewed by {reviewer})")
            unit.write(record, path)
            drop_accepted_version(vault, path)
        result.records.append({"id": record.id, "kind": record.kind, "review": "approved"})
    return result


def reject_records(
    vault: Vault, project: str, ids: list[str], *, reason: str, now: datetime | None = None
) -> ReviewResult:
    """Refuse pending records: a new one is archived with the reason; a change to an accepted
    record gives the accepted version back. Each is one unit of work naming the reviewer."""
    if not ids:
        raise InvalidArguments("name the records to reject")
    if not isinstance(reason, str) or not reason.strip():
        raise InvalidArguments("a rejection needs a reason (--reason TEXT)")
    reviewer = _reviewer(vault)
    result = ReviewResult("rejected", reviewer)
    stamp = format_iso(now or utc_now())
    for record_id in ids:
        with mutation(vault, f"reject {record_id}") as unit:
            record, path = _pending_record(vault, project, record_id)
            said = " ".join(reason.split())
            unit.retitle(f"reject {record.kind}:{record.id} (reviewed by {reviewer}): {said}")
            accepted = read_accepted(vault, path)
            if accepted is not None:
                # The reason stays with the record, not only in a commit message (vault git may be off).
                restored = parse_record(accepted, path)
                restored.frontmatter.update(zip(REJECTED_CHANGE_FIELDS, (said, reviewer, stamp), strict=True))
                unit.write(restored, path)
                drop_accepted_version(vault, path)
                outcome = "restored the accepted version"
            else:
                record.frontmatter.update(
                    status="archived",
                    archivedReason="rejected",
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
    "accepted_path",
    "approve_records",
    "drop_accepted_version",
    "keep_accepted_version",
    "list_pending",
    "read_accepted",
    "reject_records",
]
