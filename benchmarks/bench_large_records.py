"""Search over a record far larger than anyone writes by hand: what one teammate's (or one agent's)
huge note costs every later ``search``.

For each size, a vault holds three ordinary records and one record of that size whose text repeats
a common word (the worst case for SQLite's ``snippet()``, whose cost grows with the square of the
matches it walks). Printed per size, CPU time of the process:

* ``search`` — ``memosite.search.search_records`` as the CLI and MCP run it (the snippet drawn from
  the first ``SNIPPET_SOURCE_CHARS`` of a body);
* ``baseline`` — in the same run, ``snippet()`` over the whole body, as search did before: a
  private FTS5 table with the same tokenizer, the record's full text, the same query.

Run: .venv/bin/python benchmarks/bench_large_records.py [--sizes 32000,256000,1000000,2000000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

from memosite.index.fts import SNIPPET_SOURCE_CHARS
from memosite.refresh import reindex
from memosite.search import search_records
from memosite.store import upsert_record
from memosite.vault import Vault

PROJECT = "bench"
LINE = "lorem ipsum dolor sit amet " * 40 + "\n"


def cpu() -> float:
    return time.process_time()


def whole_body_snippet(body: str) -> float:
    """CPU seconds of snippet() over the whole body (how search read it before)."""
    conn = sqlite3.connect(":memory:")
    try:
        conn.execute("CREATE VIRTUAL TABLE t USING fts5(body, tokenize='porter unicode61 remove_diacritics 2')")
        conn.execute("INSERT INTO t (rowid, body) VALUES (1, ?)", [body])
        start = cpu()
        conn.execute("SELECT snippet(t, 0, '**', '**', '…', 16) FROM t WHERE t MATCH 'lorem'").fetchall()
        return cpu() - start
    finally:
        conn.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="32000,256000,1000000,2000000")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    sizes = [int(size) for size in args.sizes.split(",")]
    print(f"snippet source: first {SNIPPET_SOURCE_CHARS:,} characters of a body")
    print(f"{'record size':>12}  {'search (CPU s, median)':>24}  {'baseline: whole body (CPU s)':>30}")
    for size in sizes:
        body = (LINE * (size // len(LINE) + 1))[:size]
        with tempfile.TemporaryDirectory() as directory:
            vault = Vault.open(Path(directory) / "vault")
            try:
                for n in range(3):
                    upsert_record(vault, PROJECT, kind="trap", slug=f"small-{n}", body=f"Lorem note {n}.")
                upsert_record(vault, PROJECT, kind="trap", slug="huge", body=body)
                reindex(vault)
                timings = []
                for _ in range(args.rounds):
                    start = cpu()
                    found = search_records(vault, PROJECT, "lorem", limit=10)
                    timings.append(cpu() - start)
                assert any(hit.id == "huge" for hit in found.results)
            finally:
                vault.close()
        baseline = whole_body_snippet(body) if size <= 2_000_000 else float("nan")
        print(f"{size:>12,}  {statistics.median(timings):>24.3f}  {baseline:>30.3f}")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
