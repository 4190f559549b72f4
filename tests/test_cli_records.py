"""The CLI contract for record commands: --json shapes, errors, exit codes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from memosite.cli import cli, main
from memosite.vault import Vault

MEMOSITE = [sys.executable, "-m", "memosite"]


def run(*args: str, input: str | None = None) -> tuple[int, str, str]:
    """Run the real entry point in-process (same code path as the console script)."""
    runner = CliRunner()
    result = runner.invoke(cli, list(args), input=input, catch_exceptions=False, standalone_mode=True)
    return result.exit_code, result.stdout, result.stderr


def run_json(*args: str, input: str | None = None) -> tuple[int, dict]:
    code, out, _ = run(*args, "--json", input=input)
    return code, json.loads(out)


def test_upsert_json_has_the_contract_fields() -> None:
    code, data = run_json("upsert", "--kind", "trap", "--body", "Beware", "--title", "Beware", "--severity", "HIGH")
    assert code == 0
    assert set(data) == {
        "id",
        "kind",
        "project",
        "path",
        "status",
        "created",
        "updated",
        "expires_at",
        "action",
        "recurrence",
        "occurrences",
        "superseded",
        "supersedesMissing",
        "pending",
        "supersedesPending",
    }
    assert data["action"] == "created" and data["occurrences"] == 1
    assert data["path"] == "projects/demo/traps/beware.md" and data["expires_at"] is None


def test_upsert_body_from_stdin_and_options_into_frontmatter() -> None:
    code, data = run_json(
        "upsert",
        "--kind",
        "spec",
        "--body-file",
        "-",
        "--slug",
        "s",
        "--tag",
        "a",
        "--tag",
        "b",
        "--ttl",
        "7d",
        "--frontmatter",
        '{"owner": "ana"}',
        input="spec body\n",
    )
    assert code == 0 and data["expires_at"] is not None
    code, got = run_json("get", "--id", "s")
    assert got["body"] == "spec body\n"
    assert got["frontmatter"]["tags"] == ["a", "b"] and got["frontmatter"]["owner"] == "ana"
    assert set(got) == {"id", "kind", "project", "path", "frontmatter", "body", "expired", "expires_at", "pending"}


def test_get_by_kind_and_slug_and_human_output() -> None:
    run("upsert", "--kind", "decision", "--body", "Use it", "--slug", "d1")
    code, out, _ = run("get", "--kind", "decision", "--slug", "d1")
    assert code == 0 and out.startswith("---\n") and "Use it" in out


def test_append_json_shape() -> None:
    code, data = run_json("append", "--event", "deployed", "--details", '{"v": 1}')
    assert code == 0 and set(data) == {"id", "kind", "project", "path", "event", "details", "created"}
    assert data["kind"] == "log" and data["event"] == "deployed" and data["details"] == {"v": 1}


def test_forget_and_restore_json_shape() -> None:
    run("upsert", "--kind", "trap", "--body", "x", "--slug", "t")
    code, data = run_json("forget", "--id", "t")
    assert (code, data) == (0, {"id": "t", "kind": "trap", "status": "archived", "purged": False, "restored": []})
    code, data = run_json("restore", "--id", "t")
    assert code == 0 and data["status"] == "active"
    code, data = run_json("forget", "--kind", "trap", "--slug", "t", "--purge")
    assert data == {"id": "t", "kind": "trap", "status": "purged", "purged": True, "restored": []}


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (["get", "--id", "missing"], "RECORD_NOT_FOUND"),
        (["forget", "--id", "missing"], "RECORD_NOT_FOUND"),
        (["get"], "INVALID_ARGUMENTS"),
        (["upsert", "--kind", "trap", "--body", " "], "INVALID_ARGUMENTS"),
        (["upsert", "--kind", "nope", "--body", "x"], "INVALID_ARGUMENTS"),
        (["upsert", "--kind", "trap", "--body", "x", "--severity", "urgent"], "INVALID_ARGUMENTS"),
        (["upsert", "--kind", "trap", "--body", "x", "--ttl", "soon"], "INVALID_ARGUMENTS"),
        (["upsert", "--kind", "trap", "--body", "x", "--slug", "../../etc"], "INVALID_ARGUMENTS"),
        (["upsert", "--kind", "trap", "--body", "x", "--frontmatter", "{bad"], "INVALID_ARGUMENTS"),
        (["upsert", "--kind", "trap", "--body", "token ghp_" + "Zq7xK2mP9w" * 4], "SAFETY_VIOLATION"),
        (["upsert", "--kind", "trap", "--body", "x", "--project", "../x"], "INVALID_ARGUMENTS"),
    ],
)
def test_errors_are_json_with_stable_code_and_exit_1(vault: Vault, args: list[str], code: str) -> None:
    exit_code, out, err = run(*args, "--json")
    assert exit_code == 1
    assert json.loads(out)["error"]["code"] == code
    assert "Traceback" not in out + err


def test_errors_without_json_are_one_line_on_stderr(vault: Vault) -> None:
    exit_code, out, err = run("get", "--id", "missing")
    assert exit_code == 1 and out == ""
    assert err.count("\n") == 1 and err.startswith("memosite: error: record not found")


def test_usage_error_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["upsert", "--body", "x"])
    assert info.value.code == 2
    assert "Missing option '--kind'" in capsys.readouterr().err


def test_usage_error_with_json_keeps_stdout_json(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["upsert", "--body", "x", "--json"])
    assert info.value.code == 2
    assert json.loads(capsys.readouterr().out)["error"]["code"] == "USAGE_ERROR"


def test_list_compile_and_reindex(vault_dir: Path) -> None:
    run("upsert", "--kind", "trap", "--body", "x", "--slug", "t", "--severity", "low")
    run("upsert", "--kind", "scratch", "--body", "y", "--slug", "s")
    code, data = run_json("list", "--kind", "trap")
    assert code == 0 and [r["id"] for r in data["records"]] == ["t"]
    (vault_dir / "projects/demo/TRAPS.md").unlink()
    code, data = run_json("compile")
    assert code == 0 and (vault_dir / "projects/demo/TRAPS.md").exists()
    for leftover in (vault_dir / ".memosite").glob("index.sqlite*"):
        leftover.unlink()
    code, data = run_json("reindex")
    assert code == 0 and data["projects"] == {"demo": 2}


@pytest.mark.parametrize("command", ["compile", "reindex"])
@pytest.mark.parametrize(("asked", "says"), [("dem", "did you mean demo?"), ("Ελληνικά", "invalid project id")])
def test_a_project_the_vault_does_not_hold_is_refused_not_made(
    vault_dir: Path, command: str, asked: str, says: str
) -> None:
    # Run in a folder that names no project (the vault's own root, say), compile or reindex
    # made an empty project of that name with five empty views.
    run("upsert", "--kind", "trap", "--body", "Повтор платежа списывает дважды", "--slug", "t")
    before = sorted(path.name for path in (vault_dir / "projects").iterdir())
    code, data = run_json(command, "--project", asked)
    assert code == 1 and data["error"]["code"] == "INVALID_ARGUMENTS" and says in data["error"]["message"]
    assert sorted(path.name for path in (vault_dir / "projects").iterdir()) == before == ["demo"]


def test_a_project_named_nowhere_near_lists_the_vaults_projects(vault_dir: Path) -> None:
    run("upsert", "--kind", "trap", "--body", "x", "--slug", "t")
    code, data = run_json("reindex", "--project", "vault")
    assert code == 1 and "its projects: demo" in data["error"]["message"]
    assert data["error"]["details"]["projects"] == ["demo"]


def test_vault_and_project_options_override_environment(tmp_path: Path) -> None:
    other = tmp_path / "other-vault"
    code, data = run_json(
        "upsert", "--vault", str(other), "--project", "p2", "--kind", "spec", "--body", "b", "--slug", "x"
    )
    assert code == 0 and data["project"] == "p2" and (other / "projects/p2/specs/x.md").exists()


def test_project_id_from_memosite_toml(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = tmp_path / "repo" / "sub"
    repo.mkdir(parents=True)
    (tmp_path / "repo" / ".memosite.toml").write_text('id = "stable-id"\nname = "Nice Name"\n', encoding="utf-8")
    monkeypatch.delenv("MEMOSITE_PROJECT")
    monkeypatch.chdir(repo)
    code, data = run_json("upsert", "--kind", "spec", "--body", "b", "--slug", "x")
    assert code == 0 and data["project"] == "stable-id"


def test_console_script_runs_without_traceback_on_bad_input(tmp_path: Path) -> None:
    Vault.open(tmp_path / "v").close()
    env = {**os.environ, "MEMOSITE_VAULT": str(tmp_path / "v")}
    proc = subprocess.run(
        [*MEMOSITE, "get", "--id", "nope", "--json"],
        capture_output=True,
        text=True,
        encoding="utf-8",
        env=env,
        check=False,
    )
    assert proc.returncode == 1 and json.loads(proc.stdout)["error"]["code"] == "RECORD_NOT_FOUND"
    assert proc.stderr == ""


def test_demo_writes_every_kind_and_compiles_views(tmp_path: Path) -> None:
    target = tmp_path / "demo-vault"
    code, data = run_json("demo", "--vault", str(target))
    assert code == 0 and data["records"] >= 25
    project = target / "projects" / data["project"]
    for directory in ("traps", "decisions", "specs", "plans", "logs", "scratch", "reviews", "prompts", "sessions"):
        assert any((project / directory).glob("*.md")), directory
    traps = (project / "TRAPS.md").read_text(encoding="utf-8")
    for severity in ("CRITICAL", "HIGH", "MEDIUM", "LOW"):
        assert f"[{severity}]" in traps
    decisions = (project / "DECISIONS.md").read_text(encoding="utf-8")
    assert "## Superseded" in decisions and "## Proposed" in decisions


def test_bad_config_value_is_one_clear_line(vault_dir: Path) -> None:
    vault_dir.mkdir(parents=True, exist_ok=True)
    (vault_dir / "config.json").write_text('{"ttl": {"scratchDays": "soon"}}', encoding="utf-8")
    exit_code, out, err = run("list")
    assert exit_code == 1 and out == "" and "ttl.scratchDays must be a non-negative number" in err
    assert err.count("\n") == 1


def test_compile_and_list_pick_up_hand_edits(vault_dir: Path) -> None:
    run("upsert", "--kind", "trap", "--body", "x", "--slug", "t", "--title", "Old title")
    path = vault_dir / "projects/demo/traps/t.md"
    path.write_text(path.read_text(encoding="utf-8").replace("Old title", "New title"), encoding="utf-8")
    code, data = run_json("list")
    assert code == 0 and [r["title"] for r in data["records"]] == ["New title"]
    run("compile")
    assert "New title" in (vault_dir / "projects/demo/TRAPS.md").read_text(encoding="utf-8")


def test_trap_recurrence_through_the_cli() -> None:
    body = "Retrying the payment call without an idempotency key charges the customer twice"
    _, first = run_json("upsert", "--kind", "trap", "--body", body, "--path", "src/pay.py", "--slug", "pay")
    _, again = run_json("upsert", "--kind", "trap", "--body", body + " again", "--path", "src/pay.py", "--slug", "pay2")
    assert first["recurrence"] is False and again["recurrence"] is True and again["id"] == "pay"
    _, dup = run_json(
        "upsert", "--kind", "trap", "--body", body, "--path", "src/pay.py", "--slug", "pay3", "--allow-duplicate"
    )
    assert dup["recurrence"] is False and dup["id"] == "pay3"
    _, got = run_json("get", "--id", "pay")
    assert got["frontmatter"]["occurrences"] == 2


def test_supersedes_and_status_filter_through_the_cli() -> None:
    run("upsert", "--kind", "decision", "--body", "LIKE", "--slug", "like")
    _, new = run_json("upsert", "--kind", "decision", "--body", "FTS", "--slug", "fts", "--supersedes", "like")
    assert new["superseded"] is True
    _, superseded = run_json("list", "--status", "superseded")
    assert [r["id"] for r in superseded["records"]] == ["like"]
    code, out, _ = run("restore", "--id", "like", "--json")
    assert code == 1 and json.loads(out)["error"]["code"] == "INVALID_TRANSITION"


def test_get_without_project_falls_back_to_the_single_sibling(monkeypatch: pytest.MonkeyPatch) -> None:
    run("upsert", "--project", "other", "--kind", "decision", "--body", "shared", "--slug", "shared-d")
    monkeypatch.delenv("MEMOSITE_PROJECT")
    code, data = run_json("get", "--id", "shared-d")
    assert code == 0 and data["project"] == "other"
    code, data = run_json("get", "--id", "shared-d", "--project", "demo")
    assert code == 1 and data["error"]["code"] == "RECORD_NOT_FOUND"


def test_demo_never_overwrites_a_real_project(tmp_path: Path) -> None:
    target = tmp_path / "real"
    run(
        "upsert",
        "--vault",
        str(target),
        "--project",
        "acme-shop",
        "--kind",
        "decision",
        "--slug",
        "postgres-system-of-record",
        "--body",
        "We chose MySQL.",
    )
    code, data = run_json("demo", "--vault", str(target))
    assert code == 1 and data["error"]["code"] == "INVALID_ARGUMENTS"
    text = (target / "projects/acme-shop/decisions/postgres-system-of-record.md").read_text(encoding="utf-8")
    assert text.endswith("We chose MySQL.")


def test_demo_runs_again_without_rewriting_its_records(tmp_path: Path) -> None:
    target = tmp_path / "demo-again"
    run_json("demo", "--vault", str(target))
    trap = next((target / "projects/acme-shop/traps").glob("*.md"))
    trap.write_text(trap.read_text(encoding="utf-8") + "edited by a person\n", encoding="utf-8")
    code, data = run_json("demo", "--vault", str(target))
    assert code == 0 and data["records"] == 0
    assert trap.read_text(encoding="utf-8").endswith("edited by a person\n")


def test_a_demo_made_again_beside_the_repository_an_earlier_demo_left_cites_its_code(tmp_path: Path) -> None:
    # The first demo left its repository with the code changed after the records; a person removes
    # the vault alone and asks for the demo again.
    target = tmp_path / "demo-again"
    first_code, first = run_json("demo", "--vault", str(target))
    assert first_code == 0
    first_checks = run_json("--vault", str(target), "--project", "acme-shop", "status")[1]["verdicts"]
    shutil.rmtree(target)
    code, data = run_json("demo", "--vault", str(target))
    assert code == 0, data
    assert data["records"] == first["records"]
    cited = [p for p in (target / "projects/acme-shop").rglob("*.md") if "cites:" in p.read_text(encoding="utf-8")]
    assert cited  # the samples that cite code still cite it, pinned as the first demo pinned them
    assert run_json("--vault", str(target), "--project", "acme-shop", "status")[1]["verdicts"] == first_checks


@pytest.mark.parametrize(
    "args",
    [["get", "--id", "x"], ["list"], ["search", "retries"], ["bootstrap"], ["rank"], ["forget", "--id", "x"], ["gc"]],
)
def test_read_only_commands_never_create_a_vault(vault_dir: Path, args: list[str]) -> None:
    code, data = run_json(*args)
    assert code == 1 and data["error"]["code"] == "VAULT_NOT_FOUND"
    assert "memosite init" in data["error"]["message"] and str(vault_dir) not in data["error"]["message"]
    assert not vault_dir.exists()


@pytest.mark.parametrize(
    "args",
    [["list"], ["search", "retries"], ["bootstrap"], ["rank"], ["review"], ["conflicts"], ["get", "--id", "x"]],
)
def test_read_only_commands_leave_an_empty_directory_as_it_is(tmp_path: Path, args: list[str]) -> None:
    """A clone not checked out yet, a folder made for the vault: a read says it is no vault yet."""
    empty = tmp_path / "empty"
    (empty / ".git").mkdir(parents=True)
    code, data = run_json(*args, "--vault", str(empty))
    assert code == 1 and data["error"]["code"] == "VAULT_NOT_FOUND", data
    assert "not a memosite vault yet" in data["error"]["message"] and str(empty) not in data["error"]["message"]
    assert sorted(p.name for p in empty.iterdir()) == [".git"]


def test_options_before_the_command_work_as_after_it(tmp_path: Path) -> None:
    other = tmp_path / "elsewhere"
    code, _ = run_json("upsert", "--vault", str(other), "--kind", "spec", "--body", "b", "--slug", "s")
    assert code == 0
    result = CliRunner().invoke(cli, ["--vault", str(other), "--project", "demo", "--json", "list"])
    assert result.exit_code == 0 and [r["id"] for r in json.loads(result.stdout)["records"]] == ["s"]
    result = CliRunner().invoke(cli, ["--json", "get", "--vault", str(other), "--id", "s"])
    assert result.exit_code == 0 and json.loads(result.stdout)["id"] == "s"


def test_empty_vault_option_is_refused() -> None:
    code, data = run_json("list", "--vault", "")
    assert code == 1 and "--vault must not be empty" in data["error"]["message"]


def test_body_file_that_is_not_utf8_is_a_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"\xff\xfe binary")
    code, data = run_json("upsert", "--kind", "spec", "--body-file", str(bad))
    assert code == 1 and "not UTF-8" in data["error"]["message"]


@pytest.mark.parametrize("details", ["NaN", '{"x": Infinity}', '{"x": 1e999}', '{"x": "\\ud800"}'])
def test_non_finite_numbers_and_broken_unicode_are_refused(details: str) -> None:
    code, data = run_json("append", "--event", "e", "--details", details)
    assert code == 1 and data["error"]["code"] == "INVALID_ARGUMENTS"


def test_get_forget_and_restore_take_the_id_as_an_argument_too(vault: Vault, run_cli) -> None:  # type: ignore[no-untyped-def]
    run_cli("upsert", "--kind", "trap", "--slug", "lock-order", "--title", "Lock order", "--body", "Ids in order.")
    assert run_cli("get", "lock-order", "--json").json()["id"] == "lock-order"
    assert run_cli("forget", "lock-order").stdout.startswith("archived trap lock-order")
    assert run_cli("restore", "lock-order").stdout.startswith("restored trap lock-order")
    both = run_cli("get", "lock-order", "--id", "other")
    assert (
        both.exit_code != 0
        and both.stderr == "memosite: error: two different ids given: 'lock-order' and --id 'other'\n"
    )


@pytest.mark.parametrize("title", ['["Повтор"]', "2024", '{"el": "Τίτλος"}'])
def test_a_title_that_is_not_text_is_refused_and_nothing_is_written(vault_dir: Path, title: str) -> None:
    code, data = run_json("upsert", "--kind", "trap", "--body", "Retry 冪等", "--frontmatter", f'{{"title": {title}}}')
    assert code == 1 and data["error"]["code"] == "INVALID_ARGUMENTS"
    assert "title must be text" in data["error"]["message"]
    assert not list(vault_dir.rglob("*.md"))
