"""Session log benchmark: buffered append throughput, reopen time, search latency.

    python benchmarks/bench_sessions.py [--events 100000] [--dir DIR]

Targets (issue 6): >= 50,000 events/s buffered; reopen of a 100,000-event session with valid
metadata <= 200 ms without a rescan; search p50 <= 20 ms over 100,000 events.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import string
import tempfile
import time
from pathlib import Path

from memosite.sessions import Session, postings, search_sessions
from memosite.sessions.log import EventLog
from memosite.sessions.paths import SessionPaths
from memosite.vault import Vault


def make_vault(root: Path) -> Vault:
    Vault.open(root).close()  # creates the vault and its default config.json
    config = json.loads((root / "config.json").read_text(encoding="utf-8"))
    # The default cap (10,000 events) would evict most of a 100,000-event session.
    config["sessions"].update(capEvents=10_000_000, capBytes=1 << 40)
    (root / "config.json").write_text(json.dumps(config), encoding="utf-8")
    return Vault.open(root)


def vocabulary(rng: random.Random, size: int = 5000) -> list[str]:
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(3, 9))))
    return sorted(words)


def texts(rng: random.Random, words: list[str], count: int) -> list[str]:
    weights = [1.0 / (rank + 1) for rank in range(len(words))]  # Zipf-like word frequencies
    return [" ".join(rng.choices(words, weights, k=rng.randint(12, 30))) for _ in range(count)]


CPU_APPENDING: dict[str, float] = {}


def fill(vault: Vault, session_id: str, bodies: list[str], turn_size: int) -> tuple[float, float, list[float]]:
    """Append ``bodies`` in turns of ``turn_size`` events.

    Returns (total seconds, seconds spent in buffered appends, each boundary's flush in ms); the
    CPU seconds of the buffered appends (secret scan included) are added to ``CPU_APPENDING``.
    """
    session = Session.start(vault, "bench", session_id=session_id, sync_record=False)
    appending = 0.0
    boundaries: list[float] = []
    began = time.perf_counter()
    for start in range(0, len(bodies), turn_size):
        mark = time.perf_counter()
        session.start_turn()
        boundaries.append((time.perf_counter() - mark) * 1000)
        mark, cpu_mark = time.perf_counter(), time.process_time()
        for body in bodies[start : start + turn_size]:
            session.append("message", text=body)
        appending += time.perf_counter() - mark
        CPU_APPENDING[session_id] = CPU_APPENDING.get(session_id, 0.0) + time.process_time() - cpu_mark
        mark = time.perf_counter()
        session.end_turn()
        boundaries.append((time.perf_counter() - mark) * 1000)
    session.close()
    return time.perf_counter() - began, appending, boundaries


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--dir", help="work directory (default: a temporary one)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(args.dir or scratch) / "vault"
        vault = make_vault(root)
        rng = random.Random(6)
        words = vocabulary(rng)
        bodies = texts(rng, words, args.events)

        print(
            f"memosite session benchmark — {args.events:,} events, {len(words):,}-word vocabulary; every event "
            "passes the secret scan (CPU events/s: the appends' own CPU time, which other load does not change)"
        )
        for turn_size in (1000, 50):
            total, appending, boundaries = fill(vault, f"append-{turn_size}", bodies, turn_size)
            cpu = CPU_APPENDING[f"append-{turn_size}"]
            print(
                f"  turns of {turn_size:>4} events: buffered appends {args.events / appending:>9,.0f} events/s "
                f"(CPU {args.events / cpu:>9,.0f} events/s); "
                f"end to end incl. flushes {args.events / total:>9,.0f} events/s; "
                f"flush per turn boundary p50 {percentile(boundaries, 0.5):.1f} ms, "
                f"p95 {percentile(boundaries, 0.95):.1f} ms"
            )

        big = "append-1000"
        paths = SessionPaths.for_session(vault, "bench", big)
        size_mb = paths.events.stat().st_size / 1e6
        reopen_ms: list[float] = []
        for _ in range(7):
            began = time.perf_counter()
            session = Session.open(vault, "bench", big, sync_record=False)
            reopen_ms.append((time.perf_counter() - began) * 1000)
            assert session.log.rescan_reason is None, session.log.rescan_reason
            session.close()
        print(
            f"  reopen {args.events:,} events ({size_mb:.1f} MB), valid metadata, no rescan: "
            f"median {statistics.median(reopen_ms):.1f} ms, max {max(reopen_ms):.1f} ms"
        )
        paths.manifest.unlink()
        began = time.perf_counter()
        log = EventLog.open(paths, "bench", writable=False)
        print(
            f"  for comparison, a rescan after deleting the manifest: "
            f"{(time.perf_counter() - began) * 1000:.0f} ms ({log.rescan_reason})"
        )

        # Search one 100,000-event session (the 50-event-turn copy), so N really is 100,000.
        target = "append-50"
        postings.clear_cache()
        began = time.perf_counter()
        search_sessions(vault, "bench", words[10], session_id=target)
        print(f"  search index build (first query, writes index/search.bin): {time.perf_counter() - began:.2f} s")
        postings.clear_cache()
        began = time.perf_counter()
        search_sessions(vault, "bench", words[10], session_id=target)
        print(
            f"  first query of a fresh process (loads index/search.bin): {(time.perf_counter() - began) * 1000:.0f} ms"
        )

        query_rng = random.Random(7)
        latencies: list[float] = []
        for _ in range(args.queries):
            # Mostly mid-frequency words, sometimes a very common one, one to three words.
            query = " ".join(
                words[int(query_rng.paretovariate(0.6)) % len(words)] for _ in range(query_rng.randint(1, 3))
            )
            began = time.perf_counter()
            search_sessions(vault, "bench", query, session_id=target, limit=10)
            latencies.append((time.perf_counter() - began) * 1000)
        print(
            f"  search over {args.events:,} events ({args.queries} queries, 1–3 words, top 10): "
            f"p50 {percentile(latencies, 0.5):.1f} ms, p95 {percentile(latencies, 0.95):.1f} ms, "
            f"max {max(latencies):.1f} ms"
        )
        common = " ".join(words[:3])
        began = time.perf_counter()
        search_sessions(vault, "bench", common, session_id=target)
        print(f"  worst case, the three most common words: {(time.perf_counter() - began) * 1000:.0f} ms")


if __name__ == "__main__":
    main()
