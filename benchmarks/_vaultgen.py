"""Build large realistic vaults fast: write the Markdown directly, then index once.

A vault of 50,000 records takes minutes to write, so the record files of each generator and size are
written once into a cache outside the repository (``$MEMOSITE_BENCH_VAULTS``, by default
``memosite-bench-vaults`` in the system's temporary directory) and copied for each run
(:func:`cached_files`). The cache holds record files only, never an index: each run indexes its copy
with the code it measures, so the same files serve a before/after comparison.

memosite is imported on first use, not with this module, so that a script measuring another checkout
(``bench_site.py --code``) can put that checkout first on the path before anything is imported.
"""

from __future__ import annotations

import importlib
import os
import random
import shutil
import tempfile
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memosite.vault import Vault

WORDS = [
    "cache",
    "retry",
    "payment",
    "checkout",
    "session",
    "cookie",
    "migration",
    "index",
    "query",
    "timeout",
    "deploy",
    "rollback",
    "queue",
    "worker",
    "lock",
    "race",
    "schema",
    "column",
    "token",
    "auth",
    "login",
    "invoice",
    "rounding",
    "currency",
    "search",
    "tsvector",
    "redis",
    "postgres",
    "latency",
    "memory",
    "leak",
    "thread",
    "async",
    "fixture",
    "flaky",
    "test",
    "docker",
    "image",
    "cdn",
    "header",
    "proxy",
    "webhook",
    "signature",
    "idempotency",
    "order",
    "stock",
    "inventory",
    "email",
    "template",
    "render",
    "component",
    "state",
    "reducer",
    "hook",
    "route",
    "api",
    "gateway",
    "rate",
    "limit",
    "backoff",
    "jitter",
]
KIND_MIX = (
    ["trap"] * 30
    + ["decision"] * 15
    + ["spec"] * 8
    + ["plan"] * 7
    + ["log"] * 25
    + ["review"] * 5
    + ["prompt"] * 4
    + ["session"] * 3
    + ["scratch"] * 2
    + ["state"] * 1
)
SEVERITIES = ["low", "medium", "high", "critical"]


def index_module() -> ModuleType:
    """memosite's module that builds and refreshes the index (``reindex``, ``ensure_index``):
    ``memosite.refresh``, called ``memosite.indexing`` before issue 22 renamed it, so that the
    benchmarks can measure a checkout from before the rename."""
    try:
        return importlib.import_module("memosite.refresh")
    except ModuleNotFoundError:
        return importlib.import_module("memosite.indexing")


def sentence(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


CACHE_ENV = "MEMOSITE_BENCH_VAULTS"
_COMPLETE = ".complete"
_NOT_COPIED = (".memosite", _COMPLETE, "config.local.json")


def cache_root() -> Path:
    """Where generated record files are kept between runs (never inside the repository)."""
    return Path(os.environ.get(CACHE_ENV) or Path(tempfile.gettempdir()) / "memosite-bench-vaults")


def cached_files(name: str, count: int, write: Callable[[Path], None], dest: Path) -> Path:
    """A copy at ``dest`` of the vault ``write(root)`` makes (``name`` says which generator and its
    version, ``count`` how many records): written once into :func:`cache_root`, copied after that.
    The copy holds the record files and ``config.json``; no index, no views, no local settings."""
    cached = cache_root() / f"{name}-{count}"
    if not (cached / _COMPLETE).is_file():
        building = cached.with_name(f"{cached.name}.building-{os.getpid()}")
        shutil.rmtree(building, ignore_errors=True)
        building.mkdir(parents=True)
        write(building)
        for leftover in _NOT_COPIED:
            target = building / leftover
            if target.is_dir():
                shutil.rmtree(target)
            else:
                target.unlink(missing_ok=True)
        for view in building.glob("projects/*/*.md"):
            view.unlink()  # compiled views: the run's own code compiles them
        (building / _COMPLETE).write_text(f"{count}\n", encoding="utf-8")
        shutil.rmtree(cached, ignore_errors=True)
        os.replace(building, cached)
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copytree(cached, dest, ignore=shutil.ignore_patterns(*_NOT_COPIED), dirs_exist_ok=True)
    return dest


def build_vault(root: Path, count: int, project: str = "bench", seed: int = 7) -> Vault:
    """A vault of ``count`` varied records in one project, indexed and compiled (its record files
    come from the cache after the first run, see :func:`cached_files`)."""
    from memosite.vault import Vault

    cached_files(f"vaultgen-v1-{project}-{seed}", count, lambda at: write_vault(at, count, project, seed), root)
    vault = Vault.open(root)
    index_module().reindex(vault, [project])
    return vault


def write_vault(root: Path, count: int, project: str = "bench", seed: int = 7) -> None:
    """Write the record files of :func:`build_vault` (not indexed)."""
    from memosite.schema import format_iso
    from memosite.vault import Vault

    rng = random.Random(seed)
    vault = Vault.open(root)
    now = datetime(2026, 11, 30, tzinfo=UTC)
    for n in range(count):
        kind = rng.choice(KIND_MIX)
        created = now - timedelta(days=rng.uniform(0, 120))
        fm = {
            "id": f"{kind}-{n:06d}",
            "kind": kind,
            "project": project,
            "title": sentence(rng, 6).capitalize(),
            "created": format_iso(created),
            "updated": format_iso(created + timedelta(hours=rng.uniform(0, 48))),
        }
        if kind == "trap":
            fm.update(
                severity=rng.choice(SEVERITIES),
                occurrences=rng.randint(1, 9),
                pathPatterns=[f"src/{rng.choice(WORDS)}/{rng.choice(WORDS)}.py"],
            )
        if kind == "decision" and rng.random() < 0.1:
            fm["status"] = "paused"
        if rng.random() < 0.05:
            fm["ttl"] = f"{rng.randint(1, 60)}d"
        body = "\n\n".join(sentence(rng, rng.randint(20, 80)) + "." for _ in range(rng.randint(1, 4))) + "\n"
        write_record(vault, fm, body)
    vault.close()


def write_record(vault: Vault, fm: dict[str, object], body: str) -> None:
    """Write one record file as a person would (no index, no views): ``fm`` holds kind, project, id."""
    from memosite.schema import Record, serialize_record, validate_frontmatter

    path = vault.record_path(str(fm["project"]), str(fm["kind"]), str(fm["id"]))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(serialize_record(Record(validate_frontmatter(fm), body)), encoding="utf-8")


def subdir(kind: str) -> str:
    from memosite.schema import subdir_for_kind

    return subdir_for_kind(kind)
