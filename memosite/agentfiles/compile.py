"""``memosite agents compile``: memory into the files agents read, in the product repository.

:func:`plan_compile` works out every file's new content without writing anything — ``--check``
and ``--diff`` stop there — and :func:`apply_plan` writes it:

* **The block** in ``AGENTS.md`` (created holding only the block when there is none), and in
  ``CLAUDE.md`` and ``.github/copilot-instructions.md`` when they exist or are asked for. A file
  without the markers is left alone unless ``init`` adds them at its end. Only the bytes between
  the markers ever change (:mod:`memosite.agentfiles.markers`). A file that is a symlink is
  written through to its target when that lies in the repository (``CLAUDE.md -> AGENTS.md`` is
  one file, compiled once).
* **Rule files** (:mod:`memosite.agentfiles.rules`), listed in the manifest
  ``.memosite-agents.json`` at the repository's root. A rule file the manifest lists and the
  memory no longer needs is removed; a file the manifest does not list is a person's and is never
  written over or removed, whatever its name. The manifest comes from the shared repository, so it
  is data: an entry that is not a memosite rule file name is ignored, and a listed file that
  lacks the note memosite writes into each is a person's too.

The output depends only on the memory, the settings and the repository's code: compiling twice
gives the same bytes, and ``--check`` fails exactly when a file differs from what a compile writes.
"""

from __future__ import annotations

import difflib
import os
import re
import stat
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from memosite.agentfiles.block import Block, render_block
from memosite.agentfiles.markers import append_block, block_file, find_block, replace_block, with_newlines
from memosite.agentfiles.repofiles import (
    MANIFEST,
    Repository,
    inside,
    manifest_bytes,
    read_bounded,
    read_manifest,
)
from memosite.agentfiles.rules import (
    RuleSet,
    carries_note,
    group_traps,
    render_rule,
    rule_path,
)
from memosite.agentfiles.selection import Selection, select_memory
from memosite.agentfiles.settings import AgentFilesSettings
from memosite.errors import InvalidArguments, SafetyViolation, StorageError
from memosite.vault import Vault, atomic_write_bytes

AGENTS_MD = "AGENTS.md"
# The other files that carry the block, by the name ``--with`` gives them.
BLOCK_FILES = {"claude": "CLAUDE.md", "copilot": ".github/copilot-instructions.md"}
# The manifest is shared through git and may name any file: one memosite rewrites or removes must
# also still say it is memosite's.
_NO_NOTE = "is in the manifest but lacks memosite's note: a person's file, left alone"
# Claude Code reads a file that CLAUDE.md imports (a line such as `@AGENTS.md`) as part of it: a
# block of its own there would reach every session twice.
_IMPORTS_AGENTS_MD = re.compile(rb"(?<!\S)@(?:\./)?" + re.escape(AGENTS_MD.encode()) + rb"(?![\w./-])")

Action = Literal["create", "update", "delete", "unchanged", "skip"]


@dataclass
class FileChange:
    """What a compile does to one file of the repository (``path`` relative to its root)."""

    path: str
    action: Action
    before: bytes | None = None
    after: bytes | None = None
    reason: str = ""
    target: Path | None = None  # where the bytes go (a symlink's target)

    @property
    def changes(self) -> bool:
        return self.action in ("create", "update", "delete")

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"path": self.path, "action": self.action}
        if self.reason:
            data["reason"] = self.reason
        return data


@dataclass
class CompilePlan:
    root: Path
    project: str
    selection: Selection
    block: Block
    rules: RuleSet
    max_bytes: int
    changes: list[FileChange] = field(default_factory=list)
    written: bool = False
    listed: list[str] = field(default_factory=list)  # the rule files the manifest lists now
    managed: list[str] = field(default_factory=list)  # and after this compile

    @property
    def out_of_date(self) -> list[FileChange]:
        return [change for change in self.changes if change.changes]

    def diff(self) -> str:
        """What a compile would change, as a unified diff (``a/…`` now, ``b/…`` after)."""
        out: list[str] = []
        for change in self.out_of_date:
            before = _text(change.before).splitlines(keepends=True)
            after = _text(change.after).splitlines(keepends=True)
            old = f"a/{change.path}" if change.before is not None else "/dev/null"
            new = f"b/{change.path}" if change.after is not None else "/dev/null"
            for line in difflib.unified_diff(before, after, old, new):
                out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
        return "".join(out)

    def to_json(self) -> dict[str, Any]:
        return {
            "repository": str(self.root),
            "project": self.project,
            "upToDate": not self.out_of_date,
            "written": self.written,
            "blockBytes": self.block.bytes,
            "maxBytes": self.max_bytes,
            "traps": self.block.traps,
            "decisions": self.block.decisions,
            "leftOut": {f"{noun}s": count for noun, count in self.block.left_out.items()},
            "heldBack": {verdict: ids for verdict, ids in sorted(self.selection.unfresh.items())},
            "ruleGroups": [{"group": g.key, "name": g.name, "traps": len(g.items)} for g in self.rules.groups],
            "unsafePatterns": self.rules.unsafe_patterns,
            "files": [change.to_json() for change in self.changes],
        }


def _text(data: bytes | None) -> str:
    return "" if data is None else data.decode("utf-8", errors="replace")


def _block_change(
    repo: Repository, name: str, inner: str, *, init: bool, create: bool, seen: dict[Path, str]
) -> FileChange | None:
    real, why = repo.locate(name)
    if real is None:
        return FileChange(name, "skip", reason=why) if (repo.root / name).is_symlink() or create else None
    if real in seen:
        return FileChange(name, "skip", reason=f"is {seen[real]} (a symlink): compiled once")
    seen[real] = name
    if not real.exists():
        if not create:
            return None
        return FileChange(name, "create", None, with_newlines(block_file(inner), b"\n"), target=real)
    before = read_bounded(real)
    span = find_block(before, name)
    if span is None and name == BLOCK_FILES["claude"] and _IMPORTS_AGENTS_MD.search(before):
        why = f"imports {AGENTS_MD}, whose block Claude Code reads: left alone"
        return FileChange(name, "skip", before, reason=why)
    if span is None:
        if not init:
            return FileChange(name, "skip", before, reason="has no memosite markers: left alone (--init adds them)")
        after = append_block(before, inner)
    else:
        after = replace_block(before, span, inner)
    return FileChange(name, "unchanged" if after == before else "update", before, after, target=real)


def _rule_changes(repo: Repository, wanted: dict[str, str], listed: list[str]) -> tuple[list[FileChange], list[str]]:
    """Changes to rule files, and the files the manifest lists afterwards."""
    changes: list[FileChange] = []
    managed: list[str] = []
    for name, text in sorted(wanted.items()):
        real, why = repo.locate(name)
        after = text.encode("utf-8")
        if real is None:
            changes.append(FileChange(name, "skip", reason=why))
            continue
        if (repo.root / name).is_symlink():
            changes.append(FileChange(name, "skip", reason="is a symlink: left alone"))
            continue
        if not real.exists():
            changes.append(FileChange(name, "create", None, after, target=real))
            managed.append(name)
            continue
        before = read_bounded(real)
        if name not in listed:
            changes.append(
                FileChange(name, "skip", before, reason="is not in the manifest: a person's file, left alone")
            )
            continue
        if not carries_note(before):
            changes.append(FileChange(name, "skip", before, reason=_NO_NOTE))
            continue
        changes.append(FileChange(name, "unchanged" if before == after else "update", before, after, target=real))
        managed.append(name)
    for name in listed:
        if name in wanted:
            continue
        real, why = repo.locate(name)
        if real is None or (repo.root / name).is_symlink():
            # Through a link memosite would remove a file it never wrote, maybe outside the repository.
            changes.append(FileChange(name, "skip", reason=why or "is a symlink: left alone"))
        elif real.exists():
            before = read_bounded(real)
            if carries_note(before):
                changes.append(FileChange(name, "delete", before, None, reason="no longer needed", target=real))
            else:
                changes.append(FileChange(name, "skip", before, reason=_NO_NOTE))
    return changes, managed


def plan_compile(
    vault: Vault,
    project: str,
    root: Path,
    *,
    settings: AgentFilesSettings,
    init: bool = False,
    with_files: Sequence[str] = (),
    judge_code: bool = True,
    now: datetime,
) -> CompilePlan:
    """What a compile into the repository at ``root`` would write (nothing is written).

    ``with_files`` names the other block files to create when missing (``claude``, ``copilot``);
    ``judge_code`` judges cited code against ``root`` (off for a directory that is not the code,
    such as the demo's)."""
    unknown = [name for name in with_files if name not in BLOCK_FILES]
    if unknown:
        raise InvalidArguments(f"invalid --with {unknown[0]!r}: expected {' or '.join(BLOCK_FILES)}")
    root = root.absolute()
    if not root.is_dir():
        raise InvalidArguments(f"no repository at {root}: run it in the product repository or give --repo DIR")
    if inside(root.resolve(), vault.root.resolve()):
        raise SafetyViolation("agents compile writes into a product repository, never into the vault")
    if inside(vault.root.resolve(), root.resolve()):
        raise SafetyViolation(
            f"refusing to compile into {root.name}: the vault lies inside it; keep the vault outside the repository"
        )
    selection = select_memory(vault, project, root if judge_code else None, now=now)
    block = render_block(selection, max_bytes=settings.max_bytes, site_url=settings.site_url)
    rules = group_traps(selection.scoped)
    plan = CompilePlan(root, project, selection, block, rules, settings.max_bytes)
    repo = Repository(root)
    seen: dict[Path, str] = {}
    for name, create in [(AGENTS_MD, True), *((path, key in with_files) for key, path in BLOCK_FILES.items())]:
        change = _block_change(repo, name, block.inner, init=init, create=create, seen=seen)
        if change is not None:
            plan.changes.append(change)
    wanted = {
        rule_path(agent, group): render_rule(agent, group, project, settings.site_url)
        for agent in settings.rule_agents
        for group in rules.groups
    }
    listed = read_manifest(root)
    rule_changes, managed = _rule_changes(repo, wanted, listed)
    plan.changes += rule_changes
    plan.listed, plan.managed = listed, managed
    manifest_real, why = repo.locate(MANIFEST)
    before = read_bounded(manifest_real) if manifest_real is not None and manifest_real.exists() else None
    if manifest_real is None:
        plan.changes.append(FileChange(MANIFEST, "skip", reason=why))
    elif managed:
        after = manifest_bytes(managed)
        action: Action = "create" if before is None else "unchanged" if before == after else "update"
        plan.changes.append(FileChange(MANIFEST, action, before, after, target=manifest_real))
    elif before is not None:
        plan.changes.append(FileChange(MANIFEST, "delete", before, None, "no rule files left", manifest_real))
    return plan


def apply_plan(plan: CompilePlan) -> CompilePlan:
    """Write what ``plan`` says: new and changed files atomically, then removals, the manifest last.

    Before a rule file is created the manifest already lists it (with every file listed before), so
    a compile stopped half way never leaves a file of memosite's that the next one takes for a
    person's."""
    _check_writable(plan)
    manifest = next((change for change in plan.changes if change.path == MANIFEST), None)
    creating = [c.path for c in plan.out_of_date if c.action == "create" and c.path in plan.managed]
    if creating and manifest is not None and manifest.target is not None:
        _write(manifest.target, manifest_bytes(sorted({*plan.listed, *plan.managed})), MANIFEST)
    ordered = sorted(plan.out_of_date, key=lambda change: (change.path == MANIFEST, change.action == "delete"))
    for change in ordered:
        if change.target is None:
            continue
        if change.after is None:
            try:
                change.target.unlink(missing_ok=True)
            except OSError as exc:
                raise StorageError(f"cannot remove {change.path}: {exc.strerror or exc}") from exc
            continue
        _write(change.target, change.after, change.path)
    plan.written = True
    return plan


def _check_writable(plan: CompilePlan) -> None:
    """STORAGE_ERROR, before anything is written, when a file the plan changes is read-only or its
    folder cannot be written: a compile either writes every file it names or none."""
    for change in plan.out_of_date:
        if change.target is None:
            continue
        try:
            # A replace by rename would go through a file its owner made read-only: theirs to lift.
            locked = change.target.exists() and not change.target.stat().st_mode & 0o222
        except OSError as exc:
            raise StorageError(f"cannot write {change.path}: {exc.strerror or exc}; nothing was changed") from exc
        if locked:
            raise StorageError(
                f"cannot write {change.path}: it is read-only; make it writable (chmod u+w) to compile into it"
                " — nothing was changed"
            )
        folder = change.target.parent
        while not folder.exists() and folder != folder.parent:
            folder = folder.parent
        if not os.access(folder, os.W_OK):
            raise StorageError(f"cannot write {change.path}: its folder is not writable — nothing was changed")


def _write(target: Path, data: bytes, name: str) -> None:
    try:
        mode = stat.S_IMODE(target.stat().st_mode) if target.exists() else 0o644
        atomic_write_bytes(target, data, mode=mode)
    except OSError as exc:
        raise StorageError(f"cannot write {name}: {exc.strerror or exc}") from exc
