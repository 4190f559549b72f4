"""Bootstrap rules: which traps, decisions and current work a brief holds, the byte budget, hits."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from click.testing import CliRunner

from memosite.bootstrap import build_bootstrap
from memosite.cli import cli
from memosite.errors import InvalidArguments
from memosite.indexing import read_record
from memosite.store import upsert_record
from memosite.vault import Vault

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
P = "demo"


def put(vault: Vault, kind: str, slug: str, body: str | None = None, *, age: float = 2, **fm: object) -> None:
    upsert_record(
        vault,
        P,
        kind=kind,
        slug=slug,
        body=body or f"What to know about {slug}.\n",
        frontmatter={"title": slug, **fm},
        allow_duplicate=True,
        now=NOW - timedelta(days=age),
    )


def trap_ids(result) -> list[str]:  # type: ignore[no-untyped-def]
    return [item.id for item in result.traps]


def test_brief_lists_active_traps_of_medium_severity_and_up(vault: Vault) -> None:
    for severity in ("low", "medium", "high", "critical"):
        put(vault, "trap", f"{severity}-trap", severity=severity)
    put(vault, "trap", "archived-trap", severity="critical", status="archived")
    result = build_bootstrap(vault, P, now=NOW)
    assert trap_ids(result) == ["critical-trap", "high-trap", "medium-trap"]
    assert "### [CRITICAL] critical-trap" in result.markdown


def test_brief_omits_expired_traps_and_decisions(vault: Vault) -> None:
    put(vault, "trap", "expired-trap", severity="high", ttl="1d")
    put(vault, "decision", "expired-decision", expires_at="2026-11-29")
    put(vault, "decision", "live-decision")
    result = build_bootstrap(vault, P, now=NOW)
    assert result.traps == []
    assert [item.id for item in result.decisions] == ["live-decision"]
    assert "expired-" not in result.markdown


def test_path_and_keyword_matches_come_first(vault: Vault) -> None:
    put(vault, "trap", "critical-elsewhere", severity="critical", pathPatterns=["infra/**"])
    put(vault, "trap", "keyword-hit", "The idempotency key must be sent.\n", severity="medium")
    put(vault, "trap", "path-hit", severity="medium", pathPatterns=["src/payments/**"])
    result = build_bootstrap(vault, P, path="src/payments/client.py", query="idempotency", now=NOW)
    assert trap_ids(result) == ["path-hit", "keyword-hit", "critical-elsewhere"]
    assert result.traps[0].matched == ["path"] and result.traps[1].matched == ["keyword"]


def test_at_most_ten_traps(vault: Vault) -> None:
    for number in range(14):
        put(vault, "trap", f"trap-{number:02d}", severity="high", occurrences=number + 1)
    result = build_bootstrap(vault, P, max_bytes=100_000, now=NOW)
    assert len(result.traps) == 10
    assert trap_ids(result)[0] == "trap-13"  # most occurrences first among equals


def test_only_accepted_decisions(vault: Vault) -> None:
    put(vault, "decision", "active-one")
    put(vault, "decision", "shipped-one", status="shipped")
    put(vault, "decision", "paused-one", status="paused")
    put(vault, "decision", "archived-one", status="archived")
    put(vault, "decision", "replaced", age=5)
    put(vault, "decision", "replacement", age=1, supersedes="replaced")
    result = build_bootstrap(vault, P, now=NOW)
    assert sorted(item.id for item in result.decisions) == [
        "active-one",
        "replacement",
        "shipped-one",
    ]


def test_slug_context_is_annotated_expired_not_omitted(vault: Vault) -> None:
    put(vault, "spec", "checkout", "# Checkout\n\nOne page.\n", ttl="1d")
    put(vault, "plan", "checkout-rollout", "1. Ship it\n")
    put(vault, "state", "checkout-state", "Halfway through.\n")
    put(vault, "plan", "unrelated")
    result = build_bootstrap(vault, P, slug="checkout", now=NOW)
    assert [(i.kind, i.id, i.expired) for i in result.context] == [
        ("spec", "checkout", True),
        ("plan", "checkout-rollout", False),
        ("state", "checkout-state", False),
    ]
    assert "### Spec: checkout (expired)" in result.markdown
    assert result.markdown.index("## Current work") < result.markdown.index("One page.")


def test_budget_drops_lowest_ranked_first_and_sets_truncated(vault: Vault) -> None:
    for number in range(6):
        put(
            vault,
            "trap",
            f"trap-{number}",
            "Trap text. " * 20,
            severity="high",
            occurrences=10 - number,
        )
    for number in range(6):
        put(vault, "decision", f"decision-{number}", "Decision text. " * 20, age=number + 1)
    full = build_bootstrap(vault, P, max_bytes=100_000, now=NOW)
    assert not full.truncated and full.omitted == []
    small = build_bootstrap(vault, P, max_bytes=2500, now=NOW)
    assert small.truncated and small.bytes <= 2500
    assert small.bytes == len(small.markdown.encode("utf-8"))
    kept = [i.id for i in [*small.traps, *small.decisions]]
    ranked = [i.id for i in [*full.traps, *full.decisions]]
    assert kept == ranked[: len(kept)]  # a prefix of the ranking: the lowest-ranked went first
    assert small.decisions == [] or len(small.traps) == 6
    assert "lower-ranked records left out" in small.markdown


def test_budget_counts_utf8_bytes_not_characters(vault: Vault) -> None:
    put(vault, "trap", "accents", "Ünïcödé ✓ " * 300, severity="high")
    result = build_bootstrap(vault, P, max_bytes=1024, now=NOW)
    assert result.bytes <= 1024 and len(result.markdown) < result.bytes
    assert result.truncated and result.traps[0].trimmed
    result.markdown.encode("utf-8").decode("utf-8")  # never cut inside a character


def test_default_budget_comes_from_config(vault_dir) -> None:  # type: ignore[no-untyped-def]
    vault_dir.mkdir(parents=True)
    (vault_dir / "config.json").write_text(json.dumps({"bootstrap": {"maxBytes": 900}}), encoding="utf-8")
    vault = Vault.open(vault_dir)
    for number in range(5):
        put(vault, "trap", f"trap-{number}", "Long trap text. " * 30, severity="high")
    result = build_bootstrap(vault, P, now=NOW)
    assert result.max_bytes == 900 and result.bytes <= 900 and result.truncated


def test_too_small_budget_is_rejected(vault: Vault) -> None:
    with pytest.raises(InvalidArguments, match="max bytes"):
        build_bootstrap(vault, P, max_bytes=100, now=NOW)


def test_brief_counts_hits_once_per_session(vault: Vault) -> None:
    put(vault, "trap", "t", severity="high")
    put(vault, "decision", "d")
    first = build_bootstrap(vault, P, session_id="s1", now=NOW)
    again = build_bootstrap(vault, P, session_id="s1", now=NOW)
    assert sorted(first.hits_recorded) == ["d", "t"] and again.hits_recorded == []
    assert read_record(vault.record_path(P, "trap", "t")).frontmatter["hits"] == 1


def test_brief_without_a_session_counts_no_hits(vault: Vault) -> None:
    put(vault, "trap", "t", severity="high")
    result = build_bootstrap(vault, P, now=NOW)
    assert [item.id for item in result.traps] == ["t"] and result.hits_recorded == []
    assert "hits" not in read_record(vault.record_path(P, "trap", "t")).frontmatter


def test_empty_project_gets_a_short_brief(vault: Vault) -> None:
    result = build_bootstrap(vault, P, now=NOW)
    assert "No active traps" in result.markdown and not result.truncated


def test_cli_bootstrap_json_shape_and_markdown(vault: Vault) -> None:
    upsert_record(
        vault,
        P,
        kind="trap",
        body="Never run migrations at peak.\n",
        frontmatter={"title": "Peak migrations", "severity": "high"},
    )
    runner = CliRunner()
    result = runner.invoke(cli, ["bootstrap", "--json", "--max-bytes", "4096", "--query", "migrations"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert set(data["sections"]) == {"context", "traps", "decisions"}
    assert data["truncated"] is False and data["bytes"] == len(data["markdown"].encode("utf-8"))
    assert data["sections"]["traps"][0]["matched"] == ["keyword"]
    text = runner.invoke(cli, ["bootstrap"])
    assert text.stdout.startswith(f"# Session brief: {P}") and "Peak migrations" in text.stdout
