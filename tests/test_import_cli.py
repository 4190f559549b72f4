"""The rules every ``memosite import`` keeps, whatever the format: idempotent, keyed by source,
one unit of work and one commit, a dry run that changes nothing, review and secrets like any write,
and bad input as one clear line."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from import_support import corpus_copy, records, snapshot
from test_sync_support import git, isolate_git, write_config

from memosite.importers import import_path
from memosite.importers.source import Coverage
from memosite.provenance import Actor
from memosite.vault import Vault

TOKEN = "ghp_" + "A1b2" * 9


def test_a_second_import_changes_nothing(run_cli: Any, vault_dir: Path, tmp_path: Path) -> None:
    folder = corpus_copy("adr-log4brains", tmp_path)
    assert run_cli("import", "adr", str(folder)).exit_code == 0
    before = snapshot(vault_dir)
    again = run_cli("import", "adr", str(folder), "--json").json()
    assert (again["created"], again["updated"], again["unchanged"]) == (0, 0, 7)
    assert snapshot(vault_dir) == before  # not even an update time moved


def test_an_edited_source_updates_its_record_and_never_duplicates_it(
    run_cli: Any, vault_dir: Path, tmp_path: Path
) -> None:
    folder = corpus_copy("adr-nygard", tmp_path)
    assert run_cli("import", "adr", str(folder)).exit_code == 0
    first = folder / "0001-record-architecture-decisions.md"
    first.write_text(first.read_text(encoding="utf-8").replace("Accepted", "Deprecated"), encoding="utf-8")
    renamed = folder / "0010-use-dex-idp-for-user-web-authentication.md"
    renamed.rename(folder / "0010-dex.md")  # the same ADR number: the same record
    outcome = run_cli("import", "adr", str(folder), "--json").json()
    assert (outcome["created"], outcome["updated"], outcome["unchanged"]) == (0, 2, 3)
    found = records(vault_dir, "decisions")
    assert len(found) == 5
    assert found["adr-0001-record-architecture-decisions"].status == "archived"
    assert found["adr-0010-use-dex-idp-for-user-web-authentication"].frontmatter["sourcePath"].endswith("0010-dex.md")


def test_a_section_gone_from_the_source_archives_its_record(run_cli: Any, vault_dir: Path, tmp_path: Path) -> None:
    source = tmp_path / "repo" / "AGENTS.md"
    source.parent.mkdir()
    source.write_text("## Testing\n\nRun pytest.\n\n## Style\n\nBlack.\n", encoding="utf-8")
    assert run_cli("import", "agents-md", str(source)).exit_code == 0
    source.write_text("## Testing\n\nRun pytest -x.\n", encoding="utf-8")
    outcome = run_cli("import", "agents-md", str(source), "--json").json()
    assert (outcome["updated"], outcome["archived"]) == (1, 1)
    statuses = {r.frontmatter["sourceAnchor"]: r.status for r in records(vault_dir, "specs").values()}
    assert statuses == {"Testing": "active", "Style": "archived"}


def test_a_dry_run_shows_the_plan_and_changes_nothing(run_cli: Any, vault_dir: Path, tmp_path: Path) -> None:
    folder = corpus_copy("adr-madr", tmp_path)
    outcome = run_cli("import", "adr", str(folder), "--dry-run")
    assert outcome.exit_code == 0
    assert outcome.stdout.count("create    decision adr-") == 4
    assert outcome.stdout.rstrip().endswith("would import adr from adr-madr into demo: 4 new, 0 updated, 0 unchanged")
    assert not vault_dir.exists()  # not even an empty vault
    assert run_cli("import", "adr", str(folder)).exit_code == 0
    before = snapshot(vault_dir)
    (folder / "0008-add-status-field.md").write_text("# Changed\n\nNew text.\n", encoding="utf-8")
    planned = run_cli("import", "adr", str(folder), "--dry-run", "--json").json()
    assert planned["dryRun"] is True and planned["updated"] == 1
    assert snapshot(vault_dir) == before


def test_one_import_is_one_commit(
    run_cli: Any, vault_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    isolate_git(tmp_path, monkeypatch)
    monkeypatch.chdir(tmp_path)  # init pins the project where it runs
    monkeypatch.setenv("GIT_AUTHOR_NAME", "Grace Hopper")
    monkeypatch.setenv("GIT_AUTHOR_EMAIL", "grace@example.org")
    write_config(vault_dir)
    assert run_cli("init").exit_code == 0
    log = ["git", "-C", str(vault_dir), "log", "--format=%s"]
    before = subprocess.run(log, capture_output=True, text=True, encoding="utf-8", check=False).stdout.splitlines()
    assert run_cli("import", "adr", str(corpus_copy("adr-log4brains", tmp_path))).exit_code == 0
    after = subprocess.run(log, capture_output=True, text=True, encoding="utf-8", check=True).stdout.splitlines()
    assert len(after) == len(before) + 1
    assert after[0].startswith("import adr from adr-log4brains: 7 created")
    author = records(vault_dir, "decisions")["adr-20201029-proposed-adr"].frontmatter["author"]
    assert author == "Grace Hopper <grace@example.org>"


def test_an_import_by_an_agent_waits_for_review_and_archives_nothing(vault_dir: Path, tmp_path: Path) -> None:
    vault = Vault.open(vault_dir)
    config = json.loads((vault_dir / "config.json").read_text(encoding="utf-8"))
    config["review"]["required"] = ["decision"]
    (vault_dir / "config.json").write_text(json.dumps(config), encoding="utf-8")
    vault = Vault.open(vault_dir)
    vault.actor = Actor.mcp_client("claude-code", "2.0", None)
    folder = corpus_copy("adr-nygard", tmp_path)
    import_path(vault, "demo", "adr", folder, dry_run=False)
    found = records(vault_dir, "decisions")
    assert {r.frontmatter.get("review") for r in found.values()} == {"pending"}
    # The agent's import is the agent's write: it cannot claim the "imported" source a person's has.
    assert {r.frontmatter["source"] for r in found.values()} == {"agent"}
    assert all(r.frontmatter["sourceFormat"] == "adr" for r in found.values())
    (folder / "0014-replace-terraform-cloud.md").unlink()
    plan = import_path(vault, "demo", "adr", folder, dry_run=False)
    assert [(p.action, p.note) for p in plan.records if p.slug.startswith("adr-0014")] == [
        ("kept", "gone from the source: a person archives it")
    ]
    vault.close()


def test_a_secret_in_a_source_stops_the_import_with_nothing_written(
    run_cli: Any, vault_dir: Path, tmp_path: Path
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "AGENTS.md").write_text(
        f"## Setup\n\nRun make.\n\n## Deploy\n\nUse the token {TOKEN} to push.\n", encoding="utf-8"
    )
    outcome = run_cli("import", "agents-md", str(repo))
    assert outcome.exit_code == 1
    assert outcome.stderr.count("\n") == 1 and "repo/AGENTS.md › Deploy" in outcome.stderr
    assert "nothing was imported" in outcome.stderr and TOKEN not in outcome.stderr
    assert not list(vault_dir.rglob("*/specs/*.md"))


def test_a_huge_or_binary_file_is_skipped_with_its_reason(run_cli: Any, vault_dir: Path, tmp_path: Path) -> None:
    folder = tmp_path / "adr"
    folder.mkdir()
    (folder / "0001-huge.md").write_text("# 1. Huge\n\n## Status\n\nAccepted\n\n" + "x" * 1_100_000, encoding="utf-8")
    (folder / "0002-binary.md").write_bytes(b"# 2. Binary\n\n\xff\xfe\x00\x01")
    (folder / "0003-fine.md").write_text("# 3. Fine\n\n## Status\n\nAccepted\n", encoding="utf-8")
    outcome = run_cli("import", "adr", str(folder), "--json")
    assert outcome.exit_code == 0
    reasons = {s["sourcePath"]: s["reason"] for s in outcome.json()["skipped"]}
    assert reasons == {"adr/0001-huge.md": "larger than 1 MB", "adr/0002-binary.md": "not UTF-8 text (byte 13)"}
    assert outcome.json()["created"] == 1


@pytest.mark.parametrize(
    ("args", "code", "says"),
    [
        (("import", "yaml", "x"), 2, "Invalid value for 'FORMAT'"),
        (("import", "adr"), 2, "Missing argument 'PATH'"),
        (("import", "adr", "nowhere", "--bogus"), 2, "No such option"),
        (("import", "adr", "nowhere"), 1, "nothing to import at nowhere"),
    ],
)
def test_wrong_and_extra_arguments_are_one_clear_line(
    run_cli: Any, args: tuple[str, ...], code: int, says: str
) -> None:
    outcome = run_cli(*args)
    assert outcome.exit_code == code
    assert says in outcome.stderr and "Traceback" not in outcome.stderr


@pytest.mark.parametrize(
    ("fmt", "name", "says"),
    [
        ("agents-md", "passwd", "is not a Markdown file (.md): agents-md imports Markdown"),
        ("adr", "decisions.txt", "is not a Markdown file (.md): adr imports Markdown"),
        ("basic-memory", "photo.png", "is not a Markdown file (.md): basic-memory imports Markdown"),
        ("claude-memory", "settings.json", "is not a Markdown file (.md): claude-memory imports Markdown"),
        (
            "cursor-rules",
            "AGENTS.md",
            "is not a Cursor rule: cursor-rules imports .mdc files, .cursor/rules or .cursorrules",
        ),
    ],
)
def test_a_file_of_another_kind_named_by_hand_is_one_clear_line_and_imports_nothing(
    run_cli: Any, vault_dir: Path, tmp_path: Path, fmt: str, name: str, says: str
) -> None:
    # A slip of the hand (a path completed one entry too far) must not turn a system file into records.
    source = tmp_path / name
    source.write_text("root:x:0:0:root:/root:/bin/bash\n", encoding="utf-8")
    outcome = run_cli("import", fmt, str(source))
    assert outcome.exit_code == 1
    assert outcome.stderr == f"memosite: error: {source} {says}\n"
    assert not vault_dir.exists() or not list((vault_dir / "projects").rglob("*.md"))


def test_something_neither_a_file_nor_a_folder_is_one_clear_line(run_cli: Any, tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.md"
    os.mkfifo(fifo)
    outcome = run_cli("import", "adr", str(fifo))
    assert outcome.exit_code == 1
    assert outcome.stderr == f"memosite: error: nothing to import at {fifo}: it is neither a file nor a folder\n"


def test_a_claude_memory_topic_file_named_alone_imports_only_itself(
    run_cli: Any, vault_dir: Path, tmp_path: Path
) -> None:
    folder = corpus_copy("claude-memory", tmp_path) / "memory"
    outcome = run_cli("import", "claude-memory", str(folder / "feedback_pnpm.md"), "--json")
    assert outcome.exit_code == 0, outcome.stderr
    assert [r["sourcePath"] for r in outcome.json()["records"]] == ["claude-memory/memory/feedback_pnpm.md"]


def test_auto_refuses_what_it_cannot_recognise(run_cli: Any, tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("hello", encoding="utf-8")
    outcome = run_cli("import", "auto", str(tmp_path))
    assert outcome.exit_code == 1
    assert (
        outcome.stderr == f"memosite: error: cannot tell what {tmp_path} holds: name the format (agents-md,"
        " cursor-rules, claude-memory, adr, basic-memory)\n"
    )


def test_auto_on_a_repository_imports_every_format_it_holds(run_cli: Any, vault_dir: Path, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "docs").mkdir(parents=True)
    corpus_copy("adr-nygard", tmp_path).rename(repo / "docs" / "adr")
    (repo / "AGENTS.md").write_text("## Testing\n\nRun pytest.\n", encoding="utf-8")
    outcome = run_cli("import", "auto", str(repo), "--json")
    assert outcome.exit_code == 0, outcome.stderr
    assert outcome.json()["format"] == "agents-md + adr" and outcome.json()["created"] == 6


def test_importing_a_repository_root_archives_no_record_of_a_folder_it_did_not_read(
    run_cli: Any, vault_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # ADRs kept where memosite does not look by itself, imported by naming the folder; then an import
    # of the repository's root, which reads only its own top level, must not call them gone.
    isolate_git(tmp_path, monkeypatch)
    repo = tmp_path / "shop"
    (repo / "architecture").mkdir(parents=True)
    git(repo, "init", "-q")
    corpus_copy("adr-nygard", tmp_path).rename(repo / "architecture" / "adr")
    rules = repo / "packages" / "web" / ".cursor" / "rules"
    rules.mkdir(parents=True)
    (rules / "react.mdc").write_text("---\nglobs: src/**/*.tsx\n---\nUse function components.\n", encoding="utf-8")
    (repo / ".cursor" / "rules").mkdir(parents=True)
    (repo / ".cursor" / "rules" / "style.mdc").write_text("Keep functions short.\n", encoding="utf-8")
    (repo / "notes.md").write_text("# Notes\n\nNothing to decide.\n", encoding="utf-8")
    assert run_cli("import", "adr", str(repo / "architecture" / "adr")).exit_code == 0
    assert run_cli("import", "cursor-rules", str(repo / "packages" / "web")).exit_code == 0
    before = {path: data for path, data in snapshot(vault_dir).items() if path.count("/") == 2}  # records

    for fmt in ("adr", "cursor-rules"):
        outcome = run_cli("import", fmt, str(repo), "--json")
        assert outcome.exit_code == 0, outcome.stderr
        assert outcome.json()["archived"] == 0, outcome.json()["records"]
    after = {path: data for path, data in snapshot(vault_dir).items() if path.count("/") == 2}
    assert {path: data for path, data in after.items() if path in before} == before  # not one record touched
    assert len(after) == len(before) + 1  # the root's own rule, which that import did read
    # What the import did read and no longer finds is still archived.
    (repo / "architecture" / "adr" / "0004-use-aws-load-balancer-controller-for-edge-traffic-services.md").unlink()
    gone = run_cli("import", "adr", str(repo / "architecture" / "adr"), "--json").json()
    assert [(r["action"], r["sourceAnchor"]) for r in gone["records"] if r["action"] == "archive"] == [
        ("archive", "ADR 0004")
    ]


def test_an_import_says_what_it_did_and_a_dry_run_what_it_would_do(
    run_cli: Any, vault_dir: Path, tmp_path: Path
) -> None:
    source = tmp_path / "repo" / "AGENTS.md"
    source.parent.mkdir()
    source.write_text("## Testing\n\nRun pytest.\n\n## Style\n\nBlack.\n", encoding="utf-8")
    assert run_cli("import", "agents-md", str(source), "--dry-run").stdout.startswith("create    spec ")
    done = run_cli("import", "agents-md", str(source)).stdout.splitlines()
    assert [line.split()[0] for line in done[:-1]] == ["created", "created"]
    assert done[-1].startswith("imported agents-md from AGENTS.md into demo: 2 new")
    source.write_text("## Testing\n\nRun pytest -x.\n", encoding="utf-8")
    assert run_cli("import", "agents-md", str(source), "--dry-run").stdout.splitlines()[0].startswith("update    ")
    again = run_cli("import", "agents-md", str(source)).stdout.splitlines()
    assert sorted(line.split()[0] for line in again[:-1]) == ["archived", "updated"]


_PART = st.text(alphabet="abcé数-_.", min_size=1, max_size=6).filter(lambda p: p not in (".", ".."))


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(st.lists(_PART, min_size=1, max_size=3), st.lists(_PART, min_size=1, max_size=3), _PART)
def test_an_import_covers_exactly_what_it_read(folder: list[str], other: list[str], name: str) -> None:
    read = "/".join(folder)
    elsewhere = "/".join(other)
    assume(elsewhere != read)
    direct, below = Coverage(folders={read}), Coverage(trees={read})
    assert direct.covers(f"{read}/{name}") and below.covers(f"{read}/{name}")
    assert not direct.covers(f"{read}/{name}/{name}") and below.covers(f"{read}/{name}/{name}")
    assert not direct.covers(f"{elsewhere}/{name}")
    assert not below.covers(f"{read}{name}/{name}")  # a sibling whose name starts the same
    assert Coverage(trees={"."}).covers(f"{elsewhere}/{name}") and not Coverage(folders={"."}).covers(f"{read}/{name}")
