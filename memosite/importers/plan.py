"""Planning and applying an import: which records it creates, updates, leaves or archives.

An imported record carries where it came from — ``source: imported``, ``sourceFormat``,
``sourcePath`` (relative to its repository), ``sourceAnchor`` (the heading or ADR number) — and
``sourceHash``, a fingerprint of what the source said. A second import of an unchanged source
finds every record by its key and the same fingerprint: nothing changes, not even a timestamp (an
edit made to the record in the vault since is kept). An edited source updates its record in place;
a section or file that is gone from a source the import covers archives the record it gave.

The whole plan is checked before anything is written — every record validated and scanned for
secrets — and then applied as one unit of work: one lock, one rebuild of the views, one commit.
``dry_run`` stops after the plan. Records go through the store like any write: an import run by an
agent waits for review where the vault's policy asks for it.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Literal

from memosite.errors import InvalidArguments, MemositeError
from memosite.importers.source import SOURCE_FIELDS, Coverage, ImportedRecord, Skipped, import_key
from memosite.index.entry import IndexEntry
from memosite.mutation import mutation
from memosite.refresh import ensure_index, refresh_project
from memosite.schema import DATE_FIELDS, normalize_date, slugify, validate_slug
from memosite.statuses import is_inactive, is_terminal
from memosite.store import forget_record, slug_taken, unique_slug_candidates, upsert_record
from memosite.text import counted
from memosite.vault import Vault
from memosite.writeplan import normalize_upsert

Action = Literal["create", "update", "unchanged", "kept", "archive"]
_DONE: dict[str, str] = {"create": "created", "update": "updated", "archive": "archived"}


@dataclass
class PlannedRecord:
    action: Action
    kind: str
    slug: str
    title: str
    source_path: str
    anchor: str
    record: ImportedRecord | None = None  # None: an archive of a record whose source is gone
    frontmatter: dict[str, Any] = field(default_factory=dict)
    note: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "action": self.action,
            "kind": self.kind,
            "id": self.slug,
            "title": self.title,
            "sourcePath": self.source_path,
            "sourceAnchor": self.anchor,
            "note": self.note,
        }

    def line(self, *, done: bool = False) -> str:
        """The plan's line for this record: what it would do, or once ``done``, what it did."""
        where = f"{self.source_path}{f' › {self.anchor}' if self.anchor else ''}"
        note = f" ({self.note})" if self.note else ""
        action = _DONE.get(self.action, self.action) if done else self.action
        return f"{action:9} {self.kind} {self.slug}  ← {where}{note}"


@dataclass
class ImportPlan:
    format: str
    path: str
    project: str
    records: list[PlannedRecord] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    dry_run: bool = True

    def count(self, action: Action) -> int:
        return sum(1 for planned in self.records if planned.action == action)

    @property
    def changes(self) -> bool:
        return any(planned.action in ("create", "update", "archive") for planned in self.records)

    def to_json(self) -> dict[str, Any]:
        return {
            "format": self.format,
            "path": self.path,
            "project": self.project,
            "dryRun": self.dry_run,
            "created": self.count("create"),
            "updated": self.count("update"),
            "unchanged": self.count("unchanged"),
            "archived": self.count("archive"),
            "records": [planned.to_json() for planned in self.records],
            "skipped": [item.to_json() for item in self.skipped],
        }

    def summary(self) -> str:
        verb = "would import" if self.dry_run else "imported"
        named: tuple[tuple[Action, str], ...] = (("create", "new"), ("update", "updated"), ("unchanged", "unchanged"))
        counts = ", ".join(f"{self.count(action)} {word}" for action, word in named)
        archived = self.count("archive")
        extra = f", {archived} archived (gone from the source)" if archived else ""
        skipped = f"; {counted(len(self.skipped), 'item')} skipped" if self.skipped else ""
        return f"{verb} {self.format} from {self.path} into {self.project}: {counts}{extra}{skipped}"


def fingerprint(record: ImportedRecord) -> str:
    data = json.dumps(
        [
            record.source_path,
            record.kind,
            record.title,
            record.body,
            record.fields,
            record.supersedes,
            record.superseded_by,
        ],
        sort_keys=True,
        ensure_ascii=False,
        default=str,
    )
    return hashlib.sha256(data.encode("utf-8")).hexdigest()[:16]


def key_of(frontmatter: dict[str, Any]) -> str | None:
    fmt, path = frontmatter.get("sourceFormat"), frontmatter.get("sourcePath")
    if not isinstance(fmt, str) or not isinstance(path, str):
        return None
    return import_key(fmt, path, str(frontmatter.get("sourceAnchor") or ""))


def existing_imports(vault: Vault | None, project: str) -> dict[str, IndexEntry]:
    """The project's imported records by key (none when the vault does not exist yet)."""
    if vault is None:
        return {}
    with vault.lock():
        ensure_index(vault)
        refresh_project(vault, project)
    found: dict[str, IndexEntry] = {}
    for entry in vault.index().entries(project):
        key = key_of(entry.frontmatter)
        # An import run by an agent is the agent's write (source agent): its key still finds it.
        if key is not None and entry.frontmatter.get("source") in ("imported", "agent"):
            found.setdefault(key, entry)
    return found


def _clean_fields(fields: dict[str, Any]) -> dict[str, Any]:
    """Dates a source wrote that are no dates are left out (the record gets the import's time)."""
    cleaned = dict(fields)
    for name in DATE_FIELDS:
        if name in cleaned:
            try:
                normalize_date(cleaned[name], end_of_day=name == "expires_at")
            except (ValueError, OverflowError, TypeError):
                cleaned.pop(name)
    return cleaned


def plan_import(
    vault: Vault | None,
    project: str,
    fmt: str,
    shown_path: str,
    records: list[ImportedRecord],
    skipped: list[Skipped],
    covered: Coverage,
    *,
    formats: list[str] | None = None,
    taken: set[str] | None = None,
) -> ImportPlan:
    """What importing ``records`` into ``project`` would do (see the module docstring)."""
    plan = ImportPlan(fmt, shown_path, project, skipped=list(skipped))
    existing = existing_imports(vault, project)
    used = set(taken or ())
    by_key: dict[str, ImportedRecord] = {}
    for record in records:
        if record.key in by_key:
            plan.skipped.append(Skipped(record.source_path, f"{record.anchor or 'the file'} appears twice: kept once"))
            continue
        by_key[record.key] = record
    slugs: dict[str, str] = {}
    for key in by_key:
        entry = existing.get(key)
        if entry is not None:
            slugs[key] = entry.id
            used.add(entry.id)
    for key, record in by_key.items():
        if key not in slugs:
            slugs[key] = _free_slug(vault, project, record, used)
    for key, record in by_key.items():
        frontmatter = _frontmatter(record, by_key, slugs, existing)
        if vault is not None and vault.actor is not None and vault.actor.is_agent:
            # An agent cannot claim a source: what it imports is its own proposal (review applies).
            frontmatter.pop("source", None)
        entry = existing.get(key)
        slug = slugs[key]
        if entry is None:
            plan.records.append(_planned("create", record.kind, slug, record, frontmatter))
        elif is_terminal(entry.status) and record.fields.get("status") != "active":
            plan.records.append(
                _planned("kept", entry.kind, slug, record, frontmatter, "superseded records are final")
                if entry.frontmatter.get("sourceHash") != frontmatter["sourceHash"]
                else _planned("unchanged", entry.kind, slug, record, frontmatter)
            )
        elif entry.frontmatter.get("sourceHash") == frontmatter["sourceHash"]:
            plan.records.append(_planned("unchanged", entry.kind, slug, record, frontmatter))
        else:
            plan.records.append(_planned("update", entry.kind, slug, record, frontmatter))
    for key, entry in existing.items():
        source_path = str(entry.frontmatter.get("sourcePath"))
        in_scope = entry.frontmatter.get("sourceFormat") in (formats or [fmt]) and covered.covers(source_path)
        if in_scope and key not in by_key and not is_inactive(entry.status):
            plan.records.append(
                PlannedRecord(
                    "archive",
                    entry.kind,
                    entry.id,
                    entry.title,
                    source_path,
                    str(entry.frontmatter.get("sourceAnchor") or ""),
                    note="gone from the source",
                )
            )
    _check(plan)
    return plan


def _planned(
    action: Action,
    kind: str,
    slug: str,
    record: ImportedRecord,
    frontmatter: dict[str, Any],
    note: str = "",
) -> PlannedRecord:
    return PlannedRecord(action, kind, slug, record.title, record.source_path, record.anchor, record, frontmatter, note)


def _free_slug(vault: Vault | None, project: str, record: ImportedRecord, used: set[str]) -> str:
    base = slugify(record.slug_hint or record.title) or record.kind
    try:
        validate_slug(base)
    except InvalidArguments:
        base = record.kind
    try:
        for candidate in unique_slug_candidates(base):
            if candidate in used or (vault is not None and slug_taken(vault, project, record.kind, candidate)):
                continue
            used.add(candidate)
            return candidate
    except InvalidArguments:
        pass
    raise InvalidArguments(f"no free id left for {record.source_path} › {record.anchor}")


def _frontmatter(
    record: ImportedRecord,
    by_key: dict[str, ImportedRecord],
    slugs: dict[str, str],
    existing: dict[str, IndexEntry],
) -> dict[str, Any]:
    fields = _clean_fields(record.fields)
    fields["title"] = record.title
    fields["source"] = "imported"

    def slug_of(anchor: str | None) -> str | None:
        if anchor is None:
            return None
        key = import_key(record.format, record.source_path, anchor)
        if key in slugs:
            return slugs[key]
        entry = existing.get(key)
        return entry.id if entry is not None else None

    older = slug_of(record.supersedes)
    if older is not None:
        fields["supersedes"] = older
    newer = slug_of(record.superseded_by)
    if newer is not None:
        fields["status"] = "superseded"
        fields["supersededBy"] = newer
    fields.update(
        {
            "sourceFormat": record.format,
            "sourcePath": record.source_path,
            "sourceAnchor": record.anchor or None,
            "sourceHash": fingerprint(record),
        }
    )
    return {key: value for key, value in fields.items() if value is not None}


def _check(plan: ImportPlan) -> None:
    """Every record of the plan validated and scanned for secrets before anything is written."""
    for planned in plan.records:
        if planned.action not in ("create", "update") or planned.record is None:
            continue
        try:
            normalize_upsert(
                kind=planned.kind, body=planned.record.body, slug=planned.slug, frontmatter=planned.frontmatter
            )
        except MemositeError as exc:
            where = f"{planned.source_path}{f' › {planned.anchor}' if planned.anchor else ''}"
            raise type(exc)(f"{where}: {exc.message}; nothing was imported", details=exc.details) from exc


def apply_import(vault: Vault, plan: ImportPlan) -> ImportPlan:
    """Write a plan: one unit of work, the records a newer one supersedes first (so marking them
    superseded finds them already so and touches nothing)."""
    plan.dry_run = False
    if not plan.changes:
        return plan
    named: tuple[tuple[Action, str], ...] = (("create", "created"), ("update", "updated"), ("archive", "archived"))
    message = f"import {plan.format} from {plan.path}: " + ", ".join(
        f"{plan.count(action)} {word}" for action, word in named
    )
    order = sorted(plan.records, key=lambda p: 0 if p.frontmatter.get("status") == "superseded" else 1)
    with mutation(vault, message) as unit:
        for planned in order:
            if planned.action in ("create", "update") and planned.record is not None:
                upsert_record(
                    vault,
                    plan.project,
                    kind=planned.kind,
                    body=planned.record.body,
                    slug=planned.slug,
                    frontmatter=planned.frontmatter,
                    allow_duplicate=True,
                    # What a source says it supersedes may never have been imported (an ADR
                    # outside the folder): that is the source's word, not a typo of the caller's.
                    supersedes_missing_ok=True,
                )
            elif planned.action == "archive":
                actor = vault.actor
                if actor is not None and actor.source == "agent":
                    # An agent proposes; retiring memory a source no longer holds is a person's call.
                    planned.action, planned.note = "kept", "gone from the source: a person archives it"
                    continue
                forget_record(vault, plan.project, record_id=planned.slug, kind=planned.kind)
        unit.retitle(message)
    return plan


__all__ = ["SOURCE_FIELDS", "ImportPlan", "PlannedRecord", "apply_import", "fingerprint", "plan_import"]
