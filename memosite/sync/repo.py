"""The git plumbing sync needs, over the vault's repository: refs, ancestry, diffs, blobs, remotes.

Every call runs real git (``git -C <vault> …``); failures the caller must see raise
:class:`SyncError` with git's own first line. Reads that may run while nothing is to be written
pass ``GIT_OPTIONAL_LOCKS=0`` so that looking never rewrites git's index.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from memosite.gitsync import first_line, git_dir, git_env, run_git
from memosite.provenance import Actor
from memosite.sync.errors import NoRemote, SyncError

READ_ONLY = {"GIT_OPTIONAL_LOCKS": "0"}
# Merges and fast-forwards run by sync: no hooks (memosite's post-merge hook would wait for the lock
# sync holds), no renames (two records are never one record renamed), drivers that only report, so
# every file both sides changed is resolved here in one process.
MERGE_OPTIONS = (
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "merge.memosite-record.driver=false",
    "-c",
    "merge.memosite-union.driver=false",
    "-c",
    "merge.memosite-file.driver=false",
    "-c",
    "merge.memosite-view.driver=false",
)


@dataclass(frozen=True)
class Change:
    """One path a diff reports: ``status`` A, M or D."""

    status: str
    path: str


@dataclass(frozen=True)
class RemoteTarget:
    """The remote a sync talks to: its name in the vault repository and where it points."""

    name: str
    url: str


@dataclass
class Repo:
    """The vault's git repository. ``env`` is added to every call (a dry run's quarantine)."""

    root: Path
    env: dict[str, str] = field(default_factory=dict)

    # --- running ---------------------------------------------------------------------------
    def run(
        self,
        *args: str,
        actor: Actor | None = None,
        input: str | None = None,
        env: Mapping[str, str] | None = None,
    ) -> subprocess.CompletedProcess[str]:
        return run_git(self.root, *args, actor=actor, input=input, env={**self.env, **(env or {})})

    def git(self, *args: str, input: str | None = None, env: Mapping[str, str] | None = None) -> str:
        """stdout of a git command that must succeed."""
        result = self.run(*args, input=input, env=env)
        if result.returncode != 0:
            raise SyncError(f"git {args[0]} failed: {first_line(result.stderr or result.stdout)}")
        return result.stdout

    def read_bytes(self, *args: str, input: bytes | None = None) -> bytes:
        result = subprocess.run(
            ["git", "-C", str(self.root), *args],
            input=input,
            capture_output=True,
            env=git_env(None, {**READ_ONLY, **self.env}),
            check=False,
        )
        if result.returncode != 0:
            raise SyncError(f"git {args[0]} failed: {first_line(result.stderr.decode('utf-8', 'replace'))}")
        return result.stdout

    # --- refs ------------------------------------------------------------------------------
    @property
    def git_dir(self) -> Path:
        return git_dir(self.root)

    def rev(self, ref: str) -> str | None:
        result = self.run("rev-parse", "--verify", "-q", f"{ref}^{{commit}}", env=READ_ONLY)
        return result.stdout.strip() or None if result.returncode == 0 else None

    def head(self) -> str | None:
        return self.rev("HEAD")

    def branch(self) -> str | None:
        """The branch HEAD is on (even before its first commit); None when detached."""
        try:
            head = (self.git_dir / "HEAD").read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError):
            head = ""
        if head.startswith("ref: refs/heads/"):
            return head[len("ref: refs/heads/") :]
        result = self.run("symbolic-ref", "-q", "--short", "HEAD", env=READ_ONLY)
        return result.stdout.strip() or None if result.returncode == 0 else None

    def config_text(self) -> str:
        try:
            return (self.git_dir / "config").read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""

    def is_ancestor(self, older: str, newer: str) -> bool:
        return self.run("merge-base", "--is-ancestor", older, newer, env=READ_ONLY).returncode == 0

    def merge_base(self, left: str, right: str) -> str | None:
        result = self.run("merge-base", left, right, env=READ_ONLY)
        return result.stdout.strip() or None if result.returncode == 0 else None

    def count(self, range_: str) -> int:
        return int(self.git("rev-list", "--count", range_, env=READ_ONLY).strip() or 0)

    def remote_heads(self, remote: str) -> dict[str, str]:
        """``branch -> commit`` of ``refs/remotes/<remote>/*`` as of the last fetch."""
        prefix = f"refs/remotes/{remote}/"
        out = self.git("for-each-ref", "--format=%(objectname) %(refname)", prefix, env=READ_ONLY)
        heads = {}
        for line in out.splitlines():
            sha, _, ref = line.partition(" ")
            name = ref[len(prefix) :]
            if name and name != "HEAD":
                heads[name] = sha
        return heads

    def merge_in_progress(self) -> bool:
        return (self.git_dir / "MERGE_HEAD").exists()

    def parents(self, commit: str) -> list[str]:
        return self.git("rev-list", "--parents", "-n", "1", commit, env=READ_ONLY).split()[1:]

    # --- content ---------------------------------------------------------------------------
    def diff(self, old: str | None, new: str | None, *, cached: bool = False) -> list[Change]:
        """What changed from ``old`` to ``new`` (``new`` None with ``cached``: the staged tree)."""
        args = ["diff", "--name-status", "-z", "--no-renames", "--no-ext-diff", "--no-textconv"]
        if cached:
            args.append("--cached")
        args.append(old or _EMPTY_TREE)
        if new is not None:
            args.append(new)
        fields = self.git(*args, env=READ_ONLY).split("\0")
        changes = []
        for status, path in zip(fields[0::2], fields[1::2], strict=False):
            if status and path:
                changes.append(Change(status[0], path))
        return changes

    def blobs(self, ids: Iterable[str]) -> dict[str, bytes]:
        """The content of each blob id, read by one ``git cat-file --batch``."""
        wanted = list(dict.fromkeys(ids))
        if not wanted:
            return {}
        out = self.read_bytes("cat-file", "--batch", input=("\n".join(wanted) + "\n").encode("ascii"))
        found: dict[str, bytes] = {}
        position = 0
        for oid in wanted:
            end = out.index(b"\n", position)
            header = out[position:end].split()
            position = end + 1
            if len(header) < 3 or header[1] == b"missing":
                continue
            size = int(header[2])
            found[oid] = out[position : position + size]
            position += size + 1
        return found

    def tree_blobs(self, commit: str, paths: Sequence[str]) -> dict[str, str]:
        """``path -> blob id`` in ``commit`` for those of ``paths`` it holds."""
        if not paths:
            return {}
        out = self.git("ls-tree", "-z", "--full-tree", commit, "--", *paths, env=READ_ONLY)
        found = {}
        for entry in out.split("\0"):
            meta, _, path = entry.partition("\t")
            parts = meta.split()
            if len(parts) == 3 and parts[1] == "blob":
                found[path] = parts[2]
        return found

    def show(self, commit: str, path: str) -> bytes | None:
        ids = self.tree_blobs(commit, [path])
        return self.blobs(ids.values()).get(ids[path]) if path in ids else None

    def last_commit_seconds(self, ref: str, path: str) -> int | None:
        """When ``ref``'s history last changed ``path`` (commit time, seconds)."""
        out = self.run("log", "-1", "--format=%ct", ref, "--", path, env=READ_ONLY).stdout.strip()
        return int(out) if out.isdigit() else None

    def dirty(self, *, refresh: bool = False) -> list[str]:
        """Paths whose working-tree state git would commit (untracked included). ``refresh`` lets
        git store the file stats it checked in its index, so the next look is cheap (a sync may;
        a status or a dry run must not write)."""
        env = {} if refresh else READ_ONLY
        out = self.git("status", "--porcelain", "-z", "--no-renames", "--untracked-files=all", env=env)
        return [entry[3:] for entry in out.split("\0") if len(entry) > 3]

    # --- remotes ---------------------------------------------------------------------------
    def remotes(self) -> dict[str, str]:
        out = self.run("config", "--get-regexp", r"^remote\..*\.url$", env=READ_ONLY).stdout
        found = {}
        for line in out.splitlines():
            key, _, url = line.partition(" ")
            found[key[len("remote.") : -len(".url")]] = url
        return found

    def resolve_remote(self, wanted: str | None, *, create: bool) -> RemoteTarget:
        """The remote named ``wanted`` (a remote of the repository, or a URL or path, added as a
        remote — ``origin`` when there is none yet); without ``wanted``, ``origin``."""
        remotes = self.remotes()
        if wanted is None:
            if "origin" in remotes:
                return RemoteTarget("origin", remotes["origin"])
            raise NoRemote(
                "no remote to sync with: set vaultGit.remote in config.json (a URL or path), "
                "pass --remote, or add one to the vault's repository (git remote add origin URL)"
            )
        if wanted in remotes:
            return RemoteTarget(wanted, remotes[wanted])
        for name, url in sorted(remotes.items()):
            if url == wanted or _same_location(url, wanted, self.root):
                return RemoteTarget(name, url)
        name = "origin" if "origin" not in remotes else _free_name(remotes)
        if create:
            result = self.run("remote", "add", name, wanted)
            if result.returncode != 0:
                raise SyncError(f"cannot add the remote {wanted}: {first_line(result.stderr)}")
        return RemoteTarget(name, wanted)


_EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"


def _free_name(remotes: Mapping[str, str]) -> str:
    for n in range(1, 1000):
        name = "memosite" if n == 1 else f"memosite-{n}"
        if name not in remotes:
            return name
    raise SyncError("too many remotes in the vault repository")


def _same_location(left: str, right: str, root: Path) -> bool:
    """Two spellings of one local path (``../remote.git`` and its absolute form)."""
    if "://" in left or "://" in right:
        return False
    try:
        return os.path.realpath(root / left) == os.path.realpath(root / right)
    except (OSError, ValueError):
        return False
