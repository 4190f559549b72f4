"""Keeping the index and the views in step with the Markdown files.

``index_record`` after a write, ``refresh_project`` after edits made outside memosite (only files
whose size or mtime changed are parsed), ``reindex`` to rebuild everything from the files. Each
record indexed also gets its vector when hybrid search is on (:func:`semantic_embedder`): only the
records a write or a refresh touches are embedded; ``reindex`` embeds them all again.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from stat import S_ISREG
from typing import TYPE_CHECKING

from memosite.errors import InvalidArguments, InvalidRecord, SafetyViolation, StorageError
from memosite.expiration import iso_or_none, resolve_expires_at
from memosite.index import IndexEntry, fragments, vectors
from memosite.kinds import RECORD_DIRS, views_for_kinds
from memosite.recordfile import read_record, record_title
from memosite.recurrence import pattern_key
from memosite.schema import SEVERITY_WEIGHT, Record
from memosite.template_files import templates_checksum_for
from memosite.vault import TEMP_PREFIX, Tombstone, Vault, is_record_name, warn

if TYPE_CHECKING:
    from memosite.embedding import Embedder


def build_entry(vault: Vault, record: Record, path: Path, stat: os.stat_result | None = None) -> IndexEntry:
    """The index row of a record file, fragments included."""
    fm = record.frontmatter
    stat = stat or path.stat()
    patterns = [str(p) for p in fm.get("pathPatterns") or []]
    severity = fm.get("severity")
    entry = IndexEntry(
        path=vault.relative(path),
        project=str(fm.get("project")),
        kind=record.kind,
        id=record.id,
        slug=path.stem,
        title=record_title(record),
        status=record.status,
        severity=severity,
        severity_weight=SEVERITY_WEIGHT.get(str(severity), 0),
        layer=fm.get("layer"),
        module=str(fm["module"]) if fm.get("module") else None,
        tags=[str(t) for t in fm.get("tags") or []],
        path_patterns=patterns,
        pattern_key=pattern_key(patterns),
        created=fm.get("created"),
        updated=fm.get("updated"),
        expires_at=iso_or_none(resolve_expires_at(fm, vault.config)),
        occurrences=int(fm.get("occurrences") or 0),
        hits=int(fm.get("hits") or 0),
        helpful=int(fm.get("helpfulCount") or 0),
        stale=int(fm.get("staleCount") or 0),
        last_hit=fm.get("lastHit"),
        supersedes=str(fm["supersedes"]) if fm.get("supersedes") else None,
        superseded_by=str(fm["supersededBy"]) if fm.get("supersededBy") else None,
        body=record.body,
        frontmatter=fm,
        mtime_ns=stat.st_mtime_ns,
        size=stat.st_size,
    )
    from memosite.views import env_for, render_fragments  # Jinja: imported by the paths that render

    render_fragments(entry, env_for(vault))
    return entry


def semantic_embedder(vault: Vault, query: str | None = None) -> Embedder | None:
    """The embedding model when hybrid search is on for ``vault``: ``search.semantic`` is not false
    and ``memosite[semantic]`` is installed. None otherwise (words alone), and — without loading the
    model — for a ``query`` the model cannot read or when the index holds no vector yet (``reindex``
    computes them). An installed package whose model cannot be used says why, once, on stderr."""
    if not vault.config.search_semantic:
        return None
    from memosite.embedding import load_embedder, reads, unavailable  # numpy: only when the model loads

    if query is not None and (not reads(query) or not vectors.any_stored(vault.index())):
        return None
    model = load_embedder()
    if model is None and unavailable() is not None:
        _warn_once(f"search ranks by words alone: {unavailable()}")
    return model


@functools.cache
def _warn_once(message: str) -> None:
    warn(message)


def attach_vectors(vault: Vault, entries: Sequence[IndexEntry], *, again: bool = False) -> None:
    """Give each entry its vector (one batch), when hybrid search is on. An entry whose text is the
    one its stored vector was computed from keeps that vector (none is computed or written), unless
    ``again`` (a forced refresh: ``reindex`` computes every vector anew, a damaged one too)."""
    embedder = semantic_embedder(vault) if entries else None
    if embedder is None:
        return
    from memosite.embedding import record_text

    if not again:
        kept = vectors.standing(
            vault.index(),
            embedder.name,
            [(e.path, e.project, e.kind, e.title, e.body, " ".join(e.tags)) for e in entries],
        )
        entries = [entry for entry in entries if entry.path not in kept]
    rows = embedder.embed_records([record_text(entry.title, entry.body, entry.tags) for entry in entries])
    for entry, row in zip(entries, rows, strict=True):
        entry.vector = (embedder.name, embedder.to_blob(row))


def fill_missing_vectors(vault: Vault, embedder: Embedder) -> int:
    """Embed the records indexed while the model was off or not installed; how many. Cheap when
    none is missing: the answer is remembered until the index changes."""
    index = vault.index()

    def complete() -> bool:
        return vectors.count(index, embedder.name) >= index.count()

    if index.remembered(("vectors complete", embedder.name), complete):
        return 0
    from memosite.embedding import record_text

    lacking = vectors.missing(index, embedder.name)
    if not lacking:
        return 0
    rows = embedder.embed_records([record_text(item.title, item.body, item.tags) for item in lacking])
    try:
        stored = vectors.store_rows(
            index, embedder.name, [(item, embedder.to_blob(row)) for item, row in zip(lacking, rows, strict=True)]
        )
        vectors.drop_other_models(index, embedder.name)
    except sqlite3.Error as exc:
        warn(f"index vectors not saved ({exc}); search ranks by words until they are")
        return 0
    return stored


def index_record(vault: Vault, record: Record, path: Path) -> IndexEntry | None:
    """Index one just-written record. Index failures warn and never undo the file write."""
    try:
        entry = build_entry(vault, record, path)
        attach_vectors(vault, [entry])
        vault.index().upsert(entry)
        return entry
    except (sqlite3.Error, OSError) as exc:
        kept = vault.index().row_not_saved()
        warn(
            f"index update failed for {path.name}: {exc} "
            + ("(the next command reads it again)" if kept else "(run `memosite reindex`)")
        )
        return None


def remove_record_files(vault: Vault, tombstones: Sequence[Tombstone]) -> None:
    """Physically remove record files, recording a tombstone for each.

    Each file is first renamed to a temp name beside it — proof it can be removed at all, so a
    refused removal (a read-only directory) leaves the record and writes no tombstone that would
    delete it elsewhere on sync. Then the tombstones are appended with one fsync, the files
    unlinked and their index rows dropped in one transaction.
    """
    if not tombstones:
        return
    moved: list[tuple[Path, Path]] = []
    try:
        for tombstone in tombstones:
            aside = tombstone.path.with_name(f"{TEMP_PREFIX}purge-{tombstone.path.name}")
            try:
                os.replace(tombstone.path, aside)
            except FileNotFoundError:
                continue  # gone already (removed outside the lock since it was read)
            moved.append((tombstone.path, aside))
    except OSError as exc:
        for original, aside in reversed(moved):
            with contextlib.suppress(OSError):
                os.replace(aside, original)
        raise StorageError(f"cannot remove {vault.relative(Path(exc.filename or ''))}: {exc.strerror or exc}") from exc
    vault.record_tombstones(tombstones)
    for _, aside in moved:
        with contextlib.suppress(FileNotFoundError):
            aside.unlink()
    index = vault.index()
    try:
        with index.transaction():
            for tombstone in tombstones:
                index.delete_path(vault.relative(tombstone.path))
    except sqlite3.Error as exc:
        kept = index.row_not_saved()
        warn(
            f"index delete failed: {exc} " + ("(the next command looks again)" if kept else "(run `memosite reindex`)")
        )


def rebuild_views(vault: Vault, project: str, kinds: Iterable[str] | None = None) -> list[Path]:
    """Rewrite the views that records of ``kinds`` appear in (all views when None).

    Views are derived: when one cannot be compiled (a broken template override, a full disk) the
    write that asked for it still stands, and the failure is a warning naming the cause.
    """
    import jinja2

    from memosite.views import write_views

    names = views_for_kinds(kinds) if kinds is not None else None
    try:
        return write_views(vault, project, names) if names is not None else write_views(vault, project)
    except (sqlite3.Error, jinja2.TemplateError, StorageError, SafetyViolation) as exc:
        warn(f"compiling views failed for {project}: {describe_view_error(exc)} (fix it, then `memosite compile`)")
        return []


def describe_view_error(exc: BaseException) -> str:
    """One line for a view failure; a template error names the template and line."""
    import jinja2

    if isinstance(exc, jinja2.TemplateSyntaxError):
        return f"template {exc.name or exc.filename or '?'} line {exc.lineno}: {exc.message}"
    if isinstance(exc, StorageError):
        return exc.message
    if isinstance(exc, SafetyViolation):  # a vault template the sandbox stopped
        return f"{exc.code}: {exc.message}"
    return f"{type(exc).__name__}: {exc}"


@dataclass
class RefreshResult:
    added: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    invalid: list[str] = field(default_factory=list)
    kinds: set[str] = field(default_factory=set)

    @property
    def touched(self) -> bool:
        return bool(self.added or self.changed or self.removed)


def record_file_stats(vault: Vault, project: str) -> Iterator[tuple[str, str, os.stat_result]]:
    """Each record file of ``project`` (in :meth:`Vault.iter_record_files` order) with its
    vault-relative path, its path on disk and its stat (files that vanish while listed are left out)."""
    base = vault.project_dir(project)
    prefixes: dict[str, str] = {}
    for subdir, entry in vault.record_dir_entries(project):
        prefix = prefixes.get(subdir)
        if prefix is None:
            prefix = prefixes[subdir] = vault.relative(base / subdir) + "/"
        try:
            # The entry is a regular file, no symlink (record_dir_entries): this is os.stat(path).
            stat = entry.stat()
        except FileNotFoundError:
            continue
        yield prefix + entry.name, entry.path, stat


def refresh_project(vault: Vault, project: str, *, force: bool = False, embed: bool = True) -> RefreshResult:
    """Bring a project's index rows in step with its files. Unparseable files warn and are skipped.
    With ``embed=False`` the changed records get no vector here: the next hybrid search or brief
    computes the missing ones (:func:`fill_missing_vectors`), so a caller that only reads words
    (the site build) never loads the model."""
    index = vault.index()
    known = index.file_stamps(project)
    result = RefreshResult()
    seen: set[str] = set()
    entries: list[IndexEntry] = []
    for relative, path, stat in record_file_stats(vault, project):
        seen.add(relative)
        held = known.get(relative)
        if not force and held is not None and held[0] == stat.st_mtime_ns and held[1] == stat.st_size:
            continue
        _read_into(
            vault,
            relative,
            Path(path),
            stat,
            result,
            entries,
            previous_kind=held[2] if held is not None else None,
            known=held is not None,
        )
    if embed:
        attach_vectors(vault, entries, again=force)
    with index.transaction():
        for entry in entries:
            index.upsert(entry)
        for relative in set(known) - seen:
            index.delete_path(relative)
            result.removed.append(relative)
            result.kinds.add(known[relative][2])
        # An invalid file keeps no stale row: its last good content is not what is on disk.
        for relative in result.invalid:
            if index.delete_path(relative):
                result.removed.append(relative)
                result.kinds.add(known[relative][2] if relative in known else "trap")
        remember_directories(vault, project)
    return result


def _read_into(
    vault: Vault,
    relative: str,
    path: Path,
    stat: os.stat_result,
    result: RefreshResult,
    entries: list[IndexEntry],
    *,
    previous_kind: str | None,
    known: bool,
) -> None:
    """Read one changed record file into ``entries`` and say so in ``result`` (changed when the
    index ``known`` it, else added; its kind, and the kind it had, touched); a file that does not
    parse is reported and listed invalid."""
    try:
        record = read_record(path)
    except (InvalidRecord, StorageError) as exc:
        warn(f"skipping {relative}: {exc.message}")
        result.invalid.append(relative)
        return
    entries.append(build_entry(vault, record, path, stat))
    (result.changed if known else result.added).append(relative)
    result.kinds.add(record.kind)
    if previous_kind is not None:
        result.kinds.add(previous_kind)


def _record_file_stat(vault: Vault, project: str, relative: str) -> os.stat_result | None:
    """The stat of ``relative`` when it is a record file of ``project`` that
    :meth:`Vault.iter_record_files` would list (a regular file in a kind directory, no symlink on
    the way), None when it is not or no longer is."""
    parts = relative.split("/")
    if len(parts) != 4 or parts[0] != "projects" or parts[1] != project:
        return None
    if parts[2] not in RECORD_DIRS or not is_record_name(parts[3]):
        return None
    base = vault.project_dir(project)
    try:
        if base.is_symlink() or (base / parts[2]).is_symlink():
            return None  # never read records from outside the vault
        stat = os.lstat(base / parts[2] / parts[3])
    except OSError:
        return None
    return stat if S_ISREG(stat.st_mode) else None


def refresh_files(vault: Vault, project: str, relatives: Iterable[str], *, embed: bool = True) -> RefreshResult:
    """:func:`refresh_project` for the named files of ``project`` only (vault-relative paths, as a
    file watcher reports them): each is parsed and indexed when its size or mtime changed, dropped
    from the index when it is gone or no longer a record file, reported and dropped when it does not
    parse. No other file is listed, stat-ed or read. ``embed`` as for :func:`refresh_project`."""
    index = vault.index()
    wanted = sorted(set(relatives))
    known = index.file_stats_of(wanted)
    result = RefreshResult()
    entries: list[IndexEntry] = []
    gone: list[str] = []
    for relative in wanted:
        stat = _record_file_stat(vault, project, relative)
        if stat is None:
            if relative in known:
                gone.append(relative)
            continue
        held = known.get(relative)
        if held is not None and held[:2] == (stat.st_mtime_ns, stat.st_size):
            continue
        previous = held[2] if held is not None else None
        _read_into(
            vault,
            relative,
            vault.root / relative,
            stat,
            result,
            entries,
            previous_kind=previous,
            known=held is not None,
        )
    if embed:
        attach_vectors(vault, entries)
    with index.transaction():
        for entry in entries:
            index.upsert(entry)
        for relative in [*gone, *result.invalid]:
            # An invalid file keeps no stale row either: its last good content is not what is on disk.
            if index.delete_path(relative):
                result.removed.append(relative)
                result.kinds.add(known[relative][2] if relative in known else "trap")
        remember_directories(vault, project)
    return result


# --- noticing files added or removed by hand -----------------------------------------------

DIRECTORIES_META = "directories:"


def directory_stamps(vault: Vault, project: str) -> dict[str, int]:
    """The modification time of each of the project's record directories: a file created,
    renamed or removed there (by an editor that saves by renaming, too) changes it."""
    stamps: dict[str, int] = {}
    base = os.fspath(vault.project_dir(project)) + os.sep
    for directory in RECORD_DIRS:
        try:
            stamps[directory] = os.stat(base + directory).st_mtime_ns
        except OSError:
            continue
    return stamps


def _stamps_text(vault: Vault, project: str) -> str:
    return json.dumps(directory_stamps(vault, project), sort_keys=True)


def remember_directories(vault: Vault, project: str) -> None:
    """The index is in step with the project's directories as they are now."""
    index = vault.index()
    text = _stamps_text(vault, project)
    index.set_meta(DIRECTORIES_META + project, text)
    index.seen_directories()[project] = text


def _in_step(vault: Vault, project: str) -> bool:
    """The project's directories are as the index last saw them (a memo of the stamps this
    process last wrote or read spares the read; any change moves a stamp, so it never hides one)."""
    index = vault.index()
    text = _stamps_text(vault, project)
    seen = index.seen_directories()
    if seen.get(project) == text:
        return True
    if index.get_meta(DIRECTORIES_META + project) != text:
        return False
    seen[project] = text
    return True


def catch_up(vault: Vault) -> None:
    """Pick up record files added or removed outside memosite since the index last looked, by
    comparing the record directories' times (a few stats per project); then their views follow.
    A file edited in place without a rename is picked up by ``list``, ``compile`` or ``watch``."""
    stale = [project for project in vault.projects() if not _in_step(vault, project)]
    if not stale:
        return
    with vault.lock():
        for project in stale:
            result = refresh_project(vault, project)
            if result.touched:
                rebuild_views(vault, project, result.kinds)


def require_project(vault: Vault, project: str, known: Sequence[str] | None = None) -> None:
    """A project asked for by name must have a folder in the vault: rebuilding or compiling one
    that has none (a typo, or a command run in a directory that names no project) would only make
    an empty project. INVALID_ARGUMENTS naming the vault's projects."""
    if vault.project_dir(project).is_dir():
        return
    from memosite.suggest import did_you_mean, near_misses

    known = list(vault.projects() if known is None else known)
    near = near_misses(project, known)
    listed = ", ".join(known[:10]) + (" …" if len(known) > 10 else "") if known else "none yet"
    hint = did_you_mean(near) if near else f" (its projects: {listed})"
    raise InvalidArguments(
        f"no project {project} in this vault{hint}: name one with --project, or write a record first",
        details={"project": project, "projects": known, "suggestions": near},
    )


def reindex(vault: Vault, projects: Iterable[str] | None = None) -> dict[str, int]:
    """Rebuild the index from the Markdown files and recompile every view; returns counts."""
    counts: dict[str, int] = {}
    with vault.lock():
        index = vault.index()
        everything = vault.projects()
        wanted = list(projects) if projects is not None else everything
        for project in wanted:
            require_project(vault, project, everything)
        for project in index.projects():
            if projects is None and project not in wanted:
                index.clear(project)
        # A new index must hold every project, not only the ones asked for.
        targets = everything if index.fresh else wanted
        for project in targets:
            refresh_project(vault, project, force=True)
        from memosite.views import write_views

        for project in wanted:
            write_views(vault, project)
            counts[project] = index.count(project)
        index.fresh = False
        if set(targets) >= set(everything):
            index.set_meta(TEMPLATES_META, templates_checksum_for(vault))
    return counts


def ensure_index(vault: Vault) -> None:
    """A missing or outdated index is rebuilt from the files before first use, and files added or
    removed outside memosite are picked up. What a killed unit of work left half done is finished
    by the next unit (:func:`memosite.mutation.recover_interrupted`), not here: a read never
    commits."""
    index = vault.index()
    if index.fresh:
        index.fresh = False
        for project in vault.projects():
            refresh_project(vault, project, force=True)
        index.set_meta(TEMPLATES_META, templates_checksum_for(vault))
    elif index.get_meta(TEMPLATES_META) != templates_checksum_for(vault):
        rerender_templates(vault)
    catch_up(vault)


TEMPLATES_META = "templates_checksum"


def rerender_templates(vault: Vault) -> None:
    """The templates changed (a vault override appeared, changed or went): render every record's
    view fragments again from its index row and rewrite every view."""
    index = vault.index()
    with vault.lock():
        checksum = templates_checksum_for(vault)
        if index.get_meta(TEMPLATES_META) == checksum:
            return
        from memosite.views import env_for, render_fragments

        env = env_for(vault)
        with index.transaction():
            for project in index.projects():
                for entry in index.entries(project):
                    render_fragments(entry, env)
                    index.upsert(entry)
            fragments.forget_files(index)
            index.set_meta(TEMPLATES_META, checksum)
        for project in vault.projects():
            rebuild_views(vault, project)
