"""What sync says: its report lines and commit messages read as sentences (one commit, two
commits), and the ``--json`` shapes of sync, conflicts and resolve stay as scripts know them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from test_sync_support import P, Team, git, make_team, synced_pair, trap

from memosite.salience import record_hits
from memosite.sync.preview import preview_sync
from memosite.sync.run import sync_vault
from memosite.sync.status import sync_state


@pytest.fixture
def team(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Team]:
    yield from make_team(tmp_path, monkeypatch)


@pytest.mark.slow
def test_sync_reports_say_one_commit_and_two_commits(team: Team) -> None:
    a, b = synced_pair(team)
    trap(a, slug="new-on-a", body="new\n")
    sync_vault(a)
    lines = preview_sync(b).lines()
    assert lines[0].endswith("would fast-forward by 1 commit")
    assert lines[1] == "records that would come in: 1 new, 0 changed, 0 removed"
    lines = sync_vault(b).lines()
    assert (
        lines[0].endswith("fast-forward by 1 commit")
        and lines[1] == "records that came in: 1 new, 0 changed, 0 removed"
    )
    trap(a, slug="second", body="2\n")
    trap(a, slug="third", body="3\n")
    sync_vault(a)
    trap(b, slug="on-b", body="b\n")
    assert sync_vault(b).lines()[0].endswith("merge 2 commits from the remote; pushed 2 commits")
    assert git(b.root, "log", "-1", "--format=%s").strip() == "sync: merge origin/main (2 commits)"
    sync_vault(a)  # a takes b's merge: the next merge brings one commit
    trap(a, slug="fourth", body="4\n")
    sync_vault(a)
    trap(b, slug="on-b-again", body="b\n")
    sync_vault(b)
    assert git(b.root, "log", "-1", "--format=%s").strip() == "sync: merge origin/main (1 commit)"


def test_merged_records_and_unpushed_commits_are_counted_in_words(team: Team) -> None:
    a, b = synced_pair(team)
    record_hits(a, P, ["lock-order"])
    trap(b, body="b's body\n")
    sync_vault(a)
    result = sync_vault(b)
    assert "1 record changed on both sides merged field by field" in result.lines()
    trap(b, slug="later", body="later\n")
    assert "  1 commit not pushed yet" in sync_state(b).lines()
    trap(b, slug="later-still", body="later\n")
    assert "  2 commits not pushed yet" in sync_state(b).lines()


SYNC_KEYS = {
    "remote", "url", "branch", "dryRun", "committedLocal", "integration", "incoming", "outgoing", "pushed",
    "remoteAdded", "finishedMerge", "records", "conflicts", "purged", "keptAfterPurge", "conflictsEndedByPurge",
    "config",
    "conflictsBroughtIn", "leftOut",
}  # fmt: skip
VERSION_KEYS = {
    "exists",
    "updated",
    "author",
    "authoredAt",
    "commit",
    "uncommitted",
    "writtenHere",
    "changedSinceConflict",
}


@pytest.mark.slow
def test_the_json_of_sync_conflicts_and_resolve_keeps_its_shape(team: Team, run_cli) -> None:  # type: ignore[no-untyped-def]
    a, b = synced_pair(team)
    trap(a, body="from a\n")
    trap(b, body="from b\n")
    sync_vault(a)
    synced = run_cli("sync", "--vault", str(b.root), "--json").json()
    assert set(synced) == SYNC_KEYS
    assert set(synced["records"]) == {"added", "changed", "removed", "merged"}
    assert set(synced["conflicts"][0]) == {"path", "sidecar", "reason", "resolve"}
    assert synced["conflicts"][0]["resolve"] == "memosite resolve lock-order --take mine|theirs"
    [conflict] = run_cli("conflicts", "--vault", str(b.root), "--json").json()["conflicts"]
    assert set(conflict) == {
        "path",
        "sidecar",
        "shortId",
        "project",
        "kind",
        "id",
        "local",
        "remote",
        "mine",
        "removal",
        "diff",
    }
    assert set(conflict["local"]) == set(conflict["remote"]) == VERSION_KEYS
    done = run_cli("resolve", "lock-order", "--take", "theirs", "--vault", str(b.root), "--json").json()
    assert done == {
        "path": "projects/demo/traps/lock-order.md",
        "take": "theirs",
        "kept": "sidecar",
        "keptMine": False,
        "removedSidecars": [conflict["sidecar"]],
        "project": "demo",
        "id": "lock-order",
    }


def test_status_before_the_first_sync_names_the_configured_remote(team: Team, run_cli) -> None:  # type: ignore[no-untyped-def]
    a = team.machine("a")
    text = run_cli("status", "--vault", str(a.root)).stdout
    [line] = [line for line in text.splitlines() if line.startswith("sync ")]
    assert f"{team.remote}, not synced yet" in line and "no remote" not in text
    assert "sync: " not in text  # the label is printed once
    trap(a)
    text = run_cli("status", "--vault", str(a.root)).stdout
    assert f"{team.remote}, not synced yet" in text and "no remote" not in text
    sync_vault(a)
    [line] = [
        line for line in run_cli("status", "--vault", str(a.root)).stdout.splitlines() if line.startswith("sync ")
    ]
    assert line.split()[:2] == ["sync", "origin/main"] and "sync: " not in line


def test_status_shows_each_conflicts_record_and_both_versions_updated(team: Team, run_cli) -> None:  # type: ignore[no-untyped-def]
    a, b = synced_pair(team)
    trap(a, body="from a\n")
    trap(b, body="from b\n")
    sync_vault(a)
    sync_vault(b)
    [conflict] = sync_state(b).conflicts
    assert conflict.local.updated and conflict.remote.updated
    text = run_cli("status", "--vault", str(b.root)).stdout
    assert (
        f"conflict: trap lock-order ({conflict.path}): in place updated {conflict.local.updated},"
        f" sidecar updated {conflict.remote.updated} (memosite resolve lock-order)"
    ) in text


@pytest.mark.slow
def test_the_dry_run_counts_the_merge_commit_it_would_push_and_writes_no_conflict(team: Team) -> None:
    a, b = synced_pair(team)
    trap(a, body="from a\n")
    sync_vault(a)
    for n in range(3):
        trap(b, slug=f"only-on-b-{n}", body="b\n")
    trap(b, body="from b\n")
    preview = preview_sync(b)
    said = "\n".join(preview.lines())
    assert "would push 5 commits (your 4 and the merge)" in said
    assert "a sync would write 1 conflict (nothing was written)" in said and "memosite conflicts" not in said
    real = sync_vault(b)
    assert real.outgoing == preview.outgoing == 5
    assert "pushed 5 commits" in "\n".join(real.lines())
