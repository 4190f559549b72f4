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

from memosite import gitcommand
from memosite.gitcommand import first_line, git_dir
from memosite.provenance import Actor
from memosite.sync.errors import NoRemote, SyncError
from memosite.vaultgit import git_env, run_git

READ_ONLY = {"GIT_OPTIONAL_LOCKS": "0"}
# Merges and fast-forwards run by sync (with no hook, as every git call of memosite's: its
# post-merge hook would wait for the lock sync holds): drivers that only report, so every file both
# sides changed is resolved here in one process, and what arrives is written as plain files (the
# allowlist refused any symlink before; this keeps one from being made even so).
MERGE_CONFIG = (
    "merge.memosite-record.driver=false",
    "merge.memosite-union.driver=false",
    "merge.memosite-file.driver=false",
    "merge.memosite-view.driver=false",
    "core.symlinks=false",
)


@dataclass(frozen=True)
class Change:
    """One path a diff reports: ``status`` A, M or D."""

    status: str
    path: str


@dataclass(frozen=True)
class Introduced:
    """A path a commit brought in (:meth:`Repo.introduced`): its mode and blob in the commit (mode
    ``000000``: removed), and its blob in each parent (zeros where a parent lacks it)."""

    commit: str
    parents: tuple[str, ...]
    path: str
    mode: str
    blob: str
    parent_blobs: tuple[str, ...]

    @property
    def removed(self) -> bool:
        return set(self.mode) == {"0"}

    @property
    def added(self) -> bool:
        """No parent held the path (a file new in this commit)."""
        return all(set(blob) == {"0"} for blob in self.parent_blobs)


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
# Where a fetch lands before memosite has checked what it brings (memosite.sync.incoming): only a
# commit that passed moves a remote-tracking branch, which a plain `git merge` would take.
INCOMING_REFS = "refs/memosite/incoming"


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
        """The prefix of the remote-tracking refs of its branches (what sync accepted)."""
        return ONE_OFF_REFS if self.one_off else f"refs/remotes/{self.name}"

    @property
    def fetched(self) -> str:
        """The prefix of the refs a fetch writes, before what they bring is checked."""
        return f"{INCOMING_REFS}/{'-one-off' if self.one_off else self.name}"

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
        command: str,
        *options: str,
        args: Sequence[str] = (),
        paths: Sequence[str] | None = None,
        config: Sequence[str] = (),
        actor: Actor | None = None,
        input: str | None = None,
        env: Mapping[str, str] | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """``git command options`` in the vault (values only in ``args``/``paths``: see
        :mod:`memosite.gitcommand`)."""
        return run_git(
            self.root,
            command,
            *options,
            args=args,
            paths=paths,
            config=config,
            actor=actor,
            input=input,
            env={**self.env, **(env or {})},
        )

    def git(
        self,
        command: str,
        *options: str,
        args: Sequence[str] = (),
        paths: Sequence[str] | None = None,
        config: Sequence[str] = (),
        input: str | None = None,
        env: Mapping[str, str] | None = None,
    ) -> str:
        """stdout of a git command that must succeed."""
        result = self.run(command, *options, args=args, paths=paths, config=config, input=input, env=env)
        if result.returncode != 0:
            raise SyncError(f"git {command} failed: {first_line(result.stderr or result.stdout)}")
        return result.stdout

    def read_bytes(self, command: str, *options: str, args: Sequence[str] = (), input: bytes | None = None) -> bytes:
        result = gitcommand.run_git_bytes(
            self.root, command, *options, args=args, input=input, env=git_env(None, {**READ_ONLY, **self.env})
        )
        if result.returncode != 0:
            raise SyncError(f"git {command} failed: {first_line(result.stderr.decode('utf-8', 'replace'))}")
        return result.stdout

    # --- refs ------------------------------------------------------------------------------
    @property
    def git_dir(self) -> Path:
        return git_dir(self.root)

    def rev(self, ref: str) -> str | None:
        result = self.run("rev-parse", "--verify", "-q", args=[f"{ref}^{{commit}}"], env=READ_ONLY)
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
        return self.run("merge-base", "--is-ancestor", args=[older, newer], env=READ_ONLY).returncode == 0

    def merge_base(self, left: str, right: str) -> str | None:
        result = self.run("merge-base", args=[left, right], env=READ_ONLY)
        return result.stdout.strip() or None if result.returncode == 0 else None

    def count(self, range_: str) -> int:
        return int(self.git("rev-list", "--count", args=[range_], env=READ_ONLY).strip() or 0)

    def remote_heads(self, target: RemoteTarget, *, fetched: bool = False) -> dict[str, str]:
        """``branch -> commit`` of ``target``'s remote-tracking refs as sync last accepted them (with
        ``fetched``: as the last fetch found them, checked or not)."""
        prefix = f"{target.fetched if fetched else target.refs}/"
        out = self.git("for-each-ref", "--format=%(objectname) %(refname)", args=[prefix], env=READ_ONLY)
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
        return self.git("rev-list", "--parents", "--max-count=1", args=[commit], env=READ_ONLY).split()[1:]

    # --- content ---------------------------------------------------------------------------
    def diff(self, old: str | None, new: str | None, *, cached: bool = False) -> list[Change]:
        """What changed from ``old`` to ``new`` (``new`` None with ``cached``: the staged tree)."""
        staged = ("--cached",) if cached else ()
        commits = [old or _EMPTY_TREE, *([new] if new is not None else [])]
        options = ("--name-status", "-z", "--no-renames", "--no-ext-diff", "--no-textconv", *staged)
        fields = self.git("diff", *options, args=commits, env=READ_ONLY).split("\0")
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
        out = self.git("ls-tree", "-z", "--full-tree", args=[commit], paths=paths, env=READ_ONLY)
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
        out = self.run("log", "--max-count=1", "--format=%ct", args=[ref], paths=[path], env=READ_ONLY).stdout.strip()
        return int(out) if out.isdigit() else None

    def _commits(self, *options: str, refs: Sequence[str], path: str) -> list[CommitInfo]:
        history = ("-m", "--full-history", "--topo-order", *options)
        result = self.run("log", _COMMIT_FORMAT, *history, args=refs, paths=[path], env=READ_ONLY)
        found = []
        for line in result.stdout.splitlines() if result.returncode == 0 else []:
            sha, author, at, seconds = [*line.split("\0"), "", "", ""][:4]
            if sha and seconds.isdigit():
                found.append(CommitInfo(sha, author, at, int(seconds)))
        return found

    def first_writer(self, blob: str, path: str) -> CommitInfo | None:
        """The commit reachable from HEAD that first gave ``path`` the content ``blob`` (a merge
        that produced it counts: a field-by-field merge writes a version of its own)."""
        rows = self._commits(f"--find-object={blob}", refs=["HEAD"], path=path)
        return rows[-1] if rows else None

    def first_addition(self, path: str, refs: Sequence[str] = ("HEAD",)) -> CommitInfo | None:
        """The commit reachable from ``refs`` in which ``path`` first appeared."""
        rows = self._commits("--diff-filter=A", refs=refs, path=path)
        return rows[-1] if rows else None

    def last_removal(self, path: str) -> CommitInfo | None:
        """The latest commit reachable from HEAD that removed ``path``."""
        rows = self._commits("--diff-filter=D", refs=["HEAD"], path=path)
        return rows[0] if rows else None

    def introduced(self, include: Sequence[str], exclude: Sequence[str] = ()) -> list[Introduced]:
        """Every path each commit reachable from ``include`` (and not from ``exclude``) brought in:
        for an ordinary commit what it changed from its parent, for a merge what differs from every
        parent (what the merge itself made); deletions included. Oldest commit first."""
        if not include:
            return []
        walk = ("--reverse", "--topo-order", "--raw", "-z", "--no-renames", "--no-abbrev", "-c", "--root")
        revisions = [*include, *(f"^{commit}" for commit in exclude)]
        out = self.git(
            "log", "--format=%x01%H %P", *walk, "--no-ext-diff", "--no-textconv", args=revisions, env=READ_ONLY
        )
        found: list[Introduced] = []
        commit, parents = "", tuple[str, ...]()
        tokens = iter(out.split("\0"))
        for token in tokens:
            token = token.lstrip("\n")
            if token.startswith("\x01"):
                commit, *rest = token[1:].split()
                parents = tuple(rest)
            elif token.startswith(":") and commit:
                path = next(tokens, "")
                columns = token.lstrip(":").split()
                count = token.index(token.lstrip(":")) + 1  # one mode per parent, then the result's
                modes, blobs = columns[:count], columns[count : 2 * count]
                if len(modes) == count and len(blobs) == count:
                    found.append(Introduced(commit, parents, path, modes[-1], blobs[-1], tuple(blobs[:-1])))
        return found

    def held(self, path: str, blob: str, refs: Sequence[str]) -> bool:
        """Whether ``path`` had the content ``blob`` in some commit reachable from ``refs`` (a
        merge that produced it counts)."""
        found = self.run(
            "log", "--format=%H", "--max-count=1", "-m", f"--find-object={blob}", args=refs, paths=[path], env=READ_ONLY
        )
        return found.returncode == 0 and bool(found.stdout.strip())

    def blame_times(self, ref: str, path: str) -> dict[str, int]:
        """Each line of ``path`` in ``ref`` and the commit time (seconds) of the commit that brought
        it in (``git blame``); empty when ``ref`` holds no such file."""
        result = self.run("blame", "--porcelain", args=[ref], paths=[path], env=READ_ONLY)
        if result.returncode != 0:
            return {}
        times: dict[str, int] = {}
        lines: dict[str, int] = {}
        commit = ""
        for line in result.stdout.split("\n"):
            if line.startswith("\t"):
                text = line[1:]
                seconds = times.get(commit)
                if seconds is not None and (text not in lines or seconds < lines[text]):
                    lines[text] = seconds
            elif line.startswith("committer-time "):
                times[commit] = int(line.split(" ", 1)[1])
            elif len(line) > 40 and " " in line and all(c in "0123456789abcdef" for c in line.split(" ", 1)[0]):
                commit = line.split(" ", 1)[0]
        return lines

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

    def cloned(self) -> bool:
        """Whether this repository was made by ``git clone`` (its HEAD reflog begins there)."""
        try:
            with (self.git_dir / "logs" / "HEAD").open(encoding="utf-8", errors="replace") as log:
                first = log.readline()
        except OSError:
            return False
        return first.partition("\t")[2].startswith("clone:")

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
        out = self.run("config", "--get-regexp", args=[r"^remote\..*\.url$"], env=READ_ONLY).stdout
        found = {}
        for line in out.splitlines():
            key, _, url = line.partition(" ")
            found[key[len("remote.") : -len(".url")]] = url
        return found

    def resolve_remote(self, wanted: str | None) -> RemoteTarget:
        """The remote named ``wanted``: a remote of the repository, or one whose URL it is, or a
        URL or path that is none of them (a one-off target, named as it would be kept: ``origin``
        when there is none yet); without ``wanted``, ``origin``. Changes nothing. INVALID_ARGUMENTS
        for a value git would read as an option or as a command to run (``--upload-pack=…``,
        ``ext::…``)."""
        if wanted is not None:
            gitcommand.remote_location(wanted)
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
        result = self.run("remote", "add", args=[target.name, target.url])
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
        self.forget_refs(ONE_OFF_REFS)

    def forget_refs(self, prefix: str) -> None:
        """Remove every ref under ``prefix`` (one ``update-ref`` transaction)."""
        listed = self.run("for-each-ref", "--format=%(refname)", args=[f"{prefix}/"], env=READ_ONLY).stdout.split()
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
