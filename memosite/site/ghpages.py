"""Publishing the built site to a branch of a git remote, as ``mkdocs gh-deploy`` does.

The site is built (and scanned) first; only a successful build is committed. The commit is made
in a throwaway repository whose work tree is the built site, on top of the branch's current head
(so the branch keeps its history and the push is a fast-forward), then pushed. The user's own
repository and working tree are never touched.
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memosite.errors import InvalidArguments, StorageError
from memosite.gitcommand import branch_name, remote_location, run_git
from memosite.schema import format_iso, utc_now
from memosite.site.build import BuildResult
from memosite.site.engines import build_with_engine
from memosite.vault import Vault

_FALLBACK_IDENTITY = {
    "GIT_AUTHOR_NAME": "memosite",
    "GIT_AUTHOR_EMAIL": "memosite@localhost",
    "GIT_COMMITTER_NAME": "memosite",
    "GIT_COMMITTER_EMAIL": "memosite@localhost",
}


@dataclass
class GhPagesResult:
    remote: str
    branch: str
    commit: str
    parent: str | None
    build: BuildResult

    def to_json(self) -> dict[str, Any]:
        return {
            "remote": self.remote,
            "branch": self.branch,
            "commit": self.commit,
            "parent": self.parent,
            "build": self.build.to_json(),
        }


def _git(
    command: str,
    *options: str,
    args: Sequence[str] = (),
    paths: Sequence[str] | None = None,
    cwd: Path | None = None,
    scope: tuple[Path, Path] | None = None,
    env: dict[str, str] | None = None,
    check: bool = True,
) -> subprocess.CompletedProcess[str]:
    """git through memosite's guarded runner (values in ``args``/``paths`` never read as options);
    ``scope`` is the throwaway repository and the built site (``--git-dir``/``--work-tree``)."""
    git_dir, work_tree = scope if scope is not None else (None, None)
    try:
        done = run_git(cwd, command, *options, args=args, paths=paths, env=env, git_dir=git_dir, work_tree=work_tree)
    except FileNotFoundError as exc:
        raise StorageError("git is not installed (needed for --gh-pages)") from exc
    if check and done.returncode != 0:
        detail = (done.stderr or done.stdout).strip().splitlines()
        raise StorageError(f"git {command} failed: {detail[-1] if detail else done.returncode}")
    return done


def _looks_like_location(remote: str) -> bool:
    return "://" in remote or remote.startswith(("git@", "/", "./", "../", "~")) or Path(remote).exists()


def resolve_remote(remote: str, search: Sequence[Path]) -> str:
    """A remote URL or path as given, or the URL of a named remote of the first repository in
    ``search`` (the working directory, then the vault) that has it."""
    remote_location(remote)
    if _looks_like_location(remote):
        return str(Path(remote).expanduser()) if remote.startswith("~") else remote
    for directory in search:
        if not directory.is_dir():
            continue
        found = _git("remote", "get-url", args=[remote], cwd=directory, check=False)
        if found.returncode == 0 and found.stdout.strip():
            return found.stdout.strip()
    places = ", ".join(str(d) for d in search)
    raise InvalidArguments(f"no git remote named {remote!r} in {places}; pass a URL or path with --remote")


_GITHUB_REMOTE = re.compile(r"github\.com[:/](?P<owner>[^/]+)/(?P<repo>[^/]+?)(?:\.git)?/?$")


def github_pages_url(remote_url: str) -> str | None:
    """Where GitHub Pages serves a repository's site, or None for a non-GitHub remote."""
    match = _GITHUB_REMOTE.search(remote_url)
    if match is None:
        return None
    owner, repo = match["owner"], match["repo"]
    if repo.lower() == f"{owner.lower()}.github.io":
        return f"https://{repo.lower()}/"
    return f"https://{owner.lower()}.github.io/{repo}/"


def _identity_env() -> dict[str, str]:
    env = dict(os.environ)
    configured = _git("config", "--get", args=["user.email"], check=False).stdout.strip()
    if not configured:
        for key, value in _FALLBACK_IDENTITY.items():
            env.setdefault(key, value)
    return env


def publish_gh_pages(
    vault: Vault,
    *,
    remote: str = "origin",
    branch: str = "gh-pages",
    message: str | None = None,
    config_file: str | Path | None = None,
    strict: bool = False,
    projects: Sequence[str] | None = None,
    site_url: str | None = None,
    cwd: Path | None = None,
    site_name: str | None = None,
    include_pending: bool = False,
    engine: str = "mkdocs",
) -> GhPagesResult:
    """Build the site and commit it as the new head of ``branch`` on ``remote``, then push.

    Without ``site_url``, a GitHub remote's Pages address is used (if the config has none).
    """
    branch_name(branch)
    url = resolve_remote(remote, [cwd or Path.cwd(), vault.root])
    heads = _git("ls-remote", "--heads", args=[url, f"refs/heads/{branch}"], check=False)
    if heads.returncode != 0:
        detail = heads.stderr.strip().splitlines()
        raise StorageError(f"cannot reach git remote {remote!r}: {detail[-1] if detail else 'unknown error'}")
    parent = heads.stdout.split()[0] if heads.stdout.strip() else None
    with tempfile.TemporaryDirectory(prefix="memosite-ghpages-") as tmp:
        site = Path(tmp) / "site"
        result = build_with_engine(
            vault,
            engine,
            out_dir=site,
            config_file=config_file,
            strict=strict,
            projects=projects,
            site_url=site_url,
            fallback_site_url=github_pages_url(url),
            site_name=site_name,
            include_pending=include_pending,
        )
        (site / ".nojekyll").touch()  # GitHub Pages would otherwise drop paths starting with "_"
        git_dir = Path(tmp) / "repo.git"
        _git("init", "--quiet", "--bare", args=[str(git_dir)])
        scoped = (git_dir, site)
        if parent is not None:
            _git("fetch", "--quiet", "--depth=1", args=[url, f"refs/heads/{branch}"], scope=scoped)
        _git("add", "--all", "--force", paths=["."], scope=scoped)
        tree = _git("write-tree", scope=scoped).stdout.strip()
        text = message or (
            f"memosite: publish {result.records} records of {', '.join(result.projects) or 'no project'}"
            f" ({format_iso(utc_now())})"
        )
        parents = ["-p", parent] if parent is not None else []
        commit = _git(
            "commit-tree", "-m", text, *parents, args=[tree], scope=scoped, env=_identity_env()
        ).stdout.strip()
        _git("push", "--quiet", args=[url, f"{commit}:refs/heads/{branch}"], scope=scoped)
    return GhPagesResult(remote=url, branch=branch, commit=commit, parent=parent, build=result)
