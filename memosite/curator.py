"""Curator gc: sweep expired records, compact shipped plans, roll daily logs up into months.

One pass (:func:`run_gc`) runs under the vault lock. It brings the index in step with the files,
computes a :class:`GcPlan` from it, and then either reports the plan (dry run) or applies it —
re-reading every file it touches and re-checking the rule against the file itself — before it
rebuilds the project's index and views and requests a vault commit. Both kinds of run count from
the same plan, so a dry run reports what the real run would do. The monthly log roll-up's rules
live in :mod:`memosite.rollup`. Files are removed in batches, each batch's tombstones first.

Only files inside the vault are touched: a path that resolves outside it (a symlinked kind
directory, say) is skipped. Temp files left by interrupted writes go once they are a minute old.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from memosite.archive import archive_fields
from memosite.errors import InvalidRecord, PersonRequired, StorageError
from memosite.expiration import is_expired_at, resolve_expires_at
from memosite.index import queries
from memosite.kinds import ARCHIVE_ON_EXPIRE_KINDS, KINDS, SWEPT_KINDS
from memosite.mutation import Mutation, mutation
from memosite.provenance import approved_by_person
from memosite.recordfile import read_record, record_title
from memosite.refresh import ensure_index, refresh_project
from memosite.rollup import RollupPlan, apply_rollup, log_is_eligible, plan_rollups
from memosite.schema import Record, format_iso, utc_now, validate_frontmatter
from memosite.statuses import is_terminal
from memosite.vault import RecordFile, Tombstone, Vault, is_temp_name, warn
from memosite.writeplan import describe

__all__ = ["ARCHIVE_ON_EXPIRE_KINDS", "GcResult", "compact_monthly_logs", "run_gc", "sweep_expired_records"]
TEMP_FILE_MIN_AGE_SECONDS = 60.0


# --- plan and result -------------------------------------------------------------------------


@dataclass
class GcPlan:
    """What one gc pass will do; computed without touching a file."""

    project: str
    purge: bool
    archive: list[RecordFile] = field(default_factory=list)
    remove: list[RecordFile] = field(default_factory=list)
    unparseable_scratch: list[RecordFile] = field(default_factory=list)
    compact_plans: list[RecordFile] = field(default_factory=list)
    rollups: list[RollupPlan] = field(default_factory=list)
    temp_files: list[Path] = field(default_factory=list)
    records: int = 0

    @property
    def steps(self) -> int:
        return (
            len(self.archive)
            + len(self.remove)
            + len(self.unparseable_scratch)
            + len(self.compact_plans)
            + sum(len(r.events) for r in self.rollups)
            + len(self.temp_files)
        )


@dataclass(frozen=True)
class GcProgress:
    """Progress of the apply phase: ``done`` of ``total`` steps, in a project of ``records``."""

    done: int
    total: int
    records: int


@dataclass
class GcResult:
    project_id: str
    dry_run: bool
    purged_scratch_count: int = 0
    purged_review_count: int = 0
    traps_archived_count: int = 0
    decisions_archived_count: int = 0
    plans_archived_count: int = 0
    compacted_plans_count: int = 0
    compacted_logs_count: int = 0
    rebuilt_fts: bool = False
    rebuilt_views: bool = False
    purged_files: list[str] = field(default_factory=list)
    compacted_plans: list[str] = field(default_factory=list)
    compacted_logs: list[str] = field(default_factory=list)
    archived_files: list[str] = field(default_factory=list)
    rollup_files: list[str] = field(default_factory=list)
    removed_temp_files: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """The seed's GcResult contract, field for field."""
        return {
            "projectId": self.project_id,
            "purgedScratchCount": self.purged_scratch_count,
            "purgedReviewCount": self.purged_review_count,
            "trapsArchivedCount": self.traps_archived_count,
            "decisionsArchivedCount": self.decisions_archived_count,
            "plansArchivedCount": self.plans_archived_count,
            "compactedPlansCount": self.compacted_plans_count,
            "compactedLogsCount": self.compacted_logs_count,
            "rebuiltFts": self.rebuilt_fts,
            "rebuiltViews": self.rebuilt_views,
            "dryRun": self.dry_run,
            "details": {
                "purgedFiles": self.purged_files,
                "compactedPlans": self.compacted_plans,
                "compactedLogs": self.compacted_logs,
            },
        }

    def count_archived(self, kind: str) -> None:
        if kind == "trap":
            self.traps_archived_count += 1
        elif kind == "decision":
            self.decisions_archived_count += 1
        elif kind == "plan":
            self.plans_archived_count += 1

    def count_purged(self, kind: str, relative: str) -> None:
        self.purged_files.append(relative)
        if kind == "scratch":
            self.purged_scratch_count += 1
        elif kind == "review":
            self.purged_review_count += 1


ProgressCallback = Callable[[GcProgress], None]


# --- helpers ---------------------------------------------------------------------------------


def _is_true(value: Any) -> bool:
    """A frontmatter flag; the index's ``json_extract`` reports JSON ``true`` as ``1``."""
    if isinstance(value, str):
        return value.strip().lower() == "true"
    return value is True or (type(value) is int and value == 1)


# --- planning --------------------------------------------------------------------------------


def _is_expired(frontmatter: dict[str, Any], vault: Vault, now: datetime) -> bool:
    return is_expired_at(resolve_expires_at(frontmatter, vault.config), now)


def _sweepable(fm: dict[str, Any], purge: bool) -> bool:
    """Already archived or compacted records are skipped; superseded is terminal, so it is only
    ever purged, never rewritten to archived."""
    status = fm.get("status")
    if status == "archived" or _is_true(fm.get("compacted")):
        return False
    return purge or not is_terminal(status) or fm.get("kind") not in ARCHIVE_ON_EXPIRE_KINDS


def plan_gc(vault: Vault, project: str, *, purge: bool = False, now: datetime | None = None) -> GcPlan:
    """Decide what a gc pass does, from the (freshly refreshed) index. Writes no record."""
    now = now or utc_now()
    plan = GcPlan(project=project, purge=purge)
    rows = queries.gc_rows(vault.index(), project)
    plan.records = len(rows)
    known: set[str] = set()
    logs: list[tuple[str, RecordFile]] = []
    for row in rows:
        known.add(row.path)
        subdir = row.path.split("/")[2] if row.path.count("/") >= 3 else ""
        item = RecordFile(vault.root / row.path, row.path, row.kind, row.id)
        fm = {
            "kind": row.kind,
            "status": row.status,
            "created": row.created,
            "ttl": row.ttl,
            "expires_at": row.expires_at,
            "compacted": row.compacted,
        }
        if row.kind in SWEPT_KINDS and _sweepable(fm, purge) and _is_expired(fm, vault, now):
            if row.kind in ARCHIVE_ON_EXPIRE_KINDS and not purge:
                plan.archive.append(item)
            else:
                plan.remove.append(item)
        elif subdir == "plans" and row.kind == "plan" and row.status == "shipped" and not _is_true(row.compacted):
            plan.compact_plans.append(item)
        elif subdir == "logs" and log_is_eligible(row.id, row.created, _is_true(row.compacted), now):
            logs.append((row.created or "", item))
    plan.unparseable_scratch = _plan_unparseable_scratch(vault, project, known, now)
    plan.rollups = plan_rollups(vault, project, logs)
    plan.temp_files = _plan_temp_files(vault, project)
    return plan


def _plan_unparseable_scratch(vault: Vault, project: str, known: set[str], now: datetime) -> list[RecordFile]:
    """Scratch files the index could not take fall back to their mtime against ``scratchDays``."""
    cutoff = (now - timedelta(days=vault.config.scratch_days)).timestamp()
    found = []
    for path in vault.iter_record_files(project, ("scratch",)):
        relative = vault.relative(path)
        if relative in known:
            continue
        try:
            read_record(path)
            continue  # it parses after all (written since the refresh): not ours to judge by mtime
        except (InvalidRecord, StorageError):
            pass
        try:
            if path.stat().st_mtime < cutoff:
                found.append(RecordFile(path, relative, "scratch", path.stem))
        except FileNotFoundError:
            continue
    return found


def _plan_temp_files(vault: Vault, project: str) -> list[Path]:
    """Temp files of interrupted writes, a minute old by the wall clock (not ``now``: a writer
    outside the lock may be mid-write), in the vault root and anywhere in the project's tree."""
    cutoff = time.time() - TEMP_FILE_MIN_AGE_SECONDS
    directories = [vault.root]
    project_dir = vault.project_dir(project)
    if project_dir.is_dir() and not project_dir.is_symlink():
        for walked, subdirs, _ in os.walk(project_dir):
            subdirs[:] = [d for d in subdirs if not os.path.islink(os.path.join(walked, d))]
            directories.append(Path(walked))
    found = []
    for directory in directories:
        with os.scandir(directory) as entries:
            for entry in entries:
                if not is_temp_name(entry.name) or not entry.is_file(follow_symlinks=False):
                    continue
                try:
                    if entry.stat(follow_symlinks=False).st_mtime < cutoff:
                        found.append(Path(entry.path))
                except FileNotFoundError:
                    continue
    return found


# --- the three passes ------------------------------------------------------------------------


def compact_plan_record(record: Record, now: datetime) -> Record:
    """A shipped plan reduced to its summary: ``compacted: true``, ``updated: now``, and a body with
    Status, Outcome, Completion Date and — when known — Verified Commit and Related Slug. The title
    is kept in the frontmatter so it survives the new body."""
    fm = dict(record.frontmatter)
    title = record_title(record)
    outcome = fm.get("outcome") or _first_paragraph(record.body) or "Shipped."
    completed = next((fm[k] for k in ("completedAt", "shippedAt", "endTime") if fm.get(k)), fm.get("updated"))
    lines = [
        f"# {title}",
        "",
        "- **Status:** Shipped",
        f"- **Outcome:** {' '.join(str(outcome).split())}",
        f"- **Completion Date:** {str(completed)[:10]}",
    ]
    sha = fm.get("verifiedAtSha") or fm.get("commit")
    if sha:
        lines.append(f"- **Verified Commit:** `{sha}`")
    related = fm.get("relatedSlug") or fm.get("slug")
    if related:
        lines.append(f"- **Related Slug:** `{related}`")
    fm.setdefault("title", title)
    fm["compacted"] = True
    fm["updated"] = format_iso(now)
    return Record(
        frontmatter=validate_frontmatter(fm),
        body="\n".join(lines) + "\n",
        path=record.path,
        source=record.source,
    )


def _first_paragraph(body: str, limit: int = 280) -> str:
    for block in re.split(r"\n\s*\n", body):
        text = " ".join(line.strip() for line in block.strip().splitlines() if not line.lstrip().startswith("#"))
        if text:
            return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"
    return ""


def _apply_sweep(unit: Mutation, plan: GcPlan, result: GcResult, now: datetime, step: Callable[[], None]) -> None:
    """Archive expired records in place; every expired file to remove goes in one batch."""
    vault = unit.vault
    removals: list[Tombstone] = []
    for item in [*plan.archive, *plan.remove]:
        step()
        if not vault.contains(item.path):
            warn(f"gc skipped {item.relative}: it resolves outside the vault")
            continue
        try:
            record = read_record(item.path)
        except (InvalidRecord, StorageError) as exc:
            warn(f"gc skipped {item.relative}: {exc.message}")
            continue
        fm = record.frontmatter
        if not (_sweepable(fm, plan.purge) and _is_expired(fm, vault, now)):
            continue
        if record.kind in ARCHIVE_ON_EXPIRE_KINDS and not plan.purge:
            archive_fields(fm, format_iso(now), reason="expired")
            unit.write(record, item.path)
            result.count_archived(record.kind)
            result.archived_files.append(item.relative)
        else:
            removals.append(Tombstone(plan.project, record.kind, record.id, item.path, "gc-expired"))
    for item in plan.unparseable_scratch:
        step()
        if vault.contains(item.path):
            reason = "gc-expired-unparseable"
            removals.append(Tombstone(plan.project, item.kind, item.id, item.path, reason))
    unit.remove(removals)
    for tombstone in removals:
        result.count_purged(tombstone.kind, vault.relative(tombstone.path))


def _apply_plan_compaction(
    unit: Mutation, plan: GcPlan, result: GcResult, now: datetime, step: Callable[[], None]
) -> None:
    vault = unit.vault
    for item in plan.compact_plans:
        step()
        if not vault.contains(item.path):
            continue
        try:
            record = read_record(item.path)
        except (InvalidRecord, StorageError) as exc:
            warn(f"gc skipped {item.relative}: {exc.message}")
            continue
        if record.kind != "plan" or record.status != "shipped" or _is_true(record.frontmatter.get("compacted")):
            continue
        unit.write(compact_plan_record(record, now), item.path)
        result.compacted_plans_count += 1
        result.compacted_plans.append(item.relative)


def _apply_temp_cleanup(vault: Vault, plan: GcPlan, result: GcResult, step: Callable[[], None]) -> None:
    for path in plan.temp_files:
        step()
        if vault.contains(path):
            try:
                path.unlink()
                result.removed_temp_files.append(vault.relative(path))
            except FileNotFoundError:
                continue


def _result_from_plan(vault: Vault, plan: GcPlan) -> GcResult:
    """The counts a real run reaches when every planned file is still as the index saw it."""
    result = GcResult(project_id=plan.project, dry_run=True)
    for item in plan.archive:
        result.count_archived(item.kind)
        result.archived_files.append(item.relative)
    for item in [*plan.remove, *plan.unparseable_scratch]:
        result.count_purged(item.kind, item.relative)
    result.compacted_plans = [item.relative for item in plan.compact_plans]
    result.compacted_plans_count = len(plan.compact_plans)
    for rollup in plan.rollups:
        result.rollup_files.append(vault.relative(rollup.target))
        result.compacted_logs += [item.relative for item in rollup.events]
    result.compacted_logs_count = len(result.compacted_logs)
    result.removed_temp_files = [vault.relative(p) for p in plan.temp_files]
    return result


# --- entry points ----------------------------------------------------------------------------


def _prepare(vault: Vault, project: str) -> bool:
    """Bring the index in step with the files; False when the project does not exist."""
    ensure_index(vault)
    project_dir = vault.project_dir(project)
    if not project_dir.is_dir():
        return False
    refresh_project(vault, project)
    return True


def _finish(unit: Mutation, project: str, result: GcResult) -> None:
    """Index in step with the files again; every view of the project is rewritten as the unit
    ends, with one vault commit for the pass."""
    refresh_project(unit.vault, project)
    # Many deletions leave FTS5 segments fragmented; merging them keeps searches fast.
    unit.vault.index().optimize()
    result.rebuilt_fts = True
    unit.touch(project, KINDS)
    result.rebuilt_views = True


def _stepper(plan: GcPlan, progress: ProgressCallback | None) -> Callable[[], None]:
    done = 0

    def step() -> None:
        nonlocal done
        done += 1
        if progress is not None:
            progress(GcProgress(done=min(done, plan.steps), total=plan.steps, records=plan.records))

    if progress is not None:
        progress(GcProgress(done=0, total=plan.steps, records=plan.records))
    return step


def _execute(
    vault: Vault,
    project: str,
    *,
    parts: frozenset[str],
    dry_run: bool,
    purge: bool,
    now: datetime | None,
    progress: ProgressCallback | None,
    what: str,
) -> GcResult:
    """Plan under the lock, keep the planned ``parts``, then report (dry run) or apply them."""
    now = now or utc_now()
    with vault.lock():
        if not _prepare(vault, project):
            return GcResult(project_id=project, dry_run=dry_run)
        full = plan_gc(vault, project, purge=purge, now=now)
        sweep = "sweep" in parts
        plan = GcPlan(
            project=project,
            purge=purge,
            records=full.records,
            archive=full.archive if sweep else [],
            remove=full.remove if sweep else [],
            unparseable_scratch=full.unparseable_scratch if sweep else [],
            compact_plans=full.compact_plans if "plans" in parts else [],
            rollups=full.rollups if "logs" in parts else [],
            temp_files=full.temp_files if "temp" in parts else [],
        )
        if dry_run:
            return _result_from_plan(vault, plan)
        _refuse_an_agents_purge_of_approved_records(vault, plan)
        result = GcResult(project_id=project, dry_run=False)
        with mutation(vault, f"{what} {project}", flush=True) as unit:
            step = _stepper(plan, progress)
            _apply_temp_cleanup(vault, plan, result, step)
            _apply_sweep(unit, plan, result, now, step)
            _apply_plan_compaction(unit, plan, result, now, step)
            for rollup in plan.rollups:
                merged = apply_rollup(unit, project, rollup, now, step)
                if merged:
                    result.rollup_files.append(vault.relative(rollup.target))
                    result.compacted_logs += merged
                    result.compacted_logs_count += len(merged)
            if "temp" in parts:
                from memosite.salience import prune_session_seen_sets

                prune_session_seen_sets(vault, now)
            _finish(unit, project, result)
    return result


def _refuse_an_agents_purge_of_approved_records(vault: Vault, plan: GcPlan) -> None:
    """PERSON_REQUIRED, before anything changes, when an agent's purge would unlink a trap, decision
    or plan a person approved: only a person destroys those, as with ``forget --purge``."""
    actor = vault.actor
    if not plan.purge or actor is None or not actor.is_agent:
        return
    approved = []
    for item in plan.remove:
        if item.kind not in ARCHIVE_ON_EXPIRE_KINDS or not vault.contains(item.path):
            continue
        try:
            record = read_record(item.path)
        except (InvalidRecord, StorageError):
            continue  # the sweep skips it too
        if approved_by_person(record.frontmatter):
            approved.append(describe(record))
    if approved:
        shown = ", ".join(approved[:5]) + (f" and {len(approved) - 5} more" if len(approved) > 5 else "")
        raise PersonRequired(
            f"gc purge would delete {shown}, which a person approved: refused in {actor.where()}, only a"
            " person destroys them (gc without purge archives them, which restore undoes)"
        )


def run_gc(
    vault: Vault,
    project: str,
    *,
    dry_run: bool = False,
    purge: bool = False,
    now: datetime | None = None,
    progress: ProgressCallback | None = None,
) -> GcResult:
    """One gc pass over ``project``: sweep expired records (archive trap/decision/plan, or purge
    them with ``purge``; every other swept kind is tombstoned and unlinked), compact shipped plans,
    roll logs up by month, remove stale temp files, then rebuild the project's index and views and
    commit the vault. ``dry_run`` writes and deletes nothing and reports the same counts.
    ``progress`` is called with a :class:`GcProgress` as the apply phase advances."""
    return _execute(
        vault,
        project,
        parts=frozenset({"temp", "sweep", "plans", "logs"}),
        dry_run=dry_run,
        purge=purge,
        now=now,
        progress=progress,
        what="gc",
    )


def sweep_expired_records(
    vault: Vault,
    project: str,
    *,
    purge: bool = False,
    dry_run: bool = False,
    now: datetime | None = None,
) -> GcResult:
    """Only the expiry sweep of a gc pass (see :func:`run_gc`); index and views rebuilt after it."""
    return _execute(
        vault,
        project,
        parts=frozenset({"sweep"}),
        dry_run=dry_run,
        purge=purge,
        now=now,
        progress=None,
        what="gc sweep",
    )


def compact_monthly_logs(vault: Vault, project: str, *, dry_run: bool = False, now: datetime | None = None) -> GcResult:
    """Only the monthly log roll-up of a gc pass (see :func:`run_gc`): under the vault lock, index
    and views rebuilt after it. ``dry_run`` writes and deletes nothing and reports the same counts."""
    return _execute(
        vault,
        project,
        parts=frozenset({"logs"}),
        dry_run=dry_run,
        purge=False,
        now=now,
        progress=None,
        what="gc logs",
    )
