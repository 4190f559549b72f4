"""Upsert latency (p50/p95) on vaults of 1,000 and 10,000 records.

Target (issue 2): p50 ≤ 30 ms at 10,000 records, and p50 at 10,000 within 2× of p50 at 1,000.
Both vaults are built first; then rounds of writes alternate between them, so that whatever else
the machine is doing weighs on both sizes alike. A long-lived process (the MCP server) keeps
assembled view pieces in memory; "fresh ms" is the first upsert of a fresh process (imports
excluded), which has to assemble every view it rewrites, and "cli ms" a whole ``memosite upsert``
command (interpreter start, imports, git identity, the write). The vaults are synced to disk
before any write is timed.

Run: .venv/bin/python benchmarks/bench_store.py [--sizes 1000,10000] [--ops 400] [--rounds 8]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _vaultgen import SEVERITIES, WORDS, build_vault, sentence

from memosite.store import append_event, upsert_record
from memosite.vault import Vault

KINDS = ("trap", "decision", "spec", "append")
_FRESH = """
import sys, time
import memosite.store, memosite.views  # what a write loads (some of it on first use): imports excluded
from memosite.store import upsert_record
from memosite.vault import Vault
vault = Vault.open(sys.argv[1])
started = time.perf_counter()
upsert_record(vault, "bench", kind="trap", body="fresh process trap " + sys.argv[2], slug="fresh-" + sys.argv[2],
              path="src/fresh/x.py", allow_duplicate=True)
print((time.perf_counter() - started) * 1000)
"""


def fresh_process_ms(root: Path, samples: int = 5) -> float:
    """Median latency of the first upsert in a new process."""
    times = []
    for n in range(samples):
        out = subprocess.run(
            [sys.executable, "-c", _FRESH, str(root), str(n)], capture_output=True, text=True, check=True
        )
        times.append(float(out.stdout))
    return statistics.median(times)


def cli_ms(root: Path, samples: int = 5) -> float:
    """Median wall time of a whole ``memosite upsert`` command: interpreter, imports, the write."""
    times = []
    for n in range(samples):
        command = [
            sys.executable,
            "-m",
            "memosite",
            "upsert",
            "--vault",
            str(root),
            "--project",
            "bench",
            "--kind",
            "trap",
        ]
        command += ["--slug", f"cli-{n}", "--path", "src/cli/x.py", "--body", f"cli trap {n}", "--allow-duplicate"]
        started = time.perf_counter()
        subprocess.run(command, capture_output=True, text=True, encoding="utf-8", check=True)
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def percentile(values: list[float], pct: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(pct / 100 * (len(ordered) - 1)))]


def one_write(vault: Vault, rng: random.Random, n: int) -> tuple[str, float]:
    which = KINDS[n % len(KINDS)]
    body = sentence(rng, 60) + "\n"
    started = time.perf_counter()
    if which == "append":
        append_event(vault, "bench", event=body)
    elif which == "trap":
        upsert_record(
            vault,
            "bench",
            kind="trap",
            body=body,
            slug=f"new-trap-{n}",
            path=f"src/{rng.choice(WORDS)}/x.py",
            frontmatter={"title": sentence(rng, 5), "severity": rng.choice(SEVERITIES)},
        )
    else:
        upsert_record(
            vault, "bench", kind=which, body=body, slug=f"new-{which}-{n % 20}", frontmatter={"title": sentence(rng, 5)}
        )
    return which, (time.perf_counter() - started) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="1000,10000")
    parser.add_argument("--ops", type=int, default=400, help="writes per vault")
    parser.add_argument("--rounds", type=int, default=8, help="alternations between the vaults")
    args = parser.parse_args()
    sizes = [int(size) for size in args.sizes.split(",")]
    with tempfile.TemporaryDirectory(prefix="memosite-bench-") as tmp:
        vaults, build_seconds = {}, {}
        for size in sizes:
            started = time.perf_counter()
            vaults[size] = build_vault(Path(tmp) / f"vault-{size}", size)
            build_seconds[size] = time.perf_counter() - started
        # The build leaves megabytes of dirty pages; measured writes would otherwise share the disk
        # with their write-back (each write fsyncs its record), and a larger build would look slower.
        if hasattr(os, "sync"):
            os.sync()
        timings: dict[int, dict[str, list[float]]] = {size: {kind: [] for kind in KINDS} for size in sizes}
        rngs = {size: random.Random(11) for size in sizes}
        per_round = max(1, args.ops // args.rounds)
        for round_number in range(args.rounds):
            for size in sizes:
                for n in range(round_number * per_round, (round_number + 1) * per_round):
                    which, ms = one_write(vaults[size], rngs[size], n)
                    timings[size][which].append(ms)
        for vault in vaults.values():
            vault.close()
        fresh = {size: fresh_process_ms(Path(tmp) / f"vault-{size}") for size in sizes}
        cli = {size: cli_ms(Path(tmp) / f"vault-{size}") for size in sizes}

    header = ("records", "build s", "p50 ms", "p95 ms", "trap", "decision", "spec", "append", "fresh ms", "cli ms")
    widths = (8, 8, 8, 8, 7, 9, 7, 7, 9, 7)
    print(" ".join(f"{name:>{width}}" for name, width in zip(header, widths, strict=True)))
    p50s = {}
    for size in sizes:
        every = [ms for values in timings[size].values() for ms in values]
        p50s[size] = statistics.median(every)
        kinds = [statistics.median(timings[size][kind]) for kind in KINDS]
        print(
            f"{size:>8} {build_seconds[size]:>8.1f} {p50s[size]:>8.2f} {percentile(every, 95):>8.2f}"
            f" {kinds[0]:>7.2f} {kinds[1]:>9.2f} {kinds[2]:>7.2f} {kinds[3]:>7.2f} {fresh[size]:>9.2f}"
            f" {cli[size]:>7.0f}"
        )
    if len(sizes) >= 2:
        small, large = sizes[0], sizes[-1]
        print(
            f"p50 ratio {large} / {small}: {p50s[large] / p50s[small]:.2f}x (target ≤ 2x);"
            f" p50 at {large}: {p50s[large]:.2f} ms (target ≤ 30 ms)"
        )


if __name__ == "__main__":
    main()
