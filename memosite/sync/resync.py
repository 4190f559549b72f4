"""Bringing the index (and, after a merge, the views) in step with what a merge changed.

Sync knows exactly which paths a fast-forward or a merge changed (git's diff), so it re-reads
those and nothing else: the cost follows the changes, not the size of the vault. A changed
``config.json`` is read again first (the time-to-live settings decide each row's expiry), and when
its ``ttl`` section changed every project is refreshed.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from memosite.config import load_config
from memosite.errors import InvalidRecord, StorageError
from memosite.index import IndexEntry
from memosite.recordfile import read_record
from memosite.refresh import build_entry, rebuild_views, refresh_project, remember_directories
from memosite.sync.paths import classify, record_project
from memosite.sync.repo import Change
from memosite.vault import Vault, warn


@dataclass
class ResyncResult:
    """Record paths whose index rows were added, changed or dropped, and per project the kinds
    whose views those records appear in."""

    added: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    invalid: list[str] = field(default_factory=list)
    kinds: dict[str, set[str]] = field(default_factory=dict)
    config_changed: bool = False

    @property
    def count(self) -> int:
        return len(self.added) + len(self.changed) + len(self.removed)


def resync_changes(vault: Vault, changes: Iterable[Change]) -> ResyncResult:
    """Re-index the record paths of ``changes`` as the files now are (the vault lock is held)."""
    result = ResyncResult()
    records: list[str] = []
    for change in changes:
        if change.path == "config.json":
            result.config_changed = True
        elif classify(change.path) == "record":
            records.append(change.path)
    if result.config_changed:
        _reload_config(vault)
    index = vault.index()
    entries: list[IndexEntry] = []
    gone: list[str] = []
    for relative in records:
        project = record_project(relative)
        assert project is not None
        previous = index.kind_at(relative)
        kinds = result.kinds.setdefault(project, set())
        if previous is not None:
            kinds.add(previous)
        path = vault.root / relative
        try:
            if not vault.contains(path):
                raise FileNotFoundError(relative)
            record = read_record(path)
        except FileNotFoundError:
            gone.append(relative)
            kinds.add(previous or "trap")
            continue
        except (InvalidRecord, StorageError) as exc:
            warn(f"skipping {relative}: {exc.message}")
            result.invalid.append(relative)
            gone.append(relative)
            continue
        if record.frontmatter.get("project") != project:
            record.frontmatter["project"] = project  # the directory decides the project
        entries.append(build_entry(vault, record, path))
        kinds.add(record.kind)
        (result.changed if previous is not None else result.added).append(relative)
    with index.transaction():
        for entry in entries:
            index.upsert(entry)
        for relative in gone:
            if index.delete_path(relative) and relative not in result.invalid:
                result.removed.append(relative)
    for project in result.kinds:
        if vault.project_dir(project).is_dir():
            remember_directories(vault, project)  # files came and went: the index knows them now
    return result


def _reload_config(vault: Vault) -> None:
    before = vault.config.raw.get("ttl")
    vault.config = load_config(vault.root)
    if vault.config.raw.get("ttl") != before:
        for project in vault.projects():
            refresh_project(vault, project, force=True)


def recompile(vault: Vault, kinds: dict[str, set[str]]) -> list[str]:
    """Rewrite the views of the touched kinds of each project; returns the projects done."""
    done = []
    for project, touched in sorted(kinds.items()):
        if touched and vault.project_dir(project).is_dir():
            rebuild_views(vault, project, touched)
            done.append(project)
    return done
