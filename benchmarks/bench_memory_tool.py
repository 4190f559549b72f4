"""What the memory tool and an import cost over the store they write through (CPU time).

Baseline in the same run: the same number of plain ``upsert_record`` calls. Then the memory tool's
``create`` and ``str_replace`` (each reads the tree from the index and writes through the store),
``view`` of a file and of ``/memories``, and ``memosite import adr`` of a folder of ADRs: the first
import, and the second one that changes nothing (it reads and compares, and writes no file).

Run: .venv/bin/python benchmarks/bench_memory_tool.py [--ops 100] [--adrs 300]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from memosite.importers import import_path
from memosite.memorytool.backend import MemoryBackend
from memosite.store import upsert_record
from memosite.vault import Vault


def cpu_ms(work: Callable[[], object], count: int) -> float:
    """CPU milliseconds per call of ``work`` run ``count`` times."""
    started = time.process_time()
    for _ in range(count):
        work()
    return (time.process_time() - started) * 1000 / count


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--ops", type=int, default=100)
    parser.add_argument("--adrs", type=int, default=300)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        vault = Vault.open(root / "vault")
        backend = MemoryBackend(vault, "bench")
        counter = iter(range(10**6))

        def upsert() -> object:
            n = next(counter)
            return upsert_record(vault, "bench", kind="trap", body=f"plain trap {n}", slug=f"plain-{n}")

        def create() -> object:
            n = next(counter)
            return backend.run({"command": "create", "path": f"/memories/traps/t-{n}.md", "file_text": f"trap {n}\n"})

        current = ["value-start"]

        def replace() -> object:
            new = f"value-{next(counter)}"
            done = backend.run(
                {"command": "str_replace", "path": "/memories/traps/edited.md", "old_str": current[0], "new_str": new}
            )
            current[0] = new
            return done

        rows = [("upsert_record (baseline)", cpu_ms(upsert, args.ops))]
        rows.append(("memory create", cpu_ms(create, args.ops)))
        backend.run({"command": "create", "path": "/memories/traps/edited.md", "file_text": "value-start\n"})
        rows.append(("memory str_replace", cpu_ms(replace, args.ops)))
        rows.append(
            (
                "memory view file",
                cpu_ms(lambda: backend.run({"command": "view", "path": "/memories/traps/edited.md"}), args.ops),
            )
        )
        rows.append(
            ("memory view /memories", cpu_ms(lambda: backend.run({"command": "view", "path": "/memories"}), 20))
        )
        folder = root / "adr"
        folder.mkdir()
        for n in range(1, args.adrs + 1):
            (folder / f"{n:04d}-decision-{n}.md").write_text(
                f"# {n}. Decision {n}\n\nDate: 2024-01-01\n\n## Status\n\nAccepted\n\n## Context\n\nBecause {n}.\n",
                encoding="utf-8",
            )
        first = cpu_ms(lambda: import_path(vault, "adrs", "adr", folder, dry_run=False), 1)
        again = cpu_ms(lambda: import_path(vault, "adrs", "adr", folder, dry_run=False), 1)
        rows.append((f"import adr, {args.adrs} ADRs, first (per ADR)", first / args.adrs))
        rows.append((f"import adr, {args.adrs} ADRs, unchanged (per ADR)", again / args.adrs))
        vault.close()
    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        print(f"{name:<{width}}  {value:8.2f} ms CPU")


if __name__ == "__main__":
    main()
