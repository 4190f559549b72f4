"""``memosite verify``: every record that cites code gets a verdict against the repository now.

Verdicts (see :mod:`memosite.freshness`) are stored in the index with the commit they were found
at — never written into a record by this read path. ``verify --update ID`` re-pins a record's
citations after a person confirmed it still holds: that is a change to the record, one unit of work.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from memosite.errors import InvalidArguments
from memosite.freshness import (
    RecordVerdict,
    Repository,
    clean_cite_path,
    judge_cite,
    pin_cites,
    read_cites,
    repin_spec,
)
from memosite.index import verdicts
from memosite.lookup import find_record
from memosite.mutation import mutation
from memosite.refresh import ensure_index
from memosite.schema import format_iso, utc_now
from memosite.vault import Vault, warn


@dataclass
class VerifyResult:
    project: str
    repository: str
    commit: str | None
    records: list[RecordVerdict] = field(default_factory=list)
    checked_at: str = ""

    @property
    def uncommitted(self) -> bool:
        """Some verdict was found in changes not committed yet (not at ``commit`` itself)."""
        return any(cite.uncommitted for record in self.records for cite in record.cites)

    def counts(self) -> dict[str, int]:
        found = {"fresh": 0, "drifted": 0, "missing": 0}
        for record in self.records:
            found[record.verdict] += 1
        return found

    def to_json(self) -> dict[str, Any]:
        return {
            "project": self.project,
            "commit": self.commit,
            "uncommitted": self.uncommitted,
            "checkedAt": self.checked_at,
            "counts": self.counts(),
            "records": [record.to_json() for record in self.records],
        }


def verify_project(vault: Vault, project: str, repo_root: Path, *, now: datetime | None = None) -> VerifyResult:
    """Judge every citing record of ``project`` against ``repo_root`` and store the verdicts."""
    if not repo_root.is_dir():
        raise InvalidArguments(f"no repository at {repo_root}: give --repo DIR")
    ensure_index(vault)
    repo = Repository(repo_root)
    result = VerifyResult(project, str(repo_root), repo.head, checked_at=format_iso(now or utc_now()))
    index = vault.index()
    citing = []
    for row in verdicts.citing_records(index, project):
        try:
            cites = read_cites(row.frontmatter)
        except InvalidArguments as exc:
            warn(f"{row.path}: {exc.message}")
            continue
        if cites:
            citing.append((row, cites))
    _check_is_the_repository(repo, [cite.commit for _, cites in citing for cite in cites if cite.commit])
    for row, cites in citing:
        judged = [judge_cite(repo, cite) for cite in cites]
        result.records.append(RecordVerdict(row.path, project, row.kind, row.id, row.title, judged))
    verdicts.replace(
        index,
        project,
        [
            verdicts.StoredVerdict(r.path, r.verdict, result.commit, result.checked_at, [c.to_json() for c in r.cites])
            for r in result.records
        ],
        complete=True,
    )
    return result


def _check_is_the_repository(repo: Repository, commits: list[str]) -> None:
    """Refuse a repository that holds none of the commits the citations were pinned at: every
    verdict against it would be wrong (all missing), and it would be stored and published."""
    if not commits or not repo.is_git:
        return
    known = repo.has_commits(commits)
    if not any(known.values()):
        raise InvalidArguments(
            f"{repo.root.name} holds none of the commits these records' citations were pinned at:"
            " is it the project's repository? Give the right one with --repo DIR"
        )


# The record's own path fields that name files of the repository: they follow a rename as its
# citations do, so path lookups (search --path, the brief's path focus, dedup) keep finding it.
PATH_FIELDS = ("pathPatterns", "linkedPaths")


@dataclass(frozen=True)
class PathMove:
    """A cited file ``verify --update`` followed to its new name, and the fields it moved in:
    ``cites`` and those of :data:`PATH_FIELDS` that named the old path."""

    old: str
    new: str
    fields: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {"from": self.old, "to": self.new, "fields": list(self.fields)}


@dataclass
class Repinned:
    """What ``verify --update`` did: the record's verdict now, and the renames it followed."""

    verdict: RecordVerdict
    moved: list[PathMove] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {**self.verdict.to_json(), "movedPaths": [move.to_json() for move in self.moved]}


def move_paths(frontmatter: dict[str, Any], old: str, new: str) -> list[str]:
    """Rename ``old`` to ``new`` in the record's path fields, in place, keeping each list's order
    (an entry naming the old file exactly: a glob or a directory is the person's to change).
    Returns the fields that changed."""
    changed = []
    for name in PATH_FIELDS:
        values = frontmatter.get(name)
        if isinstance(values, list) and old in values:
            frontmatter[name] = list(dict.fromkeys(new if value == old else value for value in values))
            changed.append(name)
    return changed


def repin_record(
    vault: Vault,
    project: str,
    repo_root: Path,
    record_id: str,
    *,
    drop: Sequence[str] = (),
    now: datetime | None = None,
) -> Repinned:
    """Pin a record's citations to the repository as it is now (a person confirmed it still holds):
    a renamed file under its new name, a span whose lines moved where they are now. The record's
    ``pathPatterns`` and ``linkedPaths`` follow a rename too (an entry naming the old file becomes
    the new one), and the result says which. ``drop`` names cited paths to remove (a file that is
    gone for good)."""
    repo = Repository(repo_root)
    stamp = format_iso(now or utc_now())
    with mutation(vault, f"verify update {record_id}") as unit:
        record, path = find_record(vault, project, record_id=record_id)
        cites = read_cites(record.frontmatter)
        if not cites:
            raise InvalidArguments(f"{project}/{record.kind}/{path.stem} cites no code: nothing to re-pin")
        dropped = {clean_cite_path(p) for p in drop}
        unknown = dropped - {cite.path for cite in cites}
        if unknown:
            raise InvalidArguments(f"{record.kind} {record.id} does not cite {sorted(unknown)[0]}: nothing to drop")
        kept = [cite for cite in cites if cite.path not in dropped]
        moved: list[PathMove] = []
        if kept:
            specs = [repin_spec(repo, cite) for cite in kept]
            record.frontmatter["cites"] = pin_cites(repo, specs)
            renames = dict.fromkeys((c.path, str(s["path"])) for c, s in zip(kept, specs, strict=True))
            for old, new in renames:
                if old != new:
                    moved.append(PathMove(old, new, ("cites", *move_paths(record.frontmatter, old, new))))
        else:
            record.frontmatter.pop("cites", None)
        record.frontmatter["updated"] = stamp
        unit.retitle(f"verify update {record.kind}:{record.id} (confirmed at {repo.head or 'the working tree'})")
        unit.write(record, path)
    judged = RecordVerdict(
        vault.relative(path),
        project,
        record.kind,
        record.id,
        str(record.frontmatter.get("title") or record.id),
        [judge_cite(repo, cite) for cite in read_cites(record.frontmatter)],
    )
    if not judged.cites:
        verdicts.forget(vault.index(), [judged.path])
        return Repinned(judged)
    verdicts.replace(
        vault.index(),
        project,
        [verdicts.StoredVerdict(judged.path, judged.verdict, repo.head, stamp, [c.to_json() for c in judged.cites])],
        complete=False,
    )
    return Repinned(judged, moved)
