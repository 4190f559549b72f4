"""A search that stops counting, and vectors held between searches, answer as the plain way does.

Shortcuts of search (issue 23) must never change what a search returns: counting the matches only
up to a bound (``exact_total=False``, MCP search by default), reading the whole (small) scope of a
path instead of looking up each record found by meaning, and the vectors a process keeps between
searches, patched after each write rather than read again. Each is checked against the plain
way over many queries, scripts and filters: the same ids in the same order, and a total that is
either every match or, said so, a lower bound.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client, types

from memosite.errors import RecordNotFound
from memosite.index import fts
from memosite.mcp_server.server import build_server
from memosite.query import parse_query
from memosite.search import COUNT_LIMIT, HIDDEN_KINDS, MAX_LIMIT, search_records
from memosite.store import forget_record, upsert_record
from memosite.vault import Vault

P = "demo"
NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
NOW_ISO = "2026-11-30T12:00:00.000Z"

# Words of several scripts; each record holds a few, so queries match many records, some, or none.
WORDS = [
    "payment", "retry", "cookie", "checkout", "invoice", "deploy", "timeout", "cache",
    "café", "naïve", "façade", "résumé",
    "платёж", "повтор", "кэш", "сессия",
    "πληρωμή", "επανάληψη", "λογαριασμός",
    "支付", "重试", "缓存", "会话",
    "الدفع", "إعادة", "ذاكرة",
    "🚀", "🔥",
]  # fmt: skip
PATHS = ["src/payments/client.py", "src/web/checkout.ts", "deploy/helm/values.yaml", "docs/**"]
KINDS = ["trap", "decision", "log", "spec", "scratch"]
TAGS = ["payments", "web", "infra"]


def open_vault(root: Path, *, semantic: bool) -> Vault:
    root.mkdir(parents=True, exist_ok=True)
    (root / "config.local.json").write_text(json.dumps({"search": {"semantic": semantic}}), encoding="utf-8")
    return Vault.open(root)


def seed(vault: Vault, count: int = 48) -> None:
    for n in range(count):
        words = [WORDS[(n * step) % len(WORDS)] for step in (1, 3, 7, 11)]
        kind = KINDS[n % len(KINDS)]
        frontmatter: dict[str, Any] = {"title": f"{words[0]} {words[1]} {n}", "tags": [TAGS[n % len(TAGS)]]}
        upsert_record(
            vault,
            P,
            kind=kind,
            slug=f"r{n:02d}",
            body=" ".join(words * (1 + n % 4)) + "\n",
            frontmatter=frontmatter,
            path=PATHS[n % len(PATHS)] if kind == "trap" else None,
            allow_duplicate=True,
            now=NOW,
        )


@pytest.fixture(scope="module", params=[False, True], ids=["words", "hybrid"])
def vault(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Vault]:
    opened = open_vault(tmp_path_factory.mktemp("counting") / "vault", semantic=request.param)
    seed(opened)
    yield opened
    opened.close()


queries = st.one_of(
    st.lists(st.sampled_from(WORDS), min_size=1, max_size=4).map(" ".join),
    st.text(max_size=20),
    st.sampled_from(['"payment retry"', "payment OR 支付", "title:cookie", "cach", "NOT cookie", "kéš"]),
)
filters = st.fixed_dictionaries(
    {},
    optional={
        "kinds": st.lists(st.sampled_from(KINDS), min_size=1, max_size=2, unique=True),
        "tags": st.lists(st.sampled_from(TAGS), max_size=1),
        "path": st.sampled_from(["src/payments/client.py", "src/web", "docs/guide/intro.md"]),
        "sort": st.sampled_from(["relevance", "occurrences", "updated", "hits"]),
        "include_expired": st.booleans(),
    },
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(query=queries, limit=st.integers(1, 8), options=filters)
def test_a_search_that_stops_counting_returns_the_same_hits_in_the_same_order(
    vault: Vault, query: str, limit: int, options: dict[str, Any]
) -> None:
    counted = search_records(vault, P, query, limit=limit, now=NOW, **options)
    bounded = search_records(vault, P, query, limit=limit, now=NOW, exact_total=False, **options)
    assert [hit.id for hit in bounded.results] == [hit.id for hit in counted.results]
    assert [hit.snippet for hit in bounded.results] == [hit.snippet for hit in counted.results]
    assert (bounded.match, bounded.terms, bounded.ranking) == (counted.match, counted.terms, counted.ranking)
    # Fewer matches than the bound: the total is every match, and says so.
    assert (bounded.total, bounded.holding_all, bounded.total_exact) == (counted.total, counted.holding_all, True)
    assert counted.total_exact and counted.to_json()["totalExact"] is True


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    words=st.lists(st.sampled_from(WORDS), min_size=1, max_size=3),
    require_all=st.booleans(),
    limit=st.integers(1, 6),
    bound=st.integers(1, 40),
    kinds=st.lists(st.sampled_from(KINDS[:4]), max_size=2, unique=True),
)
def test_counting_stops_at_its_bound_and_then_says_at_least(
    vault: Vault, words: list[str], require_all: bool, limit: int, bound: int, kinds: list[str]
) -> None:
    parsed = parse_query(" ".join(words))
    terms = parsed.all_terms() if require_all else parsed.any_terms()
    scope = fts.SearchFilters(P, NOW_ISO, kinds=kinds, hidden_kinds=HIDDEN_KINDS)
    every = fts.find_ranked(vault.index(), terms, scope, sort="relevance", limit=limit, require_all=require_all)
    some = fts.find_ranked(
        vault.index(), terms, scope, sort="relevance", limit=limit, require_all=require_all, count_limit=bound
    )
    assert some.rows == every.rows and every.exact
    stop = max(bound, limit + 1)  # always past the page: "more than shown" stays known
    if every.total < stop:
        assert (some.total, some.exact) == (every.total, True)
    else:
        assert (some.total, some.exact) == (stop, False)
        assert some.total <= every.total


def test_the_bound_is_at_least_the_largest_page_so_a_total_below_it_is_exact() -> None:
    assert COUNT_LIMIT >= MAX_LIMIT


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    path=st.sampled_from(["src/payments/client.py", "src/web", "docs/guide/intro.md", "deploy", "nowhere/x.py"]),
    picks=st.lists(st.integers(0, 10_000), max_size=60),
    kinds=st.lists(st.sampled_from(KINDS), max_size=2, unique=True),
)
def test_the_scope_of_a_path_read_whole_keeps_the_same_records_as_looking_each_one_up(
    vault: Vault, path: str, picks: list[int], kinds: list[str]
) -> None:
    index = vault.index()
    every = [int(row[0]) for row in index.conn.execute("SELECT rowid FROM search_facts ORDER BY rowid")]
    rowids = [every[n % len(every)] for n in picks]
    scope = fts.SearchFilters(P, NOW_ISO, kinds=kinds, path=path, hidden_kinds=HIDDEN_KINDS)
    looked_up = fts.weights_in_scope(index, fts.search_scope(index, scope), rowids)
    assert fts.scope_weights(index, scope, rowids) == looked_up


# --- held vectors ------------------------------------------------------------------------------

writes = st.lists(
    st.tuples(
        st.sampled_from(["create", "change", "archive", "purge"]),
        st.integers(0, 47),
        st.lists(st.sampled_from(WORDS), min_size=1, max_size=4),
    ),
    min_size=1,
    max_size=4,
)


@pytest.fixture(scope="module")
def hybrid_vault(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Vault]:
    opened = open_vault(tmp_path_factory.mktemp("held") / "vault", semantic=True)
    seed(opened)
    yield opened
    opened.close()


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=writes, query=st.lists(st.sampled_from(WORDS[:12]), min_size=1, max_size=3).map(" ".join))
def test_vectors_held_across_writes_rank_as_vectors_read_afresh(
    hybrid_vault: Vault, steps: list[tuple[str, int, list[str]]], query: str
) -> None:
    search_records(hybrid_vault, P, query, now=NOW)  # the process now holds the vectors
    for action, n, words in steps:
        kind, slug, body = KINDS[n % len(KINDS)], f"r{n:02d}", " ".join(words) + "\n"
        if action == "create":
            upsert_record(hybrid_vault, P, kind="trap", body=body, allow_duplicate=True, now=NOW)
        elif action == "change":  # the body changes (its vector too); a purged record comes back
            upsert_record(hybrid_vault, P, kind=kind, slug=slug, body=body, now=NOW)
        else:
            with contextlib.suppress(RecordNotFound):  # purged by an earlier step
                forget_record(hybrid_vault, P, kind=kind, slug=slug, purge=action == "purge", now=NOW)
        held = search_records(hybrid_vault, P, query, limit=10, explain=True, now=NOW)
        fresh_vault = Vault.open(hybrid_vault.root)  # its own index connection: reads every vector
        try:
            fresh = search_records(fresh_vault, P, query, limit=10, explain=True, now=NOW)
        finally:
            fresh_vault.close()
        assert [(hit.id, hit.explain) for hit in held.results] == [(hit.id, hit.explain) for hit in fresh.results]
        assert held.ranking == fresh.ranking


# --- over MCP ----------------------------------------------------------------------------------


async def _search(vault_dir: Path, **arguments: Any) -> types.CallToolResult:
    vault = Vault.open(vault_dir)
    server = build_server(vault, P, env={"HOME": str(Path.home())})
    try:
        async with Client(server, mode="legacy", client_info=types.Implementation(name="agent", version="1")) as c:
            return await c.call_tool("search", arguments)
    finally:
        vault.close()


def test_mcp_search_says_whether_its_total_counts_every_match(vault: Vault) -> None:
    plain = search_records(vault, P, "payment", limit=2, now=NOW)
    result = anyio.run(lambda: _search(vault.root, query="payment", limit=2))
    data = result.structured_content
    assert not result.is_error and data is not None
    assert (data["total"], data["totalExact"]) == (plain.total, True)
    assert [hit["id"] for hit in data["results"]] == [hit.id for hit in plain.results]
    asked = anyio.run(lambda: _search(vault.root, query="payment", limit=2, exactTotal=True))
    assert asked.structured_content is not None and asked.structured_content["total"] == plain.total


@pytest.mark.parametrize("wrong", ["yes", 1, None, ["true"]])
def test_mcp_search_refuses_an_exact_total_that_is_not_a_boolean(vault: Vault, wrong: object) -> None:
    result = anyio.run(lambda: _search(vault.root, query="payment", exactTotal=wrong))
    assert result.is_error
    text = result.content[0].text  # type: ignore[union-attr]
    assert text.startswith("INVALID_ARGUMENTS") and "exactTotal" in text


def test_the_newest_record_rewritten_is_ranked_by_its_new_vector_in_a_process_holding_the_old(
    tmp_path: Path,
) -> None:
    # The attack on the held vectors: the last record written is written again with other text. Its
    # old vector was the newest; the new one must not come back under the same write counter.
    vault = open_vault(tmp_path / "vault", semantic=True)
    try:
        upsert_record(vault, P, kind="decision", slug="export", body="The nightly export takes a lock.\n", now=NOW)
        upsert_record(vault, P, kind="trap", slug="latest", body="Invoices are numbered per year.\n", now=NOW)
        question = "customers lose their session when paying"  # no word in common with the new text
        before = search_records(vault, P, question, explain=True, now=NOW)
        upsert_record(
            vault,
            P,
            kind="trap",
            slug="latest",
            body="Users are signed out at checkout.\n",
            frontmatter={"title": "Login cookie dropped behind CDN"},
            now=NOW,
        )
        held = search_records(vault, P, question, explain=True, now=NOW)
        fresh_vault = Vault.open(vault.root)
        try:
            fresh = search_records(fresh_vault, P, question, explain=True, now=NOW)
        finally:
            fresh_vault.close()
        assert [(hit.id, hit.explain) for hit in held.results] == [(hit.id, hit.explain) for hit in fresh.results]
        assert "latest" in [hit.id for hit in held.results] and "latest" not in [hit.id for hit in before.results]
    finally:
        vault.close()
