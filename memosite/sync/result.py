"""What a sync did (or, with ``--dry-run``, would do): :class:`SyncResult`."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

from memosite.policy import ConfigReport
from memosite.schema import format_iso
from memosite.sync.paths import classify, parse_sidecar
from memosite.sync.repo import RemoteTarget
from memosite.sync.resolution import Resolution
from memosite.sync.resync import ResyncResult
from memosite.vaultgit import LeftOut

Integration = Literal["up-to-date", "ahead", "fast-forward", "merge", "join", "first-push"]


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """``1 commit``, ``2 commits`` (``plural`` for nouns that do not just take an s)."""
    return f"{count} {noun if count == 1 else plural or noun + 's'}"


if TYPE_CHECKING:
    from memosite.sync.conflicts import Conflict


@dataclass(frozen=True)
class ConflictNote:
    """A record (or file) both sides changed in the same place: the remote version is ``sidecar``;
    ``resolve`` is the command that ends it on this machine."""

    path: str
    sidecar: str
    reason: str
    resolve: str | None = None

    def with_resolve(self, conflict: Conflict | None) -> ConflictNote:
        """This note with the command that ends ``conflict`` (as ``memosite conflicts`` gives it)."""
        if conflict is None:
            return self
        choice = "mine|theirs" if conflict.mine is not None else "in-place|sidecar"
        return dataclasses.replace(self, resolve=f"memosite resolve {conflict.ref} --take {choice}")

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "sidecar": self.sidecar, "reason": self.reason, "resolve": self.resolve}


@dataclass(frozen=True)
class PurgeNote:
    """A record removed on one side (``side``) and changed on the other: purged or kept."""

    path: str
    side: str
    deleted_at: datetime | None
    edited_at: datetime | None
    reason: str

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "purgedOn": self.side,
            "deletedAt": format_iso(self.deleted_at) if self.deleted_at else None,
            "editedAt": format_iso(self.edited_at) if self.edited_at else None,
            "reason": self.reason,
        }


@dataclass
class SyncResult:
    """The outcome of one sync with ``remote`` (``url``) on ``branch``; ``remote`` None: a URL
    that is no remote of the vault's repository (synced with by URL)."""

    remote: str | None
    url: str
    branch: str
    dry_run: bool = False
    committed_local: bool = False  # local changes were committed before merging
    integration: Integration = "up-to-date"
    incoming: int = 0  # commits brought in from the remote
    outgoing: int = 0  # commits pushed to it
    pushed: bool = False
    finished_merge: bool = False  # a merge a plain `git pull` left unfinished was completed
    added: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    merged: list[str] = field(default_factory=list)  # changed on both sides, merged field by field
    conflicts: list[ConflictNote] = field(default_factory=list)
    purged: list[PurgeNote] = field(default_factory=list)
    kept_after_purge: list[PurgeNote] = field(default_factory=list)
    ended_by_purge: list[ConflictNote] = field(default_factory=list)  # sidecars of purged records, removed
    brought_in: list[ConflictNote] = field(default_factory=list)  # conflicts other machines made, now here
    left_out: list[LeftOut] = field(default_factory=list)  # files changed here a shared vault may not hold
    remote_added: str | None = None  # the URL became this remote of the repository
    config: ConfigReport | None = None  # review policy changes and ignored settings, after the sync

    @classmethod
    def of(cls, target: RemoteTarget, branch: str, *, dry_run: bool = False) -> SyncResult:
        return cls(None if target.one_off else target.name, target.url, branch, dry_run=dry_run)

    @property
    def quiet(self) -> bool:
        """Nothing moved in either direction: every side already held everything."""
        return not (self.committed_local or self.incoming or self.outgoing or self.finished_merge)

    def note_resync(self, resynced: ResyncResult) -> None:
        for target, found in ((self.added, resynced.added), (self.changed, resynced.changed)):
            target.extend(p for p in found if p not in target)
        self.removed.extend(p for p in resynced.removed if p not in self.removed)

    def note_brought_in(self, paths: Iterable[str]) -> None:
        """Note the conflict sidecars among ``paths`` (new here) that this sync did not make."""
        made = {note.sidecar for note in (*self.conflicts, *self.brought_in)}
        for path in sorted(paths):
            name = parse_sidecar(path) if classify(path) == "sidecar" else None
            if name is not None and path not in made:
                self.brought_in.append(ConflictNote(name.original, path, "this sync brought it in"))

    def note_resolutions(self, resolutions: list[Resolution]) -> None:
        for resolution in resolutions:
            if resolution.outcome == "conflict" and resolution.sidecar is not None:
                self.conflicts.append(ConflictNote(resolution.path, resolution.sidecar, resolution.reason))
            elif resolution.outcome in ("purged", "kept-after-purge"):
                note = PurgeNote(
                    resolution.path,
                    resolution.side or "remote",
                    resolution.deleted_at,
                    resolution.edited_at,
                    resolution.reason,
                )
                (self.purged if resolution.outcome == "purged" else self.kept_after_purge).append(note)
            elif resolution.outcome == "merged" and classify(resolution.path) == "record":
                self.merged.append(resolution.path)

    def summary_json(self) -> dict[str, Any]:
        """The short form kept as the last sync in the sync state."""
        return {
            "remote": self.remote,
            "branch": self.branch,
            "integration": self.integration,
            "incoming": self.incoming,
            "outgoing": self.outgoing,
            "conflicts": len(self.conflicts),
        }

    def to_json(self) -> dict[str, Any]:
        return {
            "remote": self.remote,
            "url": self.url,
            "branch": self.branch,
            "dryRun": self.dry_run,
            "committedLocal": self.committed_local,
            "integration": self.integration,
            "incoming": self.incoming,
            "outgoing": self.outgoing,
            "pushed": self.pushed,
            "remoteAdded": self.remote_added,
            "finishedMerge": self.finished_merge,
            "records": {"added": self.added, "changed": self.changed, "removed": self.removed, "merged": self.merged},
            "conflicts": [c.to_json() for c in self.conflicts],
            "purged": [p.to_json() for p in self.purged],
            "keptAfterPurge": [p.to_json() for p in self.kept_after_purge],
            "conflictsEndedByPurge": [c.to_json() for c in self.ended_by_purge],
            "config": self.config.to_json() if self.config is not None else None,
            "conflictsBroughtIn": [c.to_json() for c in self.brought_in],
            "leftOut": [{"path": item.path, "reason": item.reason} for item in self.left_out],
        }

    def lines(self) -> list[str]:
        """The human report, one line per fact."""
        would = "would " if self.dry_run else ""
        where = f"{self.remote} ({self.url})" if self.remote and not self.remote_added else self.url
        head = f"sync with {where}, branch {self.branch}"
        out = [f"{head}: {self._what(would)}"]
        if self.remote_added:
            out.append(f"added {self.url} as the vault's remote {self.remote_added}")
        if self.added or self.changed or self.removed:
            coming = "records that would come in" if self.dry_run else "records that came in"
            out.append(f"{coming}: {len(self.added)} new, {len(self.changed)} changed, {len(self.removed)} removed")
        if self.merged:
            both = f"{counted(len(self.merged), 'record')} changed on both sides"
            out.append(f"{both} {'would merge' if self.dry_run else 'merged'} field by field")
        for conflict in self.conflicts:
            stays, kept = ("would stay", "would be kept") if self.dry_run else ("stays", "is kept")
            out.append(
                f"conflict: {conflict.path} ({conflict.reason}); the version here {stays} in place,"
                f" the incoming one {kept} in {conflict.sidecar}"
                + (f"; end it: {conflict.resolve}" if conflict.resolve else "")
            )
        for conflict in self.brought_in:
            comes = "would come in" if self.dry_run else "came in"
            out.append(
                f"conflict {comes}: {conflict.path} and its sidecar {conflict.sidecar}, made on another machine"
                + (f"; end it: {conflict.resolve}" if conflict.resolve else "")
            )
        for item in self.left_out:
            out.append(f"left out of the commit: {item.path} ({item.reason})")
        for note in self.purged:
            out.append(f"purged: {note.path} ({note.reason})")
        for note in self.kept_after_purge:
            out.append(f"kept after purge: {note.path} ({note.reason})")
        removed = "would be removed" if self.dry_run else "removed"
        for ended in self.ended_by_purge:
            out.append(f"conflict ended by the purge of {ended.path}: its sidecar {ended.sidecar} {removed}")
        if self.conflicts and self.dry_run:
            out.append(f"a sync would write {counted(len(self.conflicts), 'conflict')} (nothing was written)")
        elif self.conflicts or self.brought_in:
            out.append(
                "see them with `memosite conflicts`; end each with `memosite resolve ID --take mine|theirs`"
                " (or edit the record, then `memosite resolve ID`)"
            )
        out.extend(self.config.lines() if self.config is not None else [])
        return out

    def _what(self, would: str) -> str:
        steps = []
        if self.finished_merge:
            steps.append(f"{would}finish the unfinished merge")
        if self.committed_local:
            steps.append(f"{would}commit local changes")
        brought = counted(self.incoming, "commit")
        steps.append(
            {
                "up-to-date": "already up to date",
                "ahead": "nothing new on the remote",
                "fast-forward": f"{would}fast-forward by {brought}",
                "merge": f"{would}merge {brought} from the remote",
                "join": f"{would}join the remote's history ({brought})",
                "first-push": "the remote is empty",
            }[self.integration]
        )
        if self.outgoing:
            verb = "would push" if self.dry_run else "pushed"
            pushed = f"{verb} {counted(self.outgoing, 'commit')}"
            if self.dry_run and self.integration == "merge":  # counted with the merge commit it would make
                pushed += f" (your {self.outgoing - 1} and the merge)" if self.outgoing > 1 else " (the merge)"
            steps.append(pushed)
        return "; ".join(steps)
