"""What agents send, as they send it: wrong and extra arguments, fields at the top level, a server
started in / or the home directory, the client's roots, and who the agent is."""

from __future__ import annotations

import os
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, types

from memosite.mcp_server.project import SessionProject, at_start
from memosite.mcp_server.server import build_server
from memosite.recordfile import read_record
from memosite.vault import Vault


def client_env() -> dict[str, str]:
    """What a desktop client hands the server: HOME, nothing that pins a project, and the test's
    ceiling (a .memosite.toml left above the test's directory is no part of the test)."""
    return {key: os.environ[key] for key in ("HOME", "MEMOSITE_CEILING_DIRECTORIES")}


@asynccontextmanager
async def client_for(
    vault_dir: Path,
    project: SessionProject | str | None = "demo",
    *,
    roots: list[Path] | None = None,
    name: str = "test-agent",
) -> AsyncIterator[Client]:
    vault = Vault.open(vault_dir)
    server = build_server(vault, project, env=client_env())
    callback = None
    if roots is not None:

        async def list_roots(context: Any) -> types.ListRootsResult:
            return types.ListRootsResult(roots=[types.Root(uri=root.as_uri(), name=root.name) for root in roots])

        callback = list_roots
    try:
        async with Client(
            server,
            mode="legacy",
            list_roots_callback=callback,
            client_info=types.Implementation(name=name, version="9.1"),
        ) as client:
            yield client
    finally:
        vault.close()


async def ok(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return result.structured_content


async def error(client: Client, tool: str, **arguments: Any) -> tuple[str, str]:
    result = await client.call_tool(tool, arguments)
    assert result.is_error, result.structured_content
    payload = (result.structured_content or {})["error"]
    return payload["code"], payload["message"]


def run(scenario: Any) -> None:
    anyio.run(scenario)


# --- arguments -----------------------------------------------------------------------------


def test_upsert_takes_the_cli_fields_at_the_top_level(vault_dir: Path) -> None:
    async def scenario() -> None:
        async with client_for(vault_dir) as client:
            written = await ok(
                client,
                "upsert",
                kind="trap",
                body="Retries without an idempotency key charge twice.",
                title="Retries need a key",
                severity="critical",
                tags=["payments"],
                layer="application",
                ttl="30d",
            )
            assert written["action"] == "created" and written["expires_at"] is not None

    run(scenario)
    fm = read_record(vault_dir / "projects/demo/traps/retries-need-a-key.md").frontmatter
    assert (fm["title"], fm["severity"], fm["layer"], fm["ttl"]) == (
        "Retries need a key",
        "critical",
        "application",
        "30d",
    )
    assert "payments" in fm["tags"]


def test_a_field_given_twice_with_different_values_is_refused(vault_dir: Path) -> None:
    async def scenario() -> None:
        async with client_for(vault_dir) as client:
            code, message = await error(
                client, "upsert", kind="spec", body="b", title="One", frontmatter={"title": "Other"}
            )
            assert code == "INVALID_ARGUMENTS" and "title" in message
            same = await ok(client, "upsert", kind="spec", body="b", title="One", frontmatter={"title": "One"})
            assert same["action"] == "created"

    run(scenario)


def test_unknown_arguments_are_refused_by_name(vault_dir: Path) -> None:
    async def scenario() -> None:
        async with client_for(vault_dir) as client:
            await ok(client, "upsert", kind="scratch", body="private note", slug="note")
            code, message = await error(client, "search", q="note")
            assert code == "INVALID_ARGUMENTS" and "unknown argument q" in message
            code, message = await error(client, "search", kind="trap")
            assert code == "INVALID_ARGUMENTS" and "kind" in message
            code, message = await error(client, "upsert", kind="trap", body="x", sevrity="high", labels=["a"])
            assert code == "INVALID_ARGUMENTS" and "sevrity" in message and "labels" in message
            code, _ = await error(client, "get", id="note", extra=1)
            assert code == "INVALID_ARGUMENTS"

    run(scenario)
    assert not (vault_dir / "projects/demo/traps").exists()


@pytest.mark.slow
def test_every_tool_declares_closed_inputs_and_an_output_schema(vault_dir: Path) -> None:
    async def scenario() -> None:
        async with client_for(vault_dir) as client:
            tools = (await client.list_tools()).tools
            assert tools
            for tool in tools:
                assert tool.input_schema.get("additionalProperties") is False, tool.name
                assert tool.output_schema and tool.output_schema["type"] == "object", tool.name

    run(scenario)


def test_upsert_without_body_changes_only_the_fields_given(vault_dir: Path) -> None:
    async def scenario() -> None:
        async with client_for(vault_dir) as client:
            await ok(client, "upsert", kind="decision", slug="db", body="Postgres, for its locks.\n")
            changed = await ok(client, "upsert", kind="decision", slug="db", status="paused", ttl="90d")
            assert changed["action"] == "updated" and changed["status"] == "paused"
            code, message = await error(client, "upsert", kind="decision", slug="new-one", title="No body")
            assert code == "INVALID_ARGUMENTS" and "body" in message

    run(scenario)
    record = read_record(vault_dir / "projects/demo/decisions/db.md")
    assert record.body == "Postgres, for its locks.\n" and record.frontmatter["ttl"] == "90d"


# --- which project ---------------------------------------------------------------------------


def repository(path: Path) -> Path:
    path.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    return path


def test_a_server_started_in_the_root_directory_takes_the_project_of_the_first_root(
    vault_dir: Path, tmp_path: Path
) -> None:
    repo = repository(tmp_path / "work" / "Shop-Backend")
    start = at_start(None, client_env(), Path("/"))
    assert start.identity is None

    async def scenario() -> None:
        async with client_for(vault_dir, start, roots=[repo]) as client:
            written = await ok(client, "upsert", kind="spec", body="b", slug="s")
            assert written["project"] == "shop-backend"

    run(scenario)
    assert (vault_dir / "projects/shop-backend/specs/s.md").is_file()
    assert not (vault_dir / "projects/default").exists()


def test_without_roots_or_a_pinned_project_writes_are_refused_with_how_to_pin(vault_dir: Path) -> None:
    for directory in (Path("/"), Path.home()):
        start = at_start(None, client_env(), directory)

        async def scenario(start: SessionProject = start) -> None:
            async with client_for(vault_dir, start) as client:
                code, message = await error(client, "upsert", kind="spec", body="b", slug="s")
                assert code == "INVALID_ARGUMENTS"
                assert "--project" in message and "MEMOSITE_PROJECT" in message
                pinned = await ok(client, "upsert", kind="spec", body="b", slug="s", projectId="chosen")
                assert pinned["project"] == "chosen"

        run(scenario)
    assert sorted(p.name for p in (vault_dir / "projects").iterdir()) == ["chosen"]


def test_a_pinned_project_wins_over_the_roots(vault_dir: Path, tmp_path: Path) -> None:
    repo = repository(tmp_path / "elsewhere")
    start = at_start("pinned", client_env(), Path("/"))

    async def scenario() -> None:
        async with client_for(vault_dir, start, roots=[repo]) as client:
            assert (await ok(client, "upsert", kind="spec", body="b", slug="s"))["project"] == "pinned"

    run(scenario)


def test_a_vault_inside_the_roots_repository_is_refused(tmp_path: Path) -> None:
    repo = repository(tmp_path / "product")
    vault_dir = repo / ".memory"
    start = at_start(None, client_env(), Path("/"))

    async def scenario() -> None:
        async with client_for(vault_dir, start, roots=[repo]) as client:
            code, message = await error(client, "upsert", kind="spec", body="b", slug="s")
            assert code == "SAFETY_VIOLATION" and str(repo) in message

    run(scenario)
    assert not (vault_dir / "projects").exists() or not any((vault_dir / "projects").iterdir())


def test_the_mcp_client_is_named_in_the_commit(vault_dir: Path) -> None:
    vault_dir.mkdir(parents=True)
    (vault_dir / "config.json").write_text('{"vaultGit": {"enabled": true, "atomic": true}}', encoding="utf-8")

    async def scenario() -> None:
        async with client_for(vault_dir, name="claude-code") as client:
            await ok(client, "upsert", kind="spec", body="b", slug="s")

    run(scenario)
    author = subprocess.run(
        ["git", "-C", str(vault_dir), "log", "-1", "--format=%an"],
        capture_output=True,
        text=True,
        encoding="utf-8",
        check=True,
    ).stdout.strip()
    assert author == "claude-code via memosite"


def test_the_no_roots_line_is_printed_only_after_the_client_was_asked(
    vault_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from memosite.mcp_server.project import announce

    repo = repository(tmp_path / "work" / "my-repo")
    start = at_start(None, client_env(), Path("/"))
    announce(start)  # at start nothing is known yet: the client was not asked
    assert capsys.readouterr().err == ""

    async def scenario(roots: list[Path]) -> None:
        async with client_for(vault_dir, start, roots=roots) as client:
            await client.call_tool("search", {"query": "x", "projectId": "any"})

    anyio.run(scenario, [repo])
    printed = capsys.readouterr().err
    assert "named no roots" not in printed and "project my-repo (from the client's root" in printed
    anyio.run(scenario, [])
    assert "named no roots" in capsys.readouterr().err
