"""``memosite import adr``: real decision records of three formats (adr-tools' Nygard layout from
alphagov/govuk-infrastructure, MADR from adr/madr, log4brains from thomvaill/log4brains; see each
folder's SOURCE.md), and hand-made edge cases."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from import_support import corpus_copy, records

from memosite.importers.adr import map_status, record_from_text
from memosite.importers.source import Skipped


def test_nygard_records_keep_their_number_title_date_and_status(run_cli: Any, vault_dir: Path, tmp_path: Path) -> None:
    folder = corpus_copy("adr-nygard", tmp_path)
    outcome = run_cli("import", "adr", str(folder), "--json")
    assert outcome.exit_code == 0, outcome.stderr
    assert outcome.json()["created"] == 5
    found = records(vault_dir, "decisions")
    first = found["adr-0001-record-architecture-decisions"]
    assert first.frontmatter["title"] == "Record architecture decisions"  # "1. " numbering left out
    assert first.frontmatter["created"] == "2021-08-10T00:00:00.000Z"
    assert first.status == "active" and first.frontmatter["adrStatus"] == "Accepted"
    assert first.frontmatter["source"] == "imported"
    assert first.frontmatter["sourcePath"] == "adr-nygard/0001-record-architecture-decisions.md"
    assert first.frontmatter["sourceAnchor"] == "ADR 0001"
    deprecated = next(r for r in found.values() if r.frontmatter["sourceAnchor"] == "ADR 0007")
    assert deprecated.status == "archived" and deprecated.frontmatter["archivedReason"] == "deprecated"
    assert "## Context" in first.body and not first.body.startswith("# 1.")


def test_madr_front_matter_status_and_an_unknown_status(run_cli: Any, vault_dir: Path, tmp_path: Path) -> None:
    assert run_cli("import", "adr", str(corpus_copy("adr-madr", tmp_path))).exit_code == 0
    found = {r.frontmatter["sourceAnchor"]: r for r in records(vault_dir, "decisions").values()}
    on_hold = found["ADR 0003"]
    assert on_hold.frontmatter["adrStatus"] == "on hold" and on_hold.status == "paused"
    assert on_hold.frontmatter["title"] == "Write Own MADR Tooling"
    # No status written at all: memosite does not claim the decision was accepted.
    assert found["ADR 0013"].status == "paused" and "adrStatus" not in found["ADR 0013"].frontmatter


def test_log4brains_superseded_by_links_become_supersedes(run_cli: Any, vault_dir: Path, tmp_path: Path) -> None:
    assert run_cli("import", "adr", str(corpus_copy("adr-log4brains", tmp_path))).exit_code == 0
    found = records(vault_dir, "decisions")
    old = found["adr-20200926-use-the-adr-number-as-its-unique-id"]
    new = found["adr-20201016-use-the-adr-slug-as-its-unique-id"]
    assert old.status == "superseded" and old.frontmatter["supersededBy"] == new.id
    assert new.frontmatter["supersedes"] == old.id and new.status == "active"
    assert old.frontmatter["created"] == "2020-09-26T00:00:00.000Z"  # the date, not the import's
    assert found["adr-20201029-rejected-adr"].frontmatter["archivedReason"] == "rejected"
    assert found["adr-20201030-draft-adr"].status == "paused"
    assert found["adr-20200102-adr-without-status"].frontmatter["tags"] == ["adr", "foo"]
    decisions_view = (vault_dir / "projects/demo/DECISIONS.md").read_text(encoding="utf-8")
    assert "Use the ADR slug as its unique ID" in decisions_view


def test_nygard_supersedes_lines_in_both_records(run_cli: Any, vault_dir: Path, tmp_path: Path) -> None:
    folder = tmp_path / "doc" / "adr"
    folder.mkdir(parents=True)
    (folder / "0001-use-sqlite.md").write_text(
        "# 1. Use SQLite\n\nDate: 2020-01-01\n\n## Status\n\nSuperseded by [2. Use Postgres](0002-use-postgres.md)"
        "\n\n## Context\n\nOne file.\n",
        encoding="utf-8",
    )
    (folder / "0002-use-postgres.md").write_text(
        "# 2. Use Postgres\n\nDate: 2020-02-01\n\n## Status\n\nAccepted\n\n"
        "Supersedes [1. Use SQLite](0001-use-sqlite.md)\n\n## Context\n\nMany writers.\n",
        encoding="utf-8",
    )
    assert run_cli("import", "adr", str(tmp_path)).exit_code == 0  # the repository root: doc/adr is found
    found = records(vault_dir, "decisions")
    assert found["adr-0001-use-sqlite"].frontmatter["supersededBy"] == "adr-0002-use-postgres"
    assert found["adr-0002-use-postgres"].frontmatter["supersedes"] == "adr-0001-use-sqlite"
    assert found["adr-0001-use-sqlite"].frontmatter["updated"] == "2020-01-01T00:00:00.000Z"


@pytest.mark.parametrize(
    ("written", "status", "reason"),
    [
        ("Accepted", "active", None),
        ("**Approved** on 2021-01-01", "active", None),
        ("proposed", "paused", None),
        ("Draft", "paused", None),
        ("Deprecated (no superseding ADR)", "archived", "deprecated"),
        ("Rejected", "archived", "rejected"),
        ("superseded by [ADR-0005](0005-example.md)", "superseded", None),
        ("Experimental", "paused", None),
        (None, "paused", None),
    ],
)
def test_adr_status_maps_onto_memosite_status(written: str | None, status: str, reason: str | None) -> None:
    assert map_status(written) == (status, reason)


def test_hand_made_edge_cases_crlf_bom_non_latin_heading_only(run_cli: Any, vault_dir: Path, tmp_path: Path) -> None:
    folder = tmp_path / "adr"
    folder.mkdir()
    (folder / "0001-crlf.md").write_bytes(
        "\ufeff# 1. Ошибки повторной оплаты\r\n\r\nDate: 2022-05-06\r\n\r\n## Status\r\n\r\nAccepted\r\n\r\n"
        "## Context\r\n\r\nПовтор списывает дважды.\r\n".encode()
    )
    (folder / "0002-cjk.md").write_text(
        "# 数据库迁移策略\n\n* Status: accepted\n* Date: 2023-01-02\n\n## 背景\n\n分批迁移。\n", encoding="utf-8"
    )
    (folder / "0003-heading-only.md").write_text("# 3. Nothing yet\n", encoding="utf-8")
    (folder / "0004-no-status.md").write_text("# 4. Cache sessions\n\nWe cache sessions in Redis.\n", encoding="utf-8")
    (folder / "0005-arabic-emoji.md").write_text(
        "---\nstatus: superseded by ADR-0004\ndate: 2024-03-04\n---\n# قرار التخزين المؤقت 🚀\n\nنص.\n",
        encoding="utf-8",
    )
    outcome = run_cli("import", "adr", str(folder), "--json")
    assert outcome.exit_code == 0, outcome.stdout + outcome.stderr
    data = outcome.json()
    assert [s["sourcePath"] for s in data["skipped"]] == ["adr/0003-heading-only.md"]
    found = {r.frontmatter["sourceAnchor"]: r for r in records(vault_dir, "decisions").values()}
    crlf = found["ADR 0001"]
    assert crlf.frontmatter["title"] == "Ошибки повторной оплаты" and "\r" not in crlf.body
    assert crlf.frontmatter["created"] == "2022-05-06T00:00:00.000Z" and crlf.status == "active"
    assert found["ADR 0002"].frontmatter["title"] == "数据库迁移策略" and found["ADR 0002"].status == "active"
    assert found["ADR 0004"].status == "paused"
    arabic = found["ADR 0005"]
    assert arabic.status == "superseded" and arabic.frontmatter["supersededBy"] == found["ADR 0004"].id
    assert all(path.name.isascii() for path in (vault_dir / "projects/demo/decisions").glob("*.md"))


def test_a_superseding_link_to_itself_is_ignored() -> None:
    found = record_from_text("# 1. A\n\n## Status\n\nSuperseded by [1. A](0001-a.md)\n", "adr/0001-a.md")
    assert not isinstance(found, type(None))
    assert getattr(found, "superseded_by", None) is None


def test_a_superseded_by_line_alone_still_gives_the_newer_record_its_supersedes(
    run_cli: Any, vault_dir: Path, tmp_path: Path
) -> None:
    # Only the old ADR was edited by hand ("Superseded by …"); the new one says nothing of it.
    folder = tmp_path / "doc" / "adr"
    folder.mkdir(parents=True)
    (folder / "0005-help-comments.md").write_text(
        "# 5. Help comments\n\nDate: 2016-02-13\n\n## Status\n\nSuperseded by [9. Help scripts](0009-help-scripts.md)"
        "\n\n## Decision\n\nWrite usage in comments.\n",
        encoding="utf-8",
    )
    (folder / "0009-help-scripts.md").write_text(
        "# 9. Help scripts\n\nDate: 2018-06-26\n\n## Status\n\nAccepted\n\n## Decision\n\nHelp in scripts.\n",
        encoding="utf-8",
    )
    assert run_cli("import", "adr", str(folder)).exit_code == 0
    found = records(vault_dir, "decisions")
    assert found["adr-0005-help-comments"].status == "superseded"
    assert found["adr-0005-help-comments"].frontmatter["supersededBy"] == "adr-0009-help-scripts"
    assert found["adr-0009-help-scripts"].frontmatter["supersedes"] == "adr-0005-help-comments"
    assert found["adr-0009-help-scripts"].status == "active"
    again = run_cli("import", "adr", str(folder), "--json").json()
    assert (again["created"], again["updated"], again["unchanged"]) == (0, 0, 2)


def test_a_folder_imports_only_files_named_as_adr_tools_name_them(
    run_cli: Any, vault_dir: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "decisions"
    folder.mkdir()
    adr = "# {0}\n\n## Status\n\nAccepted\n\n## Decision\n\n{0}.\n"
    for name in ("0001-use-go.md", "ADR-007-use-grpc.md", "20201016-use-slugs.md"):
        (folder / name).write_text(adr.format(name), encoding="utf-8")
    for name in ("notes.md", "index.md", "README.md", "how-we-write-adrs.md", "adr-template.md"):
        (folder / name).write_text(adr.format(name), encoding="utf-8")
    outcome = run_cli("import", "adr", str(folder), "--json")
    assert outcome.exit_code == 0, outcome.stderr
    anchors = sorted(r["sourceAnchor"] for r in outcome.json()["records"])
    assert anchors == ["ADR 0001", "ADR 0007", "ADR 20201016-use-slugs"]
    assert outcome.json()["skipped"] == [
        {"sourcePath": f"decisions/{name}", "reason": "not named as an ADR (0001-… or 20201016-…)"}
        for name in ("how-we-write-adrs.md", "notes.md")
    ]


def test_a_title_kept_in_front_matter_loses_its_number_as_a_heading_does() -> None:
    # Docusaurus-style ADRs (id and title up in the front matter, no # heading).
    text = (
        "---\nid: drop-collection\ntitle: 4. Drop the MASH collection\n---\n\n"
        "Date: 2022-01-24\n\n## Status\n\nAccepted\n"
    )
    record = record_from_text(text, "docs/decisions/0004-drop-collection.md")
    assert not isinstance(record, Skipped)
    assert record.title == "Drop the MASH collection" and record.fields["created"] == "2022-01-24"
