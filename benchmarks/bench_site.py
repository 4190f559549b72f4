"""Site benchmark: memosite build vs plain ``mkdocs build`` of the same pages, bytes per record,
and the time from a record changing on disk to the change being served by ``memosite serve``.

    .venv/bin/python benchmarks/bench_site.py                 # 1,000 and 5,000 records
    .venv/bin/python benchmarks/bench_site.py --sizes 1000 --skip-serve

Targets (issue 5): memosite build <= 1.25x plain mkdocs on the same pages; site bytes linear in
records; a changed record visible in serve <= 3 s at 1,000 records.

The plain build gets exactly the Markdown the plugin generates (record pages, views, the Memory
page), written as ordinary files, with the same theme, extensions, nav and search plugin; the
difference is what the plugin adds: reading the index, sanitising, records.json, the secret scan.
"""

from __future__ import annotations

import argparse
import contextlib
import random
import shutil
import socket
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from memosite.indexing import reindex  # noqa: E402
from memosite.schema import format_iso  # noqa: E402
from memosite.vault import Vault  # noqa: E402

PROJECT = "bench"
WORDS = (
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
)
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


def write_synthetic_vault(root: Path, count: int, *, seed: int = 7) -> Vault:
    """A vault of ``count`` hand-written record files (a mix of kinds, some expired or superseded)."""
    rng = random.Random(seed)
    vault = Vault.open(root)
    now = datetime.now(UTC)
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
    reindex(vault)
    return vault


def _timed(func) -> tuple[float, object]:  # type: ignore[no-untyped-def]
    started = time.perf_counter()
    result = func()
    return time.perf_counter() - started, result


def _dir_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def plain_mkdocs_build(vault: Vault, work: Path) -> float:
    """Build the plugin's pages as ordinary Markdown files with plain MkDocs; returns seconds."""
    from mkdocs.commands.build import build
    from mkdocs.config import load_config

    from memosite.indexing import ensure_index
    from memosite.resources import data_path
    from memosite.site.pages import collect_site_content, nav_section

    ensure_index(vault)
    projects = vault.projects()
    content = collect_site_content(vault, prefix="memory", projects=projects)
    docs = work / "docs"
    shutil.copytree(data_path("site_src"), docs)
    for page in content.pages:
        target = docs / page.src_uri
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(page.markdown, encoding="utf-8")
    config_text = data_path("mkdocs.yml").read_text(encoding="utf-8").replace("  - memosite\n", "")
    config_path = work / "mkdocs.yml"
    config_path.write_text(config_text, encoding="utf-8")
    config = load_config(
        str(config_path),
        docs_dir=str(docs),
        site_dir=str(work / "site"),
        nav=[{"Home": "index.md"}, nav_section("memory", projects)],
        theme={
            "name": "material",
            "custom_dir": str(docs / "overrides"),
            "features": [
                "navigation.instant",
                "navigation.top",
                "navigation.sections",
                "search.highlight",
                "content.code.copy",
            ],
            "font": False,
        },
    )
    seconds, _ = _timed(lambda: build(config))
    return seconds


def memosite_build(vault: Vault, out: Path) -> tuple[float, int]:
    from memosite.site.build import build_site

    seconds, result = _timed(lambda: build_site(vault, out_dir=out))
    return seconds, result.bytes  # type: ignore[attr-defined]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def _serving(vault: Vault) -> Iterator[str]:
    from memosite.site.server import SiteServer

    server = SiteServer(vault, dev_addr=f"127.0.0.1:{_free_port()}")
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        server.wait_ready(timeout=300)
        yield server.url
    finally:
        server.stop()
        thread.join(timeout=30)


def serve_latency(vault: Vault, *, rounds: int = 3) -> list[float]:
    """Seconds from rewriting a trap file to ``memosite serve`` serving the new text."""
    path = next(vault.iter_record_files(PROJECT, ("traps",)))
    latencies = []
    with _serving(vault) as url:
        page = f"{url}memory/{PROJECT}/traps/{path.stem}/"
        for attempt in range(rounds):
            marker = f"latency-marker-{attempt}-{time.time_ns()}"
            text = path.read_text(encoding="utf-8")
            started = time.perf_counter()
            path.write_text(text.rstrip("\n") + f"\n\n{marker}\n", encoding="utf-8")
            deadline = started + 60
            while time.perf_counter() < deadline:
                with contextlib.suppress(OSError), urllib.request.urlopen(page, timeout=5) as response:
                    if marker in response.read().decode("utf-8"):
                        break
                time.sleep(0.05)
            latencies.append(time.perf_counter() - started)
            time.sleep(1.0)
    return latencies


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 5000])
    parser.add_argument("--skip-serve", action="store_true")
    parser.add_argument("--repeat", type=int, default=2, help="builds of each kind; the best counts")
    args = parser.parse_args()
    import logging

    logging.getLogger("mkdocs").setLevel(logging.ERROR)
    print(f"{'records':>8} {'memosite s':>11} {'plain s':>8} {'ratio':>6} {'site MB':>8} {'KB/record':>10}")
    for size in args.sizes:
        with tempfile.TemporaryDirectory(prefix="memosite-bench-") as tmp:
            work = Path(tmp)
            vault = write_synthetic_vault(work / "vault", size)
            ours_runs, plain_runs = [], []
            for attempt in range(args.repeat):  # alternate, so neither side gets the warm caches
                plain_runs.append(plain_mkdocs_build(vault, work / f"plain{attempt}"))
                seconds, size_bytes = memosite_build(vault, work / "site")
                ours_runs.append(seconds)
            ours, plain = min(ours_runs), min(plain_runs)
            print(
                f"{size:>8} {ours:>11.2f} {plain:>8.2f} {ours / plain:>6.2f} "
                f"{size_bytes / 1e6:>8.1f} {size_bytes / size / 1e3:>10.1f}",
                flush=True,
            )
            if not args.skip_serve and size == min(args.sizes):
                latencies = serve_latency(vault)
                print(
                    f"serve at {size} records: change visible after "
                    + ", ".join(f"{value:.2f}" for value in latencies)
                    + " s",
                    flush=True,
                )
            vault.close()


if __name__ == "__main__":
    main()
