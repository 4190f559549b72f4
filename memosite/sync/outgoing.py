"""What is about to leave this machine, checked before ``memosite sync`` commits or pushes it.

Secrets never leave: before sync commits the pending changes it scans them (the names of new
files too), and before it pushes it scans what the commits to push bring in
(:meth:`memosite.sync.repo.Repo.introduced`: every version of every file changed, a merge's own
result included, and the name of every file added). Only the lines a version adds to
what its parents held are scanned — a session log that grew by three events costs three lines, and
text the remote already has is not its to refuse — with memosite's scanner
(:func:`memosite.secrets.scan_text`, the one every write path uses). A finding refuses the sync,
naming the file, the line and the rule; nothing is committed or pushed.

Compiled views are not scanned as they leave (they are rebuilt from records, each scanned when it
changes; what a view shows of a record another machine wrote is on the remote already); a hand
edit of a view is scanned before sync commits it.

The commits to push are also held to the allowlist (:mod:`memosite.sync.incoming`): a commit
another machine would refuse is refused here first, before it can block the team.
"""

from __future__ import annotations

import stat
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from memosite.errors import SafetyViolation
from memosite.secrets import SecretFinding, scan_text
from memosite.sharedtree import is_shared
from memosite.sync.incoming import check_commits
from memosite.sync.paths import classify
from memosite.sync.repo import Repo

_ZERO = frozenset("0")


@dataclass(frozen=True)
class Leak:
    """A suspected secret in a file about to leave: where (``commit`` None: not committed yet;
    ``in_name``: in the file's path, which travels as surely as its content)."""

    path: str
    finding: SecretFinding
    commit: str | None
    in_name: bool = False

    def line(self) -> str:
        if self.in_name:
            where = masked_path(self.path)
        else:
            where = f"{self.path}, line {self.finding.line}" if self.finding.line else self.path
        when = (
            f" (in commit {self.commit[:7]}, not pushed yet)" if self.commit else " (changed here, not committed yet)"
        )
        view = " (a compiled view: the secret is in a record it shows)" if classify(self.path) == "view" else ""
        what = "its name holds" if self.in_name else "holds"
        return f"{where}{when} {what} what looks like a secret: {self.finding.kind}{view}"


def masked_path(path: str) -> str:
    """``path`` with each part that holds a suspected secret shown as the scanner's masked preview,
    so a refusal never prints the secret it refuses."""
    parts = []
    for part in path.split("/"):
        found = scan_text(part)
        parts.append(f"{found[0].preview}" if found else part)
    return "/".join(parts)


def name_leaks(path: str, commit: str | None) -> list[Leak]:
    """Suspected secrets in the path of a file about to leave (a session id, a slug)."""
    return [Leak(path, finding, commit, in_name=True) for finding in scan_text(path, where=path)]


def added_hunks(new: bytes, old: Iterable[bytes]) -> list[tuple[int, str]]:
    """The runs of consecutive lines of ``new`` that none of the ``old`` versions holds, each with
    the number of its first line (1-based)."""
    seen: set[bytes] = set()
    for version in old:
        seen.update(version.splitlines())
    hunks: list[tuple[int, str]] = []
    start, run = 0, list[bytes]()
    for number, line in enumerate(new.splitlines(), start=1):
        if line in seen:
            if run:
                hunks.append((start, b"\n".join(run).decode("utf-8", "replace")))
                run = []
            continue
        if not run:
            start = number
        run.append(line)
    if run:
        hunks.append((start, b"\n".join(run).decode("utf-8", "replace")))
    return hunks


def scan_added(path: str, new: bytes, old: Iterable[bytes], commit: str | None) -> list[Leak]:
    """Suspected secrets in what ``new`` adds to ``old`` (see :func:`added_hunks`)."""
    leaks = []
    for start, text in added_hunks(new, old):
        for finding in scan_text(text, where=path):
            moved = SecretFinding(finding.kind, finding.where, finding.line + start - 1, finding.preview)
            leaks.append(Leak(path, moved, commit))
    return leaks


def _refuse(found: Sequence[Leak], remedy: str) -> None:
    if not found:
        return
    # A secret in a compiled view came from a record: the record is what to name first.
    leaks = sorted(found, key=lambda leak: classify(leak.path) == "view")
    more = f" (and {len(leaks) - 1} more)" if len(leaks) > 1 else ""
    raise SafetyViolation(
        f"refusing to sync: {leaks[0].line()}{more}; nothing was committed or pushed. {remedy}",
        details={"findings": [{**leak.finding.to_dict(), "path": leak.path, "commit": leak.commit} for leak in leaks]},
    )


def check_pending(repo: Repo, paths: Sequence[str]) -> None:
    """Refuse (SAFETY_VIOLATION) when a file changed here and about to be committed holds a
    secret: its lines that HEAD does not hold are scanned."""
    shared = [path for path in paths if is_shared(path)]
    if not shared:
        return
    head = repo.head()
    committed = repo.tree_blobs(head, shared) if head else {}
    before = repo.blobs(committed.values())
    leaks: list[Leak] = []
    for path in shared:
        target = repo.root / path
        try:
            # Only a regular file is committed (a symlink is left out): never follow one to read it.
            if not stat.S_ISREG(target.lstat().st_mode):
                continue
            data = target.read_bytes()
        except (FileNotFoundError, NotADirectoryError):
            continue
        old = [before[committed[path]]] if path in committed and committed[path] in before else []
        if path not in committed:
            leaks.extend(name_leaks(path, None))
        leaks.extend(scan_added(path, data, old, None))
    _refuse(leaks, "Remove it from the file (memosite never syncs a secret), then run memosite sync again.")


def check_outgoing(repo: Repo, head: str, theirs: str | None, *, target: str) -> None:
    """Refuse what the commits from ``theirs`` to ``head`` (all of ``head`` for a first push) would
    take to ``target``: what another machine's sync would refuse (REFUSED_CONTENT), or a secret
    (SAFETY_VIOLATION)."""
    exclude = [theirs] if theirs else []
    remedy = (
        "Remove it, then take it out of the commits not pushed yet: run "
        f"git -C {_quoted(repo.root)} reset --soft {theirs[:12] if theirs else '<the first commit>'}"
        " and memosite sync again (the files stay as they are and are committed anew)."
    )
    check_commits(repo, [head], exclude, source=f"to push to {target}", outcome=f"nothing was pushed. {remedy}")
    # Compiled views are left out: they are rebuilt from the records, every record version that leaves
    # is scanned, and what a view shows of another machine's record is already on the remote.
    entries = [
        e
        for e in repo.introduced([head], exclude)
        if not e.removed and is_shared(e.path, e.mode) and classify(e.path) != "view"
    ]
    wanted = {e.blob for e in entries} | {b for e in entries for b in e.parent_blobs if set(b) != _ZERO}
    contents = repo.blobs(wanted)
    leaks: list[Leak] = []
    for entry in entries:
        if entry.added:
            leaks.extend(name_leaks(entry.path, entry.commit))
        new = contents.get(entry.blob)
        if new is None:
            continue
        old = [contents[b] for b in entry.parent_blobs if b in contents]
        leaks.extend(scan_added(entry.path, new, old, entry.commit))
    _refuse(leaks, remedy)


def _quoted(path: Path) -> str:
    text = str(path)
    return f"'{text}'" if any(c in text for c in " '\"$`\\") else text
