"""memosite sync between machines: real vaults, real git, one bare remote in tmp_path."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from test_sync_support import (
    TRAP,
    P,
    Team,
    git,
    make_team,
    same_everywhere,
    synced_pair,
    trap,
    worktree_files,
    write_machine_settings,
)

from memosite.curator import compact_monthly_logs
from memosite.pushhook import register_push_scheduler
from memosite.recordfile import read_record
from memosite.salience import record_feedback, record_hits
from memosite.schema import parse_record, utc_now
from memosite.search import search_records
from memosite.store import append_event, forget_record, list_records
from memosite.sync.autopush import register_auto_push
from memosite.sync.conflicts import list_conflicts, resolve_conflict
from memosite.sync.errors import NoRemote, PushFailed, SyncError, UnrelatedHistory
from memosite.sync.preview import preview_sync
from memosite.sync.run import sync_vault
from memosite.sync.status import sync_state
from memosite.vault import Vault

PERSON = ("-c", "user.name=Pat", "-c", "user.email=pat@example.org")  # who runs git by hand


@pytest.fixture
def team(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Team]:
    yield from make_team(tmp_path, monkeypatch)


# --- the round trip ---------------------------------------------------------------------------


def test_the_first_sync_pushes_and_a_new_machine_joins(team: Team) -> None:
    a = team.machine("a")
    trap(a, title="Порядок блокировок")
    first = sync_vault(a)
    assert (first.integration, first.pushed) == ("first-push", True)
    b = team.machine("b")
    joined = sync_vault(b)
    assert joined.integration == "join" and TRAP in joined.added
    assert read_record(b.root / TRAP).frontmatter["title"] == "Порядок блокировок"
    entry = b.index().by_path(TRAP)
    assert entry is not None and entry.title == "Порядок блокировок"
    again = sync_vault(b)
    assert again.quiet
    same_everywhere(a, b)


def test_a_change_arrives_by_fast_forward_and_is_indexed(team: Team) -> None:
    a, b = synced_pair(team)
    trap(a, body="Take locks in id order, always.\n", severity="critical")
    sync_vault(a)
    result = sync_vault(b)
    assert result.integration == "fast-forward" and result.changed == [TRAP]
    entry = b.index().by_path(TRAP)
    assert entry is not None and entry.severity == "critical" and "always" in entry.body
    assert [hit.id for hit in search_records(b, P, "always").results] == ["lock-order"]
    same_everywhere(a, b)


@pytest.mark.slow
def test_fields_changed_on_both_machines_merge_and_counters_add_up(team: Team) -> None:
    a, b = synced_pair(team)
    record_hits(a, P, ["lock-order"])
    record_hits(a, P, ["lock-order"])
    record_feedback(b, P, "lock-order", helpful=True)
    record_hits(b, P, ["lock-order"])
    trap(b, body="Take locks in id order; release in reverse.\n")
    sync_vault(a)
    result = sync_vault(b)
    assert result.integration == "merge" and result.merged == [TRAP] and not result.conflicts
    fm = read_record(b.root / TRAP).frontmatter
    assert (fm["hits"], fm["helpfulCount"]) == (3, 1)
    assert read_record(b.root / TRAP).body == "Take locks in id order; release in reverse.\n"
    entry = b.index().by_path(TRAP)
    assert entry is not None and entry.hits == 3
    sync_vault(a)
    same_everywhere(a, b)
    assert "3" in (a.project_dir(P) / "TRAPS.md").read_text(encoding="utf-8")  # the merged view


@pytest.mark.slow
def test_both_machines_changing_the_body_keeps_local_and_puts_remote_beside_it(team: Team) -> None:
    a, b = synced_pair(team)
    trap(a, body="Version from a: 日本語\n")
    trap(b, body="Version from b: العربية\n")
    a_bytes = (a.root / TRAP).read_bytes()
    sync_vault(a)
    result = sync_vault(b)
    [conflict] = result.conflicts
    assert conflict.path == TRAP and "body" in conflict.reason
    assert read_record(b.root / TRAP).body == "Version from b: العربية\n"
    assert (b.root / conflict.sidecar).read_bytes() == a_bytes  # the remote version, whole
    assert [r.id for r in list_records(b, P)] == ["lock-order"]  # listing skips the sidecar
    assert [hit.id for hit in search_records(b, P, "Version").results] == ["lock-order"]
    assert "日本語" not in (b.project_dir(P) / "TRAPS.md").read_text(encoding="utf-8")
    sync_vault(a)
    same_everywhere(a, b)
    [listed] = list_conflicts(a)
    assert listed.sidecar == conflict.sidecar and listed.record_id == "lock-order"
    assert listed.local.author == listed.remote.author == "memosite <memosite@localhost>"
    assert "-Version from b" in listed.diff and "+Version from a" in listed.diff


# --- tombstones ----------------------------------------------------------------------------------


def test_a_purge_travels_to_the_other_machine(team: Team) -> None:
    a, b = synced_pair(team)
    forget_record(a, P, record_id="lock-order", purge=True)
    sync_vault(a)
    result = sync_vault(b)
    assert result.removed == [TRAP] and not (b.root / TRAP).exists()
    assert b.index().by_path(TRAP) is None
    assert [t["id"] for t in b.read_tombstones()] == ["lock-order"]
    same_everywhere(a, b)


def test_a_purge_newer_than_the_other_machines_edit_wins(team: Team) -> None:
    a, b = synced_pair(team)
    trap(b, body="Edited on b before the purge.\n", now=utc_now() - timedelta(minutes=1))
    forget_record(a, P, record_id="lock-order", purge=True)
    sync_vault(a)
    result = sync_vault(b)
    [purged] = result.purged
    assert purged.path == TRAP and purged.side == "remote"
    assert not (b.root / TRAP).exists() and b.index().by_path(TRAP) is None
    sync_vault(a)
    same_everywhere(a, b)


def test_an_edit_after_the_purge_keeps_the_record_and_is_reported(team: Team) -> None:
    a, b = synced_pair(team)
    forget_record(a, P, record_id="lock-order", purge=True)
    sync_vault(a)
    trap(b, body="Edited on b after the purge.\n", now=utc_now() + timedelta(minutes=1))
    result = sync_vault(b)
    [kept] = result.kept_after_purge
    assert kept.path == TRAP and kept.edited_at is not None and kept.deleted_at is not None
    assert kept.edited_at > kept.deleted_at
    assert "after the purge" in "\n".join(result.lines())
    sync_vault(a)
    assert read_record(a.root / TRAP).body == "Edited on b after the purge.\n"
    assert a.index().by_path(TRAP) is not None
    same_everywhere(a, b)


@pytest.mark.slow
def test_a_remote_edit_after_a_local_purge_brings_the_record_back(team: Team) -> None:
    a, b = synced_pair(team)
    forget_record(b, P, record_id="lock-order", purge=True)
    record_hits(a, P, ["lock-order"], now=utc_now() + timedelta(minutes=1))  # used on a after b purged it
    sync_vault(a)
    result = sync_vault(b)
    [kept] = result.kept_after_purge
    assert kept.side == "local" and (b.root / TRAP).exists()
    assert read_record(b.root / TRAP).frontmatter["hits"] == 1


def test_a_hand_edit_after_a_remote_purge_is_dated_by_its_commit(team: Team) -> None:
    a, b = synced_pair(team)
    forget_record(a, P, record_id="lock-order", purge=True)
    sync_vault(a)
    path = b.root / TRAP
    path.write_text(path.read_text(encoding="utf-8").replace("id order", "id order (hand edit)"), encoding="utf-8")
    result = sync_vault(b)  # commits the hand edit, then meets the purge
    assert result.committed_local and [k.path for k in result.kept_after_purge] == [TRAP]
    assert "hand edit" in path.read_text(encoding="utf-8")


def test_gc_purges_and_log_rollups_sync_the_same_way(team: Team) -> None:
    a, b = team.machine("a"), team.machine("b")
    old = utc_now() - timedelta(days=70)
    logs = [append_event(a, P, event=f"deploy {n} ✓", now=old + timedelta(minutes=n)).path for n in range(3)]
    sync_vault(a)
    sync_vault(b)
    assert all((b.root / path).exists() for path in logs)
    compact_monthly_logs(a, P)
    sync_vault(a)
    result = sync_vault(b)
    assert sorted(result.removed) == sorted(logs) and not any((b.root / path).exists() for path in logs)
    rollups = [p for p in result.added if "log-rollup-" in p]
    assert len(rollups) == 1 and "deploy 2 ✓" in (b.root / rollups[0]).read_text(encoding="utf-8")
    assert {t["reason"] for t in b.read_tombstones()} == {"gc-rollup"}
    same_everywhere(a, b)


@pytest.mark.slow
def test_tombstones_merge_as_a_union(team: Team) -> None:
    a, b = synced_pair(team)
    trap(a, slug="only-a", body="a\n")
    trap(b, slug="only-b", body="b\n")
    sync_vault(a)
    sync_vault(b)
    sync_vault(a)
    forget_record(a, P, record_id="only-a", purge=True)
    forget_record(b, P, record_id="only-b", purge=True)
    sync_vault(a)
    sync_vault(b)
    sync_vault(a)
    assert sorted(t["id"] for t in a.read_tombstones()) == ["only-a", "only-b"]
    same_everywhere(a, b)


# --- refusals -------------------------------------------------------------------------------------


def test_sync_without_a_remote_is_a_clear_error(tmp_path: Path, team: Team, run_cli) -> None:  # type: ignore[no-untyped-def]
    lonely = team.machine("lonely")
    write_machine_settings(lonely.root)  # vault git on, no remote
    lonely = Vault.open(lonely.root)
    with pytest.raises(NoRemote):
        sync_vault(lonely)
    outcome = run_cli("sync", "--vault", str(lonely.root))
    assert outcome.exit_code != 0
    assert outcome.stderr.count("\n") == 1 and "no remote to sync with" in outcome.stderr
    assert "Traceback" not in outcome.stderr
    as_json = run_cli("sync", "--vault", str(lonely.root), "--json")
    assert as_json.json()["error"]["code"] == "NO_REMOTE"
    lonely.close()


def test_sync_with_vault_git_off_says_how_to_turn_it_on(tmp_path: Path, run_cli) -> None:  # type: ignore[no-untyped-def]
    outcome = run_cli("sync", "--vault", str(tmp_path / "plain"))
    assert outcome.exit_code != 0 and "vault git is off" in outcome.stderr and "Traceback" not in outcome.stderr


def test_an_unreachable_remote_is_a_clear_error(team: Team, run_cli) -> None:  # type: ignore[no-untyped-def]
    a = team.machine("a", remote=str(team.base / "no-such-remote.git"))
    trap(a)
    with pytest.raises(SyncError, match="cannot fetch"):
        sync_vault(a)
    outcome = run_cli("sync", "--vault", str(a.root))
    assert outcome.exit_code != 0 and outcome.stderr.startswith("memosite: error: cannot fetch")


def remotes_and_refs(root: Path) -> tuple[str, str]:
    """The vault repository's remotes and every ref that is not a branch of its own."""
    refs = [
        ref for ref in git(root, "for-each-ref", "--format=%(refname)").split() if not ref.startswith("refs/heads/")
    ]
    return git(root, "remote", "-v"), "\n".join(refs)


def test_a_one_off_remote_on_the_command_line_is_not_kept_as_a_remote(team: Team, run_cli) -> None:  # type: ignore[no-untyped-def]
    a, _ = synced_pair(team)
    before = remotes_and_refs(a.root)
    elsewhere = team.base / "elsewhere.git"
    git(team.base, "init", "-q", "--bare", "-b", "main", str(elsewhere))
    done = run_cli("sync", "--remote", str(elsewhere), "--vault", str(a.root))
    assert done.exit_code == 0, done.stderr
    assert f"sync with {elsewhere}, branch main" in done.stdout and "added" not in done.stdout
    assert git(elsewhere, "rev-parse", "main") == git(a.root, "rev-parse", "HEAD")  # it was pushed there
    assert remotes_and_refs(a.root) == before
    assert run_cli("sync", "--remote", str(elsewhere), "--vault", str(a.root)).exit_code == 0  # again: no new name
    assert remotes_and_refs(a.root) == before


def test_a_failed_sync_leaves_no_remote_behind(team: Team, run_cli) -> None:  # type: ignore[no-untyped-def]
    a = team.machine("a", remote=str(team.base / "no-such-remote.git"))
    trap(a)
    for args in ((), ("--remote", str(team.base / "nor-this.git"))):
        outcome = run_cli("sync", *args, "--vault", str(a.root))
        assert outcome.exit_code != 0 and "cannot fetch" in outcome.stderr
        assert remotes_and_refs(a.root) == ("", "")


def test_a_vault_without_a_remote_keeps_its_first_one_off_url_as_origin_and_says_so(team: Team, run_cli) -> None:  # type: ignore[no-untyped-def]
    a = team.machine("a")
    trap(a)
    sync_vault(a)
    lonely = team.machine("lonely")
    write_machine_settings(lonely.root)  # vault git on, no remote
    done = run_cli("sync", "--remote", str(team.remote), "--vault", str(lonely.root))
    assert done.exit_code == 0, done.stderr
    assert f"added {team.remote} as the vault's remote origin" in done.stdout
    assert git(lonely.root, "remote", "-v").split()[:2] == ["origin", str(team.remote)]
    assert git(lonely.root, "rev-parse", "origin/main") == git(lonely.root, "rev-parse", "HEAD")
    assert not git(lonely.root, "for-each-ref", "refs/memosite/")
    assert run_cli("sync", "--vault", str(lonely.root)).exit_code == 0  # origin is the remote from now on


def test_a_remote_with_unrelated_history_is_refused(team: Team, run_cli) -> None:  # type: ignore[no-untyped-def]
    a = team.machine("a")
    trap(a)
    sync_vault(a)
    stranger = team.machine("stranger")
    trap(stranger, slug="mine", body="a different vault\n")
    head = git(stranger.root, "rev-parse", "HEAD")
    with pytest.raises(UnrelatedHistory):
        sync_vault(stranger)
    assert git(stranger.root, "rev-parse", "HEAD") == head and not (stranger.root / TRAP).exists()
    outcome = run_cli("sync", "--vault", str(stranger.root), "--json")
    assert outcome.exit_code != 0 and outcome.json()["error"]["code"] == "UNRELATED_HISTORY"


def test_allow_unrelated_merges_two_vaults_record_by_record(team: Team) -> None:
    a = team.machine("a")
    trap(a, body="a's lock order\n")
    trap(a, slug="only-on-a", body="a\n")
    sync_vault(a)
    stranger = team.machine("stranger")
    trap(stranger, body="the stranger's lock order\n")
    trap(stranger, slug="only-on-stranger", body="s\n")
    result = sync_vault(stranger, allow_unrelated=True)
    assert result.integration == "merge" and [c.path for c in result.conflicts] == [TRAP]
    assert {"projects/demo/traps/only-on-a.md"} <= set(result.added)
    assert read_record(stranger.root / TRAP).body == "the stranger's lock order\n"
    sync_vault(a)
    same_everywhere(a, stranger)


def everything(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.slow
def test_dry_run_changes_nothing_and_predicts_the_sync(team: Team) -> None:
    a, b = synced_pair(team)
    trap(a, body="from a\n")
    trap(a, slug="new-on-a", body="new\n")
    forget_record(a, P, record_id="lock-order", purge=False)
    sync_vault(a)
    trap(b, body="from b\n")
    (b.root / "projects/demo/traps/hand.md").write_text(
        "---\nid: hand\nkind: trap\nproject: demo\ncreated: 2026-11-01\nupdated: 2026-11-01\n---\nby hand\n",
        encoding="utf-8",
    )
    b.close()
    before, remote_before = everything(b.root), everything(team.remote)
    preview = preview_sync(Vault.open(b.root))
    assert everything(b.root) == before and everything(team.remote) == remote_before
    assert preview.dry_run and preview.committed_local and preview.integration == "merge"
    assert "projects/demo/traps/new-on-a.md" in preview.added
    assert [c.path for c in preview.conflicts] == [TRAP]
    real = sync_vault(Vault.open(b.root))
    assert [(c.path, c.sidecar) for c in real.conflicts] == [(c.path, c.sidecar) for c in preview.conflicts]
    assert real.added == preview.added


def test_dry_run_of_a_new_machine_says_it_would_join(team: Team) -> None:
    a = team.machine("a")
    trap(a)
    sync_vault(a)
    fresh = team.machine("fresh")
    before = everything(fresh.root)
    preview = preview_sync(fresh)
    assert (preview.integration, preview.incoming, preview.added) == ("join", 1, [TRAP])
    assert everything(fresh.root) == before and not (fresh.root / ".git").exists()


# --- a plain git pull -------------------------------------------------------------------------


@pytest.mark.slow
def test_a_plain_git_pull_merges_records_and_never_writes_markers(team: Team) -> None:
    a, b = synced_pair(team)
    trap(a, slug="both-bodies", body="first\n")
    sync_vault(a)
    sync_vault(b)
    record_hits(a, P, ["lock-order"])
    trap(a, slug="both-bodies", body="a's body\n")
    record_hits(b, P, ["lock-order"])
    trap(b, body="b's new body\n")
    trap(b, slug="both-bodies", body="b's body\n")
    sync_vault(b)
    pulled = subprocess.run(
        ["git", "-C", str(a.root), *PERSON, "pull", "--no-rebase", "-q"],
        capture_output=True,
        text=True,
        encoding="utf-8",
        check=False,
    )
    assert pulled.returncode == 0, pulled.stderr
    merged = read_record(a.root / TRAP)
    assert merged.frontmatter["hits"] == 2 and merged.body == "b's new body\n"
    both = a.root / "projects/demo/traps/both-bodies.md"
    assert read_record(both).body == "a's body\n"
    [conflict] = list_conflicts(a)
    assert read_record(a.root / conflict.sidecar).body == "b's body\n"
    assert not any(b"<<<<<<<" in data for data in worktree_files(a.root).values())
    entry = a.index().by_path(TRAP)  # the post-merge hook re-indexed the merged record
    assert entry is not None and entry.hits == 2
    assert git(a.root, "status", "--porcelain") == "", pulled.stderr  # views and the sidecar were committed
    assert "compile views after git merge" in git(a.root, "log", "-1", "--format=%s")


@pytest.mark.slow
@pytest.mark.parametrize("setting", [None, "rebase = true", "rebase = true\n\tff = only"])
def test_a_plain_git_pull_merges_whatever_the_persons_global_pull_setting(
    team: Team, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, setting: str | None
) -> None:
    global_config = tmp_path / "global.gitconfig"
    global_config.write_text(f"[pull]\n\t{setting}\n" if setting else "", encoding="utf-8")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(global_config))
    a, b = synced_pair(team)
    trap(a, slug="only-on-a", body="a\n")
    trap(b, body="b's new body\n")
    sync_vault(b)
    mine = git(a.root, "rev-parse", "HEAD").strip()
    pulled = subprocess.run(
        ["git", "-C", str(a.root), *PERSON, "pull", "-q"], capture_output=True, text=True, encoding="utf-8", check=False
    )
    assert pulled.returncode == 0, pulled.stderr
    git(a.root, "merge-base", "--is-ancestor", mine, "HEAD")  # the local commit stays, not rebased away
    assert git(a.root, "rev-list", "--merges", f"{mine}..HEAD").strip()  # merged (through the drivers)
    assert (
        read_record(a.root / TRAP).body == "b's new body\n" and (a.root / "projects/demo/traps/only-on-a.md").exists()
    )
    assert list_conflicts(a) == [] and git(a.root, "status", "--porcelain") == ""
    assert git(a.root, "config", "--local", "pull.rebase").strip() == "false"


@pytest.mark.slow
def test_sync_finishes_a_pull_that_stopped_on_a_purge(team: Team) -> None:
    a, b = synced_pair(team)
    forget_record(a, P, record_id="lock-order", purge=True)
    sync_vault(a)
    trap(b, body="edited after the purge\n", now=utc_now() + timedelta(minutes=1))
    pulled = subprocess.run(
        ["git", "-C", str(b.root), *PERSON, "pull", "--no-rebase", "-q"],
        capture_output=True,
        text=True,
        encoding="utf-8",
    )
    assert pulled.returncode != 0 and "modify/delete" in pulled.stdout + pulled.stderr
    assert sync_state(b).merge_in_progress
    trap(b, slug="written-meanwhile", body="not lost\n")  # written, but not committed mid-merge
    result = sync_vault(b)
    assert result.finished_merge and [k.path for k in result.kept_after_purge] == [TRAP]
    assert not (b.root / ".git" / "MERGE_HEAD").exists()
    assert "projects/demo/traps/written-meanwhile.md" in git(b.root, "ls-files")
    sync_vault(a)
    same_everywhere(a, b)


# --- conflicts and resolve -----------------------------------------------------------------------


def conflicted(team: Team) -> tuple[Vault, Vault]:
    a, b = synced_pair(team)
    trap(a, body="from a\n", severity="low")
    trap(b, body="from b\n", severity="high")
    sync_vault(a)
    sync_vault(b)
    return a, b


@pytest.mark.slow
def test_resolve_take_remote_puts_the_remote_version_in_place_in_one_commit(team: Team) -> None:
    _, b = conflicted(team)
    [conflict] = list_conflicts(b)
    remote_bytes = (b.root / conflict.sidecar).read_bytes()
    commits = int(git(b.root, "rev-list", "--count", "HEAD"))
    result = resolve_conflict(b, "lock-order", project=P, take="remote")
    assert result.removed_sidecars == [conflict.sidecar] and not (b.root / conflict.sidecar).exists()
    assert (b.root / TRAP).read_bytes() == remote_bytes
    assert int(git(b.root, "rev-list", "--count", "HEAD")) == commits + 1
    assert git(b.root, "status", "--porcelain") == ""
    entry = b.index().by_path(TRAP)
    assert entry is not None and entry.severity == "low"
    assert list_conflicts(b) == []


@pytest.mark.slow
def test_resolve_after_a_hand_edit_keeps_the_edit(team: Team, run_cli) -> None:  # type: ignore[no-untyped-def]
    a, b = conflicted(team)
    path = b.root / TRAP
    path.write_text(path.read_text(encoding="utf-8").replace("from b", "<<<<<<< half done"), encoding="utf-8")
    refused = run_cli("resolve", "lock-order", "--vault", str(b.root))
    assert refused.exit_code != 0 and "conflict markers" in refused.stderr
    path.write_text(path.read_text(encoding="utf-8").replace("<<<<<<< half done", "from a and b"), encoding="utf-8")
    done = run_cli("resolve", "lock-order", "--vault", str(b.root), "--json")
    assert done.exit_code == 0 and done.json()["take"] == "edited"
    assert "from a and b" in path.read_text(encoding="utf-8") and list_conflicts(b) == []
    assert git(b.root, "log", "-1", "--format=%s").startswith("resolve trap:lock-order")
    sync_vault(b)
    sync_vault(a)
    same_everywhere(a, b)


def test_the_conflicts_command_shows_both_sides(team: Team, run_cli) -> None:  # type: ignore[no-untyped-def]
    _, b = conflicted(team)
    listed = run_cli("conflicts", "--vault", str(b.root), "--json").json()["conflicts"]
    [item] = listed
    assert item["id"] == "lock-order" and item["local"]["updated"] and item["remote"]["updated"]
    assert item["local"]["author"] and item["remote"]["author"] and "+from a" in item["diff"]
    text = run_cli("conflicts", "--vault", str(b.root)).stdout
    assert "lock-order" in text and "memosite resolve lock-order" in text
    assert run_cli("resolve", "lock-order", "--take", "local", "--vault", str(b.root)).exit_code == 0
    assert read_record(b.root / TRAP).body == "from b\n"
    missing = run_cli("resolve", "lock-order", "--vault", str(b.root))
    assert missing.exit_code != 0 and missing.stderr.count("\n") == 1 and "no conflict" in missing.stderr


# --- status and automatic push ------------------------------------------------------------------


def refuse_pushes(remote: Path, refuse: bool) -> None:
    hook = remote / "hooks" / "pre-receive"
    if refuse:
        hook.write_text("#!/bin/sh\necho 'pushes are closed today' >&2\nexit 1\n", encoding="utf-8")
        hook.chmod(0o755)
    else:
        hook.unlink()


def test_status_shows_pending_push_and_a_failed_push_until_one_succeeds(team: Team) -> None:
    a, _ = synced_pair(team)
    trap(a, body="not pushed yet\n")
    state = sync_state(a)
    assert state.ahead == 1 and state.pending_push and state.last_sync is not None and state.push_error is None
    refuse_pushes(team.remote, True)
    with pytest.raises(PushFailed, match=r"pushes are closed today|remote rejected"):
        sync_vault(a)
    state = sync_state(a)
    assert state.push_error is not None and state.pending_push
    assert any("last push failed" in line for line in state.lines())
    refuse_pushes(team.remote, False)
    sync_vault(a)
    state = sync_state(a)
    assert state.push_error is None and state.ahead == 0 and not state.pending_push


def wait_for(condition, timeout: float = 180.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting for the background push")
        time.sleep(0.05)


def remote_head(team: Team) -> str:
    return git(team.remote, "rev-parse", "-q", "--verify", "refs/heads/main", check=False).strip()


def hold_pushes_until(remote: Path, gate: Path) -> None:
    """The remote takes a push only once ``gate`` exists (and refuses it after a minute without)."""
    hook = remote / "hooks" / "pre-receive"
    hook.write_text(
        f"#!/bin/sh\nfor _ in $(seq 1200); do [ -e '{gate}' ] && exit 0; sleep 0.05; done\nexit 1\n",
        encoding="utf-8",
    )
    hook.chmod(0o755)


@pytest.fixture
def auto_push() -> Iterator[None]:
    """This process pushes its commits in the background, as the CLI and the MCP server do."""
    register_auto_push()
    yield
    register_push_scheduler(None)


def test_auto_push_runs_in_the_background_after_a_write(team: Team, auto_push: None, tmp_path: Path) -> None:
    a = team.machine("a", push="auto", pushDelaySeconds=0.2)
    gate = tmp_path / "let-the-push-in"
    hold_pushes_until(team.remote, gate)
    trap(a)  # returns while the remote still holds the push back: the write did not wait for it
    head = git(a.root, "rev-parse", "HEAD").strip()
    assert remote_head(team) != head and sync_state(a).push_scheduled
    gate.touch()
    wait_for(lambda: remote_head(team) == head and not sync_state(a).push_scheduled)
    b = team.machine("b")
    sync_vault(b)
    assert (b.root / TRAP).exists()


def test_a_failed_auto_push_is_shown_and_retried_at_the_next_write(team: Team, auto_push: None) -> None:
    a = team.machine("a", push="auto", pushDelaySeconds=0.2)
    refuse_pushes(team.remote, True)
    trap(a)
    wait_for(lambda: sync_state(a).push_error is not None and not sync_state(a).push_scheduled)
    assert sync_state(a).pending_push
    refuse_pushes(team.remote, False)
    trap(a, slug="second", body="second\n")
    head = git(a.root, "rev-parse", "HEAD").strip()
    wait_for(lambda: remote_head(team) == head and not sync_state(a).push_scheduled)
    assert sync_state(a).push_error is None


def test_a_program_that_registered_no_push_says_so_once(team: Team, capsys: pytest.CaptureFixture[str]) -> None:
    a = team.machine("a", push="auto", pushDelaySeconds=0.2)
    register_push_scheduler(None)  # as a program that never registered one
    trap(a)
    trap(a, slug="second", body="second\n")
    assert capsys.readouterr().err.count("pushes nothing") == 1
    assert not sync_state(a).push_scheduled


def test_the_merge_driver_runs_without_the_test_process(tmp_path: Path) -> None:
    """The registered driver is a real command: run it the way git does."""
    base = tmp_path / "base"
    ours = tmp_path / "ours"
    theirs = tmp_path / "theirs"
    text = "---\nid: x\nkind: trap\nproject: demo\ncreated: 2026-11-01\nupdated: 2026-11-01\nhits: 1\n---\nbody\n"
    base.write_text(text, encoding="utf-8")
    ours.write_text(text.replace("hits: 1", "hits: 3"), encoding="utf-8")
    theirs.write_text(text.replace("hits: 1", "hits: 2").replace("body\n", "new body\n"), encoding="utf-8")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "memosite.sync.driver",
            "record",
            str(base),
            str(ours),
            str(theirs),
            "projects/demo/traps/x.md",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        encoding="utf-8",
    )
    assert done.returncode == 0, done.stderr
    merged = parse_record(ours.read_text(encoding="utf-8"))
    assert merged.frontmatter["hits"] == 4 and merged.body == "new body\n"
