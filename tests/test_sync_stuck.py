"""A vault git that cannot commit is never silent, a lock a killed git left is recovered, a push
that races another is retried, and the repository's own hooks and attributes stay out of
memosite's git. Written as the user's steps, with real git processes (signals through fifos)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_sync_support import TRAP, Team, git, make_team, synced_pair, trap

from memosite.gitlock import inspect_index_lock
from memosite.sync.run import sync_vault
from memosite.vault import Vault

PERSON = ("-c", "user.name=Pat", "-c", "user.email=pat@example.org")


@pytest.fixture
def team(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Team]:
    yield from make_team(tmp_path, monkeypatch)


class HeldIndex:
    """A person's ``git commit -a`` in the vault, stopped in its pre-commit hook — the moment git
    holds ``.git/index.lock`` — until :meth:`release` (or killed there, as by a crash)."""

    def __init__(self, vault: Vault, tmp_path: Path) -> None:
        self.started, self.go = tmp_path / "hook-started", tmp_path / "hook-go"
        os.mkfifo(self.started)
        os.mkfifo(self.go)
        hook = vault.root / ".git/hooks/pre-commit"
        hook.write_text(f"#!/bin/sh\necho $$ > '{self.started}'\nread x < '{self.go}'\nexit 1\n", encoding="utf-8")
        hook.chmod(0o755)
        (vault.root / TRAP).write_text(
            (vault.root / TRAP).read_text(encoding="utf-8") + "a hand edit\n", encoding="utf-8"
        )
        self.git = subprocess.Popen(
            ["git", *PERSON, "commit", "-a", "-q", "-m", "by hand"],
            cwd=vault.root,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        self.hook = int(self.started.read_text(encoding="utf-8").strip())  # blocks until the hook runs
        assert (vault.root / ".git/index.lock").exists()

    def release(self) -> None:
        self.go.write_text("go\n", encoding="utf-8")
        self.git.wait()

    def kill(self) -> None:
        os.kill(self.git.pid, signal.SIGKILL)
        self.git.wait()
        os.kill(self.hook, signal.SIGKILL)


def configured(tmp_path: Path, vault_dir: Path) -> Vault:
    vault_dir.mkdir(parents=True, exist_ok=True)
    (vault_dir / "config.json").write_text(json.dumps({"vaultGit": {"enabled": True}}), encoding="utf-8")
    vault = Vault.open(vault_dir)
    trap(vault)
    return vault


def test_a_lock_left_by_a_killed_git_is_recovered_at_the_next_write(
    tmp_path: Path, vault_dir: Path, run_cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    vault = configured(tmp_path, vault_dir)
    HeldIndex(vault, tmp_path).kill()
    lock = vault.root / ".git/index.lock"
    assert lock.exists()
    found = inspect_index_lock(vault.root, vault.root / ".git")
    assert found is not None and found.stale
    status = run_cli("status")
    assert status.exit_code != 0 and "vault git is stuck" in status.stdout and "killed" in status.stdout
    done = run_cli("upsert", "--kind", "decision", "--title", "Решение", "--body", "после сбоя")
    assert done.exit_code == 0, done.stderr
    assert "left by a git that was killed" in done.stderr and not lock.exists()
    assert git(vault.root, "status", "--porcelain") == ""  # the write and the hand edit are committed
    assert run_cli("status").exit_code == 0


def test_every_write_says_vault_git_is_stuck_while_a_git_holds_the_lock(
    tmp_path: Path, vault_dir: Path, run_cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    vault = configured(tmp_path, vault_dir)
    held = HeldIndex(vault, tmp_path)
    try:
        for title in ("first while stuck", "second while stuck ✓"):
            done = run_cli("upsert", "--kind", "trap", "--title", title, "--body", "kept on disk")
            assert done.exit_code == 0
            assert "vault git is stuck" in done.stderr and "index.lock" in done.stderr
            assert f"git process {held.git.pid}" in done.stderr
        status = run_cli("status", "--json")
        assert status.exit_code != 0
        assert any("index.lock" in problem for problem in status.json()["problems"])
    finally:
        held.release()
    assert run_cli("upsert", "--kind", "trap", "--title", "after", "--body", "x").stderr == ""
    assert git(vault.root, "status", "--porcelain") == "" and run_cli("status").exit_code == 0
    assert "first-while-stuck" in git(vault.root, "ls-files")


def test_sync_recovers_a_lock_a_killed_git_left(team: Team, tmp_path: Path) -> None:
    a, _b = synced_pair(team)
    HeldIndex(a, tmp_path).kill()
    result = sync_vault(a)
    assert result.pushed and not (a.root / ".git/index.lock").exists()
    assert "a hand edit" in git(team.remote, "show", f"main:{TRAP}")


def test_a_push_that_races_another_is_retried_like_a_rejected_one(team: Team) -> None:
    a, _b = synced_pair(team)
    # Another machine's push lands while ours is being received: git refuses ours with
    # "cannot lock ref 'refs/heads/main': is at X but expected Y".
    hook = team.remote / "hooks/pre-receive"
    hook.write_text(
        "#!/bin/sh\n[ -e raced ] && exit 0\ntouch raced\ncat > /dev/null\n"
        "old=$(git rev-parse main)\n"
        "new=$(GIT_AUTHOR_NAME=O GIT_AUTHOR_EMAIL=o@x GIT_COMMITTER_NAME=O GIT_COMMITTER_EMAIL=o@x"
        ' git commit-tree -p "$old" -m "the other push" "main^{tree}")\n'
        'env -u GIT_QUARANTINE_PATH git update-ref refs/heads/main "$new" "$old"\n',
        encoding="utf-8",
    )
    hook.chmod(0o755)
    trap(a, slug="raced", body="pushed while another push landed\n")
    result = sync_vault(a)
    assert result.pushed and (team.remote / "raced").exists()
    log = git(team.remote, "log", "--format=%s", "main")
    assert "the other push" in log and "upsert trap:raced" in log


# --- the repository's own hooks and attributes ----------------------------------------------------


def test_a_hook_path_pointing_into_the_vault_runs_nothing_of_the_remotes(
    team: Team, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = synced_pair(team)
    marker = tmp_path / "hook-ran"
    hooks = a.root / ".githooks"
    hooks.mkdir()
    for name in ("pre-commit", "post-commit", "post-merge", "reference-transaction", "pre-push"):
        (hooks / name).write_text(f"#!/bin/sh\ntouch '{marker}'\n", encoding="utf-8")
        (hooks / name).chmod(0o755)
    global_config = tmp_path / "global.gitconfig"
    global_config.write_text("[core]\n\thooksPath = .githooks\n", encoding="utf-8")  # a person's global habit
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(global_config))
    trap(a, body="written with a hooks path into the vault\n")
    trap(b, slug="from-b", body="b\n")
    sync_vault(b)
    sync_vault(a)
    assert not marker.exists()
    assert ".githooks" not in git(a.root, "ls-files")


@pytest.mark.slow
def test_the_vaults_attributes_neutralise_whatever_a_tree_says(team: Team) -> None:
    a, _ = synced_pair(team)
    (a.root / ".gitattributes").write_text(
        "* working-tree-encoding=UTF-16LE filter=evil text eol=crlf\n", encoding="utf-8"
    )
    out = git(a.root, "check-attr", "working-tree-encoding", "filter", "text", "eol", "merge", "--", TRAP)
    assert out.splitlines() == [
        f"{TRAP}: working-tree-encoding: unspecified",
        f"{TRAP}: filter: unspecified",
        f"{TRAP}: text: unspecified",
        f"{TRAP}: eol: unspecified",
        f"{TRAP}: merge: memosite-record",
    ]


@pytest.mark.slow
def test_the_vault_repository_keeps_a_plain_pull_away_from_submodules_and_command_transports(team: Team) -> None:
    a, _ = synced_pair(team)
    for key, value in {
        "submodule.recurse": "false",
        "protocol.ext.allow": "never",
        "fetch.fsckObjects": "true",
        "core.protectNTFS": "true",
    }.items():
        assert git(a.root, "config", "--local", key).strip() == value
    assert "memosite reference-transaction hook" in (a.root / ".git/hooks/reference-transaction").read_text(
        encoding="utf-8"
    )
