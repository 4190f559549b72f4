"""A site folder's manifest is trusted only when memosite can show it wrote it (issue 21).

Before: a folder holding a foreign ``.memosite-site.json`` that listed a person's ``README.md`` and
``src/main.py`` got them deleted by ``build --out`` / ``publish --to``, and a rebuild removed a
person's empty folder. Now a manifest is signed with this user's key (kept outside every vault),
only files whose content is still what memosite wrote are removed, and folders a person made stay.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memosite.errors import SafetyViolation, StorageError
from memosite.site.destination import MANIFEST
from memosite.site.export import MANIFEST as EXPORT_MANIFEST
from memosite.site.manifest import KEY_FILE, Manifest, WrittenFile, manifest_key, read_manifest, write_manifest
from memosite.userdirs import user_state_dir

USER_FILES = {
    "README.md": "# My project\n",
    "src/main.py": "print('hello')\n",
    "Заметки/план 日本語 🎉.txt": "mine\n",
}


def _user_folder(root: Path) -> Path:
    for relative, text in USER_FILES.items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(text, encoding="utf-8")
    return root


def _tree(root: Path) -> dict[str, bytes | None]:
    return {p.relative_to(root).as_posix(): (p.read_bytes() if p.is_file() else None) for p in sorted(root.rglob("*"))}


def _forged_manifests(files: list[str], other_machine: bytes) -> dict[str, str]:
    """The manifests an attacker (or another machine) can put in a folder."""
    listed = {name: ["0" * 64, 1, 0, 0] for name in files}
    signed_elsewhere = Manifest({name: WrittenFile("0" * 64, 1, 0, 0) for name in files}, frozenset({"src"}))
    return {
        "format-1": json.dumps({"format": 1, "generator": "memosite", "files": files}),
        "unsigned": json.dumps({"format": 2, "generator": "memosite build", "files": listed, "dirs": ["src"]}),
        "bad-mac": json.dumps(
            {"format": 2, "generator": "memosite build", "files": listed, "dirs": ["src"], "mac": "ab" * 32}
        ),
        "another-machine": _signed_text(signed_elsewhere, other_machine),
    }


def _signed_text(manifest: Manifest, key: bytes, tmp: Path | None = None) -> str:
    path = (tmp or Path(os.environ["HOME"])) / "forged.json"
    write_manifest(path, "memosite build", manifest, key)
    text = path.read_text(encoding="utf-8")
    path.unlink()
    return text


@pytest.fixture
def recorded(run_cli: Callable[..., Any]) -> None:
    for title in ("Cache leak", "Flaky clock"):
        assert run_cli("upsert", "--kind", "trap", "--title", title, "--body", f"{title}.").exit_code == 0


FORGERIES = ["format-1", "unsigned", "bad-mac", "another-machine"]


@pytest.mark.usefixtures("recorded")
@pytest.mark.parametrize("forgery", FORGERIES)
@pytest.mark.parametrize("command", ["build", "publish"])
def test_a_foreign_site_manifest_listing_a_users_files_gets_nothing_deleted(
    tmp_path: Path, run_cli: Callable[..., Any], forgery: str, command: str
) -> None:
    project = _user_folder(tmp_path / "my-project")
    text = _forged_manifests(sorted(USER_FILES), os.urandom(32))[forgery]
    (project / MANIFEST).write_text(text, encoding="utf-8")
    before = _tree(project)
    outcome = run_cli(command, "--out" if command == "build" else "--to", str(project), "--json")
    assert outcome.exit_code == 1
    error = outcome.json()["error"]
    assert error["code"] == "SAFETY_VIOLATION" and "cannot show it wrote .memosite-site.json" in error["message"]
    assert _tree(project) == before
    plain = run_cli(command, "--out" if command == "build" else "--to", str(project))
    lines = [line for line in plain.stderr.splitlines() if line.strip()]
    assert plain.exit_code == 1 and len(lines) == 1 and "Traceback" not in plain.stderr
    assert [p.name for p in tmp_path.iterdir() if "memosite" in p.name] == []  # no staging left behind


@pytest.mark.usefixtures("recorded")
@pytest.mark.parametrize("forgery", FORGERIES)
def test_a_foreign_export_manifest_listing_a_users_files_gets_nothing_deleted(
    tmp_path: Path, run_cli: Callable[..., Any], forgery: str
) -> None:
    docs = _user_folder(tmp_path / "docs")
    (docs / "memory").mkdir()
    (docs / "memory/index.md").write_text("# Our own memory page\n", encoding="utf-8")
    text = _forged_manifests([*sorted(USER_FILES), "memory/index.md"], os.urandom(32))[forgery]
    (docs / EXPORT_MANIFEST).write_text(text.replace('"memosite build"', '"memosite export-docs"'), encoding="utf-8")
    before = _tree(docs)
    outcome = run_cli("export-docs", str(docs), "--json")
    assert outcome.exit_code == 1 and outcome.json()["error"]["code"] == "SAFETY_VIOLATION"
    assert _tree(docs) == before


@pytest.mark.slow
@pytest.mark.usefixtures("recorded")
def test_a_manifest_signed_on_another_machine_is_foreign_here(
    tmp_path: Path, run_cli: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    site = tmp_path / "site"
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "other-machine"))
    assert run_cli("build", "--out", str(site)).exit_code == 0
    monkeypatch.delenv("XDG_STATE_HOME")
    before = _tree(site)
    outcome = run_cli("build", "--out", str(site), "--json")
    assert outcome.exit_code == 1 and outcome.json()["error"]["code"] == "SAFETY_VIOLATION"
    assert _tree(site) == before


@pytest.mark.slow
@pytest.mark.usefixtures("recorded")
def test_a_rebuild_leaves_folders_a_user_made_even_empty_ones(tmp_path: Path, run_cli: Callable[..., Any]) -> None:
    site = tmp_path / "site"
    assert run_cli("build", "--out", str(site)).exit_code == 0
    for folder in ("drafts", "memory/mine", "memory/demo/черновики 日本"):
        (site / folder).mkdir()
    assert run_cli("build", "--out", str(site)).exit_code == 0
    assert all((site / folder).is_dir() for folder in ("drafts", "memory/mine", "memory/demo/черновики 日本"))
    manifest = json.loads((site / MANIFEST).read_text(encoding="utf-8"))
    assert "drafts" not in manifest["dirs"] and "memory/demo" in manifest["dirs"]


@pytest.mark.slow
@pytest.mark.usefixtures("recorded")
def test_a_users_edit_of_a_built_file_is_kept_and_said_so(
    vault_dir: Path, tmp_path: Path, run_cli: Callable[..., Any]
) -> None:
    site = tmp_path / "site"
    assert run_cli("build", "--out", str(site)).exit_code == 0
    page = site / "memory/demo/traps/flaky-clock/index.html"
    page.write_text("<p>my notes on the flaky clock</p>", encoding="utf-8")
    (site / "CNAME").write_text("memory.example.org\n", encoding="utf-8")
    assert run_cli("forget", "flaky-clock", "--purge").exit_code == 0
    outcome = run_cli("build", "--out", str(site))
    assert outcome.exit_code == 0, outcome.stderr
    assert "kept 1 file(s) of the previous build that were edited since: memory/demo/traps/flaky-clock/index.html" in (
        outcome.stdout
    )
    assert page.read_text(encoding="utf-8") == "<p>my notes on the flaky clock</p>"
    assert (site / "CNAME").read_text(encoding="utf-8") == "memory.example.org\n"
    again = run_cli("build", "--out", str(site), "--json")  # the kept file is now the person's
    assert again.exit_code == 0 and again.json()["kept"] == []
    assert page.read_text(encoding="utf-8") == "<p>my notes on the flaky clock</p>"


@pytest.mark.usefixtures("recorded")
def test_a_users_edit_of_an_exported_file_is_kept_and_said_so(tmp_path: Path, run_cli: Callable[..., Any]) -> None:
    docs = tmp_path / "docs"
    assert run_cli("export-docs", str(docs)).exit_code == 0
    page = docs / "memory/demo/traps/flaky-clock.md"
    page.write_text("my notes\n", encoding="utf-8")
    (docs / "memory/drafts").mkdir()
    assert run_cli("forget", "flaky-clock", "--purge").exit_code == 0
    outcome = run_cli("export-docs", str(docs), "--json")
    assert outcome.exit_code == 0 and outcome.json()["kept"] == ["memory/demo/traps/flaky-clock.md"]
    assert page.read_text(encoding="utf-8") == "my notes\n" and (docs / "memory/drafts").is_dir()
    assert not (docs / "memory/demo/traps/cache-leak.md").read_text(encoding="utf-8").startswith("my notes")


@pytest.mark.slow
@pytest.mark.usefixtures("recorded")
def test_a_symlink_planted_in_the_site_never_leads_a_rebuild_outside_it(
    tmp_path: Path, run_cli: Callable[..., Any]
) -> None:
    site = tmp_path / "site"
    assert run_cli("build", "--out", str(site)).exit_code == 0
    outside = tmp_path / "outside-traps"
    shutil.move(site / "memory/demo/traps", outside)  # the same files memosite wrote, now elsewhere
    (site / "memory/demo/traps").symlink_to(outside, target_is_directory=True)
    before = _tree(outside)
    outcome = run_cli("build", "--out", str(site), "--json")
    assert outcome.exit_code == 1 and "memory/demo/traps" in outcome.json()["error"]["message"]
    assert _tree(outside) == before


def test_the_key_lives_in_this_users_state_directory_private_to_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = manifest_key()
    path = user_state_dir() / KEY_FILE
    assert path.is_relative_to(tmp_path / "home" / ".local" / "state" / "memosite")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert manifest_key() == key and len(key) == 32
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg-state"))
    assert manifest_key() != key and (tmp_path / "xdg-state/memosite" / KEY_FILE).is_file()
    (tmp_path / "xdg-state/memosite" / KEY_FILE).chmod(0o644)
    with pytest.raises(StorageError, match="others can read it"):
        manifest_key()


names = st.text(alphabet="abcxyz/é日", min_size=1, max_size=12).filter(
    lambda n: not n.startswith("/") and "//" not in n and not n.endswith("/")
)
written = st.builds(
    WrittenFile,
    st.text(alphabet="0123456789abcdef", min_size=64, max_size=64),
    st.integers(0, 2**40),
    st.integers(0, 2**62),
    st.integers(0, 2**40),
)


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(files=st.dictionaries(names, written, max_size=5), dirs=st.frozensets(names, max_size=3), data=st.data())
def test_a_signed_manifest_reads_back_and_any_change_to_it_is_refused(
    files: dict[str, WrittenFile], dirs: frozenset[str], data: st.DataObject, tmp_path_factory: pytest.TempPathFactory
) -> None:
    folder = tmp_path_factory.mktemp("folder")
    key = os.urandom(32)
    manifest = Manifest(files, dirs)
    write_manifest(folder / MANIFEST, "memosite build", manifest, key)
    assert read_manifest(folder / MANIFEST, "memosite build", key) == manifest
    text = (folder / MANIFEST).read_text(encoding="utf-8")
    at = data.draw(st.integers(0, len(text) - 2))
    replacement = data.draw(st.sampled_from('0189af"{}[],:x'))
    tampered = text[:at] + replacement + text[at + 1 :]
    if tampered == text:
        return
    (folder / MANIFEST).write_text(tampered, encoding="utf-8")
    try:
        read = read_manifest(folder / MANIFEST, "memosite build", key)
    except SafetyViolation:
        return
    assert read == manifest  # only a change JSON reads as the same manifest (e.g. in whitespace)


def test_a_manifest_with_files_slipped_in_after_its_signature_is_refused(tmp_path: Path) -> None:
    # The signature ends the manifest as written; members added behind it are not signed.
    key = os.urandom(32)
    manifest = Manifest({"index.html": WrittenFile("0" * 64, 1, 0, 0)}, frozenset())
    write_manifest(tmp_path / MANIFEST, "memosite build", manifest, key)
    text = (tmp_path / MANIFEST).read_text(encoding="utf-8").rstrip("\n")
    evil = text[:-1] + ',"files":{"../ключ.txt":["' + "0" * 64 + '",1,0,0]}}'
    (tmp_path / MANIFEST).write_text(evil, encoding="utf-8")
    with pytest.raises(SafetyViolation):
        read_manifest(tmp_path / MANIFEST, "memosite build", key)


def test_a_signed_manifest_laid_out_another_way_still_reads_as_what_was_signed(tmp_path: Path) -> None:
    key = os.urandom(32)
    manifest = Manifest({"café/日本.html": WrittenFile("ab" * 32, 7, 1, 2)}, frozenset({"café"}))
    write_manifest(tmp_path / MANIFEST, "memosite build", manifest, key)
    data = json.loads((tmp_path / MANIFEST).read_text(encoding="utf-8"))
    (tmp_path / MANIFEST).write_text(json.dumps({"mac": data.pop("mac"), **data}, indent=1), encoding="utf-8")
    assert read_manifest(tmp_path / MANIFEST, "memosite build", key) == manifest
