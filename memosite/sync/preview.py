"""``memosite sync --dry-run``: what a sync would do, found without changing anything.

The remote is fetched into a throw-away repository that borrows the vault's objects (git's
alternates), so the vault's refs and object store stay as they are; pending local changes are
turned into a would-be commit in that same scratch store (a temporary git index), and the merge is
predicted by the rules the real one uses (:func:`memosite.sync.merging.preview_merge`). No file of
the vault, its index or its repository is written. What the remote's commits bring is checked as a
sync checks it (:mod:`memosite.sync.incoming`): a dry run refuses what a sync would refuse.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from memosite.gitcommand import first_line, remote_location
from memosite.sync.errors import SyncError, UnrelatedHistory
from memosite.sync.incoming import check_commits
from memosite.sync.merging import preview_merge
from memosite.sync.paths import classify
from memosite.sync.repo import Change, RemoteTarget, Repo
from memosite.sync.result import SyncResult
from memosite.sync.run import check_enabled, choose_branch, refuse_malformed
from memosite.vault import Vault
from memosite.vaultgit import run_git

_SCRATCH_IDENTITY = {
    "GIT_AUTHOR_NAME": "memosite dry run",
    "GIT_AUTHOR_EMAIL": "dry-run@memosite.invalid",
    "GIT_COMMITTER_NAME": "memosite dry run",
    "GIT_COMMITTER_EMAIL": "dry-run@memosite.invalid",
}


def preview_sync(vault: Vault, *, remote: str | None = None) -> SyncResult:
    """The :class:`SyncResult` a sync would produce now (``dry_run`` set, nothing pushed)."""
    check_enabled(vault)
    repo = Repo(vault.root)
    has_repo = (vault.root / ".git").exists()
    target = repo.resolve_remote(remote or vault.config.git_remote) if has_repo else None
    if target is None:
        wanted = remote or vault.config.git_remote
        target = RemoteTarget("origin", remote_location(wanted), one_off=True) if wanted else repo.resolve_remote(None)
    with tempfile.TemporaryDirectory(prefix="memosite-dry-run-") as scratch:
        store = Path(scratch) / "remote.git"
        _scratch_store(store, repo if has_repo else None)
        heads = _fetch_into(vault.root, store, target)
        branch = choose_branch(vault.config.git_branch, repo.branch() if has_repo else None, heads)
        result = SyncResult.of(target, branch, dry_run=True)
        quarantine = {"GIT_OBJECT_DIRECTORY": str(store / "objects")}
        if has_repo:
            quarantine["GIT_ALTERNATE_OBJECT_DIRECTORIES"] = str(repo.git_dir / "objects")
        # Without a repository yet, the scratch store alone holds what there is to look at.
        view = Repo(vault.root, env=quarantine) if has_repo else Repo(store)
        ours = _would_be_head(vault, view, Path(scratch), result) if has_repo else None
        if not has_repo:
            result.committed_local = True
        theirs = heads.get(branch)
        if theirs is not None:
            check_commits(
                view,
                [theirs],
                [ours] if ours else [],
                source=target.branch_label(branch),
                outcome="a sync would refuse it (nothing was written)",
            )
        _predict(view, ours, theirs, target, branch, result)
        result.note_brought_in(c.path for c in _incoming_changes(view, ours, theirs) if c.status == "A")
    return result


def _incoming_changes(view: Repo, ours: str | None, theirs: str | None) -> list[Change]:
    """What ``theirs`` changed since the last commit both sides share (all of it for a join)."""
    if theirs is None or ours == theirs:
        return []
    base = view.merge_base(ours, theirs) if ours else None
    return view.diff(base, theirs)


def _scratch_store(store: Path, repo: Repo | None) -> None:
    made = run_git(store.parent, "init", "-q", "--bare", args=[str(store)])
    if made.returncode != 0:
        raise SyncError(f"dry run: cannot make a scratch repository: {first_line(made.stderr)}")
    if repo is not None:
        (store / "objects" / "info").mkdir(parents=True, exist_ok=True)
        (store / "objects" / "info" / "alternates").write_text(str(repo.git_dir / "objects") + "\n", encoding="utf-8")


def _fetch_into(root: Path, store: Path, target: RemoteTarget) -> dict[str, str]:
    """Fetch every branch of the remote into the scratch store; ``branch -> commit``."""
    env = {"GIT_DIR": str(store), "GIT_OPTIONAL_LOCKS": "0"}
    # Run from the vault so a relative remote path means what it means to the vault's own git.
    fetched = run_git(root, "fetch", "-q", "--no-tags", args=[target.url, "+refs/heads/*:refs/heads/*"], env=env)
    if fetched.returncode != 0:
        refuse_malformed(fetched.stderr, target.label)
        raise SyncError(f"cannot fetch from {target.label}: {first_line(fetched.stderr)}")
    listed = run_git(store, "for-each-ref", "--format=%(objectname) %(refname:short)", args=["refs/heads/"])
    return {name: sha for sha, _, name in (line.partition(" ") for line in listed.stdout.splitlines()) if name}


def _would_be_head(vault: Vault, view: Repo, scratch: Path, result: SyncResult) -> str | None:
    """HEAD, or the commit that committing the pending local changes would make (built in the
    scratch store through a temporary git index)."""
    head = view.head()
    pending = view.dirty() or vault.internal_path("pending-commits").exists()
    if not pending:
        return head
    result.committed_local = True
    index = scratch / "index"
    real_index = view.git_dir / "index"
    if real_index.exists():
        shutil.copyfile(real_index, index)
    env = {"GIT_INDEX_FILE": str(index), **_SCRATCH_IDENTITY}
    view.git("add", "-A", env=env)
    tree = view.git("write-tree", env=env).strip()
    parents = ["-p", head] if head else []
    return view.git("commit-tree", *parents, "-m", "dry run", args=[tree], env=env).strip()


def _predict(
    view: Repo, ours: str | None, theirs: str | None, target: RemoteTarget, branch: str, result: SyncResult
) -> None:
    if theirs is None:
        result.integration = "first-push"
        result.outgoing = view.count(ours) if ours else 0
        return
    if ours is None:
        result.integration = "join"
        result.incoming = view.count(theirs)
        result.added = [c.path for c in view.diff(None, theirs) if classify(c.path) == "record"]
        return
    if ours == theirs:
        return
    if view.merge_base(ours, theirs) is None:
        raise UnrelatedHistory(
            f"{target.branch_label(branch)} shares no history with this vault: a sync would refuse to merge them"
        )
    preview = preview_merge(view, ours, theirs)
    result.incoming = view.count(f"{ours}..{theirs}")
    result.outgoing = view.count(f"{theirs}..{ours}")
    if result.incoming == 0:
        result.integration = "ahead"
        return
    result.integration = "fast-forward" if view.is_ancestor(ours, theirs) else "merge"
    if result.integration == "merge":
        result.outgoing += 1  # the merge commit goes out with them
    for change in preview.incoming:
        if classify(change.path) != "record":
            continue
        {"A": result.added, "M": result.changed, "D": result.removed}.get(change.status, result.changed).append(
            change.path
        )
    result.note_resolutions(preview.resolutions)
    for resolution in preview.resolutions:
        if classify(resolution.path) == "record" and resolution.outcome == "purged" and resolution.side == "remote":
            result.removed.append(resolution.path)
