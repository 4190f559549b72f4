"""Bootstrap rules: which traps, decisions and current work a brief holds, the byte budget, hits."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memosite.bootstrap import MAX_TRAPS, MIN_MAX_BYTES, build_bootstrap
from memosite.cli import cli
from memosite.errors import InvalidArguments
from memosite.hits import bootstrap_counting_hits
from memosite.recordfile import read_record
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


def test_brief_lists_every_active_trap_unrated_and_low_ones_last(vault: Vault) -> None:
    for severity in ("low", "medium", "high", "critical"):
        put(vault, "trap", f"{severity}-trap", severity=severity)
    put(vault, "trap", "unrated-trap")
    put(vault, "trap", "archived-trap", severity="critical", status="archived")
    result = build_bootstrap(vault, P, now=NOW)
    assert trap_ids(result) == ["critical-trap", "high-trap", "medium-trap", "low-trap", "unrated-trap"]
    assert "### [CRITICAL] critical-trap" in result.markdown and "### [UNRATED] unrated-trap" in result.markdown


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
    assert small.markdown.endswith(f"+ {len(ranked) - len(kept)} more decisions: memosite search --kind decision\n")


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
    first = bootstrap_counting_hits(vault, P, session_id="s1", now=NOW)
    again = bootstrap_counting_hits(vault, P, session_id="s1", now=NOW)
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
    assert set(data["sections"]) == {"context", "traps", "decisions", "pending"}
    assert data["truncated"] is False and data["bytes"] == len(data["markdown"].encode("utf-8"))
    assert data["sections"]["traps"][0]["matched"] == ["keyword"]
    text = runner.invoke(cli, ["bootstrap"])
    assert text.stdout.startswith(f"# Session brief: {P}") and "Peak migrations" in text.stdout


# --- honest briefs ---------------------------------------------------------------------------


def test_cap_on_traps_sets_truncated_and_says_how_many_more(vault: Vault) -> None:
    for number in range(30):
        put(vault, "trap", f"trap-{number:02d}", "Short.\n", severity="high", occurrences=number + 1)
    result = build_bootstrap(vault, P, max_bytes=100_000, now=NOW)
    assert len(result.traps) == 10 and result.truncated
    cap = [o for o in result.omitted if o.reason == "cap"]
    assert [(o.section, o.count) for o in cap] == [("traps", 20)]
    assert cap[0].ids[:2] == ["trap-19", "trap-18"]  # the next ones in rank order
    assert result.markdown.endswith("+ 20 more traps: memosite search --kind trap\n")


def test_budget_omissions_are_counted_exactly_per_section(vault: Vault) -> None:
    for number in range(3):
        put(vault, "trap", f"trap-{number}", "Trap text. " * 40, severity="high")
    for number in range(40):
        put(vault, "decision", f"decision-{number:02d}", "Decision text. " * 30, age=number + 1)
    result = build_bootstrap(vault, P, max_bytes=3000, now=NOW)
    assert result.truncated and result.bytes <= 3000
    shown = {"traps": len(result.traps), "decisions": len(result.decisions)}
    left = {(o.section, o.reason): o.count for o in result.omitted}
    assert shown["decisions"] + left[("decisions", "budget")] == 40
    assert shown["traps"] + left.get(("traps", "budget"), 0) == 3
    traps_left = left.get(("traps", "budget"), 0)
    decisions_left = left[("decisions", "budget")]
    parts = ([f"{traps_left} more trap{'s' if traps_left > 1 else ''}"] if traps_left else []) + [
        f"{decisions_left} more decision{'s' if decisions_left > 1 else ''}"
    ]
    kinds = ("--kind trap " if traps_left else "") + "--kind decision"
    assert result.markdown.endswith(f"+ {', '.join(parts)}: memosite search {kinds}\n")


def test_nothing_left_out_means_not_truncated_and_no_last_line(vault: Vault) -> None:
    put(vault, "trap", "t", severity="high")
    put(vault, "decision", "d")
    result = build_bootstrap(vault, P, now=NOW)
    assert not result.truncated and result.omitted == []
    assert "more traps" not in result.markdown and "memosite search" not in result.markdown


def test_a_record_cut_short_says_where_the_rest_is(vault: Vault) -> None:
    put(vault, "trap", "long", "Word " * 1000, severity="high")
    result = build_bootstrap(vault, P, max_bytes=1024, now=NOW)
    assert result.truncated and result.traps[0].trimmed and result.omitted == []
    assert "`memosite get --id long` has all of it" in result.markdown


def test_size_is_reported_in_bytes_and_estimated_tokens(vault: Vault) -> None:
    put(vault, "trap", "t", "Über 数据库 ✓\n", severity="high")
    data = build_bootstrap(vault, P, now=NOW).to_json()
    assert data["bytes"] == len(data["markdown"].encode("utf-8"))
    assert data["estimatedTokens"] == -(-data["bytes"] // 4)


def test_max_tokens_is_a_budget_of_four_bytes_a_token(vault: Vault) -> None:
    for number in range(8):
        put(vault, "trap", f"trap-{number}", "Long trap text. " * 30, severity="high")
    result = build_bootstrap(vault, P, max_tokens=300, now=NOW)
    assert result.max_bytes == 1200 and result.bytes <= 1200 and result.estimated_tokens <= 300
    both = build_bootstrap(vault, P, max_tokens=300, max_bytes=900, now=NOW)
    assert both.max_bytes == 900 and both.bytes <= 900  # within both


@pytest.mark.parametrize("kwargs", [{"max_tokens": 10}, {"max_tokens": True}, {"max_bytes": 100}])
def test_too_small_budgets_are_rejected(vault: Vault, kwargs: dict[str, object]) -> None:
    with pytest.raises(InvalidArguments, match=r"max (bytes|tokens)"):
        build_bootstrap(vault, P, now=NOW, **kwargs)  # type: ignore[arg-type]


def test_cli_max_tokens_and_bad_input_is_one_line(vault: Vault, run_cli) -> None:  # type: ignore[no-untyped-def]
    put(vault, "trap", "t", severity="high")
    data = run_cli("bootstrap", "--max-tokens", "2000", "--json").json()
    assert data["maxTokens"] == 2000 and data["maxBytes"] == 8000
    bad = run_cli("bootstrap", "--max-tokens", "5")
    assert bad.exit_code == 1 and bad.stderr.count("\n") == 1 and "Traceback" not in bad.stderr


@pytest.mark.slow
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    budget=st.integers(MIN_MAX_BYTES, 6000),
    traps=st.integers(0, 14),
    decisions=st.integers(0, 12),
    length=st.integers(1, 60),
)
def test_a_brief_never_hides_what_it_left_out(
    vault_dir: Path, budget: int, traps: int, decisions: int, length: int
) -> None:
    import shutil

    shutil.rmtree(vault_dir, ignore_errors=True)
    vault = Vault.open(vault_dir)
    try:
        for number in range(traps):
            put(vault, "trap", f"trap-{number:02d}", "Trap ✓ text. " * length, severity="high")
        for number in range(decisions):
            put(vault, "decision", f"decision-{number:02d}", "Decision text. " * length, age=number + 1)
        result = build_bootstrap(vault, P, max_bytes=budget, now=NOW)
        assert result.bytes <= budget
        counts: dict[str, int] = {}
        for omission in result.omitted:
            counts[omission.section] = counts.get(omission.section, 0) + omission.count
        assert len(result.traps) + counts.get("traps", 0) == traps
        assert len(result.decisions) + counts.get("decisions", 0) == decisions
        assert result.truncated == bool(result.omitted or any(i.trimmed for i in result.traps + result.decisions))
        if result.omitted:
            assert result.markdown.rstrip("\n").splitlines()[-1].startswith("+ ")
    finally:
        vault.close()


# --- one pipeline with search ------------------------------------------------------------------


def test_a_trap_sharing_only_a_common_word_with_the_task_ranks_by_severity(vault: Vault) -> None:
    # "payment" is in two traps of three: common here. "retries" is in one: rare.
    put(vault, "trap", "critical-other", "Disk fills up at night.\n", severity="critical")
    put(vault, "trap", "one-word", "Payment webhooks arrive out of order.\n", severity="high")
    put(vault, "trap", "both", "Payment retries double-charge without an idempotency key.\n", severity="medium")
    result = build_bootstrap(vault, P, query="how do payment retries work", now=NOW)
    assert trap_ids(result) == ["both", "critical-other", "one-word"]
    assert [item.why for item in result.traps] == [
        result.traps[0].why,
        "critical severity",
        "high severity",
    ] and result.traps[0].why.startswith("task words retries, payment")
    assert [i.matched_terms for i in result.traps] == [2, 0, 0]  # counted for what the task's words brought in
    assert result.match == "all"


def test_the_brief_reads_a_query_as_search_does(vault: Vault) -> None:
    put(vault, "trap", "zh", "在生产数据上执行会锁住订单表。\n", severity="medium")
    put(vault, "trap", "other", "Something else entirely.\n", severity="critical")
    put(vault, "trap", "null", "Adding a NOT NULL column locks the table.\n", severity="medium")
    assert trap_ids(build_bootstrap(vault, P, query="锁表", now=NOW))[0] == "zh"
    assert trap_ids(build_bootstrap(vault, P, query="add a NOT NULL column", now=NOW))[0] == "null"
    assert trap_ids(build_bootstrap(vault, P, query="locks OR nothing", now=NOW))[0] == "null"


def test_decisions_are_read_only_as_far_as_the_budget_goes(vault: Vault) -> None:
    for number in range(60):
        put(vault, "decision", f"decision-{number:02d}", "Decision text. " * 20, age=number + 1)
    result = build_bootstrap(vault, P, max_bytes=2048, now=NOW)
    (omission,) = result.omitted
    assert omission.section == "decisions" and omission.count == 60 - len(result.decisions)
    assert len(omission.ids) == 20 and omission.ids_truncated


def test_every_omission_lists_its_ids_or_says_the_list_was_cut(vault: Vault) -> None:
    for number in range(35):
        put(vault, "trap", f"trap-{number:02d}", "Trap text. " * 10, severity="high", occurrences=number + 1)
    # Too long for the decisions' share of a small brief; the traps then spend the rest.
    put(vault, "decision", "the-only-decision", "Decision text. " * 200)
    result = build_bootstrap(vault, P, max_tokens=200, now=NOW)
    omitted = {(o.section, o.reason): o.to_json() for o in result.omitted}
    assert omitted[("decisions", "budget")] == {
        "section": "decisions",
        "reason": "budget",
        "count": 1,
        "ids": ["the-only-decision"],  # left out by the budget, still named
        "idsTruncated": False,
    }
    cap = omitted[("traps", "cap")]
    assert (cap["count"], len(cap["ids"]), cap["idsTruncated"]) == (25, 20, True)
    for entry in omitted.values():
        assert len(set(entry["ids"])) == len(entry["ids"]) == min(entry["count"], 20)
        assert entry["idsTruncated"] == (entry["count"] > len(entry["ids"]))


def test_pending_records_past_their_cap_are_named(vault_dir: Path) -> None:
    from memosite.provenance import Actor

    vault_dir.mkdir(parents=True, exist_ok=True)
    (vault_dir / "config.json").write_text('{"review": {"required": ["trap"]}}', encoding="utf-8")
    vault = Vault.open(vault_dir)
    try:
        vault.actor = Actor.mcp_client("agent", "1", "s")
        for number in range(8):
            put(vault, "trap", f"pending-{number}", "Pending text.\n", severity="high", age=number + 1)
        result = build_bootstrap(vault, P, max_bytes=100_000, now=NOW)
    finally:
        vault.close()
    (capped,) = [o for o in result.omitted if (o.section, o.reason) == ("pending", "cap")]
    assert capped.count == 3 and len(set(capped.ids)) == 3 and not capped.ids_truncated
    assert not set(capped.ids) & {item.id for item in result.pending}


def test_briefs_of_one_vault_object_count_what_is_live_at_their_own_moment(vault: Vault) -> None:
    # The section counts are remembered between briefs: an expiry in between must still show.
    lasting = MAX_TRAPS + 4
    for n in range(lasting):
        put(vault, "trap", f"lasting-{n}", severity="medium")
    put(vault, "trap", "short-lived", severity="medium", age=0.5, ttl="1d")
    put(vault, "decision", "short-decision", age=0.5, expires_at=(NOW + timedelta(hours=12)).isoformat())

    def cap_and_decisions(at: datetime) -> tuple[int, int]:
        result = build_bootstrap(vault, P, now=at, max_bytes=1_000_000)
        capped = sum(o.count for o in result.omitted if o.section == "traps" and o.reason == "cap")
        return capped, len(result.decisions)

    assert cap_and_decisions(NOW) == (lasting + 1 - MAX_TRAPS, 1)
    assert cap_and_decisions(NOW + timedelta(days=1)) == (lasting - MAX_TRAPS, 0)  # both expired
    assert cap_and_decisions(NOW) == (lasting + 1 - MAX_TRAPS, 1)  # asked of the past again


# --- room for what matters: shares, rare words, relevance, reasons -----------------------------


def _busy_project(vault: Vault) -> None:
    """Twenty severe traps about everyday things, ten decisions, and the one decision a scaling task
    needs — the oldest of them."""
    for number in range(20):
        body = f"The {['worker', 'queue', 'deploy', 'cache'][number % 4]} breaks again. " * 40
        put(vault, "trap", f"trap-{number:02d}", body, severity="high", occurrences=number + 1)
    for number in range(10):
        put(vault, "decision", f"decision-{number:02d}", "We keep the dashboards per team.\n" * 6, age=number + 1)
    put(
        vault,
        "decision",
        "node-autoscaler",
        "The cluster autoscaler adds EKS nodes when pods stay pending; we never scale node groups by hand.\n",
        title="Node autoscaler for the cluster",
        age=300,
    )


def test_the_decision_a_task_is_about_gets_room_when_traps_could_fill_the_brief(vault: Vault) -> None:
    _busy_project(vault)
    result = build_bootstrap(vault, P, query="scale the cluster when pods are pending", now=NOW)
    assert [item.id for item in result.decisions][:1] == ["node-autoscaler"]
    assert result.decisions[0].why.startswith("task words")
    assert result.bytes <= result.max_bytes and result.truncated  # traps were left out, and it says so


def test_decisions_are_chosen_by_relevance_to_the_task_not_recency_alone(vault: Vault) -> None:
    _busy_project(vault)
    without_task = build_bootstrap(vault, P, max_bytes=200_000, now=NOW)
    assert [item.id for item in without_task.decisions][-1] == "node-autoscaler"  # the oldest: last
    assert without_task.decisions[0].why.startswith("recent decision (updated ")


def test_a_share_a_section_does_not_use_goes_to_the_others(vault: Vault) -> None:
    for number in range(30):
        put(vault, "trap", f"trap-{number:02d}", "Trap text. " * 80, severity="high")
    result = build_bootstrap(vault, P, max_bytes=8192, now=NOW)
    # No decision, no current work: the traps fill far more than their own share of the room.
    assert result.bytes > 0.8 * 8192 and 3 < len(result.traps) < MAX_TRAPS
    assert not result.decisions and result.bytes <= 8192


def test_a_trap_enters_on_a_rare_word_of_the_task_never_on_one_common_word(vault: Vault) -> None:
    for number in range(12):
        put(vault, "trap", f"bug-{number:02d}", f"A bug in report {number}.\n", severity="low")
    put(vault, "trap", "sso-callback", "The SSO callback drops the state parameter: a login bug.\n", severity="low")
    put(vault, "trap", "disk", "Disk fills up at night.\n", severity="critical")
    result = build_bootstrap(vault, P, query="fix the login bug in the sso callback", now=NOW)
    assert trap_ids(result)[:2] == ["sso-callback", "disk"]
    assert result.traps[0].why.startswith("task words ") and "sso" in result.traps[0].why
    assert result.traps[1].why == "critical severity"
    assert all(not item.why.startswith("task words") for item in result.traps[2:])  # "bug" alone is common


@pytest.mark.parametrize(
    ("text", "query"),
    [
        ("Миграция блокирует таблицу заказов на проде.\n", "почему миграция блокирует заказы"),
        ("Η μετάβαση κλειδώνει τον πίνακα παραγγελιών.\n", "γιατί κλειδώνει ο πίνακας"),
        ("在生产数据上执行迁移会锁住订单表。\n", "迁移 锁表"),
        ("إعادة المحاولة تضاعف الدفع.\n", "لماذا تضاعف الدفع"),
    ],
)
def test_rare_words_pull_a_trap_in_in_every_script(vault: Vault, text: str, query: str) -> None:
    for number in range(6):
        put(vault, "trap", f"other-{number}", f"Something else {number}.\n", severity="critical")
    put(vault, "trap", "the-one", text, severity="low")
    result = build_bootstrap(vault, P, query=query, now=NOW)
    assert trap_ids(result)[0] == "the-one" and result.traps[0].why.startswith("task words ")


def test_each_entry_says_why_it_is_in_the_brief(vault: Vault, run_cli) -> None:  # type: ignore[no-untyped-def]
    put(vault, "spec", "checkout", "Checkout spec.\n")
    put(vault, "trap", "path-trap", severity="medium", pathPatterns=["src/payments/**"])
    put(vault, "trap", "severe", severity="critical")
    put(vault, "decision", "gateway", "We use one payment gateway.\n")
    result = build_bootstrap(vault, P, slug="checkout", path="src/payments/client.py", now=NOW)
    reasons = {item.id: item.why for item in [*result.context, *result.traps, *result.decisions]}
    assert reasons == {
        "checkout": "the spec of `checkout`",
        "path-trap": "covers src/payments/client.py",
        "severe": "critical severity",
        "gateway": f"recent decision (updated {result.decisions[0].updated[:10]})",
    }
    data = run_cli("bootstrap", "--json", "--slug", "checkout", "--path", "src/payments/client.py").json()
    assert data["sections"]["traps"][0]["why"] == "covers src/payments/client.py"
    text = run_cli("bootstrap", "--explain", "--path", "src/payments/client.py").stdout
    assert text.startswith(f"# Session brief: {P}")
    assert "Why each record is in the brief:" in text and "path-trap: covers src/payments/client.py" in text


def test_bootstrap_explain_takes_no_value(vault: Vault, run_cli) -> None:  # type: ignore[no-untyped-def]
    put(vault, "trap", "severe", severity="critical")
    done = run_cli("bootstrap", "--explain=yes")
    assert done.exit_code == 2 and "Traceback" not in done.stderr


@pytest.mark.slow
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    budget=st.integers(min_value=MIN_MAX_BYTES, max_value=6000),
    traps=st.integers(min_value=0, max_value=14),
    decisions=st.integers(min_value=0, max_value=8),
    size=st.integers(min_value=1, max_value=80),
)
def test_shares_keep_the_truncation_rules_honest(
    tmp_path_factory: pytest.TempPathFactory, budget: int, traps: int, decisions: int, size: int
) -> None:
    vault = Vault.open(tmp_path_factory.mktemp("brief") / "vault")
    try:
        for number in range(traps):
            put(vault, "trap", f"t{number}", "Trap words ünïcode Ωμέγα 锁表. " * size, severity="high")
        for number in range(decisions):
            put(vault, "decision", f"d{number}", "Decision words. " * size, age=number + 1)
        result = build_bootstrap(vault, P, query="trap words", max_bytes=budget, now=NOW)
        assert result.bytes <= budget
        shown = {"traps": len(result.traps), "decisions": len(result.decisions)}
        left = {section: 0 for section in shown}
        for omission in result.omitted:
            left[omission.section] += omission.count
        assert shown["traps"] + left["traps"] == traps and shown["decisions"] + left["decisions"] == decisions
        trimmed = any(item.trimmed for item in [*result.traps, *result.decisions])
        assert result.truncated == (bool(result.omitted) or trimmed)
    finally:
        vault.close()
