"""Upsert latency (p50/p95) on vaults of 1,000 and 10,000 records.

Target (issue 2): p50 ≤ 30 ms at 10,000 records, and p50 at 10,000 within 2× of p50 at 1,000.
Run: .venv/bin/python benchmarks/bench_store.py [--sizes 1000,10000] [--ops 200]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _vaultgen import SEVERITIES, WORDS, build_vault, sentence

from memosite.store import append_event, upsert_record


def percentile(values: list[float], pct: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(pct / 100 * (len(ordered) - 1)))]


def measure(size: int, ops: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="memosite-bench-") as tmp:
        started = time.perf_counter()
        vault = build_vault(Path(tmp) / "vault", size)
        build_s = time.perf_counter() - started
        rng = random.Random(11)
        timings: dict[str, list[float]] = {"trap": [], "decision": [], "spec": [], "append": []}
        for n in range(ops):
            which = ("trap", "decision", "spec", "append")[n % 4]
            body = sentence(rng, 60) + "\n"
            t0 = time.perf_counter()
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
                    vault,
                    "bench",
                    kind=which,
                    body=body,
                    slug=f"new-{which}-{n % 20}",
                    frontmatter={"title": sentence(rng, 5)},
                )
            timings[which].append((time.perf_counter() - t0) * 1000)
        vault.close()
    every = [t for values in timings.values() for t in values]
    return {
        "size": size,
        "build_s": build_s,
        "p50": statistics.median(every),
        "p95": percentile(every, 95),
        **{f"{k}_p50": statistics.median(v) for k, v in timings.items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="1000,10000")
    parser.add_argument("--ops", type=int, default=400)
    args = parser.parse_args()
    results = [measure(int(size), args.ops) for size in args.sizes.split(",")]
    header = ("records", "build s", "p50 ms", "p95 ms", "trap", "decision", "spec", "append")
    widths = (8, 8, 8, 8, 7, 9, 7, 7)
    print(" ".join(f"{name:>{width}}" for name, width in zip(header, widths, strict=True)))
    for r in results:
        print(
            f"{r['size']:>8} {r['build_s']:>8.1f} {r['p50']:>8.2f} {r['p95']:>8.2f} {r['trap_p50']:>7.2f}"
            f" {r['decision_p50']:>9.2f} {r['spec_p50']:>7.2f} {r['append_p50']:>7.2f}"
        )
    if len(results) >= 2:
        ratio = results[-1]["p50"] / results[0]["p50"]
        print(
            f"p50 ratio {results[-1]['size']} / {results[0]['size']}: {ratio:.2f}x (target ≤ 2x);"
            f" p50 at {results[-1]['size']}: {results[-1]['p50']:.2f} ms (target ≤ 30 ms)"
        )


if __name__ == "__main__":
    main()
