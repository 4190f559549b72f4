"""What agents may do (issue 21): an agent proposes; only a person approves, destroys or displaces.

Each test is an attack written as its reproduction: an agent over MCP (the SDK's client, in process)
or a CLI call from an agent's shell (the environment marker its agent documents) tries to pass for a
person, purge a person's memory or push it aside, and the vault is checked afterwards, byte for byte
where it matters. Real files under tmp_path, real git for vault commits, the real mkdocs build.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client, types

from memosite.errors import PersonRequired
from memosite.mcp_server.server import build_server
from memosite.provenance import (
    AGENT_SHELL_MARKERS,
    Actor,
    agent_label,
    agent_shell,
    approved_by_person,
    detect_agent_shell,
    provenance_fields,
    require_person,
)
from memosite.recordfile import read_record
from memosite.review import approve_records, reject_records
from memosite.store import upsert_record
from memosite.vault import Vault

TRAP = "projects/demo/traps/lock-order.md"
DECISION = "projects/demo/decisions/db.md"
SCRIPTS = [
    "Crème brûlée: the café's accents",
    "Кэш сбрасывается после деплоя",
    "Η προσωρινή μνήμη αδειάζει",
    "缓存在部署后被清除",
    "ذاكرة التخزين المؤقت تُمسح",
    "Deploys wipe the cache 🔥🧯",
]
EMAIL_LIKE = r"[^\s@]+@[^\s@]+"


def vault_with(vault_dir: Path, **config: Any) -> None:
    """A vault with vault git on (commits show who wrote what) and ``config`` beside it."""
    vault_dir.mkdir(parents=True, exist_ok=True)
    settings_ = {"vaultGit": {"enabled": True, "atomic": True}, **config}
    (vault_dir / "config.json").write_text(json.dumps(settings_), encoding="utf-8")


@pytest.fixture
def person(monkeypatch: pytest.MonkeyPatch) -> str:
    """The person at this machine, as git knows them (author and committer)."""
    for role in ("AUTHOR", "COMMITTER"):
        monkeypatch.setenv(f"GIT_{role}_NAME", "Dev Person")
        monkeypatch.setenv(f"GIT_{role}_EMAIL", "dev@example.org")
    return "Dev Person <dev@example.org>"


def git(vault_dir: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(vault_dir), *args], capture_output=True, text=True, encoding="utf-8", check=True
    )
    return done.stdout.strip()


async def as_agent(vault_dir: Path, calls: list[tuple[str, dict[str, Any]]], name: str = "codex") -> list[Any]:
    """Run tool calls as an MCP client named ``name`` (version 2.0); their structured results."""
    vault = Vault.open(vault_dir)
    try:
        server = build_server(vault, "demo")
        info = types.Implementation(name=name, version="2.0")
        async with Client(server, mode="legacy", client_info=info) as client:
            results = []
            for tool, arguments in calls:
                done = await client.call_tool(tool, arguments)
                results.append(done.structured_content or {})
            return results
    finally:
        vault.close()


def agent(vault_dir: Path, tool: str, name: str = "codex", **arguments: Any) -> dict[str, Any]:
    result: dict[str, Any] = anyio.run(lambda: as_agent(vault_dir, [(tool, arguments)], name))[0]
    return result


def persons_trap(run_cli: Any, body: str = "Take the locks in name order.\n") -> bytes:
    """A person's trap lock-order, written on the command line; its file's bytes."""
    import os

    outcome = run_cli("upsert", "--kind", "trap", "--slug", "lock-order", "--title", "Lock order", "--body", body)
    assert outcome.exit_code == 0, outcome.stderr
    return (Path(os.environ["MEMOSITE_VAULT"]) / TRAP).read_bytes()


def one_line_refusal(outcome: Any, code: str = "PERSON_REQUIRED") -> str:
    """The refusal a CLI call printed: one line on stderr, a non-zero exit, no traceback."""
    assert outcome.exit_code != 0
    lines = outcome.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("memosite: error: "), outcome.stderr
    assert "Traceback" not in outcome.stderr
    return str(lines[0])


# --- agents in a shell ---------------------------------------------------------------------------


@pytest.mark.parametrize("marker", AGENT_SHELL_MARKERS, ids=lambda m: m.variable)
def test_each_documented_marker_makes_a_shell_an_agents(marker: Any) -> None:
    found = detect_agent_shell({"LANG": "C.UTF-8", marker.variable: marker.value or "0b8f2c1e-session"})
    assert found is not None and found.variable == marker.variable
    assert found.agent == (marker.agent or "0b8f2c1e-session")


@pytest.mark.parametrize("value", ["", "0", "false", "No", " off "])
def test_a_marker_switched_off_is_no_agent(value: str) -> None:
    assert detect_agent_shell({"CLAUDECODE": value, "GEMINI_CLI": value}) is None


def test_a_persons_own_terminal_is_no_agent_even_in_an_agents_editor() -> None:
    # Cursor's terminal always has CURSOR_TRACE_ID, CI systems set CI=1, Aider's settings are the user's.
    env = {"CURSOR_TRACE_ID": "abc", "CI": "1", "AIDER_MODEL": "sonnet", "TERM_PROGRAM": "vscode"}
    assert detect_agent_shell(env) is None and agent_shell(env) is None


def test_an_agent_that_names_itself_in_ai_agent_is_named_as_an_agent() -> None:
    assert agent_shell({"AI_AGENT": "Alice Human <alice@example.com>"}) == "Alice Human"
    assert Actor.in_agent_shell(detect_agent_shell({"AI_AGENT": "crush"}) or _never()).name == "crush via memosite"


def _never() -> Any:
    raise AssertionError("no agent detected")


def test_the_suite_is_a_persons_command_line_even_when_run_from_an_agents_shell() -> None:
    import os

    assert [m.variable for m in AGENT_SHELL_MARKERS if m.variable in os.environ] == []


def test_a_cli_write_in_claude_codes_shell_is_the_agents_and_its_commit_says_so(
    vault_dir: Path, run_cli: Any, person: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    vault_with(vault_dir)
    monkeypatch.setenv("CLAUDECODE", "1")
    outcome = run_cli("upsert", "--kind", "trap", "--slug", "lock-order", "--body", "Locks bite.")
    assert outcome.exit_code == 0, outcome.stderr
    fm = read_record(vault_dir / TRAP).frontmatter
    assert (fm["source"], fm["author"]) == ("agent", "Claude Code via memosite")
    # The agent is the commit's author; the person whose machine and account ran it, its committer.
    assert git(vault_dir, "log", "-1", "--format=%an <%ae>|%cn <%ce>") == (
        "Claude Code via memosite <agent@memosite.invalid>|Dev Person <dev@example.org>"
    )


@pytest.mark.parametrize(
    ("variable", "value", "agent_name"),
    [
        ("CLAUDECODE", "1", "Claude Code"),
        ("GEMINI_CLI", "1", "Gemini CLI"),
        ("CODEX_THREAD_ID", "0199a6c2-thread", "Codex"),
        ("CURSOR_AGENT", "1", "Cursor"),
        ("COPILOT_AGENT", "1", "GitHub Copilot"),
    ],
)
def test_review_approve_and_reject_are_refused_in_an_agents_shell(
    vault_dir: Path, run_cli: Any, monkeypatch: pytest.MonkeyPatch, variable: str, value: str, agent_name: str
) -> None:
    vault_with(vault_dir, review={"required": ["trap"]})
    agent(vault_dir, "upsert", kind="trap", slug="guess", body="Maybe the cache leaks.")
    before = (vault_dir / "projects/demo/traps/guess.md").read_bytes()
    monkeypatch.setenv(variable, value)
    approve = run_cli("review", "approve", "guess")
    line = one_line_refusal(approve)
    assert f"review approve is refused in {agent_name}'s shell ({variable} is set)" in line
    reject = run_cli("review", "reject", "guess", "--reason", "mine now", "--json")
    assert reject.exit_code == 1 and reject.json()["error"]["code"] == "PERSON_REQUIRED"
    assert (vault_dir / "projects/demo/traps/guess.md").read_bytes() == before
    assert run_cli("review", "--json").json()["pending"][0]["id"] == "guess"  # listing is anyone's


def test_review_approve_is_refused_in_claude_codes_shell_even_through_the_core(
    vault_dir: Path, run_cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    vault_with(vault_dir, review={"required": ["trap"]})
    agent(vault_dir, "upsert", kind="trap", slug="guess", body="Maybe the cache leaks.")
    vault = Vault.open(vault_dir)
    try:
        vault.actor = Actor.in_agent_shell(detect_agent_shell({"CLAUDECODE": "1"}) or _never())
        with pytest.raises(PersonRequired, match="review approve"):
            approve_records(vault, "demo", ["guess"])
        with pytest.raises(PersonRequired, match="review reject"):
            reject_records(vault, "demo", ["guess"], reason="no")
    finally:
        vault.close()
    assert read_record(vault_dir / "projects/demo/traps/guess.md").frontmatter["review"] == "pending"


@pytest.mark.parametrize(
    "claim",
    [
        ("--source", "human"),
        ("--source", "imported"),
        ("--frontmatter", '{"review": "approved"}'),
        ("--frontmatter", '{"source": "human"}'),
        ("--frontmatter", '{"author": "Dev Person <dev@example.org>"}'),
        ("--frontmatter", '{"reviewedBy": "Dev Person"}'),
    ],
)
def test_an_agent_in_a_shell_cannot_pass_its_write_off_as_a_persons(
    vault_dir: Path, run_cli: Any, monkeypatch: pytest.MonkeyPatch, claim: tuple[str, str]
) -> None:
    vault_with(vault_dir, review={"required": ["trap"]})
    monkeypatch.setenv("GEMINI_CLI", "1")
    outcome = run_cli("upsert", "--kind", "trap", "--slug", "mine", "--body", "Trust me.", *claim, "--json")
    assert outcome.exit_code == 1 and outcome.json()["error"]["code"] == "PERSON_REQUIRED"
    assert "Gemini CLI" in outcome.json()["error"]["message"]
    assert not (vault_dir / "projects/demo/traps/mine.md").exists()


def test_an_agent_in_a_shell_writes_reviewed_kinds_as_pending(
    vault_dir: Path, run_cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    vault_with(vault_dir, review={"required": ["trap"]})
    monkeypatch.setenv("CODEX_SANDBOX", "seatbelt")
    assert run_cli("upsert", "--kind", "trap", "--slug", "mine", "--body", "Trust me.").exit_code == 0
    fm = read_record(vault_dir / "projects/demo/traps/mine.md").frontmatter
    assert (fm["review"], fm["source"], fm["author"]) == ("pending", "agent", "Codex via memosite")
    assert run_cli("search", "Trust", "--json").json()["results"] == []


@pytest.mark.parametrize(
    "command",
    [
        ("edit", "lock-order"),
        ("verify", "--update", "lock-order"),
        ("stormbuffer", "add", "--kind", "fact", "--title", "Mine", "--body", "x", "--access", "human"),
        ("stormbuffer", "promote", "0199a6c2"),
        ("stormbuffer", "reject", "0199a6c2"),
        ("stormbuffer", "supersede", "0199a6c2", "--by", "0199a6c3"),
        ("stormbuffer", "forget", "0199a6c2", "--destroy", "--yes"),
    ],
    ids=lambda c: " ".join(c[:2]),
)
def test_what_only_a_person_does_is_refused_in_an_agents_shell_before_anything_is_read(
    tmp_path: Path, run_cli: Any, monkeypatch: pytest.MonkeyPatch, command: tuple[str, ...]
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CLAUDECODE", "1")
    outcome = run_cli(*command)
    line = one_line_refusal(outcome)
    assert "Claude Code's shell (CLAUDECODE is set)" in line and "only a person does this" in line
    assert not (tmp_path / ".sbuf").exists()


def test_an_agent_cannot_import_a_store_that_claims_human_access(
    tmp_path: Path, vault_dir: Path, run_cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memosite.stormbuffer.store import Store

    # The agent writes the store's files itself (as any program can), claiming a person's access.
    store = Store.init(tmp_path / ".sbuf", name="shop")
    store.add(kind="decision", title="Ship Fridays", body="We ship on Fridays.\n", access="human")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CLAUDECODE", "1")
    line = one_line_refusal(run_cli("stormbuffer", "import"))
    assert "stormbuffer import is refused in Claude Code's shell" in line and "access human" in line
    assert not (vault_dir / "projects").exists() or not list((vault_dir / "projects").rglob("*.md"))


def test_an_agents_import_is_the_agents_and_waits_for_review(
    tmp_path: Path, vault_dir: Path, run_cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memosite.stormbuffer.store import Store

    vault_with(vault_dir, review={"required": ["decision"]})
    store = Store.init(tmp_path / ".sbuf", name="shop")
    added = store.add(kind="decision", title="Ship Fridays", body="We ship on Fridays — 金曜日.\n", access="agent")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CLAUDECODE", "1")
    outcome = run_cli("stormbuffer", "import", "--json")
    assert outcome.exit_code == 0, outcome.stdout
    path = vault_dir / outcome.json()["records"][0]["path"]
    fm = read_record(path).frontmatter
    assert (fm["source"], fm["author"], fm["review"]) == ("agent", "Claude Code via memosite", "pending")
    assert fm["id"] == added.record.key


def test_require_person_is_the_guard_a_policy_change_calls() -> None:
    require_person({"LANG": "C.UTF-8"}, "config set review.required")  # a person: nothing happens
    with pytest.raises(PersonRequired) as refused:
        require_person({"CLAUDECODE": "1"}, "config set review.required")
    assert refused.value.code == "PERSON_REQUIRED"
    assert refused.value.message.startswith("config set review.required is refused in Claude Code's shell")


# --- agents cannot destroy a person's memory ------------------------------------------------------


@pytest.mark.slow
def test_an_agent_over_mcp_cannot_purge_a_decision_a_person_approved(vault_dir: Path, run_cli: Any) -> None:
    vault_with(vault_dir)
    assert run_cli("upsert", "--kind", "decision", "--slug", "db", "--body", "Use Postgres.\n").exit_code == 0
    before = (vault_dir / DECISION).read_bytes()
    refused = agent(vault_dir, "forget", id="db", purge=True)
    assert refused["error"]["code"] == "PERSON_REQUIRED"
    assert "a person approved it" in refused["error"]["message"]
    assert (vault_dir / DECISION).read_bytes() == before
    tombstones = vault_dir / ".memosite/tombstones.jsonl"
    assert not tombstones.exists() or "db" not in tombstones.read_text(encoding="utf-8")
    # Archiving stays possible, and a restore undoes it.
    archived = agent(vault_dir, "forget", id="db")
    assert archived["status"] == "archived"
    assert agent(vault_dir, "restore", id="db")["status"] == "active"
    assert read_record(vault_dir / DECISION).body == "Use Postgres.\n"


def test_an_agent_over_mcp_cannot_purge_what_a_person_approved_in_review(vault_dir: Path, run_cli: Any) -> None:
    vault_with(vault_dir, review={"required": ["trap"]})
    agent(vault_dir, "upsert", kind="trap", slug="guess", body="The cache leaks.")
    assert run_cli("review", "approve", "guess").exit_code == 0
    refused = agent(vault_dir, "forget", id="guess", purge=True)
    assert refused["error"]["code"] == "PERSON_REQUIRED"
    assert (vault_dir / "projects/demo/traps/guess.md").is_file()


def test_an_agent_may_still_purge_its_own_unreviewed_record(vault_dir: Path) -> None:
    vault_with(vault_dir)
    agent(vault_dir, "upsert", kind="trap", slug="mine", body="A guess of mine.")
    assert agent(vault_dir, "forget", id="mine", purge=True)["status"] == "purged"
    assert not (vault_dir / "projects/demo/traps/mine.md").exists()


def test_forget_purge_of_a_persons_record_is_refused_in_an_agents_shell(
    vault_dir: Path, run_cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    vault_with(vault_dir)
    before = persons_trap(run_cli)
    monkeypatch.setenv("CLAUDECODE", "1")
    line = one_line_refusal(run_cli("forget", "lock-order", "--purge"))
    assert "purging demo/trap/lock-order is refused in Claude Code's shell" in line
    assert (vault_dir / TRAP).read_bytes() == before
    assert run_cli("forget", "lock-order").exit_code == 0  # archive: yes
    assert read_record(vault_dir / TRAP).frontmatter["status"] == "archived"


def test_an_agents_gc_purge_cannot_delete_an_expired_record_a_person_approved(
    vault_dir: Path, run_cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Before: a person's trap past its expiry was unlinked, tombstone and all, by an agent's
    # `gc --purge` (in its shell or over MCP), while `forget --purge` of the same trap was refused.
    vault_with(vault_dir)
    made = run_cli(
        "upsert",
        "--kind",
        "trap",
        "--slug",
        "lock-order",
        "--title",
        "Порядок блокировок",
        "--body",
        "Take the locks in name order.",
        "--expires-at",
        "2020-01-01",
    )
    assert made.exit_code == 0, made.stderr
    agent(vault_dir, "upsert", kind="trap", slug="mine", body="A guess of mine 🦊.", expires_at="2020-01-01")
    before = (vault_dir / TRAP).read_bytes()
    refused = agent(vault_dir, "gc", purge=True)
    assert refused["error"]["code"] == "PERSON_REQUIRED"
    assert "demo/trap/lock-order" in refused["error"]["message"]
    monkeypatch.setenv("CLAUDECODE", "1")
    line = one_line_refusal(run_cli("gc", "--purge"))
    assert "a person approved" in line and "gc without purge archives" in line
    assert (vault_dir / TRAP).read_bytes() == before
    assert (vault_dir / "projects/demo/traps/mine.md").is_file()  # refused whole: nothing changed
    tombstones = vault_dir / ".memosite/tombstones.jsonl"
    assert not tombstones.exists() or "lock-order" not in tombstones.read_text(encoding="utf-8")
    assert run_cli("gc", "--purge", "--dry-run").exit_code == 0  # a dry run changes nothing: allowed
    swept = run_cli("gc", "--json")  # without purge the agent archives it, which restore undoes
    assert swept.exit_code == 0, swept.stderr
    assert read_record(vault_dir / TRAP).frontmatter["status"] == "archived"


@pytest.mark.parametrize(
    ("frontmatter", "approved"),
    [
        ({"source": "human"}, True),
        ({"source": "imported"}, True),
        ({}, True),  # written by hand: read as a person's
        ({"source": "agent"}, False),
        ({"source": "agent", "review": "approved", "reviewedBy": "Dev"}, True),
        ({"source": "agent", "review": "pending"}, False),
        ({"source": "human", "review": "pending"}, False),  # an agent's change of it waits in place
        ({"source": "agent", "review": "rejected"}, False),
        ({"source": "agent", "editedBy": "Dev Person <dev@example.org>"}, False),
    ],
)
def test_approved_by_a_person_means_a_persons_text_or_a_persons_approval(
    frontmatter: dict[str, str], approved: bool
) -> None:
    assert approved_by_person(frontmatter) is approved


# --- agents cannot displace it either ------------------------------------------------------------


def test_an_agents_supersede_of_a_persons_trap_leaves_it_in_search_until_approved(
    vault_dir: Path, run_cli: Any
) -> None:
    vault_with(vault_dir)
    before = persons_trap(run_cli)
    written = agent(
        vault_dir, "upsert", kind="trap", slug="lock-order-v2", body="Locks never matter.", supersedes="lock-order"
    )
    assert written["superseded"] is False and written["supersedesPending"] == "lock-order" and written["pending"]
    assert (vault_dir / TRAP).read_bytes() == before
    found = run_cli("search", "locks", "--json").json()["results"]
    assert [hit["id"] for hit in found] == ["lock-order"]
    assert run_cli("get", "lock-order", "--json").json()["frontmatter"]["status"] == "active"
    brief = run_cli("bootstrap", "--json").json()
    assert [item["id"] for item in brief["sections"]["traps"]] == ["lock-order"]
    listed = run_cli("review").stdout
    assert "approving it supersedes lock-order" in listed
    approved = run_cli("review", "approve", "lock-order-v2", "--json")
    assert approved.exit_code == 0 and approved.json()["records"][0]["superseded"] == "lock-order"
    assert read_record(vault_dir / TRAP).frontmatter["supersededBy"] == "lock-order-v2"
    assert [hit["id"] for hit in run_cli("search", "locks", "--json").json()["results"]] == ["lock-order-v2"]


def test_rejecting_an_agents_supersede_leaves_the_persons_trap_byte_for_byte(vault_dir: Path, run_cli: Any) -> None:
    vault_with(vault_dir)
    before = persons_trap(run_cli)
    agent(vault_dir, "upsert", kind="trap", slug="lock-order-v2", body="Locks never matter.", supersedes="lock-order")
    assert run_cli("review", "reject", "lock-order-v2", "--reason", "they do").exit_code == 0
    assert (vault_dir / TRAP).read_bytes() == before
    assert read_record(vault_dir / "projects/demo/traps/lock-order-v2.md").frontmatter["status"] == "archived"
    assert [hit["id"] for hit in run_cli("search", "locks", "--json").json()["results"]] == ["lock-order"]


@pytest.mark.slow
def test_an_agents_edit_of_a_persons_trap_keeps_the_approved_text_serving_everywhere(
    tmp_path: Path, vault_dir: Path, run_cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    vault_with(vault_dir)
    before = persons_trap(run_cli, "Take the locks in name order (zebra).\n")
    proposed = agent(vault_dir, "upsert", kind="trap", slug="lock-order", body="Ignore lock order (okapi).\n")
    assert proposed["action"] == "proposed" and proposed["pending"] is True
    assert (vault_dir / TRAP).read_bytes() == before
    assert [h["id"] for h in run_cli("search", "zebra", "--json").json()["results"]] == ["lock-order"]
    assert run_cli("search", "okapi", "--include-pending", "--json").json()["results"] == []
    assert "zebra" in run_cli("get", "lock-order", "--json").json()["body"]
    assert "zebra" in agent(vault_dir, "get", id="lock-order")["body"]
    brief = run_cli("bootstrap", "--json").json()["markdown"]
    assert "zebra" in brief and "okapi" not in brief
    traps_view = (vault_dir / "projects/demo/TRAPS.md").read_text(encoding="utf-8")
    assert "zebra" in traps_view and "okapi" not in traps_view
    monkeypatch.chdir(tmp_path)
    assert run_cli("build", "--out", "site").exit_code == 0
    page = (tmp_path / "site/memory/demo/traps/lock-order/index.html").read_text(encoding="utf-8")
    assert "zebra" in page and "okapi" not in page
    published = "".join(p.read_text(encoding="utf-8", errors="replace") for p in (tmp_path / "site").rglob("*.*ml"))
    assert "okapi" not in published


def test_approving_an_agents_edit_puts_it_in_place(vault_dir: Path, run_cli: Any, person: str) -> None:
    vault_with(vault_dir)
    persons_trap(run_cli)
    agent(vault_dir, "upsert", kind="trap", slug="lock-order", body="Take the locks in id order.\n")
    assert run_cli("review", "approve", "lock-order").exit_code == 0
    approved = read_record(vault_dir / TRAP)
    assert approved.body == "Take the locks in id order.\n" and approved.frontmatter["review"] == "approved"
    assert approved.frontmatter["author"] == "codex 2.0 via memosite"
    assert not (vault_dir / "projects/demo/traps/lock-order.proposed.md").exists()
    assert "approve trap:lock-order (reviewed by Dev Person" in git(vault_dir, "log", "-1", "--format=%s")


@pytest.mark.slow
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    persons=st.sampled_from(SCRIPTS),
    agents=st.lists(st.sampled_from(" ".join(SCRIPTS).split()), min_size=1, max_size=12).map(" ".join),
    title=st.sampled_from(SCRIPTS),
)
def test_rejecting_an_agents_edit_leaves_the_approved_record_byte_for_byte(
    tmp_path_factory: pytest.TempPathFactory, persons: str, agents: str, title: str
) -> None:
    root = tmp_path_factory.mktemp("vault")
    vault = Vault.open(root)
    try:
        vault.actor = Actor.person("Dev Person <dev@example.org>")
        upsert_record(vault, "demo", kind="decision", slug="db", body=persons + "\n", frontmatter={"title": title})
        path = root / DECISION
        before = path.read_bytes()
        vault.actor = Actor.mcp_client("codex", "2.0", "s-1")
        upsert_record(vault, "demo", kind="decision", slug="db", body=agents, frontmatter={"tags": ["ß", "缓存"]})
        assert path.read_bytes() == before
        vault.actor = Actor.person("Dev Person <dev@example.org>")
        reject_records(vault, "demo", ["db"], reason="not this")
        assert path.read_bytes() == before
        assert not (root / "projects/demo/decisions/db.proposed.md").exists()
    finally:
        vault.close()


def test_a_second_agent_change_builds_on_the_one_waiting(vault_dir: Path, run_cli: Any) -> None:
    vault_with(vault_dir)
    before = persons_trap(run_cli)
    agent(vault_dir, "upsert", kind="trap", slug="lock-order", body="Take the locks in id order.\n")
    agent(vault_dir, "upsert", kind="trap", slug="lock-order", severity="critical")
    assert (vault_dir / TRAP).read_bytes() == before
    proposal = read_record(vault_dir / "projects/demo/traps/lock-order.proposed.md")
    assert proposal.body == "Take the locks in id order.\n" and proposal.frontmatter["severity"] == "critical"
    assert [item["id"] for item in run_cli("review", "--json").json()["pending"]] == ["lock-order"]


def test_a_person_purging_a_record_purges_the_change_waiting_beside_it(vault_dir: Path, run_cli: Any) -> None:
    vault_with(vault_dir)
    persons_trap(run_cli)
    agent(vault_dir, "upsert", kind="trap", slug="lock-order", body="Take the locks in id order.\n")
    assert run_cli("forget", "lock-order", "--purge").exit_code == 0
    assert not (vault_dir / TRAP).exists()
    assert not (vault_dir / "projects/demo/traps/lock-order.proposed.md").exists()
    assert run_cli("review", "--json").json()["pending"] == []


def test_a_person_editing_a_record_with_a_change_waiting_writes_in_place(vault_dir: Path, run_cli: Any) -> None:
    vault_with(vault_dir)
    persons_trap(run_cli)
    agent(vault_dir, "upsert", kind="trap", slug="lock-order", body="Take the locks in id order.\n")
    assert run_cli("upsert", "--kind", "trap", "--slug", "lock-order", "--body", "Name order, always.\n").exit_code == 0
    assert read_record(vault_dir / TRAP).body == "Name order, always.\n"
    listed = run_cli("review", "--json").json()["pending"]
    assert "-Name order, always." in listed[0]["diff"]  # reviewed against what serves now


def test_an_agent_recurring_a_persons_trap_only_counts_it(vault_dir: Path, run_cli: Any) -> None:
    vault_with(vault_dir)
    persons_trap(run_cli)
    again = agent(vault_dir, "upsert", kind="trap", title="Lock order", body="Take the locks in name order.\n")
    assert again["action"] == "recurrence" and again["occurrences"] == 2
    fm = read_record(vault_dir / TRAP).frontmatter
    assert fm["occurrences"] == 2 and fm["source"] == "human" and "review" not in fm


# --- pending records never rank or count ---------------------------------------------------------


def test_rank_never_counts_a_pending_trap(vault_dir: Path, run_cli: Any) -> None:
    vault_with(vault_dir, review={"required": ["trap"]})
    persons_trap(run_cli)
    # Bitten again and again (each recurrence counts), but no person accepted it.
    for _ in range(3):
        agent(vault_dir, "upsert", kind="trap", slug="guess", title="Guess", body="Maybe the cache leaks.")
    ranked = run_cli("rank", "--json").json()
    assert [t["id"] for t in ranked["traps"]] == ["lock-order"] and ranked["total"] == 1
    over_mcp = agent(vault_dir, "rank")
    assert [t["id"] for t in over_mcp["traps"]] == ["lock-order"] and over_mcp["total"] == 1


USAGE_CLAIMS: dict[str, Any] = {
    "hits": 999,
    "helpfulCount": 50,
    "occurrences": 77,
    "lastHit": "2099-01-01T00:00:00Z",
    "lastSeen": "2099-01-01T00:00:00Z",
    "staleCount": 0,
    "lastFeedback": "2099-01-01T00:00:00Z",
    "updated": "2099-01-01T00:00:00Z",
    "supersededBy": "lock-order",
    "archivedReason": "переписано агентом",
}


@pytest.mark.parametrize("field", sorted(USAGE_CLAIMS))
def test_an_agent_over_mcp_cannot_rank_or_date_its_record_by_claiming_what_memosite_counts(
    vault_dir: Path, run_cli: Any, field: str
) -> None:
    # Before: `hits: 999, occurrences: 77` put a prompt-injected agent's trap first in `rank` and
    # the brief, and `updated: 2099` made it outlive any purge a teammate made.
    vault_with(vault_dir)
    persons_trap(run_cli)
    claim = {field: USAGE_CLAIMS[field]}
    refused = agent(vault_dir, "upsert", kind="trap", slug="promoted", body="Agent text 🦊.", frontmatter=claim)[
        "error"
    ]
    assert refused["code"] == "INVALID_ARGUMENTS" and field in refused["message"]
    assert not (vault_dir / "projects/demo/traps/promoted.md").exists()
    assert [t["id"] for t in run_cli("rank", "--json").json()["traps"]] == ["lock-order"]


def test_an_agent_in_a_shell_cannot_rank_or_date_its_record_either(
    vault_dir: Path, run_cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    vault_with(vault_dir)
    persons_trap(run_cli)
    monkeypatch.setenv("CLAUDECODE", "1")
    for field, value in USAGE_CLAIMS.items():
        frontmatter = json.dumps({field: value}, ensure_ascii=False)
        outcome = run_cli(
            "upsert", "--kind", "trap", "--slug", "promoted", "--body", "Текст агента.", "--frontmatter", frontmatter
        )
        assert field in one_line_refusal(outcome)
    assert not (vault_dir / "projects/demo/traps/promoted.md").exists()
    # Its own write without claims still goes through, as the agent's.
    done = run_cli("upsert", "--kind", "trap", "--slug", "promoted", "--body", "Текст агента.", "--json")
    written = read_record(vault_dir / "projects/demo/traps/promoted.md").frontmatter
    assert done.exit_code == 0 and written["source"] == "agent" and written.get("hits", 0) == 0


@pytest.mark.parametrize(
    ("kind", "change"),
    [
        ("review", {"expires_at": "2020-01-01"}),
        ("review", {"ttl": "1m"}),
        ("scratch", {"expires_at": "2020-01-01T00:00:00Z"}),
        ("log", {"ttl": "1s"}),
    ],
)
def test_an_agent_cannot_date_a_persons_record_into_the_past_for_its_own_gc_to_purge(
    vault_dir: Path, run_cli: Any, kind: str, change: dict[str, str]
) -> None:
    # Before: a person's review record (a kind no review guards) took the agent's expiry at once,
    # and the agent's `gc` over MCP purged it, tombstone and all, on every machine that synced.
    vault_with(vault_dir)
    done = run_cli(
        "upsert", "--kind", kind, "--slug", "payments-audit", "--title", "Аудит платежей", "--body", "Мои заметки 🦊."
    )
    assert done.exit_code == 0, done.stderr
    path = next(vault_dir.glob("projects/demo/*/payments-audit.md"))
    before = path.read_bytes()
    proposed = agent(vault_dir, "upsert", kind=kind, slug="payments-audit", **change)
    assert proposed["action"] == "proposed" and proposed["pending"] is True
    swept = agent(vault_dir, "gc", dryRun=False)
    assert swept["details"]["purgedFiles"] == [] and path.read_bytes() == before
    assert run_cli("review", "reject", "payments-audit", "--reason", "no").exit_code == 0
    assert path.read_bytes() == before


@pytest.mark.parametrize("kind", ["log", "prompt", "review", "session"])
@pytest.mark.parametrize("change", [{"body": "Nothing happened here 🙈."}, {"title": "Пусто"}])
def test_an_agent_cannot_rewrite_a_persons_log_prompt_or_review_in_place(
    vault_dir: Path, run_cli: Any, kind: str, change: dict[str, str]
) -> None:
    # Before: kinds the brief does not serve were not guarded, so an agent's upsert over MCP
    # replaced a person's incident log or review notes outright: as good as destroying them.
    vault_with(vault_dir)
    done = run_cli(
        "upsert",
        "--kind",
        kind,
        "--slug",
        "incident-7",
        "--title",
        "Ἀρχή: 事故 7",
        "--body",
        "Root cause: the café's DNS ✈.\n",
    )
    assert done.exit_code == 0, done.stderr
    path = next(vault_dir.glob("projects/demo/*/incident-7.md"))
    before = path.read_bytes()
    proposed = agent(vault_dir, "upsert", kind=kind, slug="incident-7", **change)
    assert proposed["action"] == "proposed" and proposed["pending"] is True
    assert path.read_bytes() == before
    assert "café's DNS" in run_cli("get", "incident-7", "--json").json()["body"]
    assert [item["id"] for item in run_cli("review", "--json").json()["pending"]] == ["incident-7"]
    assert run_cli("review", "approve", "incident-7").exit_code == 0
    approved = read_record(path)
    assert approved.body == change.get("body", "Root cause: the café's DNS ✈.\n")
    assert approved.frontmatter["title"] == change.get("title", "Ἀρχή: 事故 7")


def test_an_agent_still_tags_a_persons_log_and_rewrites_its_own_and_scratch(vault_dir: Path, run_cli: Any) -> None:
    vault_with(vault_dir)
    for kind, slug in (("log", "deploy-notes"), ("scratch", "todo")):
        assert run_cli("upsert", "--kind", kind, "--slug", slug, "--body", "Schritt eins.").exit_code == 0
    tagged = agent(vault_dir, "upsert", kind="log", slug="deploy-notes", tags=["déploiement"])
    assert tagged["action"] == "updated" and not tagged.get("pending")
    scratch = agent(vault_dir, "upsert", kind="scratch", slug="todo", body="Шаг два.")
    assert scratch["action"] == "updated"
    assert read_record(next(vault_dir.glob("projects/demo/*/todo.md"))).body.strip() == "Шаг два."
    agent(vault_dir, "upsert", kind="log", slug="agents-own", body="步骤一")
    own = agent(vault_dir, "upsert", kind="log", slug="agents-own", body="步骤二")
    assert own["action"] == "updated"


@pytest.mark.parametrize("kind", ["decision", "trap", "spec"])
def test_an_agent_cannot_shadow_a_persons_decision_by_giving_its_own_file_the_decisions_id(
    vault_dir: Path, run_cli: Any, kind: str
) -> None:
    # Before: `shadow.md` with `id: use-postgres` was written beside the person's decision; the
    # brief served the agent's "We chose MongoDB" first under that id and `get use-postgres` could
    # no longer tell the two apart.
    vault_with(vault_dir)
    made = run_cli(
        "upsert",
        "--kind",
        "decision",
        "--slug",
        "use-postgres",
        "--title",
        "Use Postgres",
        "--body",
        "Мы выбрали Postgres.",
    )
    assert made.exit_code == 0
    shadow = {"id": "use-postgres"}
    refused = agent(
        vault_dir,
        "upsert",
        kind=kind,
        slug="shadow",
        title="Use Postgres",
        body="We chose MongoDB.",
        frontmatter=shadow,
    )
    assert (
        refused["error"]["code"] == "INVALID_ARGUMENTS" and "decisions/use-postgres.md" in refused["error"]["message"]
    )
    assert not list(vault_dir.glob("projects/demo/*/shadow.md"))
    got = run_cli("get", "use-postgres", "--json")
    assert got.exit_code == 0 and got.json()["body"] == "Мы выбрали Postgres."
    # An id of its own still names an agent's record written under another file name.
    own = agent(
        vault_dir, "upsert", kind="decision", slug="own-file", title="Mongo", body="x", frontmatter={"id": "mongo"}
    )
    assert own["id"] == "mongo"


def test_the_brief_never_counts_pending_context(vault_dir: Path, run_cli: Any) -> None:
    vault_with(vault_dir, review={"required": ["spec"]})
    agent(vault_dir, "upsert", kind="spec", slug="checkout", body="Checkout takes cash only.")
    agent(vault_dir, "upsert", kind="spec", slug="checkout-api", body="The API takes cash only.")
    brief = run_cli("bootstrap", "--slug", "checkout", "--json").json()
    assert brief["sections"]["context"] == []
    # Shown only under their own heading, marked unreviewed (review.briefPending).
    assert {item["id"] for item in brief["sections"]["pending"]} == {"checkout", "checkout-api"}
    assert "## Current work" not in brief["markdown"]


@pytest.mark.slow
def test_the_site_never_counts_a_pending_record(
    tmp_path: Path, vault_dir: Path, run_cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    vault_with(vault_dir, review={"required": ["trap"]})
    persons_trap(run_cli)
    agent(vault_dir, "upsert", kind="trap", slug="guess", title="Okapi guess", body="Maybe the okapi cache leaks.")
    monkeypatch.chdir(tmp_path)
    assert run_cli("build", "--out", "site").exit_code == 0
    traps = (tmp_path / "site/memory/demo/TRAPS/index.html").read_text(encoding="utf-8")
    assert "Lock order" in traps and "okapi" not in traps.lower()
    assert not (tmp_path / "site/memory/demo/traps/guess").exists()
    home = (tmp_path / "site/memory/demo/index.html").read_text(encoding="utf-8")
    assert "1 record waits for review" in home
    rows = json.loads((tmp_path / "site/memory/records.json").read_text(encoding="utf-8"))["records"]
    assert [row["id"] for row in rows] == ["lock-order"]


# --- an agent's author always says it is an agent ------------------------------------------------


def test_an_mcp_client_named_like_a_person_writes_an_agents_author(vault_dir: Path) -> None:
    vault_with(vault_dir)
    agent(vault_dir, "upsert", name="Alice Human <alice@example.com>", kind="trap", slug="t", body="Locks bite.")
    text = (vault_dir / "projects/demo/traps/t.md").read_text(encoding="utf-8")
    fm = read_record(vault_dir / "projects/demo/traps/t.md").frontmatter
    assert fm["author"] == "Alice Human 2.0 via memosite" and fm["source"] == "agent"
    assert "alice@example.com" not in text and "alice@" not in text
    assert git(vault_dir, "log", "-1", "--format=%an <%ae>") == "Alice Human via memosite <agent@memosite.invalid>"


_names = st.one_of(
    st.none(),
    st.text(max_size=120),
    st.builds(lambda n, e: f"{n} <{e}>", st.text(max_size=20), st.emails()),
    st.builds(lambda n: f"{n} via memosite", st.text(max_size=20)),
)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(name=_names, version=_names)
def test_an_agents_author_always_says_it_is_an_agent_whatever_it_calls_itself(
    name: str | None, version: str | None
) -> None:
    import re

    actor = Actor.mcp_client(name, version, "s-1")
    author = provenance_fields(actor, None)["author"]
    for said in (author, actor.name or ""):
        assert said.endswith(" via memosite") and said.count("via memosite") == 1
        assert re.search(EMAIL_LIKE, said) is None and "<" not in said and ">" not in said
        assert said == " ".join(said.split()) and said.isprintable()
    assert actor.source == "agent" and actor.email == "agent@memosite.invalid"


def test_agent_labels_keep_names_in_every_script() -> None:
    for name in ("Кодекс", "克劳德", "Ελένη", "وكيل", "Agent 🤖", "@anthropic-ai/claude-code"):
        assert agent_label(name, "x") == name


@pytest.mark.parametrize("kind", ["log", "prompt", "review", "session"])
@pytest.mark.parametrize("status", ["superseded", "archived"])
def test_an_agent_cannot_retire_a_persons_log_prompt_or_review_by_its_status(
    vault_dir: Path, run_cli: Any, kind: str, status: str
) -> None:
    # Before: only the text, the title and the expiry of these kinds were guarded, so an agent's
    # upsert that set the status alone made a person's incident log terminal (hidden, and refused
    # to every later write) without a review.
    vault_with(vault_dir)
    body = "Root cause: the café's DNS ✈ (Ошибка, 事故).\n"
    done = run_cli("upsert", "--kind", kind, "--slug", "incident-8", "--title", "Ἀρχή", "--body", body)
    assert done.exit_code == 0, done.stderr
    path = next(vault_dir.glob("projects/demo/*/incident-8.md"))
    before = path.read_bytes()
    proposed = agent(vault_dir, "upsert", kind=kind, slug="incident-8", status=status)
    assert proposed["action"] == "proposed" and proposed["pending"] is True
    assert path.read_bytes() == before
    assert run_cli("get", "incident-8", "--json").json()["frontmatter"]["status"] == "active"
