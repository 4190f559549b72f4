"""The write engine: upsert, append, forget, restore, and listing (``get`` lives in :mod:`lookup`).

Every mutation validates, scans for secrets, then — under the vault lock — writes the Markdown file
atomically, updates the index, rewrites the affected views and requests a vault commit.
"""

from __future__ import annotations

import os
import secrets as _random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from memosite import gitsync
from memosite.errors import InvalidArguments, InvalidRecord, InvalidTransition, RecordNotFound
from memosite.expiration import (
    compute_expires_at,
    iso_or_none,
    parse_expires_at,
    resolve_expires_at,
    validate_ttl_input,
)
from memosite.index import IndexEntry
from memosite.indexing import (
    ensure_index,
    index_record,
    read_record,
    rebuild_views,
    refresh_project,
    remove_record_files,
)
from memosite.lookup import locate_record, writable_target
from memosite.recurrence import classify_trap, is_recurrence, pattern_key
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
from memosite.vault import Tombstone, Vault, atomic_write_text

_EXCLUDED_PATH_PARTS = (".git", "node_modules", "__pycache__", ".venv", ".memosite")


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
    recurrence: bool = False
    superseded: bool = False

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class AppendResult:
    id: str
    kind: str
    project: str
    path: str

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class ForgetResult:
    id: str
    kind: str
    status: str  # "archived" or "purged"
    purged: bool

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

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


# --- helpers ---------------------------------------------------------------------------------


def sanitize_paths(values: Sequence[Any]) -> list[str]:
    """Clean path patterns: relative, forward slashes, no captures of VCS/dependency/vault dirs."""
    cleaned: list[str] = []
    for value in values:
        if not isinstance(value, str) or "\x00" in value:
            raise InvalidArguments(f"invalid path {value!r}")
        path = value.strip().replace("\\", "/")
        while path.startswith("./"):
            path = path[2:]
        if not path:
            continue
        parts = [part for part in path.split("/") if part]
        if any(part in _EXCLUDED_PATH_PARTS for part in parts):
            continue
        cleaned.append(path)
    return list(dict.fromkeys(cleaned))


def _epoch_ms(now: datetime) -> int:
    return int(now.timestamp() * 1000)


def derive_slug(
    kind: str,
    frontmatter: Mapping[str, Any],
    slug: str | None,
    now: datetime,
) -> str:
    """explicit slug → frontmatter id → slugify(title) → ``<kind>-<ms>``.

    prompt and session records follow their own rule after the id instead of the title:
    ``prompt-<sessionId>-t<turn>`` (else ``prompt-<ms>-<6 hex>``) and ``session-<sessionId>``
    (else ``session-<ms>``), so their names say where they come from.
    """
    if slug:
        return validate_slug(slug)
    if frontmatter.get("id"):
        return validate_slug(str(frontmatter["id"]), "id")
    session_id = frontmatter.get("sessionId")
    if kind == "prompt":
        if session_id and frontmatter.get("turn") is not None:
            return validate_slug(f"prompt-{slugify(str(session_id))}-t{frontmatter['turn']}")
        return f"prompt-{_epoch_ms(now)}-{_random.token_hex(3)}"
    if kind == "session":
        return validate_slug(f"session-{slugify(str(session_id))}") if session_id else f"session-{_epoch_ms(now)}"
    title = frontmatter.get("title")
    if isinstance(title, str) and slugify(title):
        return slugify(title)
    return f"{kind}-{_epoch_ms(now)}"


def _write(vault: Vault, path: Path, record: Record) -> None:
    atomic_write_text(path, serialize_record(record))


def _read_existing(path: Path) -> Record | None:
    if not path.exists():
        return None
    try:
        return read_record(path)
    except InvalidRecord as exc:
        # Never overwrite a file a person can still fix: refuse instead of losing it.
        raise InvalidRecord(f"{exc.message}; fix or remove the file before writing it again") from exc


# --- upsert ----------------------------------------------------------------------------------


def upsert_record(
    vault: Vault,
    project: str,
    *,
    kind: str,
    body: str,
    slug: str | None = None,
    frontmatter: Mapping[str, Any] | None = None,
    path: str | None = None,
    allow_duplicate: bool = False,
    now: datetime | None = None,
) -> UpsertResult:
    """Create or update one record (see the module docstring for the side effects)."""
    now = now or utc_now()
    now_iso = format_iso(now)
    kind = normalize_kind(kind)
    if not isinstance(body, str) or not body.strip():
        raise InvalidArguments("body must not be empty")
    if frontmatter is not None and not isinstance(frontmatter, Mapping):
        raise InvalidArguments("frontmatter must be an object")
    incoming: dict[str, Any] = dict(frontmatter or {})
    incoming.pop("kind", None)
    if "ttl" in incoming and incoming["ttl"] not in (None, ""):
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
        patterns = incoming.get("pathPatterns") or []
        if isinstance(patterns, str):
            patterns = [patterns]
        incoming["pathPatterns"] = sanitize_paths([*patterns, *folded])
    if folded or "linkedPaths" in incoming:
        linked = incoming.get("linkedPaths") or []
        if isinstance(linked, str):
            linked = [linked]
        incoming["linkedPaths"] = sanitize_paths([*linked, *folded])
    slug = derive_slug(kind, incoming, slug, now)
    incoming.setdefault("id", slug)
    if incoming.get("supersedes") not in (None, ""):
        older_slug = validate_slug(str(incoming["supersedes"]), "supersedes id")
        if older_slug == str(incoming["id"]):
            raise InvalidArguments(f"{older_slug} cannot supersede itself")
    validate_frontmatter({**incoming, "kind": kind, "project": project}, require=False)
    assert_no_secrets(body, incoming)

    with vault.lock():
        ensure_index(vault)
        target = writable_target(vault, vault.record_path(project, kind, slug))
        existing = _read_existing(target)
        if existing is not None and existing.status == "superseded":
            successor = existing.frontmatter.get("supersededBy")
            raise InvalidTransition(
                f"{existing.id} is superseded{f' by {successor}' if successor else ''} (terminal):"
                " write the successor, or forget --purge this one"
            )
        if existing is None and kind == "trap" and not incoming.get("supersedes") and not allow_duplicate:
            repeat = _find_recurrence(vault, project, body, incoming.get("pathPatterns") or [])
            if repeat is not None:
                return _bump_recurrence(vault, project, repeat, now)

        merged: dict[str, Any] = dict(existing.frontmatter) if existing else {}
        merged.update(incoming)
        merged["kind"] = kind
        merged["project"] = project
        merged["created"] = (
            (existing.frontmatter.get("created") if existing else None) or incoming.get("created") or now_iso
        )
        merged["updated"] = incoming.get("updated") or now_iso
        if "ttl" in incoming and incoming["ttl"] not in (None, "") and "expires_at" not in incoming:
            merged["expires_at"] = format_iso(compute_expires_at(merged["created"], incoming["ttl"]))
        if kind == "trap":
            classify_trap(merged, body)
            merged.setdefault("occurrences", 1)
            merged.setdefault("lastSeen", now_iso)
        record = Record(
            frontmatter=validate_frontmatter(merged),
            body=body,
            path=target,
            source=existing.source if existing else None,
        )
        _write(vault, target, record)
        index_record(vault, record, target)
        touched_kinds = {kind}
        superseded = False
        older_id = record.frontmatter.get("supersedes")
        if older_id and str(older_id) != record.id:
            older = _mark_superseded(vault, project, str(older_id), record.id, now_iso)
            if older is not None:
                superseded = True
                touched_kinds.add(older.kind)
        rebuild_views(vault, project, touched_kinds)
        gitsync.request_commit(vault, f"upsert {kind}:{record.id}")

    fm = record.frontmatter
    return UpsertResult(
        id=record.id,
        kind=kind,
        project=project,
        path=vault.relative(target),
        status=record.status,
        created=fm["created"],
        updated=fm["updated"],
        expires_at=iso_or_none(resolve_expires_at(fm, vault.config)),
        recurrence=False,
        superseded=superseded,
    )


def _find_recurrence(vault: Vault, project: str, body: str, patterns: Sequence[str]) -> IndexEntry | None:
    for candidate in vault.index().traps_with_patterns(project, pattern_key(patterns)):
        if is_recurrence(body, candidate.body):
            return candidate
    return None


def _bump_recurrence(vault: Vault, project: str, entry: IndexEntry, now: datetime) -> UpsertResult:
    now_iso = format_iso(now)
    path = vault.root / entry.path
    record = read_record(path)
    fm = record.frontmatter
    fm["occurrences"] = int(fm.get("occurrences") or 1) + 1
    fm["lastSeen"] = now_iso
    fm["updated"] = now_iso
    _write(vault, path, record)
    index_record(vault, record, path)
    rebuild_views(vault, project, {"trap"})
    gitsync.request_commit(vault, f"recurrence trap:{record.id}")
    return UpsertResult(
        id=record.id,
        kind="trap",
        project=project,
        path=entry.path,
        status=record.status,
        created=fm["created"],
        updated=now_iso,
        expires_at=iso_or_none(resolve_expires_at(fm, vault.config)),
        recurrence=True,
        superseded=False,
    )


def _mark_superseded(vault: Vault, project: str, older_id: str, newer_id: str, now_iso: str) -> Record | None:
    try:
        record, path = locate_record(vault, project, record_id=older_id)
    except RecordNotFound:
        return None
    if record.status == "superseded" and record.frontmatter.get("supersededBy") == newer_id:
        return record  # already done: a rewrite of the newer record must not touch the older one
    record.frontmatter["status"] = "superseded"
    record.frontmatter["supersededBy"] = newer_id
    record.frontmatter["updated"] = now_iso
    _write(vault, path, record)
    index_record(vault, record, path)
    return record


# --- lookup ----------------------------------------------------------------------------------


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
    frontmatter: dict[str, Any] = {"title": " ".join(event.split())[:120]}
    if details is not None:
        frontmatter["details"] = details
    assert_no_secrets(event, frontmatter)
    now_iso = format_iso(now)
    with vault.lock():
        ensure_index(vault)
        while True:
            record_id = event_id(kind, now)
            path = writable_target(vault, vault.record_path(project, kind, record_id))
            if not path.exists():
                break
        fm = validate_frontmatter(
            {"id": record_id, "kind": kind, "project": project, "created": now_iso, "updated": now_iso, **frontmatter}
        )
        record = Record(frontmatter=fm, body=event if event.endswith("\n") else event + "\n", path=path)
        _write(vault, path, record)
        index_record(vault, record, path)
        rebuild_views(vault, project, {kind})
        gitsync.request_commit(vault, f"append {kind}:{record_id}")
    return AppendResult(id=record_id, kind=kind, project=project, path=vault.relative(path))


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
    record a tombstone."""
    now_iso = format_iso(now or utc_now())
    with vault.lock():
        ensure_index(vault)
        record, path = locate_record(vault, project, record_id=record_id, kind=kind, slug=slug)
        if purge:
            remove_record_files(vault, [Tombstone(project, record.kind, record.id, path, "forget")])
            status = "purged"
        else:
            if record.status == "superseded":
                raise InvalidTransition(f"{record.id} is superseded (terminal); use --purge to remove it")
            if record.status != "archived":
                record.frontmatter["status"] = "archived"
                record.frontmatter["updated"] = now_iso
                _write(vault, path, record)
                index_record(vault, record, path)
            status = "archived"
        rebuild_views(vault, project, {record.kind})
        gitsync.request_commit(vault, f"forget {record.kind}:{record.id}{' (purge)' if purge else ''}")
    return ForgetResult(id=record.id, kind=record.kind, status=status, purged=purge)


def restore_record(
    vault: Vault,
    project: str,
    *,
    record_id: str | None = None,
    kind: str | None = None,
    slug: str | None = None,
    now: datetime | None = None,
) -> UpsertResult:
    """archived → active. Superseded is terminal; anything else is not archived."""
    now_iso = format_iso(now or utc_now())
    with vault.lock():
        ensure_index(vault)
        record, path = locate_record(vault, project, record_id=record_id, kind=kind, slug=slug)
        if record.status != "archived":
            reason = " (superseded is terminal)" if record.status == "superseded" else ""
            raise InvalidTransition(
                f"cannot restore {record.id}: status is {record.status}, only archived records can be restored{reason}"
            )
        record.frontmatter["status"] = "active"
        record.frontmatter["updated"] = now_iso
        record.frontmatter.pop("archivedReason", None)
        _write(vault, path, record)
        index_record(vault, record, path)
        rebuild_views(vault, project, {record.kind})
        gitsync.request_commit(vault, f"restore {record.kind}:{record.id}")
    fm = record.frontmatter
    return UpsertResult(
        id=record.id,
        kind=record.kind,
        project=project,
        path=vault.relative(path),
        status="active",
        created=fm["created"],
        updated=fm["updated"],
        expires_at=iso_or_none(resolve_expires_at(fm, vault.config)),
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
            expired=bool(e.expires_at and e.expires_at <= now_iso),
            severity=e.severity,
            tags=e.tags,
        )
        for e in vault.index().entries(project, kinds, statuses)
    ]
