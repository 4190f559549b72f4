"""Hook latency and the size of the compiled AGENTS.md block.

Hooks: ``memosite hook prompt`` as an agent runs it — a fresh process, the payload on stdin — on
vaults of 1,000 and 10,000 records, half the prompts matching memory and half unrelated; wall time
and CPU time (user + system of the child) p50/p95. Measured in the same run, as baselines: the
interpreter alone (``python -c pass``), the hook routed through the click CLI (what the light entry
saves), and ``memosite hook session-start`` (the brief); and the prompt hook with a megabyte of log pasted
before the question. Rounds alternate between the vault sizes,
so whatever else the machine does weighs on both alike.

Reading: the CPU ``read_payload`` spends on a prompt of 1 to 8 MB (a pasted log) read 64 KB at a
time, against ``json.loads`` of the same bytes.

Block: the bytes ``memosite agents compile`` puts between the markers for the demo project and for
the 10,000-record vault, against the budget (``agents.maxBytes``, 6144 by default).

Children run with bytecode caching on (``PYTHONPYCACHEPREFIX`` in a scratch directory, after a
warm-up), as an installed package has its ``.pyc`` files; one line shows the same hook without
memosite's bytecode (``PYTHONDONTWRITEBYTECODE=1`` on an editable install), which every start then
compiles again. On a shared machine wall time carries the others' load: CPU time is the steadier
figure.

Target (issue 26): ``hook prompt`` p50 ≤ 150 ms at 10,000 records; the block within its budget.
Run: .venv/bin/python benchmarks/bench_hooks.py [--sizes 1000,10000] [--runs 20] [--rounds 3]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _vaultgen import WORDS, build_vault

from memosite.agentfiles.compile import plan_compile
from memosite.agentfiles.settings import AgentFilesSettings
from memosite.demo import DEMO_PROJECT, write_demo_vault
from memosite.hooks import runner
from memosite.schema import utc_now
from memosite.vault import Vault

PROJECT = "bench"
MEMOSITE = Path(sys.executable).with_name("memosite")
UNRELATED = [
    "What is the capital of Australia and when was it founded?",
    "Write a haiku about autumn leaves falling on a quiet lake",
    "Translate good morning into Portuguese, Greek and Japanese",
    "Explain the rules of chess castling to a beginner",
]
# A log pasted before the question, as people paste one: about a megabyte.
_LOG = "\n".join(f"2026-11-30T09:{n % 60:02d}:00Z INFO worker-{n} heartbeat ok, depth {n % 7}" for n in range(17000))
# -P: the child imports the memosite installed in this interpreter, never one in the working
# directory (``-c`` would put the directory it runs in first on sys.path).
_THROUGH_CLICK = "import sys; from memosite.cli import main; sys.argv = ['memosite', *sys.argv[1:]]; main()"


def _prompt(rng: random.Random, related: bool) -> str:
    if not related:
        return rng.choice(UNRELATED)
    words = rng.sample(WORDS, 4)
    return f"The {words[0]} {words[1]} breaks when the {words[2]} {words[3]} runs twice, can you fix it?"


def _run(argv: list[str], payload: bytes, env: dict[str, str]) -> tuple[float, float, bytes]:
    """One fresh process: wall ms, CPU ms (user + system), stdout."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(argv, input=payload, capture_output=True, env=env, check=False)
    wall = (time.perf_counter() - started) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = ((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)) * 1000
    if done.returncode != 0:
        raise SystemExit(f"{argv} failed: {done.stderr.decode(errors='replace')}")
    return wall, cpu, done.stdout


def _p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _line(label: str, walls: list[float], cpus: list[float]) -> str:
    return (
        f"  {label:34} wall p50 {statistics.median(walls):6.1f} ms  p95 {_p(walls, 0.95):6.1f} ms"
        f"   cpu p50 {statistics.median(cpus):6.1f} ms  p95 {_p(cpus, 0.95):6.1f} ms   (n={len(walls)})"
    )


def _block_size(vault: Vault, project: str, workdir: Path) -> tuple[int, int, int, int]:
    repo = workdir / f"repo-{project}"
    repo.mkdir(exist_ok=True)
    (repo / ".git").mkdir(exist_ok=True)  # a work tree as memosite finds one; nothing is written
    plan = plan_compile(vault, project, repo, settings=AgentFilesSettings(), now=utc_now())
    return plan.block.bytes, plan.max_bytes, len(plan.block.traps) + len(plan.block.decisions), len(plan.rules.groups)


class _Pieces(io.RawIOBase):
    """A pipe as a hook reads it: at most 64 KB a read."""

    def __init__(self, data: bytes) -> None:
        self.data, self.at = data, 0

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        piece = self.data[self.at : self.at + min(size, 65536)]
        self.at += len(piece)
        return piece


def _payload_reading() -> None:
    """CPU to read a prompt someone pasted a large log into, piece by piece as a pipe gives it,
    against json.loads of the same bytes (the least any reader does)."""
    print("\nreading a large payload (CPU, in process; json.loads of the same bytes as baseline)")
    for megabytes in (1, 4, 8):
        prompt = ("Traceback (most recent call last): {frame} in handler\n" * 20000 * megabytes)[: megabytes << 20]
        data = json.dumps({"session_id": "s", "hook_event_name": "UserPromptSubmit", "prompt": prompt}).encode()
        data = data[: runner.MAX_PAYLOAD - 64] + b'"}' if len(data) > runner.MAX_PAYLOAD else data
        started = time.process_time()
        runner.read_payload(_Pieces(data))
        reading = time.process_time() - started
        started = time.process_time()
        json.loads(data)
        baseline = time.process_time() - started
        size = f"{len(data) / (1 << 20):4.1f} MB"
        print(f"  {size}  read_payload {reading * 1000:7.1f} ms   json.loads {baseline * 1000:6.1f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000")
    parser.add_argument("--runs", type=int, default=20, help="hook runs per size and round")
    parser.add_argument("--rounds", type=int, default=3)
    options = parser.parse_args()
    sizes = [int(size) for size in options.sizes.split(",")]
    rng = random.Random(11)
    with tempfile.TemporaryDirectory(prefix="memosite-bench-hooks-") as tmp:
        work = Path(tmp)
        vaults = {}
        for size in sizes:
            started = time.perf_counter()
            vault = build_vault(work / f"vault-{size}", size, project=PROJECT)
            vault.close()
            vaults[size] = work / f"vault-{size}"
            print(f"built {size} records in {time.perf_counter() - started:.1f} s")
        os.sync()
        _payload_reading()
        results: dict[str, tuple[list[float], list[float]]] = {}

        def record(label: str, wall: float, cpu: float) -> None:
            walls, cpus = results.setdefault(label, ([], []))
            walls.append(wall)
            cpus.append(cpu)

        cached = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
        cached["PYTHONPYCACHEPREFIX"] = str(work / "pycache")
        uncached = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
        uncached.pop("PYTHONPYCACHEPREFIX", None)
        warm = json.dumps({"session_id": "warm-up", "hook_event_name": "UserPromptSubmit", "prompt": "warm up"})
        for size in sizes:
            for _ in range(2):
                _run([str(MEMOSITE), "hook", "prompt"], warm.encode(), {**cached, "MEMOSITE_VAULT": str(vaults[size])})
                _run(
                    [str(MEMOSITE), "hook", "session-start"],
                    warm.encode(),
                    {**cached, "MEMOSITE_VAULT": str(vaults[size])},
                )
                _run([sys.executable, "-P", "-c", _THROUGH_CLICK, "hook", "prompt"], warm.encode(), cached)
        matched: dict[int, int] = dict.fromkeys(sizes, 0)
        for round_number in range(options.rounds):
            for size in sizes:
                env = {**cached, "MEMOSITE_VAULT": str(vaults[size]), "MEMOSITE_PROJECT": PROJECT}
                for n in range(options.runs):
                    related = n % 2 == 0
                    payload = json.dumps(
                        {
                            "session_id": f"bench-{round_number}-{size}-{n}",
                            "transcript_path": "",
                            "cwd": str(work),
                            "hook_event_name": "UserPromptSubmit",
                            "prompt": _prompt(rng, related),
                        }
                    ).encode()
                    wall, cpu, out = _run([str(MEMOSITE), "hook", "prompt"], payload, env)
                    record(f"hook prompt @{size}", wall, cpu)
                    matched[size] += bool(out.strip())
                    if n % 4 == 0:
                        wall, cpu, _ = _run(
                            [sys.executable, "-P", "-c", _THROUGH_CLICK, "hook", "prompt"], payload, env
                        )
                        record(f"hook prompt via click @{size}", wall, cpu)
                        start = json.dumps({"session_id": f"s-{n}", "hook_event_name": "SessionStart"}).encode()
                        wall, cpu, _ = _run([str(MEMOSITE), "hook", "session-start"], start, env)
                        record(f"hook session-start @{size}", wall, cpu)
                        pasted = json.loads(payload)
                        pasted["prompt"] = f"{_LOG}\n{pasted['prompt']}"
                        wall, cpu, _ = _run([str(MEMOSITE), "hook", "prompt"], json.dumps(pasted).encode(), env)
                        record(f"hook prompt + 1 MB log @{size}", wall, cpu)
                        cold_env = {**uncached, "MEMOSITE_VAULT": str(vaults[size]), "MEMOSITE_PROJECT": PROJECT}
                        wall, cpu, _ = _run([str(MEMOSITE), "hook", "prompt"], payload, cold_env)
                        record(f"hook prompt, no bytecode @{size}", wall, cpu)
            for _ in range(max(options.runs // 4, 1)):
                wall, cpu, _ = _run([sys.executable, "-P", "-c", "pass"], b"", cached)
                record("python -c pass (baseline)", wall, cpu)
        print(f"\nhook latency (fresh process, payload on stdin; {options.rounds} rounds alternating sizes)")
        for label, (walls, cpus) in results.items():
            print(_line(label, walls, cpus))
        for size in sizes:
            total = options.rounds * options.runs
            print(f"  prompts that got memory @{size}: {matched[size]} of {total} (half of them unrelated)")

        print("\nAGENTS.md block (markers included) against its budget")
        demo = Vault.open(work / "demo-vault")
        write_demo_vault(demo, DEMO_PROJECT)
        for label, vault, project in (
            ("demo", demo, DEMO_PROJECT),
            *((f"{size} records", Vault.open(vaults[size]), PROJECT) for size in sizes),
        ):
            size_bytes, budget, records, groups = _block_size(vault, project, work)
            vault.close()
            print(f"  {label:14} {size_bytes:5d} of {budget} bytes, {records} records, {groups} rule groups")


if __name__ == "__main__":
    main()
