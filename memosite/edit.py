"""``memosite edit``: a person edits a record in an editor; memosite checks the result first.

:func:`begin_edit` finds the record and remembers the file as it was; :func:`apply_edit` takes the
edited text, parses and validates it as any record file, scans it for secrets, refuses it when the
file changed on disk meanwhile, and writes it in one unit of work: the body exactly as saved and
every frontmatter line as written, with only ``updated`` refreshed (unless the person set it). A
refused edit leaves the record as it was.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from memosite.errors import InvalidArguments, InvalidRecord, SafetyViolation, StorageError
from memosite.kinds import directory_for_kind
from memosite.lookup import find_record
from memosite.mutation import mutation
from memosite.recordfile import path_defaults, record_label
from memosite.schema import format_iso, parse_record, utc_now
from memosite.secrets import assert_no_secrets
from memosite.vault import Vault


@dataclass(frozen=True)
class EditSession:
    project: str
    path: Path
    original: str
    digest: str

    @property
    def file_name(self) -> str:
        return self.path.name


@dataclass
class EditResult:
    id: str
    kind: str
    project: str
    path: str
    changed: bool

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "kind": self.kind, "project": self.project, "path": self.path, "changed": self.changed}

    def summary(self) -> str:
        return f"{'updated' if self.changed else 'unchanged'} {self.kind} {self.id} → {self.path}"


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def begin_edit(vault: Vault, project: str, *, record_id: str, kind: str | None = None) -> EditSession:
    _, path = find_record(vault, project, record_id=record_id, kind=kind)
    data = path.read_bytes()
    return EditSession(project, path, data.decode("utf-8"), _digest(data))


def apply_edit(
    vault: Vault, session: EditSession, edited: str, *, rescue: Path | None = None, now: datetime | None = None
) -> EditResult:
    """Check ``edited`` and write it (see the module docstring); ``rescue`` is where the person's
    text stays when it is refused."""
    kept = f" (your text is in {rescue})" if rescue is not None else ""
    label = record_label(session.path)
    if edited == session.original:
        record = parse_record(edited, session.path, defaults=path_defaults(session.path), where=label)
        return EditResult(record.id, record.kind, session.project, vault.relative(session.path), False)
    try:
        record = parse_record(edited, session.path, defaults=path_defaults(session.path), where=label)
        assert_no_secrets(record.body, record.frontmatter)
    except (InvalidRecord, InvalidArguments, SafetyViolation) as exc:
        raise type(exc)(f"edit refused, {label} unchanged: {exc.message}{kept}", details=exc.details) from exc
    if record.frontmatter.get("project") != session.project:
        raise InvalidArguments(f"edit refused, {label} unchanged: project must stay {session.project}{kept}")
    if directory_for_kind(record.kind) != session.path.parent.name:
        raise InvalidArguments(
            f"edit refused, {label} unchanged: a {record.kind} does not live in {session.path.parent.name}/"
            f" (write a new record of that kind instead){kept}"
        )
    original = parse_record(session.original, session.path, defaults=path_defaults(session.path), where=label)
    if record.id != original.id:
        # Links, supersedes chains and other records name it by its id: a new id is a new record.
        raise InvalidArguments(
            f"edit refused, {label} unchanged: the id must stay {original.id}"
            f" (write a new record with id {record.id} instead){kept}"
        )
    if record.frontmatter.get("updated") == original.frontmatter.get("updated"):
        record.frontmatter["updated"] = format_iso(now or utc_now())
    with mutation(vault, f"edit {record.kind}:{record.id}") as unit:
        try:
            current = session.path.read_bytes()
        except OSError as exc:
            raise StorageError(f"edit refused: {label} is gone{kept}") from exc
        if _digest(current) != session.digest:
            raise StorageError(f"edit refused: {label} changed on disk while you edited it{kept}")
        unit.write(record, session.path)
    return EditResult(record.id, record.kind, session.project, vault.relative(session.path), True)
