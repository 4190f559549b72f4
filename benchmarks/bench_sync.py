"""Sync cost: bringing 100 and 1,000 changed records into a 10,000-record vault, and a no-op sync.

Target (issue 12): cost proportional to the changes, not the vault — the 1,000-change sync at most
12× the 100-change one — and a sync with nothing to do in at most 0.5 s.

Machine A builds the vault and publishes it to a bare remote; machine B joins it. Then, for each
size, A changes that many records (bodies and ``updated`` rewritten, as a teammate's edits would)
and pushes — timed too: the push side commits, checks and scans for secrets what leaves — and B
syncs them in, timed, once as a fast-forward (nothing local) and once as a real merge (B changed
one record of its own meanwhile). Each figure is the median of ``--rounds``; CPU time counts
memosite's process and the git processes it ran.

Run: .venv/bin/python benchmarks/bench_sync.py [--records 10000] [--sizes 100,1000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _vaultgen import build_vault, sentence

from memosite.schema import format_iso, parse_record, serialize_record, utc_now
from memosite.store import upsert_record
from memosite.sync.run import sync_vault
from memosite.vault import Vault

PROJECT = "bench"


def git(*args: str) -> str:
    return subprocess.run(["git", *args], capture_output=True, text=True, encoding="utf-8", check=True).stdout


def enable_git(root: Path, remote: Path) -> None:
    config = json.loads((root / "config.json").read_text(encoding="utf-8"))
    config["vaultGit"] = {**config.get("vaultGit", {}), "enabled": True, "remote": str(remote)}
    (root / "config.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")


def change_records(vault: Vault, count: int, rng: random.Random) -> None:
    """Rewrite ``count`` records as a teammate's edits would (new body, new ``updated``)."""
    files = sorted(vault.iter_record_files(PROJECT))
    stamp = format_iso(utc_now())
    for path in rng.sample(files, count):
        record = parse_record(path.read_text(encoding="utf-8"), validate=False)
        record.frontmatter["updated"] = stamp
        record.body = sentence(rng, 40) + ".\n"
        path.write_text(serialize_record(record), encoding="utf-8")


def cpu_seconds() -> float:
    """User and system time of this process and of the children it waited for (git)."""
    times = os.times()
    return times.user + times.system + times.children_user + times.children_system


def timed_sync(vault: Vault) -> tuple[float, str, int]:
    started = time.perf_counter()
    result = sync_vault(vault)
    return time.perf_counter() - started, result.integration, len(result.changed) + len(result.added)


def cpu_of_sync(vault: Vault) -> float:
    started = cpu_seconds()
    sync_vault(vault)
    return cpu_seconds() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=10_000)
    parser.add_argument("--sizes", default="100,1000")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    rng = random.Random(12)
    with tempfile.TemporaryDirectory(prefix="memosite-bench-sync-") as scratch:
        base = Path(scratch)
        os.environ["HOME"] = str(base)  # git identity: memosite's fallback, no person's config
        remote = base / "remote.git"
        git("init", "-q", "--bare", "-b", "main", str(remote))
        started = time.perf_counter()
        a = build_vault(base / "a", args.records, PROJECT)
        enable_git(a.root, remote)
        a = Vault.open(a.root)
        sync_vault(a)
        print(f"built and published a {args.records}-record vault in {time.perf_counter() - started:.1f} s")
        Vault.open(base / "b").close()
        enable_git(base / "b", remote)
        b = Vault.open(base / "b")
        joined, _, added = timed_sync(b)
        print(f"a new machine joined it (checkout, index {added} records) in {joined:.1f} s")

        noop = [timed_sync(b)[0] for _ in range(5)]
        figures: dict[tuple[str, int], float] = {}
        pushes: dict[int, list[float]] = {size: [] for size in sizes}
        for size in sizes:
            for mode in ("fast-forward", "merge"):
                runs = []
                for _ in range(args.rounds):
                    change_records(a, size, rng)
                    pushes[size].append(cpu_of_sync(a))
                    if mode == "merge":
                        upsert_record(b, PROJECT, kind="trap", slug="local-change", body=sentence(rng, 12))
                    seconds, integration, arrived = timed_sync(b)
                    assert integration == mode and arrived >= size, (integration, arrived)
                    runs.append(seconds)
                    sync_vault(a)  # take B's merge back, so the next round starts even
                figures[(mode, size)] = statistics.median(runs)
        noop += [timed_sync(b)[0] for _ in range(5)]
        noop_cpu = statistics.median(cpu_of_sync(b) for _ in range(5))

        print(f"\nsync into a {args.records}-record vault (median of {args.rounds}):")
        print(f"{'changed records':>16} {'fast-forward':>14} {'merge':>10}")
        for size in sizes:
            ff, merge = figures[("fast-forward", size)], figures[("merge", size)]
            print(f"{size:>16} {ff * 1000:>11.0f} ms {merge * 1000:>7.0f} ms")
        if len(sizes) >= 2:
            small, large = sizes[0], sizes[-1]
            target = 1.2 * large / small  # 12x for 1,000 against 100: proportional, with slack
            for mode in ("fast-forward", "merge"):
                ratio = figures[(mode, large)] / figures[(mode, small)]
                verdict = "ok" if ratio <= target else "over target"
                print(f"ratio {large}/{small} ({mode}): {ratio:.1f}x (target <= {target:.0f}x) {verdict}")
        print(f"\npush of the changed records (commit, checks, secret scan), CPU (median of {2 * args.rounds}):")
        for size in sizes:
            print(f"{size:>16} {statistics.median(pushes[size]) * 1000:>11.0f} ms")
        print(f"{'no-op baseline':>16} {noop_cpu * 1000:>11.0f} ms")
        median_noop = statistics.median(noop)
        verdict = "ok" if median_noop <= 0.5 else "over target"
        spread = f"median {median_noop * 1000:.0f} ms, max {max(noop) * 1000:.0f} ms"
        print(f"no-op sync: {spread} (target <= 500 ms) {verdict}")
        a.close()
        b.close()


if __name__ == "__main__":
    main()
