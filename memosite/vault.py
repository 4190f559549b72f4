"""The vault on disk: layout, kind directories, the vault lock, atomic writes, listing, tombstones."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memosite.config import VaultConfig, load_config, validate_project_id
from memosite.errors import LockTimeout, SafetyViolation, StorageError, shown_path
from memosite.kinds import RECORD_DIRS
from memosite.lockfile import LockBusy, LockFile, lock_file
from memosite.schema import format_iso, subdir_for_kind, utc_now, validate_slug
from memosite.settings import CONFIG_FILE, MACHINE_FILE, TEAM_DEFAULTS, settings_text
from memosite.warning import warn as warn  # re-exported: the modules that warn import it from here

if TYPE_CHECKING:
    import jinja2

    from memosite.index.database import Index
    from memosite.mutation import Mutation
    from memosite.provenance import Actor

TEMP_PREFIX = ".memosite-tmp-"
CONFLICT_MARK = ".conflict."
# An agent's change of a record a person approved, kept beside that record until a person decides
# (``<slug>.proposed.md``, see memosite.proposals), and the accepted version older versions kept
# beside a pending record (``<slug>.accepted.md``): vault Markdown that git syncs, never a record.
PROPOSED_SUFFIX = ".proposed.md"
ACCEPTED_SUFFIX = ".accepted.md"
INTERNAL_DIR = ".memosite"
LOCK_TIMEOUT_SECONDS = 60.0
TOMBSTONES_FILE = "tombstones.jsonl"

# What memosite can rebuild or only needs on this machine, as git ignore patterns relative to the
# vault root: everything under .memosite/ but the tombstones (the history sync needs), temp files
# of interrupted writes, the demo's marker, and the derived parts of each session directory (its
# events.jsonl is the canonical log and stays). This machine's settings file is no part of the
# team's vault either: it is kept, but never committed.
DISPOSABLE_PATTERNS = (
    f"/{MACHINE_FILE}",
    f"/{INTERNAL_DIR}/*",
    f"!/{INTERNAL_DIR}/{TOMBSTONES_FILE}",
    f"{TEMP_PREFIX}*",
    "/projects/*/.memosite-demo",
    "/projects/*/sessions/*/derived/",
    "/projects/*/sessions/*/index/",
    "/projects/*/sessions/*/manifest.json",
    "/projects/*/sessions/*/*.pending",
)


def is_temp_name(name: str) -> bool:
    return name.startswith(TEMP_PREFIX)


def is_record_name(name: str) -> bool:
    """A file the store owns: ``*.md``, not a temp file, not a ``.conflict.``, ``.proposed.md`` or
    ``.accepted.md`` sidecar."""
    return (
        name.endswith(".md")
        and not is_temp_name(name)
        and CONFLICT_MARK not in name
        and not name.endswith((PROPOSED_SUFFIX, ACCEPTED_SUFFIX))
    )


def _fsync_dir(directory: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def atomic_write_bytes(path: Path, data: bytes | Sequence[bytes], *, mode: int = 0o644, durable: bool = True) -> None:
    """Write ``path`` so that readers see the old or the new content, never a torn file.

    Temp file in the same directory, fsync, rename over the target, fsync the directory.
    ``data`` may be a sequence of pieces, written in order without joining them first.
    """
    directory = path.parent
    try:
        directory.mkdir(parents=True, exist_ok=True)
        fd, temp_name = tempfile.mkstemp(prefix=TEMP_PREFIX, dir=directory)
    except OSError as exc:
        raise StorageError(f"cannot write {shown_path(path)}: {exc.strerror or exc}") from exc
    try:
        with os.fdopen(fd, "wb") as handle:
            if isinstance(data, bytes):
                handle.write(data)
            else:
                handle.writelines(data)
            handle.flush()
            if durable:
                os.fsync(handle.fileno())
        os.chmod(temp_name, mode)
        os.replace(temp_name, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(temp_name)
        raise StorageError(f"cannot write {shown_path(path)}: {exc.strerror or exc}") from exc
    if durable:
        _fsync_dir(directory)


def atomic_write_text(path: Path, text: str, *, mode: int = 0o644, durable: bool = True) -> None:
    atomic_write_bytes(path, text.encode("utf-8"), mode=mode, durable=durable)


@dataclass(frozen=True)
class RecordFile:
    """A record file found by a scan, before (or without) parsing it."""

    path: Path
    relative: str
    kind: str
    id: str


@dataclass(frozen=True)
class Tombstone:
    """The record of one physically removed record file."""

    project: str
    kind: str
    id: str
    path: Path
    reason: str


@dataclass(slots=True)  # an attribute no field declares is an error, at run time and for mypy
class Vault:
    """One vault root. Open it with :meth:`Vault.open`; all paths are derived from here."""

    root: Path
    config: VaultConfig
    # The git work tree of the product being worked on; writes into a vault inside it are refused.
    product_root: Path | None = None
    # Who changes the vault through this object, worked out when a change first asks (the CLI's
    # asks git, which a read-only command never needs); see the ``actor`` property.
    actor_source: Callable[[], Actor | None] | None = field(default=None, repr=False, compare=False)
    # What an open vault object carries for the layers above it (set by them, never passed in):
    # the unit of work running on it (memosite.mutation), so that a unit opened inside another
    # joins it; and the Jinja environment of its templates with their checksum
    # (memosite.template_env), built once per vault object and checksum.
    current_unit: Mutation | None = field(default=None, init=False, repr=False, compare=False)
    template_cache: tuple[str, jinja2.Environment] | None = field(default=None, init=False, repr=False, compare=False)
    _index: Index | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def actor(self) -> Actor | None:
        """Who changes the vault through this object (set by the CLI or the MCP server); None: a
        person, with git's own identity."""
        source = self.actor_source
        if source is None:
            return None
        actor = source()
        self.actor_source = lambda: actor  # asked once
        return actor

    @actor.setter
    def actor(self, actor: Actor | None) -> None:
        self.actor_source = (lambda: actor) if actor is not None else None

    @classmethod
    def open(cls, root: Path | str, *, create: bool = True) -> Vault:
        root = Path(root).absolute()
        if create:
            ensure_vault_structure(root)
        elif not root.is_dir():
            raise StorageError(f"vault not found: {root}")
        config = load_config(root)
        if create:
            config = carry_out_machine_plan(root, config)
        return cls(root=root, config=config)

    # --- paths -------------------------------------------------------------------------------
    @property
    def internal_dir(self) -> Path:
        """``.memosite/``, never through a symlink (SAFETY_VIOLATION when it is one)."""
        path = self.root / INTERNAL_DIR
        if path.is_symlink():
            raise SafetyViolation(
                f"refusing to use {INTERNAL_DIR}/: it is a symlink (memosite's own files stay in the vault)"
            )
        return path

    def internal_path(self, *parts: str) -> Path:
        """A path under ``.memosite/`` reached without following a symlink: every existing part on
        the way is checked, so a planted link can never send a write outside the vault."""
        current = self.internal_dir
        for depth, part in enumerate(parts, start=1):
            current = current / part
            if current.is_symlink():
                shown = "/".join([INTERNAL_DIR, *parts[:depth]])
                raise SafetyViolation(
                    f"refusing to use {shown}: it is a symlink (memosite's own files are never reached through links)",
                    details={"path": shown},
                )
        return current

    @property
    def index_path(self) -> Path:
        return self.internal_path("index.sqlite")

    @property
    def tombstones_path(self) -> Path:
        return self.internal_path(TOMBSTONES_FILE)

    def project_dir(self, project: str) -> Path:
        return self.root / "projects" / validate_project_id(project)

    def kind_dir(self, project: str, kind: str) -> Path:
        return self.project_dir(project) / subdir_for_kind(kind)

    def record_path(self, project: str, kind: str, slug: str) -> Path:
        return self.kind_dir(project, kind) / f"{validate_slug(slug)}.md"

    def relative(self, path: Path) -> str:
        return path.relative_to(self.root).as_posix()

    def contains(self, path: Path) -> bool:
        """True when ``path`` exists, is not a symlink and really lives inside the vault."""
        try:
            if path.is_symlink():
                return False
            path.resolve(strict=True).relative_to(self.root.resolve())
        except (OSError, ValueError):
            return False
        return True

    def projects(self) -> list[str]:
        try:
            with os.scandir(self.root / "projects") as entries:
                return sorted(
                    entry.name
                    for entry in entries
                    if not entry.name.startswith(".") and entry.is_dir(follow_symlinks=False)
                )
        except (FileNotFoundError, NotADirectoryError):
            return []

    # --- lock --------------------------------------------------------------------------------
    def lock(self, timeout: float = LOCK_TIMEOUT_SECONDS) -> contextlib.AbstractContextManager[Any]:
        """The re-entrant, cross-process vault lock every mutation runs under."""
        return _translate_timeout(lock_file(self.internal_path("vault.lock")), timeout)

    # --- listing -----------------------------------------------------------------------------
    def iter_record_files(self, project: str, subdirs: tuple[str, ...] = RECORD_DIRS) -> Iterator[Path]:
        """Record files of a project in directory order, skipping temp files and sidecars."""
        for _, entry in self.record_dir_entries(project, subdirs):
            yield Path(entry.path)

    def record_dir_entries(
        self, project: str, subdirs: tuple[str, ...] = RECORD_DIRS
    ) -> Iterator[tuple[str, os.DirEntry[str]]]:
        """``(kind directory, directory entry)`` of each file :meth:`iter_record_files` lists, in
        its order (a walk over thousands of files that needs no Path object per file)."""
        base = self.project_dir(project)
        if base.is_symlink():
            return
        for subdir in subdirs:
            directory = base / subdir
            if directory.is_symlink():
                continue  # never read records from outside the vault
            try:
                entries = sorted(os.scandir(directory), key=lambda entry: entry.name)
            except (FileNotFoundError, NotADirectoryError):
                continue
            for entry in entries:
                if is_record_name(entry.name) and entry.is_file(follow_symlinks=False):
                    yield subdir, entry

    # --- tombstones --------------------------------------------------------------------------
    def record_tombstones(self, tombstones: Sequence[Tombstone], now: datetime | None = None) -> None:
        """Append several tombstones with one fsync (gc removes thousands of files at once).

        Call it before unlinking the files, so a crash never loses the record of a deletion.
        """
        if not tombstones:
            return
        stamp = format_iso(now or utc_now())
        lines = "".join(
            json.dumps(
                {
                    "project": t.project,
                    "kind": t.kind,
                    "id": t.id,
                    "path": self.relative(t.path),
                    "reason": t.reason,
                    "deletedAt": stamp,
                },
                sort_keys=True,
            )
            + "\n"
            for t in tombstones
        )
        self.internal_dir.mkdir(parents=True, exist_ok=True)
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
        try:
            fd = os.open(self.tombstones_path, flags, 0o644)
        except OSError as exc:
            raise StorageError(f"cannot record tombstones: {exc.strerror or exc}") from exc
        with os.fdopen(fd, "a", encoding="utf-8") as handle:
            handle.write(lines)
            handle.flush()
            os.fsync(handle.fileno())

    def read_tombstones(self) -> list[dict[str, Any]]:
        try:
            lines = self.tombstones_path.read_text(encoding="utf-8").splitlines()
        except FileNotFoundError:
            return []
        entries = []
        for line in lines:
            with contextlib.suppress(ValueError):
                entries.append(json.loads(line))
        return entries

    # --- index -------------------------------------------------------------------------------
    def index(self) -> Index:
        from memosite.index.database import Index

        if self._index is None:
            self._index = Index(self.index_path)
        return self._index

    def close(self) -> None:
        if self._index is not None:
            self._index.close()
            self._index = None


# How often this process took a vault lock it did not already hold (tests count a batch's locks).
lock_acquisitions = 0


@contextlib.contextmanager
def _translate_timeout(file_lock: LockFile, timeout: float) -> Iterator[LockFile]:
    global lock_acquisitions
    try:
        first = file_lock.acquire(timeout)
    except LockBusy as exc:
        raise LockTimeout(f"vault is locked by another process (waited {timeout:.0f}s)") from exc
    if first:
        lock_acquisitions += 1
    try:
        yield file_lock
    finally:
        file_lock.release()


def ensure_vault_structure(root: Path) -> None:
    """Create the vault skeleton and write ``config.json`` with the team defaults if it is missing."""
    try:
        (root / INTERNAL_DIR).mkdir(parents=True, exist_ok=True)
        (root / "projects").mkdir(exist_ok=True)
        config_path = root / CONFIG_FILE
        if not config_path.exists():
            atomic_write_text(config_path, json.dumps(TEAM_DEFAULTS, indent=2) + "\n")
    except OSError as exc:
        raise StorageError(f"cannot create vault at {root}: {exc.strerror or exc}") from exc


def carry_out_machine_plan(root: Path, config: VaultConfig) -> VaultConfig:
    """Write what :func:`memosite.config.load_config` planned for this machine (its machine file,
    ``config.json`` without the machine settings moved out of it) and say so once; the settings
    in effect stay the same. The machine file is this machine's alone (0600: a remote URL may
    hold credentials)."""
    plan = config.plan
    if plan is None:
        return config
    # The machine file first: a crash before config.json is rewritten loses nothing.
    atomic_write_text(root / MACHINE_FILE, settings_text(plan.machine), mode=0o600)
    if plan.team is not None:
        atomic_write_text(root / CONFIG_FILE, settings_text(plan.team))
    notice = plan.notice()
    if notice:
        sys.stderr.write(f"memosite: {notice}\n")
    return dataclasses.replace(config, plan=None)
