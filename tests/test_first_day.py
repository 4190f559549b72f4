"""A new user's first day (issue 25), each test the user's steps on the command line: what they
type, in order, and what they must see. Real files under tmp_path, the real CLI."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from test_sync_conflicts import conflict_on_both, state
from test_sync_support import Team, team
from test_trust import CLIENT_CODE, commit_all, git, repo

from memosite.recordfile import read_record

# The fixtures: a real git repository of a product (test_trust), two machines on a bare remote (sync).
__all__ = ["repo", "team"]


def ok(run_cli: Any, *args: str) -> dict[str, Any]:
    outcome = run_cli(*args, "--json")
    assert outcome.exit_code == 0, outcome.stdout + outcome.stderr
    data: dict[str, Any] = outcome.json()
    return data


# --- restore undoes forget ------------------------------------------------------------------


@pytest.mark.parametrize("status", ["shipped", "paused", "completed", "active"])
def test_restore_brings_back_the_status_the_record_had_before_forget(
    run_cli: Any, vault_dir: Path, status: str
) -> None:
    ok(run_cli, "upsert", "--kind", "plan", "--slug", "rollout", "--title", "Rollout", "--body", "1. ship it")
    ok(run_cli, "upsert", "--kind", "plan", "--slug", "rollout", "--status", status)
    assert ok(run_cli, "forget", "rollout")["status"] == "archived"
    restored = ok(run_cli, "restore", "rollout")
    assert restored["status"] == status
    fm = read_record(vault_dir / "projects/demo/plans/rollout.md").frontmatter
    assert fm["status"] == status and "archivedFrom" not in fm
    assert ok(run_cli, "get", "rollout")["frontmatter"]["status"] == status
    text = run_cli("restore", "rollout")
    assert text.exit_code == 1 and f"status is {status}" in text.stderr


def test_restore_after_gc_archived_an_expired_record_brings_back_its_status(run_cli: Any) -> None:
    ok(run_cli, "upsert", "--kind", "decision", "--slug", "freeze", "--body", "Freeze.", "--status", "paused")
    ok(run_cli, "upsert", "--kind", "decision", "--slug", "freeze", "--expires-at", "2001-01-01")
    assert ok(run_cli, "gc")["decisionsArchivedCount"] == 1
    assert ok(run_cli, "restore", "freeze")["status"] == "paused"


def test_forgetting_twice_keeps_the_first_status(run_cli: Any) -> None:
    ok(run_cli, "upsert", "--kind", "plan", "--slug", "p", "--body", "b", "--status", "shipped")
    ok(run_cli, "forget", "p")
    ok(run_cli, "forget", "p")
    assert ok(run_cli, "restore", "p")["status"] == "shipped"


def test_a_record_archived_by_hand_comes_back_active(run_cli: Any, vault_dir: Path) -> None:
    path = vault_dir / "projects/demo/plans/old.md"
    path.parent.mkdir(parents=True)
    path.write_text("---\ntitle: Old plan\nstatus: archived\n---\nDone long ago.\n", encoding="utf-8")
    assert ok(run_cli, "restore", "old")["status"] == "active"


# --- a mistyped --supersedes --------------------------------------------------------------


def test_a_mistyped_supersedes_is_refused_with_the_ids_it_was_probably_meant_to_be(
    run_cli: Any, vault_dir: Path
) -> None:
    ok(run_cli, "upsert", "--kind", "decision", "--slug", "search-like", "--title", "Search with LIKE", "--body", "x")
    before = sorted(p.relative_to(vault_dir) for p in (vault_dir / "projects").rglob("*.md"))
    typo = run_cli(
        "upsert", "--kind", "decision", "--slug", "search-fts", "--supersedes", "search-lke", "--body", "FTS5."
    )
    assert typo.exit_code == 1
    assert "did you mean search-like?" in typo.stderr and "nothing was written" in typo.stderr
    assert len(typo.stderr.splitlines()) == 1 and "Traceback" not in typo.stderr
    assert sorted(p.relative_to(vault_dir) for p in (vault_dir / "projects").rglob("*.md")) == before
    assert ok(run_cli, "get", "search-like")["frontmatter"]["status"] == "active"
    as_json = run_cli(
        "upsert", "--kind", "decision", "--slug", "s", "--supersedes", "search-lke", "--body", "F", "--json"
    )
    error = as_json.json()["error"]
    assert error["code"] == "RECORD_NOT_FOUND" and error["details"]["suggestions"] == ["search-like"]


def test_a_supersedes_of_a_record_gone_on_purpose_is_written_when_the_caller_says_so(run_cli: Any) -> None:
    written = ok(
        run_cli,
        "upsert",
        "--kind",
        "decision",
        "--slug",
        "search-fts",
        "--supersedes",
        "does-not-exist",
        "--supersedes-missing-ok",
        "--body",
        "FTS5.",
    )
    assert written["action"] == "created" and written["superseded"] is False
    assert written["supersedesMissing"] == "does-not-exist"


def test_supersedes_missing_ok_without_supersedes_is_refused(run_cli: Any) -> None:
    alone = run_cli("upsert", "--kind", "decision", "--body", "x", "--supersedes-missing-ok")
    assert alone.exit_code == 1 and "goes with --supersedes" in alone.stderr


def test_a_supersedes_that_finds_its_record_still_supersedes_it(run_cli: Any) -> None:
    ok(run_cli, "upsert", "--kind", "decision", "--slug", "old", "--body", "x")
    assert ok(run_cli, "upsert", "--kind", "decision", "--slug", "new", "--supersedes", "old", "--body", "y")[
        "superseded"
    ]
    assert ok(run_cli, "get", "old")["frontmatter"]["status"] == "superseded"


# --- did you mean -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("typed", "meant"),
    [("serch", "search"), ("bootstap", "bootstrap"), ("restor", "restore"), ("upsret", "upsert")],
)
def test_a_mistyped_command_names_the_command_it_was_probably_meant_to_be(run_cli: Any, typed: str, meant: str) -> None:
    outcome = run_cli(typed)
    assert outcome.exit_code == 2
    assert f"'{meant}'" in outcome.stderr and "Did you mean" in outcome.stderr


def test_a_mistyped_subcommand_names_the_subcommand(run_cli: Any) -> None:
    outcome = run_cli("stormbuffer", "lst")
    assert outcome.exit_code == 2 and "'list'" in outcome.stderr


@pytest.mark.parametrize(
    ("args", "meant"),
    [
        (["search", "--kidn", "trap", "x"], "--kind"),
        (["upsert", "--kind", "trap", "--body", "b", "--severty", "high"], "--severity"),
        (["--jsn", "status"], "--json"),
        (["forget", "x", "--prge"], "--purge"),
    ],
)
def test_a_mistyped_option_names_the_option_it_was_probably_meant_to_be(
    run_cli: Any, args: list[str], meant: str
) -> None:
    outcome = run_cli(*args)
    assert outcome.exit_code == 2 and f"'{meant}'" in outcome.stderr


def test_a_command_nothing_resembles_suggests_nothing(run_cli: Any) -> None:
    outcome = run_cli("zzzzqqq")
    assert outcome.exit_code == 2 and "No such command" in outcome.stderr and "Did you mean" not in outcome.stderr


@pytest.mark.parametrize("command", ["get", "forget", "restore", "edit"])
def test_a_mistyped_id_names_the_nearest_ids(run_cli: Any, command: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EDITOR", "true")  # an editor that saves nothing: edit never gets that far
    ok(run_cli, "upsert", "--kind", "trap", "--slug", "lock-order", "--body", "Take locks in order.")
    ok(run_cli, "upsert", "--kind", "decision", "--slug", "lock-free-queue", "--body", "No locks.")
    outcome = run_cli(command, "lock-ordr")
    assert outcome.exit_code == 1, outcome.stderr
    assert "record not found: lock-ordr" in outcome.stderr and "did you mean lock-order" in outcome.stderr
    assert len(outcome.stderr.splitlines()) == 1


def test_a_mistyped_id_in_review_names_the_nearest_ids(run_cli: Any, vault_dir: Path) -> None:
    ok(run_cli, "upsert", "--kind", "trap", "--slug", "cache-stampede", "--body", "Jitter the TTLs.")
    for action in (["approve"], ["reject", "--reason", "no"]):
        outcome = run_cli("review", action[0], "cache-stampde", *action[1:])
        assert outcome.exit_code == 1 and "did you mean cache-stampede?" in outcome.stderr


@pytest.mark.parametrize("slug", ["миграция-базы", "café-crème", "数据库-锁", "αρχείο", "🚀-launch", "مرحبا-بكم"])
def test_ids_in_any_script_get_their_near_misses(run_cli: Any, vault_dir: Path, slug: str) -> None:
    path = vault_dir / "projects/demo/traps" / f"{slug}.md"
    path.parent.mkdir(parents=True)
    path.write_text(f"---\ntitle: {slug}\n---\nA trap written by hand.\n", encoding="utf-8")
    typo = slug[:-1] + ("x" if not slug.endswith("x") else "y")
    outcome = run_cli("get", typo, "--json")
    assert outcome.exit_code == 1
    assert outcome.json()["error"]["details"]["suggestions"] == [slug]


def test_a_get_across_projects_suggests_ids_of_the_other_projects(
    run_cli: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    ok(run_cli, "--project", "shop", "upsert", "--kind", "decision", "--slug", "use-postgres", "--body", "x")
    ok(run_cli, "--project", "shop", "upsert", "--kind", "scratch", "--slug", "use-postgres-notes", "--body", "x")
    monkeypatch.delenv("MEMOSITE_PROJECT")
    (tmp_path / "blog").mkdir()
    monkeypatch.chdir(tmp_path / "blog")  # project blog, which holds nothing: get looks in the others
    outcome = run_cli("get", "use-postgre", "--json")
    assert outcome.exit_code == 1
    error = outcome.json()["error"]
    assert error["message"] == "record not found: use-postgre (did you mean use-postgres?)"
    assert error["details"]["suggestions"] == ["use-postgres"]  # never another project's scratch note


# --- a rename keeps path lookup -----------------------------------------------------------


def test_verify_update_moves_the_path_patterns_with_a_renamed_file(repo: Path, vault_dir: Path, run_cli: Any) -> None:
    ok(
        run_cli,
        "upsert", "--kind", "trap", "--slug", "retries", "--title", "Retries need a key", "--severity", "high",
        "--body", "Retrying a charge without an idempotency key charges twice.",
        "--path", "src/pay/client.py", "--path-patterns", "src/pay/**", "--cite", "src/pay/client.py:10-12",
    )  # fmt: skip
    git(repo, "mv", "src/pay/client.py", "src/pay/gateway.py")
    (repo / "src/pay/gateway.py").write_text("import os\n" + CLIENT_CODE, encoding="utf-8")
    commit_all(repo, "rename the client")
    [found] = ok(run_cli, "verify")["records"]
    assert found["verdict"] == "missing" and found["cites"][0]["renamedTo"] == "src/pay/gateway.py"
    said = run_cli("verify", "--update", "retries")
    assert said.exit_code == 0
    assert (
        "followed the rename src/pay/client.py → src/pay/gateway.py in cites, pathPatterns, linkedPaths" in said.stdout
    )
    fm = read_record(vault_dir / "projects/demo/traps/retries.md").frontmatter
    assert fm["pathPatterns"] == ["src/pay/**", "src/pay/gateway.py"] and fm["linkedPaths"] == ["src/pay/gateway.py"]
    assert [r["id"] for r in ok(run_cli, "search", "--path", "src/pay/gateway.py")["results"]] == ["retries"]
    brief = ok(run_cli, "bootstrap", "--path", "src/pay/gateway.py")
    assert [t["id"] for t in brief["sections"]["traps"]] == ["retries"] and brief["sections"]["traps"][0]["matched"]
    assert ok(run_cli, "verify")["records"][0]["verdict"] == "fresh"


def test_verify_update_json_names_each_rename_and_the_fields_it_moved_in(
    repo: Path, vault_dir: Path, run_cli: Any
) -> None:
    ok(run_cli, "upsert", "--kind", "decision", "--slug", "refunds", "--body", "Refunds are idempotent.",
       "--cite", "src/pay/refunds.py", "--cite", "src/pay/client.py:1-2")  # fmt: skip
    git(repo, "mv", "src/pay/refunds.py", "src/pay/returns.py")
    commit_all(repo, "rename refunds")
    moved = ok(run_cli, "verify", "--update", "refunds")["movedPaths"]
    assert moved == [{"from": "src/pay/refunds.py", "to": "src/pay/returns.py", "fields": ["cites"]}]
    unchanged = ok(run_cli, "verify", "--update", "refunds")["movedPaths"]
    assert unchanged == []


# --- verify --strict for CI -----------------------------------------------------------------


def test_verify_strict_fails_ci_on_drifted_or_missing_code_and_passes_when_fresh(repo: Path, run_cli: Any) -> None:
    ok(run_cli, "upsert", "--kind", "trap", "--slug", "span", "--body", "The span.", "--cite", "src/pay/client.py:1-3")
    passed = run_cli("verify", "--strict")
    assert passed.exit_code == 0 and "1 fresh" in passed.stdout
    (repo / "src/pay/client.py").write_text(CLIENT_CODE.replace("key=2)", "key=None)"), encoding="utf-8")
    commit_all(repo, "change a cited line")
    assert run_cli("verify").exit_code == 0  # without --strict a report is only a report
    drifted = run_cli("verify", "--strict")
    assert drifted.exit_code == 1 and "drifted" in drifted.stdout
    assert drifted.stderr == "memosite: verify --strict: 1 drifted, 0 missing in demo\n"
    as_json = run_cli("verify", "--strict", "--json")
    assert as_json.exit_code == 1 and as_json.json()["counts"] == {"fresh": 0, "drifted": 1, "missing": 0}
    (repo / "src/pay/client.py").unlink()
    commit_all(repo, "remove the client")
    missing = run_cli("verify", "--strict")
    assert missing.exit_code == 1 and "0 drifted, 1 missing" in missing.stderr


def test_verify_strict_with_update_is_refused(repo: Path, run_cli: Any) -> None:
    outcome = run_cli("verify", "--strict", "--update", "x")
    assert outcome.exit_code == 1 and "without --update" in outcome.stderr


# --- prompts are named by their title ------------------------------------------------------


@pytest.mark.parametrize(
    ("title", "slug"),
    [
        ("Apple Pay merchant validation", "apple-pay-merchant-validation"),
        ("Миграция базы", "migratsiya-bazy"),
        ("Café crème", "cafe-creme"),
        ("数据库", "shu-ju-ku"),
    ],
)
def test_a_prompt_takes_its_title_for_its_slug_as_other_kinds_do(run_cli: Any, title: str, slug: str) -> None:
    written = ok(run_cli, "upsert", "--kind", "prompt", "--title", title, "--body", "Implement it.")
    assert written["id"] == slug and written["path"] == f"projects/demo/prompts/{slug}.md"
    assert ok(run_cli, "get", slug)["frontmatter"]["title"] == title
    again = ok(run_cli, "upsert", "--kind", "prompt", "--title", title, "--body", "Another prompt, same title.")
    assert again["id"] == f"{slug}-2"


def test_a_prompt_of_a_session_turn_and_an_untitled_prompt_keep_their_own_names(run_cli: Any) -> None:
    turn = ok(run_cli, "upsert", "--kind", "prompt", "--title", "T", "--session-id", "s1", "--frontmatter",
              '{"turn": 3}', "--body", "b")  # fmt: skip
    assert turn["id"] == "prompt-s1-t3"
    untitled = ok(run_cli, "upsert", "--kind", "prompt", "--body", "b")
    assert untitled["id"].startswith("prompt-") and untitled["id"] != "prompt-s1-t3"


# --- a path-only search puts what hurts most first ---------------------------------------------


def test_a_path_only_search_lists_the_critical_trap_first_then_by_recurrence_and_hits(run_cli: Any) -> None:
    def trap(slug: str, severity: str | None, occurrences: int = 1, hits: int = 0) -> None:
        fields = {"occurrences": occurrences, "hits": hits, **({"severity": severity} if severity else {})}
        ok(run_cli, "upsert", "--kind", "trap", "--slug", slug, "--path", "src/pay/client.py", "--allow-duplicate",
           "--body", f"Trap {slug} about the payment client.", "--frontmatter", json.dumps(fields))  # fmt: skip

    trap("low-one", "low")
    trap("unrated", None, occurrences=9)
    trap("critical-one", "critical")
    trap("high-rare", "high")
    trap("high-often", "high", occurrences=4)
    trap("high-used", "high", hits=7)
    ok(run_cli, "upsert", "--kind", "trap", "--slug", "elsewhere", "--severity", "critical", "--path", "src/web/a.ts",
       "--body", "Not about payments.")  # fmt: skip
    found = ok(run_cli, "search", "--path", "src/pay/client.py")
    assert [hit["id"] for hit in found["results"]] == [
        "critical-one", "high-often", "high-used", "high-rare", "low-one", "unrated",
    ]  # fmt: skip
    text = run_cli("search", "--path", "src/pay")
    assert text.stdout.splitlines()[0].split()[1] == "critical-one"


# --- plain build keeps out of the product repository -------------------------------------------


def test_plain_build_in_the_product_repository_writes_no_site_folder_there(
    repo: Path, run_cli: Any, vault_dir: Path
) -> None:
    ok(run_cli, "upsert", "--kind", "trap", "--slug", "cdn-cookie", "--title", "Cookie loses SameSite",
       "--body", "Behind the CDN the cookie loses SameSite.")  # fmt: skip
    status_before = git(repo, "status", "--porcelain")
    built = run_cli("build")
    assert built.exit_code == 0, built.stderr
    assert not (repo / "site").exists() and git(repo, "status", "--porcelain") == status_before
    site = Path(ok(run_cli, "build")["site_dir"])  # the summary names it too; the JSON says it exactly
    assert str(site) in built.stdout
    cache = Path.home() / ".cache" / "memosite" / "sites"
    assert site.parent == cache and site.name.startswith("vault-")
    assert (site / "memory/demo/traps/cdn-cookie/index.html").is_file()
    again = ok(run_cli, "build")  # the same folder, rebuilt: memosite's own manifest says it may
    assert again["site_dir"] == str(site)
    other = ok(run_cli, "--vault", str(vault_dir.parent / "other-vault"), "init", "--no-pin")
    assert other["vault"]
    elsewhere = ok(run_cli, "--vault", str(vault_dir.parent / "other-vault"), "build")
    assert Path(elsewhere["site_dir"]).parent == cache and elsewhere["site_dir"] != str(site)


def test_build_out_still_writes_where_asked(repo: Path, run_cli: Any, tmp_path: Path) -> None:
    ok(run_cli, "upsert", "--kind", "trap", "--slug", "t", "--body", "A trap.")
    assert ok(run_cli, "build", "--out", str(tmp_path / "public"))["site_dir"] == str(tmp_path / "public")


# --- an MCP snippet a teammate can paste ---------------------------------------------------


def print_config(run_cli: Any, *args: str) -> tuple[str, str]:
    outcome = run_cli("mcp", "--print-config", *args)
    assert outcome.exit_code == 0, outcome.stderr
    return outcome.stdout, outcome.stderr


def test_print_config_names_plain_memosite_and_no_vault_when_both_are_this_installs_defaults(
    run_cli: Any, memosite_exe: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MEMOSITE_VAULT")  # the default vault, ~/.memosite: each teammate has their own
    monkeypatch.setenv("PATH", str(memosite_exe.parent))  # the memosite on PATH is this install
    stdout, stderr = print_config(run_cli, "claude")
    assert stdout == "claude mcp add memosite -- memosite mcp --project demo\n"
    assert "note" not in stderr and str(Path.home()) not in stdout + stderr
    snippet = json.loads(print_config(run_cli, "vscode")[0])
    assert snippet == {
        "servers": {"memosite": {"type": "stdio", "command": "memosite", "args": ["mcp", "--project", "demo"]}}
    }


def test_print_config_names_the_absolute_command_with_a_note_when_path_holds_another_memosite(
    run_cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = tmp_path / "other-bin"
    other.mkdir()
    (other / "memosite").write_text("#!/bin/sh\necho another install\n", encoding="utf-8")
    (other / "memosite").chmod(0o755)
    monkeypatch.setenv("PATH", str(other))
    stdout, stderr = print_config(run_cli, "cursor")
    entry = json.loads(stdout)["mcpServers"]["memosite"]
    assert Path(entry["command"]).is_absolute() and Path(entry["command"]).parent != other
    assert "# note: the command is this machine's" in stderr and "is another install" in stderr
    # A vault named with --vault or MEMOSITE_VAULT is this machine's path, said so too.
    assert entry["args"][:2] == ["mcp", "--vault"] and "is this machine's path" in stderr


def test_the_printed_snippet_starts_a_server_an_sdk_client_can_use(
    run_cli: Any, memosite_exe: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import anyio
    from mcp import ClientSession, StdioServerParameters, stdio_client

    monkeypatch.delenv("MEMOSITE_VAULT")
    monkeypatch.setenv("PATH", str(memosite_exe.parent))
    ok(run_cli, "--vault", str(Path.home() / ".memosite"), "upsert", "--kind", "trap", "--slug", "t", "--body", "b")
    entry = json.loads(print_config(run_cli, "cursor")[0])["mcpServers"]["memosite"]
    params = StdioServerParameters(
        command=entry["command"], args=entry["args"], env={"HOME": str(Path.home()), "PATH": str(memosite_exe.parent)}
    )

    async def scenario() -> None:
        with open(tmp_path / "server.log", "w", encoding="utf-8") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                found = await session.call_tool("get", {"id": "t"})
                assert not found.is_error and (found.structured_content or {})["project"] == "demo"

    anyio.run(scenario)


# --- the same over MCP ----------------------------------------------------------------------


def test_an_agents_mistyped_supersedes_is_refused_over_mcp_and_written_when_it_says_the_record_is_gone(
    run_cli: Any, vault_dir: Path
) -> None:
    import anyio
    from mcp import Client

    from memosite.mcp_server.server import build_server
    from memosite.vault import Vault

    ok(run_cli, "upsert", "--kind", "decision", "--slug", "search-like", "--body", "LIKE will do.")
    vault = Vault.open(vault_dir)

    async def scenario() -> None:
        async with Client(build_server(vault, "demo"), mode="legacy") as client:
            refused = await client.call_tool(
                "upsert", {"kind": "decision", "slug": "search-fts", "supersedes": "search-lik", "body": "FTS5."}
            )
            assert refused.is_error
            text = refused.content[0].text  # type: ignore[union-attr]
            assert text.startswith("RECORD_NOT_FOUND: supersedes search-lik") and "did you mean search-like?" in text
            missing = await client.call_tool("get", {"id": "search-lik", "projectId": "demo"})
            assert missing.is_error and "did you mean search-like?" in missing.content[0].text  # type: ignore[union-attr]
            written = await client.call_tool(
                "upsert",
                {
                    "kind": "decision",
                    "slug": "search-fts",
                    "supersedes": "gone",
                    "supersedesMissingOk": True,
                    "body": "F",
                },
            )
            assert not written.is_error and (written.structured_content or {})["supersedesMissing"] == "gone"

    try:
        anyio.run(scenario)
    finally:
        vault.close()
    assert not (vault_dir / "projects/demo/decisions/search-fts.md").read_text(encoding="utf-8").count("search-lik\n")
    assert ok(run_cli, "get", "search-like")["frontmatter"]["status"] == "active"


def test_a_mistyped_id_in_resolve_names_the_record_with_the_conflict(team: Team, run_cli: Any) -> None:
    a, _ = conflict_on_both(team)
    before = state(a)
    outcome = run_cli("resolve", "lock-ordr", "--take", "mine", "--vault", str(a.root))
    assert outcome.exit_code == 1 and len(outcome.stderr.splitlines()) == 1
    assert "no conflict for 'lock-ordr'" in outcome.stderr and "(did you mean lock-order?)" in outcome.stderr
    assert state(a) == before
