"""``memosite status``: where the vault is, which project and why, and what needs attention.

Read-only: nothing here writes a record, refreshes the index or creates a vault. It compares the
index with the files (so a stale index is reported, not silently fixed; a file no refresh can read
is reported as invalid, not as the index lagging), counts records by kind and status, ids that two
files of one kind hold, the expired records a gc pass would sweep, ``.conflict.`` sidecars, an
interrupted unit of work, the state of vault git — stuck when it cannot commit (an
``index.lock`` a killed git left, or held too long; the last commit's error), which
:attr:`StatusReport.problems` names and makes ``memosite status`` exit non-zero — and the
configuration: a loosening of review the team's ``config.json`` makes that waits for a person
here, and settings found in the wrong file.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from memosite.acceptance import config_report
from memosite.config import ProjectIdentity
from memosite.errors import InvalidRecord, StorageError
from memosite.index import queries
from memosite.policy import ConfigReport
from memosite.proposals import count_proposals
from memosite.recordfile import read_record
from memosite.refresh import record_file_stats
from memosite.schema import utc_now
from memosite.sync.status import SyncState, sync_state
from memosite.vault import Vault
from memosite.vaultgit import vault_git_problem


@dataclass
class IndexFreshness:
    indexed: int = 0
    on_disk: int = 0
    not_indexed: list[str] = field(default_factory=list)  # files the index does not know (yet)
    invalid: list[str] = field(default_factory=list)  # files every refresh skips: not valid records
    not_on_disk: list[str] = field(default_factory=list)  # rows whose file is gone
    changed: list[str] = field(default_factory=list)  # files edited since they were indexed
    missing: bool = False  # no index yet
    interrupted: int = 0  # changes of a unit of work that did not finish

    @property
    def up_to_date(self) -> bool:
        return not (self.not_indexed or self.not_on_disk or self.changed or self.missing or self.interrupted)

    def to_json(self) -> dict[str, Any]:
        return {
            "upToDate": self.up_to_date,
            "indexed": self.indexed,
            "onDisk": self.on_disk,
            "notIndexed": self.not_indexed,
            "invalid": self.invalid,
            "notOnDisk": self.not_on_disk,
            "changed": self.changed,
            "missing": self.missing,
            "interrupted": self.interrupted,
        }


@dataclass
class GitState:
    enabled: bool
    repository: bool
    pending_commits: int = 0
    stuck: str | None = None  # why vault git cannot commit now (memosite.vaultgit.vault_git_problem)

    def to_json(self) -> dict[str, Any]:
        return {
            "enabled": self.enabled,
            "repository": self.repository,
            "pendingCommits": self.pending_commits,
            "stuck": self.stuck,
        }


@dataclass
class StatusReport:
    vault: str
    vault_source: str
    vault_exists: bool
    project: str
    project_name: str
    project_source: str
    counts: dict[str, dict[str, int]] = field(default_factory=dict)
    expired_awaiting_gc: int = 0
    index: IndexFreshness = field(default_factory=IndexFreshness)
    conflicts: list[str] = field(default_factory=list)
    git: GitState | None = None
    verdicts: dict[str, int] = field(default_factory=lambda: {"fresh": 0, "drifted": 0, "missing": 0})
    pending_review: int = 0
    sync: SyncState | None = None
    shared_ids: dict[str, list[str]] = field(default_factory=dict)  # id → the files of one kind holding it
    config: ConfigReport = field(default_factory=ConfigReport)  # review loosenings waiting, ignored settings

    @property
    def total(self) -> int:
        return sum(sum(by_status.values()) for by_status in self.counts.values())

    @property
    def problems(self) -> list[str]:
        """What keeps the vault from working as it should (``memosite status`` exits non-zero)."""
        found = [f"vault git is stuck: {self.git.stuck}"] if self.git is not None and self.git.stuck else []
        if self.sync is not None and self.sync.refused_remote is not None:
            found.append(f"vaultGit.remote: {self.sync.refused_remote}")
        return found

    def to_json(self) -> dict[str, Any]:
        return {
            "vault": self.vault,
            "vaultSource": self.vault_source,
            "vaultExists": self.vault_exists,
            "project": self.project,
            "projectName": self.project_name,
            "projectSource": self.project_source,
            "records": self.total,
            "counts": self.counts,
            "expiredAwaitingGc": self.expired_awaiting_gc,
            "index": self.index.to_json(),
            "conflicts": self.conflicts,
            "git": self.git.to_json() if self.git is not None else None,
            "verdicts": self.verdicts,
            "pendingReview": self.pending_review,
            "sync": self.sync.to_json() if self.sync is not None else None,
            "sharedIds": [{"id": record_id, "paths": paths} for record_id, paths in self.shared_ids.items()],
            "config": self.config.to_json(),
            "problems": self.problems,
        }


def index_freshness(vault: Vault, project: str) -> IndexFreshness:
    """The index compared with the project's files, without changing either."""
    freshness = IndexFreshness(missing=not vault.index_path.exists())
    if freshness.missing:
        freshness.on_disk = sum(1 for _ in vault.iter_record_files(project))
        return freshness
    index = vault.index()
    known = index.file_stats(project)
    freshness.indexed = len(known)
    seen: set[str] = set()
    for relative, _, stat in record_file_stats(vault, project):
        seen.add(relative)
        if relative not in known:
            freshness.not_indexed.append(relative)
        elif known[relative] != (stat.st_mtime_ns, stat.st_size):
            freshness.changed.append(relative)
    freshness.on_disk = len(seen)
    # A file that does not parse is skipped by every refresh: no command catches up with it, so it
    # is reported as what it is rather than as the index lagging behind.
    for relative in list(freshness.not_indexed):
        try:
            read_record(vault.root / relative)
        except (InvalidRecord, StorageError):
            freshness.not_indexed.remove(relative)
            freshness.invalid.append(relative)
    freshness.not_on_disk = sorted(set(known) - seen)
    freshness.interrupted = len(index.inflight())
    return freshness


def conflict_sidecars(vault: Vault, project: str) -> list[str]:
    """The sidecars of the project's conflicts and of the vault's own files (``config.json``), as
    ``memosite conflicts`` lists them, so the count agrees with the lines sync and status print."""
    from memosite.sync.conflicts import list_conflicts

    return sorted(c.sidecar for c in list_conflicts(vault, project, details=False, vault_files=True))


def vault_status(
    vault_root: Path,
    vault_source: str,
    identity: ProjectIdentity,
    *,
    now: datetime | None = None,
) -> StatusReport:
    """The report of ``memosite status`` (see the module docstring)."""
    report = StatusReport(
        vault=str(vault_root),
        vault_source=vault_source,
        vault_exists=vault_root.is_dir(),
        project=identity.id,
        project_name=identity.name,
        project_source=identity.source,
    )
    if not report.vault_exists:
        return report
    vault = Vault.open(vault_root, create=False)
    try:
        report.index = index_freshness(vault, identity.id)
        report.conflicts = conflict_sidecars(vault, identity.id)
        report.config = config_report(vault)
        report.sync = sync_state(vault)
        report.git = GitState(
            enabled=vault.config.git_enabled,
            repository=(vault.root / ".git").exists(),
            pending_commits=_pending_commits(vault),
            stuck=vault_git_problem(vault) if vault.config.git_enabled else None,
        )
        if not report.index.missing:
            from memosite.curator import plan_gc
            from memosite.index import verdicts

            index = vault.index()
            report.counts = index.counts_by_kind_and_status(identity.id)
            report.shared_ids = queries.shared_ids(index, identity.id)
            report.verdicts.update(verdicts.counts(index, identity.id))
            # Records waiting in place, and agents' proposed changes of records that serve.
            report.pending_review = len(index.pending_review(identity.id)) + count_proposals(vault, identity.id)
            plan = plan_gc(vault, identity.id, now=now or utc_now())
            report.expired_awaiting_gc = len(plan.archive) + len(plan.remove) + len(plan.unparseable_scratch)
    finally:
        vault.close()
    return report


def _pending_commits(vault: Vault) -> int:
    try:
        return len(vault.internal_path("pending-commits").read_text(encoding="utf-8").splitlines())
    except FileNotFoundError:
        return 0
