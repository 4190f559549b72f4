"""Site bookkeeping benchmark: what a warm ``memosite build`` spends around the pages at N records,
each piece beside a baseline in the same run (CPU, best of the rounds):

* ``index save`` / ``index open``: the page cache's index (format 4: JSON columns, then the texts
  unescaped, then a CRC-32) against the same entries kept as one JSON object per page, as format 3
  kept them (``json.dumps`` / ``json.loads`` and the entries made again);
* ``dir check``: which of the site's N record directories a person replaced with a file or a link,
  by one listing per parent (``memosite.site.output``) against three looks per path (lexists,
  islink, isdir: the check before);
* ``manifest read``: a signed manifest of N files read and checked.

    .venv/bin/python benchmarks/bench_site_cache.py --records 10000
    .venv/bin/python benchmarks/bench_site_cache.py --records 1000 10000 --rounds 5

Whole builds (cold, warm) are measured by ``bench_site.py`` (``--code`` for another checkout).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from memosite.site.cache import CachedPage, PageCache
from memosite.site.manifest import Manifest, WrittenFile, read_manifest, write_manifest
from memosite.site.output import _not_directories

SCOPE = "5c09e" * 6 + "ab"
WORDS = ["lock", "retry", "cache", "Ошибка", "σφάλμα", "丸め", "token", "buffer", "jitter", "rollback"]


def _cpu(action: Callable[[Any], object], rounds: int, setup: Callable[[], Any] = lambda: None) -> float:
    """The least CPU ``action(setup())`` took in ``rounds`` runs (``setup`` not counted)."""
    best = float("inf")
    for _ in range(rounds):
        prepared = setup()
        start = time.process_time()
        action(prepared)
        best = min(best, time.process_time() - start)
    return best


def _entries(records: int) -> tuple[dict[str, CachedPage], dict[str, tuple[str, str]], set[str]]:
    rng = random.Random(records)
    pages, rows = {}, {}
    for n in range(records):
        uri = f"memory/bench/traps/trap-{n:05d}.md"
        words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(40, 160)))
        search = json.dumps({"location": f"bench/traps/trap-{n:05d}/", "title": f"Trap {n}", "text": words})
        pages[uri] = CachedPage(f"{n:032x}", 18_000 + n, search, "pack-0123456789abcdef.pack", n * 18_000, f"{n:064x}")
        row = json.dumps({"id": f"trap-{n:05d}", "title": f"Trap {n} {rng.choice(WORDS)}", "tags": ["a", "b"]})
        rows[uri] = (f"projects/bench/traps/trap-{n:05d}.md\0{n}\0ok", row)
    return pages, rows, {f"{n:032x}" for n in range(records)}


def _format3(pages: dict[str, CachedPage], rows: dict[str, tuple[str, str]], clean: set[str]) -> str:
    fields = ("key", "size", "search", "pack", "offset", "digest")
    return json.dumps(
        {
            "format": 3,
            "scope": SCOPE,
            "pages": {uri: {name: getattr(p, name) for name in fields} for uri, p in pages.items()},
            "clean": sorted(clean),
            "rows": rows,
        },
        separators=(",", ":"),
    )


def _open3(text: str) -> dict[str, CachedPage]:
    data: dict[str, Any] = json.loads(text)
    return {
        uri: CachedPage(str(i["key"]), int(i["size"]), i["search"], str(i["pack"]), int(i["offset"]), str(i["digest"]))
        for uri, i in data["pages"].items()
    }


def _index(records: int, rounds: int, work: Path) -> None:
    pages, rows, clean = _entries(records)
    internal = work / "internal"

    def kept() -> PageCache:
        """A cache as a warm build leaves it before its save: every page kept."""
        cache = PageCache.open(internal, SCOPE)
        for uri, page in pages.items():
            cache.keep(uri, page)
        cache.rows, cache.clean = dict(rows), set(clean)
        return cache

    kept().save()
    opened = PageCache.open(internal, SCOPE)
    assert opened.pages == pages and opened.rows == rows
    old = work / "index-format3.json"

    def save3(_: object) -> None:
        old.write_text(_format3(pages, rows, clean), encoding="utf-8")

    save3(None)
    saved = _cpu(lambda cache: cache.save(), rounds, kept)
    print(f"  index save   {saved * 1000:7.1f} ms   format 3: {_cpu(save3, rounds) * 1000:7.1f} ms")
    print(
        f"  index open   {_cpu(lambda _: PageCache.open(internal, SCOPE), rounds) * 1000:7.1f} ms"
        f"   format 3: {_cpu(lambda _: _open3(old.read_text(encoding='utf-8')), rounds) * 1000:7.1f} ms"
    )


def _before(path: str) -> bool:
    return os.path.lexists(path) and (os.path.islink(path) or not os.path.isdir(path))


def _dirs(records: int, rounds: int, work: Path) -> None:
    site = work / "site"
    names = {"memory", "memory/bench", "memory/bench/traps"}
    for n in range(records):
        name = f"memory/bench/traps/trap-{n:05d}"
        (site / name).mkdir(parents=True)
        names.add(name)
    base = os.fspath(site)
    assert _not_directories(base, names) == {name for name in names if _before(f"{base}/{name}")}
    listed = _cpu(lambda _: _not_directories(base, names), rounds)
    each = _cpu(lambda _: {name for name in names if _before(os.path.join(base, name))}, rounds)
    print(f"  dir check    {listed * 1000:7.1f} ms   one look per path: {each * 1000:7.1f} ms")


def _manifest(records: int, rounds: int, work: Path) -> None:
    files = {
        f"memory/bench/traps/trap-{n:05d}/index.html": WrittenFile(f"{n:064x}", n, n * 7, n) for n in range(records)
    }
    manifest = Manifest(files, frozenset(name.rpartition("/")[0] for name in files))
    key = os.urandom(32)
    path = work / ".memosite-site.json"
    write_manifest(path, "memosite build", manifest, key)
    assert read_manifest(path, "memosite build", key) == manifest
    read = _cpu(lambda _: read_manifest(path, "memosite build", key), rounds)
    write = _cpu(lambda _: write_manifest(path, "memosite build", manifest, key), rounds)
    baseline = _cpu(lambda _: json.loads(path.read_text(encoding="utf-8")), rounds)
    print(f"  manifest     read {read * 1000:6.1f} ms, write {write * 1000:6.1f} ms", end="")
    print(f"   json.loads alone: {baseline * 1000:6.1f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, nargs="+", default=[10_000])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    if any(n < 1 for n in args.records) or args.rounds < 1:
        parser.error("--records and --rounds take numbers >= 1")
    for records in args.records:
        print(f"{records} records (CPU, best of {args.rounds}):")
        with tempfile.TemporaryDirectory(prefix="bench-site-cache-") as temporary:
            work = Path(temporary)
            _index(records, args.rounds, work)
            _dirs(records, args.rounds, work)
            _manifest(records, args.rounds, work)


if __name__ == "__main__":
    main()
