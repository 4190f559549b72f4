"""The corpus under tests/corpus/stormbuffer: records and stores shaped like Stormbuffer's own.

``valid/`` and ``invalid/`` hold one record per rule (``invalid/expected.json`` names the field
each one breaks); ``stores/`` holds stores laid out as ``sbuf`` lays them out, among them one
laid out exactly as Stormbuffer's repository keeps its own ``.sbuf`` (shared, flat records).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from memosite.cli import cli
from memosite.errors import InvalidRecord, StorageError
from memosite.stormbuffer.codec import parse_record, read_record, render_record
from memosite.stormbuffer.lock import StoreBusy, journal_path, mutation_lock, recover_supersession
from memosite.stormbuffer.store import Store
from memosite.stormbuffer.validation import validate_files

CORPUS = Path(__file__).parent / "corpus" / "stormbuffer"
VALID = sorted((CORPUS / "valid").glob("*.md"))
EXPECTED = json.loads((CORPUS / "invalid" / "expected.json").read_text(encoding="utf-8"))
# Valid files already in the form sbuf renders (one-line arrays of at most one item, canonical values).
CANONICAL = ["body-edge.md", "checkpoint-archived.md", "procedure-candidate.md", "rendered-by-sbuf.md"]


def run(*args: str, ok: bool = True) -> Any:
    result = CliRunner().invoke(cli, ["stormbuffer", *args])
    assert (result.exit_code == 0) is ok, result.output
    return result


def run_json(*args: str, ok: bool = True) -> Any:
    return json.loads(run(*args, "--json", ok=ok).stdout)


def copy_store(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    target = tmp_path / name
    shutil.copytree(CORPUS / "stores" / name, target)
    monkeypatch.chdir(target)
    return target


@pytest.mark.parametrize("path", VALID, ids=lambda p: p.name)
def test_every_valid_corpus_record_parses_and_renders_back(path: Path) -> None:
    record = read_record(path)
    rendered = render_record(record)
    again = parse_record(rendered)
    assert render_record(again) == rendered
    assert again.body == record.body == path.read_bytes().decode("utf-8").split("+++\n\n", 1)[1]
    if path.name in CANONICAL:
        assert rendered == path.read_text(encoding="utf-8")


@pytest.mark.parametrize(("name", "field"), sorted(EXPECTED.items()))
def test_every_invalid_corpus_record_breaks_exactly_its_rule(name: str, field: str) -> None:
    report = validate_files([CORPUS / "invalid" / name])
    assert [problem.field for problem in report.problems] == [field]
    with pytest.raises(InvalidRecord):
        read_record(CORPUS / "invalid" / name)


def test_every_invalid_file_is_covered_by_the_manifest() -> None:
    assert {p.name for p in (CORPUS / "invalid").glob("*.md")} == set(EXPECTED)


def test_validate_cli_over_the_corpus_prints_one_line_per_problem(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert run_json("validate", str(CORPUS / "valid"))["valid"] is True
    result = run("validate", str(CORPUS / "invalid"), ok=False)
    assert len(result.stdout.strip().splitlines()) == len(EXPECTED)
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.output


def test_a_store_laid_out_as_stormbuffers_repository_opens_and_works(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = copy_store("sbuf-repository", tmp_path, monkeypatch)
    store_dir = repo / ".sbuf"
    ignore_before = (store_dir / ".gitignore").read_bytes()
    (repo / "src").mkdir()
    monkeypatch.chdir(repo / "src")
    assert run_json("validate")["valid"] is True
    listed = run_json("list", "--all")
    assert listed["count"] == 4 and listed["project_id"] == "0198c0de-2000-7000-8000-0000000000aa"
    assert [r["status"] for r in run_json("list")["records"]] == ["active", "active", "candidate"]
    shown = run_json("show", "0198c0de-2000-7000-8000-000000000003")
    assert shown["supersedes"] == ["0198c0de-2000-7000-8000-000000000002"]
    promoted = run_json("promote", "0198c0de-2000-7000-8000-000000000004")
    assert promoted["path"] == str(store_dir / "records" / "0198c0de-2000-7000-8000-000000000004.md")
    added = run_json("add", "--kind", "fact", "--title", "Imports are idempotent", "--body", "Re-running is safe.\n")
    assert Path(added["path"]).parent == store_dir / "records"
    assert added["scope"] == "project:0198c0de-2000-7000-8000-0000000000aa"
    assert (store_dir / ".gitignore").read_bytes() == ignore_before
    assert (store_dir / "locks" / "mutation.lock").is_file()
    assert sorted(p.name for p in (store_dir / "records").iterdir()) == sorted(
        [f"0198c0de-2000-7000-8000-00000000000{n}.md" for n in range(1, 5)] + [Path(added["path"]).name]
    )
    assert run_json("validate")["valid"] is True
    config = tomllib.loads((store_dir / "store.toml").read_text(encoding="utf-8"))
    assert config == {
        "format_version": 1, "scope": "project", "visibility": "shared",
        "project_id": "0198c0de-2000-7000-8000-0000000000aa", "project_name": "ledger",
    }  # fmt: skip


def test_the_global_store_opens_with_global(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = tmp_path / "data"
    shutil.copytree(CORPUS / "stores" / "global", data / "stormbuffer")
    monkeypatch.setenv("XDG_DATA_HOME", str(data))
    monkeypatch.chdir(tmp_path)
    assert run_json("validate", "--global")["valid"] is True
    (record,) = run_json("list", "--global")["records"]
    assert record["scope"] == "global" and record["title"] == "Prefer UTC in stored timestamps"
    assert run_json("archive", "--global", record["id"])["status"] == "archived"


def test_records_are_found_by_id_whatever_their_file_is_called(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = copy_store("example-name", tmp_path, monkeypatch)
    shown = run_json("show", "--store", ".", "0198c0de-4000-7000-8000-000000000001")
    assert shown["path"] == str(root / "records" / "example.md")
    promoted = run_json("promote", "--store", ".", "0198c0de-4000-7000-8000-000000000001")
    assert promoted["path"] == str(root / "records" / "example.md")
    nested = run_json("show", "--store", ".", "0198c0de400070008000000000000002")
    assert nested["path"] == str(root / "records" / "nested" / "deeper" / "0198c0de-4000-7000-8000-000000000002.md")
    assert sorted(p.name for p in (root / "records").rglob("*.md")) == [
        "0198c0de-4000-7000-8000-000000000002.md",
        "example.md",
    ]


def test_two_files_with_one_id_are_refused_and_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    copy_store("duplicate-id", tmp_path, monkeypatch)
    refused = run("list", "--store", ".", ok=False)
    assert refused.stderr.count("\n") == 1 and "multiple files" in refused.stderr
    assert "copy-of-it.md" in refused.stderr
    report = run_json("validate", "--store", ".", ok=False)["error"]["details"]
    # Files are read in name order: the second holder of the id is the one reported.
    (problem,) = report["problems"]
    assert (Path(problem["path"]).name, problem["field"]) == ("copy-of-it.md", "id")
    assert "0198c0de-5000-7000-8000-000000000001.md" in problem["message"]


def test_a_record_outside_the_store_scope_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    copy_store("foreign-scope", tmp_path, monkeypatch)
    refused = run("list", "--store", ".", ok=False)
    assert "outside this store's scope" in refused.stderr
    report = run_json("validate", "--store", ".", ok=False)["error"]["details"]
    assert [p["field"] for p in report["problems"]] == ["scope"]


def test_init_upgrades_a_store_memosite_wrote_before(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = copy_store("legacy-memosite", tmp_path, monkeypatch)
    refused = run("list", "--store", ".", ok=False)
    assert "stormbuffer init" in refused.stderr
    upgraded = run_json("init", "--store", ".")
    assert upgraded["upgraded"] is True and upgraded["project_id"] == "0198c0de-6000-7000-8000-0000000000dd"
    assert (root / "store.toml").read_text(encoding="utf-8") == (
        'format_version = 1\nscope = "project"\nvisibility = "private"\n'
        'project_id = "0198c0de-6000-7000-8000-0000000000dd"\nproject_name = "old layout"\n'
    )
    assert (root / ".gitignore").read_text(encoding="utf-8") == "*\n!.gitignore\n"
    (record,) = run_json("list", "--store", ".")["records"]
    assert record["path"] == str(root / "records" / "decision" / "0198c0de-6000-7000-8000-000000000001.md")


# --- the lock sbuf takes --------------------------------------------------------------------

_HOLDER = textwrap.dedent(
    """
    import fcntl, os, sys, time
    fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(fd, fcntl.LOCK_EX)
    print("held", flush=True)
    sys.stdin.readline()
    """
)
_PROBE = textwrap.dedent(
    """
    import fcntl, os, sys
    fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        print("busy")
    else:
        print("free")
    """
)


@pytest.mark.skipif(sys.platform.startswith("win"), reason="flock is POSIX")
def test_memosite_waits_for_the_lock_another_writer_holds(tmp_path: Path) -> None:
    store = Store.init(tmp_path / "p" / ".sbuf")
    lock_file = store.path / "locks" / "mutation.lock"
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(lock_file)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, encoding="utf-8",
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with pytest.raises(StoreBusy, match="another writer"), mutation_lock(store.path, timeout=0.3):
            pass
        assert list(store.record_files()) == []
    finally:
        assert holder.stdin is not None
        holder.stdin.write("\n")
        holder.stdin.close()
        holder.wait(timeout=10)
        if holder.stdout is not None:
            holder.stdout.close()
    with mutation_lock(store.path, timeout=0.3):
        probe = subprocess.run(
            [sys.executable, "-c", _PROBE, str(lock_file)], capture_output=True, text=True, encoding="utf-8"
        )
        assert probe.stdout.strip() == "busy"  # what sbuf's try_lock_exclusive sees while memosite writes
    probe = subprocess.run(
        [sys.executable, "-c", _PROBE, str(lock_file)], capture_output=True, text=True, encoding="utf-8"
    )
    assert probe.stdout.strip() == "free"


def _journal(old: Path, old_before: bytes, old_after: str, new: Path, new_before: bytes | None, new_after: str) -> str:
    import tomli_w

    data: dict[str, Any] = {"old_path": str(old), "new_path": str(new), "old_before": list(old_before)}
    data["old_after"] = old_after
    if new_before is not None:
        data["new_before"] = list(new_before)
    data["new_after"] = new_after
    return tomli_w.dumps(data)


def test_an_interrupted_supersession_is_finished_by_the_next_writer(tmp_path: Path) -> None:
    store = Store.init(tmp_path / "p" / ".sbuf")
    old = store.add(kind="fact", title="Old", body="old\n", access="human")
    new = store.add(kind="fact", title="New", body="new\n", access="human")
    old_after = render_record(old.record.evolve(status="superseded"))
    new_after = render_record(new.record.evolve(supersedes=(old.record.id,)))
    old_before, new_before = old.path.read_bytes(), new.path.read_bytes()
    journal_path(store.path).parent.mkdir(exist_ok=True)
    journal_path(store.path).write_text(
        _journal(old.path, old_before, old_after, new.path, new_before, new_after), encoding="utf-8"
    )
    old.path.write_text(old_after, encoding="utf-8")  # the crash came after the first file
    store.add(kind="fact", title="Later", body="later\n", access="human")
    assert not journal_path(store.path).exists()
    assert store.get(new.record.id).record.supersedes == (old.record.id,)
    assert store.get(old.record.id).record.status == "superseded"


def test_a_journal_that_conflicts_with_an_edit_is_refused(tmp_path: Path) -> None:
    store = Store.init(tmp_path / "p" / ".sbuf")
    old = store.add(kind="fact", title="Old", body="old\n", access="human")
    new = store.add(kind="fact", title="New", body="new\n", access="human")
    journal_path(store.path).parent.mkdir(exist_ok=True)
    journal_path(store.path).write_text(
        _journal(old.path, b"something else", "x", new.path, None, "y"), encoding="utf-8"
    )
    with pytest.raises(StorageError, match="conflicts with an authored change"):
        recover_supersession(store.path)
    assert journal_path(store.path).exists()
