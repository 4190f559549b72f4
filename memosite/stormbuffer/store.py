"""A Stormbuffer project store on disk.

Layout (a directory, ``.sbuf`` by default, found upward from the working directory like git)::

    .sbuf/
      store.toml                      format_version, project_id (stable UUID), name (editable)
      records/<kind>/<id>.md          one record per file; <id> is the record's UUID, lower case
      memosite/<id>.json              what a memosite export could not say in Stormbuffer fields

The project id is the identity: record scopes say ``project:<project_id>``. Renaming the
repository, moving the directory or changing ``name`` leaves it alone. Every change is an atomic
file write under a lock file (``.sbuf/.lock``); nothing here keeps state outside the files.
"""

from __future__ import annotations

import builtins
import tomllib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout

from memosite.errors import (
    InvalidArguments,
    InvalidRecord,
    InvalidTransition,
    LockTimeout,
    RecordNotFound,
    StorageError,
)
from memosite.secrets import assert_no_secrets
from memosite.stormbuffer import lifecycle
from memosite.stormbuffer.codec import read_record, render_record
from memosite.stormbuffer.model import (
    FORMAT_VERSION,
    GLOBAL_SCOPE,
    KINDS,
    Problem,
    Source,
    StormRecord,
    format_timestamp,
    is_uuid,
    new_uuid,
    project_scope,
    raise_problems,
    validate_record,
)
from memosite.vault import atomic_write_text, is_temp_name

STORE_DIR_NAME = ".sbuf"
STORE_FILE = "store.toml"
RECORDS_DIR = "records"
STORE_FIELDS = ("format_version", "project_id", "name")
_MIN_PREFIX = 4
_LOCK_TIMEOUT_SECONDS = 30.0


@dataclass(frozen=True)
class StoreInfo:
    """What ``store.toml`` says, plus where the store lives."""

    path: Path
    project_id: str
    name: str
    created: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "path": str(self.path),
            "project_id": self.project_id,
            "name": self.name,
            "scope": project_scope(self.project_id),
            "created": self.created,
        }


@dataclass(frozen=True)
class StoredStormRecord:
    """A record and the file it lives in."""

    record: StormRecord
    path: Path

    def to_json(self, *, body: bool = True) -> dict[str, Any]:
        return {**self.record.to_json(body=body), "path": str(self.path)}


@dataclass(frozen=True)
class ForgetOutcome:
    id: str
    kind: str
    path: str
    destroyed: bool

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


# --- store.toml ------------------------------------------------------------------------------


def check_store_file(data: dict[str, Any]) -> list[Problem]:
    problems = [
        Problem(str(k), "unknown field (allowed: " + ", ".join(STORE_FIELDS) + ")")
        for k in data
        if k not in STORE_FIELDS
    ]
    version = data.get("format_version")
    if type(version) is not int or version != FORMAT_VERSION:
        problems.append(Problem("format_version", f"must be {FORMAT_VERSION}, got {version!r}"))
    if not is_uuid(data.get("project_id")):
        problems.append(Problem("project_id", f"{data.get('project_id')!r} is not a non-nil UUID"))
    name = data.get("name")
    if not isinstance(name, str) or not name.strip():
        problems.append(Problem("name", "must be a non-empty string"))
    return problems


def _render_store_file(project_id: str, name: str) -> str:
    import tomli_w

    return tomli_w.dumps({"format_version": FORMAT_VERSION, "project_id": project_id, "name": name})


def find_store(start: Path) -> Path | None:
    """The nearest ``.sbuf`` directory holding a ``store.toml``, from ``start`` upward."""
    start = start.absolute()
    for directory in (start, *start.parents):
        candidate = directory / STORE_DIR_NAME
        if (candidate / STORE_FILE).is_file():
            return candidate
    return None


def resolve_store_dir(store: str | Path | None, cwd: Path) -> Path:
    """``--store DIR`` (the store itself, or a directory holding ``.sbuf``), else search upward."""
    if store is not None:
        path = Path(store).expanduser()
        path = path if path.is_absolute() else cwd / path
        if not (path / STORE_FILE).is_file() and (path / STORE_DIR_NAME / STORE_FILE).is_file():
            return path / STORE_DIR_NAME
        return path
    found = find_store(cwd)
    if found is None:
        raise InvalidArguments(
            f"no Stormbuffer store ({STORE_DIR_NAME}/{STORE_FILE}) in {cwd} or any parent; "
            "run `memosite stormbuffer init` or pass --store DIR"
        )
    return found


class Store:
    """One project store. Open an existing one with :meth:`open`, make one with :meth:`init`."""

    def __init__(self, path: Path, info: StoreInfo) -> None:
        self.path = path
        self.info = info

    # --- opening -------------------------------------------------------------------------
    @classmethod
    def open(cls, path: Path) -> Store:
        store_file = path / STORE_FILE
        try:
            data = tomllib.loads(store_file.read_text(encoding="utf-8"))
        except FileNotFoundError as exc:
            raise InvalidArguments(f"not a Stormbuffer store: {store_file} does not exist") from exc
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            raise InvalidRecord(f"{store_file}: cannot read: {exc}", details={"field": "file"}) from exc
        raise_problems(check_store_file(data), InvalidRecord, str(store_file))
        return cls(path, StoreInfo(path=path, project_id=data["project_id"], name=data["name"]))

    @classmethod
    def init(cls, path: Path, *, name: str | None = None, project_id: str | None = None) -> Store:
        """Create the store (idempotent: an existing store is opened and left as it is)."""
        if (path / STORE_FILE).exists():
            store = cls.open(path)
            if name is not None and name != store.info.name:
                raise InvalidArguments(
                    f"a store already exists at {path} (name {store.info.name!r}); "
                    "use `memosite stormbuffer rename` to change its name"
                )
            return store
        if project_id is not None and not is_uuid(project_id):
            raise InvalidArguments(
                f"invalid project_id {project_id!r}: not a non-nil UUID", details={"field": "project_id"}
            )
        default_name = path.absolute().parent.name if path.name == STORE_DIR_NAME else path.name
        display = (name if name is not None else default_name).strip() or "project"
        info = StoreInfo(path=path, project_id=project_id or new_uuid(), name=display, created=True)
        try:
            (path / RECORDS_DIR).mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StorageError(f"cannot create {path}: {exc.strerror or exc}") from exc
        atomic_write_text(path / STORE_FILE, _render_store_file(info.project_id, info.name))
        return cls(path, info)

    @property
    def scope(self) -> str:
        return project_scope(self.info.project_id)

    def lock(self) -> _StoreLock:
        return _StoreLock(self.path / ".lock")

    def rename(self, name: str) -> StoreInfo:
        """Change the display name. The project id, and so every record's scope, stays."""
        if not isinstance(name, str) or not name.strip():
            raise InvalidArguments("invalid name: must be a non-empty string", details={"field": "name"})
        with self.lock():
            atomic_write_text(self.path / STORE_FILE, _render_store_file(self.info.project_id, name))
            self.info = StoreInfo(path=self.path, project_id=self.info.project_id, name=name)
        return self.info

    # --- files ---------------------------------------------------------------------------
    def record_path(self, kind: str, record_id: str) -> Path:
        return self.path / RECORDS_DIR / kind / f"{record_id.lower()}.md"

    def record_files(self) -> Iterator[Path]:
        """Every ``*.md`` under ``records/`` (temp files skipped), in a stable order."""
        base = self.path / RECORDS_DIR
        if not base.is_dir():
            return
        for path in sorted(base.rglob("*.md")):
            if path.is_file() and not is_temp_name(path.name):
                yield path

    def _write(self, record: StormRecord) -> Path:
        validate_record(record)
        path = self.record_path(record.kind, record.id)
        atomic_write_text(path, render_record(record))
        return path

    def save(self, record: StormRecord) -> StoredStormRecord:
        """Write ``record`` as is (after validation and a secret scan); used by import/export."""
        assert_no_secrets(record.body, record.frontmatter())
        self.check_scope(record.scope)
        with self.lock():
            stale = self._find_exact(record.key)
            path = self._write(record)
            if stale is not None and stale != path:
                stale.unlink(missing_ok=True)  # the kind changed: the file moved directories
        return StoredStormRecord(record, path)

    def check_scope(self, scope: str) -> None:
        if scope not in (GLOBAL_SCOPE, self.scope):
            raise InvalidArguments(
                f"invalid scope {scope!r}: this store holds 'global' and {self.scope!r} records",
                details={"field": "scope"},
            )

    # --- lookup --------------------------------------------------------------------------
    def _find_exact(self, key: str) -> Path | None:
        for kind in KINDS:
            path = self.record_path(kind, key)
            if path.is_file():
                return path
        return None

    def get(self, record_id: str) -> StoredStormRecord:
        """A record by id, or by a unique id prefix of at least four characters."""
        if not isinstance(record_id, str) or not record_id.strip() or any(c in record_id for c in "/\\\x00."):
            raise InvalidArguments(f"invalid id {record_id!r}", details={"field": "id"})
        key = record_id.strip().lower()
        path = self._find_exact(key)
        if path is None and len(key) >= _MIN_PREFIX:
            matches = [p for p in self.record_files() if p.stem.startswith(key)]
            if len(matches) > 1:
                raise InvalidArguments(
                    f"id prefix {record_id!r} is ambiguous: {', '.join(p.stem for p in matches[:5])}",
                    details={"field": "id", "matches": [p.stem for p in matches]},
                )
            path = matches[0] if matches else None
        if path is None:
            raise RecordNotFound(f"Record not found: {record_id} in store {self.path}")
        return StoredStormRecord(read_record(path), path)

    def records(self) -> list[StoredStormRecord]:
        """Every record, oldest first. A broken file raises :class:`InvalidRecord`."""
        found = [StoredStormRecord(read_record(path), path) for path in self.record_files()]
        return sorted(found, key=lambda item: (item.record.created, item.record.key))

    def list(
        self, *, include_all: bool = False, kinds: Sequence[str] | None = None
    ) -> builtins.list[StoredStormRecord]:
        """Normal retrieval: candidates and active records. ``include_all`` adds history."""
        return [
            item
            for item in self.records()
            if (include_all or item.record.status in lifecycle.RETRIEVABLE) and (not kinds or item.record.kind in kinds)
        ]

    # --- changes -------------------------------------------------------------------------
    def add(
        self,
        *,
        kind: str,
        title: str,
        body: str,
        access: str = "agent",
        scope: str | None = None,
        status: str | None = None,
        tags: Sequence[str] = (),
        aliases: Sequence[str] = (),
        sources: Sequence[Source] = (),
        supersedes: str | None = None,
        now: datetime | None = None,
    ) -> StoredStormRecord:
        """Create a record. Agents' records start as candidates; people's may start active.

        With ``supersedes`` the new record replaces an active one in the same step.
        """
        if not isinstance(body, str) or not body.strip():
            raise InvalidArguments("invalid body: must not be empty", details={"field": "body"})
        stamp = format_timestamp(now or datetime.now().astimezone())
        record = validate_record(
            StormRecord(
                id=new_uuid(now),
                title=title,
                kind=kind,
                scope=scope or self.scope,
                status=lifecycle.initial_status(access, status),
                access=access,
                created_at=stamp,
                updated_at=stamp,
                body=body,
                tags=tuple(dict.fromkeys(tags)),
                aliases=tuple(dict.fromkeys(aliases)),
                sources=tuple(sources),
            )
        )
        self.check_scope(record.scope)
        assert_no_secrets(body, record.frontmatter())
        with self.lock():
            if supersedes is None:
                return StoredStormRecord(record, self._write(record))
            older = self.get(supersedes)
            lifecycle.check_transition(older.record.id, older.record.status, "superseded")
            record = record.evolve(supersedes=(older.record.id,))
            path = self._write(record)
            self._set_status(older, "superseded", now)
            return StoredStormRecord(record, path)

    def _set_status(self, item: StoredStormRecord, status: str, now: datetime | None) -> StoredStormRecord:
        old = item.record
        lifecycle.check_transition(old.id, old.status, status)
        changed = old.evolve(status=status, updated_at=_touched_at(old, now))
        return StoredStormRecord(changed, self._write(changed))

    def transition(self, record_id: str, status: str, *, now: datetime | None = None) -> StoredStormRecord:
        """Move one record to ``status`` if its lifecycle allows it (only status and updated_at change)."""
        with self.lock():
            return self._set_status(self.get(record_id), status, now)

    def promote(self, record_id: str, *, now: datetime | None = None) -> StoredStormRecord:
        return self.transition(record_id, "active", now=now)

    def archive(self, record_id: str, *, now: datetime | None = None) -> StoredStormRecord:
        return self.transition(record_id, "archived", now=now)

    def restore(self, record_id: str, *, now: datetime | None = None) -> StoredStormRecord:
        with self.lock():
            item = self.get(record_id)
            status = item.record.status
            if status != "archived":
                why = (
                    "superseded records are terminal"
                    if status == "superseded"
                    else ("only archived records can be restored")
                )
                raise InvalidTransition(
                    f"cannot restore {item.record.id}: it is {status}; {why}",
                    details={"id": item.record.id, "from": item.record.status, "to": "active"},
                )
            return self._set_status(item, "active", now)

    def supersede(
        self, old_id: str, *, by: str, now: datetime | None = None
    ) -> tuple[StoredStormRecord, StoredStormRecord]:
        """Mark ``old_id`` superseded by ``by``. The old record keeps its title and body; the new
        one lists it in ``supersedes``. Returns (old, new) as written."""
        with self.lock():
            older, newer = self.get(old_id), self.get(by)
            if older.record.key == newer.record.key:
                raise InvalidArguments("a record cannot supersede itself", details={"field": "by"})
            if newer.record.status not in lifecycle.RETRIEVABLE:
                raise InvalidArguments(
                    f"{newer.record.id} is {newer.record.status}; the replacing record must be candidate or active",
                    details={"field": "by"},
                )
            lifecycle.check_transition(older.record.id, older.record.status, "superseded")
            new_record = newer.record
            if older.record.id not in new_record.supersedes:
                new_record = new_record.evolve(
                    supersedes=(*new_record.supersedes, older.record.id),
                    updated_at=_touched_at(new_record, now),
                )
            new_path = self._write(new_record)
            old_item = self._set_status(older, "superseded", now)
            return old_item, StoredStormRecord(new_record, new_path)

    def forget(self, record_id: str, *, destroy: bool = False) -> ForgetOutcome:
        """Delete a record file for good. Refused unless ``destroy`` is set: to retire a record
        and keep its history, archive or supersede it instead."""
        if not destroy:
            raise InvalidArguments(
                "permanent deletion requires --destroy; use archive to retire a record and keep its history",
                details={"field": "destroy"},
            )
        with self.lock():
            item = self.get(record_id)
            try:
                item.path.unlink()
            except OSError as exc:
                raise StorageError(f"cannot delete {item.path}: {exc.strerror or exc}") from exc
        return ForgetOutcome(id=item.record.id, kind=item.record.kind, path=str(item.path), destroyed=True)


def _touched_at(record: StormRecord, now: datetime | None) -> str:
    """The new ``updated_at``: now, but never before ``created_at`` (clock skew, hand edits)."""
    moment = now or datetime.now().astimezone()
    return format_timestamp(moment) if moment >= record.created else record.created_at


class _StoreLock:
    """A cross-process lock on the store; re-entrant within one process."""

    def __init__(self, path: Path) -> None:
        self._lock = FileLock(str(path), timeout=_LOCK_TIMEOUT_SECONDS, is_singleton=True)

    def __enter__(self) -> _StoreLock:
        try:
            self._lock.acquire()
        except Timeout as exc:
            raise LockTimeout(f"timed out waiting for the store lock {self._lock.lock_file}") from exc
        except OSError as exc:
            raise StorageError(f"cannot lock {self._lock.lock_file}: {exc.strerror or exc}") from exc
        return self

    def __exit__(self, *exc: object) -> None:
        self._lock.release()
