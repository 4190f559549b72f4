"""Audit packs: SHA-256 of the whole session directory; tamper fails, additions are only noted,
and entries that point outside the session are rejected."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from memosite.sessions import Session, pack_session, verify_session
from memosite.sessions.errors import InvalidPack, PackNotFound, SymlinkRefused
from memosite.sessions.paths import SessionPaths
from memosite.vault import Vault


@pytest.fixture
def packed(vault: Vault) -> SessionPaths:
    with Session.start(vault, "demo", session_id="s1", goals=["audit me"], sync_record=False) as session:
        session.start_turn()
        session.append("message", text="something happened")
        session.append("fact", text="a fact")
        session.end_turn()
        session.end()
    pack_session(vault, "demo", "s1")
    return SessionPaths.for_session(vault, "demo", "s1")


def pack_document(paths: SessionPaths) -> dict:
    return json.loads(paths.audit_pack.read_text(encoding="utf-8"))


def test_pack_lists_every_file_with_its_sha256_except_itself(vault: Vault, packed: SessionPaths) -> None:
    document = pack_document(packed)
    assert packed.audit_pack == packed.dir / "derived" / "audit-pack.json"
    assert list(document) == ["schema_version", "session_id", "created_at", "algorithm", "entries"]
    assert (document["schema_version"], document["session_id"], document["algorithm"]) == (1, "s1", "sha256")
    assert all(list(entry) == ["path", "bytes", "sha256"] for entry in document["entries"])
    listed = {entry["path"]: entry for entry in document["entries"]}
    assert set(listed) == {
        "events.jsonl",
        "manifest.json",
        "index/turns.json",
        "derived/memory.json",
        "derived/progress.json",
    }
    for path, entry in listed.items():
        data = (packed.dir / path).read_bytes()
        assert entry["sha256"] == hashlib.sha256(data).hexdigest()
        assert entry["bytes"] == len(data)
    assert (packed.audit_pack.stat().st_mode & 0o777) == 0o600


def test_untouched_session_verifies(vault: Vault, packed: SessionPaths) -> None:
    result = verify_session(vault, "demo", "s1")
    assert result.ok and result.checked == 5
    assert (result.changed, result.missing, result.unaccounted) == ([], [], [])


def test_a_changed_file_fails_verification(vault: Vault, packed: SessionPaths) -> None:
    data = packed.events.read_bytes()
    packed.events.write_bytes(data.replace(b"something happened", b"nothing happened!!"))
    result = verify_session(vault, "demo", "s1")
    assert not result.ok and result.changed == ["events.jsonl"]


def test_a_missing_file_fails_verification(vault: Vault, packed: SessionPaths) -> None:
    packed.memory.unlink()
    result = verify_session(vault, "demo", "s1")
    assert not result.ok and result.missing == ["derived/memory.json"]


def test_a_file_added_after_packing_is_unaccounted_but_not_a_failure(vault: Vault, packed: SessionPaths) -> None:
    (packed.derived_dir / "notes.txt").write_text("added later", encoding="utf-8")
    result = verify_session(vault, "demo", "s1")
    assert result.ok
    assert result.unaccounted == ["derived/notes.txt"]


def test_a_file_replaced_by_a_symlink_counts_as_changed(vault: Vault, packed: SessionPaths, tmp_path: Path) -> None:
    copy = tmp_path / "manifest-copy.json"
    copy.write_bytes(packed.manifest.read_bytes())
    packed.manifest.unlink()
    packed.manifest.symlink_to(copy)
    result = verify_session(vault, "demo", "s1")
    assert not result.ok and result.changed == ["manifest.json"]


@pytest.mark.parametrize(
    "bad_path",
    [
        "../outside.txt",
        "/etc/passwd",
        "index/../../escape",
        "./events.jsonl",
        "derived//memory.json",
        "C:/windows",
        "a\\b",
        "audit-pack.json",
        "derived/audit-pack.json",
        "",
    ],
)
def test_pack_entries_pointing_outside_the_session_are_invalid(
    vault: Vault, packed: SessionPaths, bad_path: str
) -> None:
    document = pack_document(packed)
    document["entries"].append({"path": bad_path, "bytes": 0, "sha256": "0" * 64})
    packed.audit_pack.write_text(json.dumps(document), encoding="utf-8")
    with pytest.raises(InvalidPack):
        verify_session(vault, "demo", "s1")


def test_an_entry_through_a_symlinked_directory_is_not_followed(
    vault: Vault, packed: SessionPaths, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("outside the session", encoding="utf-8")
    (packed.dir / "linkdir").symlink_to(outside, target_is_directory=True)
    document = pack_document(packed)
    digest = hashlib.sha256(b"outside the session").hexdigest()
    document["entries"].append({"path": "linkdir/secret.txt", "bytes": 19, "sha256": digest})
    packed.audit_pack.write_text(json.dumps(document), encoding="utf-8")
    result = verify_session(vault, "demo", "s1")
    assert not result.ok and result.changed == ["linkdir/secret.txt"]


@pytest.mark.parametrize(
    "content",
    [
        "not json",
        json.dumps({"schema_version": 9, "session_id": "s1", "algorithm": "sha256", "entries": []}),
        json.dumps({"schema_version": 1, "session_id": "other", "algorithm": "sha256", "entries": []}),
        json.dumps({"schema_version": 1, "session_id": "s1", "algorithm": "md5", "entries": []}),
        json.dumps(
            {"schema_version": 1, "session_id": "s1", "algorithm": "sha256", "entries": [{"path": "events.jsonl"}]}
        ),
        json.dumps(
            {
                "schema_version": 1,
                "session_id": "s1",
                "algorithm": "sha256",
                "entries": [{"path": "events.jsonl", "bytes": -1, "sha256": "0" * 64}],
            }
        ),
    ],
)
def test_malformed_packs_are_invalid(vault: Vault, packed: SessionPaths, content: str) -> None:
    packed.audit_pack.write_text(content, encoding="utf-8")
    with pytest.raises(InvalidPack):
        verify_session(vault, "demo", "s1")


def test_verifying_without_a_pack_says_so(vault: Vault) -> None:
    Session.start(vault, "demo", session_id="s2", sync_record=False).close()
    with pytest.raises(PackNotFound):
        verify_session(vault, "demo", "s2")


def test_packing_refuses_a_symlink_inside_the_session(vault: Vault, tmp_path: Path) -> None:
    Session.start(vault, "demo", session_id="s3", sync_record=False).close()
    paths = SessionPaths.for_session(vault, "demo", "s3")
    (paths.derived_dir / "link").symlink_to(tmp_path)
    with pytest.raises(SymlinkRefused):
        pack_session(vault, "demo", "s3")
    assert not paths.audit_pack.exists()


def test_repacking_accounts_for_new_files(vault: Vault, packed: SessionPaths) -> None:
    (packed.dir / "extra.txt").write_text("x", encoding="utf-8")
    pack_session(vault, "demo", "s1")
    result = verify_session(vault, "demo", "s1")
    assert result.ok and result.unaccounted == [] and result.checked == 6


def test_a_pack_from_an_older_memosite_still_verifies_and_the_next_pack_replaces_it(
    vault: Vault, packed: SessionPaths
) -> None:
    document = pack_document(packed)
    legacy = {
        "version": 1,
        "sessionId": "s1",
        "created": document["created_at"],
        "algorithm": "sha256",
        "files": [{"path": e["path"], "sha256": e["sha256"], "size": e["bytes"]} for e in document["entries"]],
    }
    packed.audit_pack.unlink()
    packed.legacy_audit_pack.write_text(json.dumps(legacy), encoding="utf-8")
    result = verify_session(vault, "demo", "s1")
    assert result.ok and result.checked == 5 and result.unaccounted == []
    packed.events.write_bytes(packed.events.read_bytes() + b"\n")
    assert verify_session(vault, "demo", "s1").changed == ["events.jsonl"]
    repacked = pack_session(vault, "demo", "s1")
    assert repacked.replaced_legacy and not packed.legacy_audit_pack.exists() and packed.audit_pack.exists()
    assert verify_session(vault, "demo", "s1").ok
