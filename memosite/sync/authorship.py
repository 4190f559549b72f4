"""Who wrote each version of a conflict, told truthfully on every machine.

A sidecar's two versions are named by where they are (the one *in place* at ``<slug>.md``, the one
in the *sidecar* beside it), never by "local"/"remote": the machine that made the conflict keeps
its own version in place, and every machine that receives the conflict later gets the same files,
so on the machine whose edit went into the sidecar "local" would name the other machine's work.

Everything here is read from the vault's git history, which every machine shares:

* the commit where the sidecar first appeared is where the conflict was made, and the record's
  version in that commit is the version that was in place then (``resolve`` without ``--take``
  compares the record with it, to tell a hand edit from no edit at all);
* each version's writer is the commit that first gave the record that content, with its author —
  for the version in place, its content *now* (a record may have been written again since the
  conflict, and several conflicts may stand beside it); a file in place that differs from HEAD is
  this machine's uncommitted work;
* whether that commit was made *on this machine* comes from this clone's own HEAD reflog (the
  commits it made, not those it fetched): that is what makes "this machine's version" true where it
  is said, and ``--take mine|theirs`` choose the same work on every machine. A commit older than
  what the reflog still remembers (git expires it, by default after 90 days) is of unknown origin:
  it is never claimed for this machine, nor for another.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from memosite.sync.merging import deletions_in
from memosite.sync.paths import blob_id
from memosite.sync.repo import CommitInfo, MadeHere, Repo
from memosite.vault import Vault

Place = Literal["in-place", "sidecar"]
PLACES: tuple[Place, Place] = ("in-place", "sidecar")


@dataclass(frozen=True)
class Writer:
    """The commit that wrote a version, and whether this machine made it (None: it cannot tell).
    ``commit`` None: the version is not committed yet, written here."""

    commit: CommitInfo | None
    here: bool | None


@dataclass(frozen=True)
class Removal:
    """Why a record has no version in place any more: who removed it, where, and whether a purge
    (a tombstone newer than the conflict) did."""

    purged: bool
    here: bool | None  # True: on this machine; False: on another; None: cannot tell
    committed: bool
    commit: CommitInfo | None = None

    def label(self) -> str:
        what = "purged" if self.purged else "deleted"
        if self.commit is None:
            return f"{what} on this machine, not committed yet" if self.here and not self.committed else what
        by = f"by {self.commit.author} in {self.commit.short}"
        if self.here is None:
            return f"{what} {by}"
        return f"{what} on {'this machine' if self.here else 'another machine'} ({by})"

    def to_json(self) -> dict[str, Any]:
        return {
            "purged": self.purged,
            "here": self.here,
            "committed": self.committed,
            "by": self.commit.author if self.commit else None,
            "commit": self.commit.short if self.commit else None,
            "at": self.commit.authored_at if self.commit else None,
        }


@dataclass(frozen=True)
class Origin:
    """What history says about one conflict: where it was made, the version in place then, each
    version's writer, and why the record is gone (when it is)."""

    made_in: CommitInfo | None  # None: the sidecar is not committed yet (or was written by hand)
    kept_blob: str | None  # the version in place when the sidecar was written
    in_place: Writer | None  # the writer of the version in place now
    sidecar: Writer | None
    removal: Removal | None

    @property
    def mine(self) -> Place | None:
        """Which version this machine wrote, when exactly one of them was written here."""
        writers = zip(PLACES, (self.in_place, self.sidecar), strict=True)
        here = [place for place, writer in writers if writer is not None and writer.here]
        return here[0] if len(here) == 1 else None

    @property
    def both_mine(self) -> bool:
        """Both versions were written on this machine: ``mine`` names neither one."""
        return all(writer is not None and writer.here for writer in (self.in_place, self.sidecar))


class Authorship:
    """Answers for the conflicts of one vault (the reflog and tombstones are read once)."""

    def __init__(self, vault: Vault) -> None:
        self.vault = vault
        self.repo = Repo(vault.root)
        self.has_history = (vault.root / ".git").exists() and self.repo.head() is not None
        self._here = self.repo.made_here() if self.has_history else MadeHere(frozenset(), None)
        self._deletions: dict[str, datetime] | None = None
        self._writers: dict[tuple[str, str], Writer | None] = {}

    def writer(self, blob: str | None, path: str) -> Writer | None:
        if blob is None or not self.has_history:
            return None
        if (blob, path) not in self._writers:
            commit = self.repo.first_writer(blob, path)
            self._writers[blob, path] = Writer(commit, self._here.made(commit)) if commit is not None else None
        return self._writers[blob, path]

    def in_place_writer(self, path: str, current: bytes | None) -> Writer | None:
        """Who wrote ``path`` as it is now (``current``): this machine, uncommitted, when the file
        differs from HEAD; else the first commit that gave it this content."""
        if current is None or not self.has_history:
            return None
        committed = self.repo.blob_at("HEAD", path)
        if committed != blob_id(current):
            return Writer(None, True)
        return self.writer(committed, path)

    def newer(self, one: Writer, other: Writer) -> bool:
        """Whether ``one`` wrote after ``other`` (by ancestry, else by commit time; uncommitted
        work is the newest)."""
        if one.commit is None or other.commit is None:
            return one.commit is None and other.commit is not None
        if one.commit.sha == other.commit.sha:
            return False
        if self.repo.is_ancestor(other.commit.sha, one.commit.sha):
            return True
        if self.repo.is_ancestor(one.commit.sha, other.commit.sha):
            return False
        return one.commit.seconds > other.commit.seconds

    def origin(self, path: str, sidecar: str, current: bytes | None, sidecar_bytes: bytes) -> Origin:
        """The :class:`Origin` of the conflict between ``path`` (its bytes now: ``current``) and
        its sidecar ``sidecar``."""
        if not self.has_history:
            return Origin(None, None, None, None, self._removal(path, sidecar, None) if current is None else None)
        made_in = self.repo.first_addition(sidecar)
        # Not committed yet (a merge driver's sidecar before its hook ran): what HEAD holds stands in.
        kept_blob = self.repo.blob_at(made_in.sha if made_in else "HEAD", path)
        removal = self._removal(path, sidecar, made_in) if current is None else None
        return Origin(
            made_in,
            kept_blob,
            self.in_place_writer(path, current),
            self.writer(blob_id(sidecar_bytes), path),
            removal,
        )

    def kept_bytes(self, origin: Origin) -> bytes | None:
        return self.repo.blobs([origin.kept_blob]).get(origin.kept_blob) if origin.kept_blob else None

    def tombstoned(self, path: str) -> bool:
        return path in self._latest_deletions()

    def removed_beside(self, path: str, sidecar: str) -> bool:
        """Whether ``path`` was removed while ``sidecar`` stood beside it: removed from the work
        tree only (the sidecar is there now), or by a commit whose tree holds the sidecar."""
        if not self.has_history or self.repo.blob_at("HEAD", path) is not None:
            return True
        removed = self.repo.last_removal(path)
        return removed is not None and self.repo.blob_at(removed.sha, sidecar) is not None

    def purged_after(self, path: str, seconds: float) -> bool:
        """Whether a tombstone of ``path`` is newer than ``seconds`` (a purge after the conflict)."""
        deleted = self._latest_deletions().get(path)
        return deleted is not None and deleted.timestamp() >= seconds

    def _latest_deletions(self) -> dict[str, datetime]:
        if self._deletions is None:
            try:
                text = self.vault.tombstones_path.read_text(encoding="utf-8")
            except (FileNotFoundError, UnicodeDecodeError):
                text = ""
            # Bounded by the commits that brought each tombstone in: none claims the future.
            self._deletions = deletions_in(self.repo, text, ("HEAD",) if self.has_history else ())
        return self._deletions

    def _removal(self, path: str, sidecar: str, made_in: CommitInfo | None) -> Removal:
        since = made_in.seconds if made_in is not None else 0
        purged = self.tombstoned(path) and (self.removed_beside(path, sidecar) or self.purged_after(path, since))
        if not self.has_history:
            return Removal(purged, None, committed=False)
        if self.repo.blob_at("HEAD", path) is not None:
            return Removal(purged, True, committed=False)  # gone from the work tree only: removed here
        removed = self.repo.last_removal(path)
        if removed is None:
            return Removal(purged, None, committed=True)
        return Removal(purged, self._here.made(removed), committed=True, commit=removed)
