"""Conflicts on every machine: which version is whose, resolving only what was decided, and purges.

The setup of each test is the one a team lives through: machines a and b on one bare remote edit
the body of the same record; ``a`` syncs first, so ``b`` makes the conflict (keeping its own
version in place, a's beside it) and ``a`` later fast-forwards onto it. Real vaults, real git.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_sync_support import TRAP, P, Team, git, make_team, same_everywhere, synced_pair, trap

from memosite.errors import InvalidArguments
from memosite.recordfile import read_record
from memosite.salience import record_hits
from memosite.settings import TEAM_DEFAULTS
from memosite.store import forget_record
from memosite.sync.conflicts import list_conflicts, resolve_conflict
from memosite.sync.run import sync_vault
from memosite.vault import Vault

A_BODY = "a's edit: take locks in id order.\n"
B_BODY = "b's edit: take locks by address.\n"


@pytest.fixture
def team(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Team]:
    yield from make_team(tmp_path, monkeypatch)


def conflict_on_both(team: Team) -> tuple[Vault, Vault]:
    """``b`` made the conflict, ``a`` fast-forwarded onto it: both hold the same two files."""
    a, b = synced_pair(team)
    trap(a, body=A_BODY)
    trap(b, body=B_BODY)
    sync_vault(a)
    assert [c.path for c in sync_vault(b).conflicts] == [TRAP]
    assert sync_vault(a).integration == "fast-forward"
    same_everywhere(a, b)
    return a, b


def state(vault: Vault) -> tuple[str, dict[str, bytes]]:
    """HEAD and every file under projects/: what a refused command must leave as it was."""
    files = {p.relative_to(vault.root).as_posix(): p.read_bytes() for p in (vault.root / "projects").rglob("*.md")}
    return git(vault.root, "rev-parse", "HEAD"), files


# --- 1. resolve without --take needs an edit --------------------------------------------------


@pytest.mark.slow
def test_resolve_without_take_refuses_a_record_unchanged_since_the_conflict(team: Team, run_cli) -> None:  # type: ignore[no-untyped-def]
    a, b = conflict_on_both(team)
    for vault in (b, a):  # the machine that made the conflict, and the one that received it
        before = state(vault)
        refused = run_cli("resolve", "lock-order", "--vault", str(vault.root))
        assert refused.exit_code != 0
        assert refused.stderr.count("\n") == 1 and "Traceback" not in refused.stderr
        assert "unchanged since the conflict: edit it, or pass --take mine|theirs" in refused.stderr
        assert state(vault) == before and git(vault.root, "status", "--porcelain") == ""
        as_json = run_cli("resolve", "lock-order", "--vault", str(vault.root), "--json")
        assert as_json.exit_code != 0 and as_json.json()["error"]["code"] == "INVALID_ARGUMENTS"


@pytest.mark.slow
def test_resolve_without_take_counts_hits_as_no_edit_but_a_hand_edit_as_one(team: Team) -> None:
    _, b = conflict_on_both(team)
    record_hits(b, P, ["lock-order"])  # the record is used meanwhile: not a decision about the conflict
    with pytest.raises(InvalidArguments, match="unchanged since the conflict"):
        resolve_conflict(b, "lock-order", project=P)
    path = b.root / TRAP
    path.write_text(path.read_text(encoding="utf-8").replace("by address", "by address, then id"), encoding="utf-8")
    done = resolve_conflict(b, "lock-order", project=P)
    assert (done.take, done.kept) == ("edited", "edited") and list_conflicts(b) == []
    assert "by address, then id" in read_record(path).body


# --- 2. mine and theirs are true on every machine --------------------------------------------


def test_conflicts_name_this_machines_version_on_every_machine(team: Team, run_cli) -> None:  # type: ignore[no-untyped-def]
    a, b = conflict_on_both(team)
    [on_a], [on_b] = list_conflicts(a), list_conflicts(b)
    assert (on_a.mine, on_b.mine) == ("sidecar", "in-place")  # the same files, each machine's own work
    assert (on_a.local.written_here, on_a.remote.written_here) == (False, True)
    assert (on_b.local.written_here, on_b.remote.written_here) == (True, False)
    assert on_a.remote.commit == on_b.remote.commit and on_a.local.commit == on_b.local.commit
    text = run_cli("conflicts", "--vault", str(a.root)).stdout
    assert "in place: another machine's version" in text and "sidecar : this machine's version" in text
    assert "--take mine|theirs" in text and "local" not in text.split("\n", 1)[0]
    listed = run_cli("conflicts", "--vault", str(a.root), "--json").json()["conflicts"]
    assert [(c["mine"], c["local"]["writtenHere"], c["remote"]["writtenHere"]) for c in listed] == [
        ("sidecar", False, True)
    ]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("take", "body"), [("local", A_BODY), ("mine", A_BODY), ("remote", B_BODY), ("theirs", B_BODY)]
)
def test_take_mine_or_local_keeps_this_machines_work_where_it_runs(
    team: Team,
    run_cli,  # type: ignore[no-untyped-def]
    take: str,
    body: str,
) -> None:
    a, b = conflict_on_both(team)
    done = run_cli("resolve", "lock-order", "--take", take, "--vault", str(a.root), "--json")
    assert done.exit_code == 0, done.stderr
    assert read_record(a.root / TRAP).body == body and list_conflicts(a) == []
    assert done.json()["keptMine"] is (take in ("local", "mine"))
    sync_vault(a)
    sync_vault(b)
    assert read_record(b.root / TRAP).body == body
    same_everywhere(a, b)


@pytest.mark.slow
def test_take_mine_on_the_machine_that_made_the_conflict_keeps_its_version(team: Team, run_cli) -> None:  # type: ignore[no-untyped-def]
    _, b = conflict_on_both(team)
    done = run_cli("resolve", "lock-order", "--take", "mine", "--vault", str(b.root))
    assert done.exit_code == 0 and "kept the version in place (this machine's)" in done.stdout
    assert read_record(b.root / TRAP).body == B_BODY


@pytest.mark.slow
def test_a_machine_that_wrote_neither_version_chooses_by_place(team: Team, run_cli) -> None:  # type: ignore[no-untyped-def]
    a, b = conflict_on_both(team)
    c = team.machine("c")
    sync_vault(c)
    [conflict] = list_conflicts(c)
    assert conflict.mine is None and (conflict.local.written_here, conflict.remote.written_here) == (False, False)
    text = run_cli("conflicts", "--vault", str(c.root)).stdout
    assert "this machine wrote neither version" in text and "--take in-place|sidecar" in text
    assert text.count("another machine's version") == 2 and "this machine's version" not in text
    before = state(c)
    refused = run_cli("resolve", "lock-order", "--take", "local", "--vault", str(c.root))
    assert refused.exit_code != 0 and refused.stderr.count("\n") == 1
    assert (
        "this machine wrote neither version" in refused.stderr and "--take in-place or --take sidecar" in refused.stderr
    )
    assert state(c) == before
    assert run_cli("resolve", "lock-order", "--take", "sidecar", "--vault", str(c.root)).exit_code == 0
    assert read_record(c.root / TRAP).body == A_BODY
    sync_vault(c)
    sync_vault(a)
    sync_vault(b)
    same_everywhere(a, b, c)


# --- 3. a purge ends the conflict --------------------------------------------------------------


@pytest.mark.slow
def test_a_purge_ends_the_conflict_on_every_machine(team: Team, run_cli) -> None:  # type: ignore[no-untyped-def]
    a, b = conflict_on_both(team)
    [conflict] = list_conflicts(a)
    forget_record(a, P, record_id="lock-order", purge=True)
    [pending] = list_conflicts(a)  # before the sync: true here, and said so
    assert pending.removal is not None and pending.removal.label().startswith("purged on this machine (by ")
    result = sync_vault(a)
    assert [(n.path, n.sidecar) for n in result.ended_by_purge] == [(TRAP, conflict.sidecar)]
    assert "conflict ended by the purge of" in "\n".join(result.lines())
    assert not (a.root / conflict.sidecar).exists() and list_conflicts(a) == []
    sync_vault(b)
    assert not (b.root / TRAP).exists() and not (b.root / conflict.sidecar).exists()
    assert run_cli("conflicts", "--vault", str(b.root)).stdout.strip() == "no conflicts"
    same_everywhere(a, b)


@pytest.mark.slow
def test_a_purge_that_meets_the_conflict_in_a_merge_ends_it(team: Team) -> None:
    a, b = synced_pair(team)
    trap(a, body=A_BODY)
    sync_vault(a)
    trap(b, body=B_BODY)
    sync_vault(b)  # the conflict, made on b, pushed
    forget_record(a, P, record_id="lock-order", purge=True)  # a purges before it has seen the conflict
    result = sync_vault(a)
    assert result.integration == "merge" and [n.path for n in result.purged] == [TRAP]
    assert [n.path for n in result.ended_by_purge] == [TRAP] and list_conflicts(a) == []
    sync_vault(b)
    assert list_conflicts(b) == []
    same_everywhere(a, b)


@pytest.mark.slow
def test_a_sidecar_whose_record_was_deleted_elsewhere_says_where(team: Team, run_cli) -> None:  # type: ignore[no-untyped-def]
    a, b = conflict_on_both(team)
    (a.root / TRAP).unlink()  # removed by hand, no purge: the sidecar stays, as a version to decide on
    sync_vault(a)
    sync_vault(b)
    [conflict] = list_conflicts(b)
    assert conflict.removal is not None and (conflict.removal.purged, conflict.removal.here) == (False, False)
    text = run_cli("conflicts", "--vault", str(b.root)).stdout
    assert "no version: deleted on another machine (by memosite <memosite@localhost> in " in text
    assert "here" not in text.split("no version:", 1)[1].split("\n", 1)[0]
    [on_a] = list_conflicts(a)
    assert on_a.removal is not None and on_a.removal.label().startswith("deleted on this machine (by ")


# --- 4. chained conflicts: the version in place is described as it is now ---------------------


def chained_conflicts(team: Team) -> tuple[Vault, Vault]:
    """Two rounds of both machines writing the trap: ``a`` ends with its second write in place
    and three sidecars beside it (b's first, its own first, b's second)."""
    a, b = synced_pair(team)
    for round_ in ("v1", "v2"):
        trap(a, body=f"A {round_}\n")
        trap(b, body=f"B {round_}\n")
        sync_vault(b)
        sync_vault(a)
    return a, b


@pytest.mark.slow
def test_the_version_in_place_is_described_by_the_write_that_gave_it_its_content(team: Team) -> None:
    a, _ = chained_conflicts(team)
    found = list_conflicts(a)
    assert sorted(read_record(a.root / c.sidecar).body for c in found) == ["A v1\n", "B v1\n", "B v2\n"]
    in_place = {(c.local.commit, c.local.author, c.local.written_here, c.local.updated) for c in found}
    assert len(in_place) == 1  # one file in place, one description, whichever sidecar it stands beside
    [(commit, _, written_here, updated)] = in_place
    assert written_here is True and updated == read_record(a.root / TRAP).frontmatter["updated"]
    assert commit == git(a.root, "log", "-1", "--format=%h", "--abbrev=7", "HEAD^1", "--", TRAP).strip()


@pytest.mark.slow
def test_take_mine_never_brings_back_an_older_write_of_this_machine(team: Team, run_cli) -> None:  # type: ignore[no-untyped-def]
    a, _ = chained_conflicts(team)
    for conflict in list_conflicts(a):
        own_older = read_record(a.root / conflict.sidecar).body == "A v1\n"
        done = run_cli("resolve", conflict.short_id, "--take", "mine", "--vault", str(a.root))
        if own_older:  # both versions are this machine's: mine names no one version
            assert done.exit_code != 0 and done.stderr.count("\n") == 1
            assert "both versions" in done.stderr and "--take in-place" in done.stderr
            assert run_cli("resolve", conflict.short_id, "--take", "in-place", "--vault", str(a.root)).exit_code == 0
        else:
            assert done.exit_code == 0, done.stderr
        assert read_record(a.root / TRAP).body == "A v2\n"
    assert list_conflicts(a) == []


@pytest.mark.slow
def test_take_mine_refuses_an_older_write_when_a_newer_one_of_this_machine_stands_beside_it(
    team: Team,
    run_cli,  # type: ignore[no-untyped-def]
) -> None:
    _, b = chained_conflicts(team)
    sync_vault(b)  # b now holds a's v2 in place, its own v1 and v2 in sidecars
    [older] = [c for c in list_conflicts(b) if read_record(b.root / c.sidecar).body == "B v1\n"]
    before = state(b)
    refused = run_cli("resolve", older.short_id, "--take", "mine", "--vault", str(b.root))
    assert refused.exit_code != 0 and refused.stderr.count("\n") == 1
    assert "newer version" in refused.stderr and state(b) == before


@pytest.mark.slow
def test_an_uncommitted_edit_in_place_is_this_machines_version(team: Team) -> None:
    a, _ = conflict_on_both(team)
    path = a.root / TRAP
    path.write_text(path.read_text(encoding="utf-8").replace("by address", "by address, by hand"), encoding="utf-8")
    [conflict] = list_conflicts(a)
    assert (conflict.local.uncommitted, conflict.local.written_here, conflict.local.commit) == (True, True, None)


@pytest.mark.slow
def test_the_hint_names_the_sidecar_when_a_record_has_several(team: Team, run_cli) -> None:  # type: ignore[no-untyped-def]
    a, _ = chained_conflicts(team)
    text = run_cli("conflicts", "--vault", str(a.root)).stdout
    for conflict in list_conflicts(a):
        assert f"memosite resolve {conflict.short_id} --take" in text
    assert "memosite resolve lock-order --take" not in text


# --- 5. a conflict on a file that is not a record ----------------------------------------------


def team_settings(vault: Vault, **ttl: int) -> None:
    """Set team settings by hand in the vault's config.json (the machine's own are elsewhere)."""
    (vault.root / "config.json").write_text(json.dumps({"ttl": ttl}, indent=2) + "\n", encoding="utf-8")


def config_conflict(team: Team) -> tuple[Vault, Vault, str]:
    """``a`` and a stranger vault set the same team setting differently; the stranger joins a's
    vault with --allow-unrelated: config.json gets a sidecar (returned)."""
    a = team.machine("a")
    team_settings(a, scratchDays=5)
    trap(a)
    sync_vault(a)
    stranger = team.machine("stranger")
    team_settings(stranger, scratchDays=9)
    trap(stranger, slug="only-on-stranger", body="s\n")
    result = sync_vault(stranger, allow_unrelated=True)
    [note] = result.conflicts
    assert note.path == "config.json" and note.sidecar.startswith("config.conflict.")
    return a, stranger, note.sidecar


def test_a_config_conflict_is_listed_with_its_diff_and_in_status(team: Team, run_cli) -> None:  # type: ignore[no-untyped-def]
    _, stranger, sidecar = config_conflict(team)
    listed = run_cli("conflicts", "--vault", str(stranger.root), "--project", P)
    assert listed.exit_code == 0 and "no conflicts" not in listed.stdout
    assert f"config.json: config.json  (sidecar {sidecar}" in listed.stdout
    assert '"scratchDays": 9' in listed.stdout
    [conflict] = run_cli("conflicts", "--vault", str(stranger.root), "--json").json()["conflicts"]
    assert (conflict["path"], conflict["project"], conflict["id"]) == ("config.json", None, None)
    assert "scratchDays" in conflict["diff"]
    status = run_cli("status", "--vault", str(stranger.root)).stdout
    short_id = conflict["shortId"]
    assert f"conflict: config.json: in place and in {sidecar} (memosite resolve {short_id})" in status
    counted = run_cli("status", "--vault", str(stranger.root), "--project", P, "--json").json()["conflicts"]
    assert counted == [sidecar]  # the count agrees with the lines


@pytest.mark.slow
@pytest.mark.parametrize("ref", ["config.json", "config", "short id"])
def test_a_config_conflict_is_resolved_by_its_id_or_the_file_name(team: Team, run_cli, ref: str) -> None:  # type: ignore[no-untyped-def]
    a, stranger, sidecar = config_conflict(team)
    [conflict] = list_conflicts(stranger)
    name = conflict.short_id if ref == "short id" else ref
    done = run_cli("resolve", name, "--take", "theirs", "--vault", str(stranger.root), "--project", P)
    assert done.exit_code == 0, done.stderr
    assert not (stranger.root / sidecar).exists() and list_conflicts(stranger) == []
    assert json.loads((stranger.root / "config.json").read_text(encoding="utf-8"))["ttl"]["scratchDays"] == 5
    assert git(stranger.root, "status", "--porcelain") == ""
    sync_vault(stranger)
    sync_vault(a)
    same_everywhere(a, stranger)


def test_a_joining_vaults_untouched_default_config_takes_the_teams(team: Team) -> None:
    a = team.machine("a")
    (a.root / "config.json").write_text(json.dumps({"ttl": {"scratchDays": 3}, "sessions": {"keep": 9}}), "utf-8")
    trap(a)
    sync_vault(a)
    stranger = team.machine("stranger")
    (stranger.root / "config.json").write_text(json.dumps(TEAM_DEFAULTS, indent=2) + "\n", encoding="utf-8")
    trap(stranger, slug="only-on-stranger", body="s\n")
    result = sync_vault(stranger, allow_unrelated=True)
    assert result.conflicts == []
    merged = json.loads((stranger.root / "config.json").read_text(encoding="utf-8"))
    assert (merged["ttl"]["scratchDays"], merged["sessions"]["keep"], merged["ttl"]["reviewDays"]) == (3, 9, 14)
    assert "vaultGit" not in merged
