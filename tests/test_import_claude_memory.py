"""``memosite import claude-memory``: Claude Code's auto-memory folder (a MEMORY.md index and topic
files), hand-made in its documented layout (see tests/corpus/import/claude-memory/SOURCE.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from import_support import corpus_copy, records
from test_sync_support import git, isolate_git


def test_topic_files_become_records_of_the_kind_their_type_says(run_cli: Any, vault_dir: Path, tmp_path: Path) -> None:
    memory = corpus_copy("claude-memory", tmp_path) / "memory"
    outcome = run_cli("import", "claude-memory", str(memory), "--json")
    assert outcome.exit_code == 0, outcome.stderr
    found = {
        r.frontmatter["sourcePath"].rsplit("/", 1)[-1] + "#" + r.frontmatter.get("sourceAnchor", ""): r
        for r in records(vault_dir).values()
    }
    assert found["feedback_pnpm.md#"].kind == "decision"
    assert found["feedback_pnpm.md#"].frontmatter["title"] == "Use pnpm, never npm"
    assert found["feedback_pnpm.md#"].frontmatter["description"].startswith("Install packages with pnpm")
    assert found["project_checkout.md#"].kind == "plan"
    assert found["reference_dashboards.md#"].kind == "spec"
    assert found["user_role.md#"].kind == "state"  # about the person: private, never published
    assert found["debugging.md#"].frontmatter["title"] == "Debugging notes"  # an older file without header
    # MEMORY.md's pointer lines are left out (their files are imported); its own notes are kept.
    index_records = [r for key, r in found.items() if key.startswith("MEMORY.md#")]
    assert [r.frontmatter["sourceAnchor"] for r in index_records] == ["Quick notes"]
    assert "staging database is reset" in index_records[0].body
    assert all("feedback_pnpm.md" not in r.body for r in index_records)


def test_auto_recognises_the_memory_folder_by_its_index(run_cli: Any, vault_dir: Path, tmp_path: Path) -> None:
    memory = corpus_copy("claude-memory", tmp_path) / "memory"
    outcome = run_cli("import", "auto", str(memory / "MEMORY.md"), "--json")
    assert outcome.exit_code == 0, outcome.stderr
    assert outcome.json()["format"] == "claude-memory" and outcome.json()["created"] == 6


def test_a_topic_file_the_model_removed_is_archived_on_the_next_import(
    run_cli: Any, vault_dir: Path, tmp_path: Path
) -> None:
    memory = corpus_copy("claude-memory", tmp_path) / "memory"
    assert run_cli("import", "claude-memory", str(memory)).exit_code == 0
    (memory / "debugging.md").unlink()
    outcome = run_cli("import", "claude-memory", str(memory), "--json")
    assert outcome.json()["archived"] == 1 and outcome.json()["unchanged"] == 5
    gone = next(r for r in records(vault_dir).values() if r.frontmatter["sourcePath"].endswith("debugging.md"))
    assert gone.status == "archived"  # kept, not destroyed


def test_the_memory_folders_of_two_worktrees_never_overwrite_or_archive_each_other(
    run_cli: Any, vault_dir: Path, tmp_path: Path
) -> None:
    # Claude Code keeps one memory folder per working directory: a repository and its worktree
    # have two, both named memory/, and a team imports both into one project.
    projects = tmp_path / "home" / ".claude" / "projects"
    for name, note in (("-src-shop", "Checkout uses Stripe."), ("-src-shop-wt-fix", "The fix branch pins Node 20.")):
        memory = projects / name / "memory"
        memory.mkdir(parents=True)
        (memory / "MEMORY.md").write_text("- [Notes](notes.md) — what we know\n", encoding="utf-8")
        (memory / "notes.md").write_text(f"---\nname: Notes\ntype: project\n---\n{note}\n", encoding="utf-8")
    first = run_cli("import", "claude-memory", str(projects / "-src-shop" / "memory"), "--json").json()
    second = run_cli("import", "claude-memory", str(projects / "-src-shop-wt-fix" / "memory"), "--json").json()
    assert (first["created"], second["created"], second["updated"], second["archived"]) == (1, 1, 0, 0)
    found = {r.frontmatter["sourcePath"]: r for r in records(vault_dir).values()}
    assert set(found) == {"-src-shop/memory/notes.md", "-src-shop-wt-fix/memory/notes.md"}
    assert {r.status for r in found.values()} == {"active"}
    again = run_cli("import", "claude-memory", str(projects / "-src-shop" / "memory"), "--json").json()
    assert (again["unchanged"], again["archived"]) == (1, 0)


def test_a_memory_folder_kept_in_a_repository_is_named_from_the_repository(
    run_cli: Any, vault_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Inside a repository the path is the repository's own, whatever the clone's folder is called.
    isolate_git(tmp_path, monkeypatch)
    repo = tmp_path / "any-clone-name"
    (repo / "memory").mkdir(parents=True)
    git(repo, "init", "-q")
    (repo / "memory" / "MEMORY.md").write_text("- [Notes](notes.md)\n", encoding="utf-8")
    (repo / "memory" / "notes.md").write_text("---\nname: Notes\ntype: project\n---\nKeep it.\n", encoding="utf-8")
    outcome = run_cli("import", "claude-memory", str(repo / "memory"), "--json")
    assert [r["sourcePath"] for r in outcome.json()["records"]] == ["memory/notes.md"]
