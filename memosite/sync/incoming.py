"""Checking what commits bring in, before any of it reaches the work tree.

Every commit of the range (not only the tip: a file added and removed again is still refused) is
looked at through what it brought in (:meth:`memosite.sync.repo.Repo.introduced`), and refused
when it

* adds or changes a path the allowlist refuses (:mod:`memosite.sharedtree`): a
  ``.gitattributes``, a ``.gitmodules``, ``.memosite/index.sqlite``, a symlink, a submodule, an
  executable, a path with a control character, a foreign ``.gitignore``, a ``config.json`` this
  machine could not load, any file outside what a shared vault holds; or
* adds a conflict sidecar (``<name>.conflict.<id>.<ext>``) that stands for no real conflict. A
  sidecar memosite writes holds the version of its file that the other side of a merge had, and is
  named by that version's git blob id; so a real one (a) has an id that begins its own blob id, and
  (b) holds a version its file really had: git's history, as seen from the commit that adds the
  sidecar, gave the file exactly that content. A forged one — text nobody wrote as that record,
  presented as "the other machine's version" — fails one or the other.

Removals pass: taking a file away never puts anything in the work tree. Used by ``memosite sync``
(and its dry run) on what it fetched, on a merge a plain ``git pull`` left unfinished and on a clone
at its first sync; by the ``reference-transaction`` hook (:mod:`memosite.sync.guard`) on a plain
``git fetch``/``git pull``; and by the ``post-merge`` hook on what a pull brought in.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import partial

from memosite.sharedtree import CONTENT_CHECKED, refusal
from memosite.sync.errors import RefusedContent
from memosite.sync.paths import classify, parse_sidecar
from memosite.sync.repo import Introduced, Repo


@dataclass(frozen=True)
class Refusal:
    """Why a commit may not come in: the commit, the path it brought and the reason."""

    commit: str
    path: str
    reason: str
    action: str  # "adds" or "changes"

    def line(self) -> str:
        return f"commit {self.commit[:7]} {self.action} {self.path!r}: {self.reason}"

    def to_json(self) -> dict[str, str]:
        return {"commit": self.commit, "path": self.path, "action": self.action, "reason": self.reason}


def refusals(repo: Repo, include: Sequence[str], exclude: Sequence[str] = ()) -> list[Refusal]:
    """Every refusal of the commits reachable from ``include`` and not from ``exclude``, oldest
    commit first (empty: they may all come in)."""
    entries = [entry for entry in repo.introduced(include, exclude) if not entry.removed]
    wanted = [entry.blob for entry in entries if entry.path in CONTENT_CHECKED]
    contents = repo.blobs(wanted) if wanted else {}
    found: list[Refusal] = []
    for entry in entries:
        action = "adds" if entry.added else "changes"
        why = refusal(entry.path, entry.mode, partial(_content, contents, entry.blob))
        if why is None and entry.added and classify(entry.path) == "sidecar":
            why = _forged_sidecar(repo, entry)
        if why is not None:
            found.append(Refusal(entry.commit, entry.path, why, action))
    return found


def _content(contents: Mapping[str, bytes], blob: str) -> bytes:
    return contents.get(blob, b"")


def _forged_sidecar(repo: Repo, entry: Introduced) -> str | None:
    """Why a sidecar this commit adds stands for no real conflict (None: it does)."""
    name = parse_sidecar(entry.path)
    if name is None:
        return None  # named like no sidecar memosite writes: the allowlist judged it as a file
    if not entry.blob.startswith(name.short_id):
        return (
            f"a forged conflict sidecar: its id {name.short_id} is not the start of its content's blob id"
            f" ({entry.blob[:8]}), as in every sidecar memosite writes"
        )
    if not entry.parents or not repo.held(name.original, entry.blob, entry.parents):
        return f"a forged conflict sidecar: {name.original} never held the version it claims to be"
    return None


def check_commits(
    repo: Repo,
    include: Sequence[str],
    exclude: Sequence[str] = (),
    *,
    source: str,
    outcome: str = "nothing was merged or written here",
) -> None:
    """Raise REFUSED_CONTENT naming the first refused commit and path of the range (see
    :func:`refusals`): ``refusing <source>: commit … adds …: <reason>; <outcome>``."""
    found = refusals(repo, include, exclude)
    if not found:
        return
    first = found[0]
    more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
    raise RefusedContent(
        f"refusing {source}: {first.line()}{more}; {outcome}",
        details={"refused": [refused.to_json() for refused in found]},
    )
