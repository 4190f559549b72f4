"""``memosite verify``: every record that cites code gets a verdict against the repository now.

Verdicts (see :mod:`memosite.freshness`) are stored in the index with the commit they were found
at — never written into a record by this read path. ``verify --update ID`` re-pins a record's
citations after a person confirmed it still holds: that is a change to the record, one unit of work.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from memosite.errors import InvalidArguments
from memosite.freshness import RecordVerdict, Repository, judge_cite, pin_cites, read_cites
from memosite.index import verdicts
from memosite.indexing import ensure_index
from memosite.lookup import locate_record
from memosite.mutation import mutation
from memosite.schema import format_iso, utc_now
from memosite.vault import Vault, warn


@dataclass
class VerifyResult:
    project: str
    repository: str
    commit: str | None
    records: list[RecordVerdict] = field(default_factory=list)
    checked_at: str = ""

    def counts(self) -> dict[str, int]:
        found = {"fresh": 0, "drifted": 0, "missing": 0}
        for record in self.records:
            found[record.verdict] += 1
        return found

    def to_json(self) -> dict[str, Any]:
        return {
            "project": self.project,
            "commit": self.commit,
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
    for row in verdicts.citing_records(index, project):
        try:
            cites = read_cites(row.frontmatter)
        except InvalidArguments as exc:
            warn(f"{row.path}: {exc.message}")
            continue
        if cites:
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


def repin_record(
    vault: Vault, project: str, repo_root: Path, record_id: str, *, now: datetime | None = None
) -> RecordVerdict:
    """Pin a record's citations to the repository as it is now (a person confirmed it still holds)."""
    repo = Repository(repo_root)
    stamp = format_iso(now or utc_now())
    with mutation(vault, f"verify update {record_id}") as unit:
        record, path = locate_record(vault, project, record_id=record_id)
        cites = read_cites(record.frontmatter)
        if not cites:
            raise InvalidArguments(f"{project}/{record.kind}/{path.stem} cites no code: nothing to re-pin")
        specs = []
        for cite in cites:
            where = cite.path
            if repo.read(where) is None and cite.commit and repo.is_git:
                where = repo.renamed(cite.commit, where) or where  # follow a rename git saw
            specs.append({"path": where, "lines": cite.to_json().get("lines")})
        record.frontmatter["cites"] = pin_cites(repo, specs)
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
    verdicts.replace(
        vault.index(),
        project,
        [verdicts.StoredVerdict(judged.path, judged.verdict, repo.head, stamp, [c.to_json() for c in judged.cites])],
        complete=False,
    )
    return judged
