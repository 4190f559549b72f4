"""Retrieval and gc timings on vaults of 1,000 and 10,000 records.

Prints, per vault size: in-process search p50/p95 over a fixed query set, the end-to-end wall time
of a ``memosite search`` CLI call (median of several), a bootstrap brief, and gc wall time (the
first pass, which has real work, and a second one with nothing left to do).

Targets at 10,000 records: search p50 ≤ 10 ms and p95 ≤ 40 ms; CLI search ≤ 300 ms; gc ≤ 10 s.
Run: .venv/bin/python benchmarks/bench_retrieval.py [--sizes 1000,10000] [--rounds 5] [--cli-runs 7]
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
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from memosite.bootstrap import build_bootstrap
from memosite.curator import run_gc
from memosite.indexing import reindex
from memosite.schema import Record, format_iso, serialize_record, validate_frontmatter
from memosite.search import search_records
from memosite.vault import Vault

PROJECT = "bench"
NOW = datetime.now(UTC)
MEMOSITE = Path(sys.executable).with_name("memosite")

_VOCABULARY_TEXT = """
cache retry payment checkout session cookie migration index query timeout deploy rollback queue
worker lock race schema column token auth login invoice rounding currency search redis postgres
latency memory leak thread async fixture flaky docker image cdn header proxy webhook signature
idempotency order stock inventory email template render component reducer hook route gateway
limit backoff jitter tenant billing export import csv parser encoding locale timezone cron
scheduler feature flag rollout canary metrics tracing alert pager dashboard oauth refresh
"""
VOCABULARY = _VOCABULARY_TEXT.split()
LAYERS = ("application", "domain", "web", "infrastructure", "tests", "devops", "other")
AREAS = ("payments", "auth", "web", "billing", "search", "orders", "jobs", "api", "infra", "tests")
# kind → share of the vault, roughly what a busy project accumulates
KIND_MIX = {
    "trap": 22,
    "decision": 12,
    "spec": 6,
    "plan": 8,
    "state": 2,
    "log": 32,
    "scratch": 6,
    "review": 6,
    "prompt": 4,
    "session": 2,
}

QUERIES: list[tuple[str | None, dict[str, Any]]] = [
    ("payment", {}),
    ("retry timeout", {}),
    ("idempotency", {"kinds": ["trap"]}),
    ('"memory leak"', {}),
    ("cach*", {}),
    ("redis OR postgres", {"sort": "updated"}),
    ("deploy", {"include_expired": True}),
    ("auth token", {"as_of": format_iso(NOW - timedelta(days=30))}),
    ("checkout", {"path": "src/payments/client.py"}),
    ("flaky fixture", {"tags": ["tests"]}),
    ("webhook signature", {"sort": "occurrences"}),
    ("lock race", {"kinds": ["trap", "decision"], "sort": "hits"}),
    ('auth" AND(', {}),  # an FTS syntax error, searched as plain words
    (None, {"kinds": ["decision"]}),
    (None, {"path": "src/auth"}),
    ("zzzznotaword", {}),
]


_FILLER_TEXT = "the a to of and in is for on with when it that not be by from this"
FILLER = tuple(_FILLER_TEXT.split())


_SYLLABLES = "ka lo mi ne ru sa to vi be do fa gu ha ji ko lu ma no pe qu ri se ti wa xe yo zu"


def _identifiers(count: int, seed: int = 5) -> list[str]:
    """Made-up but word-like names (modules, functions, error codes) for a realistic long tail."""
    rng = random.Random(seed)
    syllables = _SYLLABLES.split()
    names = {"".join(rng.choice(syllables) for _ in range(rng.randint(2, 4))) for _ in range(count * 2)}
    return sorted(names)[:count]


# Word frequencies in real notes follow Zipf's law: a few technical words are common, most are rare.
LEXICON = VOCABULARY + _identifiers(4000)
_ZIPF = [1.0 / (rank + 1) ** 1.05 for rank in range(len(LEXICON))]


def _sentence(rng: random.Random, words: int) -> str:
    picked = rng.choices(LEXICON, _ZIPF, k=words)
    return " ".join(rng.choice(FILLER) if rng.random() < 0.3 else word for word in picked)


def _frontmatter(rng: random.Random, kind: str, number: int) -> dict[str, Any]:
    created = NOW - timedelta(days=rng.uniform(0, 150), minutes=rng.uniform(0, 600))
    area = rng.choice(AREAS)
    fm: dict[str, Any] = {
        "id": f"{kind}-{number:06d}",
        "kind": kind,
        "project": PROJECT,
        "title": _sentence(rng, rng.randint(3, 8)).capitalize(),
        "created": format_iso(created),
        "updated": format_iso(created + timedelta(hours=rng.uniform(0, 72))),
        "tags": rng.sample(["tests", "security", "performance", "concurrency", area, "ops"], rng.randint(0, 3)),
    }
    if kind == "trap":
        fm.update(
            severity=rng.choice(("low", "medium", "high", "critical")),
            layer=rng.choice(LAYERS),
            occurrences=rng.randint(1, 12),
            hits=rng.randint(0, 40),
            pathPatterns=[
                rng.choice(
                    (
                        f"src/{area}/**/*.py",
                        f"src/{area}/{rng.choice(VOCABULARY)}.py",
                        f"src/{area}",
                        "**/conftest.py",
                    )
                )
            ],
        )
        if rng.random() < 0.05:
            fm.update(staleCount=3, helpfulCount=1)
    elif kind == "decision":
        fm["status"] = rng.choices(("active", "paused", "superseded", "archived"), (80, 8, 8, 4))[0]
    elif kind == "plan":
        fm["status"] = rng.choices(("active", "shipped", "paused"), (50, 40, 10))[0]
        if fm["status"] == "shipped":
            fm.update(outcome=_sentence(rng, 12) + ".", verifiedAtSha=f"{rng.getrandbits(160):040x}")
    elif kind == "log":
        fm["details"] = {"step": number, "area": area}
    if kind in ("trap", "decision", "plan", "spec") and rng.random() < 0.08:
        fm["ttl"] = f"{rng.randint(1, 90)}d"
    return fm


def build_vault(root: Path, count: int, seed: int = 3) -> Vault:
    """Write ``count`` varied record files straight to disk, then index them once."""
    rng = random.Random(seed)
    vault = Vault.open(root)
    kinds = list(KIND_MIX)
    weights = list(KIND_MIX.values())
    for number in range(count):
        kind = rng.choices(kinds, weights)[0]
        fm = _frontmatter(rng, kind, number)
        paragraphs = [_sentence(rng, rng.randint(15, 70)).capitalize() + "." for _ in range(rng.randint(1, 4))]
        if kind in ("trap", "decision") and rng.random() < 0.3:
            paragraphs.append(f"```python\n{rng.choice(VOCABULARY)}({rng.choice(VOCABULARY)}=True)\n```")
        path = vault.record_path(PROJECT, kind, fm["id"])
        path.parent.mkdir(parents=True, exist_ok=True)
        record = Record(validate_frontmatter(fm), "\n\n".join(paragraphs) + "\n")
        path.write_text(serialize_record(record), encoding="utf-8")
    reindex(vault, [PROJECT])
    return vault


def percentile(values: list[float], pct: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(pct / 100 * (len(ordered) - 1)))]


def bench_search(vault: Vault, rounds: int) -> tuple[float, float, float]:
    for query, options in QUERIES:  # warm the page cache and the statement cache once
        search_records(vault, PROJECT, query, now=NOW, **options)
    timings = []
    for _ in range(rounds):
        for query, options in QUERIES:
            started = time.perf_counter()
            search_records(vault, PROJECT, query, now=NOW, **options)
            timings.append((time.perf_counter() - started) * 1000)
    return percentile(timings, 50), percentile(timings, 95), max(timings)


def bench_cli(root: Path, runs: int) -> float:
    env = {**os.environ, "MEMOSITE_VAULT": str(root), "MEMOSITE_PROJECT": PROJECT}
    command = [str(MEMOSITE), "search", "payment", "retry", "--json"]
    timings = []
    for _ in range(runs + 1):
        started = time.perf_counter()
        done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
        timings.append((time.perf_counter() - started) * 1000)
        if done.returncode != 0:
            raise SystemExit(f"memosite search failed: {done.stderr.strip()}")
        json.loads(done.stdout)
    return statistics.median(timings[1:])


def measure(size: int, rounds: int, cli_runs: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="memosite-bench-") as tmp:
        root = Path(tmp) / "vault"
        started = time.perf_counter()
        vault = build_vault(root, size)
        figures = {
            "build_s": time.perf_counter() - started,
            "records": float(vault.index().count(PROJECT)),
        }
        figures["p50_ms"], figures["p95_ms"], figures["max_ms"] = bench_search(vault, rounds)
        figures["cli_ms"] = bench_cli(root, cli_runs)
        started = time.perf_counter()
        build_bootstrap(vault, PROJECT, query="payment retry", path="src/payments/client.py", now=NOW)
        figures["bootstrap_ms"] = (time.perf_counter() - started) * 1000
        started = time.perf_counter()
        result = run_gc(vault, PROJECT, now=NOW)
        figures["gc_s"] = time.perf_counter() - started
        figures["gc_changed"] = float(
            len(result.purged_files)
            + len(result.archived_files)
            + result.compacted_plans_count
            + result.compacted_logs_count
        )
        started = time.perf_counter()
        run_gc(vault, PROJECT, now=NOW)
        figures["gc_again_s"] = time.perf_counter() - started
        vault.close()
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000")
    parser.add_argument("--rounds", type=int, default=5, help="passes over the query set")
    parser.add_argument("--cli-runs", type=int, default=7)
    args = parser.parse_args()
    print(f"{len(QUERIES)} queries x {args.rounds} rounds; CLI: median of {args.cli_runs} runs")
    header = (
        f"{'records':>8} {'build s':>8} {'p50 ms':>7} {'p95 ms':>7} {'max ms':>7} {'cli ms':>7} "
        f"{'brief ms':>8} {'gc s':>6} {'changed':>8} {'gc again s':>10}"
    )
    print(header)
    for size in (int(s) for s in args.sizes.split(",")):
        f = measure(size, args.rounds, args.cli_runs)
        print(
            f"{int(f['records']):>8} {f['build_s']:>8.2f} {f['p50_ms']:>7.2f} {f['p95_ms']:>7.2f} "
            f"{f['max_ms']:>7.2f} {f['cli_ms']:>7.0f} {f['bootstrap_ms']:>8.1f} {f['gc_s']:>6.2f} "
            f"{int(f['gc_changed']):>8} {f['gc_again_s']:>10.2f}"
        )


if __name__ == "__main__":
    main()
