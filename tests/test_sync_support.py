"""The harness of the sync tests: machines (vaults) that share one bare remote, all real git.

``Team`` makes the bare remote and the machines in ``tmp_path``; each machine is a vault whose
``config.json`` turns vault git on and points ``vaultGit.remote`` at the bare repository. Git runs
with no identity of its own (HOME is the test's, the system config is off), so commits fall back
to ``memosite`` unless a test configures one.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from memosite.settings import MACHINE_FILE
from memosite.store import upsert_record
from memosite.sync.run import sync_vault
from memosite.vault import Vault

P = "demo"
TRAP = "projects/demo/traps/lock-order.md"
GIT_ENV = ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL", "EMAIL", "GIT_DIR")


def isolate_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in GIT_ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))


def git(root: Path, *args: str, check: bool = True) -> str:
    result = subprocess.run(
        ["git", "-C", str(root), *args], capture_output=True, text=True, encoding="utf-8", check=False
    )
    if check and result.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed: {result.stderr}")
    return result.stdout


def write_config(root: Path, **vault_git: Any) -> None:
    """A new vault's config.json as an older memosite kept it, vault git settings included: the
    first use moves them into this machine's config.local.json."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "config.json").write_text(json.dumps({"vaultGit": {"enabled": True, **vault_git}}), encoding="utf-8")


def write_machine_settings(root: Path, **vault_git: Any) -> None:
    """This machine's vault git settings, by hand, in a vault that exists (replacing them all)."""
    path = root / MACHINE_FILE
    data = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    data["vaultGit"] = {"enabled": True, **vault_git}
    path.write_text(json.dumps(data), encoding="utf-8")


def worktree_files(root: Path) -> dict[str, bytes]:
    """Every file git would track in a vault: all but ``.git``, the disposable ``.memosite``
    contents (tombstones excepted) and this machine's settings (``config.local.json``)."""
    found = {}
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root).as_posix()
        if not path.is_file() or relative.startswith(".git/") or relative == MACHINE_FILE:
            continue
        if relative.startswith(".memosite/") and relative != ".memosite/tombstones.jsonl":
            continue
        found[relative] = path.read_bytes()
    return found


@dataclass
class Team:
    """A bare remote and the machines syncing with it."""

    base: Path
    remote: Path
    vaults: dict[str, Vault] = field(default_factory=dict)

    def machine(self, name: str, **vault_git: Any) -> Vault:
        root = self.base / name
        write_config(root, **{"remote": str(self.remote), **vault_git})
        vault = Vault.open(root)
        self.vaults[name] = vault
        return vault

    def close(self) -> None:
        for vault in self.vaults.values():
            vault.close()


def trap(
    vault: Vault,
    body: str = "Take locks in id order.\n",
    slug: str = "lock-order",
    *,
    now: datetime | None = None,
    **fm: object,
) -> str:
    result = upsert_record(
        vault,
        P,
        kind="trap",
        slug=slug,
        body=body,
        frontmatter={"title": "Lock order", **fm},
        allow_duplicate=True,
        now=now,
    )
    return result.path


def synced_pair(team: Team) -> tuple[Vault, Vault]:
    """Machines a and b holding the same lock-order trap."""
    a, b = team.machine("a"), team.machine("b")
    trap(a)
    sync_vault(a)
    sync_vault(b)
    return a, b


def same_everywhere(*vaults: Vault) -> None:
    heads = {git(v.root, "rev-parse", "HEAD").strip() for v in vaults}
    assert len(heads) == 1
    files = [worktree_files(v.root) for v in vaults]
    for other in files[1:]:
        differing = sorted(p for p in set(other) | set(files[0]) if other.get(p) != files[0].get(p))
        assert differing == [], [git(v.root, "status", "--porcelain") for v in vaults]
    for vault in vaults:
        assert git(vault.root, "status", "--porcelain") == ""
        assert not any(b"<<<<<<<" in data for data in files[0].values())


Entry = tuple[str, bytes] | None  # (git mode, content; for a gitlink the commit id) or None: remove


def push_forged(
    team: Team, entries: dict[str, Entry], message: str = "hand-made commit", *, date: str | None = None
) -> str:
    """What an attacker with push access does: a commit made with git's plumbing (any path, mode or
    content, whatever attributes would say) on top of the remote's main, pushed there. ``date``
    sets its author and committer date (``@<seconds> +0000``). Returns the commit."""
    store = team.base / "mallory.git"
    if not store.exists():
        git(team.base, "init", "-q", "--bare", str(store))
    git(store, "fetch", "-q", str(team.remote), "+refs/heads/main:refs/heads/main")
    index = team.base / "mallory.index"
    env = {**os.environ, "GIT_INDEX_FILE": str(index)}
    env.update({"GIT_AUTHOR_NAME": "Mallory", "GIT_AUTHOR_EMAIL": "m@example.org"})
    env.update({"GIT_COMMITTER_NAME": "Mallory", "GIT_COMMITTER_EMAIL": "m@example.org"})
    if date is not None:
        env.update({"GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date})

    def run(*args: str, input: bytes | None = None) -> str:
        done = subprocess.run(["git", "-C", str(store), *args], input=input, capture_output=True, env=env, check=False)
        if done.returncode != 0:
            raise AssertionError(f"git {' '.join(args)} failed: {done.stderr.decode('utf-8', 'replace')}")
        return done.stdout.decode("utf-8").strip()

    parent = run("rev-parse", "main")
    run("read-tree", parent)
    lines = []
    for path, entry in entries.items():
        if entry is None:
            lines.append(f"0 {'0' * 40}\t{path}")
            continue
        mode, content = entry
        oid = content.decode("ascii") if mode == "160000" else run("hash-object", "-w", "--stdin", input=content)
        lines.append(f"{mode} {oid}\t{path}")
    run("update-index", "-z", "--index-info", input="".join(line + "\0" for line in lines).encode("utf-8"))
    commit = run("commit-tree", run("write-tree"), "-p", parent, "-m", message)
    run("update-ref", "refs/heads/main", commit)
    run("push", "-q", str(team.remote), "main:main")
    index.unlink()
    return commit


def make_team(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Team]:
    """Yield a :class:`Team` (a test module's ``team`` fixture: ``yield from make_team(...)``)."""
    isolate_git(tmp_path, monkeypatch)
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(remote))
    created = Team(tmp_path, remote)
    yield created
    created.close()


@pytest.fixture
def team(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Team]:
    yield from make_team(tmp_path, monkeypatch)


def test_the_harness_gives_each_machine_its_own_vault_on_one_remote(team: Team) -> None:
    a, b = team.machine("a"), team.machine("b")
    assert a.root != b.root and a.config.git_remote == b.config.git_remote == str(team.remote)
    assert git(team.remote, "rev-parse", "--is-bare-repository").strip() == "true"
    assert "GIT_AUTHOR_NAME" not in os.environ
