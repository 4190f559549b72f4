"""Vault-git commits carry who made them; the repository is set up for record-aware merging."""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_sync_support import git, isolate_git, write_config

from memosite import commitpolicy, gitsetup
from memosite.provenance import Actor
from memosite.store import upsert_record
from memosite.vault import Vault


@pytest.fixture
def git_vault(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Vault]:
    isolate_git(tmp_path, monkeypatch)
    root = tmp_path / "vault"
    write_config(root)
    vault = Vault.open(root)
    yield vault
    vault.close()


def set_identity(name: str, email: str) -> None:
    home = Path(os.environ["HOME"])
    (home / ".gitconfig").write_text(f"[user]\n\tname = {name}\n\temail = {email}\n", encoding="utf-8")


def last_commit(vault: Vault) -> tuple[str, str]:
    author, committer = git(vault.root, "log", "-1", "--format=%an <%ae>%n%cn <%ce>").splitlines()
    return author, committer


def test_a_cli_write_is_authored_by_the_persons_git_identity(git_vault: Vault) -> None:
    set_identity("Ada Lovelace", "ada@example.org")
    upsert_record(git_vault, "demo", kind="trap", body="Locks bite.", slug="locks")
    assert last_commit(git_vault) == ("Ada Lovelace <ada@example.org>", "Ada Lovelace <ada@example.org>")


def test_memosite_authors_only_when_git_has_no_identity(git_vault: Vault) -> None:
    upsert_record(git_vault, "demo", kind="trap", body="Locks bite.", slug="locks")
    assert last_commit(git_vault) == ("memosite <memosite@localhost>", "memosite <memosite@localhost>")


def test_an_identity_from_the_environment_is_respected(git_vault: Vault, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GIT_AUTHOR_NAME", "Grace Hopper")
    monkeypatch.setenv("GIT_AUTHOR_EMAIL", "grace@example.org")
    upsert_record(git_vault, "demo", kind="trap", body="Locks bite.", slug="locks")
    assert last_commit(git_vault)[0] == "Grace Hopper <grace@example.org>"


def test_an_mcp_write_is_authored_by_the_agent_via_memosite(git_vault: Vault) -> None:
    set_identity("Ada Lovelace", "ada@example.org")
    git_vault.actor = Actor.mcp_client("Claude Code", "2.1.0", "session-7")
    upsert_record(git_vault, "demo", kind="decision", body="Use Postgres.", slug="db")
    author, committer = last_commit(git_vault)
    assert author == "Claude Code via memosite <agent@memosite.invalid>"
    assert committer == "Ada Lovelace <ada@example.org>"  # the machine's person still commits


def test_an_agent_on_a_machine_without_identity_still_commits(git_vault: Vault) -> None:
    git_vault.actor = Actor.mcp_client("Zed Agent", None, None)
    commitpolicy.request_commit(git_vault, "nothing yet")  # the lead's call: (vault, message)
    upsert_record(git_vault, "demo", kind="spec", body="x", slug="s")
    assert last_commit(git_vault) == (
        "Zed Agent via memosite <agent@memosite.invalid>",
        "memosite <memosite@localhost>",
    )


def test_the_repository_is_set_up_for_record_aware_merging(git_vault: Vault) -> None:
    upsert_record(git_vault, "demo", kind="trap", body="Locks bite.", slug="locks")
    root = git_vault.root
    for name in ("memosite-record", "memosite-union", "memosite-file"):
        driver = git(root, "config", "--get", f"merge.{name}.driver").strip()
        assert sys.executable in driver and "-m memosite.sync.driver" in driver
    assert git(root, "config", "--get", "merge.memosite-view.driver").strip() == "true"
    expected = {
        "projects/demo/traps/locks.md": "memosite-record",
        "projects/demo/TRAPS.md": "memosite-view",
        ".memosite/tombstones.jsonl": "memosite-union",
        "projects/demo/sessions/s1/events.jsonl": "memosite-union",
        "config.json": "memosite-file",
    }
    for path, driver in expected.items():
        assert git(root, "check-attr", "merge", "--", path).strip().endswith(f"merge: {driver}"), path
    hook = root / ".git" / "hooks" / "post-merge"
    assert gitsetup.HOOK_MARK in hook.read_text(encoding="utf-8") and hook.stat().st_mode & stat.S_IXUSR
    assert ".gitattributes" not in git(root, "ls-files")  # attributes live in .git/info, per clone


def test_setup_is_idempotent_and_repairs_a_stale_interpreter(git_vault: Vault) -> None:
    upsert_record(git_vault, "demo", kind="trap", body="x", slug="x")
    root = git_vault.root
    attributes = (root / ".git" / "info" / "attributes").read_text(encoding="utf-8")
    git(root, "config", "merge.memosite-record.driver", "'/gone/python' -m memosite.sync.driver record %O %A %B %P")
    gitsetup.ensure_repo(git_vault)
    gitsetup.ensure_repo(git_vault)
    assert sys.executable in git(root, "config", "--get", "merge.memosite-record.driver")
    assert (root / ".git" / "info" / "attributes").read_text(encoding="utf-8") == attributes
    assert attributes.count(gitsetup.ATTRIBUTES_START) == 1


def test_a_persons_own_post_merge_hook_is_left_alone(git_vault: Vault) -> None:
    hooks = git_vault.root / ".git" / "hooks"
    git(git_vault.root.parent, "init", "-q", str(git_vault.root))
    hooks.mkdir(parents=True, exist_ok=True)
    (hooks / "post-merge").write_text("#!/bin/sh\necho mine\n", encoding="utf-8")
    upsert_record(git_vault, "demo", kind="trap", body="x", slug="x")
    assert (hooks / "post-merge").read_text(encoding="utf-8") == "#!/bin/sh\necho mine\n"


def test_a_new_vault_repository_starts_on_the_configured_branch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    isolate_git(tmp_path, monkeypatch)
    write_config(tmp_path / "v", branch="memory")
    vault = Vault.open(tmp_path / "v")
    upsert_record(vault, "demo", kind="trap", body="x", slug="x")
    assert git(vault.root, "symbolic-ref", "--short", "HEAD").strip() == "memory"
    vault.close()


@pytest.mark.parametrize(
    ("settings", "named"),
    [
        ({"push": "sometimes"}, "vaultGit.push"),
        ({"remote": ""}, "vaultGit.remote"),
        ({"branch": "../main"}, "vaultGit.branch"),
        ({"branch": 3}, "vaultGit.branch"),
        ({"pushDelaySeconds": -1}, "vaultGit.pushDelaySeconds"),
    ],
)
def test_bad_sync_settings_are_refused_naming_the_key(tmp_path: Path, settings: dict[str, object], named: str) -> None:
    from memosite.config import load_config
    from memosite.errors import InvalidArguments

    write_config(tmp_path, **settings)
    with pytest.raises(InvalidArguments, match=named.replace(".", r"\.")):
        load_config(tmp_path)


def test_sync_settings_have_defaults(tmp_path: Path) -> None:
    from memosite.config import load_config

    write_config(tmp_path)
    config = load_config(tmp_path)
    assert (config.git_remote, config.git_branch, config.git_push, config.git_push_delay_seconds) == (
        None,
        None,
        "manual",
        10.0,
    )
