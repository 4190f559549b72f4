"""``memosite import basic-memory``: a folder of basic-memory notes, hand-made in its documented
format (see tests/corpus/import/basic-memory/SOURCE.md): frontmatter and observations are kept."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from import_support import corpus_copy, records


def test_notes_keep_their_frontmatter_and_observations(run_cli: Any, vault_dir: Path, tmp_path: Path) -> None:
    notes = corpus_copy("basic-memory", tmp_path) / "notes"
    outcome = run_cli("import", "basic-memory", str(notes), "--json")
    assert outcome.exit_code == 0, outcome.stderr
    found = {r.frontmatter["title"]: r for r in records(vault_dir).values()}
    search = found["Search Design"]
    assert search.kind == "spec" and search.frontmatter["noteType"] == "note"
    assert search.frontmatter["permalink"] == "search-design"
    assert search.frontmatter["tags"][:3] == ["basic-memory", "search", "sqlite"]
    assert {"decision", "technique", "problem"} <= set(search.frontmatter["tags"])  # observation categories
    assert "- [decision] Use SQLite FTS5 for full-text search #sqlite" in search.body
    assert "- implements [[Search Spec]]" in search.body
    assert found["Payment retries double the charge"].kind == "trap"
    russian = found["Миграция счёта"]
    assert russian.kind == "decision" and russian.id.isascii()


def test_auto_finds_basic_memory_notes_and_search_finds_them(run_cli: Any, vault_dir: Path, tmp_path: Path) -> None:
    notes = corpus_copy("basic-memory", tmp_path) / "notes"
    outcome = run_cli("import", "auto", str(notes), "--json")
    assert outcome.exit_code == 0 and outcome.json()["format"] == "basic-memory"
    hits = run_cli("search", "idempotency", "--json").json()["results"]
    assert [hit["title"] for hit in hits] == ["Payment retries double the charge"]
