"""Vault-git: every mutation asks for a commit of the vault (when ``vaultGit.enabled``).

``vaultGit.atomic`` true commits each change at once; false queues the message and
:func:`flush_pending` commits the batch (gc does this at the end of a pass). What memosite can
rebuild (:data:`memosite.vault.DISPOSABLE_PATTERNS`) is kept out of git by a block memosite keeps
in the vault's ``.gitignore``, merged into whatever else the file holds.

Commits carry who made them: ``vault.actor`` (set by the composition root) authors the commit when
it names someone (an MCP session: ``<client> via memosite``); otherwise git's own configured
identity does, and ``memosite`` only when git has none. With ``vaultGit.push: "auto"`` a commit
also schedules a debounced background push (:mod:`memosite.sync.autopush`).

The repository is also set up for team sync (:mod:`memosite.sync`): merge drivers in
``.git/config`` and the attributes that route each file to one (``.git/info/attributes``), so a
plain ``git pull`` in the vault merges records field by field instead of writing conflict markers,
and a ``post-merge`` hook that brings the index and the views in step afterwards.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from memosite.errors import MemositeError, StorageError
from memosite.kinds import VIEW_FILES
from memosite.vault import DISPOSABLE_PATTERNS, Vault, atomic_write_text, warn

if TYPE_CHECKING:
    from memosite.provenance import Actor

BLOCK_START = "# >>> memosite: disposable files, rebuilt from the records (managed block) >>>"
BLOCK_END = "# <<< memosite <<<"
ATTRIBUTES_START = "# >>> memosite: record-aware merging (managed block) >>>"
HOOK_MARK = "# memosite post-merge hook"
FALLBACK_NAME = "memosite"
FALLBACK_EMAIL = "memosite@localhost"

# The merge drivers memosite registers: name -> the driver's argument (None: keep ours, `true`).
MERGE_DRIVERS: dict[str, str | None] = {
    "memosite-record": "record",
    "memosite-union": "union",
    "memosite-file": "file",
    "memosite-view": None,
}

_IDENTITY_MISSING = re.compile(
    r"Please tell me who you are|Author identity unknown|Committer identity unknown|"
    r"unable to auto-detect email address|empty ident name",
    re.IGNORECASE,
)


# --- running git -------------------------------------------------------------------------------


def git_env(actor: Actor | None = None, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment git runs in: the caller's, plus the actor as author when it names one.

    Nothing is forced when there is no actor: the person's own ``user.name``/``user.email`` (or
    ``GIT_AUTHOR_*`` they set) author the commit."""
    env = dict(os.environ)
    if actor is not None and actor.name:
        env["GIT_AUTHOR_NAME"] = actor.name
        env["GIT_AUTHOR_EMAIL"] = actor.email or FALLBACK_EMAIL
    if extra:
        env.update(extra)
    return env


def run_git(
    root: Path,
    *args: str,
    actor: Actor | None = None,
    env: Mapping[str, str] | None = None,
    input: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run ``git -C root args`` and return what it did (never raises for a git failure)."""
    return subprocess.run(
        ["git", "-C", str(root), *args],
        capture_output=True,
        text=True,
        encoding="utf-8",
        errors="replace",
        env=git_env(actor, env),
        input=input,
        check=False,
    )


def _git(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_git(root, *args)


def first_line(text: str) -> str:
    """The first meaningful line of git's output (for one-line error messages)."""
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("hint:"):
            return line.removeprefix("fatal: ").removeprefix("error: ")
    return "git failed"


# Vaults whose git was found without an identity: root -> (fallback options, until when). A long
# process (the MCP server) looks again after a minute, so an identity set meanwhile is picked up.
_FALLBACKS: dict[Path, tuple[list[str], float]] = {}
FALLBACK_RECHECK_SECONDS = 60.0


def identity_options(root: Path) -> list[str]:
    """The fallback identity options when git has no committer identity, else none (for git
    commands other than ``commit`` that need one, such as ``merge``)."""
    known = _FALLBACKS.get(root)
    if known is not None and known[1] > time.monotonic():
        return known[0]
    if run_git(root, "var", "GIT_COMMITTER_IDENT").returncode == 0:
        return []
    options = identity_fallback(root)
    _FALLBACKS[root] = (options, time.monotonic() + FALLBACK_RECHECK_SECONDS)
    return options


def identity_fallback(root: Path) -> list[str]:
    """``-c user.name=memosite`` / ``-c user.email=…`` for whichever of the two git lacks."""
    options: list[str] = []
    for key, value in (("user.name", FALLBACK_NAME), ("user.email", FALLBACK_EMAIL)):
        if not run_git(root, "config", "--get", key).stdout.strip():
            options += ["-c", f"{key}={value}"]
    return options or ["-c", f"user.name={FALLBACK_NAME}", "-c", f"user.email={FALLBACK_EMAIL}"]


def commit(
    root: Path, args: Sequence[str], *, actor: Actor | None = None, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``git commit args`` authored by ``actor`` (or git's identity; ``memosite`` when git has none)."""
    known = _FALLBACKS.get(root)
    options = known[0] if known is not None and known[1] > time.monotonic() else []
    result = run_git(root, *options, "commit", *args, actor=actor, env=env)
    if result.returncode != 0 and not options and _IDENTITY_MISSING.search(result.stderr):
        options = identity_fallback(root)
        _FALLBACKS[root] = (options, time.monotonic() + FALLBACK_RECHECK_SECONDS)
        result = run_git(root, *options, "commit", *args, actor=actor, env=env)
    return result


# --- the repository ----------------------------------------------------------------------------


def _managed_block(start: str, lines: Sequence[str]) -> str:
    return "\n".join([start, *lines, BLOCK_END]) + "\n"


def _merge_block(existing: str, start: str, block: str) -> str:
    begin = existing.find(start)
    end = existing.find(BLOCK_END, begin) if begin != -1 else -1
    if begin != -1 and end > begin:
        return existing[:begin] + block + existing[end + len(BLOCK_END) :].lstrip("\n")
    if existing and not existing.endswith("\n"):
        existing += "\n"
    return existing + ("\n" if existing else "") + block


def gitignore_block() -> str:
    return _managed_block(BLOCK_START, DISPOSABLE_PATTERNS)


def merged_gitignore(existing: str) -> str:
    """``existing`` with memosite's block added, or replaced when it is out of date; every other
    line stays as the person wrote it."""
    return _merge_block(existing, BLOCK_START, gitignore_block())


def attributes_block() -> str:
    """Which merge driver each vault file goes to (later lines win in gitattributes)."""
    lines = [
        "* merge=memosite-file",
        "*.jsonl merge=memosite-union",
        "/projects/*/*/*.md merge=memosite-record",
        *(f"/projects/*/{name} merge=memosite-view" for name in VIEW_FILES),
    ]
    return _managed_block(ATTRIBUTES_START, lines)


def git_dir(root: Path) -> Path:
    """The vault repository's git directory (``.git``, or where a ``.git`` file points)."""
    dot_git = root / ".git"
    if dot_git.is_dir():
        return dot_git
    result = run_git(root, "rev-parse", "--absolute-git-dir")
    if result.returncode != 0:
        raise StorageError(f"not a git repository: {root}")
    return Path(result.stdout.strip())


def driver_command(argument: str | None) -> str:
    if argument is None:
        return "true"
    return f"{shlex.quote(sys.executable)} -m memosite.sync.driver {argument} %O %A %B %P"


_DRIVER_PYTHON = re.compile(r"driver\s*=\s*'?([^'\n]+?)'?\s+-m\s+memosite\.sync\.driver")


def _drivers_registered(config_text: str) -> bool:
    if not all(f'[merge "{name}"]' in config_text for name in MERGE_DRIVERS):
        return False
    pythons = _DRIVER_PYTHON.findall(config_text)
    return len(pythons) >= sum(1 for a in MERGE_DRIVERS.values() if a) and all(Path(p).exists() for p in pythons)


def hook_text() -> str:
    python = shlex.quote(sys.executable)
    return (
        "#!/bin/sh\n"
        f"{HOOK_MARK} (managed by memosite): after a git pull or git merge in the vault it brings the\n"
        "# index and the compiled views in step with the merged records. Delete this file to turn it off.\n"
        f"[ -x {python} ] || exit 0\n"
        f'exec {python} -m memosite.sync.hook post-merge "$@"\n'
    )


# A plain `git pull` in the vault must merge (through the drivers), whatever the person's global
# config says: a rebase replays local commits without the drivers' view of both sides (and drops
# commits whose change the remote already holds), and git refuses to pull at all without a setting.
PULL_SETTINGS = {"rebase": "false", "ff": "true"}
_PULL_SECTION = re.compile(r"^\[pull\]\s*$(?P<body>.*?)(?=^\s*\[|\Z)", re.MULTILINE | re.DOTALL)


def _pull_settings_set(config_text: str) -> bool:
    body = "".join(m.group("body") for m in _PULL_SECTION.finditer(config_text))
    return all(
        re.search(rf"^\s*{key}\s*=\s*{value}\s*$", body, re.MULTILINE | re.IGNORECASE)
        for key, value in PULL_SETTINGS.items()
    )


def ensure_merge_setup(root: Path) -> None:
    """Register memosite's merge drivers, their attributes and the post-merge hook in the vault
    repository (each only when missing or out of date; a person's own hook is left alone), and
    make a plain ``git pull`` there merge (``pull.rebase=false``, ``pull.ff=true`` in the vault's
    own config, over any global setting)."""
    directory = git_dir(root)
    info = directory / "info" / "attributes"
    try:
        existing = info.read_text(encoding="utf-8")
    except FileNotFoundError:
        existing = ""
    wanted = _merge_block(existing, ATTRIBUTES_START, attributes_block())
    if wanted != existing:
        atomic_write_text(info, wanted)
    try:
        config_text = (directory / "config").read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        config_text = ""
    if not _drivers_registered(config_text):
        for name, argument in MERGE_DRIVERS.items():
            run_git(root, "config", f"merge.{name}.name", f"memosite {argument or 'view'} merge")
            result = run_git(root, "config", f"merge.{name}.driver", driver_command(argument))
            if result.returncode != 0:
                raise StorageError(f"cannot register the merge driver {name}: {first_line(result.stderr)}")
    if not _pull_settings_set(config_text):
        for key, value in PULL_SETTINGS.items():
            result = run_git(root, "config", "--local", f"pull.{key}", value)
            if result.returncode != 0:
                raise StorageError(f"cannot set pull.{key} in the vault repository: {first_line(result.stderr)}")
    hook = directory / "hooks" / "post-merge"
    try:
        current = hook.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        current = None
    if current is None or (HOOK_MARK in current and current != hook_text()):
        atomic_write_text(hook, hook_text(), mode=0o755)


def ensure_repo(vault: Vault) -> None:
    """A git repository in the vault whose ``.gitignore`` keeps the disposable files out, set up
    for record-aware merging; files an older memosite committed that are disposable now leave the
    index (not the disk)."""
    if shutil.which("git") is None:
        raise StorageError("vaultGit is enabled but git is not installed")
    if not (vault.root / ".git").exists():
        # vaultGit.branch, else the person's init.defaultBranch, else main (what hosted remotes expect).
        branch = vault.config.git_branch
        if branch is None and not any(
            _git(vault.root, "config", scope, "--get", "init.defaultBranch").stdout.strip()
            for scope in ("--global", "--system")
        ):
            branch = "main"
        result = _git(vault.root, "init", "-q", *(["-b", branch] if branch else []))
        if result.returncode != 0:
            raise StorageError(f"git init failed: {result.stderr.strip()}")
    gitignore = vault.root / ".gitignore"
    try:
        existing = gitignore.read_text(encoding="utf-8")
    except FileNotFoundError:
        existing = ""
    wanted = merged_gitignore(existing)
    if wanted != existing:
        atomic_write_text(gitignore, wanted)
        tracked = _git(vault.root, "ls-files", "-z", "--cached", "--ignored", "--exclude-standard")
        stale = [name for name in tracked.stdout.split("\0") if name]
        if stale:
            _git(vault.root, "rm", "-q", "--cached", "--ignore-unmatch", "--", *stale)
    ensure_merge_setup(vault.root)


def merge_in_progress(root: Path) -> bool:
    """True while a ``git merge``/``git pull`` in the vault waits for its conflicts to be resolved
    (not while git runs the ``post-merge`` hook of a merge it has already committed)."""
    dot_git = root / ".git"
    merge_head = (dot_git if dot_git.is_dir() else git_dir(root)) / "MERGE_HEAD"
    if not merge_head.exists():
        return False
    done = run_git(root, "merge-base", "--is-ancestor", "MERGE_HEAD", "HEAD", env={"GIT_OPTIONAL_LOCKS": "0"})
    return done.returncode != 0


def commit_tree(root: Path, message: str, *, actor: Actor | None = None) -> bool:
    """Commit the whole work tree on top of HEAD with plumbing (``write-tree``/``commit-tree``),
    which ignores a ``MERGE_HEAD`` git has not cleaned up yet; False when nothing changed."""
    if run_git(root, "add", "-A").returncode != 0:
        raise StorageError("git add failed")
    tree = run_git(root, "write-tree").stdout.strip()
    head = run_git(root, "rev-parse", "-q", "--verify", "HEAD^{commit}").stdout.strip()
    if head and run_git(root, "rev-parse", f"{head}^{{tree}}").stdout.strip() == tree:
        return False
    args = ["commit-tree", tree, *(["-p", head] if head else []), "-m", message]
    made = run_git(root, *args, actor=actor)
    if made.returncode != 0 and _IDENTITY_MISSING.search(made.stderr):
        made = run_git(root, *identity_fallback(root), *args, actor=actor)
    if made.returncode != 0:
        raise StorageError(f"git commit-tree failed: {first_line(made.stderr)}")
    moved = run_git(root, "update-ref", "-m", f"commit: {message.splitlines()[0]}", "HEAD", made.stdout.strip())
    if moved.returncode != 0:
        raise StorageError(f"git update-ref failed: {first_line(moved.stderr)}")
    return True


# --- commits -----------------------------------------------------------------------------------


def commit_now(vault: Vault, message: str) -> bool:
    """Commit everything in the vault, authored by ``vault.actor``; returns False when there was
    nothing to commit — or while a merge is waiting to be finished (``memosite sync`` finishes it
    and commits what was written meanwhile: a write must not complete a merge half resolved)."""
    ensure_repo(vault)
    if merge_in_progress(vault.root):
        warn("a git merge in the vault is unfinished: `memosite sync` finishes it (the change is kept, not committed)")
        return False
    add = _git(vault.root, "add", "-A")
    if add.returncode != 0:
        raise StorageError(f"git add failed: {add.stderr.strip()}")
    if _git(vault.root, "diff", "--cached", "--quiet").returncode == 0:
        return False
    result = commit(vault.root, ["-q", "-m", message], actor=vault.actor)
    if result.returncode != 0:
        raise StorageError(f"git commit failed: {first_line(result.stderr or result.stdout)}")
    return True


def request_commit(vault: Vault, message: str) -> None:
    """Ask for a vault commit. Failures warn: the Markdown write already happened and stands.

    With ``vaultGit.push: "auto"`` a commit also schedules a push; it runs in the background
    after a short quiet spell, so the write never waits for the network."""
    if not vault.config.git_enabled:
        return
    try:
        if vault.config.git_atomic:
            queued = _queued_messages(vault)
            full = message if not queued else f"{message}\n\n" + "\n".join(queued)
            if commit_now(vault, full):
                vault.internal_path("pending-commits").unlink(missing_ok=True)
                _schedule_auto_push(vault)
        else:
            queue_commit(vault, message)
    except (StorageError, OSError) as exc:
        warn(f"vault commit skipped: {getattr(exc, 'message', exc)}")


def queue_commit(vault: Vault, message: str) -> None:
    """Keep ``message`` for the next commit (changes that need no commit of their own, such as
    hits, and every change while ``vaultGit.atomic`` is off)."""
    if not vault.config.git_enabled:
        return
    vault.internal_dir.mkdir(parents=True, exist_ok=True)
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
    with os.fdopen(os.open(vault.internal_path("pending-commits"), flags, 0o644), "a", encoding="utf-8") as handle:
        handle.write(message.replace("\n", " ") + "\n")


def _queued_messages(vault: Vault) -> list[str]:
    try:
        return vault.internal_path("pending-commits").read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return []


def flush_pending(vault: Vault) -> bool:
    """Commit queued changes as one commit listing every queued message."""
    if not vault.config.git_enabled:
        return False
    pending = vault.internal_path("pending-commits")
    try:
        messages = pending.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        messages = []
    if not messages:
        return False
    summary = f"memosite: {len(messages)} change{'s' if len(messages) != 1 else ''}\n\n" + "\n".join(messages)
    committed = commit_now(vault, summary)
    if committed or not merge_in_progress(vault.root):
        pending.unlink(missing_ok=True)
    if committed:
        _schedule_auto_push(vault)
    return committed


def _schedule_auto_push(vault: Vault) -> None:
    if vault.config.git_push != "auto":
        return
    from memosite.sync.autopush import schedule_push

    try:
        schedule_push(vault)
    except OSError as exc:
        warn(f"automatic push not scheduled: {exc}")
    except MemositeError as exc:
        warn(f"automatic push not scheduled: {exc.message}")
