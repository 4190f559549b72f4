"""Project identity across clones and worktrees: the same repository is the same project."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from memosite.config import git_project_name, resolve_project
from memosite.gitfiles import index_lists
from memosite.workspace import find_work_tree


def git(cwd: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
        text=True,
        encoding="utf-8",
    )


@pytest.fixture
def upstream(tmp_path: Path) -> Path:
    """A repository published as ``widget.git`` with one commit."""
    work = tmp_path / "seed"
    work.mkdir()
    git(work, "init", "-q", "-b", "main")
    (work / "README").write_text("widget\n", encoding="utf-8")
    git(work, "add", "README")
    git(work, "commit", "-qm", "start")
    bare = tmp_path / "server" / "widget.git"
    bare.parent.mkdir()
    git(tmp_path, "clone", "-q", "--bare", str(work), str(bare))
    return bare


def project_at(path: Path, env: dict[str, str]) -> str:
    return resolve_project(None, env, cwd=path).id


def test_two_clones_in_differently_named_directories_are_one_project(
    tmp_path: Path, upstream: Path, unpinned_env: dict[str, str]
) -> None:
    git(tmp_path, "clone", "-q", str(upstream), "widget-main")
    git(tmp_path, "clone", "-q", str(upstream), "scratch-copy")
    (tmp_path / "scratch-copy" / "src").mkdir()
    assert (
        project_at(tmp_path / "widget-main", unpinned_env)
        == project_at(tmp_path / "scratch-copy" / "src", unpinned_env)
        == "widget"
    )
    assert resolve_project(None, unpinned_env, cwd=tmp_path / "scratch-copy").source == "git"


def test_a_worktree_is_the_same_project_as_its_repository(
    tmp_path: Path, upstream: Path, unpinned_env: dict[str, str]
) -> None:
    git(tmp_path, "clone", "-q", str(upstream), "checkout")
    git(tmp_path / "checkout", "worktree", "add", "-q", "-b", "feature", str(tmp_path / "feature-tree"))
    assert (tmp_path / "feature-tree" / ".git").is_file()
    assert (
        project_at(tmp_path / "feature-tree", unpinned_env)
        == project_at(tmp_path / "checkout", unpinned_env)
        == "widget"
    )


def test_without_an_origin_a_worktree_takes_its_main_work_tree_name(
    tmp_path: Path, unpinned_env: dict[str, str]
) -> None:
    main = tmp_path / "Shop"
    main.mkdir()
    git(main, "init", "-q", "-b", "main")
    git(main, "commit", "-q", "--allow-empty", "-m", "start")
    git(main, "worktree", "add", "-q", "-b", "wip", str(tmp_path / "shop-wip"))
    assert project_at(tmp_path / "shop-wip", unpinned_env) == project_at(main, unpinned_env) == "shop"


def test_a_committed_project_file_wins_in_every_clone(
    tmp_path: Path, upstream: Path, unpinned_env: dict[str, str]
) -> None:
    git(tmp_path, "clone", "-q", str(upstream), "one")
    (tmp_path / "one" / ".memosite.toml").write_text('id = "widget-team"\nname = "Widget"\n', encoding="utf-8")
    git(tmp_path / "one", "add", ".memosite.toml")
    git(tmp_path / "one", "commit", "-qm", "pin the memosite project")
    git(tmp_path / "one", "push", "-q", "origin", "main")
    git(tmp_path, "clone", "-q", str(upstream), "two")
    git(tmp_path / "two", "worktree", "add", "-q", "-b", "x", str(tmp_path / "two-x"))
    for where in ("one", "two", "two-x"):
        identity = resolve_project(None, unpinned_env, cwd=tmp_path / where)
        assert (identity.id, identity.name, identity.source) == ("widget-team", "Widget", "project-file")


@pytest.mark.parametrize(
    ("url", "name"),
    [
        ("git@github.com:acme/widget.git", "widget"),
        ("https://github.com/acme/widget", "widget"),
        ("ssh://git@host:2222/acme/Widget.git/", "Widget"),
        ('"/srv/repos/widget.git"', "widget"),
        ("../widget  # a comment", "widget"),
    ],
)
def test_the_name_comes_from_the_origin_url(tmp_path: Path, url: str, name: str) -> None:
    repo = tmp_path / "whatever-dir"
    (repo / ".git").mkdir(parents=True)
    (repo / ".git" / "config").write_text(
        f'[core]\n\tbare = false\n[remote "upstream"]\n\turl = /elsewhere/other.git\n'
        f'[remote "origin"]\n\turl = {url}\n',
        encoding="utf-8",
    )
    assert git_project_name(repo) == name


def test_explicit_and_environment_choices_still_come_first(
    tmp_path: Path, upstream: Path, unpinned_env: dict[str, str]
) -> None:
    git(tmp_path, "clone", "-q", str(upstream), "c")
    assert resolve_project("mine", unpinned_env, cwd=tmp_path / "c").id == "mine"
    assert resolve_project(None, {"MEMOSITE_PROJECT": "env-one"}, cwd=tmp_path / "c").id == "env-one"
    plain = tmp_path / "Plain Dir"
    plain.mkdir()
    assert resolve_project(None, unpinned_env, cwd=plain).id == "plain-dir"


def test_a_project_file_above_the_repository_is_not_the_repositorys(
    tmp_path: Path, upstream: Path, unpinned_env: dict[str, str]
) -> None:
    (tmp_path / ".memosite.toml").write_text('id = "left-in-tmp"\n', encoding="utf-8")
    git(tmp_path, "clone", "-q", str(upstream), "clone")
    (tmp_path / "clone" / "src").mkdir()
    assert project_at(tmp_path / "clone" / "src", unpinned_env) == "widget"
    plain = tmp_path / "notes"
    plain.mkdir()
    assert project_at(plain, unpinned_env) == "left-in-tmp"  # outside a repository the search goes on up


def test_the_upward_search_stops_below_a_ceiling(tmp_path: Path, unpinned_env: dict[str, str]) -> None:
    (tmp_path / ".memosite.toml").write_text('id = "above"\n', encoding="utf-8")
    (tmp_path / ".git").mkdir()
    inner = tmp_path / "team" / "Inner Dir"
    inner.mkdir(parents=True)
    fenced = dict(unpinned_env, MEMOSITE_CEILING_DIRECTORIES=f"/nowhere{os.pathsep}{tmp_path / 'team'}")
    identity = resolve_project(None, fenced, cwd=inner)
    assert (identity.id, identity.source) == ("inner-dir", "directory")
    assert find_work_tree(inner, fenced) is None and find_work_tree(inner, unpinned_env) == tmp_path
    assert resolve_project(None, fenced, cwd=tmp_path / "team").source == "directory"


def test_a_project_file_without_an_id_ends_the_search_for_one(tmp_path: Path, unpinned_env: dict[str, str]) -> None:
    (tmp_path / ".memosite.toml").write_text('id = "above"\n', encoding="utf-8")
    notes = tmp_path / "Notes"
    notes.mkdir()
    (notes / ".memosite.toml").write_text('name = "only a name"\n', encoding="utf-8")
    assert resolve_project(None, unpinned_env, cwd=notes).id == "notes"


def test_a_ceiling_counts_through_a_symlink_and_relative_entries_are_ignored(
    tmp_path: Path, unpinned_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / ".memosite.toml").write_text('id = "above"\n', encoding="utf-8")
    inner = tmp_path / "team" / "Inner"
    inner.mkdir(parents=True)
    (tmp_path / "link").symlink_to(tmp_path / "team")
    through_link = dict(unpinned_env, MEMOSITE_CEILING_DIRECTORIES=str(tmp_path / "link"))
    assert resolve_project(None, through_link, cwd=inner).id == "inner"
    monkeypatch.chdir(tmp_path)
    relative = dict(unpinned_env, MEMOSITE_CEILING_DIRECTORIES=f"team{os.pathsep}{tmp_path.parent}")
    assert resolve_project(None, relative, cwd=inner).id == "above"


# --- what git's index lists, read without git ------------------------------------------------

INDEXED_NAMES = [
    ".memosite/index.sqlite",
    ".memosite/tombstones.jsonl",
    "config.json",
    "projects/demo/traps/café-crème.md",
    "projects/demo/traps/миграция.md",
    "projects/demo/decisions/ελληνικά.md",
    "projects/demo/decisions/数据库-锁.md",
    "projects/demo/specs/مرحبا.md",
    "projects/demo/plans/🦊-notes.md",
    "projects/demo/plans/" + "long-" * 40 + "name.md",
]


@pytest.mark.parametrize("object_format", ["sha1", "sha256"])
@pytest.mark.parametrize("version", [2, 3, 4])
def test_the_index_reader_lists_what_git_ls_files_lists(tmp_path: Path, version: int, object_format: str) -> None:
    repo = tmp_path / "vault"
    repo.mkdir()
    git(repo, "init", "-q", f"--object-format={object_format}")
    for name in INDEXED_NAMES:
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(name, encoding="utf-8")
    git(repo, "add", "-f", "--", *INDEXED_NAMES[:-3])
    # Version 3 holds extended flags (an intent to add) between ordinary entries.
    git(repo, "add", "-N", "--", INDEXED_NAMES[-3])
    git(repo, "update-index", "--index-version", str(version))
    for name in INDEXED_NAMES[:-2]:
        assert index_lists(repo, name), name
    for name in [*INDEXED_NAMES[-2:], "projects", ".memosite/index", "config.jso"]:
        assert not index_lists(repo, name), name


def test_the_index_reader_says_no_for_what_is_no_index(tmp_path: Path) -> None:
    assert not index_lists(tmp_path, "config.json")
    (tmp_path / ".git").mkdir()
    for garbage in (b"", b"DIRC", b"DIRC\x00\x00\x00\x02\x00\x00\x00\x05short", b"not an index at all"):
        (tmp_path / ".git" / "index").write_bytes(garbage)
        assert not index_lists(tmp_path, "config.json")
