"""Eight processes writing into one vault at once: nothing lost, nothing torn, index agrees with files."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from memosite.indexing import read_record
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
