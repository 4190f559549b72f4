"""Secrets never leave the machine: sync scans what it is about to commit and push, refuses (naming
the file and the rule) and commits and pushes nothing. Each test is the user's steps that would
otherwise have published a token."""

from __future__ import annotations

import hashlib
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_sync_support import TRAP, P, Team, git, make_team, push_forged, synced_pair, trap

from memosite.errors import SafetyViolation
from memosite.salience import record_hits
from memosite.secrets import scan_text
from memosite.sessions import Session
from memosite.sync.outgoing import added_hunks
from memosite.sync.run import sync_vault

# Made at run time, so no literal token sits in the repository.
TOKEN = "ghp_" + hashlib.sha256(b"memosite sync test").hexdigest()[:36]
AWS_KEY = "AKIA" + "QYLPMN5HHHFPZAM2"


@pytest.fixture
def team(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Team]:
    yield from make_team(tmp_path, monkeypatch)


def rule_of(text: str) -> str:
    [finding] = scan_text(text)
    return finding.kind


def remote_history(team: Team) -> str:
    return git(team.remote, "log", "-p", "--all", "--format=%H")


def test_a_hand_edited_record_holding_a_token_is_neither_committed_nor_pushed(team: Team, run_cli: Any) -> None:
    a, _b = synced_pair(team)
    record = a.root / TRAP
    record.write_text(record.read_text(encoding="utf-8") + f"\nДеплой: export GH_TOKEN={TOKEN}\n", encoding="utf-8")
    head, remote = git(a.root, "rev-parse", "HEAD"), git(team.remote, "rev-parse", "main")
    done = run_cli("sync", "--vault", str(a.root))
    assert done.exit_code != 0
    [line] = done.stderr.strip().splitlines()
    assert TRAP in line and rule_of(TOKEN) in line and "nothing was committed or pushed" in line
    assert TOKEN not in line  # the refusal never prints the secret
    assert git(a.root, "rev-parse", "HEAD") == head and git(team.remote, "rev-parse", "main") == remote
    assert TRAP in git(a.root, "status", "--porcelain")  # the edit is still there, uncommitted
    assert TOKEN not in remote_history(team)


@pytest.mark.slow
def test_a_token_a_write_swept_into_a_commit_is_not_pushed_and_the_remedy_works(team: Team, run_cli: Any) -> None:
    a, _b = synced_pair(team)
    record = a.root / TRAP
    record.write_text(record.read_text(encoding="utf-8") + f"\ntoken {TOKEN}\n", encoding="utf-8")
    trap(a, slug="another", body="a write whose commit takes every change along\n")
    assert TOKEN in git(a.root, "log", "-p", "-1")  # the hand edit rode along in a local commit
    remote = git(team.remote, "rev-parse", "main").strip()

    def refused() -> str:
        done = run_cli("sync", "--vault", str(a.root))
        assert done.exit_code != 0 and rule_of(TOKEN) in done.stderr and TOKEN not in done.stderr
        assert git(team.remote, "rev-parse", "main").strip() == remote and TOKEN not in remote_history(team)
        return done.stderr

    # The view rebuilt from the record holds it too: sync names it, and where the secret comes from.
    assert "TRAPS.md" in (message := refused()) and "a compiled view" in message
    record.write_text(
        record.read_text(encoding="utf-8").replace(f"token {TOKEN}", "token: elsewhere"), encoding="utf-8"
    )
    # The record is clean now, but the commit the write made still holds the token.
    message = refused()
    assert f"{TRAP}, line" in message and "not pushed yet" in message and "reset --soft" in message
    git(a.root, "reset", "--soft", remote)  # what the message says to do
    assert run_cli("sync", "--vault", str(a.root)).exit_code == 0
    assert TOKEN not in remote_history(team) and "another" in git(team.remote, "ls-tree", "-r", "main")


@pytest.mark.slow
def test_a_session_log_line_holding_a_key_is_not_pushed(team: Team) -> None:
    a, _ = synced_pair(team)
    session = Session.start(a, P, goals=["Релиз"])
    events = next((a.root / "projects/demo/sessions").glob("*/events.jsonl"))
    sync_vault(a)
    line = {"schema_version": "0.3.0", "event": {"type": "message", "text": f"aws_access_key_id = {AWS_KEY}"}}
    with events.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(line) + "\n")
    with pytest.raises(SafetyViolation, match=r"events\.jsonl, line"):
        sync_vault(a)
    assert AWS_KEY not in remote_history(team)
    assert session is not None


def test_text_the_remote_already_holds_is_not_this_machines_to_refuse(team: Team) -> None:
    a, b = synced_pair(team)
    text = (a.root / TRAP).read_text(encoding="utf-8").replace("Take locks", f"({TOKEN}) Take locks")
    push_forged(team, {TRAP: ("100644", text.encode("utf-8"))}, "an old machine pushed a token")
    record_hits(b, P, ["lock-order"])  # b changes the same record: the merge writes a version of its own
    result = sync_vault(b)
    assert result.pushed and result.integration == "merge"


def test_a_symlink_in_the_vault_is_never_followed_to_scan_or_commit_what_it_points_at(team: Team) -> None:
    a, _ = synced_pair(team)
    outside = team.base / "elsewhere.env"
    outside.write_text(f"GH_TOKEN={TOKEN}\n", encoding="utf-8")
    (a.root / "projects/demo/traps/linked.md").symlink_to(outside)
    result = sync_vault(a)  # not refused: the link is left out, not read
    assert [item.path for item in result.left_out] == ["projects/demo/traps/linked.md"]
    assert TOKEN not in remote_history(team)


def test_a_clean_sync_scans_only_what_leaves(team: Team) -> None:
    a, b = synced_pair(team)
    trap(a, slug="second", body="Nothing secret: sha256 " + hashlib.sha256(b"x").hexdigest() + "\n")
    assert sync_vault(a).pushed
    assert sync_vault(b).integration == "fast-forward"


# --- what is scanned ------------------------------------------------------------------------------

lines = st.lists(st.text(alphabet=st.characters(codec="utf-8", exclude_characters="\r\n"), max_size=12), max_size=12)


def as_bytes(items: list[str]) -> bytes:
    return "".join(f"{item}\n" for item in items).encode("utf-8")


@settings(max_examples=300, deadline=None)
@given(new=lines, old=lines)
def test_every_line_a_version_adds_is_scanned_and_no_line_it_kept(new: list[str], old: list[str]) -> None:
    hunks = added_hunks(as_bytes(new), [as_bytes(old)])
    scanned = {start + offset: line for start, text in hunks for offset, line in enumerate(text.split("\n"))}
    kept = set(as_bytes(old).splitlines())
    for number, line in enumerate(as_bytes(new).splitlines(), start=1):
        assert (number in scanned) == (line not in kept)
        if number in scanned:
            assert scanned[number] == line.decode("utf-8")


def test_a_finding_names_the_line_in_the_file(tmp_path: Path) -> None:
    from memosite.sync.outgoing import scan_added

    old = "Ключ\n日本語\nكلمة\n".encode()
    new = old + b"emoji \xf0\x9f\x94\x91\n" + f"GH_TOKEN={TOKEN}\n".encode()
    [leak] = scan_added("projects/demo/traps/x.md", new, [old], None)
    assert leak.finding.line == 5 and leak.finding.kind == rule_of(TOKEN)
    assert subprocess.run(["git", "--version"], capture_output=True, check=False).returncode == 0


@pytest.mark.parametrize(
    "name",
    [
        f"projects/demo/sessions/{TOKEN}/events.jsonl",
        f"projects/demo/scratch/{TOKEN}.md",
        f"projects/demo/traps/ключ-{AWS_KEY}.md",
    ],
)
def test_a_file_whose_name_holds_a_token_is_neither_committed_nor_pushed(team: Team, run_cli: Any, name: str) -> None:
    # Before: sync scanned what files hold, never their names; a session started with a token for
    # its id (refused, but its directory left behind) reached the remote in its path.
    a, _b = synced_pair(team)
    (a.root / name).parent.mkdir(parents=True, exist_ok=True)
    (a.root / name).write_text("---\ntitle: Заметка\n---\nNothing secret in here.\n", encoding="utf-8")
    remote = git(team.remote, "rev-parse", "main")
    done = run_cli("sync", "--vault", str(a.root))
    assert done.exit_code != 0
    [line] = done.stderr.strip().splitlines()
    assert "its name holds what looks like a secret" in line and "nothing was committed or pushed" in line
    assert TOKEN not in line and AWS_KEY not in line  # the refusal never prints the secret
    assert git(team.remote, "rev-parse", "main") == remote and TOKEN not in git(team.remote, "log", "--all", "--stat")


def test_a_token_in_a_commit_made_by_hand_is_not_pushed_by_its_name_either(team: Team) -> None:
    a, _b = synced_pair(team)
    name = f"projects/demo/scratch/{TOKEN}.md"
    (a.root / name).parent.mkdir(parents=True, exist_ok=True)
    (a.root / name).write_text("plain text\n", encoding="utf-8")
    git(a.root, "add", name)
    git(a.root, "-c", "user.name=Pat", "-c", "user.email=pat@example.org", "commit", "-qm", "by hand")
    remote = git(team.remote, "rev-parse", "main")
    with pytest.raises(SafetyViolation, match="its name holds what looks like a secret") as refused:
        sync_vault(a)
    assert TOKEN not in refused.value.message and git(team.remote, "rev-parse", "main") == remote
