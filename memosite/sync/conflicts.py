"""Conflicts: the versions sync kept beside records, listed and resolved.

When both sides changed the same field or the body of a record, the merging machine keeps its
version at ``<slug>.md`` (*in place*) and writes the other one beside it as
``<slug>.conflict.<short id>.md`` (the *sidecar*; the short id is that version's git blob id; any
other file gets ``<name>.conflict.<id>.<ext>``). Every machine then syncs the same two files, so
"local" and "remote" only describe them on the machine that made the conflict: everywhere the
versions are named by place, and :mod:`memosite.sync.authorship` says which one this machine
wrote. Listing, search, views and gc skip sidecars (:func:`memosite.vault.is_record_name`);
:func:`list_conflicts` finds them all, with both versions' ``updated``, writer and a diff, and
:func:`resolve_conflict` ends one in a single commit: keep this machine's version or the other
(``mine``/``theirs``; ``local``/``remote`` mean the same), the version in place or the sidecar's
(``in-place``/``sidecar``), or — after editing the record by hand — the file as it now is.
"""

from __future__ import annotations

import contextlib
import dataclasses
import difflib
import os
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, get_args

from memosite.errors import InvalidArguments, InvalidRecord, RecordNotFound
from memosite.kinds import RECORD_DIRS
from memosite.schema import Record, parse_record
from memosite.suggest import did_you_mean, near_misses
from memosite.sync.authorship import PLACES, Authorship, Origin, Place, Removal, Writer
from memosite.sync.paths import SidecarName, blob_id, classify, parse_sidecar, record_project
from memosite.sync.recordmerge import COUNTERS, EARLIEST_WINS, LATEST_WINS
from memosite.vault import CONFLICT_MARK, Vault, atomic_write_bytes

Take = Literal["mine", "theirs", "local", "remote", "in-place", "sidecar"]
TAKES: tuple[str, ...] = get_args(Take)
DIFF_LINES = 400
_MARKERS = re.compile(r"^(?:<{7}|>{7})(?: |$)|^={7}$", re.MULTILINE)
# Fields that change by themselves (usage counters, their instants): a record differing from its
# version at the conflict only in these was not edited.
_AUTOMATIC_FIELDS = frozenset((*COUNTERS, *LATEST_WINS, *EARLIEST_WINS))


@dataclass(frozen=True)
class VersionInfo:
    """One version of a conflict: whether it exists, its ``updated``, the commit that wrote it and
    its author, and whether that commit was made on this machine (None: cannot tell)."""

    exists: bool
    updated: str | None = None
    author: str | None = None
    authored_at: str | None = None
    commit: str | None = None
    uncommitted: bool = False  # the file in place differs from the last commit of it (written here)
    written_here: bool | None = None
    changed_since_conflict: bool = False  # the file in place is no longer the version of the conflict

    def to_json(self) -> dict[str, Any]:
        return {
            "exists": self.exists,
            "updated": self.updated,
            "author": self.author,
            "authoredAt": self.authored_at,
            "commit": self.commit,
            "uncommitted": self.uncommitted,
            "writtenHere": self.written_here,
            "changedSinceConflict": self.changed_since_conflict,
        }


@dataclass(frozen=True)
class Conflict:
    """A sidecar and the file it stands beside. ``local`` describes the version in place and
    ``remote`` the sidecar's (named for the machine that made the conflict: ``mine`` says which one
    this machine wrote). ``project``/``kind``/``record_id`` are None for a file that is not a record
    (``config.json``); ``diff``, authors, ``mine`` and ``removal`` are empty unless details were
    asked for."""

    path: str
    sidecar: str
    short_id: str
    project: str | None
    kind: str | None
    record_id: str | None
    local: VersionInfo
    remote: VersionInfo
    diff: str = ""
    mine: Place | None = None
    removal: Removal | None = None  # why there is no version in place
    origin: Origin | None = field(default=None, compare=False, repr=False)
    sidecars_of_file: int = 1  # how many sidecars stand beside ``path`` (this one included)

    @property
    def both_mine(self) -> bool:
        """Both versions were written on this machine (a record written here again after the
        conflict): ``mine`` names neither one."""
        return bool(self.local.written_here and self.remote.written_here)

    @property
    def is_record(self) -> bool:
        return self.project is not None

    @property
    def slug(self) -> str:
        return Path(self.path).stem

    @property
    def ref(self) -> str:
        """What ``memosite resolve`` takes for this conflict: the record's id, or the sidecar's
        short id when the record has several sidecars (or is not a record)."""
        if self.sidecars_of_file > 1:
            return self.short_id
        return self.record_id or self.short_id

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
            "mine": self.mine,
            "removal": self.removal.to_json() if self.removal else None,
            "diff": self.diff,
        }

    def lines(self) -> list[str]:
        """The human description: both versions, who wrote each and where, how to end it."""
        name = f"{self.kind} {self.record_id}" if self.record_id else self.path
        out = [f"{name}: {self.path}  (sidecar {self.sidecar}, id {self.short_id})"]
        out.append(f"  in place: {self._describe(self.local)}")
        out.append(f"  sidecar : {self._describe(self.remote)}")
        if self.mine is not None:
            choice = "--take mine|theirs"
        elif self.both_mine:
            choice = "--take in-place|sidecar"
            out.append("  this machine wrote both versions: choose by place (see each one's updated)")
        else:
            choice = "--take in-place|sidecar"
            out.append("  this machine wrote neither version (or its reflog no longer goes back that far)")
        then = f"memosite resolve {self.ref}"
        out.append(f"  end it: {then} {choice} (or edit the {'record' if self.is_record else 'file'}, then: {then})")
        return out

    def _describe(self, info: VersionInfo) -> str:
        if not info.exists:
            return "no version: " + (self.removal.label() if self.removal else "deleted")
        if not info.commit:
            committed = info.uncommitted and info.written_here
            role = "this machine's version, not committed yet" if committed else "a version not in the vault's history"
        else:
            role = {
                True: "this machine's version",
                False: "another machine's version",
                None: "a version from before this machine's reflog begins",
            }[info.written_here]
            role += f", by {info.author or 'unknown'} in {info.commit}"
        notes = []
        if info.changed_since_conflict:
            notes.append("changed since the conflict")
        if info.uncommitted and info.commit is not None:
            notes.append("uncommitted changes")
        return f"{role}, updated {info.updated or '-'}" + (f" ({', '.join(notes)})" if notes else "")


def _sidecar_candidates(vault: Vault, project: str | None, vault_files: bool) -> list[Path]:
    """Every file named like a sidecar where memosite writes them: the vault root (for all
    projects, or with ``vault_files``), each project's directory and its kind directories."""
    directories = [vault.root] if project is None or vault_files else []
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


def list_conflicts(
    vault: Vault, project: str | None = None, *, details: bool = True, vault_files: bool = False
) -> list[Conflict]:
    """Every conflict sidecar of the vault (of ``project`` only, when given: its records'
    conflicts, and with ``vault_files`` those of the vault's own files — ``config.json`` … —
    which every project shares). ``details`` adds who wrote each version and where (from git
    history and this clone's reflog), which one is this machine's, and the diff."""
    authorship = Authorship(vault) if details else None
    conflicts = []
    for sidecar_file in _sidecar_candidates(vault, project, vault_files):
        relative = vault.relative(sidecar_file)
        name = parse_sidecar(relative)
        if name is None:
            continue
        conflicts.append(_describe(vault, relative, name, authorship))
    per_file = Counter(c.path for c in conflicts)
    return [dataclasses.replace(c, sidecars_of_file=per_file[c.path]) for c in conflicts]


def _describe(vault: Vault, relative: str, name: SidecarName, authorship: Authorship | None) -> Conflict:
    local_bytes = _read(vault.root / name.original)
    remote_bytes = _read(vault.root / relative) or b""
    is_record = classify(name.original) == "record"
    local_record, remote_record = (_parsed(local_bytes), _parsed(remote_bytes)) if is_record else (None, None)
    known = local_record or remote_record
    local = VersionInfo(local_bytes is not None, _updated(local_record))
    remote = VersionInfo(True, _updated(remote_record))
    diff, origin = "", None
    if authorship is not None:
        origin = authorship.origin(name.original, relative, local_bytes, remote_bytes)
        local = _in_place_info(authorship, name.original, local, local_bytes, origin)
        remote = _with_writer(remote, origin.sidecar)
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
        mine=origin.mine if origin else None,
        removal=origin.removal if origin else None,
        origin=origin,
    )


def _updated(record: Record | None) -> str | None:
    value = record.frontmatter.get("updated") if record is not None else None
    return str(value) if value is not None else None


def _with_writer(info: VersionInfo, writer: Writer | None, **changes: Any) -> VersionInfo:
    if writer is None:
        return dataclasses.replace(info, **changes)
    commit = writer.commit
    if commit is None:  # not committed yet: this machine's work
        return dataclasses.replace(info, written_here=writer.here, **changes)
    return dataclasses.replace(
        info,
        author=commit.author,
        authored_at=commit.authored_at,
        commit=commit.short,
        written_here=writer.here,
        **changes,
    )


def _in_place_info(
    authorship: Authorship, path: str, info: VersionInfo, data: bytes | None, origin: Origin
) -> VersionInfo:
    """The version in place as it is now: written by the first commit that gave it this content,
    or by this machine when the file differs from HEAD (not committed yet)."""
    if not info.exists:
        return info
    current = blob_id(data) if data is not None else None
    committed = authorship.repo.blob_at("HEAD", path) if authorship.has_history else None
    return _with_writer(
        info,
        origin.in_place,
        uncommitted=committed != current,
        changed_since_conflict=origin.kept_blob is not None and origin.kept_blob != current,
    )


def _diff(path: str, sidecar: str, local: bytes | None, remote: bytes) -> str:
    left = (local or b"").decode("utf-8", "replace").splitlines(keepends=True)
    right = remote.decode("utf-8", "replace").splitlines(keepends=True)
    lines = list(difflib.unified_diff(left, right, f"in-place/{path}", f"sidecar/{sidecar}"))
    if len(lines) > DIFF_LINES:
        lines = [*lines[:DIFF_LINES], f"… {len(lines) - DIFF_LINES} more diff lines\n"]
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


# --- resolving -------------------------------------------------------------------------------


Kept = Literal["in-place", "sidecar", "edited"]
_KEPT_TEXT = {"in-place": "the version in place", "sidecar": "the sidecar's version", "edited": "the record as edited"}


@dataclass
class ResolveResult:
    path: str
    take: str  # what was asked: mine, theirs, local, remote, in-place, sidecar, or "edited"
    kept: Kept  # which version now stands
    kept_mine: bool | None  # whether it is the one this machine wrote (None: not known, or a hand edit)
    removed_sidecars: list[str]
    project: str | None
    record_id: str | None

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "take": self.take,
            "kept": self.kept,
            "keptMine": self.kept_mine,
            "removedSidecars": self.removed_sidecars,
            "project": self.project,
            "id": self.record_id,
        }

    def line(self) -> str:
        whose = {True: " (this machine's)", False: " (the other machine's)", None: ""}[self.kept_mine]
        return f"resolved {self.path}: kept {_KEPT_TEXT[self.kept]}{whose}; removed {', '.join(self.removed_sidecars)}"


def find_conflicts(vault: Vault, ref: str, project: str | None = None) -> list[Conflict]:
    """The sidecars ``ref`` names: a record id or slug (all of its sidecars), a short id, a
    sidecar's file name or path. RECORD_NOT_FOUND when none; INVALID_ARGUMENTS when it names
    sidecars of more than one file."""
    ref = ref.strip()
    if not ref:
        raise InvalidArguments("resolve needs the id of a record with a conflict (or a sidecar's id)")
    candidates = list_conflicts(vault, project, details=False, vault_files=True)
    exact = [c for c in candidates if ref in (c.short_id, c.sidecar, Path(c.sidecar).name)]
    chosen = exact or [c for c in candidates if ref in (c.record_id, c.slug, c.path)]
    if not chosen:
        where = f" in project {project}" if project else ""
        near = near_misses(ref, [name for c in candidates for name in (c.record_id, c.slug, c.short_id) if name])
        raise RecordNotFound(f"no conflict for {ref!r}{where}{did_you_mean(near)} (memosite conflicts lists them)")
    paths = sorted({c.path for c in chosen})
    if len(paths) > 1:
        raise InvalidArguments(f"{ref!r} names conflicts of several files ({', '.join(paths)}): give a sidecar's id")
    return chosen


def _place_of(authorship: Authorship, take: Take, conflict: Conflict, siblings: list[Conflict]) -> Place:
    """The version ``take`` names for this conflict on this machine."""
    if take in PLACES:
        return take
    origin = conflict.origin
    if origin is not None and origin.both_mine:
        assert origin.in_place is not None and origin.sidecar is not None
        newer, older = ("sidecar", "in-place") if authorship.newer(origin.sidecar, origin.in_place) else PLACES
        raise InvalidArguments(
            f"this machine wrote both versions of {conflict.path} (the {newer} one later), so --take {take}"
            f" names neither: choose by place, --take {newer} keeps the later one, --take {older} the earlier"
        )
    if conflict.mine is None:
        raise InvalidArguments(
            f"this machine wrote neither version of {conflict.path} (or no longer remembers which), so"
            f" --take {take} names none: choose by place, --take in-place or --take sidecar (see memosite conflicts)"
        )
    if take in ("mine", "local"):
        _refuse_an_older_write(authorship, conflict, siblings)
        return conflict.mine
    return "sidecar" if conflict.mine == "in-place" else "in-place"


def _refuse_an_older_write(authorship: Authorship, conflict: Conflict, siblings: list[Conflict]) -> None:
    """``mine`` must not put back a write of this machine that a later write of this machine
    followed (the record, written again here, met a new conflict: that version is in place or in
    another sidecar)."""
    origin = conflict.origin
    if origin is None or conflict.mine != "sidecar" or origin.sidecar is None:
        return
    chosen = origin.sidecar
    for other in siblings:
        writer = other.origin.sidecar if other.origin is not None else None
        if other.sidecar == conflict.sidecar or writer is None or not writer.here:
            continue
        if authorship.newer(writer, chosen):
            raise InvalidArguments(
                f"this machine wrote a newer version of {conflict.path} than the one in {conflict.sidecar}: it is"
                f" in {other.sidecar}, so --take mine would bring back an older write; resolve {other.short_id}"
                f" first, or choose by place (--take in-place or --take sidecar)"
            )


def resolve_conflict(vault: Vault, ref: str, *, project: str | None = None, take: Take | None = None) -> ResolveResult:
    """End the conflict(s) ``ref`` names in one commit, removing the sidecar(s).

    ``take`` picks a version: ``mine`` (or ``local``) the one this machine wrote, ``theirs`` (or
    ``remote``) the other one, ``in-place``/``sidecar`` by where it is. None keeps the file as it
    now is, after a hand edit: it must be a valid record without conflict markers, and differ from
    the version that was in place when the conflict was made (else there is no edit to keep)."""
    found = find_conflicts(vault, ref, project)
    authorship = Authorship(vault)
    chosen = [_with_origin(authorship, c) for c in found]
    conflict = chosen[0]
    named = {c.sidecar for c in chosen}
    siblings = chosen + [
        _with_origin(authorship, c)
        for c in list_conflicts(vault, details=False)
        if c.path == conflict.path and c.sidecar not in named
    ]
    target = vault.root / conflict.path
    if take is None:
        kept: Kept = "edited"
        _check_edited(authorship, conflict, chosen, _read(target))
    else:
        places = {_place_of(authorship, take, c, siblings) for c in chosen}
        if len(chosen) > 1 and places != {"in-place"}:
            ids = ", ".join(c.short_id for c in chosen)
            raise InvalidArguments(f"{conflict.path} has {len(chosen)} sidecars ({ids}): resolve one by its id")
        kept = places.pop()
    mine = conflict.mine if all(c.mine == conflict.mine for c in chosen) else None
    if conflict.is_record:
        _resolve_record(vault, conflict, chosen, kept)
    else:
        _resolve_file(vault, conflict, chosen, kept)
    return ResolveResult(
        path=conflict.path,
        take=take or "edited",
        kept=kept,
        kept_mine=None if kept == "edited" or mine is None else kept == mine,
        removed_sidecars=[c.sidecar for c in chosen],
        project=conflict.project,
        record_id=conflict.record_id,
    )


def _with_origin(authorship: Authorship, conflict: Conflict) -> Conflict:
    current = _read(authorship.vault.root / conflict.path)
    sidecar = _read(authorship.vault.root / conflict.sidecar) or b""
    origin = authorship.origin(conflict.path, conflict.sidecar, current, sidecar)
    return dataclasses.replace(conflict, mine=origin.mine, removal=origin.removal, origin=origin)


def _check_edited(authorship: Authorship, conflict: Conflict, chosen: list[Conflict], current: bytes | None) -> None:
    choice = "--take mine|theirs" if conflict.mine is not None else "--take in-place|sidecar"
    if current is None:
        raise InvalidArguments(
            f"{conflict.path} no longer exists here: --take sidecar brings the sidecar's version back,"
            " --take in-place drops the sidecar"
        )
    if _MARKERS.search(current.decode("utf-8", "replace")):
        raise InvalidArguments(f"{conflict.path} still holds conflict markers: finish the edit first")
    for one in chosen:
        before = authorship.kept_bytes(one.origin) if one.origin is not None else None
        if before is not None and _same_content(before, current, conflict.is_record):
            raise InvalidArguments(f"{conflict.path} is unchanged since the conflict: edit it, or pass {choice}")


def _same_content(before: bytes, now: bytes, is_record: bool) -> bool:
    """The same version, but for the usage counters and their instants (which change by themselves)."""
    if before == now or not is_record:
        return before == now
    old, new = _parsed(before), _parsed(now)
    if old is None or new is None:
        return False

    def essence(record: Record) -> tuple[str, dict[str, Any]]:
        fields = {k: v for k, v in record.frontmatter.items() if k not in _AUTOMATIC_FIELDS}
        return record.body, fields

    return essence(old) == essence(new)


def _resolve_record(vault: Vault, conflict: Conflict, chosen: list[Conflict], kept: Kept) -> None:
    from memosite.mutation import mutation
    from memosite.recordfile import read_record

    assert conflict.project is not None
    target = vault.root / conflict.path
    label = f"{conflict.kind or 'record'}:{conflict.record_id or conflict.slug}"
    with mutation(vault, f"resolve {label} (kept {_KEPT_TEXT[kept]})") as unit:
        kinds = {conflict.kind or "trap"}
        if kept == "sidecar":
            text = (vault.root / conflict.sidecar).read_bytes().decode("utf-8", "replace")
            try:
                record = parse_record(text, target)
            except InvalidRecord as exc:
                raise InvalidRecord(
                    f"the sidecar's version is not a valid record ({exc.message}): edit {conflict.path} by hand,"
                    f" then run `memosite resolve {conflict.ref}`"
                ) from exc
            unit.write(record, target, text=text)
            kinds.add(record.kind)
        elif kept == "edited":
            record = read_record(target)
            unit.write(record, target, text=target.read_bytes().decode("utf-8"))
            kinds.add(record.kind)
        for sidecar in chosen:
            unit.discard(vault.root / sidecar.sidecar)
            unit.note(f"removed {sidecar.sidecar}")
        unit.touch(conflict.project, kinds)


def _resolve_file(vault: Vault, conflict: Conflict, chosen: list[Conflict], kept: Kept) -> None:
    from memosite import commitpolicy

    with vault.lock():
        if kept == "sidecar":
            atomic_write_bytes(vault.root / conflict.path, (vault.root / conflict.sidecar).read_bytes())
        for sidecar in chosen:
            with contextlib.suppress(FileNotFoundError):
                (vault.root / sidecar.sidecar).unlink()
        commitpolicy.request_commit(vault, f"resolve {conflict.path} (kept {_KEPT_TEXT[kept]})")


# --- purges ----------------------------------------------------------------------------------


def end_conflicts_of_purged(vault: Vault, refs: Sequence[str] = ("HEAD",)) -> list[Conflict]:
    """Remove the sidecars of records purged after their conflict was made, and return those
    conflicts. A purge forgets the record, every version of it: a sidecar left behind would stand
    for a record nobody holds, and say nothing true about where it went.

    "After" is sure when the record was removed with the sidecar beside it (the purge saw the
    conflict: no clock is asked); otherwise the record's newest tombstone must be later than the
    commit that made the conflict, as ``refs``' history tells (a merge in progress passes
    ``MERGE_HEAD`` too). A record removed without a tombstone keeps its sidecar: that version is
    still to be decided on."""
    orphans = [c for c in list_conflicts(vault, details=False) if c.is_record and not c.local.exists]
    if not orphans:
        return []
    authorship = Authorship(vault)
    ended = []
    for conflict in orphans:
        if not authorship.tombstoned(conflict.path):
            continue
        if not authorship.removed_beside(conflict.path, conflict.sidecar):
            made = authorship.repo.first_addition(conflict.sidecar, refs) if authorship.has_history else None
            try:
                since = made.seconds if made is not None else (vault.root / conflict.sidecar).stat().st_mtime
            except FileNotFoundError:
                continue
            if not authorship.purged_after(conflict.path, since):
                continue
        with contextlib.suppress(FileNotFoundError):
            (vault.root / conflict.sidecar).unlink()
        ended.append(conflict)
    return ended
