"""Review before agent memory counts: pending records, their diffs, approval and rejection.

``config.json`` ``review.required`` names the kinds whose records an agent writes (over MCP, or
with ``--source agent``) start as ``review: pending`` (see :mod:`memosite.writeplan`). When such a
write replaces a version a person already accepted, that version is kept under
``.memosite/review-base/`` so the review can show what changed and a rejection can put it back.
Only the command line approves; each approval or rejection is one unit of work whose commit
names the reviewer.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from memosite.errors import InvalidArguments, InvalidTransition
from memosite.indexing import record_title
from memosite.lookup import locate_record
from memosite.mutation import mutation
from memosite.schema import format_iso, parse_record, utc_now
from memosite.vault import Vault, atomic_write_bytes

REVIEW_BASE_DIR = "review-base"


def review_base_path(vault: Vault, record_path: Path) -> Path:
    return vault.internal_path(REVIEW_BASE_DIR, *Path(vault.relative(record_path)).parts)


def keep_review_base(vault: Vault, record_path: Path, base: Any) -> None:
    """Keep the file as it is now — the accepted version a pending write replaces — unless an
    earlier pending write already kept it."""
    kept = review_base_path(vault, record_path)
    if kept.exists() or not record_path.is_file():
        return
    atomic_write_bytes(kept, record_path.read_bytes())


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

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind,
            "project": self.project,
            "path": self.path,
            "title": self.title,
            "source": self.source,
            "author": self.author,
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
        base = review_base_path(vault, path)
        before = base.read_text(encoding="utf-8") if base.is_file() else ""
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
    if record.frontmatter.get("review") != "pending":
        state = record.frontmatter.get("review") or "not under review"
        raise InvalidTransition(f"{project}/{record.kind}/{path.stem} is not pending review ({state})")
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
            review_base_path(vault, path).unlink(missing_ok=True)
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
            base = review_base_path(vault, path)
            unit.retitle(f"reject {record.kind}:{record.id} (reviewed by {reviewer}): {' '.join(reason.split())}")
            if base.is_file():
                text = base.read_text(encoding="utf-8")
                unit.write(parse_record(text, path), path, text=text)
                base.unlink()
                outcome = "restored the accepted version"
            else:
                record.frontmatter.update(
                    status="archived",
                    archivedReason="rejected",
                    review="rejected",
                    reviewedBy=reviewer,
                    reviewedAt=stamp,
                    reviewReason=" ".join(reason.split()),
                )
                unit.write(record, path)
                outcome = "archived"
        result.records.append({"id": record.id, "kind": record.kind, "title": record_title(record), "outcome": outcome})
    return result


__all__ = [
    "PendingRecord",
    "ReviewResult",
    "approve_records",
    "keep_review_base",
    "list_pending",
    "reject_records",
    "review_base_path",
]
