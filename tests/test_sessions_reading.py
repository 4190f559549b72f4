"""Reading sessions someone points memosite at: what counts as a session directory and a sessions
root, what ``show`` says about times and event numbers, and how the output counts things.

Read from a copy of the vtcode corpus (tests/corpus/vtcode/workspace) and from sessions the real
code writes, with text in several scripts.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from memosite.cli import cli
from memosite.sessions import Session
from memosite.text import counted
from memosite.vault import Vault

CORPUS = Path(__file__).parent / "corpus" / "vtcode" / "workspace"
SESSION = "sess-2026-08-23-a"
CRASHED = "exec_task_9c01"
# A count of one followed by a plural noun: what no session output may say.
ONE_PLURAL = re.compile(r"(?<![\d.,])1 (?:turns|events|facts|files|sessions|bytes|malformed lines|lines)\b")


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the corpus workspace as the working directory (a vault only for tests that ask)."""
    target = tmp_path / "workspace"
    shutil.copytree(CORPUS, target)
    monkeypatch.chdir(target)
    return target


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["session", *args], catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def run_json(*args: str, ok: bool = True) -> Any:
    code, out, err = run(*args, "--json")
    assert (code == 0) is ok, (out, err)
    return json.loads(out)


def snapshot(directory: Path) -> dict[str, bytes]:
    return {p.relative_to(directory).as_posix(): p.read_bytes() for p in directory.rglob("*") if p.is_file()}


def ticking(start: str = "2026-09-01T12:00") -> Callable[[], str]:
    ticks = iter(range(10_000))
    return lambda: f"{start}:{next(ticks) % 60:02d}.000Z"


# --- a session directory holds events.jsonl or manifest.json ---------------------------------------


@pytest.mark.parametrize(
    "command",
    [["show"], ["pack"], ["verify"], ["search", "notes"]],
    ids=["show", "pack", "verify", "search"],
)
def test_a_directory_without_events_or_manifest_is_not_a_session(
    workspace: Path, vault_dir: Path, command: list[str]
) -> None:
    stray = workspace / ".vtcode" / "sessions" / "not-a-session"
    before = snapshot(stray)
    code, out, err = run(*command, "--dir", str(stray))
    assert (code, out) == (1, "")
    assert err.splitlines() == [
        f"memosite: error: {stray} is not a session directory (no events.jsonl or manifest.json)"
    ]
    refused = run_json(*command, "--dir", str(stray), ok=False)["error"]
    assert refused["code"] == "SESSION_NOT_FOUND"
    assert snapshot(stray) == before and not vault_dir.exists()  # read without a vault, none made


def test_a_stray_directory_named_by_id_under_a_root_is_not_a_session_either(workspace: Path, vault: Vault) -> None:
    root = workspace / ".vtcode" / "sessions"
    before = snapshot(root / "not-a-session")
    shown = run_json("show", "not-a-session", "--root", str(root), ok=False)["error"]
    assert shown["code"] == "SESSION_NOT_FOUND" and "is not a session directory" in shown["message"]
    # Nor is it written into: an append would otherwise have made it an empty memosite session.
    appended = run_json(
        "append", "--root", str(root), "--session", "not-a-session", "--type", "fact", "--text", "Факт 事実", ok=False
    )
    assert appended["error"]["code"] == "SESSION_NOT_FOUND"
    assert snapshot(root / "not-a-session") == before


# --- a sessions root named with --root must exist ----------------------------------------------------


@pytest.mark.parametrize(
    "command", [["list"], ["search", "ledger"], ["show", SESSION], ["retain", "--dry-run"]], ids=lambda c: c[0]
)
def test_a_named_root_that_does_not_exist_is_an_error_not_an_empty_list(
    workspace: Path, vault: Vault, command: list[str]
) -> None:
    missing = workspace / "no" / "such" / "root"
    code, out, err = run(*command, "--root", str(missing))
    assert (code, out, err.splitlines()) == (1, "", [f"memosite: error: no sessions root at {missing}"])
    assert run_json(*command, "--root", str(missing), ok=False)["error"]["code"] == "SESSIONS_ROOT_NOT_FOUND"
    a_file = workspace / ".vtcode" / "sessions" / SESSION / "events.jsonl"
    assert "is not a directory" in run_json(*command, "--root", str(a_file), ok=False)["error"]["message"]
    assert not missing.exists()


def test_the_projects_own_root_not_existing_yet_means_no_sessions(vault: Vault) -> None:
    assert run("list") == (0, "no sessions\n", "")
    assert run_json("list") == {"sessions": []}
    assert run("search", "ledger")[0] == 0


def test_starting_a_session_in_a_new_named_root_creates_the_root(tmp_path: Path, vault: Vault) -> None:
    root = tmp_path / "fresh" / "sessions"
    assert run_json("start", "--id", "s1", "--root", str(root))["sessionId"] == "s1"
    assert [row["sessionId"] for row in run_json("list", "--root", str(root))["sessions"]] == ["s1"]


# --- what show says about times ----------------------------------------------------------------------


def test_an_ended_vtcode_session_says_its_end_time_was_not_recorded(workspace: Path) -> None:
    session_dir = workspace / ".vtcode" / "sessions" / SESSION
    shown = run_json("show", "--dir", str(session_dir))
    assert (shown["status"], shown["endTime"]) == ("ended", None)  # vtcode's events carry no times
    code, out, _ = run("show", "--dir", str(session_dir))
    assert code == 0 and "ended -" not in out
    manifest = json.loads((session_dir / "manifest.json").read_text(encoding="utf-8"))
    ended = f"ended (time not recorded by vtcode; last update {manifest['updated_at']})"
    assert f"  started {manifest['created_at']}   {ended}" in out.splitlines()


def test_an_active_session_says_it_is_still_active_not_ended(workspace: Path) -> None:
    _, out, _ = run("show", "--dir", str(workspace / ".vtcode" / "sessions" / CRASHED))
    assert "  started 2026-08-24T09:00:00+00:00   still active, last update 2026-08-24T09:00:03+00:00" in out
    assert "ended" not in out


def test_a_session_memosite_ended_shows_its_recorded_end_time(vault: Vault) -> None:
    with Session.start(vault, "demo", session_id="m1", clock=ticking(), sync_record=False) as session:
        session.append("message", text="Готово — 完了 — terminé")
        session.end()
    shown = run_json("show", "m1")
    assert shown["endTime"] == "2026-09-01T12:00:03.000Z"
    assert f"  started {shown['startTime']}   ended {shown['endTime']}" in run("show", "m1")[1].splitlines()


# --- events are numbered so that a person can find them ----------------------------------------------


def test_vtcode_events_are_numbered_by_their_line_in_events_jsonl(workspace: Path) -> None:
    session_dir = workspace / ".vtcode" / "sessions" / SESSION
    lines = (session_dir / "events.jsonl").read_text(encoding="utf-8").splitlines()

    def line_of(text: str) -> int:
        return next(
            number for number, line in enumerate(lines, 1) if json.dumps(text, ensure_ascii=False)[1:-1] in line
        )

    recent = run_json("show", "--dir", str(session_dir), "--events", "20")["recent"]
    messages = {event["payload"]["text"]: event["line"] for event in recent if event["type"] == "message"}
    assert messages == {text: line_of(text) for text in messages} and len(messages) == 2
    assert [event["line"] for event in recent] == sorted(event["line"] for event in recent)
    assert recent[0]["line"] == 1 and recent[-1]["line"] == len(lines)
    out = run("show", "--dir", str(session_dir), "--events", "20")[1]
    cafe = "Документация обновлена; 東京 の設定も確認しました — café ✅"
    assert f"  line {line_of(cafe)} turn 2 message: {cafe}" in out.splitlines()
    assert not re.search(r"#\d", out)  # byte offsets (vtcode's events have no number) never show

    hits = run_json("search", "東京", "--dir", str(session_dir))["hits"]
    assert [(hit["line"], hit["type"]) for hit in hits] == [(line_of(cafe), "message")]
    assert f"line {line_of(cafe)}  message" in run("search", "東京", "--dir", str(session_dir))[1]


def test_memosite_events_keep_their_sequence_number(vault: Vault) -> None:
    with Session.start(vault, "demo", session_id="m1", clock=ticking(), sync_record=False) as session:
        session.start_turn()
        session.append("message", text="Счёт переведён в центы; 請求書 done")
        session.end_turn()
    recent = run_json("show", "m1")["recent"]
    assert [(event["seq"], event["line"]) for event in recent] == [(1, None), (2, None), (3, None), (4, None)]
    assert "  #3 turn 1 message: Счёт переведён в центы; 請求書 done" in run("show", "m1")[1].splitlines()
    hit = run_json("search", "請求書")["hits"][0]
    assert (hit["seq"], hit["line"]) == (3, None)


# --- counts: one turn, two turns ---------------------------------------------------------------------


@given(st.integers(min_value=0, max_value=10**6), st.sampled_from(["turn", "event", "file", "malformed line"]))
def test_a_count_of_one_is_singular_and_every_other_count_plural(count: int, word: str) -> None:
    assert counted(count, word) == f"{count} {word}" + ("" if count == 1 else "s")


def test_session_output_says_one_turn_one_fact_one_file(workspace: Path, vault: Vault) -> None:
    root = workspace / ".vtcode" / "sessions"
    with Session.start(vault, "demo", session_id="one", clock=ticking(), sync_record=False, root=root) as session:
        session.start_turn()
        session.append("fact", text="Один факт — 一つの事実")
        session.end_turn()
        session.end()
    lone = root / "lone"  # a vtcode session of nothing but its log: packed as it stands, one file
    lone.mkdir()
    shutil.copyfile(root / CRASHED / "events.jsonl", lone / "events.jsonl")
    outputs = {
        "list": run("list", "--root", str(root))[1],
        "show crashed": run("show", "--dir", str(root / CRASHED))[1],
        "show vtcode": run("show", "--dir", str(root / SESSION))[1],
        "show one": run("show", "--dir", str(root / "one"))[1],
        "pack": run("pack", "--dir", str(lone))[1],
        "verify": run("verify", "--dir", str(lone))[1],
    }
    assert "  1 turn   3 events   317 bytes   turn 1 open" in outputs["show crashed"].splitlines()
    assert re.search(r"^exec_task_9c01 +active +1 turn +3 events ", outputs["list"], re.MULTILINE)
    assert "  1 malformed line skipped" in outputs["show vtcode"].splitlines()
    assert "Status: ended · 1 turn · 5 events · 1 fact" in outputs["show one"].splitlines()
    assert outputs["pack"].startswith("packed 1 file of lone ")
    assert outputs["verify"] == "lone: ok (1 file checked)\n"
    for name, out in outputs.items():
        assert not ONE_PLURAL.search(out), (name, out)
