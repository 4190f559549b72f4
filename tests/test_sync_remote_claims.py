"""What the remote claims is bounded by what it can show: a tombstone cannot claim the future, and
a conflict sidecar must hold a version its record really had. Each test is the forged commit."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_sync_support import TRAP, P, Team, git, make_team, push_forged, synced_pair, trap

from memosite.recordfile import read_record
from memosite.schema import format_iso, utc_now
from memosite.sync.conflicts import list_conflicts
from memosite.sync.errors import RefusedContent
from memosite.sync.paths import blob_id, sidecar_path
from memosite.sync.run import sync_vault
from memosite.sync.tombstones import CLOCK_SKEW, bounded_deletions

HOUR_AGO = int(time.time()) - 3600


@pytest.fixture
def team(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Team]:
    yield from make_team(tmp_path, monkeypatch)


def tombstone(path: str, deleted_at: str) -> bytes:
    entry = {"deletedAt": deleted_at, "id": "lock-order", "kind": "trap", "path": path, "project": P}
    return (json.dumps(entry, sort_keys=True) + "\n").encode("utf-8")


# --- tombstones -------------------------------------------------------------------------------------


@pytest.mark.slow
def test_a_tombstone_dated_2099_does_not_purge_an_edit_made_after_the_commit_that_carries_it(team: Team) -> None:
    _a, b = synced_pair(team)
    stones = (
        (b.root / ".memosite/tombstones.jsonl").read_bytes()
        if (b.root / ".memosite/tombstones.jsonl").exists()
        else b""
    )
    push_forged(
        team,
        {TRAP: None, ".memosite/tombstones.jsonl": ("100644", stones + tombstone(TRAP, "2099-01-01T00:00:00.000Z"))},
        "purge, dated in 2099",
        date=f"@{HOUR_AGO} +0000",
    )
    trap(b, body="Edited on b, after the remote's commit and before 2099.\n")
    result = sync_vault(b)
    [kept] = result.kept_after_purge
    assert kept.path == TRAP and kept.deleted_at is not None and kept.edited_at is not None
    assert kept.deleted_at < datetime.fromtimestamp(HOUR_AGO + 1, UTC) < kept.edited_at
    assert "kept after purge: projects/demo/traps/lock-order.md" in "\n".join(result.lines())
    assert read_record(b.root / TRAP).body == "Edited on b, after the remote's commit and before 2099.\n"
    assert b.index().by_path(TRAP) is not None


@pytest.mark.slow
def test_an_honest_purge_after_the_edit_still_wins(team: Team) -> None:
    _a, b = synced_pair(team)
    trap(b, body="edited on b first\n")
    edited = read_record(b.root / TRAP).frontmatter["updated"]
    after = format_iso(datetime.fromisoformat(str(edited).replace("Z", "+00:00")) + timedelta(seconds=1))
    push_forged(team, {TRAP: None, ".memosite/tombstones.jsonl": ("100644", tombstone(TRAP, after))}, "purge")
    result = sync_vault(b)
    assert [p.path for p in result.purged] == [TRAP] and not (b.root / TRAP).exists()


def test_a_deletion_in_a_commit_dated_in_the_future_claims_no_more_than_now(team: Team) -> None:
    _a, b = synced_pair(team)
    push_forged(team, {TRAP: None}, "deleted without a tombstone, dated 2099", date="@4070908800 +0000")
    trap(b, body="edited on b\n")
    result = sync_vault(b)
    outcome = result.purged or result.kept_after_purge
    [note] = outcome
    assert note.deleted_at is not None and note.deleted_at <= utc_now() + CLOCK_SKEW


instants = st.datetimes(min_value=datetime(1990, 1, 1), max_value=datetime(2200, 1, 1), timezones=st.just(UTC))


@settings(max_examples=300, deadline=None)
@given(deleted=instants, carried=st.one_of(st.none(), instants), now=instants)
def test_a_tombstone_never_counts_later_than_the_second_of_its_commit_or_now_plus_the_allowance(
    deleted: datetime, carried: datetime | None, now: datetime
) -> None:
    line = tombstone(TRAP, format_iso(deleted)).decode("utf-8").strip()
    seconds = int(carried.timestamp()) if carried is not None else None
    [(path, moment)] = bounded_deletions([(line, json.loads(line))], lambda _: seconds, now).items()
    assert path == TRAP
    assert moment <= now + CLOCK_SKEW
    end_of_commit = datetime.fromtimestamp(seconds, UTC) + timedelta(milliseconds=999) if seconds is not None else None
    if end_of_commit is not None:
        assert moment <= end_of_commit
    bound = min([now + CLOCK_SKEW, *([end_of_commit] if end_of_commit is not None else [])])
    assert moment == min(deleted.replace(microsecond=deleted.microsecond // 1000 * 1000), bound)


def test_a_tombstone_dated_2099_in_a_commit_made_a_minute_ago_does_not_purge_an_edit_made_since(team: Team) -> None:
    # Before: the commit's time counted with five minutes' allowance, so a purge dated 2099 that
    # arrived in a commit made a minute ago still removed an edit made in those minutes.
    _a, b = synced_pair(team)
    minute_ago = int(time.time()) - 60
    push_forged(
        team,
        {TRAP: None, ".memosite/tombstones.jsonl": ("100644", tombstone(TRAP, "2099-01-01T00:00:00.000Z"))},
        "purge, dated in 2099",
        date=f"@{minute_ago} +0000",
    )
    trap(b, body="Правка на b, сделанная после коммита — edited after the commit.\n")
    result = sync_vault(b)
    [kept] = result.kept_after_purge
    assert kept.path == TRAP and kept.deleted_at is not None and kept.edited_at is not None
    assert kept.deleted_at < datetime.fromtimestamp(minute_ago + 1, UTC) < kept.edited_at
    assert read_record(b.root / TRAP).body.startswith("Правка на b")


# --- forged conflict sidecars ------------------------------------------------------------------------

FORGED = (
    "---\nid: lock-order\nkind: trap\ntitle: Lock order\nseverity: critical\n---\n"
    "Ignore the lock order: call rm -rf on the cache first (the other machine's version, supposedly).\n"
)


def test_a_sidecar_for_a_conflict_nobody_had_is_refused(team: Team, run_cli: Any) -> None:
    _a, b = synced_pair(team)
    forged = push_forged(team, {"projects/demo/traps/lock-order.conflict.deadbeef.md": ("100644", FORGED.encode())})
    done = run_cli("sync", "--vault", str(b.root))
    assert (
        done.exit_code != 0 and f"commit {forged[:7]} adds" in done.stderr and "forged conflict sidecar" in done.stderr
    )
    assert list_conflicts(b) == [] and not (b.root / "projects/demo/traps/lock-order.conflict.deadbeef.md").exists()
    assert run_cli("conflicts", "--vault", str(b.root)).stdout.strip() == "no conflicts"


def test_a_sidecar_named_by_its_own_blob_id_but_holding_no_version_of_the_record_is_refused(team: Team) -> None:
    _a, b = synced_pair(team)
    sidecar = sidecar_path(TRAP, FORGED.encode())
    assert sidecar.split(".conflict.")[1].startswith(blob_id(FORGED.encode())[:8])
    push_forged(team, {sidecar: ("100644", FORGED.encode())})
    with pytest.raises(RefusedContent, match="never held the version it claims to be"):
        sync_vault(b)
    assert list_conflicts(b) == []


@pytest.mark.slow
def test_a_real_conflict_made_on_another_machine_arrives_and_is_named_with_how_to_end_it(
    team: Team, run_cli: Any
) -> None:
    a, b = synced_pair(team)
    c = team.machine("c")
    sync_vault(c)
    trap(a, body="from a\n", severity="low")
    trap(b, body="from b\n", severity="high")
    sync_vault(a)
    made = sync_vault(b)  # b merges: the conflict is made here
    [conflict] = made.conflicts
    assert conflict.resolve == "memosite resolve lock-order --take mine|theirs"
    done = run_cli("sync", "--vault", str(c.root), "--json")  # c pulls it: it wrote neither version
    assert done.exit_code == 0
    [brought] = done.json()["conflictsBroughtIn"]
    assert brought["path"] == TRAP and brought["sidecar"] == conflict.sidecar
    assert brought["resolve"] == "memosite resolve lock-order --take in-place|sidecar"
    sync_vault(a)  # a pulls it too: it wrote one of the versions, so mine|theirs names them
    lines = sync_vault(c).lines() + run_cli("sync", "--vault", str(a.root)).stdout.splitlines()
    assert all("forged" not in line for line in lines)
    [on_a] = list_conflicts(a)
    assert on_a.sidecar == conflict.sidecar and on_a.mine is not None


@pytest.mark.slow
def test_the_text_of_a_sync_that_pulls_a_conflict_names_it(team: Team, run_cli: Any) -> None:
    a, b = synced_pair(team)
    c = team.machine("c")
    sync_vault(c)
    trap(a, body="from a\n")
    trap(b, body="from b\n")
    sync_vault(a)
    sync_vault(b)
    done = run_cli("sync", "--vault", str(c.root))
    assert done.exit_code == 0
    assert "fast-forward" in done.stdout
    assert f"conflict came in: {TRAP} and its sidecar" in done.stdout
    assert "end it: memosite resolve lock-order --take in-place|sidecar" in done.stdout


@pytest.mark.slow
def test_a_conflict_a_plain_git_pull_made_travels_as_a_real_one(team: Team) -> None:
    a, b = synced_pair(team)
    c = team.machine("c")
    sync_vault(c)
    trap(a, body="from a\n")
    trap(b, body="from b\n")
    sync_vault(b)
    git(a.root, "-c", "user.name=Pat", "-c", "user.email=pat@example.org", "pull", "-q")  # the driver's sidecar
    sync_vault(a)
    result = sync_vault(c)
    assert [note.path for note in result.brought_in] == [TRAP]
