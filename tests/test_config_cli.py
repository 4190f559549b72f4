"""``memosite config list|get|set|unset``: a person's steps, bad values refused with nothing
written, team settings committed, machine settings never."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_config_split import SCRIPTS, _valid_values, read_json

from memosite.configuration import parse_value, shown
from memosite.errors import InvalidArguments
from memosite.kinds import KINDS
from memosite.settings import BY_KEY, SETTINGS
from memosite.vault import Vault
from memosite.vaultconfig import ACCEPTED_KEY

FILES = ("config.json", "config.local.json")


def files_of(root: Path) -> dict[str, bytes]:
    return {name: (root / name).read_bytes() for name in FILES}


def commits(root: Path) -> list[str]:
    done = subprocess.run(
        ["git", "-C", str(root), "log", "--format=%s"], capture_output=True, text=True, encoding="utf-8", check=False
    )
    return done.stdout.splitlines()


@pytest.fixture
def git_vault(vault: Vault, run_cli: Any, monkeypatch: pytest.MonkeyPatch) -> Vault:
    """A vault under vault git, with a person's identity."""
    monkeypatch.setenv("GIT_AUTHOR_NAME", "Pat Person")
    monkeypatch.setenv("GIT_AUTHOR_EMAIL", "pat@example.org")
    monkeypatch.setenv("GIT_COMMITTER_NAME", "Pat Person")
    monkeypatch.setenv("GIT_COMMITTER_EMAIL", "pat@example.org")
    assert run_cli("config", "set", "vaultGit.enabled", "true").exit_code == 0
    assert run_cli("upsert", "--kind", "trap", "--slug", "first", "--body", "first").exit_code == 0
    return vault


def test_config_list_shows_every_setting_its_value_and_where_it_comes_from(vault: Vault, run_cli: Any) -> None:
    run_cli("config", "set", "vaultGit.push", "auto")
    (vault.root / "config.json").write_text(json.dumps({"ttl": {"scratchDays": 2}}), encoding="utf-8")
    listed = run_cli("config", "list")
    assert listed.exit_code == 0
    lines = listed.stdout.splitlines()
    assert lines[0] == "team policy (config.json: committed, shared with the team)"
    assert "this machine (config.local.json: never shared)" in lines
    row = {line.split()[0]: line.split()[1:] for line in lines if line.startswith("  ")}
    assert row["ttl.scratchDays"] == ["2", "team"] and row["ttl.reviewDays"] == ["14", "default"]
    assert row["vaultGit.push"] == ["auto", "machine"] and row["vaultGit.remote"] == ["(not", "set)", "default"]
    as_json = run_cli("config", "list", "--json").json()
    assert [s["key"] for s in as_json["settings"]] == sorted(BY_KEY, key=lambda k: BY_KEY[k].scope != "team")


def test_config_get_prints_the_value_for_scripts(vault: Vault, run_cli: Any) -> None:
    assert run_cli("config", "get", "ttl.reviewDays").stdout == "14\n"
    assert run_cli("config", "get", "vaultGit.remote").stdout == ""  # not set: nothing
    assert run_cli("config", "get", "review.briefPending").stdout == "true\n"
    got = run_cli("config", "get", "bootstrap.maxBytes", "--json").json()
    assert got == {
        "key": "bootstrap.maxBytes",
        "value": 8192,
        "source": "team",
        "scope": "team",
        "file": "config.json",
        "default": 8192,
        "description": "size budget of the brief",
    }


@pytest.mark.parametrize(
    ("key", "value", "says"),
    [
        ("ttl.scratchDays", "soon", "ttl.scratchDays must be a non-negative number, got 'soon'"),
        ("ttl.scratchDays", "-1", "ttl.scratchDays must be a non-negative number"),
        ("ttl.reviewDays", "99999999999d", "ttl.reviewDays must be at most 36500"),
        ("ttl.reviewDays", "NaN", "ttl.reviewDays must be a non-negative number"),
        ("bootstrap.maxBytes", "100", "bootstrap.maxBytes must be at least 512"),
        ("bootstrap.maxBytes", "9 parsecs", "bootstrap.maxBytes must be a non-negative whole number"),
        ("sessions.keep", "2.5", "sessions.keep must be a non-negative whole number"),
        ("sessions.keep", "٣", "sessions.keep must be a non-negative whole number"),  # an Arabic-Indic digit
        ("vaultGit.enabled", "maybe", "vaultGit.enabled must be true or false"),
        ("vaultGit.push", "sometimes", 'vaultGit.push must be "manual" or "auto"'),
        ("vaultGit.push", "autp", "vaultGit.push cannot be 'autp'; did you mean auto?"),
        ("vaultGit.pushDelaySeconds", "2d", "vaultGit.pushDelaySeconds must be at most 86400"),
        ("vaultGit.remote", "--upload-pack=touch pwned", "must not start with '-'"),
        ("vaultGit.remote", "ext::sh -c touch% pwned", "must not name a git transport helper"),
        ("vaultGit.branch", "../main", "vaultGit.branch must be a branch name"),
        ("vaultGit.branch", "-main", "vaultGit.branch must be a branch name"),
        ("review.required", "traps", "'traps' is no kind; did you mean trap?"),
        ("review.required", '["trap", 3]', "review.required must be a list of kinds"),
        ("sessions.root", " ", "sessions.root must be a directory path"),
    ],
)
def test_a_bad_value_is_one_clear_line_and_nothing_is_written(
    git_vault: Vault, run_cli: Any, key: str, value: str, says: str
) -> None:
    before, history = files_of(git_vault.root), commits(git_vault.root)
    refused = run_cli("config", "set", key, value)
    assert refused.exit_code == 1 and refused.stdout == ""
    assert refused.stderr.count("\n") == 1 and says in refused.stderr and "Traceback" not in refused.stderr
    as_json = run_cli("config", "set", key, value, "--json")
    assert as_json.json()["error"]["code"] == "INVALID_ARGUMENTS"
    assert files_of(git_vault.root) == before and commits(git_vault.root) == history


@pytest.mark.parametrize(
    ("key", "words", "value"),
    [
        ("ttl.scratchDays", ["48h"], 2),
        ("ttl.scratchDays", ["1.5"], 1.5),
        ("ttl.reviewDays", ["36h"], 1.5),
        ("sessions.maxAgeDays", ["90"], 90),
        ("vaultGit.pushDelaySeconds", ["2m"], 120),
        ("vaultGit.pushDelaySeconds", ["30"], 30),
        ("bootstrap.maxBytes", ["16KiB"], 16384),
        ("sessions.capBytes", ["2MB"], 2_000_000),
        ("sessions.capEvents", ["0"], 0),
        ("vaultGit.enabled", ["Yes"], True),
        ("vaultGit.atomic", ["off"], False),
        ("vaultGit.push", ["AUTO"], "auto"),
        ("review.required", ["trap,", "decision"], ["trap", "decision"]),
        ("review.required", ['["spec","trap","spec"]'], ["trap", "spec"]),
        ("review.required", ["none"], []),
        ("vaultGit.branch", ["team/memory"], "team/memory"),
    ],
)
def test_values_are_read_as_a_person_writes_them(key: str, words: list[str], value: Any) -> None:
    assert parse_value(BY_KEY[key], words) == value


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_a_shown_value_reads_back_as_the_same_value(data: st.DataObject) -> None:
    setting = data.draw(st.sampled_from([s for s in SETTINGS if s.kind not in ("path", "remote")]))
    value = data.draw(_valid_values(setting))
    if setting.kind == "kinds":
        value = [kind for kind in KINDS if kind in value]
    assert parse_value(setting, shown(value).split(" ") if setting.kind == "kinds" else [shown(value)]) == value


def test_a_mistyped_key_gets_did_you_mean(vault: Vault, run_cli: Any) -> None:
    cases = {
        "vaultgit.remote": "did you mean vaultGit.remote?",
        "scratchDays": "did you mean ttl.scratchDays?",
        "review.require": "did you mean review.required",
        "sessions.rot": "did you mean sessions.root?",
    }
    before = files_of(vault.root)
    for typed, hint in cases.items():
        for command in (("get", typed), ("set", typed, "1"), ("unset", typed)):
            refused = run_cli("config", *command)
            assert refused.exit_code == 1 and hint in refused.stderr and refused.stderr.count("\n") == 1, refused
    section = run_cli("config", "get", "ttl")
    assert "ttl is a section: name one of its settings (ttl.scratchDays, ttl.reviewDays)" in section.stderr
    nothing = run_cli("config", "get", "Миграция.数据库")
    assert nothing.exit_code == 1 and "no setting 'Миграция.数据库'" in nothing.stderr
    assert files_of(vault.root) == before


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("set", "ttl.scratchDays"), "Missing argument 'VALUE…'"),
        (("set", "ttl.scratchDays", "3", "4"), "ttl.scratchDays takes one value, got 2 (3 4)"),
        (("get",), "Missing argument 'KEY'"),
        (("get", "ttl.scratchDays", "extra"), "Got unexpected extra argument (extra)"),
        (("unset",), "Missing argument 'KEY'"),
        (("accept-policy", "now"), "Got unexpected extra argument (now)"),
        (("frobnicate",), "No such command 'frobnicate'"),
    ],
)
def test_wrong_and_extra_arguments_are_refused_in_one_line(
    vault: Vault, run_cli: Any, args: tuple[str, ...], says: str
) -> None:
    before = files_of(vault.root)
    refused = run_cli("config", *args)
    assert refused.exit_code != 0 and says in refused.stderr and "Traceback" not in refused.stderr
    assert files_of(vault.root) == before


def test_a_team_setting_is_committed_and_a_machine_setting_never(git_vault: Vault, run_cli: Any) -> None:
    root = git_vault.root
    before = commits(root)
    done = run_cli("config", "set", "ttl.reviewDays", "21", "--json").json()
    assert done == {
        "key": "ttl.reviewDays",
        "action": "set",
        "scope": "team",
        "file": "config.json",
        "previous": 14,
        "value": 21,
        "changed": True,
        "committed": True,
    }
    assert commits(root) == ["config: set ttl.reviewDays to 21", *before]
    author = subprocess.run(
        ["git", "-C", str(root), "log", "-1", "--format=%an"], capture_output=True, text=True, encoding="utf-8"
    )
    assert author.stdout.strip() == "Pat Person"
    machine = run_cli("config", "set", "vaultGit.remote", "git@example.org:équipe/память.git")
    assert machine.stdout.startswith("set vaultGit.remote to git@example.org:équipe/память.git in config.local.json")
    assert "this machine only, never shared" in machine.stdout
    assert commits(root) == ["config: set ttl.reviewDays to 21", *before]
    status = subprocess.run(
        ["git", "-C", str(root), "status", "--porcelain"], capture_output=True, text=True, encoding="utf-8"
    )
    assert status.stdout == ""
    same = run_cli("config", "set", "ttl.reviewDays", "21")
    assert same.stdout == "ttl.reviewDays is already 21 here: nothing changed\n"
    assert commits(root) == ["config: set ttl.reviewDays to 21", *before]


def test_config_unset_returns_a_setting_to_its_default(git_vault: Vault, run_cli: Any) -> None:
    run_cli("config", "set", "sessions.keep", "3")
    run_cli("config", "set", "sessions.root", "Сессии")
    assert run_cli("config", "unset", "sessions.keep").stdout.startswith("unset sessions.keep (50 now)")
    assert "keep" not in read_json(git_vault.root / "config.json")["sessions"]
    assert commits(git_vault.root)[0] == "config: unset sessions.keep"
    run_cli("config", "unset", "sessions.root")
    assert "sessions" not in read_json(git_vault.root / "config.local.json")
    assert run_cli("config", "get", "sessions.root", "--json").json()["source"] == "default"


def test_a_bad_machine_value_is_repaired_by_the_command_it_stops(git_vault: Vault, run_cli: Any) -> None:
    machine = git_vault.root / "config.local.json"
    data = read_json(machine)
    data["vaultGit"] = {"remote": "--upload-pack=touch pwned"}
    data["search"] = {"semantic": "peut-être"}
    machine.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    stopped = run_cli("list")
    assert stopped.exit_code == 1 and "vaultGit.remote must not start with '-'" in stopped.stderr
    history = commits(git_vault.root)
    # One repair at a time: each says what it did, and what still stops the vault.
    first = run_cli("config", "set", "vaultGit.remote", "../Память.git")
    assert first.exit_code == 1 and first.stderr.count("\n") == 1
    assert "set vaultGit.remote to ../Память.git" in first.stderr and "search.semantic" in first.stderr
    assert read_json(machine)["vaultGit"]["remote"] == "../Память.git"
    second = run_cli("config", "unset", "search.semantic")
    assert second.exit_code == 0 and second.stdout.startswith("unset search.semantic")
    assert "search" not in read_json(machine) and read_json(machine)[ACCEPTED_KEY] == data[ACCEPTED_KEY]
    assert run_cli("list").exit_code == 0
    assert commits(git_vault.root) == history  # a machine file is never committed


def test_a_bad_machine_value_does_not_let_a_team_setting_through(git_vault: Vault, run_cli: Any) -> None:
    machine = git_vault.root / "config.local.json"
    machine.write_text(json.dumps({"vaultGit": {"remote": "-x"}}), encoding="utf-8")
    before = files_of(git_vault.root)
    refused = run_cli("config", "set", "ttl.scratchDays", "3")
    assert refused.exit_code == 1 and "vaultGit.remote" in refused.stderr
    assert files_of(git_vault.root) == before


@pytest.mark.parametrize("text", SCRIPTS)
def test_machine_paths_and_remotes_in_any_script_read_back_as_written(vault: Vault, run_cli: Any, text: str) -> None:
    for key, value in (("sessions.root", f"{text}/sessions"), ("vaultGit.remote", f"../{text}.git")):
        assert run_cli("config", "set", key, value).exit_code == 0
        assert run_cli("config", "get", key).stdout == value + "\n"
        assert value in (vault.root / "config.local.json").read_text(encoding="utf-8")  # UTF-8, not escapes


def test_shorter_scratch_ttl_expires_scratch_records_at_once(vault: Vault, run_cli: Any) -> None:
    assert run_cli("upsert", "--kind", "scratch", "--slug", "note", "--body", "zebra crossing").exit_code == 0
    scratch = ("search", "zebra", "--kind", "scratch", "--json")
    assert [hit["id"] for hit in run_cli(*scratch).json()["results"]] == ["note"]
    assert run_cli("config", "set", "ttl.scratchDays", "0").exit_code == 0
    assert run_cli(*scratch).json()["results"] == []
    expired = run_cli(*scratch, "--include-expired").json()["results"]
    assert [(hit["id"], hit.get("expired")) for hit in expired] == [("note", True)]


def test_config_on_a_missing_vault_creates_nothing(tmp_path: Path, run_cli: Any) -> None:
    absent = tmp_path / "nowhere"
    for args in (("list",), ("get", "ttl.scratchDays"), ("set", "ttl.scratchDays", "3"), ("accept-policy",)):
        refused = run_cli("config", *args, "--vault", str(absent))
        assert refused.exit_code != 0 and "no vault yet" in refused.stderr
    assert not absent.exists()


def test_parse_value_refuses_before_anything_is_touched() -> None:
    with pytest.raises(InvalidArguments, match="takes one value, got nothing"):
        parse_value(BY_KEY["ttl.scratchDays"], [])
