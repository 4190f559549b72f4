"""The store's rules (seed 000: upsert, get, append, forget, restore), through the core API."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memosite.errors import InvalidArguments, InvalidRecord, InvalidTransition, RecordNotFound, SafetyViolation
from memosite.lookup import get_record
from memosite.recordfile import read_record
from memosite.schema import parse_record
from memosite.store import (
    append_event,
    forget_record,
    list_records,
    restore_record,
    upsert_record,
)
from memosite.vault import Vault

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
GH_TOKEN = "ghp_" + "Zq7xK2mP9w" * 4


def _file(vault: Vault, relative: str) -> Path:
    return vault.root / relative


# --- slug and id derivation ----------------------------------------------------------------


def test_slug_explicit_wins(vault: Vault) -> None:
    result = upsert_record(vault, "demo", kind="spec", body="b", slug="my-spec", frontmatter={"id": "x", "title": "T"})
    assert result.path == "projects/demo/specs/my-spec.md"
    assert result.id == "x"


def test_slug_falls_back_to_frontmatter_id(vault: Vault) -> None:
    result = upsert_record(vault, "demo", kind="spec", body="b", frontmatter={"id": "spec-42", "title": "T"})
    assert result.path.endswith("specs/spec-42.md") and result.id == "spec-42"


def test_slug_falls_back_to_slugified_title(vault: Vault) -> None:
    result = upsert_record(vault, "demo", kind="decision", body="b", frontmatter={"title": "Use SQLite, not Whoosh!"})
    assert result.path.endswith("decisions/use-sqlite-not-whoosh.md")


def test_id_defaults_to_slug(vault: Vault) -> None:
    result = upsert_record(vault, "demo", kind="spec", body="b", slug="s1")
    assert result.id == "s1"
    assert read_record(_file(vault, result.path)).frontmatter["id"] == "s1"


def test_slug_last_resort_is_kind_and_epoch_ms(vault: Vault) -> None:
    result = upsert_record(vault, "demo", kind="plan", body="b", now=NOW)
    assert result.id == f"plan-{int(NOW.timestamp() * 1000)}"


def test_prompt_slug_uses_session_and_turn(vault: Vault) -> None:
    result = upsert_record(vault, "demo", kind="prompt", body="b", frontmatter={"sessionId": "abc", "turn": 3})
    assert result.id == "prompt-abc-t3"


def test_prompt_without_session_or_title_gets_timestamp_and_random_hex(vault: Vault) -> None:
    result = upsert_record(vault, "demo", kind="prompt", body="b", now=NOW)
    assert re.fullmatch(rf"prompt-{int(NOW.timestamp() * 1000)}-[0-9a-f]{{6}}", result.id)
    titled = upsert_record(vault, "demo", kind="prompt", body="b", frontmatter={"title": "My prompt"}, now=NOW)
    assert titled.id == "my-prompt"


def test_session_without_session_id_gets_a_timestamped_slug(vault: Vault) -> None:
    result = upsert_record(vault, "demo", kind="session", body="b", frontmatter={"title": "Work"}, now=NOW)
    assert result.id == f"session-{int(NOW.timestamp() * 1000)}"


def test_session_slug_uses_session_id(vault: Vault) -> None:
    assert upsert_record(vault, "demo", kind="session", body="b", frontmatter={"sessionId": "s9"}).id == "session-s9"


@pytest.mark.parametrize("slug", ["../escape", "/etc/passwd", "a/b", "bad\x00slug", ".."])
def test_slug_can_never_leave_its_directory(vault: Vault, slug: str) -> None:
    with pytest.raises(InvalidArguments):
        upsert_record(vault, "demo", kind="trap", body="b", slug=slug)
    assert not any(vault.root.parent.glob("escape*"))


@pytest.mark.parametrize("project", ["../other", "/abs", "a/b", "x\x00"])
def test_project_id_can_never_leave_the_vault(vault: Vault, project: str) -> None:
    with pytest.raises(InvalidArguments):
        upsert_record(vault, project, kind="trap", body="b")


# --- upsert --------------------------------------------------------------------------------


def test_empty_body_is_invalid_arguments(vault: Vault) -> None:
    with pytest.raises(InvalidArguments, match="body"):
        upsert_record(vault, "demo", kind="spec", body="   \n")


def test_invalid_kind_names_allowed_values(vault: Vault) -> None:
    with pytest.raises(InvalidArguments, match="trap, decision"):
        upsert_record(vault, "demo", kind="note", body="b")


def test_merge_keeps_created_refreshes_updated_and_unknown_keys(vault: Vault) -> None:
    first = upsert_record(vault, "demo", kind="spec", body="v1", slug="s", frontmatter={"owner": "ana"}, now=NOW)
    later = NOW + timedelta(hours=2)
    second = upsert_record(vault, "demo", kind="spec", body="v2", slug="s", frontmatter={"title": "S"}, now=later)
    assert second.created == first.created == "2026-11-30T12:00:00.000Z"
    assert second.updated == "2026-11-30T14:00:00.000Z"
    record = read_record(_file(vault, second.path))
    assert record.frontmatter["owner"] == "ana" and record.body == "v2"


def test_body_is_stored_byte_for_byte(vault: Vault) -> None:
    body = "# Title\r\n\n  indented\ttab\n---\nnot frontmatter\n\n\n"
    result = upsert_record(vault, "demo", kind="spec", body=body, slug="exact")
    assert get_record(vault, "demo", record_id=result.id).body == body


def test_secret_in_body_aborts_the_write(vault: Vault) -> None:
    with pytest.raises(SafetyViolation, match="GitHub token"):
        upsert_record(vault, "demo", kind="trap", body=f"use {GH_TOKEN} for CI", slug="leak")
    assert not vault.record_path("demo", "trap", "leak").exists()


def test_secret_in_frontmatter_aborts_the_write(vault: Vault) -> None:
    with pytest.raises(SafetyViolation):
        upsert_record(vault, "demo", kind="spec", body="ok", slug="leak", frontmatter={"ci": {"token": GH_TOKEN}})
    assert not vault.record_path("demo", "spec", "leak").exists()


def test_commit_shas_uuids_and_hashes_are_not_secrets(vault: Vault) -> None:
    body = (
        "Fixed in 4f2a9c1d8e7b6a5f4e3d2c1b0a9f8e7d6c5b4a3f (run 123e4567-e89b-12d3-a456-426614174000), "
        "artifact sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
    )
    assert upsert_record(vault, "demo", kind="log", body=body, slug="ok").id == "ok"


def test_ttl_computes_expires_at_from_created(vault: Vault) -> None:
    created = "2026-11-01T00:00:00.000Z"
    result = upsert_record(
        vault, "demo", kind="spec", body="b", slug="t", frontmatter={"ttl": "48h", "created": created}
    )
    assert result.expires_at == "2026-11-03T00:00:00.000Z"
    assert read_record(_file(vault, result.path)).frontmatter["expires_at"] == "2026-11-03T00:00:00.000Z"


def test_expires_at_date_only_is_end_of_utc_day(vault: Vault) -> None:
    result = upsert_record(vault, "demo", kind="spec", body="b", slug="e", frontmatter={"expires_at": "2027-01-31"})
    assert result.expires_at == "2027-01-31T23:59:59.999Z"


@pytest.mark.parametrize("field", ["ttl", "expires_at"])
def test_invalid_ttl_or_expiry_is_rejected_with_the_seed_message(vault: Vault, field: str) -> None:
    with pytest.raises(InvalidArguments, match=r'Invalid ttl duration or date: "soon"'):
        upsert_record(vault, "demo", kind="spec", body="b", slug="x", frontmatter={field: "soon"})
    assert not vault.record_path("demo", "spec", "x").exists()


def test_scratch_gets_its_default_ttl_at_read_time(vault: Vault) -> None:
    result = upsert_record(vault, "demo", kind="scratch", body="b", slug="s", now=NOW)
    assert result.expires_at == "2026-12-07T12:00:00.000Z"
    assert "expires_at" not in read_record(_file(vault, result.path)).frontmatter


def test_path_is_folded_into_path_patterns_and_linked_paths(vault: Vault) -> None:
    result = upsert_record(
        vault,
        "demo",
        kind="trap",
        body="b",
        slug="p",
        path="./src/api/auth.py",
        frontmatter={"pathPatterns": ["src/api/**"], "path": "node_modules/x.js"},
    )
    fm = read_record(_file(vault, result.path)).frontmatter
    assert fm["pathPatterns"] == ["src/api/**", "src/api/auth.py"]
    assert fm["linkedPaths"] == ["src/api/auth.py"]
    assert "path" not in fm


def test_trap_classification_fills_layer_module_tags_and_first_sighting(vault: Vault) -> None:
    result = upsert_record(
        vault,
        "demo",
        kind="trap",
        body="The login form is open to CSRF.",
        slug="csrf",
        path="src/web/login.tsx",
        frontmatter={"label": "security"},
        now=NOW,
    )
    fm = read_record(_file(vault, result.path)).frontmatter
    assert fm["layer"] == "web" and fm["module"] == "web"
    assert "security" in fm["tags"]
    assert fm["occurrences"] == 1 and fm["lastSeen"] == "2026-11-30T12:00:00.000Z"


def test_trap_classification_keeps_given_layer(vault: Vault) -> None:
    result = upsert_record(
        vault, "demo", kind="trap", body="b", slug="l", frontmatter={"layer": "domain"}, path="tests/x.py"
    )
    assert read_record(_file(vault, result.path)).frontmatter["layer"] == "domain"


TRAP_BODY = "Retrying the payment call without an idempotency key charges the customer twice"


def test_trap_recurrence_bumps_occurrences_instead_of_new_file(vault: Vault) -> None:
    first = upsert_record(vault, "demo", kind="trap", body=TRAP_BODY, slug="pay", path="src/pay.py", now=NOW)
    later = NOW + timedelta(days=1)
    again = upsert_record(
        vault, "demo", kind="trap", body=TRAP_BODY + " again", slug="pay-2", path="src/pay.py", now=later
    )
    assert again.recurrence is True and again.id == first.id
    assert not vault.record_path("demo", "trap", "pay-2").exists()
    fm = read_record(_file(vault, first.path)).frontmatter
    assert fm["occurrences"] == 2 and fm["lastSeen"] == "2026-12-01T12:00:00.000Z"


def test_trap_dedup_requires_identical_path_patterns(vault: Vault) -> None:
    upsert_record(vault, "demo", kind="trap", body=TRAP_BODY, slug="a", path="src/pay.py")
    other = upsert_record(
        vault, "demo", kind="trap", body=TRAP_BODY, slug="b", frontmatter={"pathPatterns": ["src/pay.py", "src/x.py"]}
    )
    assert other.recurrence is False and vault.record_path("demo", "trap", "b").exists()


def test_trap_dedup_ignores_path_pattern_order(vault: Vault) -> None:
    upsert_record(vault, "demo", kind="trap", body=TRAP_BODY, slug="a", frontmatter={"pathPatterns": ["b.py", "a.py"]})
    again = upsert_record(
        vault, "demo", kind="trap", body=TRAP_BODY, slug="c", frontmatter={"pathPatterns": ["a.py", "b.py"]}
    )
    assert again.recurrence is True


def test_trap_dedup_requires_jaccard_at_least_0_7(vault: Vault) -> None:
    upsert_record(vault, "demo", kind="trap", body=TRAP_BODY, slug="a", path="src/pay.py")
    different = upsert_record(
        vault,
        "demo",
        kind="trap",
        body="Totally unrelated cache invalidation problem in the CDN layer",
        slug="b",
        path="src/pay.py",
    )
    assert different.recurrence is False


def test_allow_duplicate_skips_trap_dedup(vault: Vault) -> None:
    upsert_record(vault, "demo", kind="trap", body=TRAP_BODY, slug="a", path="src/pay.py")
    dup = upsert_record(vault, "demo", kind="trap", body=TRAP_BODY, slug="b", path="src/pay.py", allow_duplicate=True)
    assert dup.recurrence is False and vault.record_path("demo", "trap", "b").exists()


def test_supersedes_marks_the_older_record_superseded(vault: Vault) -> None:
    old = upsert_record(vault, "demo", kind="decision", body="Use LIKE", slug="old", now=NOW)
    new = upsert_record(
        vault,
        "demo",
        kind="decision",
        body="Use FTS",
        slug="new",
        frontmatter={"supersedes": "old"},
        now=NOW + timedelta(hours=1),
    )
    assert new.superseded is True
    fm = read_record(_file(vault, old.path)).frontmatter
    assert fm["status"] == "superseded" and fm["supersededBy"] == "new"
    assert fm["updated"] == "2026-11-30T13:00:00.000Z"


def test_supersedes_missing_record_is_refused_unless_said_to_be_gone_on_purpose(vault: Vault) -> None:
    with pytest.raises(RecordNotFound, match="nothing was written"):
        upsert_record(vault, "demo", kind="decision", body="b", slug="n", frontmatter={"supersedes": "ghost"})
    assert not vault.record_path("demo", "decision", "n").exists()
    written = upsert_record(
        vault,
        "demo",
        kind="decision",
        body="b",
        slug="n",
        frontmatter={"supersedes": "ghost"},
        supersedes_missing_ok=True,
    )
    assert written.superseded is False and written.supersedes_missing == "ghost"


def test_a_hand_broken_existing_file_is_never_overwritten(vault: Vault) -> None:
    path = vault.record_path("demo", "spec", "broken")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("---\nid: [unclosed\n---\nprecious\n", encoding="utf-8")
    with pytest.raises(InvalidRecord):
        upsert_record(vault, "demo", kind="spec", body="new", slug="broken")
    assert path.read_text(encoding="utf-8").endswith("precious\n")


def test_upsert_updates_index_and_views(vault: Vault) -> None:
    upsert_record(
        vault,
        "demo",
        kind="trap",
        body="Beware of zebras",
        slug="z",
        frontmatter={"title": "Zebras", "severity": "high"},
    )
    assert vault.index().by_id("z", "demo")[0].title == "Zebras"
    traps = (vault.project_dir("demo") / "TRAPS.md").read_text(encoding="utf-8")
    assert "### [HIGH] Zebras" in traps and "Last compiled:" in traps


# --- get -----------------------------------------------------------------------------------


def test_get_by_kind_and_slug(vault: Vault) -> None:
    upsert_record(vault, "demo", kind="spec", body="b", slug="s", frontmatter={"id": "spec-id"})
    assert get_record(vault, "demo", kind="spec", slug="s").id == "spec-id"


def test_get_by_frontmatter_id_when_file_name_differs(vault: Vault) -> None:
    upsert_record(vault, "demo", kind="spec", body="b", slug="file-name", frontmatter={"id": "real-id"})
    assert get_record(vault, "demo", record_id="real-id").path.endswith("specs/file-name.md")


def test_get_finds_a_file_written_outside_memosite(vault: Vault) -> None:
    path = vault.kind_dir("demo", "decision") / "by-hand.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        "---\nid: hand-id\nkind: decision\nproject: demo\ncreated: 2026-01-01\nupdated: 2026-01-01\n---\nx\n",
        encoding="utf-8",
    )
    assert get_record(vault, "demo", record_id="hand-id").body == "x\n"


def test_get_missing_is_record_not_found(vault: Vault) -> None:
    with pytest.raises(RecordNotFound):
        get_record(vault, "demo", record_id="nope")


def test_get_annotates_expired(vault: Vault) -> None:
    upsert_record(vault, "demo", kind="spec", body="b", slug="old", frontmatter={"expires_at": "2026-01-01"})
    assert get_record(vault, "demo", record_id="old", now=NOW).expired is True
    assert get_record(vault, "demo", record_id="old", now=datetime(2025, 1, 1, tzinfo=UTC)).expired is False


def test_get_cross_project_returns_the_single_sibling_match(vault: Vault) -> None:
    upsert_record(vault, "other", kind="decision", body="b", slug="shared-decision")
    found = get_record(vault, "demo", record_id="shared-decision", cross_project=True)
    assert found.project == "other"
    with pytest.raises(RecordNotFound):
        get_record(vault, "demo", record_id="shared-decision")


def test_get_cross_project_fails_closed_on_ambiguity(vault: Vault) -> None:
    upsert_record(vault, "one", kind="decision", body="b", slug="dup")
    upsert_record(vault, "two", kind="decision", body="b", slug="dup")
    with pytest.raises(
        RecordNotFound, match=r"^dup is ambiguous: it names records in 2 projects \(one, two\): pass --project$"
    ):
        get_record(vault, "demo", record_id="dup", cross_project=True)


@pytest.mark.parametrize("kind", ["scratch", "state", "review"])
def test_get_cross_project_never_returns_private_kinds(vault: Vault, kind: str) -> None:
    upsert_record(vault, "other", kind=kind, body="b", slug="private")
    with pytest.raises(RecordNotFound):
        get_record(vault, "demo", record_id="private", cross_project=True)


# --- append --------------------------------------------------------------------------------


def test_append_writes_a_new_log_with_the_seed_id_format(vault: Vault) -> None:
    result = append_event(vault, "demo", event="deployed v2", details={"version": 2}, now=NOW)
    assert re.fullmatch(r"log-2026-11-30T12-00-00-000Z-\d+-[0-9a-f]{8}", result.id)
    record = read_record(_file(vault, result.path))
    assert record.frontmatter["details"] == {"version": 2} and record.kind == "log"


def test_append_never_rewrites_an_earlier_event(vault: Vault) -> None:
    first = append_event(vault, "demo", event="one", now=NOW)
    before = _file(vault, first.path).read_bytes()
    second = append_event(vault, "demo", event="two", now=NOW)
    assert first.id != second.id and _file(vault, first.path).read_bytes() == before


def test_append_scans_details_for_secrets(vault: Vault) -> None:
    with pytest.raises(SafetyViolation):
        append_event(vault, "demo", event="ci run", details={"env": {"GITHUB_TOKEN": GH_TOKEN}})
    assert not vault.kind_dir("demo", "log").exists() or not any(vault.kind_dir("demo", "log").iterdir())


# --- forget / restore ----------------------------------------------------------------------


def test_forget_archives_by_default_and_keeps_the_file(vault: Vault) -> None:
    result = upsert_record(vault, "demo", kind="trap", body="b", slug="t")
    forgotten = forget_record(vault, "demo", record_id="t")
    assert (forgotten.status, forgotten.purged) == ("archived", False)
    assert read_record(_file(vault, result.path)).status == "archived"


def test_forget_purge_unlinks_tombstones_and_deindexes(vault: Vault) -> None:
    result = upsert_record(vault, "demo", kind="trap", body="b", slug="t")
    forgotten = forget_record(vault, "demo", kind="trap", slug="t", purge=True)
    assert (forgotten.status, forgotten.purged) == ("purged", True)
    assert not _file(vault, result.path).exists()
    assert vault.index().by_id("t", "demo") == []
    tombstone = vault.read_tombstones()[-1]
    assert tombstone["id"] == "t" and tombstone["path"] == result.path


def test_forget_missing_record_is_record_not_found(vault: Vault) -> None:
    with pytest.raises(RecordNotFound):
        forget_record(vault, "demo", record_id="ghost")


def test_restore_brings_archived_back_to_active(vault: Vault) -> None:
    upsert_record(vault, "demo", kind="decision", body="b", slug="d")
    forget_record(vault, "demo", record_id="d")
    assert restore_record(vault, "demo", record_id="d").status == "active"
    assert get_record(vault, "demo", record_id="d").frontmatter["status"] == "active"


def test_superseded_is_terminal(vault: Vault) -> None:
    upsert_record(vault, "demo", kind="decision", body="a", slug="a")
    upsert_record(vault, "demo", kind="decision", body="b", slug="b", frontmatter={"supersedes": "a"})
    before = vault.record_path("demo", "decision", "a").read_bytes()
    with pytest.raises(InvalidTransition, match="superseded by b"):
        upsert_record(vault, "demo", kind="decision", body="a again", slug="a", frontmatter={"status": "active"})
    assert vault.record_path("demo", "decision", "a").read_bytes() == before
    with pytest.raises(InvalidTransition):
        restore_record(vault, "demo", record_id="a")
    with pytest.raises(InvalidTransition):
        forget_record(vault, "demo", record_id="a")


def test_restore_of_active_record_is_an_invalid_transition(vault: Vault) -> None:
    upsert_record(vault, "demo", kind="decision", body="a", slug="a")
    with pytest.raises(InvalidTransition):
        restore_record(vault, "demo", record_id="a")


# --- listing -------------------------------------------------------------------------------


def test_listing_skips_conflict_sidecars_temp_files_and_unparseable_files(
    vault: Vault, capsys: pytest.CaptureFixture[str]
) -> None:
    from memosite.refresh import reindex

    upsert_record(vault, "demo", kind="spec", body="b", slug="good")
    specs = vault.kind_dir("demo", "spec")
    (specs / "good.conflict.1.md").write_text((specs / "good.md").read_text(encoding="utf-8"), encoding="utf-8")
    (specs / ".memosite-tmp-abc").write_text("partial", encoding="utf-8")
    (specs / "broken.md").write_text("---\nid: [\n---\n", encoding="utf-8")
    reindex(vault, ["demo"])
    assert [r.id for r in list_records(vault, "demo")] == ["good"]
    assert "skipping projects/demo/specs/broken.md" in capsys.readouterr().err
    assert (specs / "broken.md").exists() and (specs / "good.conflict.1.md").exists()


def test_state_and_scratch_never_appear_in_views(vault: Vault) -> None:
    upsert_record(
        vault, "demo", kind="state", body="secret-ish working state", slug="st", frontmatter={"title": "WIP state"}
    )
    upsert_record(vault, "demo", kind="scratch", body="scratch idea", slug="sc", frontmatter={"title": "Scratch idea"})
    from memosite.views import write_views

    for path in write_views(vault, "demo"):
        text = path.read_text(encoding="utf-8")
        assert "WIP state" not in text and "Scratch idea" not in text


def test_deleted_index_is_rebuilt_from_the_files(vault_dir: Path) -> None:
    vault = Vault.open(vault_dir)
    upsert_record(vault, "demo", kind="trap", body="b", slug="t")
    vault.close()
    for leftover in (vault_dir / ".memosite").glob("index.sqlite*"):
        leftover.unlink()
    reopened = Vault.open(vault_dir)
    assert get_record(reopened, "demo", record_id="t").id == "t"
    assert [r.id for r in list_records(reopened, "demo")] == ["t"]
    reopened.close()


def test_tombstones_are_json_lines(vault: Vault) -> None:
    upsert_record(vault, "demo", kind="log", body="b", slug="l")
    forget_record(vault, "demo", record_id="l", purge=True)
    line = vault.tombstones_path.read_text(encoding="utf-8").splitlines()[0]
    assert json.loads(line)["reason"] == "forget"


def test_parse_of_written_file_round_trips(vault: Vault) -> None:
    result = upsert_record(vault, "demo", kind="trap", body="b\n", slug="rt", frontmatter={"when": "10:00"})
    text = _file(vault, result.path).read_text(encoding="utf-8")
    assert parse_record(text).frontmatter["when"] == "10:00"


def test_a_symlinked_kind_directory_is_never_read(vault: Vault, tmp_path: Path) -> None:
    from memosite.refresh import reindex

    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "x.md").write_text(
        "---\nid: x\nkind: trap\nproject: demo\ncreated: 2026-01-01\nupdated: 2026-01-01\n---\nout\n",
        encoding="utf-8",
    )
    vault.project_dir("demo").mkdir(parents=True)
    (vault.project_dir("demo") / "traps").symlink_to(outside)
    reindex(vault, ["demo"])
    assert list_records(vault, "demo") == []


def test_tombstones_batch_shares_one_stamp(vault: Vault) -> None:
    from memosite.vault import Tombstone

    paths = [vault.record_path("demo", "log", f"l{n}") for n in range(3)]
    vault.record_tombstones([Tombstone("demo", "log", f"l{n}", p, "gc") for n, p in enumerate(paths)], now=NOW)
    entries = vault.read_tombstones()
    assert [e["id"] for e in entries] == ["l0", "l1", "l2"]
    assert {e["deletedAt"] for e in entries} == {"2026-11-30T12:00:00.000Z"}


def test_rewriting_the_successor_leaves_the_superseded_record_alone(vault: Vault) -> None:
    old = upsert_record(vault, "demo", kind="decision", body="a", slug="a", now=NOW)
    upsert_record(vault, "demo", kind="decision", body="b", slug="b", frontmatter={"supersedes": "a"}, now=NOW)
    before = _file(vault, old.path).read_bytes()
    again = upsert_record(
        vault,
        "demo",
        kind="decision",
        body="b2",
        slug="b",
        frontmatter={"supersedes": "a"},
        now=NOW + timedelta(days=1),
    )
    assert again.superseded is True
    assert _file(vault, old.path).read_bytes() == before


def test_a_bad_supersedes_id_fails_before_anything_is_written(vault: Vault) -> None:
    upsert_record(vault, "demo", kind="decision", body="original", slug="d")
    before = vault.record_path("demo", "decision", "d").read_bytes()
    for bad in ("../x", "x" * 300):
        with pytest.raises(InvalidArguments):
            upsert_record(vault, "demo", kind="decision", body="REPLACED", slug="d", frontmatter={"supersedes": bad})
        with pytest.raises(InvalidArguments):
            upsert_record(vault, "demo", kind="decision", body="new", slug="new", frontmatter={"supersedes": bad})
    assert vault.record_path("demo", "decision", "d").read_bytes() == before
    assert not vault.record_path("demo", "decision", "new").exists()


def test_a_record_cannot_supersede_itself(vault: Vault) -> None:
    with pytest.raises(InvalidArguments, match="itself"):
        upsert_record(vault, "demo", kind="decision", body="b", slug="me", frontmatter={"supersedes": "me"})


def test_an_id_shared_by_two_kinds_is_ambiguous_not_guessed(vault: Vault) -> None:
    upsert_record(vault, "demo", kind="decision", body="the decision", slug="same")
    upsert_record(vault, "demo", kind="trap", body="the trap", slug="same")
    with pytest.raises(InvalidArguments, match="ambiguous"):
        forget_record(vault, "demo", record_id="same", purge=True)
    assert vault.record_path("demo", "decision", "same").exists() and vault.record_path("demo", "trap", "same").exists()
    assert forget_record(vault, "demo", kind="trap", slug="same", purge=True).purged


def test_an_overlong_id_is_invalid_arguments(vault: Vault) -> None:
    with pytest.raises(InvalidArguments):
        get_record(vault, "demo", record_id="x" * 300)


def test_records_behind_symlinks_are_neither_read_nor_written(vault: Vault, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text(
        "---\nid: secret\nkind: decision\nproject: demo\ncreated: 2026-01-01\nupdated: 2026-01-01\n---\nout\n",
        encoding="utf-8",
    )
    decisions = vault.kind_dir("demo", "decision")
    decisions.mkdir(parents=True)
    (decisions / "linked.md").symlink_to(outside / "secret.md")
    with pytest.raises(RecordNotFound):
        get_record(vault, "demo", kind="decision", slug="linked")
    (vault.project_dir("demo") / "traps").symlink_to(outside)
    with pytest.raises(SafetyViolation, match="symlink"):
        upsert_record(vault, "demo", kind="trap", body="b", slug="escapes")
    assert sorted(p.name for p in outside.iterdir()) == ["secret.md"]


@pytest.mark.parametrize("damage", ["garbage", "dropped-fts"])
def test_a_damaged_index_is_rebuilt_from_the_records(vault_dir: Path, damage: str) -> None:
    import sqlite3

    vault = Vault.open(vault_dir)
    upsert_record(vault, "demo", kind="trap", body="survives", slug="t")
    vault.close()
    index_file = vault_dir / ".memosite" / "index.sqlite"
    if damage == "garbage":
        for leftover in (vault_dir / ".memosite").glob("index.sqlite*"):
            leftover.unlink()
        index_file.write_bytes(b"\x00not a database" * 400)
    else:
        with sqlite3.connect(index_file) as conn:
            conn.execute("DROP TABLE records_fts")
    reopened = Vault.open(vault_dir)
    assert [r.id for r in list_records(reopened, "demo")] == ["t"]
    reopened.close()


def test_a_purge_that_cannot_remove_the_file_keeps_it_and_records_no_tombstone(vault: Vault) -> None:
    from memosite.errors import StorageError

    upsert_record(vault, "demo", kind="spec", body="keep me", slug="stuck")
    # Something in the way of the removal (as a read-only directory would be, even for root).
    blocker = vault.kind_dir("demo", "spec") / ".memosite-tmp-purge-stuck.md"
    blocker.mkdir()
    (blocker / "occupied").write_text("x", encoding="utf-8")
    with pytest.raises(StorageError, match="cannot remove"):
        forget_record(vault, "demo", record_id="stuck", purge=True)
    assert vault.record_path("demo", "spec", "stuck").read_text(encoding="utf-8").endswith("keep me")
    assert vault.read_tombstones() == []
