"""Vault git: commits of the vault, made as the actor who changed it, holding only what a shared
vault may.

:func:`commit_now` commits everything a shared vault may hold (:func:`stage_shared`, by
:mod:`memosite.sharedtree`); when it commits — at once per change, or queued — is the commit
policy's (:mod:`memosite.commitpolicy`), and setting the repository up is :mod:`memosite.gitsetup`'s
(``.gitignore`` block, merge drivers, attributes, hooks).

Commits carry who made them: ``vault.actor`` (set by the composition root) authors the commit when
it names someone (an MCP session: ``<client> via memosite``); otherwise git's own configured
identity does, and ``memosite`` only when git has none. Every git call goes through the guarded
runner (:mod:`memosite.gitcommand`). When vault git cannot commit, every write says so and
``memosite status`` names why (:func:`vault_git_problem`); a ``.git/index.lock`` a killed git left
is removed (:mod:`memosite.gitlock`).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from memosite import gitcommand
from memosite.errors import StorageError
from memosite.gitcommand import first_line, git_dir
from memosite.gitlock import inspect_index_lock, remove_stale_index_lock
from memosite.gitsetup import ensure_repo
from memosite.schema import format_iso, utc_now
from memosite.sharedtree import refusal
from memosite.vault import Vault, atomic_write_text, warn

if TYPE_CHECKING:
    from memosite.provenance import Actor

READ_ONLY = {"GIT_OPTIONAL_LOCKS": "0"}
FALLBACK_NAME = "memosite"
FALLBACK_EMAIL = "memosite@localhost"

_IDENTITY_MISSING = re.compile(
    r"Please tell me who you are|Author identity unknown|Committer identity unknown|"
    r"unable to auto-detect email address|empty ident name",
    re.IGNORECASE,
)


# --- running git -------------------------------------------------------------------------------


def git_env(
    actor: Actor | None = None, extra: Mapping[str, str] | None = None, *, inherit: bool = True
) -> dict[str, str]:
    """The environment git runs in: the caller's (``inherit``; else only what is added to it), plus
    the actor as author when it names one.

    Nothing is forced when there is no actor: the person's own ``user.name``/``user.email`` (or
    ``GIT_AUTHOR_*`` they set) author the commit."""
    env = dict(os.environ) if inherit else {}
    if actor is not None and actor.name:
        env["GIT_AUTHOR_NAME"] = actor.name
        env["GIT_AUTHOR_EMAIL"] = actor.email or FALLBACK_EMAIL
    if extra:
        env.update(extra)
    return env


def run_git(
    root: Path,
    command: str,
    *options: str,
    args: Sequence[str] = (),
    paths: Sequence[str] | None = None,
    config: Sequence[str] = (),
    actor: Actor | None = None,
    env: Mapping[str, str] | None = None,
    input: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run ``git -C root command options`` through the guarded runner
    (:func:`memosite.gitcommand.run_git`: values in ``args``/``paths`` never read as options),
    authored by ``actor``; never raises for a git failure."""
    return gitcommand.run_git(
        root,
        command,
        *options,
        args=args,
        paths=paths,
        config=config,
        env=git_env(actor, env, inherit=False),
        input=input,
    )


# Vaults whose git was found without an identity: root -> (fallback options, until when). A long
# process (the MCP server) looks again after a minute, so an identity set meanwhile is picked up.
_FALLBACKS: dict[Path, tuple[list[str], float]] = {}
FALLBACK_RECHECK_SECONDS = 60.0


def identity_options(root: Path) -> list[str]:
    """The fallback identity (``user.name=memosite`` … as configuration items) when git has no
    committer identity, else none (for git commands other than ``commit`` that need one, such as
    ``merge``)."""
    known = _FALLBACKS.get(root)
    if known is not None and known[1] > time.monotonic():
        return known[0]
    if run_git(root, "var", "GIT_COMMITTER_IDENT").returncode == 0:
        return []
    options = identity_fallback(root)
    _FALLBACKS[root] = (options, time.monotonic() + FALLBACK_RECHECK_SECONDS)
    return options


def identity_fallback(root: Path) -> list[str]:
    """``user.name=memosite`` / ``user.email=…`` (configuration items) for whichever of the two git
    lacks."""
    options: list[str] = []
    for key, value in (("user.name", FALLBACK_NAME), ("user.email", FALLBACK_EMAIL)):
        if not run_git(root, "config", "--get", args=[key]).stdout.strip():
            options.append(f"{key}={value}")
    return options or [f"user.name={FALLBACK_NAME}", f"user.email={FALLBACK_EMAIL}"]


def commit(
    root: Path,
    message: str,
    *,
    actor: Actor | None = None,
    env: Mapping[str, str] | None = None,
    no_verify: bool = False,
) -> subprocess.CompletedProcess[str]:
    """``git commit -q -m message`` authored by ``actor`` (or git's identity; ``memosite`` when git
    has none)."""
    known = _FALLBACKS.get(root)
    options = known[0] if known is not None and known[1] > time.monotonic() else []
    verify = "--no-verify" if no_verify else "--verify"

    def attempt(identity: Sequence[str]) -> subprocess.CompletedProcess[str]:
        return run_git(root, "commit", "-q", verify, "-m", message, config=identity, actor=actor, env=env)

    result = attempt(options)
    if result.returncode != 0 and not options and _IDENTITY_MISSING.search(result.stderr):
        options = identity_fallback(root)
        _FALLBACKS[root] = (options, time.monotonic() + FALLBACK_RECHECK_SECONDS)
        result = attempt(options)
    return result


def merge_in_progress(root: Path) -> bool:
    """True while a ``git merge``/``git pull`` in the vault waits for its conflicts to be resolved
    (not while git runs the ``post-merge`` hook of a merge it has already committed)."""
    dot_git = root / ".git"
    merge_head = (dot_git if dot_git.is_dir() else git_dir(root)) / "MERGE_HEAD"
    if not merge_head.exists():
        return False
    done = run_git(root, "merge-base", "--is-ancestor", args=["MERGE_HEAD", "HEAD"], env=READ_ONLY)
    return done.returncode != 0


# --- staging: only what a shared vault may hold --------------------------------------------------


@dataclass(frozen=True)
class LeftOut:
    """A changed file a vault commit leaves out: a shared vault may not hold it (``reason``)."""

    path: str
    reason: str


@dataclass
class Staged:
    """What :func:`stage_shared` staged: whether anything is to be committed, and what it left out."""

    changed: bool
    left_out: list[LeftOut] = field(default_factory=list)


EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"


def _add_all(root: Path) -> None:
    add = run_git(root, "add", "-A")
    if add.returncode != 0 and "index.lock" in add.stderr and recover_index_lock(root):
        add = run_git(root, "add", "-A")
    if add.returncode != 0:
        raise StorageError(f"git add failed: {first_line(add.stderr)}{_lock_hint(root, add.stderr)}")


def stage_shared(root: Path) -> Staged:
    """Stage every change of the work tree (``git add -A``), then take back out of the index what a
    shared vault may not hold (:mod:`memosite.sharedtree`: a stray ``.DS_Store``, a symlink, an
    executable, a ``.gitattributes`` …), so no commit of this machine carries what other machines
    refuse. The files themselves stay on disk."""
    _add_all(root)
    head = run_git(root, "rev-parse", "-q", "--verify", args=["HEAD^{commit}"], env=READ_ONLY).stdout.strip()
    listed = run_git(root, "diff", "--cached", "--raw", "-z", "--no-renames", "--no-abbrev", args=[head or EMPTY_TREE])
    if listed.returncode != 0:
        raise StorageError(f"git diff failed: {first_line(listed.stderr)}")
    fields = listed.stdout.split("\0")
    new_paths: list[str] = []
    tracked_paths: list[str] = []
    left_out: list[LeftOut] = []
    changed = False
    for meta, path in zip(fields[0::2], fields[1::2], strict=False):
        parts = meta.lstrip(":").split()
        if len(parts) < 5 or not path:
            continue
        old_mode, new_mode, new_blob, status = parts[0], parts[1], parts[3], parts[4]
        if status.startswith("D"):
            changed = True
            continue
        why = refusal(path, new_mode, partial(_blob, root, new_blob))
        if why is None:
            changed = True
            continue
        left_out.append(LeftOut(path, why))
        (tracked_paths if old_mode != "000000" else new_paths).append(path)
    if new_paths:
        run_git(root, "rm", "-q", "--cached", "--ignore-unmatch", paths=new_paths)
    if tracked_paths:
        run_git(root, "reset", "-q", args=["HEAD"], paths=tracked_paths)
    return Staged(changed, left_out)


def _blob(root: Path, blob: str) -> bytes:
    done = gitcommand.run_git_bytes(root, "cat-file", "blob", args=[blob])
    return done.stdout if done.returncode == 0 else b""


def commit_tree(root: Path, message: str, *, actor: Actor | None = None) -> bool:
    """Commit the whole work tree on top of HEAD with plumbing (``write-tree``/``commit-tree``),
    which ignores a ``MERGE_HEAD`` git has not cleaned up yet; False when nothing changed. What a
    shared vault may not hold is left out (:func:`stage_shared`)."""
    stage_shared(root)
    tree = run_git(root, "write-tree").stdout.strip()
    head = run_git(root, "rev-parse", "-q", "--verify", args=["HEAD^{commit}"]).stdout.strip()
    if head and run_git(root, "rev-parse", args=[f"{head}^{{tree}}"]).stdout.strip() == tree:
        return False
    parents = ["-p", head] if head else []

    def attempt(identity: Sequence[str]) -> subprocess.CompletedProcess[str]:
        return run_git(root, "commit-tree", *parents, "-m", message, args=[tree], config=identity, actor=actor)

    made = attempt(())
    if made.returncode != 0 and _IDENTITY_MISSING.search(made.stderr):
        made = attempt(identity_fallback(root))
    if made.returncode != 0:
        raise StorageError(f"git commit-tree failed: {first_line(made.stderr)}")
    subject = f"commit: {message.splitlines()[0]}"
    moved = run_git(root, "update-ref", "-m", subject, args=["HEAD", made.stdout.strip()])
    if moved.returncode != 0:
        raise StorageError(f"git update-ref failed: {first_line(moved.stderr)}")
    return True


# --- a stuck vault git ---------------------------------------------------------------------------

PROBLEM_FILE = "vault-git-problem.json"


def recover_index_lock(root: Path) -> bool:
    """Remove the vault repository's ``index.lock`` when a killed git left it (no git process
    holds it: :mod:`memosite.gitlock`), saying so; True when one was removed."""
    removed = remove_stale_index_lock(root, git_dir(root))
    if removed is not None:
        warn(f"removed {removed.path}: it was left by a git that was killed (no git process held it)")
    return removed is not None


def _lock_hint(root: Path, stderr: str) -> str:
    if "index.lock" not in stderr:
        return ""
    found = inspect_index_lock(root, git_dir(root))
    return f" ({found.describe()})" if found is not None else ""


def vault_git_problem(vault: Vault) -> str | None:
    """Why vault git cannot commit now, if it cannot: an ``index.lock`` held for too long or left
    by a killed git, or the error of the last commit that failed (kept until one succeeds)."""
    if (vault.root / ".git").exists():
        try:
            found = inspect_index_lock(vault.root, git_dir(vault.root))
        except StorageError:
            found = None
        if found is not None and found.stuck:
            return found.describe()
    try:
        noted = json.loads(vault.internal_path(PROBLEM_FILE).read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError, UnicodeDecodeError):
        return None
    return str(noted.get("message")) if isinstance(noted, dict) and noted.get("message") else None


def note_problem(vault: Vault, message: str | None) -> None:
    path = vault.internal_path(PROBLEM_FILE)
    if message is None:
        path.unlink(missing_ok=True)
        return
    text = json.dumps({"at": format_iso(utc_now()), "message": message}, ensure_ascii=False) + "\n"
    atomic_write_text(path, text, durable=False)


# --- commits -----------------------------------------------------------------------------------


def commit_now(vault: Vault, message: str) -> bool:
    """Commit everything in the vault a shared vault may hold (:func:`stage_shared`), authored by
    ``vault.actor``; returns False when there was nothing to commit — or while a merge is waiting
    to be finished (``memosite sync`` finishes it and commits what was written meanwhile: a write
    must not complete a merge half resolved). A stale ``index.lock`` is removed first."""
    ensure_repo(vault)
    if merge_in_progress(vault.root):
        warn("a git merge in the vault is unfinished: `memosite sync` finishes it (the change is kept, not committed)")
        return False
    recover_index_lock(vault.root)
    if not stage_shared(vault.root).changed:
        return False
    result = commit(vault.root, message, actor=vault.actor)
    if result.returncode != 0:
        output = result.stderr or result.stdout
        raise StorageError(f"git commit failed: {first_line(output)}{_lock_hint(vault.root, output)}")
    return True
