"""Conflicts: the remote versions sync kept beside local ones, listed and resolved.

When both sides changed the same field or the body of a record, the local version stays at
``<slug>.md`` and the remote one is written beside it as ``<slug>.conflict.<short id>.md`` (the
short id is the remote version's git blob id; any other file gets ``<name>.conflict.<id>.<ext>``).
Listing, search, views and gc skip sidecars (:func:`memosite.vault.is_record_name`);
:func:`list_conflicts` finds them all, with both versions' ``updated``, author and a diff, and
:func:`resolve_conflict` ends one in a single commit: take the local version, take the remote
one, or — after editing the record by hand — keep the file as it now is.
"""

from __future__ import annotations

import contextlib
import difflib
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from memosite.errors import InvalidArguments, InvalidRecord, RecordNotFound
from memosite.kinds import RECORD_DIRS
from memosite.schema import Record, parse_record
from memosite.sync.paths import SidecarName, blob_id, classify, parse_sidecar, record_project
from memosite.vault import CONFLICT_MARK, Vault, atomic_write_bytes

Take = Literal["local", "remote"]
DIFF_LINES = 400
_MARKERS = re.compile(r"^(?:<{7}|>{7})(?: |$)|^={7}$", re.MULTILINE)


@dataclass(frozen=True)
class VersionInfo:
    """One side of a conflict: whether it exists, its ``updated``, who wrote it and in which commit."""

    exists: bool
    updated: str | None = None
    author: str | None = None
    authored_at: str | None = None
    commit: str | None = None
    uncommitted: bool = False  # the local file differs from the last commit of it

    def to_json(self) -> dict[str, Any]:
        return {
            "exists": self.exists,
            "updated": self.updated,
            "author": self.author,
            "authoredAt": self.authored_at,
            "commit": self.commit,
            "uncommitted": self.uncommitted,
        }


@dataclass(frozen=True)
class Conflict:
    """A sidecar and the file it stands beside. ``project``/``kind``/``record_id`` are None for a
    file that is not a record (``config.json``); ``diff`` is empty unless details were asked for."""

    path: str
    sidecar: str
    short_id: str
    project: str | None
    kind: str | None
    record_id: str | None
    local: VersionInfo
    remote: VersionInfo
    diff: str = ""

    @property
    def is_record(self) -> bool:
        return self.project is not None

    @property
    def slug(self) -> str:
        return Path(self.path).stem

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "sidecar": self.sidecar,
            "shortId": self.short_id,
            "project": self.project,
            "kind": self.kind,
            "id": self.record_id,
            "local": self.local.to_json(),
            "remote": self.remote.to_json(),
            "diff": self.diff,
        }


def _sidecar_candidates(vault: Vault, project: str | None) -> list[Path]:
    """Every file named like a sidecar where memosite writes them: the vault root, each project's
    directory and its kind directories."""
    directories = [vault.root] if project is None else []
    projects = [project] if project is not None else vault.projects()
    for name in projects:
        base = vault.root / "projects" / name
        if base.is_dir() and not base.is_symlink():
            directories.append(base)
            directories.extend(base / sub for sub in RECORD_DIRS)
    found: list[Path] = []
    for directory in directories:
        if directory.is_symlink():
            continue
        try:
            entries = list(os.scandir(directory))
        except (FileNotFoundError, NotADirectoryError):
            continue
        found.extend(
            Path(entry.path)
            for entry in entries
            if CONFLICT_MARK in entry.name and entry.is_file(follow_symlinks=False)
        )
    return sorted(found)


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except (FileNotFoundError, IsADirectoryError):
        return None


def _parsed(data: bytes | None) -> Record | None:
    if data is None:
        return None
    try:
        return parse_record(data.decode("utf-8"), validate=False)
    except (InvalidRecord, UnicodeDecodeError):
        return None


def list_conflicts(vault: Vault, project: str | None = None, *, details: bool = True) -> list[Conflict]:
    """Every conflict sidecar of the vault (of ``project`` only, when given: its records'
    conflicts, no other file's). ``details`` adds the authors (from git history) and the diff."""
    conflicts = []
    for sidecar_file in _sidecar_candidates(vault, project):
        relative = vault.relative(sidecar_file)
        name = parse_sidecar(relative)
        if name is None:
            continue
        conflicts.append(_describe(vault, relative, name, details))
    return conflicts


def _describe(vault: Vault, relative: str, name: SidecarName, details: bool) -> Conflict:
    local_bytes = _read(vault.root / name.original)
    remote_bytes = _read(vault.root / relative) or b""
    is_record = classify(name.original) == "record"
    local_record, remote_record = (_parsed(local_bytes), _parsed(remote_bytes)) if is_record else (None, None)
    known = local_record or remote_record
    local = VersionInfo(local_bytes is not None, _updated(local_record))
    remote = VersionInfo(True, _updated(remote_record))
    diff = ""
    if details:
        local = _with_local_author(vault, name.original, local, local_bytes)
        remote = _with_remote_author(vault, name.original, remote, remote_bytes)
        diff = _diff(name.original, relative, local_bytes, remote_bytes)
    return Conflict(
        path=name.original,
        sidecar=relative,
        short_id=name.short_id,
        project=record_project(name.original) if is_record else None,
        kind=str(known.frontmatter.get("kind")) if known is not None and known.frontmatter.get("kind") else None,
        record_id=str(known.frontmatter.get("id")) if known is not None and known.frontmatter.get("id") else None,
        local=local,
        remote=remote,
        diff=diff,
    )


def _updated(record: Record | None) -> str | None:
    value = record.frontmatter.get("updated") if record is not None else None
    return str(value) if value is not None else None


def _git_log(vault: Vault, *args: str) -> list[list[str]]:
    if not (vault.root / ".git").exists():
        return []
    from memosite.gitsync import run_git

    result = run_git(vault.root, "log", "--format=%an <%ae>%x00%aI%x00%h", *args, env={"GIT_OPTIONAL_LOCKS": "0"})
    return [line.split("\0") for line in result.stdout.splitlines() if line.count("\0") == 2]


def _with_local_author(vault: Vault, path: str, info: VersionInfo, data: bytes | None) -> VersionInfo:
    if not info.exists:
        return info
    rows = _git_log(vault, "-1", "HEAD", "--", path)
    if not rows:
        return VersionInfo(True, info.updated, uncommitted=True)
    author, at, commit = rows[0]
    from memosite.gitsync import run_git

    shown = run_git(vault.root, "rev-parse", "-q", "--verify", f"HEAD:{path}", env={"GIT_OPTIONAL_LOCKS": "0"})
    uncommitted = data is None or shown.stdout.strip() != blob_id(data)
    return VersionInfo(True, info.updated, author, at, commit, uncommitted)


def _with_remote_author(vault: Vault, path: str, info: VersionInfo, data: bytes) -> VersionInfo:
    """The author of the commit that wrote this version of the record (found by its blob id)."""
    rows = _git_log(vault, "--all", f"--find-object={blob_id(data)}", "--", path)
    if not rows:
        return info
    author, at, commit = rows[-1]  # the oldest: where the version appeared, not where it was replaced
    return VersionInfo(True, info.updated, author, at, commit)


def _diff(path: str, sidecar: str, local: bytes | None, remote: bytes) -> str:
    left = (local or b"").decode("utf-8", "replace").splitlines(keepends=True)
    right = remote.decode("utf-8", "replace").splitlines(keepends=True)
    lines = list(difflib.unified_diff(left, right, f"local/{path}", f"remote/{sidecar}"))
    if len(lines) > DIFF_LINES:
        lines = [*lines[:DIFF_LINES], f"… {len(lines) - DIFF_LINES} more diff lines\n"]
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


# --- resolving -------------------------------------------------------------------------------


@dataclass
class ResolveResult:
    path: str
    take: str  # "local", "remote" or "edited"
    removed_sidecars: list[str]
    project: str | None
    record_id: str | None

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "take": self.take,
            "removedSidecars": self.removed_sidecars,
            "project": self.project,
            "id": self.record_id,
        }


def find_conflicts(vault: Vault, ref: str, project: str | None = None) -> list[Conflict]:
    """The sidecars ``ref`` names: a record id or slug (all of its sidecars), a short id, a
    sidecar's file name or path. RECORD_NOT_FOUND when none; INVALID_ARGUMENTS when it names
    sidecars of more than one file."""
    ref = ref.strip()
    if not ref:
        raise InvalidArguments("resolve needs the id of a record with a conflict (or a sidecar's id)")
    candidates = list_conflicts(vault, project, details=False)
    exact = [c for c in candidates if ref in (c.short_id, c.sidecar, Path(c.sidecar).name)]
    chosen = exact or [c for c in candidates if ref in (c.record_id, c.slug, c.path)]
    if not chosen:
        where = f" in project {project}" if project else ""
        raise RecordNotFound(f"no conflict for {ref!r}{where} (memosite conflicts lists them)")
    paths = sorted({c.path for c in chosen})
    if len(paths) > 1:
        raise InvalidArguments(f"{ref!r} names conflicts of several files ({', '.join(paths)}): give a sidecar's id")
    return chosen


def resolve_conflict(vault: Vault, ref: str, *, project: str | None = None, take: Take | None = None) -> ResolveResult:
    """End the conflict(s) ``ref`` names in one commit, removing the sidecar(s).

    ``take="local"`` keeps the file in place; ``"remote"`` puts the sidecar's version there (one
    sidecar only); None keeps the file as it now is, after a hand edit — it must be a valid record
    without conflict markers."""
    chosen = find_conflicts(vault, ref, project)
    conflict = chosen[0]
    if take == "remote" and len(chosen) > 1:
        ids = ", ".join(c.short_id for c in chosen)
        raise InvalidArguments(f"{conflict.path} has {len(chosen)} remote versions ({ids}): resolve one by its id")
    target = vault.root / conflict.path
    if take is None:
        current = _read(target)
        if current is None:
            raise InvalidArguments(
                f"{conflict.path} no longer exists here: --take remote brings the remote version back,"
                " --take local drops it"
            )
        if _MARKERS.search(current.decode("utf-8", "replace")):
            raise InvalidArguments(f"{conflict.path} still holds conflict markers: finish the edit first")
    if conflict.is_record:
        _resolve_record(vault, conflict, chosen, take)
    else:
        _resolve_file(vault, conflict, chosen, take)
    return ResolveResult(
        path=conflict.path,
        take=take or "edited",
        removed_sidecars=[c.sidecar for c in chosen],
        project=conflict.project,
        record_id=conflict.record_id,
    )


def _resolve_record(vault: Vault, conflict: Conflict, chosen: list[Conflict], take: Take | None) -> None:
    from memosite.indexing import read_record
    from memosite.mutation import mutation

    assert conflict.project is not None
    target = vault.root / conflict.path
    label = f"{conflict.kind or 'record'}:{conflict.record_id or conflict.slug}"
    with mutation(vault, f"resolve {label} ({take or 'edited'})") as unit:
        kinds = {conflict.kind or "trap"}
        if take == "remote":
            text = (vault.root / conflict.sidecar).read_bytes().decode("utf-8", "replace")
            try:
                record = parse_record(text, target)
            except InvalidRecord as exc:
                raise InvalidRecord(
                    f"the remote version is not a valid record ({exc.message}): edit {conflict.path} by hand,"
                    f" then run `memosite resolve {conflict.record_id or conflict.slug}`"
                ) from exc
            unit.write(record, target, text=text)
            kinds.add(record.kind)
        elif take is None:
            record = read_record(target)
            unit.write(record, target, text=target.read_bytes().decode("utf-8"))
            kinds.add(record.kind)
        for sidecar in chosen:
            unit.discard(vault.root / sidecar.sidecar)
            unit.note(f"removed {sidecar.sidecar}")
        unit.touch(conflict.project, kinds)


def _resolve_file(vault: Vault, conflict: Conflict, chosen: list[Conflict], take: Take | None) -> None:
    from memosite import gitsync

    with vault.lock():
        if take == "remote":
            atomic_write_bytes(vault.root / conflict.path, (vault.root / conflict.sidecar).read_bytes())
        for sidecar in chosen:
            with contextlib.suppress(FileNotFoundError):
                (vault.root / sidecar.sidecar).unlink()
        gitsync.request_commit(vault, f"resolve {conflict.path} ({take or 'edited'})")
