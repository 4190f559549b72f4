"""Retrieval and gc timings on vaults of 1,000 and 10,000 (and 50,000) records.

Prints, per vault size: the time to index the files (``reindex``, wall and CPU, and with hybrid search
on the CPU time of the same reindex with it off: what computing the vectors costs) and the index's
size on disk (with the shares of the trigram table that serves unspaced scripts and of the vectors),
in-process search p50/p95 over a fixed query set (FTS syntax, filters, natural-language questions,
Chinese and Japanese), the end-to-end wall time of a ``memosite search`` CLI call (median of several),
bootstrap briefs p50/p95, and gc wall time (the first pass, which has real work, and a second one
with nothing left to do).

A share of the records (``--unspaced``, 5 % by default) carry Chinese or Japanese paragraphs, as a
project with an international team accumulates.

Search, the CLI call and briefs are timed with hybrid search on (``memosite[semantic]``) and off
(``search.semantic: false``) in the same run; the CLI row also gives the child process's CPU time,
which is what loading the model adds to a fresh ``memosite search``.

Targets at 10,000 records: search p50 ≤ 10 ms and p95 ≤ 40 ms; CLI search ≤ 300 ms; gc ≤ 10 s.
The record files of each size are written once into the benchmark cache outside the repository
(``_vaultgen.cached_files``) and indexed here by the code measured.

Run: .venv/bin/python benchmarks/bench_retrieval.py [--sizes 1000,10000,50000] [--rounds 5] [--cli-runs 7]
     [--unspaced 0.05] [--modes hybrid,words]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _vaultgen import cached_files

from memosite.bootstrap import build_bootstrap
from memosite.curator import run_gc
from memosite.refresh import reindex
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
    ("how do payment retries work", {}),  # natural language: all words, then any
    ("why postgres", {}),
    ("cookie samesite cdn logout", {}),
    ("retr", {}),  # the last word is a prefix
    ("锁表", {}),  # unspaced scripts: substrings
    ("数据库迁移", {"kinds": ["trap"]}),
    ("キャッシュの無効化", {}),
]
BRIEFS: list[dict[str, Any]] = [
    {"query": "payment retry", "path": "src/payments/client.py"},
    {"query": "how do payment retries work"},
    {"path": "src/auth/oauth/client.py"},
    {},
    {"query": "数据库迁移 锁表"},
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
# Chinese and Japanese technical words, written without spaces between them.
_UNSPACED_TEXT = """
数据库 迁移 锁表 订单 支付 重试 缓存 失效 会话 超时 部署 回滚 队列 索引 查询 并发 死锁 日志 测试 配置
キャッシュ 無効化 データベース セッション タイムアウト 在庫 注文 決済 再試行 ロック 移行 デプロイ 設定
"""
UNSPACED_WORDS = _UNSPACED_TEXT.split()
_UNSPACED_ZIPF = [1.0 / (rank + 1) for rank in range(len(UNSPACED_WORDS))]


def _sentence(rng: random.Random, words: int) -> str:
    picked = rng.choices(LEXICON, _ZIPF, k=words)
    return " ".join(rng.choice(FILLER) if rng.random() < 0.3 else word for word in picked)


def _unspaced_sentence(rng: random.Random, words: int) -> str:
    return "".join(rng.choices(UNSPACED_WORDS, _UNSPACED_ZIPF, k=words)) + "。"


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


def write_vault(root: Path, count: int, seed: int = 3, unspaced: float = 0.05) -> Vault:
    """``count`` varied record files (not indexed yet), from the benchmark cache after the first run."""
    cached_files(f"retrieval-v1-{seed}-{unspaced}", count, lambda at: write_files(at, count, seed, unspaced), root)
    return Vault.open(root)


def write_files(root: Path, count: int, seed: int = 3, unspaced: float = 0.05) -> None:
    """Write ``count`` varied record files straight to disk (not indexed)."""
    rng = random.Random(seed)
    vault = Vault.open(root)
    kinds = list(KIND_MIX)
    weights = list(KIND_MIX.values())
    for number in range(count):
        kind = rng.choices(kinds, weights)[0]
        fm = _frontmatter(rng, kind, number)
        paragraphs = [_sentence(rng, rng.randint(15, 70)).capitalize() + "." for _ in range(rng.randint(1, 4))]
        if rng.random() < unspaced:
            fm["title"] = _unspaced_sentence(rng, rng.randint(2, 5)).rstrip("。")
            paragraphs = [_unspaced_sentence(rng, rng.randint(8, 30)) for _ in range(rng.randint(1, 3))]
        if kind in ("trap", "decision") and rng.random() < 0.3:
            paragraphs.append(f"```python\n{rng.choice(VOCABULARY)}({rng.choice(VOCABULARY)}=True)\n```")
        path = vault.record_path(PROJECT, kind, fm["id"])
        path.parent.mkdir(parents=True, exist_ok=True)
        record = Record(validate_frontmatter(fm), "\n\n".join(paragraphs) + "\n")
        path.write_text(serialize_record(record), encoding="utf-8")
    vault.close()


def build_vault(root: Path, count: int, seed: int = 3, unspaced: float = 0.05) -> Vault:
    """Write ``count`` varied record files straight to disk, then index them once."""
    vault = write_vault(root, count, seed, unspaced)
    reindex(vault, [PROJECT])
    return vault


def index_sizes(vault: Vault) -> tuple[float, float, float]:
    """The index file's size and the parts the trigram table and the vectors take, in MB (after a
    checkpoint)."""
    conn = sqlite3.connect(vault.index_path)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        total = conn.execute("SELECT page_count * page_size FROM pragma_page_count, pragma_page_size").fetchone()[0]
        trigram = conn.execute("SELECT coalesce(sum(pgsize), 0) FROM dbstat WHERE name LIKE 'records_trigram%'")
        vectors = conn.execute("SELECT coalesce(sum(pgsize), 0) FROM dbstat WHERE name LIKE 'vectors%'")
        return total / 1e6, trigram.fetchone()[0] / 1e6, vectors.fetchone()[0] / 1e6
    finally:
        conn.close()


def timed_reindex(vault: Vault) -> tuple[float, float]:
    """Wall and CPU seconds of a ``reindex`` of the bench project."""
    started, cpu = time.perf_counter(), time.process_time()
    reindex(vault, [PROJECT])
    return time.perf_counter() - started, time.process_time() - cpu


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


def bench_cli(root: Path, runs: int) -> tuple[float, float]:
    """The median wall time and CPU time (user + system) of a ``memosite search`` process, in ms."""
    env = {**os.environ, "MEMOSITE_VAULT": str(root), "MEMOSITE_PROJECT": PROJECT}
    command = [str(MEMOSITE), "search", "payment", "retry", "--json"]
    timings, cpu = [], []
    for _ in range(runs + 1):
        started = time.perf_counter()
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        timings.append((time.perf_counter() - started) * 1000)
        cpu.append((after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000)
        if done.returncode != 0:
            raise SystemExit(f"memosite search failed: {done.stderr.strip()}")
        json.loads(done.stdout)
    return statistics.median(timings[1:]), statistics.median(cpu[1:])


def bench_briefs(vault: Vault, rounds: int) -> tuple[float, float]:
    for options in BRIEFS:
        build_bootstrap(vault, PROJECT, now=NOW, **options)
    timings = []
    for _ in range(rounds):
        for options in BRIEFS:
            started = time.perf_counter()
            build_bootstrap(vault, PROJECT, now=NOW, **options)
            timings.append((time.perf_counter() - started) * 1000)
    return percentile(timings, 50), percentile(timings, 95)


def set_semantic(root: Path, on: bool) -> None:
    (root / "config.local.json").write_text(json.dumps({"search": {"semantic": on}}), encoding="utf-8")


def measure_mode(root: Path, mode: str, rounds: int, cli_runs: int) -> dict[str, float]:
    """Search, CLI and brief timings with hybrid search on (``hybrid``) or off (``words``)."""
    set_semantic(root, mode == "hybrid")
    vault = Vault.open(root)
    try:
        figures: dict[str, float] = {}
        figures["p50_ms"], figures["p95_ms"], figures["max_ms"] = bench_search(vault, rounds)
        figures["cli_ms"], figures["cli_cpu_ms"] = bench_cli(root, cli_runs)
        figures["brief_p50_ms"], figures["brief_p95_ms"] = bench_briefs(vault, rounds)
        return figures
    finally:
        vault.close()


def measure(size: int, rounds: int, cli_runs: int, unspaced: float, modes: list[str]) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="memosite-bench-") as tmp:
        root = Path(tmp) / "vault"
        root.mkdir(parents=True)
        set_semantic(root, "hybrid" in modes)
        vault = write_vault(root, size, unspaced=unspaced)
        figures: dict[str, float] = {}
        figures["reindex_s"], figures["reindex_cpu_s"] = timed_reindex(vault)
        figures["records"] = float(vault.index().count(PROJECT))
        figures["index_mb"], figures["trigram_mb"], figures["vectors_mb"] = index_sizes(vault)
        vault.close()
        if "hybrid" in modes:
            # The baseline of the same run: the same reindex with hybrid search off computes no vector.
            set_semantic(root, False)
            vault = Vault.open(root)
            figures["reindex_words_s"], figures["reindex_words_cpu_s"] = timed_reindex(vault)
            vault.close()
            set_semantic(root, True)
            vault = Vault.open(root)
            reindex(vault, [PROJECT])
            vault.close()
        for mode in modes:
            figures.update(
                {f"{mode} {key}": value for key, value in measure_mode(root, mode, rounds, cli_runs).items()}
            )
        vault = Vault.open(root)
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
    parser.add_argument("--unspaced", type=float, default=0.05, help="share of records in Chinese/Japanese")
    parser.add_argument("--modes", default="hybrid,words", help="hybrid (memosite[semantic]) and/or words")
    args = parser.parse_args()
    modes = [mode for mode in args.modes.split(",") if mode in ("hybrid", "words")]
    print(
        f"{len(QUERIES)} queries x {args.rounds} rounds, {len(BRIEFS)} briefs x {args.rounds} rounds; "
        f"CLI: median of {args.cli_runs} runs; {args.unspaced:.0%} of records in unspaced scripts"
    )
    header = (
        f"{'records':>8} {'reindex s':>9} {'cpu s':>6} {'words cpu s':>11} {'index MB':>8} {'trigram MB':>10} "
        f"{'vectors MB':>10} {'gc s':>6} {'changed':>8} {'gc again s':>10}"
    )
    per_mode = (
        f"{'':8} {'mode':>7} {'p50 ms':>7} {'p95 ms':>7} {'max ms':>7} {'cli ms':>7} {'cli cpu':>7} "
        f"{'brief p50':>9} {'brief p95':>9}"
    )
    for size in (int(s) for s in args.sizes.split(",")):
        f = measure(size, args.rounds, args.cli_runs, args.unspaced, modes)
        print(header)
        print(
            f"{int(f['records']):>8} {f['reindex_s']:>9.2f} {f['reindex_cpu_s']:>6.2f} "
            f"{f.get('reindex_words_cpu_s', float('nan')):>11.2f} {f['index_mb']:>8.1f} {f['trigram_mb']:>10.2f} "
            f"{f['vectors_mb']:>10.2f} {f['gc_s']:>6.2f} {int(f['gc_changed']):>8} {f['gc_again_s']:>10.2f}"
        )
        print(per_mode)
        for mode in modes:
            print(
                f"{'':8} {mode:>7} {f[mode + ' p50_ms']:>7.2f} {f[mode + ' p95_ms']:>7.2f} {f[mode + ' max_ms']:>7.2f} "
                f"{f[mode + ' cli_ms']:>7.0f} {f[mode + ' cli_cpu_ms']:>7.0f} {f[mode + ' brief_p50_ms']:>9.1f} "
                f"{f[mode + ' brief_p95_ms']:>9.1f}"
            )


if __name__ == "__main__":
    main()
