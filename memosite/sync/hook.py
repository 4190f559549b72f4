"""The vault repository's ``post-merge`` hook: after a plain ``git pull`` or ``git merge``, bring the
index in step with the records the merge changed and, after a true merge, rewrite the views of
the touched kinds and commit them with any conflict sidecars the merge driver wrote.

Never fails git: the merge is done when the hook runs; a problem is one warning line. A pull that
brought what a shared vault may not hold (:mod:`memosite.sync.incoming`; the ``reference-transaction``
hook refuses it at the fetch, but ``git pull <url>`` fetches around it) is not indexed: the warning
names the commit and the path, and how to undo the pull.
"""

from __future__ import annotations

import sys
from pathlib import Path

from memosite import vaultgit
from memosite.errors import MemositeError
from memosite.refresh import ensure_index
from memosite.sync.errors import RefusedContent
from memosite.sync.incoming import check_commits
from memosite.sync.repo import Repo
from memosite.sync.resync import recompile, resync_changes
from memosite.vault import Vault

HOOK_LOCK_SECONDS = 30.0


def after_merge(vault: Vault) -> list[str]:
    """Catch up after a merge git made (``ORIG_HEAD`` → ``HEAD``); returns the projects recompiled."""
    repo = Repo(vault.root)
    old, new = repo.rev("ORIG_HEAD"), repo.head()
    if new is None or old == new:
        return []
    check_commits(
        repo,
        [new],
        [old] if old else [],
        source="what this git pull brought in",
        outcome=f"memosite indexed nothing of it; `git -C {vault.root} reset --merge ORIG_HEAD` undoes the pull",
    )
    with vault.lock(timeout=HOOK_LOCK_SECONDS):
        ensure_index(vault)
        resynced = resync_changes(vault, repo.diff(old, new))
        if len(repo.parents(new)) < 2:
            return []  # a fast-forward: the views came compiled with the commits
        done = recompile(vault, resynced.kinds)
        # git still holds MERGE_HEAD while this hook runs: commit with plumbing, which ignores it.
        vaultgit.commit_tree(vault.root, "compile views after git merge", actor=vault.actor)
    return done


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if not args or args[0] != "post-merge":
        sys.stderr.write("usage: python -m memosite.sync.hook post-merge [SQUASH]\n")
        return 0
    try:
        vault = Vault.open(Path.cwd(), create=False)
        try:
            if vault.config.git_enabled:
                after_merge(vault)
        finally:
            vault.close()
    except RefusedContent as exc:
        sys.stderr.write(f"memosite post-merge: {exc.message}\n")
    except MemositeError as exc:
        sys.stderr.write(f"memosite post-merge: {exc.message} (run `memosite sync` or `memosite reindex`)\n")
    except OSError as exc:
        sys.stderr.write(f"memosite post-merge: {exc} (run `memosite reindex`)\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
