"""Finding records: the lookup order of ``get``, the cross-project fallback, and the rule that a
record is only ever reached inside the vault (never through a symlink)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from memosite.errors import InvalidArguments, RecordNotFound, SafetyViolation
from memosite.expiration import is_expired_at, iso_or_none, resolve_expires_at
from memosite.index import queries
from memosite.kinds import KINDS, PRIVATE_KINDS
from memosite.recordfile import read_record, record_label
from memosite.refresh import ensure_index, refresh_project
from memosite.reviewstate import is_pending
from memosite.schema import Record, normalize_kind, shown, subdir_for_kind, utc_now
from memosite.suggest import did_you_mean, near_misses
from memosite.vault import Vault, is_record_name

__all__ = [
    "PRIVATE_KINDS",
    "StoredRecord",
    "files_holding_id",
    "find_record",
    "get_record",
    "locate_record",
    "shared_id_error",
    "suggest_ids",
    "with_suggestions",
    "writable_target",
]


@dataclass
class StoredRecord:
    id: str
    kind: str
    project: str
    path: str
    frontmatter: dict[str, Any]
    body: str
    expired: bool
    expires_at: str | None = None

    @property
    def pending(self) -> bool:
        """Waiting for a person's review (``review: pending``)."""
        return is_pending(self.frontmatter)

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind,
            "project": self.project,
            "path": self.path,
            "frontmatter": self.frontmatter,
            "body": self.body,
            "expired": self.expired,
            "expires_at": self.expires_at,
            "pending": self.pending,
        }


def stored_record(vault: Vault, record: Record, path: Path, now: datetime) -> StoredRecord:
    expires = resolve_expires_at(record.frontmatter, vault.config)
    return StoredRecord(
        id=record.id,
        kind=record.kind,
        project=str(record.frontmatter.get("project")),
        path=vault.relative(path),
        frontmatter=record.frontmatter,
        body=record.body,
        expired=is_expired_at(expires, now),
        expires_at=iso_or_none(expires),
    )


def locate_record(
    vault: Vault,
    project: str,
    *,
    record_id: str | None = None,
    kind: str | None = None,
    slug: str | None = None,
) -> tuple[Record, Path]:
    """Lookup order: kind+slug path → ``<id>.md`` in each kind directory → frontmatter id.

    Symlinks are never followed (a record must live inside the vault), and an id that names
    records of two kinds is ambiguous rather than a guess: a purge must not hit the wrong one.
    A kind given with an id narrows the lookup to that kind.
    """
    if record_id is not None and not isinstance(record_id, str):
        raise InvalidArguments(f"invalid id {shown(record_id)}: an id is text", details={"field": "id"})
    if record_id and slug:
        raise InvalidArguments("give an id, or a kind and a slug, not both")
    if record_id and kind:
        wanted = normalize_kind(kind)
        return _locate_by_id(vault, project, record_id, (wanted,))
    if kind and slug:
        wanted = normalize_kind(kind)
        path = vault.record_path(project, wanted, slug)
        if _is_record_file(vault, path):
            record = read_record(path)
            if record.kind == wanted:  # state and plan share plans/: the kind must match too
                return record, path
        raise RecordNotFound(f"record not found: {wanted}/{slug} in project {project}")
    if not record_id:
        raise InvalidArguments("give an id, or both a kind and a slug")
    return _locate_by_id(vault, project, record_id, KINDS)


def _locate_by_id(vault: Vault, project: str, record_id: str, kinds: tuple[str, ...]) -> tuple[Record, Path]:
    if "\x00" in record_id or "/" in record_id or "\\" in record_id or len(record_id) > 200:
        raise InvalidArguments(f"invalid id {record_id[:60]!r}{'…' if len(record_id) > 60 else ''}")
    named = [
        path
        for subdir in dict.fromkeys(subdir_for_kind(k) for k in kinds)
        if _is_record_file(vault, path := vault.project_dir(project) / subdir / f"{record_id}.md")
    ]
    if len(kinds) < len(KINDS):
        named = [path for path in named if read_record(path).kind in kinds]
    if len(named) > 1:
        where = ", ".join(path.parent.name for path in named)
        raise InvalidArguments(f"id {record_id} is ambiguous ({where}): give --kind")
    for attempt in range(2):
        # The file named <id>.md and every file whose frontmatter holds the id answer to it: when
        # that is more than one file, acting on one of them would be a guess.
        found = list(dict.fromkeys([*named, *files_holding_id(vault, project, record_id, kinds)]))
        if len(found) > 1:
            if len(kinds) == len(KINDS) and len({path.parent.name for path in found}) > 1:
                where = ", ".join(record_label(path) for path in found)
                raise InvalidArguments(f"id {record_id} is ambiguous ({where}): give --kind")
            raise shared_id_error(record_id, found)
        if found:
            return read_record(found[0]), found[0]
        if attempt == 0:
            with vault.lock():  # the file may have been written outside memosite
                refresh_project(vault, project)
    raise RecordNotFound(f"record not found: {record_id} in project {project}")


def suggest_ids(
    vault: Vault, project: str, typed: str, kinds: tuple[str, ...] | None = None, *, siblings: bool = False
) -> list[str]:
    """The ids closest to ``typed`` (:mod:`memosite.suggest`) among ``project``'s records of
    ``kinds``, and with ``siblings`` the other projects' records ``get`` may reach."""
    index = vault.index()
    known = queries.project_ids(index, project, kinds)
    if siblings:
        known += queries.project_ids(index, None, tuple(k for k in kinds or KINDS if k not in PRIVATE_KINDS))
    return near_misses(typed, known)


def with_suggestions(
    vault: Vault,
    project: str,
    missing: RecordNotFound,
    *,
    record_id: str | None = None,
    kind: str | None = None,
    slug: str | None = None,
    siblings: bool = False,
) -> RecordNotFound:
    """``missing`` naming the ids closest to the one asked for (also as ``details.suggestions``):
    for the commands a person types ids into. Kept off :func:`locate_record` itself, where a miss
    is often expected (a new id) and comparing every id of a large vault would slow every write."""
    typed = record_id or slug
    if not typed:
        return missing
    kinds = (normalize_kind(kind),) if kind else None
    near = suggest_ids(vault, project, typed, kinds, siblings=siblings)
    if not near:
        return missing
    return RecordNotFound(f"{missing.message}{did_you_mean(near)}", details={**missing.details, "suggestions": near})


def find_record(
    vault: Vault, project: str, *, record_id: str | None = None, kind: str | None = None, slug: str | None = None
) -> tuple[Record, Path]:
    """:func:`locate_record`, whose miss names the nearest ids (a person typed this one)."""
    try:
        return locate_record(vault, project, record_id=record_id, kind=kind, slug=slug)
    except RecordNotFound as exc:
        raise with_suggestions(vault, project, exc, record_id=record_id, kind=kind, slug=slug) from None


def files_holding_id(vault: Vault, project: str, record_id: str, kinds: tuple[str, ...] = KINDS) -> list[Path]:
    """The record files of ``project`` (of ``kinds``) whose frontmatter id is ``record_id``, as
    the index knows them."""
    found = [vault.root / e.path for e in vault.index().by_id(record_id, project) if e.kind in kinds]
    return [path for path in found if _is_record_file(vault, path)]


def shared_id_error(record_id: str, paths: list[Path]) -> InvalidArguments:
    """Two files hold one id: name them, and how to tell them apart again."""
    labels = sorted(record_label(path) for path in paths)
    return InvalidArguments(
        f"id {record_id} is ambiguous: {len(paths)} files hold it ({' and '.join(labels)}); give one of them"
        " another id in its file, or name one file with --kind and --slug",
        details={"id": record_id, "files": labels},
    )


def _crosses_symlink(vault: Vault, path: Path) -> bool:
    """True when reaching ``path`` from the vault root would follow a symlink (or leave the vault).

    On strings, one ``lstat`` per path part: it runs for every candidate of every lookup and write."""
    root, target = os.fspath(vault.root), os.fspath(path)
    if target == root:
        return False
    prefix = root.rstrip(os.sep) + os.sep
    if not target.startswith(prefix):
        return True
    current = prefix[:-1]
    for part in target[len(prefix) :].split(os.sep):
        current = f"{current}{os.sep}{part}"
        if os.path.islink(current):
            return True
    return False


def _is_record_file(vault: Vault, path: Path) -> bool:
    """A record's name (not a sidecar), a regular file inside the vault, reached without following
    a symlink (a name that is no file at all is told by one ``stat``)."""
    try:
        return is_record_name(path.name) and path.is_file() and not _crosses_symlink(vault, path)
    except OSError:  # a name too long for the filesystem (an id in a wide script) names no file
        return False


def writable_target(vault: Vault, path: Path) -> Path:
    """``path``, when writing it cannot follow a symlink out of the vault (SAFETY_VIOLATION else)."""
    if _crosses_symlink(vault, path):
        raise SafetyViolation(f"refusing to write {vault.relative(path)}: it is reached through a symlink")
    return path


def get_record(
    vault: Vault,
    project: str,
    *,
    record_id: str | None = None,
    kind: str | None = None,
    slug: str | None = None,
    cross_project: bool = False,
    now: datetime | None = None,
) -> StoredRecord:
    """Fetch one record, annotated ``expired``. With ``cross_project`` (no project was named) a
    miss in ``project`` falls back to sibling projects — never for scratch/state/review, and only
    when exactly one sibling matches (fail closed). A read: an agent's fetch counts its hit through
    :func:`memosite.hits.get_record_counting_hit`."""
    now = now or utc_now()
    return _find(vault, project, record_id=record_id, kind=kind, slug=slug, cross_project=cross_project, now=now)


def _find(
    vault: Vault,
    project: str,
    *,
    record_id: str | None,
    kind: str | None,
    slug: str | None,
    cross_project: bool,
    now: datetime,
) -> StoredRecord:
    ensure_index(vault)
    try:
        record, path = locate_record(vault, project, record_id=record_id, kind=kind, slug=slug)
        return stored_record(vault, record, path, now)
    except RecordNotFound as exc:
        if not cross_project:
            raise with_suggestions(vault, project, exc, record_id=record_id, kind=kind, slug=slug) from None
    matches: list[tuple[Record, Path]] = []
    for sibling in vault.projects():
        if sibling == project:
            continue
        try:
            record, path = locate_record(vault, sibling, record_id=record_id, kind=kind, slug=slug)
        except RecordNotFound:
            continue
        if record.kind not in PRIVATE_KINDS:
            matches.append((record, path))
    wanted = record_id or f"{kind}/{slug}"
    if len(matches) == 1:
        return stored_record(vault, matches[0][0], matches[0][1], now)
    if len(matches) > 1:
        projects = sorted(str(r.frontmatter.get("project")) for r, _ in matches)
        raise RecordNotFound(
            f"{wanted} is ambiguous: it names records in {len(matches)} projects ({', '.join(projects)}):"
            " pass --project",
            details={"projects": projects},
        )
    missing = RecordNotFound(f"record not found: {wanted}")
    raise with_suggestions(vault, project, missing, record_id=record_id, kind=kind, slug=slug, siblings=True)
