"""``memosite stormbuffer``: JSON shapes, one-line errors, forget safety, validate, import/export."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from memosite.cli import cli
from memosite.vault import Vault

MEMOSITE = Path(sys.executable).with_name("memosite")


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    monkeypatch.chdir(repo)
    return repo


def run(*args: str, ok: bool = True) -> Any:
    result = CliRunner().invoke(cli, ["stormbuffer", *args])
    assert (result.exit_code == 0) is ok, result.output
    return result


def run_json(*args: str, ok: bool = True) -> dict[str, Any]:
    result = run(*args, "--json", ok=ok)
    return json.loads(result.stdout)


def add(*extra: str) -> dict[str, Any]:
    return run_json("add", "--kind", "decision", "--title", "Use Postgres", "--body", "Orders in Postgres.\n", *extra)


def test_init_add_show_list_json_shapes(workdir: Path) -> None:
    info = run_json("init", "--name", "Shop")
    assert info["path"] == str(workdir / ".sbuf") and info["created"] is True
    assert (info["scope"], info["visibility"], info["project_name"]) == ("project", "private", "Shop")
    assert info["record_scope"] == f"project:{info['project_id']}"
    assert (workdir / ".sbuf" / ".gitignore").read_text(encoding="utf-8") == "*\n!.gitignore\n"
    added = add("--tag", "db", "--alias", "pg", "--source-kind", "issue", "--source-ref", "#1", "--source-actor", "ana")
    assert added["status"] == "candidate" and added["access"] == "agent"
    assert added["sources"] == [{"kind": "issue", "reference": "#1", "actor": "ana"}]
    assert "body" not in added
    shown = run_json("show", added["id"])
    assert shown["body"] == "Orders in Postgres.\n" and shown["tags"] == ["db"]
    listed = run_json("list")
    assert listed["count"] == 1 and listed["project_id"] == info["project_id"]
    assert set(listed["records"][0]) >= {"id", "kind", "title", "status", "scope", "path"}


def test_store_is_found_from_a_subdirectory(workdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run("init")
    record_id = add()["id"]
    deeper = workdir / "src" / "pkg"
    deeper.mkdir(parents=True)
    monkeypatch.chdir(deeper)
    assert run_json("show", record_id)["id"] == record_id


def test_lifecycle_commands_and_refused_transition(workdir: Path) -> None:
    run("init")
    old, new = add()["id"], add("--access", "human")["id"]
    assert run_json("archive", old, ok=False)["error"]["code"] == "INVALID_TRANSITION"
    assert run_json("promote", old)["status"] == "active"
    result = run_json("supersede", old, "--by", new)
    assert result["superseded"]["status"] == "superseded" and result["by"]["supersedes"] == [old]
    assert [r["id"] for r in run_json("list")["records"]] == [new]
    assert {r["id"] for r in run_json("list", "--all")["records"]} == {old, new}
    assert run_json("archive", new)["status"] == "archived"
    assert run_json("restore", new)["status"] == "active"
    error = run("restore", old, ok=False)
    assert error.stdout == "" and len(error.stderr.strip().splitlines()) == 1
    assert "terminal" in error.stderr


def test_a_lifecycle_message_names_the_new_status_only_when_the_verb_does_not(workdir: Path) -> None:
    run("init")
    record_id = add()["id"]
    assert run("archive", record_id, ok=False).stderr.strip() == (
        f"memosite: error: cannot archive {record_id}: it is candidate, not active; promote it first, or reject it"
    )
    assert run("promote", record_id).stdout.strip() == f"promoted {record_id} → active"
    assert run("archive", record_id).stdout.strip() == f"archived {record_id}"
    assert run("restore", record_id).stdout.strip() == f"restored {record_id} → active"
    missing = "01a2319d-0fc0-71bf-87e2-f047afe73e17"
    assert run("show", missing, ok=False).stderr.startswith(f"memosite: error: record not found: {missing}")


def test_export_finds_the_store_as_every_other_command_does(
    workdir: Path, vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert run("export", ok=False).stderr == run("list", ok=False).stderr  # no store: the same one line
    store = Path(run_json("init")["path"])
    CliRunner().invoke(cli, ["upsert", "--kind", "decision", "--title", "Use Postgres", "--body", "Orders.\n"])
    deeper = workdir / "src"
    deeper.mkdir()
    monkeypatch.chdir(deeper)
    exported = run_json("export")
    assert exported["store"] == str(store) and exported["store_created"] is False and exported["count"] == 1


def test_reject_archives_a_candidate(workdir: Path) -> None:
    run("init")
    proposal = add()["id"]
    rejected = run_json("reject", proposal)
    assert rejected["status"] == "archived"
    refused = run_json("reject", proposal, ok=False)
    assert refused["error"]["code"] == "INVALID_TRANSITION" and "not candidate" in refused["error"]["message"]
    assert run_json("list")["count"] == 0


def test_global_store_commands(workdir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    info = run_json("init", "--global")
    assert info["path"] == str(tmp_path / "data" / "stormbuffer") and info["record_scope"] == "global"
    added = add("--global", "--access", "human")
    assert added["scope"] == "global" and added["status"] == "active"
    assert run_json("list", "--global")["count"] == 1
    assert "stormbuffer init" in run_json("list", ok=False)["error"]["message"]  # no project store here
    run("init")
    refused = run_json("add", "--kind", "fact", "--title", "t", "--body", "b", "--scope", "global", ok=False)
    assert refused["error"]["details"]["field"] == "scope" and "global store" in refused["error"]["message"]
    assert run_json("list")["count"] == 0


GLOBAL_STORE_TOML = 'format_version = 1\nscope = "global"\nvisibility = "private"\n'


@pytest.mark.parametrize(
    "command",
    [
        ["list"],
        ["show", "01a2319d-0fc0-71bf-87e2-f047afe73e17"],
        ["add", "--kind", "fact", "--title", "t", "--body", "b"],
        ["promote", "01a2319d-0fc0-71bf-87e2-f047afe73e17"],
        ["rename", "Shop"],
        ["init"],
        ["import"],
        ["export"],
        ["export", "--store", "."],
        ["validate"],
        ["add", "--kind", "fact", "--title", "t", "--body", "b", "--store", ".sbuf"],
    ],
    ids=lambda command: "-".join(command[:1] + command[-1:]),
)
def test_a_global_store_in_a_project_stores_place_is_refused_by_every_command(
    workdir: Path, vault: Vault, command: list[str]
) -> None:
    """sbuf reads a .sbuf as a project store and refuses scope = "global" there (WrongScope)."""
    records = workdir / ".sbuf" / "records"
    records.mkdir(parents=True)
    store_toml = workdir / ".sbuf" / "store.toml"
    store_toml.write_text(GLOBAL_STORE_TOML, encoding="utf-8")
    result = run(*command, ok=False)
    assert result.stderr.count("\n") == 1
    assert str(store_toml) in result.output and "'global' in a project store" in result.output
    assert list(records.iterdir()) == [] and store_toml.read_text(encoding="utf-8") == GLOBAL_STORE_TOML


def test_forget_without_destroy_refuses(workdir: Path) -> None:
    run("init")
    record_id = add()["id"]
    payload = run_json("forget", record_id, ok=False)
    assert payload["error"]["code"] == "INVALID_ARGUMENTS" and "--destroy" in payload["error"]["message"]
    assert run_json("show", record_id)["id"] == record_id


def test_forget_destroy_without_yes_refuses_when_not_interactive(workdir: Path) -> None:
    run("init")
    record_id = add()["id"]
    result = run("forget", record_id, "--destroy", ok=False)
    assert result.stderr.strip() == (
        "memosite: error: refusing to destroy a record without --yes in non-interactive use"
    )
    assert run_json("show", record_id)["id"] == record_id
    gone = run_json("forget", record_id, "--destroy", "--yes")
    assert gone["destroyed"] is True and not Path(gone["path"]).exists()
    assert run_json("show", record_id, ok=False)["error"]["code"] == "RECORD_NOT_FOUND"


def test_bad_input_is_one_line_without_traceback(workdir: Path) -> None:
    missing = run("list", ok=False)
    assert missing.stderr.count("\n") == 1 and "stormbuffer init" in missing.stderr
    run("init")
    bad_kind = run_json("add", "--kind", "note", "--title", "t", "--body", "b", ok=False)
    assert bad_kind["error"]["code"] == "INVALID_ARGUMENTS" and "kind" in bad_kind["error"]["message"]
    bad_source = run(
        "add", "--kind", "fact", "--title", "t", "--body", "b", "--source-kind", "email", "--source-ref", "x", ok=False
    )
    assert "sources[0].kind" in bad_source.stderr and "Traceback" not in bad_source.output


def test_validate_lists_each_problem_and_exits_1(workdir: Path) -> None:
    run("init")
    record = Path(add()["path"])
    assert run_json("validate")["valid"] is True
    record.write_text(
        record.read_text(encoding="utf-8")
        .replace('access = "agent"', 'access = "robot"')
        .replace("format_version = 1", "format_version = 2"),
        encoding="utf-8",
    )
    result = run("validate", ok=False)
    lines = result.stdout.strip().splitlines()
    assert f"{record}: format_version: version 2 is unsupported; expected 1" in lines
    assert any(line.startswith(f"{record}: access:") for line in lines)
    assert result.stderr.strip() == "memosite: error: 2 problem(s) in 1 of 2 file(s)"
    payload = run_json("validate", str(record), ok=False)
    assert payload["error"]["code"] == "INVALID_RECORD"
    assert {p["field"] for p in payload["error"]["details"]["problems"]} == {"format_version", "access"}


def test_export_then_import_through_the_cli(workdir: Path, vault_dir: Path) -> None:
    run("init")
    add("--access", "human")
    imported = run_json("import")
    assert imported["direction"] == "import" and imported["count"] == 1
    assert imported["records"][0]["memosite_kind"] == "decision"
    got = json.loads(CliRunner().invoke(cli, ["get", "--id", imported["records"][0]["id"], "--json"]).stdout)
    assert got["frontmatter"]["stormbuffer"]["access"] == "human"
    exported = run_json("export", "--store", str(workdir / "out"))
    assert exported["store_created"] is True and exported["count"] == 1
    assert exported["project_id"] == run_json("show", imported["records"][0]["id"])["scope"].split(":", 1)[1]
    again = run_json("export", "--store", str(workdir / "out"))
    assert again["count"] == 0 and again["unchanged"] == 1


def test_real_command_line_end_to_end(workdir: Path) -> None:
    env = {**os.environ, "MEMOSITE_DEBUG": ""}
    init = subprocess.run(
        [str(MEMOSITE), "stormbuffer", "init", "--json"],
        cwd=workdir,
        env=env,
        capture_output=True,
        text=True,
        encoding="utf-8",
        check=True,
    )
    assert json.loads(init.stdout)["created"] is True
    refused = subprocess.run(
        [str(MEMOSITE), "stormbuffer", "forget", "0000", "--destroy"],
        cwd=workdir,
        env=env,
        capture_output=True,
        text=True,
        encoding="utf-8",
        stdin=subprocess.DEVNULL,
    )
    assert refused.returncode == 1 and refused.stderr.count("\n") == 1
