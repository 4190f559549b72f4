"""Joining a team by ``git clone``: the README's steps as written, and a bare remote made by a plain
``git init --bare`` (whose HEAD names ``master`` while memosite pushes ``main``). Real git, real
``memosite`` processes, a HOME of the test's own."""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_sync_support import TRAP, P, git, isolate_git, trap, write_config

from memosite.recordfile import read_record
from memosite.sync.run import sync_vault
from memosite.vault import Vault

README = Path(__file__).resolve().parents[1] / "README.md"


@pytest.fixture
def remote(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A bare remote made the plain way: its HEAD names ``master``."""
    isolate_git(tmp_path, monkeypatch)
    made = tmp_path / "memory.git"
    git(tmp_path, "-c", "init.defaultBranch=master", "init", "-q", "--bare", str(made))
    assert git(made, "symbolic-ref", "HEAD").strip() == "refs/heads/master"
    return made


@pytest.fixture
def first_machine(tmp_path: Path, remote: Path) -> Iterator[Vault]:
    """The machine that starts the team vault: one record, synced (pushed to ``main``)."""
    root = tmp_path / "first"
    write_config(root, remote=str(remote), branch="main")
    vault = Vault.open(root)
    trap(vault, body="Take locks in id order.\n")
    assert sync_vault(vault).integration == "first-push"
    yield vault
    vault.close()


def shell(command: str, home: Path, memosite_exe: Path) -> subprocess.CompletedProcess[str]:
    """Run one line as a person would type it: a shell, ``~`` their HOME, ``memosite`` on PATH."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMOSITE_")}
    env.update(HOME=str(home), PATH=f"{memosite_exe.parent}{os.pathsep}{env.get('PATH', '')}")
    return subprocess.run(
        ["sh", "-c", command], capture_output=True, text=True, encoding="utf-8", env=env, cwd=home, check=False
    )


def readme_join_steps() -> list[str]:
    section = README.read_text(encoding="utf-8").split("## Team memory across machines", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"\*\*Joining\.\*\*.*?```sh\n(.*?)```", section, re.DOTALL)
    assert block is not None, "the README's sync section has no Joining block"
    return [line for line in block.group(1).splitlines() if line.strip()]


@pytest.mark.slow
def test_the_readme_join_steps_work_as_written(
    first_machine: Vault, remote: Path, tmp_path: Path, memosite_exe: Path
) -> None:
    home = tmp_path / "home"
    steps = readme_join_steps()
    assert steps[0].startswith("git clone --branch main <remote> ~/.memosite") and steps[1].startswith("memosite sync")
    for step in steps:
        done = shell(step.replace("<remote>", str(remote)), home, memosite_exe)
        assert done.returncode == 0, f"{step}: {done.stderr}"
    joined = home / ".memosite"
    assert read_record(joined / TRAP).body == "Take locks in id order.\n"
    listed = shell(f"memosite list --project {P} --json", home, memosite_exe)
    assert [r["id"] for r in json.loads(listed.stdout)["records"]] == ["lock-order"]
    assert git(joined, "status", "--porcelain") == "" and '[merge "memosite-record"]' in (
        joined / ".git/config"
    ).read_text(encoding="utf-8")
    # Written on the new machine, synced back.
    shell(
        f"memosite upsert --project {P} --kind trap --slug from-clone --title T --body 'from the clone'",
        home,
        memosite_exe,
    )
    assert shell("memosite sync", home, memosite_exe).returncode == 0
    sync_vault(first_machine)
    assert (first_machine.root / "projects/demo/traps/from-clone.md").exists()


def test_the_first_push_to_a_bare_remote_points_its_head_at_the_branch(
    first_machine: Vault, remote: Path, tmp_path: Path
) -> None:
    assert git(remote, "symbolic-ref", "HEAD").strip() == "refs/heads/main"
    cloned = subprocess.run(
        ["git", "clone", "-q", str(remote), str(tmp_path / "plain-clone")],
        capture_output=True,
        text=True,
        encoding="utf-8",
    )
    assert cloned.returncode == 0 and "nonexistent ref" not in cloned.stderr
    assert (tmp_path / "plain-clone" / TRAP).exists()


def test_a_remote_head_naming_a_branch_it_has_is_never_moved(tmp_path: Path, remote: Path) -> None:
    other = tmp_path / "other"
    git(tmp_path, "init", "-q", "-b", "trunk", str(other))
    git(other, "-c", "user.name=Pat", "-c", "user.email=pat@example.org", "commit", "-q", "--allow-empty", "-m", "x")
    git(other, "push", "-q", str(remote), "trunk")
    git(remote, "symbolic-ref", "HEAD", "refs/heads/trunk")
    root = tmp_path / "vault"
    write_config(root, remote=str(remote), branch="main")
    vault = Vault.open(root)
    trap(vault)
    sync_vault(vault, allow_unrelated=True)
    assert git(remote, "symbolic-ref", "HEAD").strip() == "refs/heads/trunk"
    vault.close()


def test_sync_in_a_clone_that_checked_out_nothing_takes_the_remote_branch(
    first_machine: Vault, remote: Path, tmp_path: Path, memosite_exe: Path
) -> None:
    git(remote, "symbolic-ref", "HEAD", "refs/heads/master")  # a remote whose HEAD memosite never fixed
    home = tmp_path / "home"
    cloned = shell(f"git clone {remote} ~/.memosite", home, memosite_exe)
    assert cloned.returncode == 0 and "nonexistent ref" in cloned.stderr
    joined = home / ".memosite"
    assert not (joined / TRAP).exists()
    done = shell("memosite sync", home, memosite_exe)
    assert done.returncode == 0, done.stderr
    assert "join the remote's history (1 commit)" in done.stdout and "records that came in: 1 new" in done.stdout
    assert read_record(joined / TRAP).body == "Take locks in id order.\n"
    assert git(joined, "symbolic-ref", "--short", "HEAD").strip() == "main"
    assert git(joined, "status", "--porcelain") == ""
    # A clone syncs: vault git is on for this machine, and nothing of it is in the team's config.json.
    assert json.loads((joined / "config.local.json").read_text(encoding="utf-8"))["vaultGit"]["enabled"] is True
    assert "vaultGit" not in json.loads((joined / "config.json").read_text(encoding="utf-8"))
    assert git(joined, "rev-parse", "HEAD") == git(first_machine.root, "rev-parse", "HEAD")
