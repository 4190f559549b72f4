"""Freshness verification at scale: ``memosite verify`` over 10,000 records citing a real git repository.

Builds a product repository (real ``git``: a few hundred Python files, one commit), a vault whose
records each cite one or two spans of it (pinned the way ``upsert --cite`` pins them: the span's
sha256 and the commit), then times ``verify`` three ways:

* every citation still fresh (the repository as pinned);
* after a day of work: files edited inside and outside cited spans, lines inserted above spans
  (they move), files renamed with ``git mv`` and deleted, part committed and part left in the
  working tree, so drifted records ask git for the commits since the pin and missing ones for
  renames;
* the same through the command line (``memosite verify --json`` in a new process, imports and all).

Target (issue 14): ``verify`` on 10,000 records with citations into a real repository ≤ 5 s.

Run: .venv/bin/python benchmarks/bench_verify.py [--records 10000] [--files 300] [--rounds 3]
"""

from __future__ import annotations

import argparse
import hashlib
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

sys.path.insert(0, str(Path(__file__).parent))

from _vaultgen import WORDS, sentence, write_record

from memosite.refresh import reindex
from memosite.schema import format_iso
from memosite.vault import Vault
from memosite.verify import verify_project

PROJECT = "bench"
LINES_PER_FILE = 160


def git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "Bench", "GIT_AUTHOR_EMAIL": "bench@example.org"}
    env |= {"GIT_COMMITTER_NAME": "Bench", "GIT_COMMITTER_EMAIL": "bench@example.org"}
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, env=env, check=True)
    return done.stdout


def source_line(rng: random.Random, n: int) -> str:
    words = [rng.choice(WORDS) for _ in range(rng.randint(2, 5))]
    return f"    value_{n} = {'_'.join(words)}({rng.randint(0, 999)})  # {' '.join(words)}\n"


def build_repo(root: Path, files: int, rng: random.Random) -> list[str]:
    root.mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    paths = []
    for n in range(files):
        path = f"src/{rng.choice(WORDS)}_{n}/{rng.choice(WORDS)}.py"
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("".join(source_line(rng, i) for i in range(LINES_PER_FILE)), encoding="utf-8")
        paths.append(path)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "the product as the records were written")
    return paths


def span_sha(text: str, start: int, stop: int) -> str:
    lines = text.splitlines(keepends=True)
    return hashlib.sha256("".join(lines[start - 1 : stop]).encode()).hexdigest()


def build_vault(root: Path, repo: Path, paths: list[str], records: int, rng: random.Random) -> None:
    vault = Vault.open(root)
    commit = git(repo, "rev-parse", "HEAD").strip()
    texts = {path: (repo / path).read_text(encoding="utf-8") for path in paths}
    now = datetime(2026, 11, 30, tzinfo=UTC)
    for n in range(records):
        kind = rng.choice(("trap", "trap", "decision", "spec"))
        cites = []
        for path in rng.sample(paths, rng.choice((1, 1, 2))):
            start = rng.randint(1, LINES_PER_FILE - 12)
            stop = start + rng.randint(0, 10)
            cites.append({"path": path, "lines": f"{start}-{stop}", "sha256": span_sha(texts[path], start, stop),
                          "commit": commit})  # fmt: skip
        created = now - timedelta(days=rng.uniform(0, 60))
        fm = {
            "id": f"{kind}-{n:06d}",
            "kind": kind,
            "project": PROJECT,
            "title": sentence(rng, 6).capitalize(),
            "created": format_iso(created),
            "updated": format_iso(created),
            "cites": cites,
        }
        write_record(vault, fm, sentence(rng, 30) + ".\n")
    reindex(vault, [PROJECT])
    vault.close()


def a_day_of_work(repo: Path, paths: list[str], rng: random.Random) -> None:
    """Edit, move, rename and delete files; commit part of it and leave the rest in the work tree."""
    touched = rng.sample(paths, len(paths) // 4)
    edited, rest = touched[: len(touched) // 2], touched[len(touched) // 2 :]
    moved, renamed, deleted = rest[: len(rest) // 2], rest[len(rest) // 2 : -3], rest[-3:]
    for path in edited:  # a few lines rewritten somewhere in the file
        target = repo / path
        lines = target.read_text(encoding="utf-8").splitlines(keepends=True)
        for at in rng.sample(range(len(lines)), 6):
            lines[at] = source_line(rng, 10_000 + at)
        target.write_text("".join(lines), encoding="utf-8")
    for path in moved:  # lines inserted at the top: every span moves down, unchanged
        target = repo / path
        target.write_text("import logging\n\n" + target.read_text(encoding="utf-8"), encoding="utf-8")
    git(repo, "commit", "-q", "-am", "rework the edited modules")
    for path in renamed:
        git(repo, "mv", path, path.replace(".py", "_v2.py"))
    for path in deleted:
        (repo / path).unlink()
    for path in edited[: len(edited) // 3]:  # and some edits still uncommitted
        target = repo / path
        target.write_text(target.read_text(encoding="utf-8") + source_line(rng, 99_999), encoding="utf-8")


def timed_verify(vault_root: Path, repo: Path, rounds: int) -> tuple[list[float], dict[str, int]]:
    times, counts = [], {}
    for _ in range(rounds):
        vault = Vault.open(vault_root, create=False)
        started = time.perf_counter()
        result = verify_project(vault, PROJECT, repo)
        times.append(time.perf_counter() - started)
        counts = result.counts()
        vault.close()
    return times, counts


def cli_verify(vault_root: Path, repo: Path) -> tuple[float, dict[str, int]]:
    exe = Path(sys.executable).parent / "memosite"
    command = [str(exe), "verify", "--repo", str(repo), "--json", "--vault", str(vault_root), "--project", PROJECT]
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, cwd=repo, check=False)
    elapsed = time.perf_counter() - started
    if done.returncode not in (0, 1):  # 1: something drifted or is missing
        raise SystemExit(f"memosite verify failed ({done.returncode}): {done.stderr.strip()}")
    return elapsed, json.loads(done.stdout)["counts"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=10_000)
    parser.add_argument("--files", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    rng = random.Random(14)
    with tempfile.TemporaryDirectory() as scratch:
        repo, vault_root = Path(scratch) / "product", Path(scratch) / "vault"
        paths = build_repo(repo, args.files, rng)
        build_vault(vault_root, repo, paths, args.records, rng)
        fresh_times, fresh_counts = timed_verify(vault_root, repo, args.rounds)
        a_day_of_work(repo, paths, rng)
        work_times, work_counts = timed_verify(vault_root, repo, args.rounds)
        cli_seconds, cli_counts = cli_verify(vault_root, repo)
    print(f"verify: {args.records:,} records citing {args.files} files of a real git repository")
    print(f"{'repository state':<34} {'median s':>9} {'max s':>7}  verdicts")
    for label, times, counts in (
        ("as pinned (all fresh)", fresh_times, fresh_counts),
        ("after a day of work", work_times, work_counts),
    ):
        shown = ", ".join(f"{name} {count:,}" for name, count in counts.items())
        print(f"{label:<34} {statistics.median(times):>9.2f} {max(times):>7.2f}  {shown}")
    shown = ", ".join(f"{name} {count:,}" for name, count in cli_counts.items())
    print(f"{'memosite verify --json (new CLI)':<34} {cli_seconds:>9.2f} {cli_seconds:>7.2f}  {shown}")
    worst = max(statistics.median(fresh_times), statistics.median(work_times))
    print(f"target: ≤ 5 s at 10,000 records; worst median here {worst:.2f} s")


if __name__ == "__main__":
    main()
