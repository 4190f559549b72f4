"""Site benchmark: memosite build (cold and warm) vs plain ``mkdocs build``, side by side, and how
fast ``memosite serve`` shows a change.

    .venv/bin/python benchmarks/bench_site.py --sizes 1000 5000 10000
    .venv/bin/python benchmarks/bench_site.py --sizes 1000 --rounds 1 --skip-serve
    .venv/bin/python benchmarks/bench_site.py --code /path/to/other/checkout   # the same figures for other code
    .venv/bin/python benchmarks/bench_site.py --sizes 10000 --serve-only --serve-rounds 5
    .venv/bin/python benchmarks/bench_site.py --sizes 50000 --cold-only --rounds 1
    .venv/bin/python benchmarks/bench_site.py --engines mkdocs properdocs zensical --demo --sizes 1000

The record files of each size are written once into the benchmark cache outside the repository
(see ``_vaultgen.cached_files``) and indexed by the code measured.

Every build is the command a person runs (``mkdocs build``, ``memosite build --engine mkdocs``), in
a new process from its entry point to its exit; its CPU (user + system) and wall time and peak memory come
from the operating system (``wait4``). The measured checkout's modules are byte-compiled first, as
an installed package's are (MkDocs' are, in site-packages): with ``PYTHONDONTWRITEBYTECODE`` set
and no ``__pycache__``, every build process would compile memosite's modules from source again.
Each round runs, in turn:

* ``plain-same``   plain MkDocs (no memosite plugin) of exactly the pages the plugin generates,
                   those it keeps out of the search index marked ``search: exclude``;
* ``cold``         ``memosite build`` with an empty page cache;
* ``warm``         ``memosite build`` after one record file changed (a new process, cache kept,
                   into the folder the cold build filled);
* ``plain-bodies`` plain MkDocs of the record bodies alone (one page per record).

``--cold-only`` runs ``cold`` and ``warm`` alone (a 50,000-record plain MkDocs build takes hours).

Rounds alternate so that neither side always gets the warm OS caches; the best of the rounds
counts. With ``--engines``, each size (and with ``--demo`` the ``memosite demo`` vault) is built
cold by ``memosite build --engine`` for each engine named instead, the first one the baseline of
the ratios (ProperDocs and Zensical run in child processes, whose CPU counts too).
Targets (issue 13): cold <= 1.1x plain-same; warm <= plain-bodies; in serve at the largest size:
an edited record visible <= 1.5 s, a new record (its page, the search index and records.json)
<= 3 s, ready <= 30 s with a warm cache.
Targets (issue 24): cold <= 1.0x plain-same; warm <= 1.5 s CPU at 10,000 and <= 0.1x cold at 1,000;
a 50,000-record cold build completes (time and peak memory); serve at 10,000 started on the cache a
build left shows its first page <= 10 s (wall), an edit <= 1 s and a new record <= 2 s.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _vaultgen import cached_files, index_module

PROJECT = "bench"
WORDS = [
    "cache",
    "session",
    "cookie",
    "retry",
    "timeout",
    "migration",
    "index",
    "lock",
    "queue",
    "worker",
    "deploy",
    "rollback",
    "token",
    "header",
    "proxy",
    "schema",
    "column",
    "table",
    "payment",
    "invoice",
    "order",
    "stock",
    "search",
    "query",
    "latency",
    "memory",
    "thread",
    "pool",
    "socket",
    "buffer",
    "encoding",
    "unicode",
    "locale",
    "timezone",
    "daylight",
    "cron",
    "backoff",
    "jitter",
]
MIX = (
    ("trap", 0.4),
    ("decision", 0.2),
    ("spec", 0.08),
    ("plan", 0.08),
    ("log", 0.1),
    ("review", 0.06),
    ("prompt", 0.04),
    ("session", 0.04),
)


def _sentence(rng: random.Random, words: int = 14) -> str:
    text = " ".join(rng.choice(WORDS) for _ in range(words))
    return text[0].upper() + text[1:] + "."


def _body(rng: random.Random, index: int) -> str:
    paragraphs = [" ".join(_sentence(rng) for _ in range(3)) for _ in range(rng.randint(2, 4))]
    if index % 3 == 0:
        paragraphs.append("```python\nclient.post(url, json=payload, timeout=5)\n```")
    if index % 5 == 0:
        paragraphs.append("- check the " + rng.choice(WORDS) + "\n- then the " + rng.choice(WORDS))
    return "\n\n".join(paragraphs) + "\n"


def write_synthetic_vault(root: Path, count: int, *, seed: int = 7) -> None:
    """``count`` hand-written record files (a mix of kinds, some expired or superseded), indexed;
    the files come from the benchmark cache after the first run."""
    from memosite.vault import Vault

    cached_files(f"site-v1-{seed}", count, lambda at: write_site_files(at, count, seed=seed), root)
    vault = Vault.open(root)
    index_module().reindex(vault)
    vault.close()


def write_site_files(root: Path, count: int, *, seed: int = 7) -> None:
    """The record files of :func:`write_synthetic_vault` (not indexed)."""
    from memosite.schema import format_iso
    from memosite.vault import Vault

    rng = random.Random(seed)
    vault = Vault.open(root)
    now = datetime(2026, 11, 30, tzinfo=UTC)
    kinds = [kind for kind, share in MIX for _ in range(int(share * 100))]
    decisions: list[str] = []
    for index in range(count):
        kind = kinds[index % len(kinds)]
        created = now - timedelta(days=rng.uniform(1, 120))
        slug = f"{kind}-{index:05d}"
        fm: dict[str, object] = {
            "id": slug,
            "kind": kind,
            "project": PROJECT,
            "title": f"{_sentence(rng, 6)[:-1]} ({index})",
            "status": "active",
            "source": "agent",
            "created": format_iso(created),
            "updated": format_iso(created + timedelta(hours=rng.uniform(0, 48))),
            "tags": rng.sample(WORDS, 2),
        }
        if kind == "trap":
            fm["severity"] = rng.choice(("low", "medium", "high", "critical"))
            fm["occurrences"] = rng.randint(1, 5)
        if index % 10 == 0:
            fm["ttl"] = "30d"  # about a quarter of these have expired
        if kind == "decision":
            if decisions and index % 7 == 0:
                fm["supersedes"] = decisions[-1]
            decisions.append(slug)
        path = vault.record_path(PROJECT, kind, slug)
        path.parent.mkdir(parents=True, exist_ok=True)
        front = yaml.safe_dump(fm, sort_keys=False, allow_unicode=True)
        path.write_text(f"---\n{front}---\n{_body(rng, index)}", encoding="utf-8")
    vault.close()


@dataclass
class Run:
    cpu: float
    wall: float
    rss_mb: float


# Each measured build reports its own peak resident memory (VmHWM) on stderr as it ends: the
# rusage of a child forked from this (large) benchmark process would count this process's pages.
_PEAK = (
    "\nimport re as _re\nwith open('/proc/self/status', encoding='ascii') as _status:\n"
    "    sys.stderr.write('peak-kib ' + _re.search(r'VmHWM:\\s+(\\d+)', _status.read()).group(1) + '\\n')\n"
)


def _measure(args: list[str], env: dict[str, str]) -> Run:
    if len(args) > 2 and args[1] == "-c":
        args = [args[0], "-c", args[2] + _PEAK, *args[3:]]
    started = time.perf_counter()
    process = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    err = process.stderr.read().decode("utf-8", "replace") if process.stderr else ""
    if process.stderr:
        process.stderr.close()
    if process.returncode != 0:
        raise SystemExit(f"benchmark step failed ({' '.join(args[:3])} ...):\n{err[-2000:]}")
    peak = re.search(r"^peak-kib (\d+)$", err, re.MULTILINE)
    return Run(usage.ru_utime + usage.ru_stime, wall, int(peak.group(1)) / 1024 if peak else float("nan"))


# Both sides are the commands a person runs, whole: ``mkdocs build`` and ``memosite build`` (on
# MkDocs, the engine plain MkDocs is), each from its entry point to the end of the process.
_PLAIN = textwrap.dedent(
    """
    import sys
    from mkdocs.__main__ import cli
    cli.main(["build", "--quiet", "--config-file", sys.argv[1], "--site-dir", sys.argv[2]], standalone_mode=False)
    """
)
_MEMOSITE_BUILD = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, sys.argv[1])
    from memosite.console import main
    sys.argv = ["memosite", "--vault", sys.argv[2], "build", "--engine", "mkdocs", "--out", sys.argv[3]]
    main()
    """
)
_MEMOSITE = textwrap.dedent(
    """
    import logging, sys
    logging.getLogger("mkdocs").setLevel(logging.ERROR)
    sys.path.insert(0, sys.argv[1])
    from memosite.site.build import build_site
    from memosite.vault import Vault
    build_site(Vault.open(sys.argv[2], create=False), out_dir=sys.argv[3])
    """
)


def _plain_config(code: Path, docs: Path, nav: object, work: Path) -> Path:
    text = (code / "mkdocs.yml").read_text(encoding="utf-8").replace("  - memosite\n", "")
    config = yaml.safe_load(text)
    config["docs_dir"] = str(docs)
    config["nav"] = nav
    config["theme"]["custom_dir"] = str(docs / "overrides")
    config["extra_css"] = ["assets/memosite/memory.css"]
    config["extra_javascript"] = ["assets/memosite/memory.js"]
    path = work / f"{docs.name}.yml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


def prepare_plain(code: Path, vault_root: Path, work: Path) -> tuple[Path, Path]:
    """The plugin's pages as ordinary files (``same``) and the record bodies alone (``bodies``)."""
    sys.path.insert(0, str(code))
    from memosite.site.pages import collect_site_content, nav_section
    from memosite.vault import Vault

    vault = Vault.open(vault_root, create=False)
    index_module().ensure_index(vault)
    content = collect_site_content(vault, prefix="memory", projects=vault.projects())
    nav = [{"Home": "index.md"}, nav_section("memory", vault.projects())]
    same = work / "same"
    shutil.copytree(code / "site_src", same)
    for page in content.pages:
        target = same / page.src_uri
        target.parent.mkdir(parents=True, exist_ok=True)
        # The pages the plugin keeps out of the search index (views, inactive records) are kept
        # out of plain MkDocs' too: the search plugin then skips them as it does under memosite.
        searchable = page.searchable and (page.record is None or page.record.searchable_by_default)
        front = "" if searchable else "---\nsearch:\n  exclude: true\n---\n\n"
        target.write_text(front + page.markdown, encoding="utf-8")
    for uri in (content.records_json_uri, *getattr(content, "feeds", {})):
        (same / uri).write_text("{}", encoding="utf-8")
    bodies = work / "bodies"
    shutil.copytree(code / "site_src", bodies)
    for record in content.records:
        target = bodies / record.src_uri
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(f"# {record.entry.title}\n\n{record.entry.body}", encoding="utf-8")
    vault.close()
    return _plain_config(code, same, nav, work), _plain_config(code, bodies, [{"Home": "index.md"}], work)


_ENGINE_BUILD = textwrap.dedent(
    """
    import logging, sys
    logging.getLogger("mkdocs").setLevel(logging.ERROR)
    sys.path.insert(0, sys.argv[1])
    from memosite.site.engines import build_with_engine
    from memosite.vault import Vault
    build_with_engine(Vault.open(sys.argv[2], create=False), sys.argv[4], out_dir=sys.argv[3])
    """
)


def write_demo_vault_at(root: Path) -> None:
    from memosite.demo import write_demo_vault
    from memosite.vault import Vault

    vault = Vault.open(root)
    write_demo_vault(vault)
    vault.close()


def bench_engines(code: Path, vault_root: Path, engines: list[str], rounds: int, work: Path) -> dict[str, list[Run]]:
    """Cold builds of one vault by each engine, the order turned round every other round."""
    env = {**os.environ, "PYTHONPATH": str(code)}
    runs: dict[str, list[Run]] = {engine: [] for engine in engines}
    for n in range(rounds):
        for engine in engines if n % 2 == 0 else list(reversed(engines)):
            shutil.rmtree(vault_root / ".memosite" / "site-cache", ignore_errors=True)
            shutil.rmtree(work / "site", ignore_errors=True)
            args = [sys.executable, "-c", _ENGINE_BUILD, str(code), str(vault_root), str(work / "site"), engine]
            runs[engine].append(_measure(args, env))
    return runs


def _print_engines(label: str, runs: dict[str, list[Run]]) -> None:
    baseline = _best(next(iter(runs.values())))
    for engine, measured in runs.items():
        best = _best(measured)
        cpus = "–".join(f"{r.cpu:.1f}" for r in sorted(measured, key=lambda r: r.cpu))
        walls = "–".join(f"{r.wall:.1f}" for r in sorted(measured, key=lambda r: r.wall))
        ratio = f"CPU {best.cpu / baseline.cpu:.2f} wall {best.wall / baseline.wall:.2f}"
        print(f"{label:>8} {engine:>13} {cpus:>16} {walls:>16} {best.rss_mb:>6.0f}  {ratio}", flush=True)


def _touch_one_record(vault_root: Path, marker: str) -> Path:
    """Add a line to the first live trap (active, never expiring): a change every view, the search
    index and the feed may show, as a typical edit is."""
    path = next(p for p in sorted((vault_root / "projects" / PROJECT / "traps").glob("*.md")) if _live(p))
    text = path.read_text(encoding="utf-8").rstrip("\n")
    path.write_text(f"{text}\n\n{marker}\n", encoding="utf-8")
    return path


def _live(path: Path) -> bool:
    meta = yaml.safe_load(path.read_text(encoding="utf-8").split("---", 2)[1]) or {}
    return meta.get("status") == "active" and not meta.get("ttl") and not meta.get("expires_at")


def bench_builds(code: Path, size: int, rounds: int, work: Path, *, cold_only: bool = False) -> dict[str, list[Run]]:
    vault_root = work / "vault"
    write_synthetic_vault(vault_root, size)
    if not cold_only:
        same_config, bodies_config = prepare_plain(code, vault_root, work)
    env = {**os.environ, "PYTHONPATH": str(code)}
    python = sys.executable
    runs: dict[str, list[Run]] = {"plain-same": [], "cold": [], "warm": [], "plain-bodies": []}
    for n in range(rounds):
        # plain-same and cold both start with no site to replace (MkDocs would first delete the
        # previous round's output, memosite builds into a new directory).
        if not cold_only:
            shutil.rmtree(work / "p1", ignore_errors=True)
            runs["plain-same"].append(_measure([python, "-c", _PLAIN, str(same_config), str(work / "p1")], env))
        shutil.rmtree(vault_root / ".memosite" / "site-cache", ignore_errors=True)
        shutil.rmtree(work / "site", ignore_errors=True)
        build = [python, "-c", _MEMOSITE_BUILD, str(code), str(vault_root), str(work / "site")]
        runs["cold"].append(_measure(build, env))
        _touch_one_record(vault_root, f"warm-marker-{n}")
        runs["warm"].append(_measure(build, env))
        if not cold_only:
            runs["plain-bodies"].append(_measure([python, "-c", _PLAIN, str(bodies_config), str(work / "p2")], env))
    return runs


# --- serve -------------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as response:
        return str(response.read().decode("utf-8"))


def _until(predicate, timeout: float = 120.0) -> float:  # type: ignore[no-untyped-def]
    started = time.perf_counter()
    while time.perf_counter() - started < timeout:
        with contextlib.suppress(OSError, ValueError):
            if predicate():
                return time.perf_counter() - started
        time.sleep(0.02)
    return float("inf")


@contextlib.contextmanager
def _serving(vault_root: Path, port: int) -> Iterator[tuple[str, float]]:
    from memosite.site.server import SiteServer
    from memosite.vault import Vault

    vault = Vault.open(vault_root, create=False)
    started = time.perf_counter()
    server = SiteServer(vault, dev_addr=f"127.0.0.1:{port}")
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        server.wait_ready(timeout=600)
        yield server.url, time.perf_counter() - started
    finally:
        server.stop()
        thread.join(timeout=60)
        vault.close()


def bench_serve(code: Path, vault_root: Path, rounds: int = 3) -> dict[str, list[float]]:
    """Serve on the page cache a ``memosite build`` left: the first page, then edits and new records."""
    sys.path.insert(0, str(code))
    figures: dict[str, list[float]] = {"build": [], "first page": [], "edited": [], "new": []}
    env = {**os.environ, "PYTHONPATH": str(code)}
    out = vault_root.parent / "served-build"
    shutil.rmtree(out, ignore_errors=True)
    figures["build"].append(_measure([sys.executable, "-c", _MEMOSITE, str(code), str(vault_root), str(out)], env).wall)
    port = _free_port()
    started = time.perf_counter()
    with _serving(vault_root, port) as (url, _ready):
        _get(f"{url}memory/{PROJECT}/")
        figures["first page"].append(time.perf_counter() - started)
        time.sleep(1.0)
        for n in range(rounds):
            marker = f"serve-marker-{n}-{time.time_ns()}"
            path = _touch_one_record(vault_root, marker)
            page = f"{url}memory/{PROJECT}/traps/{path.stem}/"
            figures["edited"].append(_until(lambda page=page, marker=marker: marker in _get(page)))
            time.sleep(1.0)
            slug = f"trap-new-{n}-{time.time_ns()}"
            new = vault_root / "projects" / PROJECT / "traps" / f"{slug}.md"
            word = f"newword{n}x{time.time_ns() % 100000}"
            front = {
                "id": slug,
                "kind": "trap",
                "project": PROJECT,
                "title": f"New trap {n}",
                "status": "active",
                "source": "agent",
                "severity": "high",
                "created": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z"),
                "updated": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z"),
            }
            new.write_text(f"---\n{yaml.safe_dump(front, sort_keys=False)}---\nA {word} appears.\n", encoding="utf-8")

            def everywhere(slug: str = slug, word: str = word) -> bool:
                return (
                    word in _get(f"{url}memory/{PROJECT}/traps/{slug}/")
                    and word in _get(f"{url}search/search_index.json")
                    and slug in json.dumps(json.loads(_get(f"{url}memory/records.json")))
                )

            figures["new"].append(_until(everywhere))
            time.sleep(1.0)
    return figures


def _best(runs: list[Run]) -> Run:
    return min(runs, key=lambda r: r.cpu)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 5000, 10000])
    parser.add_argument("--rounds", type=int, default=2, help="alternating rounds of the four builds")
    parser.add_argument("--skip-serve", action="store_true")
    parser.add_argument("--serve-only", action="store_true", help="only the serve figures, at the largest size")
    parser.add_argument("--cold-only", action="store_true", help="only memosite's cold and warm builds")
    parser.add_argument("--serve-rounds", type=int, default=3, help="edits and new records measured in serve")
    parser.add_argument("--code", type=Path, default=Path(__file__).resolve().parent.parent, help="checkout to measure")
    parser.add_argument("--engines", nargs="+", help="cold builds by these engines instead (the first is the baseline)")
    parser.add_argument("--demo", action="store_true", help="with --engines: the demo vault too")
    args = parser.parse_args()
    code = args.code.resolve()
    sys.path.insert(0, str(code))
    import memosite

    if not Path(memosite.__file__).resolve().is_relative_to(code):
        raise SystemExit(f"memosite was imported from {memosite.__file__}, not from --code {code}")
    import compileall

    compileall.compile_dir(str(Path(memosite.__file__).parent), quiet=1)
    import logging

    logging.getLogger("mkdocs").setLevel(logging.ERROR)
    print(f"code: {code}")
    header = f"{'records':>8} {'build':>13} {'CPU s':>16} {'wall s':>16} {'MB':>6}"
    print(header)
    if args.engines:
        for size in (["demo"] if args.demo else []) + list(args.sizes):
            with tempfile.TemporaryDirectory(prefix="memosite-bench-") as tmp:
                work = Path(tmp)
                if size == "demo":
                    write_demo_vault_at(work / "vault")
                else:
                    write_synthetic_vault(work / "vault", int(size))
                _print_engines(str(size), bench_engines(code, work / "vault", args.engines, args.rounds, work))
        return
    for size in args.sizes:
        with tempfile.TemporaryDirectory(prefix="memosite-bench-") as tmp:
            work = Path(tmp)
            if args.serve_only:
                if size == max(args.sizes):
                    write_synthetic_vault(work / "vault", size)
                    _print_serve(size, bench_serve(code, work / "vault", args.serve_rounds))
                continue
            runs = bench_builds(code, size, args.rounds, work, cold_only=args.cold_only)
            for name, measured in runs.items():
                if not measured:
                    continue
                cpus = "–".join(f"{r.cpu:.1f}" for r in sorted(measured, key=lambda r: r.cpu))
                walls = "–".join(f"{r.wall:.1f}" for r in sorted(measured, key=lambda r: r.wall))
                print(f"{size:>8} {name:>13} {cpus:>16} {walls:>16} {_best(measured).rss_mb:>6.0f}", flush=True)
            cold, warm = _best(runs["cold"]), _best(runs["warm"])
            print(f"{size:>8} {'warm/cold':>13}  CPU {warm.cpu / cold.cpu:.3f}", flush=True)
            if args.cold_only:
                continue
            plain, bodies = _best(runs["plain-same"]), _best(runs["plain-bodies"])
            print(
                f"{size:>8} {'ratios':>13}  cold/plain-same CPU {cold.cpu / plain.cpu:.2f}"
                f" wall {cold.wall / plain.wall:.2f}"
                f" · warm/plain-bodies CPU {warm.cpu / bodies.cpu:.2f} wall {warm.wall / bodies.wall:.2f}",
                flush=True,
            )
            if not args.skip_serve and size == max(args.sizes):
                _print_serve(size, bench_serve(code, work / "vault", args.serve_rounds))


def _print_serve(size: int, figures: dict[str, list[float]]) -> None:
    def listed(values: list[float]) -> str:
        return ", ".join(f"{v:.2f}" for v in values) + f" s (median {statistics.median(values):.2f})"

    print(
        f"serve at {size} records (after a build of {figures['build'][0]:.1f} s): first page"
        f" {figures['first page'][0]:.1f} s; edited record visible {listed(figures['edited'])};"
        f" new record (page, search index, records.json) {listed(figures['new'])}",
        flush=True,
    )


if __name__ == "__main__":
    main()
