"""One allowlist of what a shared vault may hold: each attack below is a commit someone with push
access makes by hand, and each test is that attack failing — refused before git touches the
teammate's work tree, with one line naming the commit and the path, and nothing changed there."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_sync_support import TRAP, Team, git, make_team, push_forged, synced_pair, trap

from memosite.kinds import RECORD_DIRS, VIEW_FILES
from memosite.sharedtree import is_shared, refusal
from memosite.sync.errors import RefusedContent
from memosite.sync.preview import preview_sync
from memosite.sync.run import sync_vault
from memosite.vault import DISPOSABLE_PATTERNS, Vault

PERSON = ("-c", "user.name=Pat", "-c", "user.email=pat@example.org")
FILE = "100644"
GITLINK = ("160000", b"0123456789abcdef0123456789abcdef01234567")

HOSTILE: dict[str, tuple[str, tuple[str, bytes]]] = {
    "attributes that rewrite every record": (".gitattributes", (FILE, b"* working-tree-encoding=UTF-16LE\n")),
    "attributes deeper down": ("projects/demo/.gitattributes", (FILE, b"*.md merge=union\n")),
    "a submodule list": (".gitmodules", (FILE, b'[submodule "x"]\n\tpath = x\n\turl = https://example.org/x.git\n')),
    "an index that replaces the local one": (".memosite/index.sqlite", (FILE, b"SQLite format 3\0")),
    "a template cache holding code": (".memosite/jinja-cache/tmpl.cache", (FILE, b"\x80\x04code")),
    "a file outside projects/": ("notes.txt", (FILE, b"hello\n")),
    "another .gitignore": ("projects/demo/traps/.gitignore", (FILE, b"*.md\n")),
    "a root .gitignore that un-ignores the index": (".gitignore", (FILE, b"!/.memosite/*\n")),
    "a symlink dressed as a record": ("projects/demo/traps/passwd.md", ("120000", b"/etc/passwd")),
    "a submodule": ("projects/demo/traps/sub", GITLINK),
    "an executable record": ("projects/demo/traps/run.md", ("100755", b"#!/bin/sh\ntouch pwned\n")),
    "a control character in a name": ("projects/demo/traps/a\x1b[31mb.md", (FILE, b"---\ntitle: x\n---\n")),
    "a git hook directory": (".githooks/post-merge", (FILE, b"#!/bin/sh\n")),
    "a record in an unknown directory": ("projects/demo/scripts/x.md", (FILE, b"x\n")),
    "a hidden file among records": ("projects/demo/traps/.x.md", (FILE, b"x\n")),
}


@pytest.fixture
def team(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Team]:
    yield from make_team(tmp_path, monkeypatch)


def snapshot(vault: Vault) -> tuple[str, str, str, str, dict[str, bytes | None]]:
    """What a refused sync must leave exactly as it was: HEAD, the index, the remote-tracking
    branch, the status, and every file of the work tree with its bytes."""
    root = vault.root
    files: dict[str, bytes | None] = {}
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root)
        if relative.parts[0] in (".git", ".memosite") or path.is_dir():
            continue
        files[relative.as_posix()] = None if path.is_symlink() else path.read_bytes()
    return (
        git(root, "rev-parse", "HEAD"),
        git(root, "ls-files", "-s"),
        git(root, "rev-parse", "refs/remotes/origin/main"),
        git(root, "status", "--porcelain"),
        files,
    )


@pytest.mark.parametrize("attack", sorted(HOSTILE))
def test_a_commit_adding_what_a_shared_vault_may_not_hold_is_refused_before_the_work_tree(
    team: Team, run_cli: Any, attack: str
) -> None:
    _a, b = synced_pair(team)
    path, entry = HOSTILE[attack]
    forged = push_forged(team, {path: entry}, f"add {attack}")
    before = snapshot(b)
    done = run_cli("sync", "--vault", str(b.root))
    assert done.exit_code != 0
    [line] = done.stderr.strip().splitlines()
    assert forged[:7] in line and repr(path) in line and "nothing was merged or written here" in line
    assert snapshot(b) == before and not (b.root / "pwned").exists()


def test_a_gitmodules_whose_update_runs_a_command_is_refused_by_gits_own_object_check(team: Team, run_cli) -> None:  # type: ignore[no-untyped-def]
    _a, b = synced_pair(team)
    push_forged(team, {".gitmodules": (FILE, b'[submodule "x"]\n\tpath = x\n\tupdate = !touch pwned\n')})
    before = snapshot(b)
    done = run_cli("sync", "--vault", str(b.root))
    assert done.exit_code != 0
    [line] = done.stderr.strip().splitlines()
    assert "gitmodulesUpdate" in line and "nothing was merged or written here" in line
    assert snapshot(b) == before and not (b.root / "pwned").exists()


def test_a_bad_file_added_and_removed_again_is_still_refused(team: Team, run_cli) -> None:  # type: ignore[no-untyped-def]
    _a, b = synced_pair(team)
    added = push_forged(team, {".gitattributes": (FILE, b"* working-tree-encoding=UTF-16LE\n")}, "add")
    push_forged(team, {".gitattributes": None}, "and remove it again")
    before = snapshot(b)
    done = run_cli("sync", "--vault", str(b.root), "--json")
    assert done.exit_code != 0
    error = done.json()["error"]
    assert error["code"] == "REFUSED_CONTENT" and error["details"]["refused"][0]["commit"] == added
    assert snapshot(b) == before


def test_the_dry_run_refuses_what_the_sync_would_and_writes_nothing(team: Team) -> None:
    _a, b = synced_pair(team)
    push_forged(team, {".gitmodules": HOSTILE["a submodule list"][1]})
    before = snapshot(b)
    with pytest.raises(RefusedContent, match=r"'\.gitmodules'.*a sync would refuse it"):
        preview_sync(b)
    assert snapshot(b) == before


def test_a_refusal_leaves_a_later_good_sync_possible_once_the_remote_is_repaired(team: Team) -> None:
    a, b = synced_pair(team)
    store = team.base / "mallory.git"
    good = git(team.remote, "rev-parse", "main").strip()
    push_forged(team, {"notes.txt": (FILE, b"x\n")})
    with pytest.raises(RefusedContent):
        sync_vault(b)
    git(store, "push", "-q", "--force", str(team.remote), f"{good}:refs/heads/main")  # the team repairs it
    trap(a, body="after the repair\n")
    sync_vault(a)
    assert sync_vault(b).integration == "fast-forward"
    assert "after the repair" in (b.root / TRAP).read_text(encoding="utf-8")


def test_a_plain_git_pull_of_a_bad_commit_is_stopped_at_the_fetch(team: Team) -> None:
    _a, b = synced_pair(team)
    forged = push_forged(team, {".gitattributes": (FILE, b"* working-tree-encoding=UTF-16LE\n")})
    before = snapshot(b)
    pulled = subprocess.run(
        ["git", "-C", str(b.root), *PERSON, "pull", "-q"], capture_output=True, text=True, encoding="utf-8"
    )
    assert pulled.returncode != 0
    assert f"commit {forged[:7]} adds '.gitattributes'" in pulled.stderr
    assert snapshot(b) == before and not (b.root / ".gitattributes").exists()


def test_a_pull_by_url_around_the_guard_is_named_and_not_indexed(team: Team) -> None:
    _a, b = synced_pair(team)
    forged = push_forged(team, {"projects/demo/traps/evil.md": ("100755", b"---\ntitle: evil\n---\nx\n")})
    pulled = subprocess.run(
        ["git", "-C", str(b.root), *PERSON, "pull", "-q", str(team.remote), "main"],
        capture_output=True,
        text=True,
        encoding="utf-8",
    )
    assert f"commit {forged[:7]} adds 'projects/demo/traps/evil.md'" in pulled.stderr
    assert "reset --merge ORIG_HEAD" in pulled.stderr
    assert b.index().by_path("projects/demo/traps/evil.md") is None


def test_a_clone_of_a_remote_holding_refused_files_is_refused_at_its_first_sync(team: Team, run_cli) -> None:  # type: ignore[no-untyped-def]
    a = team.machine("a")
    trap(a)
    sync_vault(a)
    forged = push_forged(team, {"projects/demo/traps/link.md": ("120000", b"../../../../../etc/passwd")})
    clone = team.base / "cloned"
    git(team.base, "clone", "-q", "--branch", "main", str(team.remote), str(clone))
    done = run_cli("sync", "--vault", str(clone))
    assert done.exit_code != 0 and f"commit {forged[:7]} adds 'projects/demo/traps/link.md'" in done.stderr


def test_a_refused_remote_value_of_a_one_off_url_leaves_no_remote_and_no_ref(team: Team) -> None:
    _a, b = synced_pair(team)
    push_forged(team, {"notes.txt": (FILE, b"x\n")})
    refs = git(b.root, "for-each-ref")
    with pytest.raises(RefusedContent):
        sync_vault(b, remote=f"file://{team.remote}")
    assert git(b.root, "for-each-ref") == refs and git(b.root, "remote").split() == ["origin"]


# --- what this machine commits and pushes -------------------------------------------------------


def test_a_stray_file_in_the_vault_never_reaches_a_commit_and_sync_says_so(team: Team) -> None:
    a, b = synced_pair(team)
    (a.root / "projects/demo/traps/.DS_Store").write_bytes(b"\0\0\0\1Bud1")
    (a.root / "notes.txt").write_text("my own notes ✓\n", encoding="utf-8")
    os.symlink("/etc/hostname", a.root / "projects/demo/traps/link.md")
    trap(a, body="written after the strays\n")
    result = sync_vault(a)
    left = {item.path for item in result.left_out}
    assert left == {"projects/demo/traps/.DS_Store", "notes.txt", "projects/demo/traps/link.md"}
    assert any(line.startswith("left out of the commit: notes.txt") for line in result.lines())
    tracked = git(a.root, "ls-files")
    assert ".DS_Store" not in tracked and "notes.txt" not in tracked and "link.md" not in tracked
    sync_vault(b)  # the other machine takes the record, and nothing it would refuse
    assert "written after the strays" in (b.root / TRAP).read_text(encoding="utf-8")


def test_a_commit_made_here_by_hand_that_others_would_refuse_is_not_pushed(team: Team, run_cli) -> None:  # type: ignore[no-untyped-def]
    a, _b = synced_pair(team)
    (a.root / "run.sh").write_text("#!/bin/sh\n", encoding="utf-8")
    git(a.root, *PERSON, "add", "run.sh")
    git(a.root, *PERSON, "commit", "-q", "-m", "by hand")
    remote_before = git(team.remote, "rev-parse", "main")
    done = run_cli("sync", "--vault", str(a.root))
    assert done.exit_code != 0 and "refusing to push" in done.stderr and "'run.sh'" in done.stderr
    assert "reset --soft" in done.stderr
    assert git(team.remote, "rev-parse", "main") == remote_before


# --- the rule itself ------------------------------------------------------------------------------

MADE_BY_MEMOSITE = [
    "config.json",
    "config.conflict.0a1b2c3d.json",
    ".gitignore",
    ".memosite/tombstones.jsonl",
    "templates/views/TRAPS.md.j2",
    "templates/rows.md.j2",
    *(f"projects/demo/{view}" for view in VIEW_FILES),
    *(f"projects/demo/{directory}/some-slug.md" for directory in RECORD_DIRS),
    "projects/demo/traps/lock-order.accepted.md",
    "projects/demo/traps/lock-order.conflict.0a1b2c3d.md",
    "projects/demo/sessions/20261130T000000Z-abc123/events.jsonl",
    "projects/demo/sessions/session-20261130T000000Z-abc123.md",
    "projects/демо-not-an-id/traps/x.md",
]


@pytest.mark.parametrize("path", MADE_BY_MEMOSITE[:-1])
def test_what_memosite_itself_writes_may_be_shared(path: str) -> None:
    assert refusal(path, FILE) is None


def test_a_project_directory_must_be_a_project_id() -> None:
    assert not is_shared(MADE_BY_MEMOSITE[-1])


def test_memosites_own_gitignore_block_may_be_shared() -> None:
    from memosite.gitsetup import gitignore_block, merged_gitignore

    assert refusal(".gitignore", FILE, gitignore_block().encode) is None
    legacy = ".memosite/index.sqlite*\n.memosite/vault.lock\n.memosite/pending-commits\n.memosite-tmp-*\n"
    assert refusal(".gitignore", FILE, merged_gitignore(legacy).encode) is None
    assert refusal(".gitignore", FILE, lambda: b"# a comment\n\n" + DISPOSABLE_PATTERNS[0].encode()) is None
    assert refusal(".gitignore", FILE, lambda: b"projects/\n") is not None


names = st.text(
    alphabet=st.characters(codec="utf-8", categories=["L", "N", "P", "S", "Zs", "Cc"]), min_size=1, max_size=24
)


@settings(max_examples=300, deadline=None)
@given(top=names, rest=st.lists(names, max_size=3))
def test_nothing_outside_projects_is_shared_but_the_named_files(top: str, rest: list[str]) -> None:
    path = "/".join([top, *rest])
    allowed_tops = {"projects", "templates", ".memosite", "config.json", ".gitignore"}
    if top not in allowed_tops and not top.startswith(("config.conflict.", ".gitignore.conflict.")):
        assert not is_shared(path)


@settings(max_examples=300, deadline=None)
@given(
    project=st.sampled_from(["demo", "acme-shop", "p1"]),
    directory=st.sampled_from(RECORD_DIRS),
    name=names,
    control=st.characters(min_codepoint=0, max_codepoint=31),
)
def test_a_name_with_a_control_character_is_never_shared(project: str, directory: str, name: str, control: str) -> None:
    path = f"projects/{project}/{directory}/{name}{control}.md"
    assert refusal(path, FILE) == "its name holds a control character or a backslash"


@settings(max_examples=200, deadline=None)
@given(
    slug=st.text(
        alphabet=st.characters(categories=["L", "N"]) | st.sampled_from("-_.()'ʼ✓"), min_size=1, max_size=40
    ).filter(lambda s: not s.startswith(".")),
    directory=st.sampled_from(RECORD_DIRS),
)
def test_a_hand_named_record_in_any_script_may_be_shared_as_a_regular_file_only(slug: str, directory: str) -> None:
    path = f"projects/demo/{directory}/{slug}.md"
    assert is_shared(path, FILE)
    for mode in ("100755", "120000", "160000"):
        assert not is_shared(path, mode)


# --- config.json: shared, but only as a file every machine can load ------------------------------

UNLOADABLE_CONFIGS: dict[str, bytes] = {
    "a duration that is no number": b'{"ttl": {"scratchDays": "abc", "reviewDays": -5}}',
    "a budget that is no integer": b'{"bootstrap": {"maxBytes": "x"}}',
    "review that is no object": b'{"review": "off"}',
    "a list of kinds nobody knows": '{"review": {"required": ["trap", "ловушка"]}}'.encode(),
    "no JSON at all": b"{ttl: 7,",
    "a JSON list": b'["ttl", 7]',
    "text that is not UTF-8": b'{"ttl": {"scratchDays": 7}}\xff',
}


@pytest.mark.parametrize("attack", sorted(UNLOADABLE_CONFIGS))
def test_a_config_json_no_machine_could_load_is_refused_before_it_wedges_every_teammate(
    team: Team, run_cli: Any, attack: str
) -> None:
    # Before: sync merged it, then stopped half way (a merge left in progress); every later command
    # here, the sync that could bring the repair and `config set` included, failed on config.json.
    _a, b = synced_pair(team)
    forged = push_forged(team, {"config.json": (FILE, UNLOADABLE_CONFIGS[attack])}, f"config: {attack}")
    before = snapshot(b)
    done = run_cli("sync", "--vault", str(b.root))
    assert done.exit_code != 0
    [line] = done.stderr.strip().splitlines()
    assert forged[:7] in line and "'config.json'" in line and "nothing was merged or written here" in line
    assert snapshot(b) == before and not (b.root / ".git" / "MERGE_HEAD").exists()
    assert run_cli("list", "--vault", str(b.root), "--project", "demo").exit_code == 0
    assert run_cli("config", "set", "ttl.scratchDays", "3", "--vault", str(b.root)).exit_code == 0


def test_a_config_json_that_loads_still_travels_with_an_older_machines_settings_and_unknown_keys(
    team: Team,
) -> None:
    _a, b = synced_pair(team)
    team_file = {
        "ttl": {"scratchDays": 3},
        "vaultGit": {"enabled": True, "remote": "--upload-pack=touch pwned"},
        "futureSetting": {"ünïcode": "μνήμη 记忆"},
    }
    push_forged(team, {"config.json": (FILE, json.dumps(team_file, ensure_ascii=False).encode("utf-8"))})
    sync_vault(b)
    assert json.loads((b.root / "config.json").read_text(encoding="utf-8"))["futureSetting"] == {
        "ünïcode": "μνήμη 记忆"
    }
    reopened = Vault.open(b.root)
    try:
        assert reopened.config.scratch_days == 3 and reopened.config.git_remote == str(team.remote)
    finally:
        reopened.close()
    assert not (b.root / "pwned").exists()
