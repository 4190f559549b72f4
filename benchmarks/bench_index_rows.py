"""Reading the index and walking the files, as a warm site build does it once per project (issue 24).

A warm rebuild after one record changed reads every durable record's row (``Index.entries``, for the
site's record memo) and stats every record file (``refresh_project`` behind ``recompile_projects``).
Each is timed (CPU, per call) against a baseline in the same run that does the same work the plain
way: every row fetched with ``SELECT *`` as a ``sqlite3.Row``, each column looked up by name and each
JSON column decoded on its own; every file listed as a ``Path``, stat-ed and made relative with
``Path.relative_to``. Both sides return the same values (checked). Rounds alternate the two, so the
machine's other load weighs on both alike.

Run: .venv/bin/python benchmarks/bench_index_rows.py [--size 10000] [--rounds 7]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _vaultgen import build_vault

from memosite.index import IndexEntry
from memosite.index.entry import COLUMNS
from memosite.kinds import DURABLE_KINDS
from memosite.refresh import record_file_stats, refresh_project
from memosite.vault import Vault

PROJECT = "bench"
NOT_READ_BACK = ("tags_json", "folded", "unspaced", "pattern_prefixes")


def plain_entries(vault: Vault) -> list[IndexEntry]:
    """``Index.entries(PROJECT, kinds=DURABLE_KINDS)`` read the plain way (the baseline)."""
    marks = ", ".join("?" for _ in DURABLE_KINDS)
    rows = vault.index().conn.execute(
        f"SELECT * FROM records WHERE project = ? AND kind IN ({marks}) ORDER BY project, kind, updated DESC",
        (PROJECT, *DURABLE_KINDS),
    )
    found = []
    for row in rows:
        data = {name: row[name] for name in COLUMNS if name not in NOT_READ_BACK}
        data["tags"] = json.loads(row["tags_json"])
        data["path_patterns"] = json.loads(row["path_patterns"])
        data["frontmatter"] = json.loads(row["frontmatter"])
        found.append(IndexEntry(**data))
    return found


def plain_walk(vault: Vault) -> list[tuple[str, str, int, int]]:
    """``record_file_stats`` with a Path per file (the baseline)."""
    found = []
    for path in vault.iter_record_files(PROJECT):
        stat = path.stat()
        found.append((vault.relative(path), str(path), stat.st_mtime_ns, stat.st_size))
    return found


def walk(vault: Vault) -> list[tuple[str, str, int, int]]:
    return [(rel, path, stat.st_mtime_ns, stat.st_size) for rel, path, stat in record_file_stats(vault, PROJECT)]


def cpu_ms(call: Callable[[], Any]) -> float:
    started = time.process_time()
    call()
    return (time.process_time() - started) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        vault = build_vault(Path(tmp) / "vault", args.size, PROJECT)
        index = vault.index()
        assert index.entries(PROJECT, kinds=DURABLE_KINDS) == plain_entries(vault)
        assert walk(vault) == plain_walk(vault)
        pairs: dict[str, tuple[Callable[[], Any], Callable[[], Any]]] = {
            "entries(durable kinds)": (
                lambda: plain_entries(vault),
                lambda: index.entries(PROJECT, kinds=DURABLE_KINDS),
            ),
            "record file walk": (lambda: plain_walk(vault), lambda: walk(vault)),
        }
        times: dict[str, tuple[list[float], list[float]]] = {name: ([], []) for name in pairs}
        refresh: list[float] = []
        for _ in range(args.rounds):
            for name, (baseline, measured) in pairs.items():
                times[name][0].append(cpu_ms(baseline))
                times[name][1].append(cpu_ms(measured))
            refresh.append(cpu_ms(lambda: refresh_project(vault, PROJECT, embed=False)))
        vault.close()
    print(f"{args.size:,} records, {args.rounds} rounds, CPU ms per call (median, min)")
    print(f"{'':26} {'baseline':>16} {'memosite':>16} {'ratio':>6}")
    for name, (base, ours) in times.items():
        ratio = statistics.median(ours) / statistics.median(base)
        print(
            f"{name:26} {statistics.median(base):8.1f} {min(base):7.1f} "
            f"{statistics.median(ours):8.1f} {min(ours):7.1f} {ratio:6.2f}"
        )
    print(f"{'refresh_project, no change':26} {'':16} {statistics.median(refresh):8.1f} {min(refresh):7.1f}")


if __name__ == "__main__":
    main()
