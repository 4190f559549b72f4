"""A Stormbuffer store on disk, laid out as ``stormbuffer-core`` lays it out.

Layout (a project store is the nearest ``.sbuf`` directory upward from the working directory;
the global store lives in the platform data directory, ``stormbuffer/``)::

    .sbuf/
      store.toml              format_version, scope, visibility, project_id, project_name
      .gitignore              written by init: private stores track nothing
      records/<id>.md         one record per file, flat; found by the id inside, whatever the name
      locks/mutation.lock     the lock every writer (sbuf and memosite) takes
      memosite/<id>.json      what a memosite export could not say in Stormbuffer fields

Every record of a store carries the store's scope (``global``, or ``project:<project_id>``). A
change rewrites a record's file in place; a new record goes to ``records/<id>.md``. Two files
holding one id make the store unusable until one is removed, as in Stormbuffer.
"""

from __future__ import annotations

import builtins
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from memosite.errors import InvalidArguments, InvalidRecord, RecordNotFound, StorageError
from memosite.secrets import assert_no_secrets
from memosite.stormbuffer import lifecycle
from memosite.stormbuffer.codec import decode_record_bytes, parse_record, render_record, says_the_same
from memosite.stormbuffer.locate import (
    STORE_DIR_NAME,
    find_store,
    global_store_dir,
    location_scope,
    resolve_store_dir,
)
from memosite.stormbuffer.lock import mutation_lock, write_pair
from memosite.stormbuffer.model import Source, StormRecord, check_provenance, validate_record
from memosite.stormbuffer.storefile import RECORDS_DIR, STORE_FILE, StoreInfo, project_name_problem, read_store_config
from memosite.stormbuffer.values import Timestamp, new_uuid, parse_uuid
from memosite.vault import atomic_write_text

DEFAULT_SOURCE_REFERENCE = "memosite:stormbuffer"
_MIN_PREFIX = 4


@dataclass(frozen=True)
class StoredStormRecord:
    """A record and the file it lives in (``text``: the file's text as read, or to be written when
    it must keep a layout of its own; None writes what :func:`render_record` gives)."""

    record: StormRecord
    path: Path
    text: str | None = field(default=None, compare=False, repr=False)

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


def default_source(access: str) -> Source:
    """The source of a record written without one: this conversation, by the writer."""
    return Source(kind="conversation", reference=DEFAULT_SOURCE_REFERENCE, actor=access)


def _stamp(now: datetime | None) -> Timestamp:
    return Timestamp.from_datetime(now) if now is not None else Timestamp.now()


def _touched_at(record: StormRecord, moment: Timestamp) -> str:
    """The new ``updated_at``: ``moment``, but never before ``created_at`` (clock skew, hand edits).

    An operation takes its moment once, so every record it touches (both sides of a
    supersession, as sbuf's ``commit_supersession``) carries the same instant.
    """
    return moment.render() if moment.instant >= record.created.instant else record.created_at


class Store:
    """One store. Open an existing one with :meth:`open`, make one with :meth:`init`."""

    def __init__(self, path: Path, info: StoreInfo) -> None:
        self.path = path
        self.info = info

    # --- opening -------------------------------------------------------------------------
    @classmethod
    def open(cls, path: Path, expected_scope: str | None = None) -> Store:
        """Open the store at ``path``; a ``.sbuf`` directory must hold a project store."""
        store_file = path / STORE_FILE
        if not store_file.is_file():
            raise InvalidArguments(
                f"store is not initialized: {store_file} does not exist; run `memosite stormbuffer init`"
            )
        config = read_store_config(store_file, expected_scope or location_scope(path))
        return cls(path, StoreInfo(path=path, config=config))

    @classmethod
    def init(
        cls,
        path: Path,
        *,
        name: str | None = None,
        shared: bool = False,
        global_store: bool = False,
        project_id: str | None = None,
    ) -> Store:
        """Create the store, or complete an existing one (see :func:`.initialization.initialize_store`)."""
        from memosite.stormbuffer.initialization import initialize_store

        info = initialize_store(path, name=name, shared=shared, global_store=global_store, project_id=project_id)
        return cls(path, info)

    @property
    def scope(self) -> str:
        """The scope every record of this store carries."""
        return self.info.config.record_scope

    def lock(self) -> Any:
        return mutation_lock(self.path)

    def rename(self, name: str) -> StoreInfo:
        """Change a project store's display name; its project id, and so every scope, stays."""
        if not self.info.config.is_project:
            raise InvalidArguments("the global store has no project name")
        problem = project_name_problem(name)
        if problem:
            raise InvalidArguments(f"invalid project_name: {problem}", details={"field": "project_name"})
        with self.lock():
            config = replace(read_store_config(self.path / STORE_FILE, "project"), project_name=name)
            atomic_write_text(self.path / STORE_FILE, config.render())
            self.info = StoreInfo(path=self.path, config=config)
        return self.info

    # --- files ---------------------------------------------------------------------------
    def new_record_path(self, record_id: str) -> Path:
        return self.path / RECORDS_DIR / f"{parse_uuid(record_id) or record_id.lower()}.md"

    def record_files(self) -> Iterator[Path]:
        """Every regular ``*.md`` file under ``records/`` at any depth (symlinks skipped), sorted."""
        base = self.path / RECORDS_DIR
        found: list[Path] = []
        for current, dirnames, filenames in os.walk(base):
            dirnames[:] = [d for d in dirnames if not os.path.islink(os.path.join(current, d))]
            for filename in filenames:
                full = Path(current) / filename
                if filename.endswith(".md") and full.is_file() and not full.is_symlink():
                    found.append(full)
        yield from sorted(found)

    def _read(self, path: Path) -> StoredStormRecord:
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise InvalidRecord(f"{path}: cannot read: {exc.strerror or exc}", details={"field": "file"}) from exc
        text = decode_record_bytes(data, path)
        record = parse_record(text, path)
        if record.scope != self.scope:
            raise InvalidRecord(
                f"{path}: record {record.id} is outside this store's scope ({record.scope!r}, not {self.scope!r})",
                details={"field": "scope"},
            )
        return StoredStormRecord(record, path, text)

    def scan(self) -> builtins.list[StoredStormRecord]:
        """Every record, in file order. A broken file, a foreign scope or a repeated id raises."""
        seen: dict[str, Path] = {}
        found = []
        for path in self.record_files():
            item = self._read(path)
            first = seen.setdefault(item.record.key, path)
            if first != path:
                raise InvalidRecord(
                    f"record {item.record.key} appears in multiple files: {first} and {path}",
                    details={"field": "id", "files": [str(first), str(path)]},
                )
            found.append(item)
        return found

    def records(self) -> builtins.list[StoredStormRecord]:
        """Every record, oldest first."""
        return sorted(self.scan(), key=lambda item: (item.record.created.instant, item.record.key))

    def list(
        self, *, include_all: bool = False, kinds: Sequence[str] | None = None
    ) -> builtins.list[StoredStormRecord]:
        """Normal retrieval: candidates and active records. ``include_all`` adds history."""
        return [
            item
            for item in self.records()
            if (include_all or item.record.status in lifecycle.RETRIEVABLE) and (not kinds or item.record.kind in kinds)
        ]

    def get(self, record_id: str) -> StoredStormRecord:
        """A record by id (any UUID spelling), or by a unique id prefix of at least four characters."""
        if not isinstance(record_id, str) or not record_id.strip():
            raise InvalidArguments(f"invalid id {record_id!r}", details={"field": "id"})
        items = self.scan()
        canonical = parse_uuid(record_id.strip())
        if canonical is not None:
            matches = [item for item in items if item.record.key == canonical]
        else:
            prefix = record_id.strip().lower()
            if len(prefix) < _MIN_PREFIX or any(char not in "0123456789abcdef-" for char in prefix):
                raise InvalidArguments(
                    f"invalid id {record_id!r}: give a UUID or at least {_MIN_PREFIX} of its first characters",
                    details={"field": "id"},
                )
            matches = [item for item in items if item.record.key.startswith(prefix)]
            if len(matches) > 1:
                raise InvalidArguments(
                    f"id prefix {record_id!r} is ambiguous: {', '.join(m.record.key for m in matches[:5])}",
                    details={"field": "id", "matches": [m.record.key for m in matches]},
                )
        if not matches:
            raise RecordNotFound(f"record not found: {record_id} in store {self.path}")
        return matches[0]

    def check_scope(self, scope: str) -> None:
        if scope != self.scope:
            where = "the global store" if scope == "global" else f"the store of {scope}"
            raise InvalidArguments(
                f"invalid scope {scope!r}: this store holds only {self.scope!r} records; write it to {where}",
                details={"field": "scope"},
            )

    def _write(self, item: StoredStormRecord) -> StoredStormRecord:
        atomic_write_text(item.path, item.text if item.text is not None else render_record(item.record))
        return item

    # --- changes -------------------------------------------------------------------------
    def save(
        self, record: StormRecord, *, known: Mapping[str, Path] | None = None, text: str | None = None
    ) -> StoredStormRecord:
        """Write ``record`` as is (validated, secret-scanned): in place if its id exists, else new.

        ``known`` maps ids to files from a scan the caller made holding this store's lock, so a
        batch of saves does not rescan the store for each record. ``text`` is the file to write
        instead of the rendered record, when it says exactly the same (a source's own layout, kept
        byte for byte); text that says anything else is refused.
        """
        validate_record(record)
        if text is not None and not says_the_same(text, record):
            raise InvalidRecord(
                f"record {record.id}: the text to keep does not hold this record", details={"field": "text"}
            )
        assert_no_secrets(record.body, record.frontmatter())
        self.check_scope(record.scope)
        with self.lock():
            if known is None:
                known = {item.record.key: item.path for item in self.scan()}
            path = known.get(record.key) or self.new_record_path(record.id)
            if record.key not in known and path.exists():
                raise InvalidRecord(f"{path} exists but holds another record", details={"field": "id"})
            return self._write(StoredStormRecord(record, path, text))

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
        """Create a record in ``records/<id>.md``. Agents' records start as candidates.

        With ``supersedes`` the new record names an active one it replaces: an active new record
        supersedes it at once, a candidate only when it is promoted (as ``sbuf`` proposes updates).
        """
        moment = _stamp(now)
        stamp = moment.render()
        record = validate_record(
            StormRecord(
                id=new_uuid(now.timestamp() if now else None),
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
                sources=tuple(sources) or (default_source(access),),
            )
        )
        self.check_scope(record.scope)
        check_provenance(record)
        assert_no_secrets(body, record.frontmatter())
        with self.lock():
            path = self.new_record_path(record.id)
            if path.exists():
                raise InvalidRecord(f"record destination already exists: {path}", details={"field": "id"})
            if supersedes is None:
                return self._write(StoredStormRecord(record, path))
            older = self.get(supersedes)
            lifecycle.check_operation(older.record.key, "supersede", older.record.status)
            record = record.evolve(supersedes=(older.record.key,))
            if record.status == "candidate":
                return self._write(StoredStormRecord(record, path))
            return self._supersede_pair(older, StoredStormRecord(record, path), None, moment)[1]

    def _supersede_pair(
        self, older: StoredStormRecord, newer: StoredStormRecord, newer_before: bytes | None, moment: Timestamp
    ) -> tuple[StoredStormRecord, StoredStormRecord]:
        """Mark ``older`` superseded (at ``moment``) and write ``newer`` in one journalled step."""
        old_record = older.record.evolve(status="superseded", updated_at=_touched_at(older.record, moment))
        old_before = older.path.read_bytes()
        write_pair(
            self.path,
            (older.path, old_before, render_record(old_record)),
            (newer.path, newer_before, render_record(newer.record)),
        )
        return StoredStormRecord(old_record, older.path), newer

    def transition(self, record_id: str, operation: str, *, now: datetime | None = None) -> StoredStormRecord:
        """Apply ``operation`` (promote, reject, archive, restore): status and updated_at change."""
        moment = _stamp(now)
        with self.lock():
            item = self.get(record_id)
            status = lifecycle.check_operation(item.record.key, operation, item.record.status)
            if operation == "promote":
                check_provenance(item.record)  # sbuf re-checks a candidate's sources on approval
            changed = item.record.evolve(status=status, updated_at=_touched_at(item.record, moment))
            if operation == "promote" and len(changed.supersedes) == 1:
                # Promoting a proposed replacement retires the record it replaces (sbuf's approve).
                older = self.get(changed.superseded_keys[0])
                lifecycle.check_operation(older.record.key, "supersede", older.record.status)
                newer = StoredStormRecord(changed, item.path)
                return self._supersede_pair(older, newer, item.path.read_bytes(), moment)[1]
            return self._write(StoredStormRecord(changed, item.path))

    def promote(self, record_id: str, *, now: datetime | None = None) -> StoredStormRecord:
        return self.transition(record_id, "promote", now=now)

    def reject(self, record_id: str, *, now: datetime | None = None) -> StoredStormRecord:
        return self.transition(record_id, "reject", now=now)

    def archive(self, record_id: str, *, now: datetime | None = None) -> StoredStormRecord:
        return self.transition(record_id, "archive", now=now)

    def restore(self, record_id: str, *, now: datetime | None = None) -> StoredStormRecord:
        return self.transition(record_id, "restore", now=now)

    def supersede(
        self, old_id: str, *, by: str, now: datetime | None = None
    ) -> tuple[StoredStormRecord, StoredStormRecord]:
        """Mark ``old_id`` superseded by ``by``. The old record keeps its title and body; the new
        one lists it in ``supersedes``. Returns (old, new) as written."""
        moment = _stamp(now)
        with self.lock():
            older, newer = self.get(old_id), self.get(by)
            if older.record.key == newer.record.key:
                raise InvalidArguments("a record cannot supersede itself", details={"field": "by"})
            if newer.record.status not in lifecycle.RETRIEVABLE:
                raise InvalidArguments(
                    f"{newer.record.key} is {newer.record.status}; the replacing record must be candidate or active",
                    details={"field": "by"},
                )
            lifecycle.check_operation(older.record.key, "supersede", older.record.status)
            check_provenance(newer.record)
            new_record = newer.record
            if older.record.key not in new_record.superseded_keys:
                new_record = new_record.evolve(
                    supersedes=(*new_record.supersedes, older.record.key),
                    updated_at=_touched_at(new_record, moment),
                )
            replacement = StoredStormRecord(new_record, newer.path)
            return self._supersede_pair(older, replacement, newer.path.read_bytes(), moment)

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
        return ForgetOutcome(id=item.record.key, kind=item.record.kind, path=str(item.path), destroyed=True)


__all__ = [
    "RECORDS_DIR", "STORE_DIR_NAME", "STORE_FILE", "ForgetOutcome", "Store", "StoreInfo",
    "StoredStormRecord", "default_source", "find_store", "global_store_dir", "resolve_store_dir",
]  # fmt: skip
