"""The original's behaviours memosite still lacked (issue 25), each as the original's own case: the
user's steps on the command line and over MCP, and what they must see."""

from __future__ import annotations

import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from memosite.mcp_server.server import build_server
from memosite.recordfile import read_record
from memosite.vault import Vault


def ok(run_cli: Any, *args: str) -> dict[str, Any]:
    outcome = run_cli(*args, "--json")
    assert outcome.exit_code == 0, outcome.stdout + outcome.stderr
    data: dict[str, Any] = outcome.json()
    return data


# --- a command run inside <vault>/projects/p1/ works in p1 ------------------------------------


@pytest.mark.parametrize("vault_git", [False, True])
@pytest.mark.parametrize("depth", ["projects/p1", "projects/p1/traps"])
def test_a_command_run_inside_a_projects_folder_of_the_vault_works_in_that_project(
    run_cli: Any, vault_dir: Path, monkeypatch: pytest.MonkeyPatch, depth: str, vault_git: bool
) -> None:
    ok(run_cli, "--project", "p1", "upsert", "--kind", "trap", "--slug", "one", "--body", "In p1.")
    ok(run_cli, "--project", "p2", "upsert", "--kind", "trap", "--slug", "two", "--body", "In p2.")
    if vault_git:
        subprocess.run(["git", "init", "-q", str(vault_dir)], check=True)
    monkeypatch.delenv("MEMOSITE_PROJECT")
    monkeypatch.chdir(vault_dir / depth)
    assert [r["id"] for r in ok(run_cli, "list")["records"]] == ["one"]
    written = ok(run_cli, "upsert", "--kind", "trap", "--title", "Written here", "--body", "Lands in p1.")
    assert written["project"] == "p1" and written["path"] == "projects/p1/traps/written-here.md"
    assert "repoCommit" not in read_record(vault_dir / written["path"]).frontmatter  # the vault is no product
    status = ok(run_cli, "status")
    assert status["project"] == "p1"
    said = run_cli("status")
    assert "the vault's project folder you are in" in said.stdout
    assert ok(run_cli, "--project", "p2", "list")["records"][0]["id"] == "two"  # --project still wins


def test_a_directory_beside_the_projects_is_no_project_of_the_vault(
    run_cli: Any, vault_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ok(run_cli, "upsert", "--kind", "trap", "--slug", "t", "--body", "b")
    monkeypatch.delenv("MEMOSITE_PROJECT")
    monkeypatch.chdir(vault_dir / "projects")
    assert ok(run_cli, "status")["project"] == "projects"  # the directory's name, as anywhere else


# --- layer aliases; a security layer is promoted into tags -------------------------------------


@pytest.mark.parametrize(
    ("given", "layer"),
    [
        ("frontend", "web"), ("UI", "web"), ("infra", "infrastructure"), ("qa", "tests"), ("CI/CD", "devops"),
        ("backend", "application"), ("Frontend", "web"), ("フロントエンド", "web"), ("фронтенд", "web"),
        ("infraestrutura", "infrastructure"), ("pruebas", "tests"), ("前端", "web"), ("domaine", "domain"),
    ],
)  # fmt: skip
def test_a_layer_alias_in_any_language_is_the_layer_it_names(run_cli: Any, given: str, layer: str) -> None:
    written = ok(run_cli, "upsert", "--kind", "trap", "--slug", "t", "--layer", given, "--body", "A trap.")
    assert ok(run_cli, "get", written["id"])["frontmatter"]["layer"] == layer
    assert [r["id"] for r in ok(run_cli, "rank", "--layer", given)["traps"]] == ["t"]


@pytest.mark.parametrize(
    "given", ["security", "Security", "segurança", "sécurité", "Sicherheit", "セキュリティ", "безопасность"]
)
def test_a_security_layer_is_promoted_into_tags_and_the_layer_inferred(run_cli: Any, given: str) -> None:
    written = ok(
        run_cli, "upsert", "--kind", "trap", "--slug", "tokens", "--layer", given, "--tag", "auth",
        "--path", "src/web/login.tsx", "--body", "The login form logs the session cookie.",
    )  # fmt: skip
    fm = ok(run_cli, "get", written["id"])["frontmatter"]
    assert fm["layer"] == "web" and fm["tags"][:2] == ["auth", "security"] and fm["tags"].count("security") == 1


def test_a_security_layer_over_mcp_is_promoted_too(vault: Vault) -> None:
    async def scenario() -> None:
        async with Client(build_server(vault, "demo"), mode="legacy") as client:
            done = await client.call_tool(
                "upsert", {"kind": "decision", "slug": "pin-tls", "layer": "Security", "body": "Pin TLS versions."}
            )
            assert not done.is_error, done.content

    anyio.run(scenario)
    fm = read_record(vault.record_path("demo", "decision", "pin-tls")).frontmatter
    assert "layer" not in fm and fm["tags"] == ["security"]


@pytest.mark.parametrize(
    ("label", "layer"),
    [
        ("**Layer**: Frontend", "web"), ("**Camada**: Infraestrutura", "infrastructure"),
        ("Capa: pruebas", "tests"), ("レイヤー：フロントエンド", "web"), ("Слой: фронтенд", "web"),
    ],
)  # fmt: skip
def test_a_localised_layer_label_in_the_body_is_mapped(run_cli: Any, vault_dir: Path, label: str, layer: str) -> None:
    written = ok(run_cli, "upsert", "--kind", "trap", "--slug", "labelled", "--body", f"{label}\n\nIt bites.")
    assert read_record(vault_dir / written["path"]).frontmatter["layer"] == layer


def test_a_localised_security_label_in_the_body_becomes_a_tag(run_cli: Any, vault_dir: Path) -> None:
    written = ok(run_cli, "upsert", "--kind", "trap", "--slug", "c", "--body", "**Categoria**: Segurança\n\nCuidado.")
    assert "security" in read_record(vault_dir / written["path"]).frontmatter["tags"]


def test_a_layer_nothing_names_is_still_refused(run_cli: Any) -> None:
    refused = run_cli("upsert", "--kind", "trap", "--layer", "kitchen", "--body", "b")
    assert refused.exit_code == 1 and "invalid layer 'kitchen'" in refused.stderr


# --- --include-expired stamps expired on each expired hit ----------------------------------------


def _expired_and_live(run_cli: Any) -> None:
    ok(run_cli, "upsert", "--kind", "decision", "--slug", "old-freeze", "--title", "Freeze deploys",
       "--body", "Freeze deploys during the sale.", "--expires-at", "2001-01-01")  # fmt: skip
    ok(run_cli, "upsert", "--kind", "decision", "--slug", "new-freeze", "--title", "Freeze deploys again",
       "--body", "Freeze deploys during the next sale.")  # fmt: skip


def test_include_expired_stamps_expired_on_each_expired_hit_in_cli_json(run_cli: Any) -> None:
    _expired_and_live(run_cli)
    assert [r["id"] for r in ok(run_cli, "search", "freeze", "deploys")["results"]] == ["new-freeze"]
    found = {r["id"]: r["expired"] for r in ok(run_cli, "search", "freeze", "deploys", "--include-expired")["results"]}
    assert found == {"old-freeze": True, "new-freeze": False}
    assert "[expired]" in run_cli("search", "freeze", "--include-expired").stdout


def test_include_expired_stamps_expired_on_each_expired_hit_over_mcp(run_cli: Any, vault: Vault) -> None:
    _expired_and_live(run_cli)

    async def scenario() -> None:
        async with Client(build_server(vault, "demo"), mode="legacy") as client:
            done = await client.call_tool("search", {"query": "freeze deploys", "includeExpired": True})
            rows = (done.structured_content or {})["results"]
            assert {r["id"]: r["expired"] for r in rows} == {"old-freeze": True, "new-freeze": False}

    anyio.run(scenario)


# --- append echoes the event ------------------------------------------------------------------


def test_append_echoes_the_event_it_wrote(run_cli: Any, vault: Vault) -> None:
    written = ok(run_cli, "append", "--event", "Deployed v1.9 — déployé 🚀", "--details", '{"version": "1.9"}')
    assert written["event"] == "Deployed v1.9 — déployé 🚀" and written["details"] == {"version": "1.9"}
    assert written["created"].endswith("Z") and written["kind"] == "log"
    assert "Deployed v1.9" in run_cli("append", "--event", "Deployed v1.9 again").stdout

    async def scenario() -> None:
        async with Client(build_server(vault, "demo"), mode="legacy") as client:
            done = await client.call_tool("append", {"event": "Rolled back", "details": {"why": "errors"}})
            echoed = done.structured_content or {}
            assert echoed["event"] == "Rolled back" and echoed["details"] == {"why": "errors"}

    anyio.run(scenario)


# --- hits: counted across projects, shown with lastHit --------------------------------------------


def test_hit_ids_reach_a_record_of_another_project_when_the_search_was_cross_project(
    run_cli: Any, vault_dir: Path
) -> None:
    ok(
        run_cli,
        "--project",
        "shop",
        "upsert",
        "--kind",
        "trap",
        "--slug",
        "cdn-cookie",
        "--body",
        "The CDN strips cookies.",
    )
    ok(
        run_cli,
        "--project",
        "blog",
        "upsert",
        "--kind",
        "trap",
        "--slug",
        "cdn-cache",
        "--body",
        "The CDN caches drafts.",
    )
    found = ok(run_cli, "search", "cdn", "--all-projects", "--hit-ids", "cdn-cookie,cdn-cache", "--session-id", "s1")
    assert sorted(found["hitsRecorded"]) == ["cdn-cache", "cdn-cookie"]
    assert read_record(vault_dir / "projects/shop/traps/cdn-cookie.md").frontmatter["hits"] == 1
    assert read_record(vault_dir / "projects/blog/traps/cdn-cache.md").frontmatter["hits"] == 1
    again = ok(run_cli, "search", "cdn", "--all-projects", "--hit-ids", "cdn-cookie", "--session-id", "s1")
    assert again["hitsRecorded"] == []  # once per session


def test_search_rows_carry_hits_and_last_hit(run_cli: Any) -> None:
    ok(run_cli, "upsert", "--kind", "trap", "--slug", "pool", "--body", "The pool runs dry under load.")
    row = ok(run_cli, "search", "pool")["results"][0]
    assert row["hits"] == 0 and row["lastHit"] is None
    ok(run_cli, "search", "pool", "--hit-ids", "pool", "--session-id", "s1")
    row = ok(run_cli, "search", "pool")["results"][0]
    assert row["hits"] == 1 and row["lastHit"] is not None
    assert abs(datetime.fromisoformat(row["lastHit"]) - datetime.now(UTC)) < timedelta(hours=1)


# --- a tight budget drops low-severity traps first, and says so -----------------------------------


def test_bootstrap_under_a_tight_budget_drops_low_severity_traps_before_high_ones_and_says_it_was_cut(
    run_cli: Any,
) -> None:
    text = "This trap bit us in production and the fix is not obvious at all. " * 6
    for n, severity in enumerate(("low", "critical", "medium", "high", "low")):
        ok(run_cli, "upsert", "--kind", "trap", "--title", f"A {severity} trap {n}", "--severity", severity,
           "--allow-duplicate", "--body", text)  # fmt: skip
    brief = ok(run_cli, "bootstrap", "--max-bytes", "1400")
    kept = [t["severity"] for t in brief["sections"]["traps"]]
    assert kept and kept == sorted(kept, key=["critical", "high", "medium", "low"].index)
    assert "critical" in kept and "low" not in kept
    assert brief["truncated"] is True
    [left] = [o for o in brief["omitted"] if o["section"] == "traps"]
    assert left["reason"] == "budget" and left["count"] == 5 - len(kept)
    assert all(i.startswith(("a-low", "a-medium", "a-high")) for i in left["ids"])
    markdown = run_cli("bootstrap", "--max-bytes", "1400").stdout
    assert len(markdown.encode("utf-8")) <= 1400
    assert f"+ {left['count']} more traps: memosite search --kind trap" in markdown
