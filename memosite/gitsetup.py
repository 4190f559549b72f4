"""The vault's repository set up for team sync: what memosite writes into it, each only when missing
or out of date.

* the managed block of the vault's ``.gitignore`` (:data:`memosite.vault.DISPOSABLE_PATTERNS`,
  merged into whatever else the file holds): what memosite can rebuild stays out of git;
* ``.git/info/attributes``: every attribute a tree's ``.gitattributes`` could set is reset for
  every path (:data:`NEUTRAL_ATTRIBUTES`), then each vault file is routed to one of memosite's merge
  drivers, registered in ``.git/config`` (:data:`MERGE_DRIVERS`), so a plain ``git pull`` merges
  records field by field instead of writing conflict markers;
* the ``post-merge`` hook (index and views in step after a plain pull) and the
  ``reference-transaction`` hook (what a plain fetch brings is checked first:
  :mod:`memosite.sync.guard`); a person's own hook of either name is left alone;
* ``pull.rebase=false``/``pull.ff=true`` and :data:`REPOSITORY_SAFETY` in the vault's own config.
"""

from __future__ import annotations

import re
import shlex
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path

from memosite.errors import StorageError
from memosite.gitcommand import branch_name, first_line, git_dir, run_git
from memosite.kinds import INVENTORY_PATTERN, VIEW_FILES
from memosite.vault import DISPOSABLE_PATTERNS, Vault, atomic_write_text

BLOCK_START = "# >>> memosite: disposable files, rebuilt from the records (managed block) >>>"
BLOCK_END = "# <<< memosite <<<"
ATTRIBUTES_START = "# >>> memosite: record-aware merging (managed block) >>>"
HOOK_MARK = "# memosite post-merge hook"
GUARD_HOOK_MARK = "# memosite reference-transaction hook"

# The merge drivers memosite registers: name -> the driver's argument (None: keep ours, `true`).
MERGE_DRIVERS: dict[str, str | None] = {
    "memosite-record": "record",
    "memosite-union": "union",
    "memosite-file": "file",
    "memosite-view": None,
}


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
        *(f"/projects/*/{name} merge=memosite-view" for name in (*VIEW_FILES, INVENTORY_PATTERN)),
    ]
    return _managed_block(ATTRIBUTES_START, lines)


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
        branch = branch_name(vault.config.git_branch, "vaultGit.branch")
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
