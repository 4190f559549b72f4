"""The unit of work: one lock, one view rebuild and one commit per change, however many files it
touches; interrupted units finished by the next command; only what cannot be rebuilt in git."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from memosite import commitpolicy
from memosite import vault as vault_module
from memosite.curator import run_gc
from memosite.demo import write_demo_vault
from memosite.gitsetup import BLOCK_START, merged_gitignore
from memosite.lookup import get_record
from memosite.mutation import mutation
from memosite.salience import record_feedback, record_hits
from memosite.search import search_records
from memosite.store import append_event, forget_record, restore_record, upsert_record
from memosite.vault import Vault


def git_vault(vault_dir: Path, atomic: bool = True) -> Vault:
    vault_dir.mkdir(parents=True, exist_ok=True)
    (vault_dir / "config.json").write_text(
        json.dumps({"vaultGit": {"enabled": True, "atomic": atomic}}), encoding="utf-8"
    )
    return Vault.open(vault_dir)


def commits(vault: Vault) -> list[str]:
    result = subprocess.run(
        ["git", "-C", str(vault.root), "log", "--format=%s"],
        capture_output=True,
        text=True,
        encoding="utf-8",
        check=False,
    )
    return result.stdout.splitlines() if result.returncode == 0 else []


def tracked(vault: Vault) -> list[str]:
    result = subprocess.run(
        ["git", "-C", str(vault.root), "ls-files"], capture_output=True, text=True, encoding="utf-8", check=True
    )
    return result.stdout.splitlines()


def test_every_write_path_makes_exactly_one_commit(vault_dir: Path) -> None:
    vault = git_vault(vault_dir)
    steps = [
        lambda: upsert_record(vault, "demo", kind="trap", body="Locks bite.", slug="t", frontmatter={"title": "T"}),
        lambda: upsert_record(
            vault, "demo", kind="trap", body="Locks bite again.", slug="t2", frontmatter={"supersedes": "t"}
        ),
        lambda: append_event(vault, "demo", event="deployed"),
        lambda: record_feedback(vault, "demo", "t2", helpful=True),
        lambda: upsert_record(vault, "demo", kind="spec", body="Spec.", slug="s"),
        lambda: forget_record(vault, "demo", record_id="s"),
        lambda: restore_record(vault, "demo", record_id="s"),
        lambda: forget_record(vault, "demo", record_id="s", purge=True),
    ]
    for n, step in enumerate(steps, start=1):
        step()
        assert len(commits(vault)) == n, f"step {n}"
    assert commits(vault)[0] == "forget spec:s (purge)"
    assert commits(vault)[-2] == "upsert trap:t2"  # the supersede side effect is in the same commit


def test_a_removed_record_takes_its_kept_accepted_version_with_it_in_the_same_commit(vault_dir: Path) -> None:
    """Whatever removes a record under review (forget --purge, a gc purge, a tombstone from another
    machine), the accepted copy beside it goes in the same unit and the same commit."""
    from memosite.mutation import mutation
    from memosite.vault import ACCEPTED_SUFFIX, Tombstone

    vault = git_vault(vault_dir)
    upsert_record(vault, "demo", kind="scratch", body="Scratch.", slug="note")
    record = vault_dir / "projects/demo/scratch/note.md"
    kept = record.with_name("note" + ACCEPTED_SUFFIX)
    kept.write_bytes(record.read_bytes())
    upsert_record(vault, "demo", kind="scratch", body="Another.", slug="other")  # commits the copy too
    assert "projects/demo/scratch/note" + ACCEPTED_SUFFIX in tracked(vault)
    before = len(commits(vault))
    with mutation(vault, "remove note") as unit:
        unit.remove([Tombstone("demo", "scratch", "note", record, "test")])
    assert not record.exists() and not kept.exists()
    assert len(commits(vault)) == before + 1
    assert not [name for name in tracked(vault) if name.endswith(ACCEPTED_SUFFIX)]


def test_hits_are_usage_committed_with_the_next_change(vault_dir: Path) -> None:
    vault = git_vault(vault_dir)
    upsert_record(vault, "demo", kind="trap", body="x", slug="t")
    for session in ("s1", "s2", "s3"):
        assert record_hits(vault, "demo", ["t"], session_id=session) == ["t"]
    assert len(commits(vault)) == 1  # reads never make commits of their own
    upsert_record(vault, "demo", kind="spec", body="y", slug="s")
    log = subprocess.run(
        ["git", "-C", str(vault.root), "log", "-1", "--format=%B"], capture_output=True, text=True, encoding="utf-8"
    ).stdout
    assert log.startswith("upsert spec:s") and log.count("hits demo: t") == 3
    assert (
        subprocess.run(
            ["git", "-C", str(vault.root), "status", "--porcelain"], capture_output=True, text=True, encoding="utf-8"
        ).stdout.strip()
        == ""
    )


def test_a_hit_already_counted_in_the_session_commits_nothing(vault_dir: Path) -> None:
    vault = git_vault(vault_dir)
    upsert_record(vault, "demo", kind="trap", body="x", slug="t")
    record_hits(vault, "demo", ["t"], session_id="s1")
    before = len(commits(vault))
    assert record_hits(vault, "demo", ["t"], session_id="s1") == []
    assert len(commits(vault)) == before


def test_a_batch_is_one_lock_one_view_rebuild_one_commit(vault_dir: Path) -> None:
    vault = git_vault(vault_dir)
    before = vault_module.lock_acquisitions
    views = vault.project_dir("acme-shop") / "TRAPS.md"
    result = write_demo_vault(vault)
    assert result.records > 20
    assert vault_module.lock_acquisitions - before == 1
    assert commits(vault) == ["demo acme-shop"]
    assert views.is_file()


def test_nested_units_join_the_outer_one(vault_dir: Path) -> None:
    vault = git_vault(vault_dir)
    with mutation(vault, "import 2 records") as unit:
        upsert_record(vault, "demo", kind="spec", body="one", slug="one")
        upsert_record(vault, "demo", kind="spec", body="two", slug="two")
        assert unit.written == ["projects/demo/specs/one.md", "projects/demo/specs/two.md"]
    log = subprocess.run(
        ["git", "-C", str(vault.root), "log", "--format=%B"], capture_output=True, text=True, encoding="utf-8"
    ).stdout
    assert log.splitlines()[0] == "import 2 records"
    assert "upsert spec:one" in log and "upsert spec:two" in log
    assert len(commits(vault)) == 1


def test_gc_pass_is_one_commit_even_when_batched(vault_dir: Path) -> None:
    vault = git_vault(vault_dir, atomic=False)
    upsert_record(
        vault, "demo", kind="scratch", body="old note", slug="n", frontmatter={"ttl": "1s", "created": "2020-01-01"}
    )
    append_event(vault, "demo", event="kept")
    assert commits(vault) == []  # batched: queued, not committed
    result = run_gc(vault, "demo")
    assert result.purged_scratch_count == 1
    assert len(commits(vault)) == 1


def test_only_what_cannot_be_rebuilt_is_tracked(vault_dir: Path) -> None:
    vault = git_vault(vault_dir)
    upsert_record(vault, "demo", kind="trap", body="x", slug="t")
    get_record(vault, "demo", record_id="t")
    record_hits(vault, "demo", ["t"], session_id="agent-1")
    search_records(vault, "demo", "x")
    upsert_record(vault, "demo", kind="scratch", body="y", slug="gone")
    forget_record(vault, "demo", record_id="gone", purge=True)
    (vault.internal_dir / "locks").mkdir(exist_ok=True)
    (vault.internal_dir / "locks" / "s.lock").write_text("", encoding="utf-8")
    upsert_record(vault, "demo", kind="spec", body="z", slug="s")
    assert (vault.internal_dir / "hits").is_dir()
    files = tracked(vault)
    assert ".gitignore" in files and "config.json" in files and ".memosite/tombstones.jsonl" in files
    others = [f for f in files if f not in {".gitignore", "config.json", ".memosite/tombstones.jsonl"}]
    assert others and all(f.startswith("projects/demo/") and f.endswith(".md") for f in others), others


def test_gitignore_block_merges_into_the_users_file(vault_dir: Path) -> None:
    mine = "# my notes\n*.swp\n"
    merged = merged_gitignore(mine)
    assert merged.startswith(mine) and BLOCK_START in merged
    assert merged_gitignore(merged) == merged
    outdated = merged.replace("/.memosite/*\n", "")
    assert merged_gitignore(outdated) == merged
    vault = git_vault(vault_dir)
    (vault.root / ".gitignore").write_text(mine, encoding="utf-8")
    upsert_record(vault, "demo", kind="spec", body="z", slug="s")
    assert (vault.root / ".gitignore").read_text(encoding="utf-8") == merged


def test_files_an_older_version_committed_leave_git_not_the_disk(vault_dir: Path) -> None:
    vault = git_vault(vault_dir)
    vault.internal_dir.mkdir(parents=True, exist_ok=True)
    cache = vault.internal_dir / "jinja-cache" / "old.cache"
    cache.parent.mkdir()
    cache.write_bytes(b"x")
    subprocess.run(["git", "init", "-q", str(vault.root)], check=True)
    subprocess.run(["git", "-C", str(vault.root), "add", "-A"], check=True)
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
    }
    subprocess.run(["git", "-C", str(vault.root), "commit", "-qm", "old"], check=True, env=env)
    assert ".memosite/jinja-cache/old.cache" in tracked(vault)
    upsert_record(vault, "demo", kind="spec", body="z", slug="s")
    assert ".memosite/jinja-cache/old.cache" not in tracked(vault)
    assert cache.exists()


# --- interrupted units --------------------------------------------------------------------

# Where a unit can die: before the file is written, after it is written, after the index row,
# after the views, after the commit. The child process patches the step to SIGKILL itself.
KILL_POINTS = {
    "before-write": "memosite.mutation.atomic_write_text",
    "before-index": "memosite.mutation.index_record",
    "before-views": "memosite.mutation.rebuild_views",
    "before-commit": "memosite.commitpolicy.request_commit",
    "before-clear": "memosite.index.database.Index.clear_inflight",
}

CHILD = """
import os, signal, sys
import importlib
target = sys.argv[1]
module_name, _, attr = target.rpartition(".")
try:
    holder = importlib.import_module(module_name)
    owner, name = holder, attr
except ModuleNotFoundError:
    module_name, _, cls = module_name.rpartition(".")
    owner, name = getattr(importlib.import_module(module_name), cls), attr
original = getattr(owner, name)
def die(*args, **kwargs):
    os.kill(os.getpid(), signal.SIGKILL)
setattr(owner, name, die)
from memosite.vault import Vault
from memosite.store import upsert_record
vault = Vault.open(sys.argv[2])
upsert_record(vault, "demo", kind="trap", slug="fresh", body="A fresh trap about zeppelins.",
              frontmatter={"title": "Zeppelins", "severity": "high"})
"""


@pytest.mark.slow
@pytest.mark.parametrize("point", list(KILL_POINTS))
def test_a_unit_killed_at_any_step_is_read_as_the_files_are_and_finished_by_the_next_write(
    vault_dir: Path, point: str
) -> None:
    vault = git_vault(vault_dir)
    upsert_record(vault, "demo", kind="trap", body="An older trap.", slug="old", frontmatter={"title": "Old"})
    vault.close()
    child = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(CHILD), KILL_POINTS[point], str(vault_dir)],
        capture_output=True,
        text=True,
        encoding="utf-8",
        check=False,
    )
    assert child.returncode == -signal.SIGKILL, child.stderr
    written = (vault_dir / "projects" / "demo" / "traps" / "fresh.md").exists()
    assert written == (point != "before-write")
    reopened = Vault.open(vault_dir)
    inflight = reopened.index().inflight()
    # A read finds the files as they are, and leaves the unfinished unit to the next write.
    found = search_records(reopened, "demo", "zeppelins")
    assert [hit.id for hit in found.results] == (["fresh"] if written else [])
    assert reopened.index().inflight() == inflight
    upsert_record(reopened, "demo", kind="spec", body="The next change.", slug="next")
    traps_view = (vault_dir / "projects" / "demo" / "TRAPS.md").read_text(encoding="utf-8")
    assert ("Zeppelins" in traps_view) == written
    assert reopened.index().inflight() == []
    status = subprocess.run(
        ["git", "-C", str(vault_dir), "status", "--porcelain"], capture_output=True, text=True, encoding="utf-8"
    )
    assert status.stdout.strip() == ""
    reopened.close()


# --- index rows a unit holds -------------------------------------------------------------------


class FailingStatement:
    """A real index connection whose next statement matching ``fails`` raises as a full disk
    would — after rolling the transaction back, as SQLite itself does on SQLITE_FULL, when
    ``sqlite_rolls_back`` (fault injection)."""

    def __init__(self, real: sqlite3.Connection) -> None:
        self.real = real
        self.fails: Callable[[str], bool] | None = None
        self.sqlite_rolls_back = False

    def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:
        if self.fails is not None and self.fails(sql.strip().upper()):
            self.fails = None
            if self.sqlite_rolls_back and self.real.in_transaction:
                self.real.execute("ROLLBACK")
            raise sqlite3.OperationalError("database or disk is full")
        return self.real.execute(sql, *args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)


FAULTS: dict[str, tuple[Callable[[str], bool], bool]] = {
    "the commit of the next note": (lambda sql: sql == "COMMIT", False),
    "the next note, rolled back by SQLite": (lambda sql: sql.startswith("INSERT OR IGNORE INTO INFLIGHT"), True),
    "the next record's row": (lambda sql: sql.startswith("INSERT INTO RECORDS"), False),
    "the next record's row, rolled back by SQLite": (lambda sql: sql.startswith("INSERT INTO RECORDS"), True),
}


@pytest.mark.parametrize("fault", list(FAULTS))
def test_rows_a_unit_could_not_save_are_read_again_by_the_next_command(
    vault_dir: Path, fault: str, capsys: pytest.CaptureFixture[str]
) -> None:
    vault = Vault.open(vault_dir)
    index = vault.index()
    faulty = FailingStatement(index.conn)
    index.conn = faulty  # type: ignore[assignment]
    with mutation(vault, "import two"):
        upsert_record(vault, "demo", kind="trap", slug="one", body="A trap about the albatross.")
        faulty.fails, faulty.sqlite_rolls_back = FAULTS[fault]
        upsert_record(vault, "demo", kind="trap", slug="two", body="A trap about the bittern.")
    index.conn = faulty.real
    assert "the index lost rows of 'import two'" in capsys.readouterr().err
    assert index.inflight() != []  # kept for the next command
    vault.close()
    again = Vault.open(vault_dir)  # the next command
    found = {word: [hit.id for hit in search_records(again, "demo", word).results] for word in ("albatross", "bittern")}
    assert found == {"albatross": ["one"], "bittern": ["two"]}
    upsert_record(again, "demo", kind="spec", body="The next change.", slug="next")  # the next write finishes it
    assert again.index().inflight() == []
    view = (again.project_dir("demo") / "TRAPS.md").read_text(encoding="utf-8")
    assert "traps/one.md" in view and "traps/two.md" in view
    again.close()


def test_a_block_that_fails_inside_a_unit_is_undone_alone(vault: Vault) -> None:
    upsert_record(vault, "demo", kind="trap", slug="old", body="An older trap.")
    index = vault.index()
    with mutation(vault, "two steps"):
        upsert_record(vault, "demo", kind="trap", slug="one", body="A trap about the albatross.")
        with pytest.raises(RuntimeError), index.transaction():
            index.delete_path("projects/demo/traps/old.md")
            index.delete_path("projects/demo/traps/one.md")
            raise RuntimeError("half way")
    assert sorted(entry.id for entry in index.entries("demo")) == ["old", "one"]
    assert index.inflight() == []


def test_other_connections_see_and_may_write_the_index_while_git_commits(
    vault_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    vault = git_vault(vault_dir)
    upsert_record(vault, "demo", kind="trap", slug="zero", body="First.")
    seen: list[tuple[bool, int]] = []
    real = commitpolicy.request_commit

    def look_from_another_connection(vault: Vault, message: str) -> None:
        other = sqlite3.connect(str(vault.index_path), timeout=0.2, isolation_level=None)
        try:
            try:
                other.execute("BEGIN IMMEDIATE")
                other.execute("ROLLBACK")
                writable = True
            except sqlite3.OperationalError:
                writable = False
            rows = other.execute("SELECT count(*) FROM records WHERE path LIKE '%/one.md'").fetchone()[0]
            seen.append((writable, rows))
        finally:
            other.close()
        real(vault, message)

    monkeypatch.setattr(commitpolicy, "request_commit", look_from_another_connection)
    upsert_record(vault, "demo", kind="trap", slug="one", body="A trap about the albatross.")
    assert seen == [(True, 1)]
    assert commits(vault)[0] == "upsert trap:one"
    vault.close()


BATCH_CHILD = """
import os, signal, sys
import memosite.mutation as mutation
from memosite.vault import Vault
from memosite.store import upsert_record
original, calls = mutation.atomic_write_text, []
def die_on_the_third(*args, **kwargs):
    calls.append(args)
    if len(calls) == 3:
        os.kill(os.getpid(), signal.SIGKILL)
    return original(*args, **kwargs)
mutation.atomic_write_text = die_on_the_third
vault = Vault.open(sys.argv[1])
with mutation.mutation(vault, "import three"):
    for slug, word in (("one", "albatross"), ("two", "bittern"), ("three", "cormorant")):
        upsert_record(vault, "demo", kind="trap", slug=slug, body=f"A trap about the {word}.")
"""


def test_a_batch_killed_half_way_keeps_every_record_it_wrote_searchable(vault_dir: Path) -> None:
    """A unit's index rows commit with its next in-flight note, not each on its own: the rows of
    the files written before the kill are found by the next command all the same, and the next
    write finishes the unit (views, commit)."""
    vault_dir.mkdir(parents=True, exist_ok=True)
    child = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(BATCH_CHILD), str(vault_dir)],
        capture_output=True,
        text=True,
        encoding="utf-8",
        check=False,
    )
    assert child.returncode == -signal.SIGKILL, child.stderr
    reopened = Vault.open(vault_dir)
    found = {
        word: [hit.id for hit in search_records(reopened, "demo", word).results]
        for word in ("albatross", "bittern", "cormorant")
    }
    assert found == {"albatross": ["one"], "bittern": ["two"], "cormorant": []}
    upsert_record(reopened, "demo", kind="spec", body="The next change.", slug="next")  # the next write finishes it
    traps_view = (vault_dir / "projects" / "demo" / "TRAPS.md").read_text(encoding="utf-8")
    assert "2 active traps" in traps_view and "traps/one.md" in traps_view and "traps/two.md" in traps_view
    assert reopened.index().inflight() == []
    reopened.close()


INTERRUPTED_CHILD = """
import os, signal, sys
import memosite.mutation as mutation
original = mutation.rebuild_views
def interrupt_then_go_on(*args, **kwargs):
    os.kill(os.getpid(), signal.SIGINT)
    return original(*args, **kwargs)
mutation.rebuild_views = interrupt_then_go_on
from memosite.cli import main
main(["append", "--event", "deployed v2", "--json"])
"""


@pytest.mark.slow
def test_ctrl_c_after_the_write_reports_success_and_writes_once(vault_dir: Path) -> None:
    child = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(INTERRUPTED_CHILD)],
        capture_output=True,
        text=True,
        encoding="utf-8",
        check=False,
        env={**os.environ, "MEMOSITE_VAULT": str(vault_dir)},
    )
    assert child.returncode == 0, child.stderr
    assert json.loads(child.stdout)["kind"] == "log"
    assert "interrupted" in child.stderr
    assert len(list((vault_dir / "projects" / "demo" / "logs").glob("*.md"))) == 1


INTERRUPTED_BEFORE = """
import os, signal, sys
import memosite.mutation as mutation
# The first step of a write notes it in flight; an interrupt there comes before any file changed.
mutation.Mutation._mark = lambda self, project, relative: os.kill(os.getpid(), signal.SIGINT)
from memosite.cli import main
main(["append", "--event", "deployed v2", "--json"])
"""


def test_ctrl_c_before_anything_is_written_stops_the_write(vault_dir: Path) -> None:
    child = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(INTERRUPTED_BEFORE)],
        capture_output=True,
        text=True,
        encoding="utf-8",
        check=False,
        env={**os.environ, "MEMOSITE_VAULT": str(vault_dir)},
    )
    assert child.returncode == 130
    assert json.loads(child.stdout)["error"]["code"] == "INTERRUPTED"
    assert not list((vault_dir / "projects" / "demo" / "logs").glob("*.md"))


@pytest.mark.slow
def test_a_thousand_record_stormbuffer_import_takes_the_lock_once_and_makes_one_commit(
    vault_dir: Path, tmp_path: Path
) -> None:
    from memosite.stormbuffer.bridge import import_store
    from memosite.stormbuffer.store import Store

    store = Store.init(tmp_path / "sb" / ".sbuf", name="Shop")
    for n in range(1000):
        store.add(kind="fact", title=f"Fact {n}", body=f"Fact number {n}: prices are integer cents.\n", access="human")
    vault = git_vault(vault_dir)
    before = vault_module.lock_acquisitions
    result = import_store(vault, "demo", Store.open(store.path))
    assert len(result.records) == 1000
    assert vault_module.lock_acquisitions - before == 1
    assert len(commits(vault)) == 1 and commits(vault)[0].startswith("import stormbuffer store into demo")
    assert len(tracked(vault)) >= 1000


INTERRUPTED_AFTER_THE_UNIT = """
import os, signal, sys
import memosite.cli._common as common
original = common.App.emit
def interrupt_then_emit(self, data, text=None):
    os.kill(os.getpid(), signal.SIGINT)  # between the finished unit and its report
    return original(self, data, text)
common.App.emit = interrupt_then_emit
from memosite.cli import main
main(["append", "--event", "deployed v3", "--json"])
"""


@pytest.mark.slow
def test_ctrl_c_between_the_write_and_its_report_still_reports_success(vault_dir: Path) -> None:
    child = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(INTERRUPTED_AFTER_THE_UNIT)],
        capture_output=True,
        text=True,
        encoding="utf-8",
        check=False,
        env={**os.environ, "MEMOSITE_VAULT": str(vault_dir)},
    )
    assert child.returncode == 0, child.stderr
    assert [json.loads(line)["kind"] for line in child.stdout.splitlines()] == ["log"]
    assert len(list((vault_dir / "projects" / "demo" / "logs").glob("*.md"))) == 1
