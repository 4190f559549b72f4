"""The retrieval tools over MCP (in-process SDK client): one query pipeline, honest briefs, and hits
that count — a server is one agent session, scratch never counts."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, types

from memosite.mcp_server.server import build_server
from memosite.recordfile import read_record
from memosite.store import upsert_record
from memosite.vault import Vault

P = "demo"


@asynccontextmanager
async def client_for(vault_dir: Path, *, read_only: bool = False) -> AsyncIterator[Client]:
    vault = Vault.open(vault_dir)
    server = build_server(vault, P, read_only=read_only, env={"HOME": str(Path.home())})
    try:
        async with Client(
            server, mode="legacy", client_info=types.Implementation(name="test-agent", version="1")
        ) as client:
            yield client
    finally:
        vault.close()


async def ok(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return result.structured_content


def hits_of(vault_dir: Path, kind: str, slug: str) -> int:
    vault = Vault.open(vault_dir)
    try:
        return int(read_record(vault.record_path(P, kind, slug)).frontmatter.get("hits") or 0)
    finally:
        vault.close()


def seed(vault_dir: Path) -> None:
    vault = Vault.open(vault_dir)
    upsert_record(
        vault,
        P,
        kind="trap",
        slug="retry",
        body="Payment retries double-charge without an idempotency key.\n",
        frontmatter={"title": "Payment retries", "severity": "high"},
    )
    upsert_record(vault, P, kind="decision", slug="postgres", body="We chose PostgreSQL.\n")
    upsert_record(
        vault, P, kind="trap", slug="zh", body="添加非空列会锁住订单表。\n", frontmatter={"severity": "medium"}
    )
    upsert_record(vault, P, kind="scratch", slug="note", body="payment retry idea\n")
    vault.close()


def test_search_tool_reads_a_question_as_the_cli_does(vault_dir: Path) -> None:
    seed(vault_dir)

    async def scenario() -> None:
        async with client_for(vault_dir) as client:
            found = await ok(client, "search", query="how do payment retries work")
            assert [hit["id"] for hit in found["results"]] == ["retry"]
            assert found["terms"] == ["payment", "retries"] and found["match"] == "all"
            cjk = await ok(client, "search", query="锁表")
            assert [hit["id"] for hit in cjk["results"]] == ["zh"] and cjk["match"] == "any"
            scratch = await ok(client, "search", query="payment", kinds=["scratch"])
            assert [hit["id"] for hit in scratch["results"]] == ["note"]

    anyio.run(scenario)


def test_search_hits_without_a_session_id_count_once_per_server_session(vault_dir: Path) -> None:
    seed(vault_dir)

    async def scenario() -> None:
        async with client_for(vault_dir) as client:
            first = await ok(client, "search", query="payment", hitIds=["retry"])
            again = await ok(client, "search", query="payment", hitIds=["retry"])
            assert first["hitsRecorded"] == ["retry"] and again["hitsRecorded"] == []
        async with client_for(vault_dir) as another:  # a new server process: a new agent session
            assert (await ok(another, "search", query="payment", hitIds=["retry"]))["hitsRecorded"] == ["retry"]

    anyio.run(scenario)
    assert hits_of(vault_dir, "trap", "retry") == 2


def test_bootstrap_counts_a_hit_per_record_once_per_server_session(vault_dir: Path) -> None:
    seed(vault_dir)

    async def scenario() -> None:
        async with client_for(vault_dir) as client:
            first = await ok(client, "bootstrap")
            assert sorted(first["hitsRecorded"]) == ["postgres", "retry", "zh"]
            assert (await ok(client, "bootstrap"))["hitsRecorded"] == []
            named = await ok(client, "bootstrap", sessionId="agent-7")  # a session the caller names
            assert sorted(named["hitsRecorded"]) == ["postgres", "retry", "zh"]

    anyio.run(scenario)
    assert hits_of(vault_dir, "trap", "retry") == 2 and hits_of(vault_dir, "decision", "postgres") == 2


def test_a_read_only_server_counts_no_hits(vault_dir: Path) -> None:
    seed(vault_dir)

    async def scenario() -> None:
        async with client_for(vault_dir, read_only=True) as client:
            assert (await ok(client, "bootstrap"))["hitsRecorded"] == []
            assert (await ok(client, "search", query="payment", hitIds=["retry"]))["hitsRecorded"] == []

    anyio.run(scenario)
    assert hits_of(vault_dir, "trap", "retry") == 0


def test_scratch_never_counts_a_hit_over_mcp(vault_dir: Path) -> None:
    seed(vault_dir)

    async def scenario() -> None:
        async with client_for(vault_dir) as client:
            acked = await ok(client, "search", query="payment", kinds=["scratch"], hitIds=["note"])
            assert acked["hitsRecorded"] == []

    anyio.run(scenario)
    assert hits_of(vault_dir, "scratch", "note") == 0


def test_bootstrap_tool_takes_a_token_budget_and_says_its_size(vault_dir: Path) -> None:
    vault = Vault.open(vault_dir)
    for number in range(14):
        upsert_record(
            vault,
            P,
            kind="trap",
            slug=f"trap-{number:02d}",
            body="A trap worth knowing. " * 10,
            frontmatter={"severity": "high", "occurrences": number + 1},
            allow_duplicate=True,
        )
    vault.close()

    async def scenario() -> None:
        async with client_for(vault_dir, read_only=True) as client:
            result = await client.call_tool("bootstrap", {"maxTokens": 900})
            brief = result.structured_content or {}
            assert brief["maxTokens"] == 900 and brief["maxBytes"] == 3600 and brief["bytes"] <= 3600
            assert brief["estimatedTokens"] == -(-brief["bytes"] // 4)
            assert brief["truncated"] is True
            assert {o["reason"] for o in brief["omitted"]} >= {"cap"}
            text = result.content[0].text  # type: ignore[union-attr]
            assert text.rstrip("\n").splitlines()[-1].startswith("+ ")
            assert "memosite search --kind trap" in text.rstrip("\n").splitlines()[-1]

    anyio.run(scenario)


def test_rank_tool_accepts_the_layer_aliases_the_cli_and_upsert_accept(vault_dir: Path) -> None:
    vault = Vault.open(vault_dir)
    upsert_record(
        vault, P, kind="trap", slug="ui", body="The cart button double-submits.\n", frontmatter={"layer": "web"}
    )
    upsert_record(vault, P, kind="trap", slug="ops", body="Disk fills at night.\n", frontmatter={"layer": "infra"})
    vault.close()

    async def main() -> None:
        async with client_for(vault_dir) as client:
            for alias in ("frontend", "UI", "web"):
                ranked = await ok(client, "rank", layer=alias)
                assert (ranked["layer"], [trap["id"] for trap in ranked["traps"]]) == ("web", ["ui"]), alias
            assert [trap["id"] for trap in (await ok(client, "rank", layer="infra"))["traps"]] == ["ops"]
            unknown = await client.call_tool("rank", {"layer": "kitchen"})
            assert unknown.is_error and unknown.structured_content is not None
            assert unknown.structured_content["error"]["code"] == "INVALID_ARGUMENTS"

    anyio.run(main)


def test_session_id_descriptions_say_the_server_session_counts_without_one(vault_dir: Path) -> None:
    async def main() -> None:
        async with client_for(vault_dir) as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            for name in ("get", "search", "bootstrap"):
                described = tools[name].input_schema["properties"]["sessionId"]["description"]
                assert "server's own session" in described and "When given" not in described, name
            assert "wrote it" in tools["upsert"].input_schema["properties"]["sessionId"]["description"]

    anyio.run(main)


def test_boolean_and_integer_arguments_take_only_their_own_type(vault_dir: Path) -> None:
    seed(vault_dir)
    refused = [
        ("forget", {"id": "retry", "purge": "yes"}),
        ("forget", {"id": "retry", "purge": 1}),
        ("gc", {"purge": "yes"}),
        ("gc", {"dryRun": "no"}),
        ("search", {"query": "payment", "includeExpired": "yes"}),
        ("search", {"query": "payment", "includePending": 0}),
        ("search", {"query": "payment", "limit": "5"}),
        ("bootstrap", {"freshOnly": "true please"}),
        ("upsert", {"kind": "trap", "body": "x\n", "allowDuplicate": "on"}),
    ]

    async def main() -> None:
        async with client_for(vault_dir) as client:
            for tool, arguments in refused:
                result = await client.call_tool(tool, arguments)
                assert result.is_error and result.structured_content is not None, (tool, arguments)
                error = result.structured_content["error"]
                assert error["code"] == "INVALID_ARGUMENTS" and "\n" not in error["message"], (tool, arguments)
            assert (await ok(client, "search", query="payment", includeExpired=False, limit=5))["total"] >= 1
            assert (await ok(client, "forget", id="retry", purge=False))["status"] == "archived"

    anyio.run(main)
    assert (vault_dir / "projects" / P / "traps" / "retry.md").exists()  # "yes" purged nothing
