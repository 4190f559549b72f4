"""Hostile input (issue 15): symlinks planted at memosite's internal paths, numbers no database can
hold, broken Unicode in arguments, and a hit on a hand-written record."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from memosite.mcp_server.server import build_server
from memosite.store import upsert_record
from memosite.vault import Vault


def plant(vault_dir: Path, relative: str, outside: Path, *, directory: bool) -> Path:
    """A symlink at ``relative`` inside the vault pointing at ``outside``."""
    link = vault_dir / relative
    link.parent.mkdir(parents=True, exist_ok=True)
    if link.is_dir() and not link.is_symlink():
        for child in sorted(link.rglob("*"), reverse=True):
            child.rmdir() if child.is_dir() else child.unlink()
        link.rmdir()
    elif link.exists() or link.is_symlink():
        link.unlink()
    if directory:
        outside.mkdir(parents=True, exist_ok=True)
    else:
        outside.write_text("", encoding="utf-8")
    link.symlink_to(outside, target_is_directory=directory)
    return link


def outside_is_untouched(outside: Path) -> bool:
    if outside.is_dir():
        return not any(outside.iterdir())
    return outside.read_text(encoding="utf-8") == ""


CASES: list[tuple[str, bool, list[str]]] = [
    (".memosite/locks", True, ["session", "start", "--goal", "ship it"]),
    (".memosite/tombstones.jsonl", False, ["forget", "--id", "seed", "--purge"]),
    (".memosite/hits", True, ["get", "--id", "seed", "--session-id", "agent-1"]),
    (".memosite/index.sqlite", False, ["search", "seed"]),
    (".memosite/vault.lock", False, ["upsert", "--kind", "spec", "--body", "x", "--slug", "s3"]),
]


@pytest.mark.parametrize(("relative", "directory", "args"), CASES, ids=[c[0] for c in CASES])
def test_a_symlink_at_an_internal_path_is_refused_and_nothing_is_written_outside(
    vault_dir: Path, tmp_path: Path, run_cli: Any, relative: str, directory: bool, args: list[str]
) -> None:
    vault = Vault.open(vault_dir)
    upsert_record(vault, "demo", kind="trap", body="seed record", slug="seed")
    vault.close()
    outside = tmp_path / "outside" / Path(relative).name
    outside.parent.mkdir(parents=True, exist_ok=True)
    plant(vault_dir, relative, outside, directory=directory)
    outcome = run_cli(*args, "--json")
    assert outcome.exit_code == 1, outcome.stdout
    error = outcome.json()["error"]
    assert error["code"] == "SAFETY_VIOLATION" and relative in error["message"]
    assert outside_is_untouched(outside)


def test_a_symlinked_internal_directory_is_refused(vault_dir: Path, tmp_path: Path, run_cli: Any) -> None:
    vault_dir.mkdir(parents=True)
    (tmp_path / "elsewhere").mkdir()
    (vault_dir / ".memosite").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    outcome = run_cli("upsert", "--kind", "spec", "--body", "x", "--json")
    assert outcome.json()["error"]["code"] == "SAFETY_VIOLATION" and ".memosite" in outcome.json()["error"]["message"]
    assert not any((tmp_path / "elsewhere").iterdir())


def test_a_planted_template_cache_file_is_never_followed(vault_dir: Path, tmp_path: Path) -> None:
    from memosite.template_env import bytecode_dir_for

    vault = Vault.open(vault_dir)
    upsert_record(vault, "demo", kind="trap", body="first", slug="a")
    cache = bytecode_dir_for(vault)
    vault.close()
    victims = []
    for entry in cache.iterdir():
        victim = tmp_path / f"victim-{entry.name}"
        victim.write_bytes(b"precious")
        entry.unlink()
        entry.symlink_to(victim)
        victims.append(victim)
    assert victims
    reopened = Vault.open(vault_dir)
    upsert_record(reopened, "demo", kind="trap", body="second", slug="b")  # a new process's compile
    reopened.close()
    assert all(victim.read_bytes() == b"precious" for victim in victims)


# --- numbers and text no part of memosite can hold ----------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["rank", "--limit", "100000000000000000000"],
        ["search", "x", "--limit", "-100000000000000000000"],
        ["bootstrap", "--max-bytes", "100000000000000000000"],
        ["session", "search", "goal", "--limit", "100000000000000000000"],
    ],
)
def test_numeric_options_beyond_any_database_are_invalid_arguments(vault: Vault, run_cli: Any, args: list[str]) -> None:
    outcome = run_cli(*args, "--json")
    payload = outcome.json()
    assert outcome.exit_code == 1 and payload["error"]["code"] == "INVALID_ARGUMENTS", payload
    assert args[-2] in payload["error"]["message"] or "too large" in payload["error"]["message"]


@pytest.mark.parametrize(
    "args",
    [
        ["upsert", "--kind", "spec", "--body", "x", "--tag", "a\udce9b"],
        ["search", "caf\udce9"],
        ["session", "start", "--goal", "ship \udcff"],
        ["upsert", "--kind", "spec", "--body", "b\ud800ody"],
    ],
)
def test_lone_surrogates_in_arguments_are_invalid_arguments_naming_them(
    vault: Vault, run_cli: Any, args: list[str]
) -> None:
    outcome = run_cli(*args, "--json")
    payload = outcome.json()
    assert outcome.exit_code == 1 and payload["error"]["code"] == "INVALID_ARGUMENTS", payload
    message = payload["error"]["message"]
    assert "surrogate" in message and (message.startswith("--") or message.startswith("QUERY"))


def test_bytes_that_are_not_utf8_on_a_real_command_line(vault: Vault, memosite_exe: Path) -> None:
    done = subprocess.run(
        [os.fsencode(memosite_exe), b"upsert", b"--kind", b"spec", b"--body", b"x", b"--tag", b"a\xe9b", b"--json"],
        capture_output=True,
        env={**os.environ, "PYTHONIOENCODING": "utf-8"},
        check=False,
    )
    assert done.returncode == 1 and b"Traceback" not in done.stderr
    assert json.loads(done.stdout)["error"] == {
        "code": "INVALID_ARGUMENTS",
        "message": "--tag holds text that is not valid Unicode (an unpaired surrogate)",
        "details": {"argument": "--tag"},
    }


def test_mcp_arguments_beyond_any_database_are_invalid_arguments(vault: Vault) -> None:
    async def scenario() -> None:
        async with Client(build_server(vault, "demo"), mode="legacy") as client:
            for tool, arguments in (
                ("rank", {"limit": 10**20}),
                ("search", {"query": "caf\udce9"}),
                ("upsert", {"kind": "spec", "body": "x", "tags": ["\ud800"]}),
            ):
                result = await client.call_tool(tool, arguments)
                assert result.is_error and (result.structured_content or {})["error"]["code"] == "INVALID_ARGUMENTS"

    anyio.run(scenario)


# --- a hit is usage, not an edit ------------------------------------------------------------


def test_a_hit_on_a_hand_written_record_changes_only_the_hit_fields(vault: Vault, run_cli: Any) -> None:
    path = vault.kind_dir("demo", "trap") / "by-hand.md"
    path.parent.mkdir(parents=True)
    text = "---\n# written in an editor\ntitle: By hand\nkind: trap\nseverity: high\n---\nKeep me as I am.\n"
    path.write_text(text, encoding="utf-8")
    outcome = run_cli("get", "--id", "by-hand", "--session-id", "agent-7", "--json")
    assert outcome.exit_code == 0
    written = path.read_text(encoding="utf-8")
    assert written.startswith("---\n# written in an editor\ntitle: By hand\nkind: trap\nseverity: high\n")
    extra = written[len("---\n# written in an editor\ntitle: By hand\nkind: trap\nseverity: high\n") :]
    assert extra.startswith("hits: 1\nlastHit: ") and extra.endswith("---\nKeep me as I am.\n")
    assert "status:" not in written and "source:" not in written and "id:" not in written


# --- more places a write must not reach -------------------------------------------------------


def test_session_logs_never_go_through_a_symlinked_project(vault: Vault, tmp_path: Path, run_cli: Any) -> None:
    outside = tmp_path / "outside-project"
    outside.mkdir()
    (vault.root / "projects").mkdir(exist_ok=True)
    (vault.root / "projects" / "demo").symlink_to(outside, target_is_directory=True)
    outcome = run_cli("session", "start", "--id", "s9", "--json")
    assert outcome.exit_code == 1 and outcome.json()["error"]["code"] == "SAFETY_VIOLATION"
    assert not any(outside.rglob("*"))


def test_queued_commits_never_go_through_a_symlink(vault_dir: Path, tmp_path: Path, run_cli: Any) -> None:
    vault_dir.mkdir(parents=True)
    (vault_dir / "config.json").write_text('{"vaultGit": {"enabled": true, "atomic": false}}', encoding="utf-8")
    victim = tmp_path / "victim.txt"
    plant(vault_dir, ".memosite/pending-commits", victim, directory=False)
    outcome = run_cli("upsert", "--kind", "spec", "--body", "x", "--slug", "q", "--json")
    assert outcome.json()["error"]["code"] == "SAFETY_VIOLATION"
    assert victim.read_text(encoding="utf-8") == ""


def test_a_hand_written_number_beyond_64_bits_is_one_skipped_file(vault: Vault, run_cli: Any) -> None:
    upsert_record(vault, "demo", kind="trap", body="fine", slug="fine")
    bad = vault.kind_dir("demo", "trap") / "big.md"
    bad.write_text("---\ntitle: x\nhits: 9223372036854775808\n---\nb\n", encoding="utf-8")
    for args in (["list"], ["compile"], ["reindex"], ["gc", "--dry-run"]):
        assert run_cli(*args, "--json").exit_code == 0, args
    message = run_cli("get", "--id", "big", "--json").json()["error"]["message"]
    assert "9223372036854775808" in message and "9223372036854775807" in message


def test_a_refused_write_creates_no_vault_inside_the_repository(tmp_path: Path, run_cli: Any, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    monkeypatch.chdir(repo)
    for args in (["upsert", "--kind", "spec", "--body", "x"], ["init"]):
        outcome = run_cli("--vault", str(repo / "mem"), *args, "--json")
        assert outcome.json()["error"]["code"] == "SAFETY_VIOLATION", args
        assert not (repo / "mem").exists()


def test_the_group_vault_option_reaches_the_mcp_command(tmp_path: Path, run_cli: Any) -> None:
    outcome = run_cli("--vault", str(tmp_path / "chosen"), "mcp", "--print-config", "cursor")
    assert outcome.exit_code == 0
    assert str(tmp_path / "chosen") in json.loads(outcome.stdout)["mcpServers"]["memosite"]["args"]


@pytest.mark.parametrize(
    ("name", "project"), [("Мой Проект", "moy-proekt"), ("数据库", "shu-ju-ku"), ("café", "cafe"), ("Shop_2", "shop_2")]
)
def test_project_ids_from_names_in_any_script(
    tmp_path: Path, name: str, project: str, unpinned_env: dict[str, str]
) -> None:
    from memosite.config import resolve_project

    directory = tmp_path / name
    directory.mkdir()
    assert resolve_project(None, unpinned_env, cwd=directory).id == project


def test_an_agent_cannot_bring_back_what_review_rejected(vault_dir: Path) -> None:
    vault_dir.mkdir(parents=True)
    (vault_dir / "config.json").write_text('{"review": {"required": ["trap"]}}', encoding="utf-8")
    vault = Vault.open(vault_dir)
    from memosite.provenance import Actor
    from memosite.review import reject_records
    from memosite.store import restore_record

    vault.actor = Actor.mcp_client("agent", "1", "s")
    upsert_record(vault, "demo", kind="trap", body="wrong idea", slug="w")
    vault.actor = Actor.person("Ana <ana@example.org>")
    reject_records(vault, "demo", ["w"], reason="not true")
    vault.actor = Actor.mcp_client("agent", "1", "s")
    with pytest.raises(Exception, match="only a person"):
        restore_record(vault, "demo", record_id="w")
    vault.actor = Actor.person("Ana <ana@example.org>")
    assert restore_record(vault, "demo", record_id="w").status == "active"
    vault.close()


@pytest.mark.parametrize("command", [["status"], ["upsert", "--kind", "trap", "--body", "Locks bite."], ["init"]])
def test_a_removed_working_directory_is_a_clear_error(tmp_path: Path, memosite_exe: Path, command: list[str]) -> None:
    gone = tmp_path / "was-here"
    gone.mkdir()
    env = {key: value for key, value in os.environ.items() if key != "MEMOSITE_PROJECT"}
    outcome = subprocess.run(
        ["sh", "-c", 'cd "$1" && rmdir "$1" && shift && exec "$@"', "sh", str(gone), str(memosite_exe), *command],
        capture_output=True,
        text=True,
        encoding="utf-8",
        env=env,
        check=False,
    )
    assert outcome.returncode == 1, outcome.stderr
    assert outcome.stderr.strip().splitlines() == [
        "memosite: error: the current directory no longer exists (it was removed or renamed): cd into one that does"
    ]


@pytest.mark.parametrize("command", ["get", "forget"])
def test_an_id_too_long_for_a_file_name_is_simply_not_found(vault: Vault, run_cli: Any, command: str) -> None:
    upsert_record(vault, "demo", kind="trap", slug="real", body="A real trap.")
    wide = "ж" * 200  # 200 characters pass the id check; 400 bytes are no file name
    outcome = run_cli(command, "--id", wide, "--json")
    assert outcome.exit_code == 1
    assert outcome.json()["error"]["code"] == "RECORD_NOT_FOUND"
