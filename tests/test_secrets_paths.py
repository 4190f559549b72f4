"""The nine token families the security pass found passing every write path (issue 21), through
the paths the rule-set tests leave out: an agent over MCP (upsert, append, the memory tool), an
import of the files a team keeps, a Stormbuffer import, and a hand edit that sync would carry off
the machine. Each test is the attack: the token handed to that path; nothing holding it is written,
committed or pushed."""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp import types as mcp_types
from test_secrets_rules import FAMILY_IDS, NINE_FAMILIES
from test_sync_support import TRAP, Team, git, make_team, synced_pair

from memosite.errors import SafetyViolation
from memosite.mcp_server.server import build_server
from memosite.sync.run import sync_vault
from memosite.vault import Vault


def _text_of(family: str) -> str:
    token = NINE_FAMILIES[family]
    return token if token.startswith("curl") else f"Деплой использует {token} — the CI job"


def _secret_part(family: str) -> str:
    token = NINE_FAMILIES[family]
    return token.split(":")[1].split()[0] if token.startswith("curl") else token


def _vault_bytes(root: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file() and ".git" not in p.parts)


async def _as_agent(vault_dir: Path, calls: list[tuple[str, dict[str, Any]]]) -> list[bool]:
    """Each call's ``is_error``, made by an MCP client in process."""
    vault = Vault.open(vault_dir)
    try:
        server = build_server(vault, "demo")
        info = mcp_types.Implementation(name="codex", version="2.0")
        async with Client(server, mode="legacy", client_info=info) as client:
            return [bool((await client.call_tool(tool, arguments)).is_error) for tool, arguments in calls]
    finally:
        vault.close()


@pytest.mark.parametrize("family", FAMILY_IDS)
def test_an_agent_over_mcp_writes_no_family_by_upsert_append_or_the_memory_tool(family: str, vault_dir: Path) -> None:
    Vault.open(vault_dir).close()
    text = _text_of(family)
    calls: list[tuple[str, dict[str, Any]]] = [
        ("upsert", {"kind": "trap", "title": "ci", "body": text}),
        ("upsert", {"kind": "trap", "title": "ci", "body": "ci", "frontmatter": {"notes": text}}),
        ("upsert", {"kind": "trap", "title": text, "body": "ci"}),
        ("append", {"event": text}),
        ("append", {"event": "deployed", "details": {"log": text}}),
        ("memory", {"command": "create", "path": "/memories/ci.md", "file_text": text}),
    ]
    assert anyio.run(_as_agent, vault_dir, calls) == [True] * len(calls)
    assert _secret_part(family).encode() not in _vault_bytes(vault_dir)


@pytest.mark.parametrize("family", FAMILY_IDS)
def test_an_import_of_agents_md_or_a_stormbuffer_store_writes_no_family(
    family: str, vault_dir: Path, tmp_path: Path, run_cli: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    source = tmp_path / "repo"
    source.mkdir()
    (source / "AGENTS.md").write_text(f"# Agents\n\n## Build\n\n{_text_of(family)}\n", encoding="utf-8")
    imported = run_cli("import", "agents-md", str(source / "AGENTS.md"))
    assert imported.exit_code == 1 and "refusing to write" in imported.stderr
    monkeypatch.chdir(source)
    assert run_cli("stormbuffer", "init").exit_code == 0
    assert run_cli("stormbuffer", "add", "--kind", "fact", "--title", "Deploy", "--body", "clean").exit_code == 0
    [record] = list((source / ".sbuf" / "records").glob("*.md"))
    record.write_text(record.read_text(encoding="utf-8").replace("clean", _text_of(family)), encoding="utf-8")
    bridged = run_cli("stormbuffer", "import")
    assert bridged.exit_code == 1 and "refusing to write" in bridged.stderr
    assert _secret_part(family) not in imported.stderr + bridged.stderr
    assert not (vault_dir / "projects").exists() or _secret_part(family).encode() not in _vault_bytes(vault_dir)


@pytest.fixture
def team(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Team]:
    yield from make_team(tmp_path, monkeypatch)


@pytest.mark.parametrize("family", FAMILY_IDS)
def test_a_hand_edit_holding_a_family_is_neither_committed_nor_pushed(team: Team, family: str) -> None:
    a, _b = synced_pair(team)
    record = a.root / TRAP
    record.write_text(record.read_text(encoding="utf-8") + f"\n{_text_of(family)}\n", encoding="utf-8")
    head, remote = git(a.root, "rev-parse", "HEAD"), git(team.remote, "rev-parse", "main")
    with pytest.raises(SafetyViolation) as refused:
        sync_vault(a)
    assert TRAP in refused.value.message and _secret_part(family) not in refused.value.message
    assert git(a.root, "rev-parse", "HEAD") == head and git(team.remote, "rev-parse", "main") == remote
    pushed = subprocess.run(
        ["git", "-C", str(team.remote), "log", "-p", "--all"],
        capture_output=True,
        text=True,
        encoding="utf-8",
        check=True,
    ).stdout
    assert _secret_part(family) not in pushed
