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

import contextlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from memosite import gitcommand
from memosite.errors import MemositeError, StorageError
from memosite.gitlock import inspect_index_lock, remove_stale_index_lock
from memosite.kinds import VIEW_FILES
from memosite.schema import format_iso, utc_now
from memosite.sync.allowlist import refusal
from memosite.vault import DISPOSABLE_PATTERNS, Vault, atomic_write_text, warn

if TYPE_CHECKING:
    from memosite.provenance import Actor

BLOCK_START = "# >>> memosite: disposable files, rebuilt from the records (managed block) >>>"
BLOCK_END = "# <<< memosite <<<"
ATTRIBUTES_START = "# >>> memosite: record-aware merging (managed block) >>>"
HOOK_MARK = "# memosite post-merge hook"
GUARD_HOOK_MARK = "# memosite reference-transaction hook"
READ_ONLY = {"GIT_OPTIONAL_LOCKS": "0"}
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


# Attributes a tree could set that change how a file is checked out, merged or exported. Listed
# unspecified (``!attr``) for every path in ``info/attributes``, which git reads after every
# ``.gitattributes`` in the tree: whatever a tree says, the vault's files are treated as if it said
# nothing (a ``working-tree-encoding=UTF-16LE`` would otherwise rewrite records on checkout).
NEUTRAL_ATTRIBUTES = (
    "text",
    "eol",
    "crlf",
    "filter",
    "ident",
    "working-tree-encoding",
    "diff",
    "export-subst",
    "export-ignore",
    "whitespace",
    "conflict-marker-size",
    "delta",
    "encoding",
)


def attributes_block() -> str:
    """Which merge driver each vault file goes to (later lines win in gitattributes), after a line
    that sets every attribute a tree's ``.gitattributes`` could use back to unspecified."""
    lines = [
        "* " + " ".join(f"!{name}" for name in NEUTRAL_ATTRIBUTES),
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
    result = run_git(root, "rev-parse", "--absolute-git-dir", env=READ_ONLY)
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


def guard_hook_text() -> str:
    """The ``reference-transaction`` hook: a plain ``git fetch``/``git pull`` of a remote-tracking
    branch asks memosite first (:mod:`memosite.sync.guard`), and git drops the update when the
    commits it brings hold what a shared vault may not; other ref updates never start Python."""
    python = shlex.quote(sys.executable)
    return (
        "#!/bin/sh\n"
        f"{GUARD_HOOK_MARK} (managed by memosite): a plain git fetch or git pull in the vault is\n"
        "# refused when the commits it brings hold what a shared vault may not (memosite's README, Team\n"
        "# memory across machines). Delete this file to turn it off.\n"
        '[ "$1" = prepared ] || exit 0\n'
        "updates=$(cat)\n"
        'case "$updates" in *" refs/remotes/"*) ;; *) exit 0 ;; esac\n'
        f"[ -x {python} ] || exit 0\n"
        f"printf '%s\\n' \"$updates\" | exec {python} -m memosite.sync.guard reference-transaction\n"
    )


# Settings of the vault's own repository that keep a person's plain `git pull` there from touching
# submodules, running a command-transport or taking objects git finds malformed (memosite's own git
# calls pass them on every command line: memosite.gitcommand.SAFE_CONFIG).
REPOSITORY_SAFETY = {
    "submodule.recurse": "false",
    "fetch.recurseSubmodules": "false",
    "protocol.ext.allow": "never",
    "protocol.fd.allow": "never",
    "fetch.fsckObjects": "true",
    "core.protectNTFS": "true",
    "core.protectHFS": "true",
}


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


def _config_body(config_text: str, section: str) -> str:
    pattern = re.compile(rf"^\[{re.escape(section)}\]\s*$(?P<body>.*?)(?=^\s*\[|\Z)", re.MULTILINE | re.DOTALL)
    return "".join(m.group("body") for m in pattern.finditer(config_text))


def _safety_set(config_text: str) -> bool:
    for key, value in REPOSITORY_SAFETY.items():
        section, _, name = key.rpartition(".")
        title = section.replace(".", ' "', 1) + '"' if "." in section else section
        body = _config_body(config_text, title)
        if not re.search(rf"^\s*{re.escape(name)}\s*=\s*{value}\s*$", body, re.MULTILINE | re.IGNORECASE):
            return False
    return True


def _install_hook(directory: Path, name: str, mark: str, text: str) -> None:
    """Write memosite's hook ``name`` when there is none, or when memosite's own is out of date
    (a person's own hook is left alone)."""
    hook = directory / "hooks" / name
    try:
        current = hook.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        current = None
    if current is None or (mark in current and current != text):
        atomic_write_text(hook, text, mode=0o755)


def ensure_merge_setup(root: Path) -> None:
    """Register memosite's merge drivers, their attributes and its hooks (``post-merge``,
    ``reference-transaction``) in the vault repository (each only when missing or out of date; a
    person's own hook is left alone); make a plain ``git pull`` there merge (``pull.rebase=false``,
    ``pull.ff=true`` in the vault's own config, over any global setting) and stay away from
    submodules and command transports (:data:`REPOSITORY_SAFETY`)."""
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
            run_git(root, "config", "--local", args=[f"merge.{name}.name", f"memosite {argument or 'view'} merge"])
            result = run_git(root, "config", "--local", args=[f"merge.{name}.driver", driver_command(argument)])
            if result.returncode != 0:
                raise StorageError(f"cannot register the merge driver {name}: {first_line(result.stderr)}")
    settings: dict[str, str] = {}
    if not _pull_settings_set(config_text):
        settings.update({f"pull.{key}": value for key, value in PULL_SETTINGS.items()})
    if not _safety_set(config_text):
        settings.update(REPOSITORY_SAFETY)
    for key, value in settings.items():
        result = run_git(root, "config", "--local", args=[key, value])
        if result.returncode != 0:
            raise StorageError(f"cannot set {key} in the vault repository: {first_line(result.stderr)}")
    _install_hook(directory, "post-merge", HOOK_MARK, hook_text())
    _install_hook(directory, "reference-transaction", GUARD_HOOK_MARK, guard_hook_text())


def ensure_repo(vault: Vault) -> None:
    """A git repository in the vault whose ``.gitignore`` keeps the disposable files out, set up
    for record-aware merging; files an older memosite committed that are disposable now leave the
    index (not the disk)."""
    if shutil.which("git") is None:
        raise StorageError("vaultGit is enabled but git is not installed")
    if not (vault.root / ".git").exists():
        # vaultGit.branch, else the person's init.defaultBranch, else main (what hosted remotes expect).
        branch = gitcommand.branch_name(vault.config.git_branch, "vaultGit.branch")
        if branch is None and not any(
            run_git(vault.root, "config", scope, "--get", args=["init.defaultBranch"]).stdout.strip()
            for scope in ("--global", "--system")
        ):
            branch = "main"
        initial = [f"--initial-branch={branch}"] if branch else []
        result = run_git(vault.root, "init", "-q", *initial)
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
        tracked = run_git(vault.root, "ls-files", "-z", "--cached", "--ignored", "--exclude-standard")
        stale = [name for name in tracked.stdout.split("\0") if name]
        if stale:
            run_git(vault.root, "rm", "-q", "--cached", "--ignore-unmatch", paths=stale)
    ensure_merge_setup(vault.root)


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
    shared vault may not hold (:mod:`memosite.sync.allowlist`: a stray ``.DS_Store``, a symlink, an
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


def _note_problem(vault: Vault, message: str | None) -> None:
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


def request_commit(vault: Vault, message: str) -> None:
    """Ask for a vault commit. Failures warn: the Markdown write already happened and stands.

    While vault git cannot commit (:func:`vault_git_problem`), every write says so in a warning
    line and ``memosite status`` names the problem until a commit succeeds. With
    ``vaultGit.push: "auto"`` a commit also schedules a push; it runs in the background after a
    short quiet spell, so the write never waits for the network."""
    if not vault.config.git_enabled:
        return
    try:
        if vault.config.git_atomic:
            queued = _queued_messages(vault)
            full = message if not queued else f"{message}\n\n" + "\n".join(queued)
            committed = commit_now(vault, full)
            _note_problem(vault, None)
            if committed:
                vault.internal_path("pending-commits").unlink(missing_ok=True)
                _schedule_auto_push(vault)
        else:
            queue_commit(vault, message)
            problem = vault_git_problem(vault)
            if problem is not None:
                warn(f"vault git is stuck: {problem}; this change is saved, not committed (memosite status)")
    except (StorageError, OSError) as exc:
        problem = str(getattr(exc, "message", exc))
        with contextlib.suppress(StorageError, OSError):
            _note_problem(vault, problem)
        warn(f"vault git is stuck: {problem}; this change is saved, not committed (memosite status)")


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
