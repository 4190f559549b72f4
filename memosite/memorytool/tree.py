"""The ``/memories`` tree the model sees: which records it may read, and under which path.

Every live record of the project appears — whatever wrote it: a person, another agent, an import —
so the model reads the team's memory, not only its own. Archived and superseded records and
expired ones do not (for the model a deleted or expired file is gone); a record waiting for review
does (it is the agent's own proposal). A record appears at the path the model gave it
(``memoryPath``, written by the tool when the file name is not the record's own) or else at
``/memories/<kind directory>/<file name>``. Directories are only what the files imply, plus the
kind directories, which always exist.

Built from the index (read, never written, apart from catching up with files edited by hand).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import PurePosixPath

from memosite.errors import InvalidArguments
from memosite.expiration import is_expired_iso
from memosite.index.entry import IndexEntry
from memosite.memorytool.paths import (
    KIND_DIRECTORY,
    ROOT,
    SHOWN_KIND_DIRECTORIES,
    canonical_file_path,
    canonical_path,
    is_within,
    kind_for_path,
    parts_of,
)
from memosite.refresh import ensure_index, refresh_project
from memosite.reviewstate import is_pending
from memosite.schema import format_iso, is_flagged_stale
from memosite.statuses import is_inactive
from memosite.vault import Vault

MEMORY_PATH_FIELD = "memoryPath"


@dataclass(frozen=True)
class MemoryFile:
    """One record as a file of the tool."""

    path: str  # /memories/...
    entry: IndexEntry

    @property
    def slug(self) -> str:
        return PurePosixPath(self.entry.path).stem

    @property
    def size(self) -> int:
        return self.entry.size

    @property
    def named(self) -> bool:
        """The model gave this record its path (``memoryPath``)."""
        return self.entry.frontmatter.get(MEMORY_PATH_FIELD) == self.path


@dataclass
class MemoryTree:
    """The files and directories under ``/memories`` for one project, at one moment."""

    files: dict[str, MemoryFile] = field(default_factory=dict)
    directories: set[str] = field(default_factory=set)

    def file(self, path: str) -> MemoryFile | None:
        return self.files.get(path)

    def is_directory(self, path: str) -> bool:
        return path in self.directories

    def exists(self, path: str) -> bool:
        return path in self.files or path in self.directories

    def files_under(self, directory: str) -> list[MemoryFile]:
        if directory == ROOT:
            return list(self.files.values())
        return [item for path, item in self.files.items() if is_within(path, directory)]

    def size_of(self, path: str) -> int:
        """A file's size, or everything a directory holds (as ``du`` counts it)."""
        if path in self.files:
            return self.files[path].size
        return sum(item.size for item in self.files_under(path))

    def children(self, directory: str) -> list[str]:
        """The files and directories directly inside ``directory``, sorted by name."""
        depth = len(parts_of(directory)) + 1
        found = {
            path
            for path in (*self.files, *self.directories)
            if len(parts_of(path)) == depth and (directory == ROOT or is_within(path, directory))
        }
        return sorted(found, key=lambda path: path.rsplit("/", 1)[-1])

    def walk(self, directory: str, levels: int = 2) -> Iterator[str]:
        """Paths below ``directory``, depth first in name order, at most ``levels`` deep; hidden
        names (starting with a dot) and what lies below them are left out."""
        for path in self.children(directory):
            if path.rsplit("/", 1)[-1].startswith("."):
                continue
            yield path
            if levels > 1 and path in self.directories:
                yield from self.walk(path, levels - 1)


def is_hidden(path: str) -> bool:
    """A hidden item, or one inside a hidden directory (a part of its path starts with a dot): the
    root listing leaves it out, as the tool's own listing does; it is still read by its path."""
    return any(part.startswith(".") for part in parts_of(path))


def memory_path_of(entry: IndexEntry) -> str:
    """Where a record appears: its own ``memoryPath`` when that is a valid path of its kind, else
    the path its kind directory and file name give."""
    given = entry.frontmatter.get(MEMORY_PATH_FIELD)
    if isinstance(given, str):
        try:
            path = canonical_path(given)
        except InvalidArguments:
            path = None
        if path is not None and path != ROOT and kind_for_path(path) == entry.kind:
            return path
    return canonical_file_path(entry.kind, PurePosixPath(entry.path).name)


def visible(entry: IndexEntry, now_iso: str) -> bool:
    return not is_inactive(entry.status) and not is_expired_iso(entry.expires_at, now_iso)


def load_tree(vault: Vault, project: str, now: datetime) -> MemoryTree:
    """The tree as the vault holds it now (files edited by hand included)."""
    with vault.lock():
        ensure_index(vault)
        refresh_project(vault, project)
    now_iso = format_iso(now)
    entries = [entry for entry in vault.index().entries(project) if visible(entry, now_iso)]
    # A path the model named wins over the same path given by a file name; ties go by file path.
    placed = sorted(
        ((memory_path_of(entry), entry) for entry in entries),
        key=lambda pair: (pair[1].frontmatter.get(MEMORY_PATH_FIELD) != pair[0], pair[1].path),
    )
    tree = MemoryTree()
    tree.directories.add(ROOT)
    for directory in SHOWN_KIND_DIRECTORIES:
        tree.directories.add(f"{ROOT}/{directory}")
    for path, entry in placed:
        if path in tree.files:
            continue
        tree.files[path] = MemoryFile(path, entry)
        parts = parts_of(path)
        for depth in range(1, len(parts)):
            tree.directories.add("/".join([ROOT, *parts[:depth]]))
    return tree


def is_fixed_directory(path: str) -> bool:
    """``/memories`` itself and the kind directories: they exist whatever they hold."""
    return path == ROOT or path in {f"{ROOT}/{directory}" for directory in KIND_DIRECTORY.values()}


def freshness_line(item: MemoryFile) -> str:
    """One line of the index shown under the root listing: what the record is and how fresh."""
    entry = item.entry
    facts = [entry.kind]
    if entry.severity:
        facts.append(entry.severity)
    if entry.updated:
        facts.append(f"updated {entry.updated[:10]}")
    if entry.expires_at:
        facts.append(f"expires {entry.expires_at[:10]}")
    if is_pending(entry.frontmatter):
        facts.append("waiting for review")
    if is_flagged_stale(entry.helpful, entry.stale):
        facts.append("flagged stale")
    title = " ".join(entry.title.split())
    shown = f" — {title[:80]}" if title and title != entry.id else ""
    return f"{item.path} ({', '.join(facts)}){shown}"


__all__ = [
    "MEMORY_PATH_FIELD",
    "MemoryFile",
    "MemoryTree",
    "freshness_line",
    "is_fixed_directory",
    "is_hidden",
    "load_tree",
    "memory_path_of",
]
