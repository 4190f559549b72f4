"""Build large realistic vaults fast: write the Markdown directly, then index once."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

from memosite.indexing import reindex
from memosite.schema import Record, format_iso, serialize_record, subdir_for_kind, validate_frontmatter
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


def sentence(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def build_vault(root: Path, count: int, project: str = "bench", seed: int = 7) -> Vault:
    """A vault of ``count`` varied records in one project, indexed and compiled."""
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
    reindex(vault, [project])
    return vault


def write_record(vault: Vault, fm: dict[str, object], body: str) -> None:
    """Write one record file as a person would (no index, no views): ``fm`` holds kind, project, id."""
    path = vault.record_path(str(fm["project"]), str(fm["kind"]), str(fm["id"]))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(serialize_record(Record(validate_frontmatter(fm), body)), encoding="utf-8")


def subdir(kind: str) -> str:
    return subdir_for_kind(kind)
