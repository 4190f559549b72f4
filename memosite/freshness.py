"""Is a record still true of the code? Citations pinned at write time, verdicts at verify time.

A record may cite code: ``cites: [{path, lines?, sha256, commit?}]`` — a file of the product
repository (relative to its root), optionally a span of lines (1-based, inclusive), the sha256 of
those exact bytes when the record was written, and the repository's commit then. :func:`pin_cites`
reads the cited lines and pins them; :func:`judge_record` gives a record its verdict now:

* **fresh** — every cited span hashes as pinned (a span found unchanged a few lines away counts,
  and says where it moved);
* **drifted** — a cited file or span changed: the first changed lines and, in a git repository,
  the commits that touched the file since the pinned commit;
* **missing** — a cited file is gone (with the new name git reports for a likely rename).

Reading the repository and git is all this module does; verdicts are stored in the index by the
caller, never written into the record.
"""

from __future__ import annotations

import difflib
import hashlib
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from memosite.errors import InvalidArguments
from memosite.gitcommand import is_commit_id, run_git, run_git_bytes

Verdict = Literal["fresh", "drifted", "missing"]
VERDICTS: tuple[Verdict, ...] = ("fresh", "drifted", "missing")
_SPEC_RE = re.compile(r"^(?P<path>.+?)(?::(?P<start>\d+)(?:-(?P<end>\d+))?)?$")
_SHA256_RE = re.compile(r"^[0-9a-f]{64}$")
MAX_COMMITS_REPORTED = 10


@dataclass(frozen=True)
class Cite:
    """One pinned citation."""

    path: str
    lines: tuple[int, int] | None
    sha256: str
    commit: str | None = None

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"path": self.path}
        if self.lines is not None:
            data["lines"] = f"{self.lines[0]}-{self.lines[1]}"
        data["sha256"] = self.sha256
        if self.commit:
            data["commit"] = self.commit
        return data

    @property
    def label(self) -> str:
        return f"{self.path}:{self.lines[0]}-{self.lines[1]}" if self.lines else self.path


@dataclass
class CiteVerdict:
    cite: Cite
    verdict: Verdict
    moved_to: tuple[int, int] | None = None  # an unchanged span found at other lines
    changed_lines: tuple[int, int] | None = None  # the first changed lines of the current file
    commits: list[str] = field(default_factory=list)  # "<short sha> <subject>" since the pin
    renamed_to: str | None = None
    uncommitted: bool = False  # the file differs from the commit checked at: changes not committed yet

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"cite": self.cite.label, "verdict": self.verdict}
        if self.uncommitted:
            data["uncommitted"] = True
        if self.moved_to:
            data["movedTo"] = f"{self.moved_to[0]}-{self.moved_to[1]}"
        if self.changed_lines:
            data["changedLines"] = f"{self.changed_lines[0]}-{self.changed_lines[1]}"
        if self.commits:
            data["commits"] = self.commits
        if self.renamed_to:
            data["renamedTo"] = self.renamed_to
        return data


@dataclass
class RecordVerdict:
    """A record's verdict: the worst of its citations' (missing over drifted over fresh)."""

    path: str
    project: str
    kind: str
    id: str
    title: str
    cites: list[CiteVerdict]

    @property
    def verdict(self) -> Verdict:
        found = {c.verdict for c in self.cites}
        return "missing" if "missing" in found else "drifted" if "drifted" in found else "fresh"

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind,
            "project": self.project,
            "path": self.path,
            "title": self.title,
            "verdict": self.verdict,
            "cites": [c.to_json() for c in self.cites],
        }


# --- citations in frontmatter ------------------------------------------------------------


def parse_cite_spec(spec: str) -> tuple[str, tuple[int, int] | None]:
    """``src/pay/client.py:40-72`` (or ``:40``, or a whole file) → path and line span."""
    if not isinstance(spec, str) or not spec.strip() or "\x00" in spec:
        raise InvalidArguments(f"invalid cite {spec!r}: expected PATH or PATH:START-END")
    match = _SPEC_RE.match(spec.strip())
    assert match is not None
    path = clean_cite_path(match.group("path"))
    if match.group("start") is None:
        return path, None
    start = int(match.group("start"))
    end = int(match.group("end") or start)
    if start < 1 or end < start:
        raise InvalidArguments(f"invalid cite {spec!r}: lines run from 1 and the end is not before the start")
    return path, (start, end)


def clean_cite_path(raw: str) -> str:
    path = raw.strip().replace("\\", "/")
    while path.startswith("./"):
        path = path[2:]
    parts = [p for p in path.split("/") if p not in ("", ".")]
    if not parts or ".." in parts or raw.strip().startswith("/"):
        raise InvalidArguments(f"invalid cite path {raw!r}: give a path inside the repository, relative to its root")
    return "/".join(parts)


def _parse_lines(value: Any) -> tuple[int, int] | None:
    if value in (None, ""):
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        return (value, value)
    if isinstance(value, (list, tuple)) and len(value) == 2 and all(isinstance(v, int) for v in value):
        return (int(value[0]), int(value[1]))
    if isinstance(value, str):
        _, lines = parse_cite_spec(f"x:{value.strip()}")
        return lines
    raise InvalidArguments(f"invalid cites lines {value!r}: expected START-END")


def read_cites(frontmatter: Mapping[str, Any]) -> list[Cite]:
    """The record's pinned citations; INVALID_ARGUMENTS for a malformed one."""
    raw = frontmatter.get("cites")
    if raw in (None, []):
        return []
    if not isinstance(raw, list):
        raise InvalidArguments("invalid cites: expected a list of {path, lines, sha256, commit}")
    cites = []
    for n, item in enumerate(raw):
        if not isinstance(item, Mapping) or not isinstance(item.get("path"), str):
            raise InvalidArguments(f"invalid cites[{n}]: expected {{path, lines, sha256, commit}}")
        sha = str(item.get("sha256") or "")
        if not _SHA256_RE.match(sha):
            raise InvalidArguments(f"invalid cites[{n}].sha256: expected 64 hex digits (pin it with --cite)")
        commit = item.get("commit")
        if commit and not is_commit_id(commit):
            # A commit reaches git's command line: anything but hex digits (``--output=<path>``) is refused here.
            raise InvalidArguments(f"invalid cites[{n}].commit {str(commit)[:80]!r}: expected 7 to 64 hex digits")
        cites.append(
            Cite(clean_cite_path(item["path"]), _parse_lines(item.get("lines")), sha, str(commit) if commit else None)
        )
    return cites


# --- reading the repository --------------------------------------------------------------


def split_lines(data: bytes) -> list[bytes]:
    """Lines with their endings, as a text editor numbers them."""
    return data.splitlines(keepends=True)


def span_digest(lines: Sequence[bytes], span: tuple[int, int] | None, whole: bytes) -> str | None:
    """sha256 of the cited bytes, or None when the span runs past the file's end."""
    if span is None:
        return hashlib.sha256(whole).hexdigest()
    start, end = span
    if end > len(lines):
        return None
    return hashlib.sha256(b"".join(lines[start - 1 : end])).hexdigest()


class Repository:
    """A product repository as verification reads it: files (cached per run) and git."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._files: dict[str, bytes | None] = {}
        self._git: bool | None = None
        self._head: str | None = None
        self._logs: dict[tuple[str, str], list[str]] = {}
        self._rename_maps: dict[str, dict[str, str]] = {}
        self._old: dict[tuple[str, str], bytes | None] = {}
        self._changed: frozenset[str] | None = None
        self._known_commits: dict[str, bool] = {}

    def read(self, path: str) -> bytes | None:
        if path not in self._files:
            target = self.root / path
            try:
                resolved = target.resolve()
                resolved.relative_to(self.root.resolve())
                self._files[path] = resolved.read_bytes() if resolved.is_file() else None
            except (OSError, ValueError):
                self._files[path] = None
        return self._files[path]

    def from_working_directory(self, path: str) -> str | None:
        """``path`` read from the current directory, as a path from the root, when the current
        directory lies inside the repository and holds that file."""
        try:
            here = Path.cwd().resolve().relative_to(self.root.resolve())
        except (OSError, ValueError):
            return None
        if not here.parts:
            return None
        candidate = (here / path).as_posix()
        return candidate if self.read(candidate) is not None else None

    def _run(
        self, command: str, *options: str, args: Sequence[str] = (), paths: Sequence[str] | None = None
    ) -> str | None:
        try:
            done = run_git(self.root, command, *options, args=args, paths=paths)
        except OSError:
            return None
        return done.stdout if done.returncode == 0 else None

    @property
    def is_git(self) -> bool:
        if self._git is None:
            self._git = self._run("rev-parse", "--is-inside-work-tree") is not None
        return self._git

    @property
    def head(self) -> str | None:
        if self._head is None and self.is_git:
            out = self._run("rev-parse", "--verify", "-q", args=["HEAD"])
            self._head = out.strip() if out else ""
        return self._head or None

    @property
    def changed_paths(self) -> frozenset[str]:
        """Files of the working tree that differ from HEAD (edited, staged, deleted, renamed or
        new): what a verdict found there is not yet in any commit."""
        if self._changed is None:
            changed: set[str] = set()
            out = self._run("status", "--porcelain=v1", "-z", "--untracked-files=all") if self.is_git else None
            fields = iter((out or "").split("\0"))
            for entry in fields:
                if len(entry) < 4:
                    continue
                changed.add(entry[3:])
                if entry[0] in "RC":  # a rename's or copy's source follows as its own field
                    changed.add(next(fields, ""))
            self._changed = frozenset(changed)
        return self._changed

    def has_commits(self, commits: Iterable[str]) -> dict[str, bool]:
        """Which of ``commits`` this repository holds (one git call for the ones not asked yet)."""
        wanted = [c for c in dict.fromkeys(commits) if c not in self._known_commits]
        if wanted and self.is_git:
            try:
                done = run_git(
                    self.root, "cat-file", "--batch-check", input="".join(f"{c}^{{commit}}\n" for c in wanted)
                )
                answers = done.stdout.splitlines() if done.returncode == 0 else []
            except OSError:
                answers = []
            for commit, answer in zip(wanted, answers, strict=False):
                self._known_commits[commit] = not answer.endswith(" missing")
        return {c: self._known_commits.get(c, False) for c in commits}

    def commits_since(self, commit: str, path: str) -> list[str]:
        key = (commit, path)
        if key not in self._logs:
            out = self._run(
                "log", f"--max-count={MAX_COMMITS_REPORTED}", "--format=%h %s", args=[f"{commit}..HEAD"], paths=[path]
            )
            self._logs[key] = [line for line in (out or "").splitlines() if line.strip()]
        return self._logs[key]

    def renamed(self, commit: str, path: str) -> str | None:
        """The new name git gives ``path`` since ``commit`` (committed or staged renames), if any."""
        if commit not in self._rename_maps:
            # The working tree against the commit: a `git mv` not yet committed counts too.
            out = self._run("diff", "--name-status", "-M", args=[commit], paths=[])
            renames: dict[str, str] = {}
            for line in (out or "").splitlines():
                parts = line.split("\t")
                if len(parts) == 3 and parts[0].startswith("R"):
                    renames[parts[1]] = parts[2]
            self._rename_maps[commit] = renames
        return self._rename_maps[commit].get(path)

    def at(self, commit: str, path: str) -> bytes | None:
        key = (commit, path)
        if key not in self._old:
            try:
                done = run_git_bytes(self.root, "cat-file", "blob", args=[f"{commit}:{path}"])
                self._old[key] = done.stdout if done.returncode == 0 else None
            except OSError:
                self._old[key] = None
        return self._old[key]


def pin_cites(repo: Repository, specs: Iterable[str | Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Citations of the repository as it is now, ready for frontmatter. INVALID_ARGUMENTS when a
    file is missing or a span runs past its end."""
    pinned = []
    for spec in specs:
        if isinstance(spec, Mapping):
            path = clean_cite_path(str(spec.get("path") or ""))
            lines = _parse_lines(spec.get("lines"))
        else:
            path, lines = parse_cite_spec(spec)
        data = repo.read(path)
        if data is None:
            # A path given from a subdirectory of the repository means that subdirectory's file.
            path = repo.from_working_directory(path) or path
            data = repo.read(path)
        if data is None:
            raise InvalidArguments(
                f"cannot cite {path}: no such file in the repository (paths are relative to its root)"
            )
        digest = span_digest(split_lines(data), lines, data)
        if digest is None:
            count = len(split_lines(data))
            raise InvalidArguments(f"cannot cite {path}:{lines[0]}-{lines[1]}: the file has {count} lines")  # type: ignore[index]
        cite = Cite(path, lines, digest, repo.head)
        pinned.append(cite.to_json())
    return pinned


def repin_spec(repo: Repository, cite: Cite) -> dict[str, Any]:
    """Where a citation points now, for a person who confirmed the record still holds: the file
    under the name git gave it (a rename), and the span where its unchanged lines moved, else the
    same line numbers (their new content is what the person confirmed)."""
    path = cite.path
    if repo.read(path) is None and cite.commit and repo.is_git:
        path = repo.renamed(cite.commit, path) or path
    data = repo.read(path)
    if data is None:
        raise InvalidArguments(
            f"cannot re-pin {cite.label}: the file is gone and git saw no rename;"
            f" drop that citation with --drop {cite.path}"
        )
    lines = cite.lines
    if lines is not None:
        current = split_lines(data)
        if span_digest(current, lines, data) != cite.sha256:
            lines = _find_moved(current, lines, cite.sha256) or lines
    return {"path": path, "lines": f"{lines[0]}-{lines[1]}" if lines else None}


# --- judging -------------------------------------------------------------------------------


def _find_moved(lines: Sequence[bytes], span: tuple[int, int], sha: str) -> tuple[int, int] | None:
    """Where a span of the same length and bytes now sits in the file, if anywhere."""
    length = span[1] - span[0] + 1
    for start in range(0, len(lines) - length + 1):
        if hashlib.sha256(b"".join(lines[start : start + length])).hexdigest() == sha:
            return (start + 1, start + length)
    return None


def _first_change(
    old: bytes | None, new_lines: Sequence[bytes], span: tuple[int, int] | None
) -> tuple[int, int] | None:
    """The first changed lines of the current file inside (or next to) the cited span."""
    if old is None:
        return span
    old_lines = split_lines(old)
    start, stop = (span[0] - 1, span[1]) if span is not None else (0, len(old_lines))  # old indices [start, stop)
    matcher = difflib.SequenceMatcher(None, old_lines, list(new_lines), autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        touches = (i1 < stop and i2 > start) if i1 < i2 else (start < i1 < stop)
        if touches:
            return (j1 + 1, max(j1 + 1, j2))
    return span


def judge_cite(repo: Repository, cite: Cite) -> CiteVerdict:
    verdict = _judge(repo, cite)
    if verdict.verdict != "fresh" or verdict.moved_to:
        paths = {cite.path, verdict.renamed_to} - {None}
        verdict.uncommitted = bool(paths & repo.changed_paths)
    return verdict


def _judge(repo: Repository, cite: Cite) -> CiteVerdict:
    data = repo.read(cite.path)
    if data is None:
        renamed = repo.renamed(cite.commit, cite.path) if cite.commit and repo.is_git else None
        return CiteVerdict(cite, "missing", renamed_to=renamed)
    lines = split_lines(data)
    if span_digest(lines, cite.lines, data) == cite.sha256:
        return CiteVerdict(cite, "fresh")
    if cite.lines is not None:
        moved = _find_moved(lines, cite.lines, cite.sha256)
        if moved is not None:
            return CiteVerdict(cite, "fresh", moved_to=moved)
    verdict = CiteVerdict(cite, "drifted")
    if cite.commit and repo.is_git:
        verdict.changed_lines = _first_change(repo.at(cite.commit, cite.path), lines, cite.lines)
        verdict.commits = repo.commits_since(cite.commit, cite.path)
    else:
        verdict.changed_lines = cite.lines
    return verdict
