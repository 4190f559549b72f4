"""The MCP server end to end, driven by the SDK's client: in process over its in-memory transport
(a round trip costs ~0.1 s less than a process start), and as ``memosite mcp`` subprocesses over
stdio where only a process shows it (the stdout guard, several servers on one vault)."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from click.testing import CliRunner
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.types import LATEST_PROTOCOL_VERSION, CallToolResult

from memosite.cli import cli
from memosite.recordfile import read_record
from memosite.schema import KINDS

STORE_TOOLS = {"upsert", "get", "append", "forget", "restore"}
RETRIEVAL_TOOLS = {"search", "bootstrap", "rank", "gc"}
READ_TOOLS = {"get", "search", "bootstrap", "rank"}
MEMORY_TOOLS = {"memory"}  # Claude's memory tool commands (tests/test_memory_tool.py)


EXPECTED_TOOLS = STORE_TOOLS | RETRIEVAL_TOOLS | MEMORY_TOOLS


def server_command() -> list[str]:
    script = Path(sys.executable).parent / "memosite"
    return [str(script)] if script.is_file() else [sys.executable, "-m", "memosite"]


def server_params(vault: Path, *extra: str) -> StdioServerParameters:
    command = server_command()
    return StdioServerParameters(
        command=command[0],
        args=[*command[1:], "mcp", "--vault", str(vault), "--project", "demo", *extra],
        env={"HOME": str(vault.parent / "home")},
    )


@asynccontextmanager
async def connect(vault: Path, *extra: str, stdio: bool = False) -> AsyncIterator[Any]:
    """An initialised client on memosite's server for project demo: in process by default, a
    ``memosite mcp`` subprocess with ``stdio``."""
    if not stdio:
        from mcp import Client

        from memosite.mcp_server.server import build_server
        from memosite.vault import Vault

        opened = Vault.open(vault)
        server = build_server(opened, "demo", read_only="--read-only" in extra)
        try:
            async with Client(server, mode="legacy") as client:
                yield client
        finally:
            opened.close()
        return
    with open(vault.parent / "server-stderr.log", "a", encoding="utf-8") as errlog:
        async with (
            stdio_client(server_params(vault, *extra), errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            yield session


def run(scenario: Callable[[], Awaitable[None]]) -> None:
    anyio.run(scenario)


async def call_ok(session: ClientSession, tool: str, **arguments: Any) -> dict[str, Any]:
    result = await session.call_tool(tool, arguments)
    assert not result.is_error, result.content
    assert result.structured_content is not None
    # The text block carries the same JSON for clients that ignore structured content.
    assert json.loads(result.content[0].text) == result.structured_content  # type: ignore[union-attr]
    return result.structured_content


async def call_error(session: ClientSession, tool: str, **arguments: Any) -> tuple[str, str]:
    result: CallToolResult = await session.call_tool(tool, arguments)
    assert result.is_error
    text = result.content[0].text  # type: ignore[union-attr]
    error = (result.structured_content or {})["error"]
    assert text == f"{error['code']}: {error['message']}"
    return error["code"], error["message"]


def cli_json(*args: str) -> dict[str, Any]:
    outcome = CliRunner().invoke(cli, [*args, "--json"])
    assert outcome.exit_code == 0, outcome.output
    return json.loads(outcome.output)


# --- tools and schemas -------------------------------------------------------------------------


def test_tools_list_offers_every_tool_with_typed_schemas(vault_dir: Path) -> None:
    async def scenario() -> None:
        async with connect(vault_dir) as session:
            tools = {tool.name: tool for tool in (await session.list_tools()).tools}
        assert set(tools) == EXPECTED_TOOLS
        for tool in tools.values():
            assert tool.description and len(tool.description) > 40, tool.name
            for name, prop in tool.input_schema["properties"].items():
                assert prop.get("description"), f"{tool.name}.{name} has no description"

        for tool in tools.values():
            assert tool.input_schema["additionalProperties"] is False, tool.name
            assert tool.output_schema is not None and tool.output_schema["type"] == "object", tool.name
        upsert = tools["upsert"].input_schema
        assert sorted(upsert["required"]) == ["kind"]
        assert upsert["properties"]["kind"]["enum"] == list(KINDS)
        assert set(upsert["properties"]) == {
            "kind",
            "body",
            "slug",
            "frontmatter",
            "path",
            "projectId",
            "allowDuplicate",
            "title",
            "severity",
            "tags",
            "layer",
            "module",
            "status",
            "ttl",
            "expires_at",
            "supersedes",
            "supersedesMissingOk",
            "cites",
            "sessionId",
        }
        assert {"type": "object"}.items() <= upsert["properties"]["frontmatter"]["anyOf"][0].items()
        assert upsert["properties"]["allowDuplicate"]["type"] == "boolean"

        get = tools["get"].input_schema
        assert set(get["properties"]) == {"id", "kind", "slug", "projectId", "sessionId"}
        assert "required" not in get
        assert set(tools["forget"].input_schema["properties"]) == {"id", "kind", "slug", "purge", "projectId"}
        assert set(tools["append"].input_schema["required"]) == {"event"}
        search = tools["search"].input_schema["properties"]
        assert search["sort"]["enum"] == ["relevance", "occurrences", "updated", "hits"]
        assert {
            "query",
            "kinds",
            "status",
            "tags",
            "path",
            "includeExpired",
            "asOf",
            "limit",
            "hitIds",
            "sessionId",
            "projectId",
        } <= set(search)
        assert search["limit"]["type"] == "integer"
        assert set(tools["gc"].input_schema["properties"]) == {"dryRun", "purge", "projectId"}

    run(scenario)


def test_annotations_mark_read_only_and_destructive_tools(vault_dir: Path) -> None:
    async def scenario() -> None:
        async with connect(vault_dir) as session:
            tools = {tool.name: tool for tool in (await session.list_tools()).tools}
        for name, tool in tools.items():
            hints = tool.annotations
            assert hints is not None and hints.title
            assert hints.read_only_hint is (name in READ_TOOLS), name
            assert hints.destructive_hint is (name in {"forget", "gc"}), name
            assert hints.open_world_hint is False

    run(scenario)


def test_read_only_server_offers_only_read_tools(vault_dir: Path) -> None:
    async def scenario() -> None:
        async with connect(vault_dir, "--read-only") as session:
            names = {tool.name for tool in (await session.list_tools()).tools}
            code, message = await call_error(session, "upsert", kind="trap", body="x")
        assert names == EXPECTED_TOOLS & READ_TOOLS
        assert code == "INVALID_ARGUMENTS"
        assert "read-only" in message

    run(scenario)
    assert not list((vault_dir / "projects").glob("*/traps/*.md"))


# --- round trip --------------------------------------------------------------------------------


def test_round_trip_upsert_get_forget_restore(vault_dir: Path) -> None:
    body = "We keep money as integer cents.\n\nFloats lost a cent on refunds.\n"

    async def scenario() -> None:
        async with connect(vault_dir) as session:
            written = await call_ok(
                session,
                "upsert",
                kind="decision",
                body=body,
                frontmatter={"title": "Money is integer cents", "tags": ["payments"]},
            )
            assert written["id"] == "money-is-integer-cents"
            assert written["path"] == "projects/demo/decisions/money-is-integer-cents.md"
            found = await call_ok(session, "get", id=written["id"])
            assert found["body"] == body
            assert found["frontmatter"]["tags"] == ["payments"]
            by_slug = await call_ok(session, "get", kind="decision", slug=written["id"])
            assert by_slug["path"] == written["path"]
            forgotten = await call_ok(session, "forget", id=written["id"])
            assert forgotten == {
                "id": written["id"],
                "kind": "decision",
                "status": "archived",
                "purged": False,
                "restored": [],
            }
            assert (await call_ok(session, "get", id=written["id"]))["frontmatter"]["status"] == "archived"
            restored = await call_ok(session, "restore", id=written["id"])
            assert restored["status"] == "active"
            purged = await call_ok(session, "forget", kind="decision", slug=written["id"], purge=True)
            assert purged["status"] == "purged"
            code, _ = await call_error(session, "get", id=written["id"])
            assert code == "RECORD_NOT_FOUND"

    run(scenario)
    assert not (vault_dir / "projects/demo/decisions/money-is-integer-cents.md").exists()


def test_round_trip_upsert_search_get_forget_gc(vault_dir: Path) -> None:
    async def scenario() -> None:
        async with connect(vault_dir) as session:
            trap = await call_ok(
                session,
                "upsert",
                kind="trap",
                body="The CDN strips SameSite from the session cookie.\n",
                frontmatter={"title": "Cookie loses SameSite behind the CDN", "severity": "high"},
                path="src/web/session.ts",
            )
            await call_ok(
                session,
                "upsert",
                kind="scratch",
                body="try the flag in staging\n",
                frontmatter={"title": "Staging flag", "ttl": "1s", "created": "2020-01-01T00:00:00Z"},
            )
            found = await call_ok(session, "search", query="SameSite cookie")
            assert [hit["id"] for hit in found["results"]][:1] == [trap["id"]]
            record = await call_ok(session, "get", id=trap["id"])
            assert "SameSite" in record["body"]
            await call_ok(session, "forget", id=trap["id"])
            after = await call_ok(session, "search", query="SameSite cookie")
            assert trap["id"] not in [hit["id"] for hit in after["results"]]  # archived
            preview = await call_ok(session, "gc", dryRun=True)
            assert preview["dryRun"] is True
            assert preview["purgedScratchCount"] == 1
            done = await call_ok(session, "gc")
            assert done["dryRun"] is False
            assert done["purgedScratchCount"] == 1

    run(scenario)
    assert not list(vault_dir.glob("projects/demo/scratch/*.md"))


@pytest.mark.slow
def test_structured_results_carry_the_cli_json_fields(vault_dir: Path) -> None:
    async def scenario() -> dict[str, dict[str, Any]]:
        async with connect(vault_dir) as session:
            return {
                "upsert": await call_ok(session, "upsert", kind="spec", body="Spec one.\n", slug="spec-mcp"),
                "get": await call_ok(session, "get", id="spec-mcp"),
                "append": await call_ok(session, "append", event="deployed v2", details={"version": 2}),
                "forget": await call_ok(session, "forget", id="spec-mcp"),
                "restore": await call_ok(session, "restore", id="spec-mcp"),
            }

    results: dict[str, dict[str, Any]] = {}

    async def collect() -> None:
        results.update(await scenario())

    run(collect)
    via_cli = {
        "upsert": cli_json("upsert", "--kind", "spec", "--body", "Spec two.\n", "--slug", "spec-cli"),
        "get": cli_json("get", "--id", "spec-cli"),
        "append": cli_json("append", "--event", "deployed v3", "--details", '{"version": 3}'),
        "forget": cli_json("forget", "--id", "spec-cli"),
        "restore": cli_json("restore", "--id", "spec-cli"),
    }
    for tool, data in results.items():
        assert set(data) == set(via_cli[tool]), tool
    assert results["append"]["id"].startswith("log-")


def test_retrieval_results_carry_the_cli_json_fields(vault_dir: Path) -> None:
    cli_json(
        "upsert",
        "--kind",
        "trap",
        "--body",
        "Queues stall on deploy.\n",
        "--severity",
        "high",
        "--path",
        "src/queue.py",
    )
    via_cli = {
        "search": cli_json("search", "queues"),
        "bootstrap": cli_json("bootstrap", "--query", "queues"),
        "rank": cli_json("rank"),
        "gc": cli_json("gc", "--dry-run"),
    }
    results: dict[str, dict[str, Any]] = {}

    async def scenario() -> None:
        async with connect(vault_dir) as session:
            results["search"] = await call_ok(session, "search", query="queues")
            brief = await session.call_tool("bootstrap", {"query": "queues"})
            results["bootstrap"] = brief.structured_content or {}
            results["rank"] = await call_ok(session, "rank")
            results["gc"] = await call_ok(session, "gc", dryRun=True)

    run(scenario)
    for tool, data in results.items():
        assert set(data) == set(via_cli[tool]), tool
    assert set(results["search"]["results"][0]) == set(via_cli["search"]["results"][0])
    assert "Queues stall on deploy" in results["bootstrap"]["markdown"]


def test_project_id_argument_targets_another_project(vault_dir: Path) -> None:
    async def scenario() -> None:
        async with connect(vault_dir) as session:
            written = await call_ok(session, "upsert", kind="spec", body="Other.\n", slug="s1", projectId="other-app")
            assert written["project"] == "other-app"
            assert (await call_ok(session, "get", id="s1", projectId="other-app"))["body"] == "Other.\n"
            code, _ = await call_error(session, "get", id="s1", projectId="demo")
            assert code == "RECORD_NOT_FOUND"
            code, message = await call_error(session, "upsert", kind="spec", body="x", projectId="../escape")
            assert code == "INVALID_ARGUMENTS" and "project" in message

    run(scenario)
    assert (vault_dir / "projects/other-app/specs/s1.md").is_file()
    assert not (vault_dir / "escape").exists()


# --- errors ------------------------------------------------------------------------------------


def test_each_error_carries_its_stable_code(vault_dir: Path) -> None:
    async def scenario() -> list[tuple[str, str]]:
        async with connect(vault_dir) as session:
            codes = [
                await call_error(session, "upsert", kind="trap", body="   "),
                await call_error(session, "get"),
                await call_error(session, "get", id="x", kind="trap", slug="x"),
                await call_error(session, "forget"),
                await call_error(session, "upsert", kind="mistake", body="x"),
                await call_error(session, "upsert", kind="trap", body="x", frontmatter={"ttl": "next tuesday"}),
                await call_error(session, "upsert", kind="trap", body="x", frontmatter={"severity": "apocalyptic"}),
                await call_error(session, "get", id="no-such-record"),
                await call_error(session, "forget", kind="trap", slug="no-such-record"),
                await call_error(
                    session, "upsert", kind="spec", body="token ghp_aBcdEfGhIjKlMnOpQrStUvWxYz0123456789 here"
                ),
            ]
            # superseded is terminal, and only archived records can be restored
            await call_ok(session, "upsert", kind="spec", body="Active.\n", slug="live")
            codes.append(await call_error(session, "restore", id="live"))
            # the connection survived every error
            await call_ok(session, "get", id="live")
            return codes

    outcome: list[tuple[str, str]] = []

    async def collect() -> None:
        outcome.extend(await scenario())

    run(collect)
    assert [code for code, _ in outcome] == [
        "INVALID_ARGUMENTS",
        "INVALID_ARGUMENTS",
        "INVALID_ARGUMENTS",
        "INVALID_ARGUMENTS",
        "INVALID_ARGUMENTS",
        "INVALID_ARGUMENTS",
        "INVALID_ARGUMENTS",
        "RECORD_NOT_FOUND",
        "RECORD_NOT_FOUND",
        "SAFETY_VIOLATION",
        "INVALID_TRANSITION",
    ]
    assert "body must not be empty" in outcome[0][1]
    assert "ghp_aBcd" not in outcome[9][1]  # the secret never travels back
    assert [p.name for p in vault_dir.glob("projects/demo/*/*.md")] == ["live.md"]  # nothing else


def test_wrong_argument_types_are_tool_errors_not_crashes(vault_dir: Path) -> None:
    async def scenario() -> list[tuple[str, str]]:
        async with connect(vault_dir) as session:
            errors = [
                await call_error(session, "upsert", kind="trap", body=123),
                await call_error(session, "upsert", kind="trap", body="x", frontmatter="title: x"),
                await call_error(session, "upsert", kind=["trap"], body="x"),
                await call_error(session, "forget", id="x", purge="perhaps"),
                await call_error(session, "get", id={"nested": True}),
            ]
            if "search" in EXPECTED_TOOLS:
                errors.append(await call_error(session, "search", query="x", limit="many"))
                errors.append(await call_error(session, "search", query="x", sort="random"))
            await call_ok(session, "upsert", kind="spec", body="still serving\n", slug="alive")
            return errors

    outcome: list[tuple[str, str]] = []

    async def collect() -> None:
        outcome.extend(await scenario())

    run(collect)
    assert {code for code, _ in outcome} == {"INVALID_ARGUMENTS"}
    assert outcome[0][1].startswith("invalid arguments for upsert: body")
    assert "frontmatter" in outcome[1][1]


def test_broken_view_template_never_fails_a_write_that_stands(vault_dir: Path) -> None:
    # A vault template override with a syntax error breaks the view compiler: the record is still
    # written (and said so), and the server goes on serving.
    broken = vault_dir / "templates" / "views"
    broken.mkdir(parents=True)
    (broken / "SESSIONS.md.j2").write_text("{% for x in %}\n", encoding="utf-8")

    async def scenario() -> None:
        async with connect(vault_dir) as session:
            data = await call_ok(session, "upsert", kind="session", body="note\n")
            assert data["action"] == "created"
            await call_ok(session, "upsert", kind="spec", body="Fine.\n", slug="fine")

    run(scenario)
    assert len(list((vault_dir / "projects" / "demo" / "sessions").glob("*.md"))) == 1


@pytest.mark.slow
def test_stdout_carries_only_protocol_messages(vault_dir: Path) -> None:
    """Raw JSON-RPC over the pipe: every line the server writes to stdout is a protocol message,
    even when the core warns or a call fails."""
    messages = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": LATEST_PROTOCOL_VERSION,
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "0"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "upsert", "arguments": {"kind": "trap", "body": "Raw pipe trap.\n"}},
        },
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "get", "arguments": {"id": "missing"}}},
        {"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "upsert", "arguments": {"kind": 7}}},
    ]
    errlog = open(vault_dir.parent / "server-stderr.log", "w", encoding="utf-8")  # noqa: SIM115
    with (
        errlog,
        subprocess.Popen(
            [*server_command(), "mcp", "--vault", str(vault_dir), "--project", "demo"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=errlog,
            text=True,
            encoding="utf-8",
        ) as process,
    ):
        watchdog = threading.Timer(60, process.kill)
        watchdog.start()
        try:
            assert process.stdin is not None and process.stdout is not None
            process.stdin.write("".join(json.dumps(m) + "\n" for m in messages))
            process.stdin.flush()
            replies = []
            # Read until every request is answered, then hang up: closing stdin earlier would
            # end the session before the slower calls reply.
            while {r.get("id") for r in replies} < {1, 2, 3, 4}:
                line = process.stdout.readline()
                assert line, "server closed stdout early"
                replies.append(json.loads(line))
            process.stdin.close()
            rest = process.stdout.read()
            assert process.wait() == 0
        finally:
            watchdog.cancel()
    assert rest.strip() == ""
    assert all(reply["jsonrpc"] == "2.0" for reply in replies)
    by_id = {reply["id"]: reply for reply in replies if "id" in reply}
    assert by_id[2]["result"]["isError"] is False
    assert by_id[3]["result"]["isError"] is True
    assert by_id[4]["result"]["structuredContent"]["error"]["code"] == "INVALID_ARGUMENTS"


# --- hits --------------------------------------------------------------------------------------


def test_get_with_session_id_counts_one_hit_per_session(vault_dir: Path) -> None:
    async def scenario() -> None:
        async with connect(vault_dir) as session:
            await call_ok(session, "upsert", kind="trap", body="Hit me.\n", slug="hit-me")
            await call_ok(session, "get", id="hit-me", sessionId="s-1")
            await call_ok(session, "get", id="hit-me", sessionId="s-1")
            await call_ok(session, "get", id="hit-me", sessionId="s-2")
            # Without a sessionId the read is the server's own session's: once, then no more.
            await call_ok(session, "get", id="hit-me")
            await call_ok(session, "get", id="hit-me")
        async with connect(vault_dir, "--read-only") as reader:
            await call_ok(reader, "get", id="hit-me", sessionId="s-3")

    run(scenario)
    record = read_record(vault_dir / "projects/demo/traps/hit-me.md")
    assert record.frontmatter.get("hits") == 3


# --- concurrency -------------------------------------------------------------------------------


@pytest.mark.slow
def test_two_servers_writing_one_vault_lose_nothing(vault_dir: Path) -> None:
    """Two agent sessions (two server processes) each fire 25 upserts at once, plus updates of
    one shared record: every record reaches disk whole, parses, and is in the index."""
    per_server = 25
    shared_bodies: set[str] = set()

    async def writer(tag: str) -> None:
        async with connect(vault_dir, stdio=True) as session:

            async def one(n: int) -> None:
                await call_ok(
                    session,
                    "upsert",
                    kind="decision",
                    slug=f"{tag}-{n:02d}",
                    body=f"Decision {n} of {tag}: keep the {tag} cache warm for {n} minutes.\n",
                    frontmatter={"title": f"{tag} decision {n}", "tags": [tag]},
                )

            async def shared(n: int) -> None:
                body = f"Shared plan, revision {tag}-{n}.\n" + "detail line\n" * 200
                shared_bodies.add(body)
                await call_ok(session, "upsert", kind="plan", slug="shared", body=body)

            async with anyio.create_task_group() as group:
                for n in range(per_server):
                    group.start_soon(one, n)
                for n in range(5):
                    group.start_soon(shared, n)

    async def scenario() -> None:
        async with anyio.create_task_group() as group:
            group.start_soon(writer, "alpha")
            group.start_soon(writer, "beta")

    run(scenario)
    decisions = sorted((vault_dir / "projects/demo/decisions").glob("*.md"))
    assert len(decisions) == 2 * per_server
    for path in decisions:
        record = read_record(path)
        assert record.body.startswith(f"Decision {int(path.stem.split('-')[1])} of ")
    shared = read_record(vault_dir / "projects/demo/plans/shared.md")
    assert shared.body in shared_bodies
    from memosite.vault import Vault

    opened = Vault.open(vault_dir)
    try:
        indexed = {entry.id for entry in opened.index().entries("demo", ["decision"], None)}
        assert indexed == {path.stem for path in decisions}
        view = (vault_dir / "projects/demo/DECISIONS.md").read_text(encoding="utf-8")
        assert all(path.stem in view for path in decisions)
    finally:
        opened.close()
    assert not [p for p in vault_dir.rglob("*") if p.name.startswith(".memosite-tmp-")]


def test_one_server_answers_concurrent_reads_and_writes(vault_dir: Path) -> None:
    async def scenario() -> None:
        async with connect(vault_dir) as session:
            await call_ok(session, "upsert", kind="spec", body="Base spec.\n", slug="base")
            results: list[dict[str, Any]] = []

            async def write(n: int) -> None:
                results.append(await call_ok(session, "append", event=f"event {n}"))

            async def read() -> None:
                results.append(await call_ok(session, "get", id="base"))

            with anyio.fail_after(60):
                async with anyio.create_task_group() as group:
                    for n in range(20):
                        group.start_soon(write, n)
                        group.start_soon(read)
            assert len(results) == 40
            assert len({r["id"] for r in results if r["kind"] == "log"}) == 20

    run(scenario)
    assert len(list((vault_dir / "projects/demo/logs").glob("*.md"))) == 20


# --- retrieval tools ---------------------------------------------------------------------------


def test_search_filters_and_hit_ids_count_hits(vault_dir: Path) -> None:
    async def scenario() -> None:
        async with connect(vault_dir) as session:
            await call_ok(
                session,
                "upsert",
                kind="trap",
                slug="cdn-cookie",
                body="The CDN strips the session cookie.\n",
                path="src/web/session.ts",
            )
            await call_ok(
                session,
                "upsert",
                kind="decision",
                slug="cdn-vendor",
                body="We keep the CDN vendor; the session cookie fix is ours.\n",
            )
            traps = await call_ok(session, "search", query="session cookie", kinds=["trap"])
            assert [hit["id"] for hit in traps["results"]] == ["cdn-cookie"]
            by_path = await call_ok(session, "search", path="src/web/session.ts")
            assert [hit["id"] for hit in by_path["results"]] == ["cdn-cookie"]
            acked = await call_ok(session, "search", query="cookie", hitIds=["cdn-cookie"], sessionId="s-1")
            assert acked["hitsRecorded"] == ["cdn-cookie"]
            again = await call_ok(session, "search", query="cookie", hitIds=["cdn-cookie"], sessionId="s-1")
            assert again["hitsRecorded"] == []
        async with connect(vault_dir, "--read-only") as reader:
            ignored = await call_ok(reader, "search", query="cookie", hitIds=["cdn-cookie"])
            assert ignored["hitsRecorded"] == []

    run(scenario)
    assert read_record(vault_dir / "projects/demo/traps/cdn-cookie.md").frontmatter["hits"] == 1


def test_bootstrap_text_is_the_markdown_brief_and_rank_orders_traps(vault_dir: Path) -> None:
    async def scenario() -> None:
        async with connect(vault_dir) as session:
            for n, severity in enumerate(["medium", "high"]):
                await call_ok(
                    session,
                    "upsert",
                    kind="trap",
                    slug=f"trap-{n}",
                    body=f"Trap number {n} about {'queues' if n else 'fonts'}.\n",
                    frontmatter={"title": f"Trap {n}", "severity": severity},
                )
            await call_ok(
                session,
                "upsert",
                kind="trap",
                body="Trap number 1 about queues.\n",
                frontmatter={"title": "Trap 1 again", "severity": "critical"},
            )
            result = await session.call_tool("bootstrap", {"maxBytes": 4096})
            assert not result.is_error
            brief = result.structured_content or {}
            assert result.content[0].text == brief["markdown"]  # type: ignore[union-attr]
            assert brief["maxBytes"] == 4096 and brief["bytes"] <= 4096
            assert {item["id"] for item in brief["sections"]["traps"]} == {"trap-0", "trap-1"}
            code, _ = await call_error(session, "bootstrap", maxBytes=10)
            assert code == "INVALID_ARGUMENTS"
            ranked = await call_ok(session, "rank", limit=5)
            assert [trap["id"] for trap in ranked["traps"]][:1] == ["trap-1"]  # seen twice

    run(scenario)


def test_gc_reports_progress_to_a_client_that_asks(vault_dir: Path) -> None:
    steps: list[tuple[float, float | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        steps.append((progress, total))

    async def scenario() -> None:
        async with connect(vault_dir) as session:
            await call_ok(
                session, "upsert", kind="review", body="old review\n", frontmatter={"created": "2020-01-01T00:00:00Z"}
            )
            result = await session.call_tool("gc", {}, progress_callback=on_progress)
            assert not result.is_error
            assert (result.structured_content or {})["purgedReviewCount"] == 1

    run(scenario)
    assert steps and steps[-1][0] == steps[-1][1]
