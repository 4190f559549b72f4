"""What becomes of one path both sides of a merge changed: the one rule table sync, its dry run and
the git merge driver share.

* a **record** merges field by field (:mod:`memosite.sync.recordmerge`); a conflict keeps the local
  version and puts the remote one beside it. Removed on one side and edited on the other, the
  tombstone rule decides (:mod:`memosite.sync.tombstones`).
* a compiled **view** keeps the local text: it is rewritten from the merged records afterwards.
* an append-only **``.jsonl``** log (``tombstones.jsonl``, session events) keeps every line either
  side has (less the lines a side removed).
* the vault's **``config.json``** merges key by key (:func:`merge_config`): a key one side changed
  takes that side, and a side that left a key at memosite's default (a joining vault's config as
  ``init`` wrote it) takes the other side's value; a key both set differently is a conflict. Only
  team settings travel: a machine setting (``vaultGit.*``, ``sessions.root``) of the other side
  is never taken (see :mod:`memosite.settings`).
* any other **file** (``.gitignore`` …) gets git's own three-way text merge; where that would need
  conflict markers, the local file stays and the remote one goes beside it.

Nothing is ever lost: a version that is not kept in place is kept in a sidecar.
"""

from __future__ import annotations

import copy
import json
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from memosite.gitcommand import run_git_bytes
from memosite.settings import MACHINE_KEYS, TEAM_DEFAULTS, present_keys, settings_text, with_value, without
from memosite.sync.paths import classify, sidecar_path
from memosite.sync.recordmerge import merge_record
from memosite.sync.tombstones import judge_deletion

Outcome = Literal[
    "merged",  # both sides' changes combined
    "conflict",  # local kept, remote beside it in a sidecar
    "purged",  # a tombstone newer than the other side's edit: the record goes
    "kept-after-purge",  # removed on one side, edited later on the other: the edit stays
    "kept",  # a non-record file removed on one side and changed on the other: the change stays
]

Side = Literal["local", "remote"]


@dataclass(frozen=True)
class Resolution:
    """The merged state of one path: ``content`` None means the path is removed."""

    path: str
    outcome: Outcome
    content: bytes | None
    sidecar: str | None = None
    sidecar_content: bytes | None = None
    reason: str = ""
    deleted_at: datetime | None = None
    edited_at: datetime | None = None
    side: Side | None = None  # which side removed it (purges)


@dataclass(frozen=True)
class MergeContext:
    """What the rules need to know beyond the three versions: the newest tombstone of a path, and
    when a side's history last changed it (``side`` "local" or "remote")."""

    tombstone_at: Callable[[str], datetime | None]
    last_commit_seconds: Callable[[str, str], int | None]


def _text(data: bytes | None) -> str | None:
    if data is None:
        return None
    return data.decode("utf-8")


def resolve_path(
    path: str, base: bytes | None, ours: bytes | None, theirs: bytes | None, context: MergeContext
) -> Resolution:
    """Resolve ``path``, changed on both sides since ``base`` (None: absent on that side)."""
    kind = classify(path)
    if ours is not None and theirs is not None:
        if kind == "record":
            return _merge_record(path, base, ours, theirs)
        if kind in ("view", "sidecar"):
            return Resolution(path, "merged", ours, reason="kept the local version")
        if kind == "jsonl":
            return Resolution(path, "merged", union_lines(base, ours, theirs))
        merged = merge_config(base, ours, theirs) if kind == "config" else merge_text_file(base, ours, theirs)
        if merged is not None:
            return Resolution(path, "merged", merged)
        return _conflict(path, ours, theirs, "both sides changed the same lines")
    if kind == "record" and base is not None:
        return _deleted_on_one_side(path, base, ours, theirs, context)
    kept = ours if ours is not None else theirs
    return Resolution(path, "kept", kept, reason="removed on one side, changed on the other: the change stays")


def _conflict(path: str, ours: bytes, theirs: bytes, reason: str) -> Resolution:
    return Resolution(path, "conflict", ours, sidecar_path(path, theirs), theirs, reason)


def _merge_record(path: str, base: bytes | None, ours: bytes, theirs: bytes) -> Resolution:
    try:
        base_text = _text(base) if base else None
        merged = merge_record(base_text, ours.decode("utf-8"), theirs.decode("utf-8"))
    except UnicodeDecodeError:
        return _conflict(path, ours, theirs, "a version is not UTF-8 text")
    if merged.conflict:
        return _conflict(path, ours, theirs, merged.reason)
    return Resolution(path, "merged", merged.text.encode("utf-8"))


def _deleted_on_one_side(
    path: str, base: bytes, ours: bytes | None, theirs: bytes | None, context: MergeContext
) -> Resolution:
    deleting: Side = "local" if ours is None else "remote"
    editing: Side = "remote" if ours is None else "local"
    edited = theirs if ours is None else ours
    assert edited is not None
    try:
        edited_text = edited.decode("utf-8")
        base_text = base.decode("utf-8")
    except UnicodeDecodeError:
        edited_text, base_text = "", None
    verdict = judge_deletion(
        base=base_text,
        edited=edited_text,
        tombstone_at=context.tombstone_at(path),
        deletion_commit_seconds=context.last_commit_seconds(deleting, path),
        edit_commit_seconds=context.last_commit_seconds(editing, path),
    )
    if verdict.deletion_wins:
        return Resolution(
            path,
            "purged",
            None,
            reason=f"purged on the {deleting} side after the {editing} side's last edit",
            deleted_at=verdict.deleted_at,
            edited_at=verdict.edited_at,
            side=deleting,
        )
    return Resolution(
        path,
        "kept-after-purge",
        edited,
        reason=f"purged on the {deleting} side, edited on the {editing} side after the purge: kept",
        deleted_at=verdict.deleted_at,
        edited_at=verdict.edited_at,
        side=deleting,
    )


def union_lines(base: bytes | None, ours: bytes, theirs: bytes) -> bytes:
    """Every line either side has, less the lines either side removed from ``base``: our lines in
    our order, then the new lines of theirs in theirs' order (each line once)."""
    base_lines = set(_lines(base or b""))
    our_lines, their_lines = _lines(ours), _lines(theirs)
    removed = (base_lines - set(our_lines)) | (base_lines - set(their_lines))
    seen: set[bytes] = set()
    out: list[bytes] = []
    for line in [*our_lines, *their_lines]:
        if line in removed or line in seen:
            continue
        seen.add(line)
        out.append(line)
    return b"".join(line + b"\n" for line in out)


def _lines(data: bytes) -> list[bytes]:
    return [line for line in data.split(b"\n") if line.strip()]


_CONFLICT = object()
_ABSENT = object()


def merge_config(base: bytes | None, ours: bytes, theirs: bytes) -> bytes | None:
    """``config.json`` merged key by key (ours when nothing of theirs is to be taken, byte for
    byte); None when a key was set differently on both sides (or a side is not a JSON object)."""
    try:
        parsed = [json.loads(data) if data is not None else None for data in (base, ours, theirs)]
    except (UnicodeDecodeError, ValueError):
        return None
    old, mine, yours = parsed
    if not isinstance(mine, dict) or not isinstance(yours, dict):
        return None
    base_team = without(old, MACHINE_KEYS) if isinstance(old, dict) else _ABSENT
    merged = _merge_value(base_team, without(mine, MACHINE_KEYS), without(yours, MACHINE_KEYS), TEAM_DEFAULTS)
    if merged is _CONFLICT:
        return None
    # Our own machine settings (an older memosite's, not moved out yet) stay as they were.
    for key in present_keys(mine, MACHINE_KEYS):
        section, _, name = key.partition(".")
        merged = with_value(merged, key, mine[section][name])
    if merged == mine:
        return ours
    return settings_text(merged).encode("utf-8")


def _merge_value(base: Any, ours: Any, theirs: Any, default: Any) -> Any:
    """One config value: the same on both sides, changed (from ``base``) on one side only, left at
    its ``default`` (or absent) on one side; objects merge key by key; else a conflict."""
    if ours == theirs:
        return ours
    if base is not _ABSENT:
        if ours == base:
            return theirs
        if theirs == base:
            return ours
    if isinstance(ours, dict) and isinstance(theirs, dict):
        merged = {}
        defaults = default if isinstance(default, dict) else {}
        old = base if isinstance(base, dict) else {}
        for key in [*ours, *(k for k in theirs if k not in ours)]:
            value = _merge_value(
                old.get(key, _ABSENT), ours.get(key, _ABSENT), theirs.get(key, _ABSENT), defaults.get(key, _ABSENT)
            )
            if value is _CONFLICT:
                return _CONFLICT
            if value is not _ABSENT:
                merged[key] = value
        return merged
    # A value left at memosite's default (or absent) was never chosen: the other side's stands.
    if theirs is _ABSENT or ours is _ABSENT:
        return ours if theirs is _ABSENT else theirs
    if default is not _ABSENT and ours == default:
        return copy.deepcopy(theirs)
    if default is not _ABSENT and theirs == default:
        return ours
    return _CONFLICT


def merge_text_file(base: bytes | None, ours: bytes, theirs: bytes) -> bytes | None:
    """git's three-way text merge (``git merge-file``); None when it would need conflict markers
    (or a side is binary)."""
    if b"\0" in ours or b"\0" in theirs or (base is not None and b"\0" in base):
        return None
    with tempfile.TemporaryDirectory(prefix="memosite-merge-") as scratch:
        files = []
        for name, data in (("ours", ours), ("base", base or b""), ("theirs", theirs)):
            file = Path(scratch) / name
            file.write_bytes(data)
            files.append(os.fspath(file))
        result = run_git_bytes(None, "merge-file", "-p", "-q", args=files)
    return result.stdout if result.returncode == 0 else None
