"""The vault repository's ``reference-transaction`` hook: a plain ``git fetch``/``git pull`` there is
checked as ``memosite sync`` checks what it fetches.

git runs the hook with ``prepared`` before it moves any ref, the updates on stdin (``<old> <new>
<ref>``, one a line), and drops the whole update when the hook fails. For each remote-tracking
branch the fetch would move, the commits it brings that this vault's ``HEAD`` does not hold are
checked (:mod:`memosite.sync.incoming`); a refusal is one line on stderr per branch and exit 1, so
git fetches nothing into the vault's branches and ``git pull`` merges nothing. A fetch by URL (``git
pull <url>``) moves no remote-tracking branch and is not seen here: the ``post-merge`` hook then
names what came in and how to undo it.

``python -m memosite.sync.guard reference-transaction`` (the shell hook calls it only for updates
of ``refs/remotes/``, so other git commands never start Python).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TextIO

from memosite.errors import MemositeError
from memosite.sync.errors import RefusedContent
from memosite.sync.incoming import check_commits
from memosite.sync.repo import Repo

REMOTE_REFS = "refs/remotes/"


def check_updates(root: Path, updates: TextIO, errors: TextIO) -> int:
    """Check the ref updates of one transaction (see the module docstring); git's exit status."""
    repo = Repo(root)
    head = repo.head()
    refused = 0
    for line in updates:
        fields = line.split()
        if len(fields) != 3 or not fields[2].startswith(REMOTE_REFS) or set(fields[1]) == {"0"}:
            continue
        _, new, ref = fields
        try:
            check_commits(
                repo,
                [new],
                [head] if head else [],
                source=f"the fetch of {ref[len(REMOTE_REFS) :]}",
                outcome="git fetched nothing into this vault's branches (memosite's README, Team memory)",
            )
        except RefusedContent as exc:
            errors.write(f"memosite: {exc.message}\n")
            refused += 1
    return 1 if refused else 0


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args != ["reference-transaction"]:
        sys.stderr.write("usage: python -m memosite.sync.guard reference-transaction < updates\n")
        return 0
    try:
        return check_updates(Path.cwd(), sys.stdin, sys.stderr)
    except (MemositeError, OSError) as exc:  # a broken memosite must not break the person's git
        sys.stderr.write(f"memosite: could not check this fetch ({getattr(exc, 'message', exc)}); it goes ahead\n")
        return 0


if __name__ == "__main__":
    sys.exit(main())
