"""Team policy vs this machine's settings: config.json travels, config.local.json never does.

Each attack is written as it would be made: a teammate (or anyone who can push) commits a
``config.json`` to the shared bare remote with plain git, and a machine syncs it. Real git, real
bare remotes in tmp_path, the real command line.
"""

from __future__ import annotations

import json
import os
import stat
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_sync_support import TRAP, P, Team, git, make_team, push_forged, trap, write_config

from memosite.config import load_config
from memosite.errors import InvalidArguments
from memosite.kinds import KINDS
from memosite.settings import (
    BY_KEY,
    MACHINE_KEYS,
    MISSING,
    SETTINGS,
    TEAM_DEFAULTS,
    TEAM_KEYS,
    Setting,
    lookup,
    remote_problem,
    with_value,
)
from memosite.sync.resolution import merge_config
from memosite.sync.run import sync_vault
from memosite.vault import Vault

SCRIPTS = ["Café crème", "Миграция", "Ελληνικά", "数据库", "مرحبا", "🦊 notes"]


@pytest.fixture
def team(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Team]:
    yield from make_team(tmp_path, monkeypatch)


def read_json(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def push_config(team: Team, change: Callable[[dict[str, Any]], dict[str, Any]], *, author: str) -> str:
    """Commit a change of the shared config.json with plain git from a clone of the remote, as a
    teammate (or anyone who can push) would, and push it; returns the commit's short id."""
    work = team.base / "outsider"
    if not work.exists():
        git(team.base, "clone", "-q", str(team.remote), str(work))
    git(work, "fetch", "-q", "origin")
    git(work, "reset", "-q", "--hard", "origin/main")
    path = work / "config.json"
    path.write_text(json.dumps(change(read_json(path)), indent=2) + "\n", encoding="utf-8")
    name, _, email = author.partition(" <")
    git(work, "-c", f"user.name={name}", "-c", f"user.email={email.rstrip('>')}", "commit", "-q", "-am", "tune")
    git(work, "push", "-q", "origin", "HEAD:main")
    return git(work, "rev-parse", "--short", "HEAD").strip()


# --- where each setting lives ------------------------------------------------------------------


def test_a_new_vault_keeps_team_policy_in_config_json_and_this_machines_settings_apart(run_cli: Any) -> None:
    assert run_cli("init", "--no-pin").exit_code == 0
    root = Path(os.environ["MEMOSITE_VAULT"])
    assert read_json(root / "config.json") == TEAM_DEFAULTS
    machine = root / "config.local.json"
    assert stat.S_IMODE(machine.stat().st_mode) == 0o600  # a remote URL may hold credentials
    assert not set(read_json(machine)) & {"ttl", "review", "bootstrap"}
    listed = run_cli("config", "list", "--json").json()["settings"]
    assert {row["key"]: row["scope"] for row in listed} == {s.key: s.scope for s in SETTINGS}
    assert {row["key"] for row in listed if row["file"] == "config.local.json"} == set(MACHINE_KEYS)


OLDER_CONFIG: dict[str, Any] = {
    "ttl": {"scratchDays": 3, "reviewDays": 21},
    "vaultGit": {
        "enabled": True,
        "atomic": False,
        "remote": "git@example.org:équipe/mémoire.git",
        "branch": "memory",
        "push": "auto",
        "pushDelaySeconds": 4,
    },
    "bootstrap": {"maxBytes": 4096},
    "sessions": {"keep": 5, "maxAgeDays": 9, "capEvents": 100, "capBytes": 65536, "root": "Сессии/日本"},
    "review": {"required": ["trap", "decision"], "briefPending": False},
    "search": {"semantic": False},
    "futureSetting": {"kept": "as it was"},
}


def test_migrating_an_older_config_json_keeps_every_value_and_says_so_once(vault_dir: Path, run_cli: Any) -> None:
    unset = [setting.key for setting in SETTINGS if lookup(OLDER_CONFIG, setting.key) is MISSING]
    assert unset == [], f"give each setting a value other than its default in OLDER_CONFIG: {', '.join(unset)}"
    vault_dir.mkdir()
    (vault_dir / "config.json").write_text(json.dumps(OLDER_CONFIG), encoding="utf-8")
    first = run_cli("config", "list", "--json")
    assert first.exit_code == 0, first.stderr
    assert first.stderr.count("moved this machine's settings out of config.json") == 1
    for name in ("vaultGit.enabled", "vaultGit.remote", "sessions.root"):
        assert name in first.stderr
    values = {row["key"]: row["value"] for row in first.json()["settings"]}
    for setting in SETTINGS:
        section, name = setting.key.split(".")
        assert values[setting.key] == OLDER_CONFIG[section][name], setting.key
    team_file, machine_file = read_json(vault_dir / "config.json"), read_json(vault_dir / "config.local.json")
    assert "vaultGit" not in team_file and "root" not in team_file["sessions"]
    assert team_file["futureSetting"] == {"kept": "as it was"} and team_file["review"] == OLDER_CONFIG["review"]
    assert machine_file["vaultGit"] == OLDER_CONFIG["vaultGit"]
    assert machine_file["sessions"] == {"root": "Сессии/日本"}
    again = run_cli("config", "list", "--json")
    assert "moved" not in again.stderr and again.json()["settings"] == first.json()["settings"]


def _valid_values(setting: Setting) -> st.SearchStrategy[Any]:
    kind = setting.kind
    if kind in ("days", "seconds"):
        top = min(setting.maximum, 10_000)
        return st.one_of(st.integers(0, int(top)), st.floats(0, top, allow_nan=False).map(lambda x: round(x, 3)))
    if kind in ("count", "bytes"):
        return st.integers(int(setting.minimum), int(min(setting.maximum, 10**6)))
    if kind == "bool":
        return st.booleans()
    if kind == "kinds":
        return st.lists(st.sampled_from(KINDS), unique=True)
    if kind == "choice":
        return st.sampled_from(setting.choices)
    if kind == "branch":
        return st.sampled_from(["main", "memory", "team/notes", "v2.1"])
    text = st.text(st.characters(blacklist_categories=["Cs", "Cc"]), min_size=1, max_size=20).map(str.strip)
    if kind == "remote":
        return st.one_of(st.sampled_from(SCRIPTS), text).filter(lambda value: remote_problem(value) is None)
    return st.one_of(st.sampled_from(SCRIPTS), text.filter(bool))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.fixed_dictionaries({}, optional={s.key: _valid_values(s) for s in SETTINGS}))
def test_migration_keeps_every_value_of_any_older_config_json(chosen: dict[str, Any]) -> None:
    older: dict[str, Any] = {}
    for key, value in chosen.items():
        older = with_value(older, key, value)
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch) / "vault"
        root.mkdir()
        (root / "config.json").write_text(json.dumps(older, ensure_ascii=False), encoding="utf-8")
        before = load_config(root)
        Vault.open(root).close()
        after = load_config(root)
        assert after.plan is None and after.ignored == ()
        for setting in SETTINGS:
            expected = chosen.get(setting.key, setting.default)
            assert before.value(setting.key) == after.value(setting.key) == expected, setting.key
            assert after.source(setting.key) == ("default" if setting.key not in chosen else setting.scope)
        assert not set(read_json(root / "config.json")) & {"vaultGit"}


# --- a machine's settings never travel ---------------------------------------------------------


def test_a_machines_remote_url_is_never_committed_nor_pushed(team: Team, run_cli: Any) -> None:
    a = team.machine("a")
    secret_url = f"file://{team.remote}"  # what a person types; it could hold a token
    done = run_cli("config", "set", "vaultGit.remote", secret_url, "--vault", str(a.root))
    assert done.exit_code == 0, done.stderr
    run_cli("config", "set", "vaultGit.push", "manual", "--vault", str(a.root))
    a = Vault.open(a.root)
    trap(a)
    sync_vault(a)
    assert "config.local.json" not in git(a.root, "ls-files").splitlines()
    assert git(a.root, "status", "--porcelain", "--ignored", "config.local.json").startswith("!!")
    history = git(team.remote, "log", "--all", "-p")
    assert "trap" in history and secret_url not in history and "vaultGit" not in history
    a.close()


def test_an_older_git_vault_moves_its_machine_settings_out_in_its_next_commit(team: Team, run_cli: Any) -> None:
    a = team.machine("a")
    trap(a)
    sync_vault(a)
    # What an older memosite left: vault git settings committed in config.json, no machine file.
    older = {"vaultGit": {"enabled": True, "remote": str(team.remote)}}
    (a.root / "config.json").write_text(json.dumps(older), encoding="utf-8")
    git(a.root, "-c", "user.name=Pat", "-c", "user.email=pat@example.org", "commit", "-q", "-am", "older memosite")
    (a.root / "config.local.json").unlink()
    done = run_cli("sync", "--vault", str(a.root))
    assert done.exit_code == 0, done.stderr
    assert "moved this machine's settings out of config.json" in done.stderr
    assert "vaultGit" not in json.loads(git(team.remote, "show", "main:config.json"))
    assert read_json(a.root / "config.local.json")["vaultGit"]["remote"] == str(team.remote)


# --- machine settings that arrive from the remote ----------------------------------------------


def test_vault_git_remote_from_the_remote_is_ignored(team: Team, run_cli: Any, tmp_path: Path) -> None:
    a, b = team.machine("a"), team.machine("b")
    trap(a)
    sync_vault(a)
    sync_vault(b)
    evil = tmp_path / "evil.git"
    git(tmp_path, "init", "-q", "--bare", str(evil))
    marker = tmp_path / "ran"
    for remote in (str(evil), f"--upload-pack=touch {marker};"):

        def redirect(config: dict[str, Any], remote: str = remote) -> dict[str, Any]:
            return {**config, "vaultGit": {"enabled": True, "remote": remote}}

        push_config(team, redirect, author="M <m@x.org>")
        synced = run_cli("sync", "--vault", str(b.root))
        assert synced.exit_code == 0, synced.stderr
        assert "config.json holds machine settings, not used here: vaultGit.enabled, vaultGit.remote" in synced.stdout
        assert load_config(b.root).git_remote == str(team.remote)
    assert not marker.exists() and git(evil, "for-each-ref") == ""
    status = run_cli("status", "--vault", str(b.root))
    assert "config     config.json holds machine settings, not used here" in status.stdout
    # b still syncs with the team's remote: its write reaches it, nothing reaches the other one.
    b = Vault.open(b.root)
    trap(b, slug="from-b", body="b\n")
    sync_vault(b)
    assert "from-b" in git(team.remote, "log", "--all", "--name-only")
    assert git(evil, "for-each-ref") == ""
    b.close()


def test_sessions_root_in_a_synced_config_does_not_move_session_start(team: Team, run_cli: Any, tmp_path: Path) -> None:
    a, b = team.machine("a"), team.machine("b")
    trap(a)
    sync_vault(a)
    sync_vault(b)
    outside = tmp_path / "outside"
    push_config(team, lambda c: {**c, "sessions": {"root": str(outside)}}, author="M <m@x.org>")
    synced = run_cli("sync", "--vault", str(b.root))
    assert "not used here: sessions.root" in synced.stdout
    started = run_cli("session", "start", "--vault", str(b.root), "--project", P, "--json")
    assert started.exit_code == 0, started.stderr
    session_id = started.json()["sessionId"]
    assert (b.root / "projects" / P / "sessions" / session_id / "events.jsonl").is_file()
    assert not outside.exists()


def test_a_fresh_clone_does_not_take_another_machines_settings_from_config_json(
    team: Team, run_cli: Any, tmp_path: Path
) -> None:
    a = team.machine("a")
    trap(a)
    sync_vault(a)
    evil = tmp_path / "evil.git"
    git(tmp_path, "init", "-q", "--bare", str(evil))
    elsewhere = tmp_path / "elsewhere"
    push_config(
        team,
        lambda c: {**c, "vaultGit": {"enabled": True, "remote": str(evil)}, "sessions": {"root": str(elsewhere)}},
        author="Old Memosite <old@x.org>",
    )
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", "--branch", "main", str(team.remote), str(clone))
    synced = run_cli("sync", "--vault", str(clone))
    assert synced.exit_code == 0, synced.stderr
    assert "holds settings of the machine that committed them (vaultGit.enabled, vaultGit.remote" in synced.stderr
    machine = read_json(clone / "config.local.json")
    assert machine["vaultGit"] == {"enabled": True} and "sessions" not in machine
    assert (clone / TRAP).is_file() and git(evil, "for-each-ref") == ""


@pytest.mark.parametrize("first_command", [("list",), ("sync",), ("status",)])
def test_an_index_committed_to_the_remote_does_not_make_a_fresh_clone_take_its_machine_settings(
    team: Team, run_cli: Any, tmp_path: Path, first_command: tuple[str, ...]
) -> None:
    # Before: the committed index made the clone look like a vault memosite had used here, so its
    # first command moved the remote's vaultGit.remote (the attacker's repository) and
    # sessions.root into config.local.json: every later sync pushed this machine's memory there.
    a = team.machine("a")
    trap(a)
    sync_vault(a)
    evil = tmp_path / "evil.git"
    git(tmp_path, "init", "-q", "--bare", str(evil))
    elsewhere = tmp_path / "elsewhere"
    planted = {"vaultGit": {"enabled": True, "remote": str(evil)}, "sessions": {"root": str(elsewhere)}}
    push_forged(
        team,
        {
            "config.json": ("100644", json.dumps({**read_json(a.root / "config.json"), **planted}).encode("utf-8")),
            ".memosite/index.sqlite": ("100644", b"SQLite format 3\0"),
        },
        "a vault as an older memosite left it",
    )
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", "--branch", "main", str(team.remote), str(clone))
    run_cli(*first_command, "--vault", str(clone), "--project", P)
    run_cli("sync", "--vault", str(clone))  # refused (the history holds the index), after the first use
    machine = read_json(clone / "config.local.json")
    assert machine["vaultGit"] == {"enabled": True} and "sessions" not in machine
    assert load_config(clone).git_remote is None  # the clone's own origin, never config.json's
    run_cli("session", "start", "--vault", str(clone), "--project", P)
    assert git(evil, "for-each-ref") == "" and not elsewhere.exists()


def test_an_older_clone_memosite_used_here_still_moves_its_machine_settings_out(
    team: Team, run_cli: Any, tmp_path: Path
) -> None:
    a = team.machine("a")
    trap(a)
    sync_vault(a)
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", "--branch", "main", str(team.remote), str(clone))
    # What an older memosite left in a clone it used: its index (never committed) and its settings
    # in config.json.
    (clone / ".memosite").mkdir(exist_ok=True)
    (clone / ".memosite" / "index.sqlite").write_bytes(b"")
    older = {
        **read_json(clone / "config.json"),
        "vaultGit": {"enabled": True, "push": "auto", "remote": str(team.remote)},
    }
    (clone / "config.json").write_text(json.dumps(older), encoding="utf-8")
    done = run_cli("list", "--vault", str(clone), "--project", P)
    assert "moved this machine's settings out of config.json" in done.stderr
    assert read_json(clone / "config.local.json")["vaultGit"] == {
        "enabled": True,
        "push": "auto",
        "remote": str(team.remote),
    }


def test_a_machine_setting_written_into_config_json_later_is_not_used(vault: Vault, run_cli: Any) -> None:
    path = vault.root / "config.json"
    path.write_text(json.dumps({**read_json(path), "vaultGit": {"enabled": True, "push": "auto"}}), encoding="utf-8")
    listed = run_cli("config", "list", "--json").json()
    values = {row["key"]: (row["value"], row["source"]) for row in listed["settings"]}
    assert values["vaultGit.enabled"] == (False, "default") and values["vaultGit.push"] == ("manual", "default")
    assert listed["report"]["ignoredMachineSettings"] == ["vaultGit.enabled", "vaultGit.push"]


def test_team_settings_written_into_the_machine_file_are_not_used(vault: Vault, run_cli: Any) -> None:
    path = vault.root / "config.local.json"
    path.write_text(json.dumps({**read_json(path), "review": {"required": []}}), encoding="utf-8")
    (vault.root / "config.json").write_text(json.dumps({"review": {"required": ["trap"]}}), encoding="utf-8")
    assert run_cli("config", "get", "review.required").stdout == "trap\n"
    assert "config.local.json holds team settings, not used: review.required" in run_cli("status").stdout


# --- checked values ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "remote",
    ["--upload-pack=touch pwned", "-oProxyCommand=sh", "ext::sh -c touch% pwned", "fd::17", " origin", "a\nb"],
)
def test_a_remote_that_git_could_read_as_an_option_or_a_command_is_refused(vault_dir: Path, remote: str) -> None:
    vault_dir.mkdir()
    write_config(vault_dir, remote=remote)  # an older config.json, moved on first use
    with pytest.raises(InvalidArguments, match=r"vaultGit\.remote"):
        Vault.open(vault_dir)
    assert not (vault_dir / "config.local.json").exists()
    (vault_dir / "config.json").write_text("{}", encoding="utf-8")
    (vault_dir / "config.local.json").write_text(json.dumps({"vaultGit": {"remote": remote}}), encoding="utf-8")
    with pytest.raises(InvalidArguments, match=r"config\.local\.json: vaultGit\.remote"):
        load_config(vault_dir)


@given(st.text(min_size=0, max_size=30))
def test_no_remote_starting_with_a_dash_is_ever_accepted(tail: str) -> None:
    assert remote_problem("-" + tail) is not None


@pytest.mark.parametrize("text", [*SCRIPTS, "git@github.com:acme/memory.git", "https://host/x.git", "../shared.git"])
def test_remotes_in_any_script_are_accepted(text: str) -> None:
    assert remote_problem(text) is None


# --- the key-by-key merge carries team settings only -------------------------------------------


machine_values = st.fixed_dictionaries({}, optional={key: _valid_values(BY_KEY[key]) for key in MACHINE_KEYS})
team_values = st.fixed_dictionaries({}, optional={key: _valid_values(BY_KEY[key]) for key in TEAM_KEYS})


def _tree(values: dict[str, Any]) -> dict[str, Any]:
    tree: dict[str, Any] = {}
    for key, value in values.items():
        tree = with_value(tree, key, value)
    return tree


@settings(max_examples=150, deadline=None)
@given(
    base=team_values, ours=team_values, theirs=team_values, ours_machine=machine_values, theirs_machine=machine_values
)
def test_the_config_merge_never_carries_the_other_sides_machine_settings(
    base: dict[str, Any],
    ours: dict[str, Any],
    theirs: dict[str, Any],
    ours_machine: dict[str, Any],
    theirs_machine: dict[str, Any],
) -> None:
    def encoded(values: dict[str, Any]) -> bytes:
        return json.dumps(_tree(values), ensure_ascii=False).encode("utf-8")

    merged = merge_config(encoded(base), encoded({**ours, **ours_machine}), encoded({**theirs, **theirs_machine}))
    if merged is None:  # a team setting both sides changed differently: a conflict, ours stays
        return
    result = json.loads(merged)
    for key in MACHINE_KEYS:
        section, name = key.split(".")
        found = result.get(section, {}).get(name, "absent")
        assert found == ours_machine.get(key, "absent"), key
