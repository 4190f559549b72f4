"""Finishing a ``git merge`` of the remote into the vault, and predicting one for a dry run.

Sync runs ``git merge --no-commit`` with memosite's drivers told only to report (see
:data:`memosite.sync.repo.MERGE_CONFIG`): git merges every path one side changed, and leaves each
path both sides changed unmerged, the local text in place. :func:`resolve_unmerged` then settles
all of them in this process (one ``cat-file`` for every version), by the rules of
:mod:`memosite.sync.resolution`, and stages the result. :func:`preview_merge` applies the same
rules to two commits without touching the work tree.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from memosite.schema import utc_now
from memosite.sync.paths import classify
from memosite.sync.repo import Change, Repo
from memosite.sync.resolution import MergeContext, Resolution, resolve_path
from memosite.sync.tombstones import CLOCK_SKEW, bounded_deletions, parse_tombstone_lines
from memosite.vault import INTERNAL_DIR, TOMBSTONES_FILE, atomic_write_bytes

TOMBSTONES_PATH = f"{INTERNAL_DIR}/{TOMBSTONES_FILE}"
_CHUNK = 500


def unmerged_stages(repo: Repo) -> dict[str, dict[int, str]]:
    """``path -> {stage: blob id}`` of every unmerged path (1 base, 2 ours, 3 theirs)."""
    stages: dict[str, dict[int, str]] = {}
    for entry in repo.git("ls-files", "-u", "-z").split("\0"):
        meta, _, path = entry.partition("\t")
        parts = meta.split()
        if len(parts) == 3 and path:
            stages.setdefault(path, {})[int(parts[2])] = parts[1]
    return stages


def resolve_unmerged(repo: Repo) -> list[Resolution]:
    """Settle every unmerged path of the merge in progress and stage the result."""
    stages = unmerged_stages(repo)
    if not stages:
        return []
    contents = repo.blobs(oid for by_stage in stages.values() for oid in by_stage.values())

    def versions(path: str) -> tuple[bytes | None, bytes | None, bytes | None]:
        by_stage = stages[path]
        base, ours, theirs = (contents.get(by_stage[s]) if s in by_stage else None for s in (1, 2, 3))
        return base, ours, theirs

    logs = sorted(p for p in stages if classify(p) == "jsonl")
    resolutions = [resolve_path(p, *versions(p), _NO_CONTEXT) for p in logs]
    _apply(repo, resolutions)
    try:
        tombstones = (repo.root / TOMBSTONES_PATH).read_text(encoding="utf-8")
    except (FileNotFoundError, UnicodeDecodeError):
        tombstones = ""
    deletions = deletions_in(repo, tombstones, ("HEAD", "MERGE_HEAD"))
    context = MergeContext(
        tombstone_at=deletions.get,
        last_commit_seconds=lambda side, path: not_after_now(
            repo.last_commit_seconds("HEAD" if side == "local" else "MERGE_HEAD", path)
        ),
    )
    rest = [resolve_path(p, *versions(p), context) for p in sorted(stages) if classify(p) != "jsonl"]
    _apply(repo, rest)
    return resolutions + rest


def deletions_in(repo: Repo, tombstones: str, refs: tuple[str, ...]) -> dict[str, datetime]:
    """The newest deletion instant of each path of ``tombstones`` (the text of a
    ``tombstones.jsonl``), each bounded by the commit of ``refs``' history that brought its line in
    (:func:`memosite.sync.tombstones.bounded_deletions`): a tombstone cannot claim the future."""
    lines = parse_tombstone_lines(tombstones)
    if not lines:
        return {}
    carried: dict[str, int] = {}
    for ref in refs:
        for line, seconds in repo.blame_times(ref, TOMBSTONES_PATH).items():
            carried[line] = min(seconds, carried.get(line, seconds))
    return bounded_deletions(lines, carried.get, utc_now())


def not_after_now(seconds: int | None) -> int | None:
    """A commit time, but never later than now plus the clock allowance (a commit dated in the
    future claims no more than a tombstone may)."""
    if seconds is None:
        return None
    return min(seconds, int((utc_now() + CLOCK_SKEW).timestamp()))


def _no_tombstones(path: str) -> None:
    return None


def _no_commits(side: str, path: str) -> None:
    return None


_NO_CONTEXT = MergeContext(tombstone_at=_no_tombstones, last_commit_seconds=_no_commits)


def _apply(repo: Repo, resolutions: list[Resolution]) -> None:
    """Write each resolution into the work tree and stage it (one ``add``, one ``rm``)."""
    added: list[str] = []
    removed: list[str] = []
    for resolution in resolutions:
        target = repo.root / resolution.path
        if resolution.content is None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(target)
            removed.append(resolution.path)
        else:
            if _read(target) != resolution.content:  # an unchanged file keeps its stat (and its index row)
                atomic_write_bytes(target, resolution.content)
            added.append(resolution.path)
        if resolution.sidecar is not None and resolution.sidecar_content is not None:
            atomic_write_bytes(repo.root / resolution.sidecar, resolution.sidecar_content)
            added.append(resolution.sidecar)
    if added:
        repo.git("add", "-f", "--pathspec-from-file=-", "--pathspec-file-nul", input="\0".join(added))
    if removed:
        repo.git(
            "rm",
            "-q",
            "--cached",
            "--ignore-unmatch",
            "--pathspec-from-file=-",
            "--pathspec-file-nul",
            input="\0".join(removed),
        )


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except (FileNotFoundError, IsADirectoryError):
        return None


# --- dry run -----------------------------------------------------------------------------------


@dataclass
class MergePreview:
    """What merging ``theirs`` into ``ours`` would do: ``incoming`` the record changes that come
    in from one side only, ``resolutions`` the paths both sides changed."""

    base: str | None
    incoming: list[Change] = field(default_factory=list)
    resolutions: list[Resolution] = field(default_factory=list)


def preview_merge(repo: Repo, ours: str, theirs: str) -> MergePreview:
    """Predict the merge of ``theirs`` into ``ours`` by the same rules, writing nothing."""
    base = repo.merge_base(ours, theirs)
    preview = MergePreview(base)
    if repo.is_ancestor(theirs, ours):
        return preview
    if repo.is_ancestor(ours, theirs):
        preview.incoming = repo.diff(ours, theirs)
        return preview
    local = {c.path: c for c in repo.diff(base, ours)}
    remote = {c.path: c for c in repo.diff(base, theirs)}
    both = sorted(set(local) & set(remote))
    commits = {"base": base, "ours": ours, "theirs": theirs}
    ids = {name: _tree_blobs(repo, commit, both) for name, commit in commits.items()}
    contested = [p for p in both if ids["ours"].get(p) != ids["theirs"].get(p)]
    preview.incoming = [c for p, c in sorted(remote.items()) if p not in local]
    contents = repo.blobs(oid for by_path in ids.values() for oid in by_path.values())
    logs = [repo.show(commit, TOMBSTONES_PATH) or b"" for commit in (ours, theirs)]
    deletions = deletions_in(repo, b"".join(logs).decode("utf-8", "replace"), (ours, theirs))
    sides = {"local": ours, "remote": theirs}
    context = MergeContext(
        tombstone_at=deletions.get,
        last_commit_seconds=lambda side, path: not_after_now(repo.last_commit_seconds(sides[side], path)),
    )
    for path in contested:
        base_v, ours_v, theirs_v = (
            contents.get(ids[name][path]) if path in ids[name] else None for name in ("base", "ours", "theirs")
        )
        preview.resolutions.append(resolve_path(path, base_v, ours_v, theirs_v, context))
    return preview


def _tree_blobs(repo: Repo, commit: str | None, paths: list[str]) -> dict[str, str]:
    if commit is None:
        return {}
    found: dict[str, str] = {}
    for start in range(0, len(paths), _CHUNK):
        found.update(repo.tree_blobs(commit, paths[start : start + _CHUNK]))
    return found
