"""What the render budget of a vault's own templates costs: ``reindex`` (every record's view rows,
then every view) of one vault, CPU time of this process, three ways in one run:

* memosite's own templates (no override: unsandboxed, no budget) — the baseline;
* a vault override that extends memosite's templates (``{% extends "default:…" %}``), rendered in
  the sandbox with the budget counting every line of template code (what runs for a team that
  shares template overrides);
* the same override with the budget left out, to separate the sandbox's cost from the budget's.

Run: .venv/bin/python benchmarks/bench_template_budget.py [--records 1000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import jinja2

import memosite.template_env as templates
from memosite.mutation import mutation
from memosite.refresh import reindex
from memosite.store import upsert_record
from memosite.vault import Vault


@contextlib.contextmanager
def _no_budget(env: jinja2.Environment) -> Iterator[None]:
    yield


def timed(vault: Vault, rounds: int) -> float:
    samples = []
    for _ in range(rounds):
        start = time.process_time()
        reindex(vault)
        samples.append(time.process_time() - start)
    return statistics.median(samples)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as directory:
        vault = Vault.open(Path(directory) / "vault")
        try:
            with mutation(vault, "bench"):
                for n in range(args.records):
                    kind = ("trap", "decision", "spec")[n % 3]
                    body = f"Body {n}: Café ошибка 日本語 — take the locks in order."
                    upsert_record(vault, "bench", kind=kind, slug=f"r{n}", body=body, frontmatter={"title": f"T {n}"})
            own = timed(vault, args.rounds)
            overrides = vault.root / "templates"
            (overrides / "views").mkdir(parents=True)
            (overrides / "rows.md.j2").write_text('{% extends "default:rows.md.j2" %}', encoding="utf-8")
            (overrides / "views/TRAPS.md.j2").write_text('{% extends "default:views/TRAPS.md.j2" %}', encoding="utf-8")
            budgeted = timed(vault, args.rounds)
            templates.render_budget = _no_budget
            unbudgeted = timed(vault, args.rounds)
        finally:
            vault.close()
    print(f"reindex of {args.records:,} records, CPU s (median of {args.rounds})")
    print(f"  memosite's own templates (baseline)     {own:8.2f}")
    print(f"  vault override, sandbox + render budget {budgeted:8.2f}")
    print(f"  vault override, sandbox, no budget      {unbudgeted:8.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
