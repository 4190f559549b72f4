"""The one way memosite runs git: a guarded command line, and the values that may reach one.

Every git process memosite starts goes through :func:`run_git` (text) or :func:`run_git_bytes`. A
command line is built from three parts that never mix:

* ``options`` — memosite's own flags, literal in the code (a test walks the source and fails on a
  call whose options hold anything else than a literal, a ``--name=value`` word or the word right
  after a value-taking flag such as ``-m``);
* ``args`` — values (revisions, remote URLs, ref names, directories): placed after
  ``--end-of-options``, so git reads them as values whatever they look like. The few commands that
  do not take ``--end-of-options`` (:data:`NO_END_OF_OPTIONS`) refuse a value that starts with ``-``;
* ``paths`` — placed after ``--``.

Git also runs with :data:`SAFE_CONFIG`: no hook runs from memosite's own git calls (the vault's
``post-merge`` hook is for a person's plain ``git pull``), attributes come only from the
repository's ``info/attributes`` (memosite's; see :mod:`memosite.vaultgit`), no submodule is
touched, no command-running transport (``ext::``, ``fd::``) is allowed, fetched objects are checked
(``fetch.fsckObjects``), and paths that alias ``.git`` on NTFS or HFS+ are refused on checkout.
The system and global git configuration stay in force: they are this machine's (credential
helpers, proxies), not the remote's.

Values are checked where they enter (:func:`commit_id`, :func:`remote_location`,
:func:`branch_name`): a commit is 7 to 64 hex digits; a remote is a URL or path that does not start
with ``-`` and names no transport that runs a command; a branch passes ``git check-ref-format``.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import overload

from memosite.errors import InvalidArguments, StorageError

# Each is passed as ``-c key=value`` before the command (see the module docstring for why).
SAFE_CONFIG: tuple[str, ...] = (
    f"core.hooksPath={os.devnull}",
    f"core.attributesFile={os.devnull}",
    "core.fsmonitor=false",
    "core.protectNTFS=true",
    "core.protectHFS=true",
    "submodule.recurse=false",
    "fetch.recurseSubmodules=false",
    "protocol.ext.allow=never",
    "protocol.fd.allow=never",
    "fetch.fsckObjects=true",
    "log.showSignature=false",
)

# Commands that reject ``--end-of-options`` in git 2.39: their values must not look like options.
NO_END_OF_OPTIONS = frozenset({"reset", "check-ref-format", "blame"})

_CONFIG_ITEM = re.compile(r"^[A-Za-z][A-Za-z0-9-]*(\.[^=\s]+)*\.[A-Za-z][A-Za-z0-9-]*=")
_COMMIT = re.compile(r"^[0-9a-fA-F]{7,64}$")
# Transports whose "address" is a command git runs (``ext::sh -c …``) or a file descriptor.
_COMMAND_TRANSPORTS = re.compile(r"^(ext|fd)::", re.IGNORECASE)
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def git_argv(
    command: str,
    options: Sequence[str] = (),
    *,
    args: Sequence[str] = (),
    paths: Sequence[str] | None = None,
    config: Sequence[str] = (),
    root: Path | None = None,
    git_dir: Path | None = None,
    work_tree: Path | None = None,
) -> list[str]:
    """The argument vector of ``git [-C root] [-c …] command options [--end-of-options args] [-- paths]``."""
    argv = ["git"]
    if root is not None:
        argv += ["-C", os.fspath(root)]
    if git_dir is not None:
        argv.append(f"--git-dir={os.fspath(git_dir)}")
    if work_tree is not None:
        argv.append(f"--work-tree={os.fspath(work_tree)}")
    for item in (*SAFE_CONFIG, *config):
        if not _CONFIG_ITEM.match(item):
            raise ValueError(f"not a git configuration item: {item!r}")
        argv += ["-c", item]
    argv.append(command)
    argv += options
    if args:
        if command in NO_END_OF_OPTIONS:
            for value in args:
                refuse_option_like(value)
        else:
            argv.append("--end-of-options")
        argv += args
    if paths is not None:
        argv.append("--")
        argv += paths
    return argv


def refuse_option_like(value: str, what: str = "value") -> str:
    """``value`` itself, unless git would read it as an option (it starts with ``-``)."""
    if value.startswith("-"):
        raise InvalidArguments(f"refusing the {what} {value!r}: it starts with '-', and git would read it as an option")
    return value


def _environment(env: Mapping[str, str] | None) -> dict[str, str]:
    merged = dict(os.environ)
    if env:
        merged.update(env)
    return merged


def run_git(
    root: Path | None,
    command: str,
    *options: str,
    args: Sequence[str] = (),
    paths: Sequence[str] | None = None,
    config: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
    input: str | None = None,
    git_dir: Path | None = None,
    work_tree: Path | None = None,
    timeout: float | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run git (see the module docstring) and return what it did; a git failure is a non-zero
    ``returncode``, never an exception. ``env`` is added to this process's environment."""
    argv = git_argv(
        command, options, args=args, paths=paths, config=config, root=root, git_dir=git_dir, work_tree=work_tree
    )
    return subprocess.run(
        argv,
        capture_output=True,
        text=True,
        encoding="utf-8",
        errors="replace",
        env=_environment(env),
        input=input,
        check=False,
        timeout=timeout,
    )


def run_git_bytes(
    root: Path | None,
    command: str,
    *options: str,
    args: Sequence[str] = (),
    paths: Sequence[str] | None = None,
    config: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
    input: bytes | None = None,
) -> subprocess.CompletedProcess[bytes]:
    """:func:`run_git` for output that is not text (blobs)."""
    argv = git_argv(command, options, args=args, paths=paths, config=config, root=root)
    return subprocess.run(argv, capture_output=True, env=_environment(env), input=input, check=False)


# --- reading git's answers ---------------------------------------------------------------------


def first_line(text: str) -> str:
    """The first meaningful line of git's output (for one-line error messages)."""
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("hint:"):
            return line.removeprefix("fatal: ").removeprefix("error: ")
    return "git failed"


def git_dir(root: Path) -> Path:
    """A repository's git directory (``.git``, or where a ``.git`` file points)."""
    dot_git = root / ".git"
    if dot_git.is_dir():
        return dot_git
    result = run_git(root, "rev-parse", "--absolute-git-dir", env={"GIT_OPTIONAL_LOCKS": "0"})
    if result.returncode != 0:
        raise StorageError(f"not a git repository: {root}")
    return Path(result.stdout.strip())


# --- values at the boundary --------------------------------------------------------------------


def is_commit_id(value: object) -> bool:
    """Whether ``value`` is a commit id as memosite accepts one: 7 to 64 hex digits."""
    return isinstance(value, str) and bool(_COMMIT.match(value))


def commit_id(value: object, what: str = "commit") -> str:
    """``value`` when it is 7 to 64 hex digits; INVALID_ARGUMENTS otherwise."""
    if not is_commit_id(value):
        raise InvalidArguments(f"invalid {what} {str(value)[:80]!r}: expected 7 to 64 hex digits")
    assert isinstance(value, str)
    return value


def remote_location(value: str, what: str = "remote") -> str:
    """A remote (a name, URL or path) git may be given: not empty, no control character, not
    starting with ``-`` (git would read it as an option: ``--upload-pack=<command>``), and no
    transport whose address is a command (``ext::``) or a file descriptor (``fd::``)."""
    if not isinstance(value, str) or not value.strip():
        raise InvalidArguments(f"invalid {what}: expected a URL, a path or a remote's name")
    if _CONTROL.search(value):
        raise InvalidArguments(f"invalid {what} {value!r}: it holds a control character")
    if value.startswith("-"):
        raise InvalidArguments(f"refusing the {what} {value!r}: it starts with '-', and git would read it as an option")
    if _COMMAND_TRANSPORTS.match(value):
        raise InvalidArguments(f"refusing the {what} {value!r}: that transport runs a command")
    return value


@overload
def branch_name(value: str, what: str = ...) -> str: ...
@overload
def branch_name(value: None, what: str = ...) -> None: ...
def branch_name(value: str | None, what: str = "branch") -> str | None:
    """A branch name that ``git check-ref-format --branch`` accepts (None passes through)."""
    if value is None:
        return None
    # "@{" is git's reflog syntax: inside a repository check-ref-format --branch would resolve
    # "@{-1}" to the branch checked out before instead of refusing it.
    if not isinstance(value, str) or not value or value.startswith("-") or _CONTROL.search(value) or "@{" in value:
        raise InvalidArguments(f"invalid {what} name {value!r}")
    try:
        checked = run_git(None, "check-ref-format", "--branch", args=[value])
    except OSError as exc:
        raise InvalidArguments(f"cannot check the {what} name {value!r}: {exc}") from exc
    if checked.returncode != 0:
        raise InvalidArguments(f"invalid {what} name {value!r}: git does not accept it as a branch name")
    return value
