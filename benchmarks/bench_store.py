"""Upsert latency (p50/p95) on vaults of 1,000, 10,000 (and 50,000) records.

Target (issue 2): p50 ≤ 30 ms at 10,000 records, and p50 at 10,000 within 2× of p50 at 1,000.
Target (issue 24): a whole ``memosite upsert`` command's CPU at 50,000 within 1.3× of its CPU at
1,000, and its peak memory at 50,000 ≤ 100 MiB.
The vaults are built first; then rounds of writes alternate between them, so that whatever else
the machine is doing weighs on every size alike. A long-lived process (the MCP server) keeps
assembled view pieces in memory; "fresh ms" is the first upsert of a fresh process (imports
excluded), which has to assemble every view it rewrites, and "cli" a whole ``memosite upsert``
command (interpreter start, imports, git identity, the write): its wall time, its CPU (user +
system, from the operating system) and its peak resident memory. The CLI runs alternate between
the sizes too. The vaults are synced to disk before any write is timed.

Run: .venv/bin/python benchmarks/bench_store.py [--sizes 1000,10000,50000] [--ops 400] [--rounds 8]
     [--cli-only] [--profile-cli 50000]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import pstats
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _vaultgen import SEVERITIES, WORDS, build_vault, index_module, sentence

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
            [sys.executable, "-P", "-c", _FRESH, str(root), str(n)], capture_output=True, text=True, check=True
        )
        times.append(float(out.stdout))
    return statistics.median(times)


@dataclass
class CliRun:
    wall_ms: float
    cpu_ms: float
    rss_mib: float


# The command's own peak resident memory (VmHWM), written to stderr as it exits. The rusage of a
# child forked from this (large) benchmark process would count this process's pages too.
_PEAK = (
    "import atexit, re, runpy, sys\n"
    "def _peak():\n"
    "    text = open('/proc/self/status', encoding='ascii').read()\n"
    "    sys.stderr.write('peak-kib ' + re.search(r'VmHWM:\\s+(\\d+)', text).group(1) + '\\n')\n"
    "atexit.register(_peak)\n"
    "sys.argv[0] = 'memosite'\n"
    "runpy.run_module('memosite', run_name='__main__')\n"
)


# Each run's CLI upserts create records of their own: with a vault kept by --work, the same slugs
# again would be updates that change no view (left alone since issue 24), not the new trap measured.
_RUN = f"{os.getpid()}-{time.time_ns() % 10**9}"


def _cli_command(root: Path, n: int, *, profile: Path | None = None) -> list[str]:
    runner = ["-m", "cProfile", "-o", str(profile), "-m", "memosite"] if profile else ["-c", _PEAK]
    return [
        sys.executable,
        "-P",  # not the working directory first on the path: PYTHONPATH picks the code measured
        *runner,
        "upsert",
        "--vault",
        str(root),
        "--project",
        "bench",
        "--kind",
        "trap",
        "--slug",
        f"cli-{_RUN}-{n}",
        "--path",
        "src/cli/x.py",
        "--body",
        f"cli trap {_RUN} {n}",
        "--allow-duplicate",
    ]


def cli_run(root: Path, n: int) -> CliRun:
    """One whole ``memosite upsert`` command: its wall time, CPU and peak memory (``wait4``)."""
    started = time.perf_counter()
    process = subprocess.Popen(_cli_command(root, n), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    wall = (time.perf_counter() - started) * 1000
    err = process.stderr.read().decode("utf-8", "replace") if process.stderr else ""
    if process.stderr:
        process.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"memosite upsert failed: {err.strip()}")
    peak = re.search(r"^peak-kib (\d+)$", err, re.MULTILINE)
    return CliRun(wall, (usage.ru_utime + usage.ru_stime) * 1000, int(peak.group(1)) / 1024 if peak else float("nan"))


def cli_runs(roots: dict[int, Path], samples: int) -> dict[int, list[CliRun]]:
    """``samples`` CLI upserts per vault, the sizes taken in turn (the smallest first, then the
    largest first) so that the machine's load weighs on every size alike."""
    runs: dict[int, list[CliRun]] = {size: [] for size in roots}
    for n in range(samples + 1):  # the first run of each warms the OS caches: not counted
        order = sorted(roots) if n % 2 == 0 else sorted(roots, reverse=True)
        for size in order:
            measured = cli_run(roots[size], n)
            if n:
                runs[size].append(measured)
    return runs


def profile_cli(root: Path, out: Path) -> None:
    """A cProfile of one whole ``memosite upsert`` command, its top functions printed."""
    subprocess.run(_cli_command(root, 999, profile=out), capture_output=True, check=True)
    pstats.Stats(str(out)).sort_stats("cumulative").print_stats(30)


def _vault(root: Path, size: int, *, semantic: bool) -> Vault:
    """The vault of ``size`` records at ``root``: built (and indexed) when missing, else opened and
    brought up to date with the code measured (an index of another memosite version is rebuilt
    here, before anything is timed). Hybrid search stays off unless ``semantic``: loading the
    embedding model is a constant that would hide how a write grows with the vault."""
    fresh = not root.exists()
    if fresh:
        root.mkdir(parents=True)
    (root / "config.local.json").write_text(json.dumps({"search": {"semantic": semantic}}), encoding="utf-8")
    if fresh:
        return build_vault(root, size)
    vault = Vault.open(root)
    index_module().ensure_index(vault)
    return vault


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
    parser.add_argument("--cli-samples", type=int, default=7, help="whole CLI upserts per vault")
    parser.add_argument("--cli-only", action="store_true", help="only the whole CLI upserts (and --profile-cli)")
    parser.add_argument("--profile-cli", type=int, help="also profile one CLI upsert on the vault of this size")
    parser.add_argument("--semantic", action="store_true", help="hybrid search on (loads the embedding model)")
    parser.add_argument(
        "--work", type=Path, help="keep the vaults in this folder (outside the repository) and reuse them next time"
    )
    args = parser.parse_args()
    print(f"memosite: {Path(sys.modules['memosite'].__file__ or '?').parent}", flush=True)
    sizes = [int(size) for size in args.sizes.split(",")]
    with contextlib.ExitStack() as stack:
        tmp = args.work or Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="memosite-bench-")))
        vaults, build_seconds = {}, {}
        for size in sizes:
            started = time.perf_counter()
            vaults[size] = _vault(tmp / f"vault-{size}", size, semantic=args.semantic)
            build_seconds[size] = time.perf_counter() - started
        # The build leaves megabytes of dirty pages; measured writes would otherwise share the disk
        # with their write-back (each write fsyncs its record), and a larger build would look slower.
        if hasattr(os, "sync"):
            os.sync()
        for vault in vaults.values():
            vault.close()
        roots = {size: tmp / f"vault-{size}" for size in sizes}
        cli = cli_runs(roots, args.cli_samples)
        if args.profile_cli in roots:
            profile_cli(roots[args.profile_cli], tmp / "upsert.prof")
        print_cli(cli, build_seconds)
        if args.cli_only:
            return
        timings: dict[int, dict[str, list[float]]] = {size: {kind: [] for kind in KINDS} for size in sizes}
        rngs = {size: random.Random(11) for size in sizes}
        per_round = max(1, args.ops // args.rounds)
        vaults = {size: Vault.open(roots[size]) for size in sizes}
        for round_number in range(args.rounds):
            for size in sizes:
                for n in range(round_number * per_round, (round_number + 1) * per_round):
                    which, ms = one_write(vaults[size], rngs[size], n)
                    timings[size][which].append(ms)
        for vault in vaults.values():
            vault.close()
        fresh = {size: fresh_process_ms(roots[size]) for size in sizes}

    header = ("records", "build s", "p50 ms", "p95 ms", "trap", "decision", "spec", "append", "fresh ms")
    widths = (8, 8, 8, 8, 7, 9, 7, 7, 9)
    print(" ".join(f"{name:>{width}}" for name, width in zip(header, widths, strict=True)))
    p50s = {}
    for size in sizes:
        every = [ms for values in timings[size].values() for ms in values]
        p50s[size] = statistics.median(every)
        kinds = [statistics.median(timings[size][kind]) for kind in KINDS]
        print(
            f"{size:>8} {build_seconds[size]:>8.1f} {p50s[size]:>8.2f} {percentile(every, 95):>8.2f}"
            f" {kinds[0]:>7.2f} {kinds[1]:>9.2f} {kinds[2]:>7.2f} {kinds[3]:>7.2f} {fresh[size]:>9.2f}"
        )
    if len(sizes) >= 2:
        small, large = sizes[0], sizes[-1]
        print(
            f"p50 ratio {large} / {small}: {p50s[large] / p50s[small]:.2f}x (target ≤ 2x);"
            f" p50 at {large}: {p50s[large]:.2f} ms (target ≤ 30 ms)"
        )


def print_cli(cli: dict[int, list[CliRun]], build_seconds: dict[int, float]) -> None:
    print(f"{'records':>8} {'build s':>8} {'cli wall ms':>11} {'cli CPU ms':>18} {'peak MiB':>9}")
    cpu = {}
    for size, runs in sorted(cli.items()):
        cpus = sorted(run.cpu_ms for run in runs)
        cpu[size] = statistics.median(cpus)
        print(
            f"{size:>8} {build_seconds[size]:>8.1f} {statistics.median(r.wall_ms for r in runs):>11.0f}"
            f" {cpu[size]:>7.0f} ({cpus[0]:.0f}–{cpus[-1]:.0f}) {max(r.rss_mib for r in runs):>9.1f}"
        )
    if len(cpu) >= 2:
        small, large = min(cpu), max(cpu)
        print(f"cli CPU ratio {large} / {small}: {cpu[large] / cpu[small]:.2f}x (issue 24: ≤ 1.3x, peak ≤ 100 MiB)")


if __name__ == "__main__":
    main()
