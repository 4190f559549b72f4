"""The git plumbing sync needs, over the vault's repository: refs, ancestry, diffs, blobs, remotes.

Every call runs real git (``git -C <vault> …``); failures the caller must see raise
:class:`SyncError` with git's own first line. Reads that may run while nothing is to be written
pass ``GIT_OPTIONAL_LOCKS=0`` so that looking never rewrites git's index.
"""

from __future__ import annotations

import os
import re
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
class CommitInfo:
    """One commit as history tells it: its id, author (``Name <email>``), author date (ISO) and
    commit time (seconds)."""

    sha: str
    author: str
    authored_at: str
    seconds: int

    @property
    def short(self) -> str:
        return self.sha[:7]


_COMMIT_FORMAT = "--format=%H%x00%an <%ae>%x00%aI%x00%ct"
# Reflog entries of commits this clone made itself (not those it moved to: fast-forwards, resets,
# checkouts, clones): git writes "commit: …", "commit (merge): …", "merge X: Merge made by …",
# "pull: Merge made by …", "cherry-pick: …", "revert: …", "rebase (pick): …" and the like.
_MADE_HERE = re.compile(r"^(?:commit|cherry-pick|revert|am)\b|Merge made by|\((?:pick|reword|edit|squash|fixup)\)")


@dataclass(frozen=True)
class MadeHere:
    """The commits a clone made itself (from its HEAD reflog). ``since`` is when the reflog begins
    when git has expired older entries (None: it goes back to the clone's start)."""

    commits: frozenset[str]
    since: int | None

    def made(self, commit: CommitInfo) -> bool | None:
        """True: made here; False: not; None: older than what the reflog still remembers."""
        if commit.sha in self.commits:
            return True
        return None if self.since is not None and commit.seconds < self.since else False


# Where a sync keeps what it fetched from a URL that is not (yet) a remote of the repository;
# removed when the sync ends, so a one-off sync leaves no remote and no ref behind.
ONE_OFF_REFS = "refs/memosite/one-off"


@dataclass(frozen=True)
class RemoteTarget:
    """The remote a sync talks to: its name in the vault repository and where it points.
    ``one_off``: a URL that is no remote of the repository (fetched and pushed by URL; ``name`` is
    the one it would get, were it kept)."""

    name: str
    url: str
    one_off: bool = False

    @property
    def location(self) -> str:
        """What ``git fetch``/``git push`` are given: the remote's name, or the URL itself."""
        return self.url if self.one_off else self.name

    @property
    def refs(self) -> str:
        """The prefix of the remote-tracking refs of its branches."""
        return ONE_OFF_REFS if self.one_off else f"refs/remotes/{self.name}"

    @property
    def label(self) -> str:
        """How reports name it: ``origin (URL)``, or only the URL of a one-off remote."""
        return self.url if self.one_off else f"{self.name} ({self.url})"

    def branch_label(self, branch: str) -> str:
        """How reports name one of its branches: ``origin/main``, or ``main of URL``."""
        return f"{branch} of {self.url}" if self.one_off else f"{self.name}/{branch}"


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

    def remote_heads(self, target: RemoteTarget) -> dict[str, str]:
        """``branch -> commit`` of ``target``'s remote-tracking refs as of the last fetch."""
        prefix = f"{target.refs}/"
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

    def _commits(self, *args: str) -> list[CommitInfo]:
        result = self.run("log", _COMMIT_FORMAT, *args, env=READ_ONLY)
        found = []
        for line in result.stdout.splitlines() if result.returncode == 0 else []:
            sha, author, at, seconds = [*line.split("\0"), "", "", ""][:4]
            if sha and seconds.isdigit():
                found.append(CommitInfo(sha, author, at, int(seconds)))
        return found

    def first_writer(self, blob: str, path: str) -> CommitInfo | None:
        """The commit reachable from HEAD that first gave ``path`` the content ``blob`` (a merge
        that produced it counts: a field-by-field merge writes a version of its own)."""
        rows = self._commits("-m", "--full-history", "--topo-order", f"--find-object={blob}", "HEAD", "--", path)
        return rows[-1] if rows else None

    def first_addition(self, path: str, refs: Sequence[str] = ("HEAD",)) -> CommitInfo | None:
        """The commit reachable from ``refs`` in which ``path`` first appeared."""
        rows = self._commits("-m", "--full-history", "--topo-order", "--diff-filter=A", *refs, "--", path)
        return rows[-1] if rows else None

    def last_removal(self, path: str) -> CommitInfo | None:
        """The latest commit reachable from HEAD that removed ``path``."""
        rows = self._commits("-m", "--full-history", "--topo-order", "--diff-filter=D", "HEAD", "--", path)
        return rows[0] if rows else None

    def made_here(self) -> MadeHere:
        """The commits this clone made itself, as its HEAD reflog (``.git/logs/HEAD``) remembers
        them: each line holds the old and new commit of HEAD, who moved it and when, and why."""
        try:
            lines = (self.git_dir / "logs" / "HEAD").read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            lines = []
        commits = set()
        for line in lines:
            head, _, subject = line.partition("\t")
            fields = head.split(" ")
            if len(fields) >= 2 and _MADE_HERE.search(subject):
                commits.add(fields[1])
        first = lines[0].partition("\t")[0].split(" ") if lines else []
        # The first entry of a reflog git never expired moves HEAD from nothing (the clone, the
        # first commit, the join); after an expiry the oldest one left says when memory begins.
        if not first or set(first[0]) == {"0"}:
            return MadeHere(frozenset(commits), None)
        since = next((int(f) for f in reversed(first[:-1]) if f.isdigit()), 0)
        return MadeHere(frozenset(commits), since)

    def blob_at(self, commit: str, path: str) -> str | None:
        """The blob id of ``path`` in ``commit`` (None when it holds no such file)."""
        return self.tree_blobs(commit, [path]).get(path)

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

    def resolve_remote(self, wanted: str | None) -> RemoteTarget:
        """The remote named ``wanted``: a remote of the repository, or one whose URL it is, or a
        URL or path that is none of them (a one-off target, named as it would be kept: ``origin``
        when there is none yet); without ``wanted``, ``origin``. Changes nothing."""
        remotes = self.remotes()
        if wanted is None:
            if "origin" in remotes:
                return RemoteTarget("origin", remotes["origin"])
            raise NoRemote(
                "no remote to sync with: memosite config set vaultGit.remote <url or path>, "
                "pass --remote, or add one to the vault's repository (git remote add origin URL)"
            )
        if wanted in remotes:
            return RemoteTarget(wanted, remotes[wanted])
        for name, url in sorted(remotes.items()):
            if url == wanted or _same_location(url, wanted, self.root):
                return RemoteTarget(name, url)
        name = "origin" if "origin" not in remotes else _free_name(remotes)
        return RemoteTarget(name, wanted, one_off=True)

    def keep_remote(self, target: RemoteTarget) -> RemoteTarget:
        """Make a one-off ``target`` a remote of the repository under its name, its fetched
        branches its remote-tracking refs."""
        result = self.run("remote", "add", target.name, target.url)
        if result.returncode != 0:
            raise SyncError(f"cannot add the remote {target.url}: {first_line(result.stderr)}")
        kept = RemoteTarget(target.name, target.url)
        moves = [f"update {kept.refs}/{branch} {sha}" for branch, sha in self.remote_heads(target).items()]
        if moves:
            self.git("update-ref", "--stdin", input="\n".join(moves) + "\n")
        self.forget_one_off()
        return kept

    def forget_one_off(self) -> None:
        """Remove what a one-off sync fetched (its refs; the objects stay until git's gc)."""
        listed = self.run("for-each-ref", "--format=%(refname)", f"{ONE_OFF_REFS}/", env=READ_ONLY).stdout.split()
        if listed:
            self.run("update-ref", "--stdin", input="".join(f"delete {ref}\n" for ref in listed))


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
