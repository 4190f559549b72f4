"""``memosite import agents-md`` and ``cursor-rules``: a real AGENTS.md (openai/agents.md) and real
Cursor rules (PatrickJS/awesome-cursorrules; see their SOURCE.md), and hand-made edge cases."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from import_support import corpus_copy, records

from memosite.importers.agents_md import kind_for_heading, records_from_text


def test_a_real_agents_md_becomes_one_record_per_section(run_cli: Any, vault_dir: Path, tmp_path: Path) -> None:
    folder = corpus_copy("agents-md", tmp_path)
    outcome = run_cli("import", "agents-md", str(folder / "AGENTS.md"), "--json")
    assert outcome.exit_code == 0, outcome.stderr
    found = {r.frontmatter["sourceAnchor"]: r for r in records(vault_dir, "specs").values()}
    assert set(found) == {
        "(introduction)",
        "1. Use the Development Server, not npm run build",
        "2. Keep Dependencies in Sync",
        "3. Coding Conventions",
        "4. Useful Commands Recap",
    }
    conventions = found["3. Coding Conventions"]
    assert conventions.frontmatter["sourcePath"] == "agents-md/AGENTS.md"
    assert conventions.body.startswith("* Prefer TypeScript")
    assert "| `npm run dev`" in found["4. Useful Commands Recap"].body  # the table kept as written


def test_pitfall_sections_become_one_trap_per_rule(run_cli: Any, vault_dir: Path, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "services" / "billing").mkdir(parents=True)
    (repo / "AGENTS.md").write_text(
        "# Shop\n\n## Testing\n\nRun `pytest -x`.\n\n## Gotchas\n\n- Never retry a charge without an idempotency"
        " key.\n  It double-charges.\n- Do not edit generated files in `gen/`.\n\n## Architecture decisions\n\n"
        "We chose Postgres.\n\n## Empty\n",
        encoding="utf-8",
    )
    (repo / "services" / "billing" / "CLAUDE.md").write_text("## Conventions\n\nAmounts are cents.\n", encoding="utf-8")
    outcome = run_cli("import", "agents-md", str(repo), "--json")
    assert outcome.exit_code == 0, outcome.stderr
    traps = records(vault_dir, "traps")
    assert sorted(t.frontmatter["sourceAnchor"] for t in traps.values()) == ["Gotchas › 1", "Gotchas › 2"]
    first = next(t for t in traps.values() if t.frontmatter["sourceAnchor"] == "Gotchas › 1")
    assert first.frontmatter["title"] == "Never retry a charge without an idempotency key."
    assert first.body == "Never retry a charge without an idempotency key.\nIt double-charges.\n"
    assert records(vault_dir, "decisions")  # "Architecture decisions" is a decision
    billing = next(r for r in records(vault_dir, "specs").values() if "services/" in r.frontmatter["sourcePath"])
    assert billing.frontmatter["pathPatterns"] == ["services/billing/**"]
    assert "Empty" in outcome.json()["skipped"][0]["reason"]
    traps_view = (vault_dir / "projects/demo/TRAPS.md").read_text(encoding="utf-8")
    assert "Never retry a charge" in traps_view


def test_headings_in_many_scripts_choose_a_kind_and_an_ascii_slug(
    run_cli: Any, vault_dir: Path, tmp_path: Path
) -> None:
    source = tmp_path / "CLAUDE.md"
    source.write_text(
        "## Подводные камни\n\n- Не запускайте миграции вручную.\n\n## 测试\n\n运行 `make test`。\n\n"
        "## Pièges à éviter\n\n- Ne jamais committer `.env`.\n\n## قواعد 🚀\n\nاكتب الاختبارات أولاً.\n",
        encoding="utf-8",
    )
    assert run_cli("import", "agents-md", str(source)).exit_code == 0
    everything = records(vault_dir)
    anchors = {r.frontmatter["sourceAnchor"]: r.kind for r in everything.values()}
    assert anchors["测试"] == "spec" and anchors["قواعد 🚀"] == "spec"
    assert anchors["Pièges à éviter › 1"] == "trap"
    assert all(path.name.isascii() for path in (vault_dir / "projects/demo").glob("*/*.md"))


def test_heading_words_say_the_kind() -> None:
    assert kind_for_heading("Known issues") == "trap"
    assert kind_for_heading("Don’t do this") == "trap"
    assert kind_for_heading("Architecture") == "decision"
    assert kind_for_heading("Roadmap") == "plan"
    assert kind_for_heading("Code style") == "spec"
    assert kind_for_heading("Neverland build") == "spec" or kind_for_heading("Neverland build") == "trap"


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.sampled_from(["# T", "## Gotchas", "## Тесты", "### sub", "```", "- rule", "  more", "", "text 🚀"]),
            st.text(max_size=20),
        ),
        max_size=30,
    ).map("\n".join)
)
def test_any_instruction_text_gives_records_with_distinct_anchors_and_text(text: str) -> None:
    found, _ = records_from_text(text, "AGENTS.md")
    anchors = [record.anchor for record in found]
    assert len(anchors) == len(set(anchors))
    assert all(record.body.strip() for record in found)


def test_real_cursor_rules_keep_their_globs_as_path_patterns(run_cli: Any, vault_dir: Path, tmp_path: Path) -> None:
    repo = corpus_copy("cursor-rules", tmp_path)
    outcome = run_cli("import", "cursor-rules", str(repo), "--json")
    assert outcome.exit_code == 0, outcome.stderr
    found = {r.frontmatter["sourcePath"].rsplit("/", 1)[-1]: r for r in records(vault_dir, "specs").values()}
    assert set(found) == {"clean-code.mdc", "codequality.mdc", "cpp.mdc"}
    # cpp.mdc writes its globs unquoted, which is no YAML: read line by line all the same.
    assert found["cpp.mdc"].frontmatter["pathPatterns"][:3] == ["**/*.c", "**/*.cpp", "**/*.h"]
    assert found["clean-code.mdc"].frontmatter["pathPatterns"] == ["**/*"]
    assert found["codequality.mdc"].frontmatter["title"] == "Code Quality Guidelines"
    assert "cursor-rule" in found["cpp.mdc"].frontmatter["tags"]


def test_an_always_applied_rule_and_a_rule_without_header(run_cli: Any, vault_dir: Path, tmp_path: Path) -> None:
    rules = tmp_path / ".cursor" / "rules"
    rules.mkdir(parents=True)
    (rules / "always.mdc").write_text("---\nalwaysApply: true\n---\n# Always\n\nUse tabs.\n", encoding="utf-8")
    (rules / "plain.mdc").write_text("Prefer composition.\n", encoding="utf-8")
    (rules / "empty.mdc").write_text("---\ndescription: nothing\n---\n", encoding="utf-8")
    outcome = run_cli("import", "auto", str(tmp_path), "--json")
    assert outcome.exit_code == 0, outcome.stderr
    found = {r.frontmatter["title"]: r for r in records(vault_dir, "specs").values()}
    assert "always-apply" in found["Always"].frontmatter["tags"]
    assert "plain" in found and "pathPatterns" not in found["plain"].frontmatter
    assert [s["sourcePath"].split("/", 1)[1] for s in outcome.json()["skipped"]] == [".cursor/rules/empty.mdc"]


def test_the_one_file_rules_of_older_cursor_versions_are_found_and_imported(
    run_cli: Any, vault_dir: Path, tmp_path: Path
) -> None:
    repo = corpus_copy("cursor-rules-legacy", tmp_path)  # C2FO/vfs: .cursor/rules is a file there
    for named in (repo, repo / ".cursor" / "rules"):
        outcome = run_cli("import", "auto", str(named), "--dry-run", "--json")
        assert outcome.exit_code == 0, outcome.stderr
        assert outcome.json()["format"] == "cursor-rules" and outcome.json()["created"] == 1
    assert run_cli("import", "cursor-rules", str(repo)).exit_code == 0
    (rule,) = records(vault_dir, "specs").values()
    assert rule.frontmatter["sourcePath"] == "cursor-rules-legacy/.cursor/rules"
    assert rule.body.startswith("Follow all guidelines in AGENTS.md.")
    (repo / ".cursorrules").write_text("Prefer table-driven tests.\n", encoding="utf-8")
    again = run_cli("import", "cursor-rules", str(repo), "--json").json()
    assert (again["created"], again["unchanged"]) == (1, 1)


def test_a_claude_md_that_only_imports_agents_md_adds_no_record_of_its_own(
    run_cli: Any, vault_dir: Path, tmp_path: Path
) -> None:
    repo = corpus_copy("agents-md-aiida", tmp_path)  # aiidateam/aiida-core: CLAUDE.md is "@AGENTS.md"
    outcome = run_cli("import", "agents-md", str(repo), "--json")
    assert outcome.exit_code == 0, outcome.stderr
    assert {r["sourcePath"] for r in outcome.json()["records"]} == {"agents-md-aiida/AGENTS.md"}
    assert outcome.json()["skipped"] == [
        {
            "sourcePath": "agents-md-aiida/CLAUDE.md",
            "reason": "the introduction: it only imports @AGENTS.md (imported from there)",
        }
    ]
    assert outcome.json()["created"] == len(outcome.json()["records"]) >= 6


def test_a_table_of_contents_is_not_a_record(run_cli: Any, vault_dir: Path, tmp_path: Path) -> None:
    source = tmp_path / "repo" / "AGENTS.md"
    source.parent.mkdir()
    source.write_text(
        "# Guide\n\n## Table of Contents\n- [Testing](#testing)\n- [Style](#style)\n\n---\n\n"
        "## Testing\n\nRun `go test ./...`.\n\n## Style\n\n- [Effective Go](https://go.dev/doc/effective_go)\n",
        encoding="utf-8",
    )
    outcome = run_cli("import", "agents-md", str(source), "--json")
    assert outcome.exit_code == 0, outcome.stderr
    assert [r["sourceAnchor"] for r in outcome.json()["records"]] == ["Testing", "Style"]  # a link out is text
    assert outcome.json()["skipped"] == [
        {"sourcePath": "repo/AGENTS.md", "reason": "section 'Table of Contents': a table of contents"}
    ]
