"""``memosite mcp --print-config`` and the command's own argument errors."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from memosite.cli import cli
from memosite.mcp_server.client_config import launch_command, memosite_executable


def print_config(*args: str) -> tuple[str, str]:
    outcome = CliRunner().invoke(cli, ["mcp", *args])
    assert outcome.exit_code == 0, outcome.output
    return outcome.stdout, outcome.stderr


def test_print_config_claude_is_a_claude_mcp_add_command(vault_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "")  # no memosite on PATH: the snippet names this one by its path
    stdout, stderr = print_config("--print-config", "claude")
    words = shlex.split(stdout)
    assert words[:5] == ["claude", "mcp", "add", "memosite", "--"]
    launched = words[5:]
    assert Path(launched[0]).is_absolute()
    assert launched[-5:] == ["mcp", "--vault", str(vault_dir), "--project", "demo"]
    assert ".mcp.json" in stderr


@pytest.mark.parametrize(("client", "key"), [("cursor", "mcpServers"), ("vscode", "servers")])
def test_print_config_json_clients_get_their_server_map(
    vault_dir: Path, client: str, key: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", "")
    stdout, _ = print_config("--print-config", client)
    entry = json.loads(stdout)[key]["memosite"]
    assert Path(entry["command"]).is_absolute()
    # A client starts the server wherever it likes: the snippet pins the project of this directory.
    assert entry["args"][-5:] == ["mcp", "--vault", str(vault_dir), "--project", "demo"]
    assert (entry.get("type") == "stdio") is (client == "vscode")


def test_print_config_outside_any_project_asks_for_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MEMOSITE_PROJECT")
    monkeypatch.chdir(Path.home())
    outcome = CliRunner().invoke(cli, ["mcp", "--print-config", "cursor"])
    assert outcome.exit_code == 1 and outcome.stdout == ""
    assert "pass --project" in outcome.stderr and len(outcome.stderr.splitlines()) == 1


def test_print_config_pins_vault_project_and_read_only_when_given(tmp_path: Path) -> None:
    stdout, _ = print_config(
        "--print-config", "vscode", "--vault", str(tmp_path / "v"), "--project", "shop", "--read-only"
    )
    args = json.loads(stdout)["servers"]["memosite"]["args"]
    assert args[-6:] == ["mcp", "--vault", str(tmp_path / "v"), "--project", "shop", "--read-only"]


def test_print_config_rejects_a_bad_project_in_one_line() -> None:
    outcome = CliRunner().invoke(cli, ["mcp", "--print-config", "cursor", "--project", "../up"])
    assert outcome.exit_code == 1
    assert outcome.stdout == ""
    assert outcome.stderr.startswith("memosite: error: invalid project id")
    assert len(outcome.stderr.splitlines()) == 1


def test_print_config_unknown_client_is_a_usage_error() -> None:
    outcome = CliRunner().invoke(cli, ["mcp", "--print-config", "emacs"])
    assert outcome.exit_code == 2
    assert "emacs" in outcome.stderr


def test_serving_with_a_bad_project_fails_before_reading_stdin() -> None:
    outcome = CliRunner().invoke(cli, ["mcp", "--project", "a/b"], input="")
    assert outcome.exit_code == 1
    assert outcome.stdout == ""
    assert outcome.stderr.startswith("memosite: error: invalid project id")


def test_executable_prefers_the_running_memosite_script(tmp_path: Path) -> None:
    script = tmp_path / "bin" / "memosite"
    script.parent.mkdir()
    script.write_text("#!/bin/sh\n", encoding="utf-8")
    assert memosite_executable(str(script), sys.executable) == [str(script)]
    python = tmp_path / "env" / "bin" / "python"
    python.parent.mkdir(parents=True)
    (python.parent / "memosite").write_text("", encoding="utf-8")
    assert memosite_executable("/somewhere/pytest", str(python)) == [str(python.parent / "memosite")]


def test_launch_command_runs_the_module_when_no_script_exists(tmp_path: Path) -> None:
    launch = launch_command([sys.executable, "-m", "memosite"], tmp_path)
    assert launch.command == sys.executable
    assert launch.args == ["-m", "memosite", "mcp", "--vault", str(tmp_path)]
