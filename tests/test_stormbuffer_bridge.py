"""Import into and export from a real memosite vault: mappings and lossless round trips."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from memosite.demo import write_demo_vault
from memosite.errors import InvalidTransition, SafetyViolation
from memosite.lookup import get_record
from memosite.recordfile import read_record
from memosite.store import upsert_record
from memosite.stormbuffer.bridge import export_project, import_store
from memosite.stormbuffer.codec import parse_record
from memosite.stormbuffer.model import Source
from memosite.stormbuffer.store import Store
from memosite.vault import Vault

NOW = datetime(2026, 8, 5, 20, 9, tzinfo=UTC)
CORPUS = Path(__file__).parent / "corpus" / "stormbuffer"


def memosite_files(vault: Vault, project: str) -> dict[str, Any]:
    """relative path → (frontmatter without project, body) for the kinds that export."""
    result = {}
    for path in vault.iter_record_files(project):
        record = read_record(path)
        if record.kind in ("decision", "spec", "state", "plan", "trap"):
            frontmatter = {k: v for k, v in record.frontmatter.items() if k != "project"}
            result[path.relative_to(vault.project_dir(project)).as_posix()] = (frontmatter, record.body)
    return result


def store_files(store: Store) -> dict[str, bytes]:
    return {
        p.relative_to(store.path).as_posix(): p.read_bytes()
        for p in store.path.rglob("*")
        if p.is_file() and not p.relative_to(store.path).as_posix().startswith("locks/")
    }


@pytest.fixture
def store(tmp_path: Path) -> Store:
    store = Store.init(tmp_path / "sb" / ".sbuf", name="Shop")
    old = store.add(
        kind="decision", title="Search with LIKE", body="LIKE queries.\n", access="human", tags=["search"], now=NOW
    )
    store.add(
        kind="decision",
        title="Full-text search",
        body="Use tsvector.\n\n  trailing  \n",
        access="human",
        aliases=["fts"],
        supersedes=old.record.id,
        now=NOW,
        sources=[
            Source(
                kind="issue",
                reference="#7",
                actor="ana",
                revision="abc123",
                observed_at="2026-08-05T20:09:00-05:00",
                content_hash="sha256:00ff",
            )
        ],
    )
    store.add(kind="fact", title="Python 3.11", body="Runtime is 3.11.\n", access="agent", now=NOW)
    procedure = store.add(kind="procedure", title="Release", body="1. tag\n2. push\n", access="human", now=NOW)
    store.archive(procedure.record.id, now=NOW)
    store.add(kind="checkpoint", title="Checkout v2", body="Half done.\n", access="human", now=NOW)
    return store


def test_import_maps_kinds_and_statuses(vault: Vault, store: Store) -> None:
    result = import_store(vault, "demo", store)
    by_title = {}
    for item in result.records:
        found = get_record(vault, "demo", record_id=item.id)
        by_title[found.frontmatter["title"]] = found
    assert {t: (r.kind, r.frontmatter["status"]) for t, r in by_title.items()} == {
        "Search with LIKE": ("decision", "superseded"),
        "Full-text search": ("decision", "active"),
        "Python 3.11": ("spec", "paused"),
        "Release": ("spec", "archived"),
        "Checkout v2": ("state", "active"),
    }
    fact = by_title["Python 3.11"].frontmatter["stormbuffer"]
    assert fact["kind"] == "fact" and fact["access"] == "agent"
    newer = by_title["Full-text search"]
    assert by_title["Search with LIKE"].frontmatter["supersededBy"] == newer.id
    assert newer.frontmatter["stormbuffer"]["sources"][0]["observed_at"] == "2026-08-05T20:09:00-05:00"
    assert newer.body == "Use tsvector.\n\n  trailing  \n"


def test_stormbuffer_to_vault_to_stormbuffer_loses_nothing(vault: Vault, store: Store, tmp_path: Path) -> None:
    # A record exactly as sbuf renders it, file named by its id: it must come back byte for byte.
    assert store.info.project_id is not None
    rendered = (CORPUS / "valid" / "rendered-by-sbuf.md").read_text(encoding="utf-8")
    (store.path / "records" / "0198c0de-1000-7000-8000-000000000008.md").write_text(
        rendered.replace("project:ledger", store.scope), encoding="utf-8"
    )
    before = store_files(store)
    import_store(vault, "demo", store)
    again = export_project(vault, "demo", tmp_path / "copy" / ".sbuf")
    copy = Store.open(tmp_path / "copy" / ".sbuf")
    assert again.store_created
    assert copy.info.project_id == store.info.project_id  # identity follows the records' scopes
    after = store_files(copy)
    assert after.pop("store.toml") != before.pop("store.toml")  # same id, the memosite project's name
    assert after == before
    assert not (copy.path / "memosite").exists()  # nothing memosite-only to remember


@pytest.mark.slow
def test_vault_to_stormbuffer_to_vault_loses_nothing(vault: Vault, tmp_path: Path) -> None:
    write_demo_vault(vault)
    result = export_project(vault, "acme-shop", tmp_path / "out")
    assert {s.kind for s in result.skipped} == {"log", "scratch", "review", "prompt", "session"}
    import_store(vault, "copy", Store.open(tmp_path / "out"))
    original, copied = memosite_files(vault, "acme-shop"), memosite_files(vault, "copy")
    assert original.keys() == copied.keys()
    for name, (frontmatter, body) in original.items():
        copied_frontmatter, copied_body = copied[name]
        assert copied_body == body, name
        assert {k: v for k, v in copied_frontmatter.items() if k != "stormbuffer"} == frontmatter, name
    # The copy remembers its Stormbuffer ids, so exporting it updates the same records.
    second = export_project(vault, "copy", tmp_path / "out")
    assert second.records == [] and second.unchanged == len(result.records)


def test_memosite_records_map_to_stormbuffer_kinds_and_statuses(vault: Vault, tmp_path: Path) -> None:
    write_demo_vault(vault)
    export_project(vault, "acme-shop", tmp_path / "out")
    records = {
        r.record.sources[0].reference.rsplit("/", 2)[-2:][1]: r.record for r in Store.open(tmp_path / "out").records()
    }
    assert records["search-with-like"].status == "superseded"
    assert records["search-full-text"].supersedes == (records["search-with-like"].id,)
    assert records["jobs-queue"].status == "candidate"  # paused
    assert records["image-cdn"].kind == "checkpoint" and records["image-cdn"].status == "archived"  # shipped plan
    assert records["checkout-v2"].kind == "procedure"
    assert records["checkout-v2-state"].kind == "checkpoint"
    assert records["payment-retries-must-carry-an-idempotency-key"].kind == "fact"


def test_a_spec_marked_as_fact_exports_as_fact(vault: Vault, tmp_path: Path) -> None:
    upsert_record(
        vault,
        "demo",
        kind="spec",
        body="Prices are in cents.\n",
        slug="cents",
        frontmatter={"title": "Prices in cents", "stormbuffer": {"kind": "fact"}},
    )
    export_project(vault, "demo", tmp_path / "out")
    (record,) = [r.record for r in Store.open(tmp_path / "out").records()]
    assert record.kind == "fact"


def test_a_promotion_in_the_store_wins_over_the_sidecar(vault: Vault, tmp_path: Path) -> None:
    write_demo_vault(vault)
    export_project(vault, "acme-shop", tmp_path / "out")
    out = Store.open(tmp_path / "out")
    (queued,) = [r for r in out.records() if r.record.sources[0].reference.endswith("/jobs-queue")]
    out.promote(queued.record.id)
    import_store(vault, "copy", out)
    assert get_record(vault, "copy", record_id="jobs-queue").frontmatter["status"] == "active"


def test_export_refuses_a_status_the_store_lifecycle_forbids(vault: Vault, store: Store) -> None:
    import_store(vault, "demo", store)
    superseded = next(r for r in store.records() if r.record.status == "superseded")
    # memosite itself refuses to revive a superseded record; a person editing the file can.
    path = vault.record_path("demo", "decision", superseded.record.key)
    path.write_text(path.read_text(encoding="utf-8").replace("status: superseded", "status: active"), encoding="utf-8")
    before = store_files(store)
    with pytest.raises(InvalidTransition, match="superseded→active"):
        export_project(vault, "demo", store.path)
    assert store_files(store) == before


def test_secrets_block_import_and_export_before_any_write(vault: Vault, store: Store, tmp_path: Path) -> None:
    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    item = next(iter(store.records()))
    item.path.write_text(item.path.read_text(encoding="utf-8") + token + "\n", encoding="utf-8")
    with pytest.raises(SafetyViolation):
        import_store(vault, "demo", store)
    assert list(vault.iter_record_files("demo")) == []

    write_demo_vault(vault)
    path = next(p for p in vault.iter_record_files("acme-shop") if "/decisions/" in p.as_posix())
    path.write_text(path.read_text(encoding="utf-8") + token + "\n", encoding="utf-8")
    with pytest.raises(SafetyViolation):
        export_project(vault, "acme-shop", tmp_path / "leak")
    assert not list((tmp_path / "leak" / "records").rglob("*.md"))


def test_exported_files_pass_strict_parsing(vault: Vault, tmp_path: Path) -> None:
    write_demo_vault(vault)
    export_project(vault, "acme-shop", tmp_path / "out")
    for path in (tmp_path / "out" / "records").rglob("*.md"):
        record = parse_record(path.read_text(encoding="utf-8"), path)
        assert path.stem == record.key and path.parent.name == "records"
        assert record.scope == Store.open(tmp_path / "out").scope
        assert all(source.actor for source in record.sources)


def test_export_skips_what_stormbuffer_would_refuse_and_fills_in_actors(vault: Vault, tmp_path: Path) -> None:
    target = Store.init(tmp_path / "out" / ".sbuf", name="Out")
    upsert_record(
        vault, "demo", kind="decision", body="Use UTC everywhere.\n", slug="utc",
        frontmatter={"title": "  Use UTC\u0007 ", "tags": [" time ", "time", "\u3000"],
                     "stormbuffer": {"scope": "global", "id": "0198c0de-9000-7000-8000-000000000001"}},
    )  # fmt: skip
    upsert_record(
        vault, "demo", kind="decision", body="Prices are integer cents.\n", slug="cents",
        frontmatter={"title": "Prices in cents — Цены", "tags": [" money "],
                     "stormbuffer": {"sources": [{"kind": "document", "reference": "docs/money.md"}]}},
    )  # fmt: skip
    result = export_project(vault, "demo", target.path)
    assert [(s.id, s.reason) for s in result.skipped if s.kind == "decision"] == [
        ("utc", "a global-scope record goes to the global store (--global)")
    ]
    (written,) = [item.record for item in target.records()]
    assert written.title == "Prices in cents — Цены" and written.tags == ("money",)
    assert [(s.reference, s.actor) for s in written.sources] == [("docs/money.md", "agent")]
    assert written.scope == target.scope


def test_export_to_the_global_store_writes_global_records(vault: Vault, tmp_path: Path) -> None:
    target = Store.init(tmp_path / "data" / "stormbuffer", global_store=True)
    upsert_record(vault, "demo", kind="decision", body="Use UTC.\n", slug="utc", frontmatter={"title": "UTC"})
    result = export_project(vault, "demo", target.path)
    assert result.project_id is None and len(result.records) == 1
    assert [item.record.scope for item in target.records()] == ["global"]


def test_records_with_other_uuid_spellings_import_under_their_canonical_id(vault: Vault, tmp_path: Path) -> None:
    store = Store.init(tmp_path / "spell" / ".sbuf")
    older = store.add(kind="fact", title="Older", body="older\n", access="human", now=NOW).record
    text = (CORPUS / "valid" / "id-unhyphenated.md").read_text(encoding="utf-8")
    text = text.replace("project:ledger", store.scope).replace(
        "{0198c0de-1000-7000-8000-000000000002}", older.id.upper()
    )
    (store.path / "records" / "spelled.md").write_text(text, encoding="utf-8")
    result = import_store(vault, "demo", store)
    ids = {item.id for item in result.records}
    assert "0198c0de-1000-7000-8000-000000000005" in ids
    found = get_record(vault, "demo", record_id="0198c0de-1000-7000-8000-000000000005")
    assert found.frontmatter["stormbuffer"]["id"] == "0198C0DE100070008000000000000005"
    before = (store.path / "records" / "spelled.md").read_bytes()
    exported = export_project(vault, "demo", store.path)
    assert (exported.records, exported.unchanged) == ([], 2)  # same record, whatever its spelling
    assert (store.path / "records" / "spelled.md").read_bytes() == before
    assert sorted(p.name for p in (store.path / "records").glob("*.md")) == sorted([f"{older.key}.md", "spelled.md"])
