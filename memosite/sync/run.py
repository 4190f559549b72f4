"""``memosite sync``: the one owner of the sync sequence.

1. fetch the remote (no lock) into ``refs/memosite/incoming/``, check every commit it brings
   against the allowlist (:mod:`memosite.sync.incoming`: REFUSED_CONTENT, and nothing moves) and
   only then move the remote-tracking branch;
2. under the vault lock: finish a merge a plain ``git pull`` left waiting (checked the same way),
   join the remote's history when the vault has none yet, scan the pending local changes for
   secrets and commit them (:mod:`memosite.sync.outgoing`; what a shared vault may not hold stays
   out), then fast-forward to the remote or merge it (record-aware, :mod:`memosite.sync.merging`),
   re-index exactly the paths that changed and, after a merge, rewrite the views of the touched
   kinds into the merge commit;
3. check what the commits to push bring (allowlist, secrets), then push (no lock: a write never
   waits for the network). A push the remote refuses because it moved on meanwhile — or because
   another push was updating the branch that moment — goes back to 1; any other refusal is
   reported and remembered for ``memosite status``.

Tombstones travel as part of this: ``tombstones.jsonl`` merges as a union, a purge on one side
removes the record through the merge, and a purge meeting an edit is settled by
:mod:`memosite.sync.tombstones`.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from pathlib import Path

from memosite import commitpolicy, gitcommand, gitsetup, vaultgit
from memosite.acceptance import settle_policy
from memosite.config import load_config
from memosite.refresh import ensure_index, rebuild_views, refresh_project, remember_directories
from memosite.settings import TEAM_DEFAULTS
from memosite.sharedtree import is_shared, refusal
from memosite.sync.conflicts import end_conflicts_of_purged, list_conflicts
from memosite.sync.errors import PushFailed, RefusedContent, SyncError, UnrelatedHistory
from memosite.sync.incoming import check_commits
from memosite.sync.merging import resolve_unmerged
from memosite.sync.outgoing import check_outgoing, check_pending
from memosite.sync.paths import blob_id, classify, sidecar_path
from memosite.sync.repo import INCOMING_REFS, MERGE_CONFIG, Change, RemoteTarget, Repo
from memosite.sync.resolution import merge_config, union_lines
from memosite.sync.result import ConflictNote, SyncResult, counted
from memosite.sync.resync import recompile, resync_changes
from memosite.sync.state import note_push, note_sync, read_state
from memosite.vault import Vault, atomic_write_bytes
from memosite.vaultgit import LeftOut

MAX_ATTEMPTS = 5
# What git says when a push lost a race: the remote moved on (rejected as not a fast-forward), or
# another push was updating the branch at that very moment ("cannot lock ref … but expected …").
RETRY_PUSH = ("[rejected]", "non-fast-forward", "fetch first", "cannot lock ref", "failed to update ref")


def check_enabled(vault: Vault) -> None:
    if not vault.config.git_enabled:
        raise SyncError(
            "vault git is off on this machine: memosite config set vaultGit.enabled true"
            " (and memosite config set vaultGit.remote <url or path>)"
        )


def remote_branch(repo: Repo, target: RemoteTarget, configured: str | None, *, fetched: bool = False) -> str:
    """The remote branch to sync with (see :func:`choose_branch`), among the branches sync accepted
    (or, with ``fetched``, those the last fetch found)."""
    if configured:
        return gitcommand.branch_name(configured, "vaultGit.branch")
    return choose_branch(None, repo.branch(), repo.remote_heads(target, fetched=fetched))


def choose_branch(configured: str | None, local: str | None, heads: dict[str, str]) -> str:
    """``vaultGit.branch``, else the vault's own branch name (``local``) when the remote ``heads``
    have it, else the remote's only (or ``main``/``master``) branch, else the vault's own."""
    if configured:
        return configured
    if local and local in heads:
        return local
    if len(heads) == 1:
        return next(iter(heads))
    for name in ("main", "master"):
        if name in heads:
            return name
    return local or "main"


def fetch(repo: Repo, target: RemoteTarget) -> None:
    """Fetch the remote's branches into :attr:`RemoteTarget.fetched` only (``--refmap=`` keeps git
    from moving the remote-tracking branches too): they move when what they bring passed."""
    refspec = f"+refs/heads/*:{target.fetched}/*"
    result = repo.run("fetch", "-q", "--no-tags", "--prune", "--refmap=", args=[target.location, refspec])
    if result.returncode != 0:
        refuse_malformed(result.stderr, target.label)
        raise SyncError(f"cannot fetch from {target.label}: {gitcommand.first_line(result.stderr)}")


_FSCK = re.compile(r"^(?:error|fatal): object ([0-9a-f]{7,64}): (\w+): (.*)$", re.MULTILINE)


def refuse_malformed(stderr: str, source: str) -> None:
    """REFUSED_CONTENT when git's own check of fetched objects (``fetch.fsckObjects``) refused one:
    a ``.gitmodules`` whose ``update`` runs a command, a tree naming ``..`` or ``.git``."""
    found = _FSCK.search(stderr)
    if found is not None:
        blob, check, what = found.groups()
        raise RefusedContent(
            f"refusing {source}: git's check of what it brings refused object {blob[:7]} ({check}: {what});"
            " nothing was merged or written here"
        )


def accept_fetched(vault: Vault, repo: Repo, target: RemoteTarget, branch: str) -> str | None:
    """Check every commit the fetched ``branch`` brings (:mod:`memosite.sync.incoming`: raises
    REFUSED_CONTENT, and nothing moves) and move the remote-tracking branch to it; returns that
    commit (None: the remote has no such branch). A clone syncing for the first time has its own
    history checked too: ``git clone`` took it unchecked."""
    fetched, tracking = f"{target.fetched}/{branch}", f"{target.refs}/{branch}"
    theirs = repo.rev(fetched)
    if theirs is None:
        if repo.rev(tracking) is not None:
            repo.git("update-ref", "-d", args=[tracking])
        return None
    head = repo.head()
    include, exclude = [theirs], [head] if head else []
    if head is not None and _unchecked_clone(vault, repo):
        include, exclude = [theirs, head], []
    check_commits(repo, include, exclude, source=target.branch_label(branch))
    repo.git("update-ref", "-m", "sync: checked", args=[tracking, theirs])
    return theirs


def _unchecked_clone(vault: Vault, repo: Repo) -> bool:
    """A vault made by ``git clone`` that memosite never synced (its history came in unchecked)."""
    return not read_state(vault).get("lastSync") and repo.cloned()


def sync_vault(vault: Vault, *, remote: str | None = None, allow_unrelated: bool = False) -> SyncResult:
    """Sync the vault with ``remote`` (default ``vaultGit.remote``, else ``origin``); see the
    module docstring. A remote whose history shares nothing with the vault's is refused unless
    ``allow_unrelated`` (then both vaults merge record by record, as if each had created its own
    records). Raises NO_REMOTE, UNRELATED_HISTORY, SYNC_FAILED or PUSH_FAILED.

    A URL that is no remote of the repository yet is synced with by URL; it becomes a remote
    (``origin`` when it is free) only when the sync succeeds and it is ``vaultGit.remote``, or the
    vault has no remote at all. Any other one-off ``remote`` leaves no remote and no ref behind,
    nor does a failed sync."""
    adopt_clone(vault)
    check_enabled(vault)
    gitsetup.ensure_repo(vault)
    repo = Repo(vault.root)
    target = repo.resolve_remote(remote or vault.config.git_remote)
    keep = target.one_off and (remote in (None, vault.config.git_remote) or not repo.remotes())
    try:
        result = _sync_with(vault, repo, target, allow_unrelated)
        if keep:
            target = repo.keep_remote(target)
            result.remote = result.remote_added = target.name
            _track(repo, target, result.branch)
        elif not target.one_off:
            _track(repo, target, result.branch)
    finally:
        # What a fetch brought is kept only where it passed (the remote-tracking branch).
        repo.forget_refs(INCOMING_REFS)
        if target.one_off:
            repo.forget_one_off()
    result.config = settle_policy(vault)  # a tightening of review applies now; a loosening waits
    note_sync(vault, {**result.summary_json(), "head": repo.head()})
    return result


def _sync_with(vault: Vault, repo: Repo, target: RemoteTarget, allow_unrelated: bool) -> SyncResult:
    fetch(repo, target)
    branch = remote_branch(repo, target, vault.config.git_branch, fetched=True)
    tracking = f"{target.refs}/{branch}"
    result = SyncResult.of(target, branch)
    for attempt in range(MAX_ATTEMPTS):
        if attempt:
            fetch(repo, target)
        accept_fetched(vault, repo, target, branch)
        with vault.lock():
            vaultgit.recover_index_lock(repo.root)
            ensure_index(vault)
            if attempt == 0:
                if repo.merge_in_progress():
                    _check_unfinished_merge(repo)
                    _complete_merge(vault, repo, result, "sync: finish the merge a git pull left unfinished")
                    result.finished_merge = True
                if repo.head() is None:
                    _join(vault, repo, branch, tracking, result)
                result.committed_local = _commit_local(vault, repo, result)
            _integrate(vault, repo, target, branch, tracking, result, allow_unrelated=allow_unrelated)
        # HEAD now holds the remote's commit (merged, fast-forwarded or joined) unless it is new.
        head, theirs = repo.head(), repo.rev(tracking)
        if head is None or head == theirs:
            break
        check_outgoing(repo, head, theirs, target=target.label)
        outgoing = repo.count(f"{theirs}..{head}" if theirs else head)
        if _push(vault, repo, target, branch, head):
            result.outgoing += outgoing
            result.pushed = True
            break
    else:
        raise SyncError(f"{target.label} kept changing while syncing ({MAX_ATTEMPTS} tries): run memosite sync again")
    describe_conflicts(vault, result)
    return result


def _check_unfinished_merge(repo: Repo) -> None:
    """Refuse to finish a merge a plain ``git pull`` left when what it brings may not be shared."""
    hint = f"nothing was committed; `git -C {repo.root} merge --abort` undoes that pull"
    check_commits(repo, ["MERGE_HEAD"], ["HEAD"], source="the merge a git pull left unfinished", outcome=hint)


def _catch_up_hand_edits(vault: Vault, repo: Repo, dirty: list[str]) -> bool:
    """Re-index the records changed here outside memosite since the last sync — a hand edit is
    committed by whichever write comes next, and nothing re-read it — and rewrite their views;
    True when it did. Only paths changed since then are looked at, and only those whose file
    differs from its row are parsed: the cost follows the local changes."""
    last = read_state(vault).get("lastSync")
    since = repo.rev(str(last.get("head"))) if isinstance(last, dict) and last.get("head") else None
    paths = {p for p in dirty if classify(p) == "record"}
    if since is not None:
        paths |= {c.path for c in repo.diff(since, "HEAD") if classify(c.path) == "record"}
    index = vault.index()
    stale = []
    for relative in sorted(paths):
        entry = index.by_path(relative)
        try:
            stat = (vault.root / relative).stat()
        except FileNotFoundError:
            if entry is not None:
                stale.append(Change("D", relative))
            continue
        if entry is None or (entry.mtime_ns, entry.size) != (stat.st_mtime_ns, stat.st_size):
            stale.append(Change("M", relative))
    if stale:
        recompile(vault, resync_changes(vault, stale).kinds)
    return bool(stale)


def adopt_clone(vault: Vault) -> bool:
    """A ``git clone`` that checked nothing out (the remote's HEAD names a branch it lacks, as
    ``git init --bare`` makes it) takes the ``config.json`` of the branch it will sync with, in
    place of the default one memosite wrote on opening it: vault git is on, and the join brings
    the rest. True when it did; a vault with commits or a config of its own is left alone."""
    if not (vault.root / ".git").exists():
        return False
    repo = Repo(vault.root)
    if repo.head() is not None:
        return False
    config = vault.root / "config.json"
    try:
        untouched = json.loads(config.read_text(encoding="utf-8")) == TEAM_DEFAULTS
    except FileNotFoundError:
        untouched = True
    except (OSError, ValueError):
        untouched = False
    remotes = repo.remotes()
    if not untouched or "origin" not in remotes:
        return False
    branch = remote_branch(repo, RemoteTarget("origin", remotes["origin"]), vault.config.git_branch)
    theirs = repo.rev(f"refs/remotes/origin/{branch}")
    remote_config = repo.show(theirs, "config.json") if theirs else None
    if remote_config is None:
        return False
    atomic_write_bytes(config, remote_config)
    vault.config = load_config(vault.root)
    return True


def _end_purged(vault: Vault, result: SyncResult, refs: Sequence[str] = ("HEAD",)) -> list[str]:
    """Remove the sidecars of records purged after their conflict (noted in ``result``); returns
    the sidecars removed."""
    ended = end_conflicts_of_purged(vault, refs)
    for conflict in ended:
        result.ended_by_purge.append(ConflictNote(conflict.path, conflict.sidecar, "purged after the conflict"))
    return [conflict.sidecar for conflict in ended]


def _commit_local(vault: Vault, repo: Repo, result: SyncResult) -> bool:
    """Commit what is pending here: queued commits and files changed outside memosite (their
    index rows and views brought in step first, so the commit is whole), and the end of the
    conflicts of records purged here. Nothing is committed when a pending file holds a secret
    (SAFETY_VIOLATION); a file a shared vault may not hold stays out of the commit (and is
    reported)."""
    pending = repo.dirty(refresh=True)
    if _catch_up_hand_edits(vault, repo, pending):
        pending = repo.dirty(refresh=True)
    check_pending(repo, pending)  # the views rewritten from the edited records included
    committed = commitpolicy.flush_pending(vault)
    _end_purged(vault, result)
    pending = repo.dirty(refresh=True)
    shared = [path for path in pending if is_shared(path)]
    if pending:
        listed = "\n".join(shared[:50]) + (f"\n… and {len(shared) - 50} more" if len(shared) > 50 else "")
        committed = vaultgit.commit_now(vault, f"sync: commit local changes\n\n{listed}") or committed
        result.left_out = [_left_out(repo.root, path) for path in repo.dirty()]
    return committed


def _left_out(root: Path, path: str) -> LeftOut:
    """Why a file changed here stays out of every commit (the allowlist's reason)."""
    target = root / path
    mode = "120000" if target.is_symlink() else "100755" if os.access(target, os.X_OK) else "100644"
    return LeftOut(path, refusal(path, mode) or "git left it out")


def _integrate(
    vault: Vault,
    repo: Repo,
    target: RemoteTarget,
    branch: str,
    tracking: str,
    result: SyncResult,
    *,
    allow_unrelated: bool,
) -> None:
    ours, theirs = repo.head(), repo.rev(tracking)
    if theirs is None:
        result.integration = "first-push"
        return
    if ours is None or ours == theirs:
        return
    base = repo.merge_base(ours, theirs)
    if base == theirs:  # the remote's commit is already here
        result.integration = "ahead" if result.integration == "up-to-date" else result.integration
        return
    incoming = repo.count(f"{ours}..{theirs}")
    if base == ours:
        changes = repo.diff(ours, theirs)
        repo.git("merge", "--ff-only", "-q", args=[theirs], config=MERGE_CONFIG)
        result.note_resync(resync_changes(vault, changes))
        result.note_brought_in(c.path for c in changes if c.status == "A")
        ended = _end_purged(vault, result)  # a purge that came in, made where the sidecar was not yet
        if ended:
            vaultgit.commit_now(vault, "sync: end the conflicts of purged records\n\n" + "\n".join(ended))
        result.integration = "fast-forward" if result.integration in ("up-to-date", "ahead") else result.integration
    else:
        unrelated = base is None
        if unrelated and not allow_unrelated:
            raise UnrelatedHistory(
                f"{target.branch_label(branch)} shares no history with this vault: refusing to merge two unrelated"
                " vaults (check vaultGit.remote; to merge them record by record, sync once with --allow-unrelated)"
            )
        identity = vaultgit.identity_options(repo.root)
        options = ["--allow-unrelated-histories"] if unrelated else []
        merged = repo.run(
            "merge",
            "--no-commit",
            "--no-ff",
            "-X",
            "no-renames",
            *options,
            args=[theirs],
            config=[*identity, *MERGE_CONFIG],
        )
        if not repo.merge_in_progress():
            raise SyncError(
                f"git merge of {target.branch_label(branch)} failed: {gitcommand.first_line(merged.stderr)}"
            )
        message = f"sync: merge {target.branch_label(branch)} ({counted(incoming, 'commit')})"
        _complete_merge(vault, repo, result, message)
        result.integration = "merge"
    result.incoming += incoming


def _complete_merge(vault: Vault, repo: Repo, result: SyncResult, message: str) -> None:
    """Settle the unmerged paths, re-index what the merge changed, rewrite those views and make
    the merge commit (views and conflict sidecars included)."""
    resolutions = resolve_unmerged(repo)
    result.note_resolutions(resolutions)
    changes = {change.path: change for change in repo.diff("HEAD", None, cached=True)}
    for resolution in resolutions:  # resolved paths whose file is as it was still get a look
        changes.setdefault(resolution.path, Change("D" if resolution.content is None else "M", resolution.path))
    resynced = resync_changes(vault, list(changes.values()))
    result.note_resync(resynced)
    result.note_brought_in(c.path for c in changes.values() if c.status == "A")
    recompile(vault, resynced.kinds)
    _end_purged(vault, result, ("HEAD", "MERGE_HEAD"))
    vaultgit.stage_shared(repo.root)
    lines = [message, ""]
    lines += [f"conflict: {c.path} -> {c.sidecar} ({c.reason})" for c in result.conflicts]
    lines += [f"purged: {p.path} ({p.reason})" for p in result.purged]
    lines += [f"kept after purge: {p.path} ({p.reason})" for p in result.kept_after_purge]
    lines += [f"conflict ended by purge: {c.path} (removed {c.sidecar})" for c in result.ended_by_purge]
    done = vaultgit.commit(repo.root, "\n".join(lines).strip(), actor=vault.actor, no_verify=True)
    if done.returncode != 0:
        raise SyncError(f"cannot commit the merge: {gitcommand.first_line(done.stderr or done.stdout)}")


def _join(vault: Vault, repo: Repo, branch: str, tracking: str, result: SyncResult) -> None:
    """A vault with no commits yet takes the remote's history as its own; a local file that differs
    from the remote's stays, a record's remote version goes beside it, a log keeps both sides' lines,
    config.json merges key by key (the team's settings fill in what this vault left at defaults)."""
    theirs = repo.rev(tracking)
    if theirs is None:
        return
    if repo.branch() != branch:
        repo.git("symbolic-ref", args=["HEAD", f"refs/heads/{branch}"])
    listing = repo.git("ls-tree", "-r", "-z", "--full-tree", args=[theirs]).split("\0")
    remote_ids: dict[str, str] = {}
    for entry in listing:
        meta, _, path = entry.partition("\t")
        parts = meta.split()
        if len(parts) == 3 and parts[1] == "blob":
            remote_ids[path] = parts[2]
    local_files = {path: (repo.root / path).read_bytes() for path in remote_ids if (repo.root / path).is_file()}
    # Projects with records only this vault holds, or holds differently: their views need rewriting.
    projects = {
        project
        for project in vault.projects()
        if any(vault.relative(path) not in remote_ids for path in vault.iter_record_files(project))
    }
    differing = {path: data for path, data in local_files.items() if blob_id(data) != remote_ids[path]}
    remote_versions = repo.blobs(remote_ids[path] for path in differing)
    repo.git("reset", "-q", args=[gitcommand.commit_id(theirs)], paths=[], config=MERGE_CONFIG)
    missing = [path for path in remote_ids if path not in local_files]
    if missing:
        repo.git("checkout-index", "-u", "-q", "-z", "--stdin", input="\0".join(missing), config=MERGE_CONFIG)
    for path, local in sorted(differing.items()):
        remote_version = remote_versions.get(remote_ids[path], b"")
        kind = classify(path)
        if kind == "record":
            atomic_write_bytes(repo.root / sidecar_path(path, remote_version), remote_version)
            projects.add(path.split("/")[1])
        elif kind == "jsonl":
            atomic_write_bytes(repo.root / path, union_lines(None, local, remote_version))
        elif kind == "config":  # the team's settings, where this vault left its own at their defaults
            merged = merge_config(None, local, remote_version)
            if merged is not None:
                atomic_write_bytes(repo.root / path, merged)
    result.integration = "join"
    result.incoming = repo.count(theirs)
    for project in vault.projects():
        refreshed = refresh_project(vault, project)
        result.added.extend(refreshed.added)
        result.changed.extend(refreshed.changed)
        result.removed.extend(refreshed.removed)
        if project in projects:
            rebuild_views(vault, project)
        remember_directories(vault, project)
    for path in sorted(differing):
        if classify(path) == "record":
            sidecar = sidecar_path(path, remote_versions.get(remote_ids[path], b""))
            result.conflicts.append(ConflictNote(path, sidecar, "this vault already held a different version"))
    result.note_brought_in(remote_ids)


def describe_conflicts(vault: Vault, result: SyncResult) -> None:
    """Give every conflict the sync made or brought in the command that ends it (its record's id,
    or the sidecar's id, and the ``--take`` choices this machine has)."""
    notes = [*result.conflicts, *result.brought_in]
    if not notes:
        return
    wanted = {note.sidecar for note in notes}
    known = {c.sidecar: c for c in list_conflicts(vault, details=True, vault_files=True) if c.sidecar in wanted}
    result.conflicts = [note.with_resolve(known.get(note.sidecar)) for note in result.conflicts]
    result.brought_in = [note.with_resolve(known.get(note.sidecar)) for note in result.brought_in]


def _push(vault: Vault, repo: Repo, target: RemoteTarget, branch: str, head: str) -> bool:
    """Push ``head``; False when the remote moved on meanwhile (fetch and merge again)."""
    pushed = repo.run("push", "--porcelain", args=[target.location, f"{head}:refs/heads/{branch}"])
    if pushed.returncode == 0:
        if target.one_off:  # git moves a named remote's tracking ref itself, not a URL's
            repo.git("update-ref", args=[f"{target.refs}/{branch}", head])
        note_push(vault, head, None)
        point_remote_head(repo, target, branch)
        return True
    output = pushed.stdout + pushed.stderr
    if any(sign in output for sign in RETRY_PUSH):
        return False
    message = f"push to {target.label} failed: {gitcommand.first_line(pushed.stderr or pushed.stdout)}"
    note_push(vault, head, message)
    raise PushFailed(f"{message}; the changes are committed here and go out with the next sync")


def point_remote_head(repo: Repo, target: RemoteTarget, branch: str) -> bool:
    """Point the HEAD of a bare repository on this machine's disk at ``branch`` when it names a
    branch the repository does not have (``git init --bare`` names ``master``; memosite pushes
    ``main``): then ``git clone`` of it checks the vault out. A HEAD that names a branch the
    remote has is never moved; a hosted remote sets its own on the first push. True when moved."""
    location = _local_repository(target.url, repo.root)
    if location is None:
        return False
    if vaultgit.run_git(location, "rev-parse", "--is-bare-repository").stdout.strip() != "true":
        return False
    if vaultgit.run_git(location, "rev-parse", "-q", "--verify", args=["HEAD^{commit}"]).returncode == 0:
        return False
    if vaultgit.run_git(location, "rev-parse", "-q", "--verify", args=[f"refs/heads/{branch}"]).returncode != 0:
        return False
    return vaultgit.run_git(location, "symbolic-ref", args=["HEAD", f"refs/heads/{branch}"]).returncode == 0


def _local_repository(url: str, root: Path) -> Path | None:
    """The directory a remote URL names on this machine's disk (a path or ``file://``), else None."""
    if url.startswith("file://"):
        url = url[len("file://") :]
    elif "://" in url or (":" in url.split("/", 1)[0] and not os.path.isabs(url) and len(url.split(":", 1)[0]) > 1):
        return None  # ssh://, https://, or scp-like host:path
    location = (root / url).resolve() if not os.path.isabs(url) else Path(url)
    return location if location.is_dir() else None


def _track(repo: Repo, target: RemoteTarget, branch: str) -> None:
    """Let a plain ``git pull``/``git push`` in the vault use the same remote branch."""
    local = repo.branch()
    if local and f'[branch "{local}"]' not in repo.config_text():
        repo.run("config", "--local", args=[f"branch.{local}.remote", target.name])
        repo.run("config", "--local", args=[f"branch.{local}.merge", f"refs/heads/{branch}"])
