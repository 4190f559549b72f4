"""``memosite session ...`` end to end, and the session record it keeps in the vault."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from memosite.cli import cli


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["session", *args], catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def run_json(*args: str) -> dict:
    code, out, err = run(*args, "--json")
    assert code == 0, (out, err)
    return json.loads(out)


def memosite(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", "from memosite.cli import main; main()", *args],
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=60,
        env=dict(os.environ),
    )


def record_frontmatter(vault_dir: Path, session_id: str) -> dict:
    import yaml

    text = (vault_dir / "projects" / "demo" / "sessions" / f"session-{session_id}.md").read_text(encoding="utf-8")
    return yaml.safe_load(text.split("---\n")[1])


def test_a_whole_session_through_the_cli_keeps_its_vault_record(vault_dir: Path) -> None:
    started = run_json("start", "--id", "s1", "--goal", "Fix the login bug")
    assert started["sessionId"] == "s1" and started["status"] == "active"
    front = record_frontmatter(vault_dir, "s1")
    assert (front["kind"], front["status"], front["sessionId"], front["turns"]) == ("session", "active", "s1", 0)

    assert run_json("turn", "start", "--session", "s1")["event"]["turn"] == 1
    run_json("append", "--session", "s1", "--type", "message", "--text", "login fails with a 500 after token refresh")
    run_json("append", "--session", "s1", "--type", "fact", "--text", "tokens expire after 15 minutes")
    run_json("append", "--session", "s1", "--type", "goal.progress", "--data", '{"goal": "g1"}', "--text", "found it")
    ended_turn = run_json("turn", "end", "--session", "s1")
    assert ended_turn["event"]["type"] == "turn.completed"
    front = record_frontmatter(vault_dir, "s1")
    assert (front["turns"], front["facts"]) == (1, 1)
    assert front["goals"] == [{"id": "g1", "text": "Fix the login bug", "status": "open"}]

    ended = run_json("end", "--session", "s1")
    assert ended["status"] == "ended" and ended["endTime"]
    front = record_frontmatter(vault_dir, "s1")
    assert front["status"] == "completed" and front["endTime"] and front["startTime"]
    assert "s1" in (vault_dir / "projects" / "demo" / "SESSIONS.md").read_text(encoding="utf-8")

    shown = run_json("show", "s1", "--events", "2")
    assert [event["type"] for event in shown["recent"]] == ["turn.completed", "session.ended"]
    assert "Fix the login bug" in shown["handoff"]

    found = run_json("search", "token refresh", "--limit", "1")
    assert [(hit["sessionId"], hit["turn"], hit["seq"]) for hit in found["hits"]] == [("s1", 1, 4)]
    assert "token refresh" in found["hits"][0]["snippet"]

    listed = run_json("list")
    assert [row["sessionId"] for row in listed["sessions"]] == ["s1"]

    second = run_json("start", "--id", "s2")
    assert "Fix the login bug" in second["previousHandoff"]


def test_pack_and_verify_exit_codes(vault_dir: Path) -> None:
    run_json("start", "--id", "s1")
    run_json("end", "--session", "s1")
    packed = run_json("pack", "s1")
    assert {entry["path"] for entry in packed["entries"]} >= {"events.jsonl", "manifest.json"}
    assert packed["pack"].endswith("derived/audit-pack.json")
    assert run("verify", "s1")[0] == 0

    session_dir = vault_dir / "projects" / "demo" / "sessions" / "s1"
    (session_dir / "later.txt").write_text("added", encoding="utf-8")
    code, out, _ = run("verify", "s1", "--json")
    assert code == 0 and json.loads(out)["unaccounted"] == ["later.txt"]

    with open(session_dir / "events.jsonl", "ab") as handle:
        handle.write(b"tampered\n")
    code, out, _ = run("verify", "s1", "--json")
    report = json.loads(out)
    assert code == 1 and report["ok"] is False and report["changed"] == ["events.jsonl"]
    code, out, _ = run("verify", "s1")
    assert code == 1 and "changed: events.jsonl" in out


def test_retain_dry_run_through_the_cli(vault_dir: Path) -> None:
    run_json("start", "--id", "s1")
    report = run_json("retain", "--dry-run")
    assert report["dryRun"] is True and report["removed"] == []
    assert report["decisions"][0]["reason"] == "active"


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (["show", "../etc"], "INVALID_ARGUMENTS"),
        (["show", "missing"], "SESSION_NOT_FOUND"),
        (["append", "--session", "missing", "--type", "message"], "SESSION_NOT_FOUND"),
        (["turn", "end", "--session", "s1"], "INVALID_TRANSITION"),
        (["append", "--session", "s1", "--type", "message", "--data", "{oops"], "INVALID_ARGUMENTS"),
        (["append", "--session", "s1", "--type", "session.ended"], "INVALID_ARGUMENTS"),
        (["turn", "end", "--session", "s1", "--status", "exploded"], "INVALID_TRANSITION"),
        (["search", "..."], "INVALID_ARGUMENTS"),
        (["start", "--id", "s1"], "SESSION_EXISTS"),
        (["verify", "s1"], "PACK_NOT_FOUND"),
    ],
)
def test_bad_input_is_one_json_error_and_exit_1(vault_dir: Path, args: list[str], code: str) -> None:
    run_json("start", "--id", "s1")
    exit_code, out, _ = run(*args, "--json")
    assert exit_code == 1
    assert json.loads(out) == {"error": {"code": code, "message": json.loads(out)["error"]["message"]}}


@pytest.mark.slow
def test_errors_are_one_line_without_traceback_in_a_real_process(vault_dir: Path) -> None:
    assert memosite("session", "start", "--id", "real").returncode == 0  # the vault exists
    result = memosite("session", "append", "--session", "ghost", "--type", "message", "--text", "hi")
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr.strip().splitlines() == ["memosite: error: no session 'ghost'"]
    result = memosite("session", "show", "ghost", "--json")
    assert result.returncode == 1
    assert json.loads(result.stdout)["error"]["code"] == "SESSION_NOT_FOUND"
    assert "Traceback" not in result.stderr


def test_a_secret_in_an_event_is_refused_and_nothing_is_logged(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from memosite.cli import cli

    runner = CliRunner()
    assert runner.invoke(cli, ["session", "start", "--id", "leaky"]).exit_code == 0
    log = Path(os.environ["MEMOSITE_VAULT"]) / "projects/demo/sessions/leaky/events.jsonl"
    before = log.read_bytes()
    token = "ghp_" + "Zq7xK2mP9w" * 4
    result = runner.invoke(
        cli, ["session", "append", "--session", "leaky", "--type", "fact", "--text", f"ci uses {token}", "--json"]
    )
    assert result.exit_code == 1
    assert json.loads(result.stdout)["error"]["code"] == "SAFETY_VIOLATION"
    assert token not in result.stdout
    end = runner.invoke(cli, ["session", "end", "--session", "leaky", "--json"])
    assert end.exit_code == 0, end.stdout
    assert token.encode() not in log.read_bytes() and log.read_bytes().startswith(before)


def test_a_refused_start_leaves_no_session_behind() -> None:
    runner = CliRunner()
    result = runner.invoke(cli, ["session", "start", "--id", "s1", "--goal", "", "--json"])
    assert result.exit_code == 1 and json.loads(result.stdout)["error"]["code"] == "INVALID_ARGUMENTS"
    assert not (Path(os.environ["MEMOSITE_VAULT"]) / "projects/demo/sessions/s1").exists()
    assert runner.invoke(cli, ["session", "start", "--id", "s1", "--goal", "ship it"]).exit_code == 0


def test_a_session_id_in_another_script_is_refused_for_not_being_ascii(vault_dir: Path, tmp_path: Path) -> None:
    """vtcode's sanitize_id turns each non-ASCII letter into '_', so two ids could share a
    directory; memosite refuses such an id instead, says why, and offers a transliteration."""
    code, _, refused = run("start", "--id", "сессия-1")
    assert code == 1 and "ASCII letters" in refused and "'sessiya-1'" in refused
    root = tmp_path / "vt"
    root.mkdir()
    code, _, shown = run("show", "сессия-1", "--root", str(root))
    assert code == 1 and "ASCII letters" in shown and "'sessiya-1'" in shown


def test_a_session_id_holding_a_token_is_refused_before_anything_is_written(vault_dir: Path) -> None:
    # Before: the start was refused by its record's secret scan after the session's directory was
    # made; the directory stayed, and sync carried its name (the token) to the remote.
    import hashlib

    token = "ghp_" + hashlib.sha256(b"session id test").hexdigest()[:36]
    for session_id in (token, "s" + token, f"run-{token}"):
        code, out, err = run("start", "--id", session_id, "--goal", "Миграция базы 🦊")
        assert code == 1 and out == ""
        [line] = err.strip().splitlines()
        assert "its id holds what looks like a secret" in line and "nothing was written" in line
        assert token not in line
    sessions = vault_dir / "projects" / "demo" / "sessions"
    assert not sessions.exists() or not any(token in path.name for path in sessions.iterdir())
