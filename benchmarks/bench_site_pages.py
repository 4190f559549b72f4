"""Site pages benchmark: what one build spends on a project's link graph (each record's "Links
here" basis and the records its body links to) and on its dashboards and feeds (the change events,
the home, "What changed", the project's and the site's Atom feeds), next to the whole memory
section those are part of (every page but the record pages, which a warm build takes from its
cache).

    .venv/bin/python benchmarks/bench_site_pages.py --sizes 1000 10000
    .venv/bin/python benchmarks/bench_site_pages.py --sizes 10000 --code /path/to/other/checkout

Each checkout (this one, then every ``--code``) is measured in a new process on the same
synthetic vault (``bench_site.write_synthetic_vault``), its modules byte-compiled first; rounds
alternate between the checkouts and the best CPU time (``time.process_time``) of each piece counts.
The first checkout is the baseline of the ratios.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

PIECES = ("link graph", "dashboards and feeds", "memory section")

# Run in a child process: argv = checkout, vault, repeats. Prints {piece: best CPU seconds}.
_MEASURE = """
import json, logging, sys, time
from datetime import UTC, datetime
sys.path.insert(0, sys.argv[1])
logging.getLogger("mkdocs").setLevel(logging.ERROR)
from memosite.kinds import DURABLE_KINDS
from memosite.schema import format_iso
from memosite.site import dashboard, pages
from memosite.site.links import ProjectLinks
from memosite.site.sitepage import PublishedRecord
from memosite.vault import Vault
from memosite.views import link_for

vault = Vault.open(sys.argv[2], create=False)
repeats = int(sys.argv[3])
now = datetime(2026, 12, 2, 9, 0, tzinfo=UTC)
entries = sorted(vault.index().entries("bench", kinds=DURABLE_KINDS), key=lambda e: e.path)
env = pages.env_for(vault)
published = [
    PublishedRecord(e, f"memory/bench/{link_for(e)}", pages.inactive_reasons(e, format_iso(now)), None, False)
    for e in entries
]

def url_for(uri):
    return uri.removesuffix(".md") + "/" if uri.endswith(".md") else uri

def link_graph():
    graph = ProjectLinks(entries, {})
    for entry in entries:
        graph.links_basis(entry)
        graph.links_to(entry)

def dashboards_and_feeds():
    source = dashboard.FeedSource.for_project(vault, "bench", published, now, conflicts=[])
    dashboard.dashboard_page(env, "memory", source, now, None)
    for feed, uri in ((source, "memory/bench/feed.xml"), (dashboard.FeedSource.merged([source]), "memory/feed.xml")):
        dashboard.render_feed(feed, src_uri=uri, site_name="bench", site_url=None, url_for=url_for, now=now)

def memory_section():
    pages.collect_site_content(
        vault, prefix="memory", projects=["bench"], now=now,
        memo=pages.RecordMemo(dashboards=None), known=lambda uri, basis: True,
    )

best = {}
for name, run in (("link graph", link_graph), ("dashboards and feeds", dashboards_and_feeds),
                  ("memory section", memory_section)):
    for _ in range(repeats):
        start = time.process_time()
        run()
        best[name] = min(best.get(name, 1e9), time.process_time() - start)
print(json.dumps(best))
"""


def measure(code: Path, vault: Path, repeats: int) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(code)}
    done = subprocess.run(
        [sys.executable, "-P", "-c", _MEASURE, str(code), str(vault), str(repeats)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    figures: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds over the checkouts")
    parser.add_argument("--repeats", type=int, default=5, help="runs of each piece in one process")
    parser.add_argument("--code", type=Path, nargs="*", default=[], help="other checkouts to measure")
    args = parser.parse_args()
    codes = [Path(__file__).resolve().parent.parent, *(c.resolve() for c in args.code)]
    for code in codes:
        compileall.compile_dir(str(code / "memosite"), quiet=1)
    sys.path.insert(0, str(codes[0]))
    import logging

    from bench_site import write_synthetic_vault

    logging.getLogger("mkdocs").setLevel(logging.ERROR)
    for n, code in enumerate(codes):
        print(f"checkout {n}: {code}")
    print(f"{'records':>8} {'piece':>22} " + " ".join(f"{f'{n} CPU ms':>10}" for n in range(len(codes))) + "  ratio")
    for size in args.sizes:
        with tempfile.TemporaryDirectory(prefix="memosite-bench-") as tmp:
            vault = Path(tmp) / "vault"
            write_synthetic_vault(vault, size)
            best: list[dict[str, float]] = [{} for _ in codes]
            for _ in range(args.rounds):
                for n, code in enumerate(codes):
                    for piece, cpu in measure(code, vault, args.repeats).items():
                        best[n][piece] = min(best[n].get(piece, cpu), cpu)
            for piece in PIECES:
                figures = " ".join(f"{b[piece] * 1000:>10.1f}" for b in best)
                ratios = " ".join(f"{b[piece] / best[0][piece]:.2f}" for b in best[1:])
                print(f"{size:>8} {piece:>22} {figures}  {ratios}", flush=True)


if __name__ == "__main__":
    main()
