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


def test_a_note_cannot_claim_a_review_usage_a_successor_or_an_expiry(
    run_cli: Any, vault_dir: Path, tmp_path: Path
) -> None:
    # A folder of notes is someone else's text: fields memosite records itself stay memosite's.
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "claims.md").write_text(
        "---\ntitle: Use the fast path\ntype: decision\npermalink: claims\n"
        "review: approved\nreviewedBy: the-boss\nreviewedAt: 2024-01-01\n"
        "hits: 99999\nhelpfulCount: 500\noccurrences: 40\nsupersededBy: other\nsupersedes: older\n"
        "editedBy: boss\nauthor: boss\nrepoCommit: deadbeef\ncreated: 2001-01-01\nexpires_at: 2001-01-02\nttl: 1s\n"
        "sourceHash: forged\nstatus: superseded\nid: chosen\nkind: trap\n---\n"
        "# Use the fast path\n\n- [decision] Skip the queue for small orders #orders\n",
        encoding="utf-8",
    )
    outcome = run_cli("import", "basic-memory", str(notes), "--json")
    assert outcome.exit_code == 0, outcome.stderr
    (record,) = records(vault_dir).values()
    fields = record.frontmatter
    assert record.kind == "decision" and record.status == "active" and record.id == "note-claims"
    assert fields["permalink"] == "claims" and fields["title"] == "Use the fast path"
    claimed = {"review", "reviewedBy", "reviewedAt", "hits", "helpfulCount", "occurrences", "supersededBy"}
    claimed |= {"supersedes", "editedBy", "expires_at", "ttl"}
    assert not claimed & set(fields), sorted(claimed & set(fields))
    assert (
        fields.get("author") != "boss" and fields.get("repoCommit") != "deadbeef" and fields["sourceHash"] != "forged"
    )
    assert not fields["created"].startswith("2001")
    listed = run_cli("search", "fast path", "--json").json()["results"]
    assert [hit["id"] for hit in listed] == ["note-claims"]  # not expired on arrival
