"""Eight processes writing into one vault at once: nothing lost, nothing torn, index agrees with files."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from memosite.recordfile import read_record
from memosite.vault import Vault

WORKERS = 8
PER_WORKER = 12

_WORKER = textwrap.dedent(
    """
    import sys
    from memosite.store import append_event, upsert_record
    from memosite.vault import Vault

    vault = Vault.open(sys.argv[1])
    worker = int(sys.argv[2])
    for n in range(int(sys.argv[3])):
        upsert_record(vault, "demo", kind="trap", slug=f"w{worker}-t{n}", allow_duplicate=True,
                      body=f"worker {worker} trap {n} " + "lorem ipsum " * 50,
                      frontmatter={"title": f"Trap {worker}/{n}", "severity": "medium"})
        upsert_record(vault, "demo", kind="spec", slug="shared-spec",
                      body=f"last writer was {worker}/{n}\\n" + "x" * 4000)
        append_event(vault, "demo", event=f"worker {worker} event {n}")
    vault.close()
    """
)


@pytest.mark.slow
def test_eight_processes_upserting_and_appending_lose_nothing(vault_dir: Path) -> None:
    Vault.open(vault_dir).close()
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _WORKER, str(vault_dir), str(w), str(PER_WORKER)],
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
        )
        for w in range(WORKERS)
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=240)
        assert proc.returncode == 0, err

    vault = Vault.open(vault_dir)
    project = vault.project_dir("demo")
    traps = sorted(p.stem for p in (project / "traps").glob("*.md"))
    assert traps == sorted(f"w{w}-t{n}" for w in range(WORKERS) for n in range(PER_WORKER))
    logs = list((project / "logs").glob("*.md"))
    assert len(logs) == WORKERS * PER_WORKER
    bodies = {read_record(p).body for p in logs}
    assert bodies == {f"worker {w} event {n}\n" for w in range(WORKERS) for n in range(PER_WORKER)}

    shared = read_record(project / "specs" / "shared-spec.md")  # parses: never torn
    assert shared.body.endswith("x" * 4000)
    assert not [p for p in project.rglob("*") if p.name.startswith(".memosite-tmp-")]

    on_disk = {vault.relative(p) for p in vault.iter_record_files("demo")}
    in_index = {e.path for e in vault.index().entries("demo")}
    assert on_disk == in_index
    compiled = (project / "TRAPS.md").read_text(encoding="utf-8")
    assert all(f"Trap {w}/{n}" in compiled for w in range(WORKERS) for n in range(PER_WORKER))
    vault.close()


_HOLDER = textwrap.dedent(
    """
    import sys
    from memosite.vault import Vault

    vault = Vault.open(sys.argv[1])
    with vault.lock():
        print("held", flush=True)
        sys.stdin.readline()
    """
)


def test_the_vault_lock_is_exclusive_across_processes_and_threads_and_shared_within_a_process(
    vault_dir: Path,
) -> None:
    import threading

    from memosite import vault as vault_module
    from memosite.errors import LockTimeout

    first, second = Vault.open(vault_dir), Vault.open(vault_dir)
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(vault_dir)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        encoding="utf-8",
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with pytest.raises(LockTimeout, match="locked by another process"), first.lock(timeout=0.2):
            pass
    finally:
        holder.communicate("\n", timeout=30)
    assert holder.returncode == 0

    before = vault_module.lock_acquisitions
    with first.lock(), second.lock(timeout=0):  # two Vault objects on one directory: one lock
        outcome: list[str] = []

        def other_thread() -> None:
            try:
                with second.lock(timeout=0.2):
                    outcome.append("took it")
            except LockTimeout:
                outcome.append("waited, then gave up")

        thread = threading.Thread(target=other_thread)
        thread.start()
        thread.join()
    assert outcome == ["waited, then gave up"]
    assert vault_module.lock_acquisitions - before == 1
    with second.lock(timeout=0):  # released for real: free again
        pass
    first.close()
    second.close()


def test_views_stay_true_when_two_connections_take_turns_writing(vault_dir: Path) -> None:
    from memosite.store import forget_record, upsert_record

    one, other = Vault.open(vault_dir), Vault.open(vault_dir)
    for n, writer in enumerate([one, other, one, other, one]):
        upsert_record(
            writer,
            "demo",
            kind="trap",
            slug=f"turn-{n}",
            body=f"Turn {n} trap body\n",
            frontmatter={"title": f"Turn {n} title", "severity": "high"},
        )
    forget_record(other, "demo", record_id="turn-1")
    upsert_record(one, "demo", kind="decision", slug="after", body="Decided after the turns\n")
    traps = (vault_dir / "projects" / "demo" / "TRAPS.md").read_text(encoding="utf-8")
    index = (vault_dir / "projects" / "demo" / "INDEX.md").read_text(encoding="utf-8")
    for n in (0, 2, 3, 4):
        assert f"Turn {n} title" in traps and f"Turn {n} title" in index
    # Forgotten by the other connection: archived, in the inactive rows only.
    assert "[Turn 1 title](traps/turn-1.md) · trap · archived" in traps
    active = traps.split("Turn 1 title")[0]
    assert all(f"Turn {n} title" in active for n in (0, 2, 3, 4))
    assert "| [after](decisions/after.md) | Decided after the turns | active |" in index
    one.close()
    other.close()


_TRY_LOCK = textwrap.dedent(
    """
    import sys
    from memosite.errors import LockTimeout
    from memosite.vault import Vault

    try:
        with Vault.open(sys.argv[1]).lock(timeout=0):
            print("free")
    except LockTimeout:
        print("busy")
    """
)


def _lock_is_free_to_another_process(vault_dir: Path) -> bool:
    done = subprocess.run(
        [sys.executable, "-c", _TRY_LOCK, str(vault_dir)],
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=60,
        check=True,
    )
    return done.stdout.strip() == "free"


def test_a_vault_reached_through_a_symlink_shares_the_lock_of_the_vault(vault_dir: Path, tmp_path: Path) -> None:
    Vault.open(vault_dir).close()
    (tmp_path / "link").symlink_to(vault_dir.parent, target_is_directory=True)
    direct, linked = Vault.open(vault_dir), Vault.open(tmp_path / "link" / vault_dir.name)
    with direct.lock(), linked.lock(timeout=0):  # re-entrant: one lock, not a wait on itself
        assert not _lock_is_free_to_another_process(vault_dir)
    assert _lock_is_free_to_another_process(vault_dir)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork is POSIX")
def test_a_forked_child_leaving_the_lock_does_not_free_it_for_its_parent(vault_dir: Path) -> None:
    vault = Vault.open(vault_dir)
    ready, told = os.pipe()
    with vault.lock():
        child = os.fork()
        if child:
            os.read(ready, 1)  # the child has left its copy of this block
            assert not _lock_is_free_to_another_process(vault_dir)
    if child == 0:
        os.write(told, b"x")
        os._exit(0)
    os.waitpid(child, 0)
    assert _lock_is_free_to_another_process(vault_dir)
    vault.close()


def test_a_long_lived_reader_notices_when_another_process_empties_the_index(vault_dir: Path) -> None:
    # What a rebuild by another process looks like before it refills: no rows, no directory times.
    from memosite.refresh import DIRECTORIES_META
    from memosite.search import search_records
    from memosite.store import upsert_record

    server, other = Vault.open(vault_dir), Vault.open(vault_dir)
    upsert_record(server, "demo", kind="trap", slug="kept", body="Kept across a rebuild\n")
    assert [r.id for r in search_records(server, "demo", "rebuild").results] == ["kept"]
    other.index().clear("demo")
    other.index().set_meta(DIRECTORIES_META + "demo", "{}")
    assert [r.id for r in search_records(server, "demo", "rebuild").results] == ["kept"]
    server.close()
    other.close()
