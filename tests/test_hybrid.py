"""Hybrid search: a ranking by meaning (memosite.embedding, vectors in the index) fused with bm25.

The model is the real one the ``semantic`` extra installs (the test extra does too); nothing here
stands in for it. Hiding the package (``sys.modules["wordllama"] = None``) is how a machine without
the extra looks to memosite.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sqlite3
import stat
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from fresh_python import run_fresh
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memosite import embedding, hybrid
from memosite.index import fts
from memosite.refresh import reindex
from memosite.salience import record_feedback
from memosite.search import find_matches, search_records
from memosite.store import upsert_record
from memosite.vault import Vault

P = "demo"
NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
SYNONYM_QUERY = "customers lose their session when paying"  # no word in common with the record below


def open_vault(root: Path, *, semantic: bool = True) -> Vault:
    root.mkdir(parents=True, exist_ok=True)
    (root / "config.local.json").write_text(json.dumps({"search": {"semantic": semantic}}), encoding="utf-8")
    return Vault.open(root)


def put(vault: Vault, kind: str, slug: str, title: str, body: str) -> None:
    upsert_record(vault, P, kind=kind, slug=slug, body=body, frontmatter={"title": title})


def seed(vault: Vault) -> None:
    put(vault, "trap", "cdn-cookie", "Login cookie dropped behind CDN", "Users are signed out at checkout.\n")
    put(vault, "decision", "invoice-numbers", "Invoices are numbered per year", "Each invoice gets the next number.\n")
    put(vault, "trap", "retry-key", "Payment retries need an idempotency key", "Without it a retry charges twice.\n")


@pytest.fixture
def shop(tmp_path: Path) -> Iterator[Vault]:
    vault = open_vault(tmp_path / "vault")
    seed(vault)
    yield vault
    vault.close()


def index_file(vault: Vault) -> Path:
    return vault.root / ".memosite" / "index.sqlite"


def stored_vectors(vault: Vault) -> dict[str, bytes]:
    """The vectors the index holds, by record path (read with sqlite3 directly, as a person would)."""
    with sqlite3.connect(index_file(vault)) as conn:
        return {
            path: bytes(blob)
            for path, blob in conn.execute("SELECT r.path, v.vec FROM vectors AS v JOIN records AS r USING (rowid)")
        }


# --- the model ---------------------------------------------------------------------------------

_OFFLINE_LOAD = """
import socket, sys
def refuse(*args, **kwargs):
    raise OSError("no network in this test")
socket.socket.connect = refuse
socket.create_connection = refuse
socket.getaddrinfo = refuse
from memosite.embedding import load_embedder
model = load_embedder()
assert model is not None, "the model did not load"
vector = model.embed_one("the model loads with no network")
print("LOADED", model.name, vector.shape[0], "wordllama" in sys.modules)
"""


def _load_offline(home: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HOME": str(home), "XDG_CACHE_HOME": str(home / "cache")}
    env.pop("MEMOSITE_VAULT", None)
    return subprocess.run(
        [sys.executable, "-c", _OFFLINE_LOAD],
        capture_output=True,
        text=True,
        encoding="utf-8",
        env=env,
        timeout=120,
        check=False,
    )


def test_the_model_loads_with_no_network_and_keeps_only_its_vocabulary_in_the_user_cache(tmp_path: Path) -> None:
    for _ in range(2):  # the first load writes the compact vocabulary, the second reads it
        done = _load_offline(tmp_path)
        assert done.returncode == 0, done.stderr
        # The package's own module (which configures logging and may download) is never imported.
        assert done.stdout.split() == ["LOADED", embedding.MODEL_NAME, str(embedding.DIMENSIONS), "False"]
    model_dir = tmp_path / "cache" / "memosite" / "model"
    assert [path.name.split("-")[0] for path in model_dir.iterdir()] == ["pieces"]
    assert stat.S_IMODE(model_dir.stat().st_mode) == 0o700
    assert not (tmp_path / ".cache").exists()


def test_a_query_vector_is_unit_length() -> None:
    model = embedding.load_embedder()
    assert model is not None
    vector = model.embed_one("payment retries")
    assert abs(float((vector**2).sum()) - 1.0) < 1e-4


@settings(max_examples=60, deadline=None)
@given(text=st.text(max_size=200))
def test_every_text_embeds_to_a_unit_or_zero_vector(text: str) -> None:
    model = embedding.load_embedder()
    assert model is not None
    norm = float((model.embed_one(text) ** 2).sum())
    assert abs(norm - 1.0) < 1e-3 or norm == 0.0


@pytest.mark.parametrize(
    ("text", "read"),
    [
        ("payment retries double charge", True),
        ("réessayer le paiement après un délai", True),
        ("Повторная оплата списывает деньги дважды", False),
        ("Η πληρωμή χρεώνεται δύο φορές", False),
        ("支付重试会重复扣款", False),
        ("إعادة محاولة الدفع", False),
        ("🚀🚀", False),
        ("retry Повторная оплата списывает", False),
    ],
)
def test_the_model_reads_latin_script_only_and_other_scripts_rank_by_words(text: str, read: bool) -> None:
    assert embedding.reads(text) is read


# --- vectors in the index ----------------------------------------------------------------------


def test_every_record_written_gets_its_vector_in_the_unit_of_work(shop: Vault) -> None:
    vectors = stored_vectors(shop)
    assert len(vectors) == 3
    assert {len(blob) for blob in vectors.values()} == {embedding.DIMENSIONS * 2}


def test_a_changed_record_gets_a_new_vector_and_an_untouched_one_keeps_its_own(shop: Vault) -> None:
    before = stored_vectors(shop)
    put(shop, "trap", "cdn-cookie", "Login cookie dropped behind CDN", "The CDN strips SameSite from Set-Cookie.\n")
    after = stored_vectors(shop)
    changed = "projects/demo/traps/cdn-cookie.md"
    assert after[changed] != before[changed]
    assert {k: v for k, v in after.items() if k != changed} == {k: v for k, v in before.items() if k != changed}


def _stored_seqs(vault: Vault) -> dict[str, tuple[bytes, int]]:
    with sqlite3.connect(index_file(vault)) as conn:
        return {
            path: (bytes(blob), int(seq))
            for path, blob, seq in conn.execute(
                "SELECT r.path, v.vec, v.seq FROM vectors AS v JOIN records AS r USING (rowid)"
            )
        }


def test_a_rewrite_that_leaves_the_text_alone_keeps_the_vector_it_has(shop: Vault) -> None:
    from memosite.salience import record_hits

    before = _stored_seqs(shop)
    record_hits(shop, P, ["cdn-cookie", "invoice-numbers"])  # usage: hits and lastHit only
    record_feedback(shop, P, "retry-key", helpful=False)
    upsert_record(
        shop,
        P,
        kind="trap",
        slug="cdn-cookie",
        body="Users are signed out at checkout.\n",
        frontmatter={"severity": "high"},
    )
    assert _stored_seqs(shop) == before  # no vector computed again, none read again by a process holding them
    put(shop, "trap", "cdn-cookie", "Login cookie dropped behind CDN — Кука теряется", "Users are signed out.\n")
    after = _stored_seqs(shop)
    changed = "projects/demo/traps/cdn-cookie.md"
    assert after[changed][1] > before[changed][1] and after[changed][0] != before[changed][0]


def test_reindex_rebuilds_the_vectors_of_a_new_index(shop: Vault) -> None:
    before = stored_vectors(shop)
    shop.close()
    index_file(shop).unlink()
    vault = open_vault(shop.root)
    try:
        reindex(vault)
        assert stored_vectors(vault) == before
    finally:
        vault.close()


def test_reindex_replaces_a_damaged_vector(shop: Vault) -> None:
    before = stored_vectors(shop)
    with sqlite3.connect(index_file(shop)) as conn:
        conn.execute("UPDATE vectors SET vec = zeroblob(512)")
    reindex(shop)
    assert stored_vectors(shop) == before


def test_an_index_without_vectors_ranks_by_words_until_reindex_computes_them(tmp_path: Path) -> None:
    vault = open_vault(tmp_path / "vault", semantic=False)
    seed(vault)
    assert stored_vectors(vault) == {}
    vault.close()
    vault = open_vault(tmp_path / "vault", semantic=True)
    try:
        result = search_records(vault, P, SYNONYM_QUERY, now=NOW)
        assert (result.ranking, result.results) == ("words", [])
        assert stored_vectors(vault) == {}  # a read computed nothing
        reindex(vault, [P])
        assert len(stored_vectors(vault)) == 3
        assert [hit.id for hit in search_records(vault, P, SYNONYM_QUERY, now=NOW).results] == ["cdn-cookie"]
    finally:
        vault.close()


def test_records_written_with_hybrid_off_get_their_vectors_at_the_next_hybrid_search(
    shop: Vault, tmp_path: Path
) -> None:
    shop.close()
    vault = open_vault(shop.root, semantic=False)
    try:
        put(vault, "decision", "ledger", "Ledger entries are immutable", "Corrections are new entries.")
    finally:
        vault.close()
    vault = open_vault(shop.root, semantic=True)
    try:
        assert len(stored_vectors(vault)) == 3
        assert search_records(vault, P, "never edit bookkeeping lines", now=NOW).ranking == "hybrid"
        assert len(stored_vectors(vault)) == 4
    finally:
        vault.close()


# --- ranking -----------------------------------------------------------------------------------


def test_a_synonym_pair_is_found_only_through_the_ranking_by_meaning(shop: Vault, tmp_path: Path) -> None:
    found = search_records(shop, P, SYNONYM_QUERY, explain=True, now=NOW)
    assert found.ranking == "hybrid"
    assert [hit.id for hit in found.results] == ["cdn-cookie"]
    explain = found.results[0].explain
    assert explain is not None and explain["bm25Rank"] is None and explain["vectorRank"] == 1
    assert explain["similarity"] >= hybrid.MIN_SIMILARITY and explain["fusedScore"] > 0
    assert found.match is None  # no record holds the query's words
    words_only = open_vault(tmp_path / "words", semantic=False)
    try:
        seed(words_only)
        assert search_records(words_only, P, SYNONYM_QUERY, now=NOW).results == []
    finally:
        words_only.close()


def test_a_query_about_nothing_in_the_vault_still_finds_nothing(shop: Vault) -> None:
    assert search_records(shop, P, "quantum chromodynamics lattice gauge", now=NOW).results == []


def _lexical(vault: Vault, query: str) -> list[str]:
    filters = fts.SearchFilters(P, "2026-11-30T12:00:00.000Z", hidden_kinds=("scratch",))
    return [match.id for match in find_matches(vault.index(), query, filters, sort="relevance", limit=20).matches]


@pytest.mark.parametrize(
    "query",
    ["payment retries", "why are users signed out", "invoice number", "checkout", "retry* OR invoice", "nothing"],
)
def test_hybrid_off_gives_exactly_the_words_ranking(tmp_path: Path, query: str) -> None:
    vault = open_vault(tmp_path / "vault", semantic=False)
    try:
        seed(vault)
        found = search_records(vault, P, query, limit=20, now=NOW)
        assert found.ranking == "words"
        assert [hit.id for hit in found.results] == _lexical(vault, query)
    finally:
        vault.close()


def test_hybrid_off_when_the_extra_is_not_installed(shop: Vault, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "wordllama", None)  # what find_spec sees of a missing package
    embedding.load_embedder.cache_clear()
    try:
        assert embedding.load_embedder() is None
        found = search_records(shop, P, "payment retries", now=NOW)
        assert found.ranking == "words" and [hit.id for hit in found.results] == _lexical(shop, "payment retries")
    finally:
        monkeypatch.undo()
        embedding.load_embedder.cache_clear()


@pytest.mark.parametrize("query", ['"signed out"', "title:login OR title:invoices", "Повторная оплата", "支付 重试"])
def test_exact_word_queries_and_other_scripts_are_ranked_by_words_alone(shop: Vault, query: str) -> None:
    found = search_records(shop, P, query, limit=20, explain=True, now=NOW)
    assert [hit.id for hit in found.results] == _lexical(shop, query)
    assert all(hit.explain is not None and hit.explain["vectorRank"] is None for hit in found.results)


def test_other_sorts_than_relevance_are_not_fused(shop: Vault) -> None:
    found = search_records(shop, P, SYNONYM_QUERY, sort="updated", now=NOW)
    assert found.ranking == "words" and found.results == []


def test_filters_hold_for_records_found_by_meaning(shop: Vault) -> None:
    assert search_records(shop, P, SYNONYM_QUERY, kinds=["decision"], now=NOW).results == []
    put(shop, "scratch", "note", "Login cookie dropped", "Users signed out.\n")
    assert "note" not in [hit.id for hit in search_records(shop, P, SYNONYM_QUERY, now=NOW).results]


def test_a_record_flagged_stale_sinks_below_the_others_in_the_fused_order(shop: Vault) -> None:
    put(shop, "trap", "cdn-cookie-2", "Checkout signs users out behind the CDN", "Users are signed out at checkout.\n")
    for _ in range(2):
        record_feedback(shop, P, "cdn-cookie", helpful=False)
    found = [hit.id for hit in search_records(shop, P, "users signed out at checkout", now=NOW).results]
    assert found.index("cdn-cookie") == len(found) - 1


# --- fusion, for every input -------------------------------------------------------------------

rowid_lists = st.lists(st.integers(min_value=1, max_value=60), unique=True, max_size=30)


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(lexical=rowid_lists, meaning=rowid_lists, sims=st.lists(st.floats(-1, 1), min_size=30, max_size=30))
def test_fusion_keeps_every_word_match_once_and_adds_only_alike_records(
    lexical: list[int], meaning: list[int], sims: list[float]
) -> None:
    ranking = hybrid.MeaningRanking(meaning, sims[: len(meaning)])
    fused = hybrid.fuse([(rowid, -1.0) for rowid in lexical], ranking)
    rowids = [ranked.rowid for ranked in fused]
    assert len(rowids) == len(set(rowids))
    assert set(lexical) <= set(rowids)
    alike = {rowid for rowid, sim in zip(meaning, sims, strict=False) if sim >= hybrid.MIN_SIMILARITY}
    assert set(rowids) - set(lexical) <= alike
    scores = [ranked.score for ranked in fused]
    assert scores == sorted(scores, reverse=True)


@given(lexical=rowid_lists)
def test_fusion_without_a_ranking_by_meaning_is_the_words_order(lexical: list[int]) -> None:
    fused = hybrid.fuse([(rowid, -1.0) for rowid in lexical], hybrid.MeaningRanking([], []))
    assert [ranked.rowid for ranked in fused] == lexical


# --- explain, on both front ends ---------------------------------------------------------------


def test_search_explain_prints_each_rank_and_the_fused_score(shop: Vault, run_cli) -> None:  # type: ignore[no-untyped-def]
    shop.close()
    text = run_cli("--vault", str(shop.root), "--project", P, "search", "--explain", *SYNONYM_QUERY.split()).stdout
    assert "(ranked by words and meaning)" in text
    assert "words: no match · meaning #1 (similarity 0." in text and "fused 0.0" in text
    data = run_cli(
        "--vault", str(shop.root), "--project", P, "search", "--explain", "--json", "payment", "retries"
    ).json()
    assert data["ranking"] == "hybrid"
    first = data["results"][0]
    assert first["id"] == "retry-key" and set(first["explain"]) == {
        "bm25Rank",
        "vectorRank",
        "similarity",
        "fusedScore",
    }
    assert first["explain"]["bm25Rank"] == 1


def test_search_without_explain_carries_no_explain_key(shop: Vault, run_cli) -> None:  # type: ignore[no-untyped-def]
    shop.close()
    data = run_cli("--vault", str(shop.root), "--project", P, "search", "--json", "payment").json()
    assert all("explain" not in hit for hit in data["results"])


def test_explain_takes_no_value(shop: Vault, run_cli) -> None:  # type: ignore[no-untyped-def]
    shop.close()
    done = run_cli("--vault", str(shop.root), "--project", P, "search", "--explain=yes", "payment")
    assert done.exit_code == 2 and "--explain" in done.stderr and "Traceback" not in done.stderr


def test_mcp_search_explain_gives_each_hit_its_ranks(shop: Vault) -> None:
    import anyio
    from mcp import Client, types

    from memosite.mcp_server.server import build_server

    async def call() -> tuple[dict[str, object], bool]:
        server = build_server(shop, P, read_only=True, env={"HOME": str(Path.home())})
        info = types.Implementation(name="test-agent", version="1")
        async with Client(server, mode="legacy", client_info=info) as client:
            found = await client.call_tool("search", {"query": SYNONYM_QUERY, "explain": True})
            wrong = await client.call_tool("search", {"query": "x", "explain": "very"})
        assert not found.is_error and found.structured_content is not None
        return found.structured_content, wrong.is_error

    data, refused = anyio.run(call)
    assert data["ranking"] == "hybrid"
    results = data["results"]
    assert isinstance(results, list) and results[0]["id"] == "cdn-cookie"
    assert results[0]["explain"]["bm25Rank"] is None and results[0]["explain"]["vectorRank"] == 1
    assert refused  # explain takes a boolean, nothing else


def _held_equals_stored(vault: Vault) -> None:
    import numpy as np

    from memosite.index import vectors

    model = embedding.load_embedder()
    assert model is not None
    rowids, rows, position = vectors.matrix(vault.index(), model.name, model.from_blobs)
    with sqlite3.connect(index_file(vault)) as conn:
        stored = {int(r): bytes(b) for r, b in conn.execute("SELECT rowid, vec FROM vectors")}
    assert sorted(rowids) == sorted(stored) and len(rows) == len(rowids)
    for rowid, blob in stored.items():
        assert np.array_equal(rows[position[rowid]], model.from_blobs([blob])[0])


def test_the_vectors_a_process_holds_follow_every_write(shop: Vault) -> None:
    from memosite.store import forget_record

    search_records(shop, P, SYNONYM_QUERY, now=NOW)  # the process now holds the vectors
    _held_equals_stored(shop)
    put(shop, "trap", "new-one", "A new trap", "About something new.\n")  # added
    _held_equals_stored(shop)
    put(shop, "trap", "retry-key", "Payment retries need an idempotency key", "Changed text.\n")  # changed
    _held_equals_stored(shop)
    forget_record(shop, P, record_id="invoice-numbers", purge=True)  # removed
    _held_equals_stored(shop)
    reindex(shop)  # every vector written again
    _held_equals_stored(shop)
    assert [hit.id for hit in search_records(shop, P, SYNONYM_QUERY, now=NOW).results] == ["cdn-cookie"]


def _kinds_held_equal_stored(vault: Vault, kinds: tuple[str, ...]) -> None:
    import numpy as np

    from memosite.index import vectors

    model = embedding.load_embedder()
    assert model is not None
    rowids, rows, position = vectors.matrix_of_kinds(vault.index(), model.name, model.from_blobs, kinds)
    marks = ", ".join("?" for _ in kinds)
    with sqlite3.connect(index_file(vault)) as conn:
        stored = {
            int(r): bytes(b)
            for r, b in conn.execute(
                "SELECT v.rowid, v.vec FROM vectors AS v JOIN records AS r ON r.rowid = v.rowid"
                f" WHERE r.kind IN ({marks})",
                kinds,
            )
        }
    assert sorted(rowids) == sorted(stored) and len(rows) == len(rowids)
    for rowid, blob in stored.items():
        assert np.array_equal(rows[position[rowid]], model.from_blobs([blob])[0])


def test_the_vectors_of_one_kind_a_process_holds_follow_every_write(shop: Vault) -> None:
    from memosite.store import forget_record

    put(shop, "log", "deploy-log", "Deployed the checkout", "Rolled out at noon.\n")
    for kinds in (("trap",), ("decision",), ("decision", "trap")):
        _kinds_held_equal_stored(shop, kinds)  # taken now, kept from here on
    put(shop, "trap", "new-one", "Ein neuer Fehler: Ωμέγα", "Über etwas Neues — новое.\n")  # added
    put(shop, "trap", "retry-key", "Payment retries need an idempotency key", "Changed text.\n")  # changed
    for kinds in (("trap",), ("decision",)):
        _kinds_held_equal_stored(shop, kinds)
    forget_record(shop, P, record_id="invoice-numbers", purge=True)  # removed
    _kinds_held_equal_stored(shop, ("decision",))
    reindex(shop)  # every vector written again
    for kinds in (("trap",), ("decision",), ("log",)):
        _kinds_held_equal_stored(shop, kinds)


def _kept_of_kinds(vault: Vault) -> dict[tuple[str, ...], Any]:
    from memosite.index import vectors

    model = embedding.load_embedder()
    assert model is not None
    return dict(vectors._HELD[vault.index()][model.name].of_kinds)


def test_a_write_brings_the_vectors_of_one_kind_in_step_without_taking_them_again(shop: Vault) -> None:
    for kinds in (("trap",), ("decision",)):
        _kinds_held_equal_stored(shop, kinds)
    taken = _kept_of_kinds(shop)
    put(shop, "trap", "new-trap", "Новая ловушка: 支付 重试 🚀", "Ein Fehler — ένα λάθος, خطأ.\n")  # added
    put(shop, "trap", "retry-key", "Payment retries need an idempotency key", "Changed again.\n")  # changed
    put(shop, "decision", "invoice-numbers", "Invoices are numbered per year", "Numbered per calendar year.\n")
    for kinds in (("trap",), ("decision",)):
        _kinds_held_equal_stored(shop, kinds)
    kept = _kept_of_kinds(shop)
    assert all(kept[key] is taken[key] for key in taken)  # brought in step, not taken whole again


def test_a_brief_compares_the_task_with_the_traps_only_when_a_trap_holds_its_words(shop: Vault) -> None:
    from memosite.bootstrap import build_bootstrap

    # No trap holds a word of this task: a trap that merely reads like it takes no severe one's place,
    # so the project's trap vectors are not even read; the decisions are still ranked by meaning.
    unrelated = build_bootstrap(shop, P, query=SYNONYM_QUERY, now=NOW)
    assert set(_kept_of_kinds(shop)) == {("decision",)}
    assert [item.id for item in unrelated.traps] == [item.id for item in build_bootstrap(shop, P, now=NOW).traps]
    worded = build_bootstrap(shop, P, query="why does a retry charge twice without an idempotency key", now=NOW)
    assert worded.traps[0].id == "retry-key" and "like the task" in worded.traps[0].why
    assert ("trap",) in _kept_of_kinds(shop)


_WRITES = st.lists(
    st.tuples(
        st.sampled_from(["add", "change", "hit", "forget"]),
        st.sampled_from(["trap", "decision", "log"]),
        st.integers(min_value=0, max_value=3),
        st.sampled_from(["Retry storms", "Кэш устарел", "Ωμέγα λάθος", "支付重试", "إعادة الدفع", "Déjà vu 🚀"]),
    ),
    min_size=1,
    max_size=8,
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(writes=_WRITES)
def test_the_vectors_of_each_kind_a_process_holds_are_the_stored_ones_after_any_writes(
    shop: Vault, writes: list[tuple[str, str, int, str]]
) -> None:
    from memosite.errors import RecordNotFound
    from memosite.salience import record_hits
    from memosite.store import forget_record

    for kinds in (("trap",), ("decision",), ("decision", "trap")):
        _kinds_held_equal_stored(shop, kinds)
    for action, kind, n, title in writes:
        slug = f"{kind}-{n}"
        if action == "add":
            put(shop, kind, slug, title, f"{title}: written by hand.\n")
        elif action == "change":
            put(shop, kind, slug, f"{title} (changed)", f"Changed: {title}.\n")
        elif action == "hit":
            record_hits(shop, P, [slug])
        else:
            with contextlib.suppress(RecordNotFound):  # forgetting what was never written changes nothing
                forget_record(shop, P, record_id=slug, purge=True)
        for kinds in (("trap",), ("decision",), ("decision", "trap")):
            _kinds_held_equal_stored(shop, kinds)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    query=st.sampled_from(
        [SYNONYM_QUERY, "payment retries charge twice", "invoice numbers per year", "session cookie", "deploy noon"]
    ),
    kind=st.sampled_from(["trap", "decision", "log"]),
)
def test_a_ranking_by_meaning_over_one_kinds_vectors_is_the_ranking_over_all_kept_to_that_kind(
    shop: Vault, query: str, kind: str
) -> None:
    model = embedding.load_embedder()
    assert model is not None
    index = shop.index()
    if not index.conn.execute("SELECT 1 FROM records WHERE slug = 'deploy-log'").fetchone():
        put(shop, "log", "deploy-log", "Deployed the checkout", "Rolled out at noon.\n")
        put(shop, "decision", "cookie-scope", "Cookies are scoped to the shop domain", "Not to the CDN.\n")
    filters = fts.SearchFilters(P, "2026-11-30T12:00:00.000Z", kinds=(kind,))

    def scope(rowids: object) -> dict[int, float]:
        return fts.scope_weights(index, filters, rowids)  # type: ignore[arg-type]

    whole = hybrid.rank_within(index, model, query, scope, limit=5)
    of_kind = hybrid.rank_within(index, model, query, scope, limit=5, kinds=(kind,))
    assert (of_kind.rowids, of_kind.similarities) == (whole.rowids, whole.similarities)


# --- loading cheaply, and never when it cannot help ---------------------------------------------

_SCRIPTS = st.sampled_from(
    [
        "payment retries",
        "café déjà vu",
        "Straße",
        "счёт оплаты",
        "Ελληνικά",
        "支付重试",
        "إعادة الدفع",
        "🚀✨",
        "x\u2581y",
    ]
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(parts=st.lists(st.one_of(_SCRIPTS, st.text(max_size=30)), max_size=6))
def test_the_vocabulary_split_gives_the_ids_the_models_own_tokenizer_gives(parts: list[str]) -> None:
    tokenizers = pytest.importorskip("tokenizers")
    files = embedding.model_files()
    assert files is not None
    model = embedding.load_embedder()
    assert model is not None
    reference = _reference_tokenizer(tokenizers, files[0])
    text = embedding.normalise(" ".join(parts))
    expected = reference.encode(text, add_special_tokens=False).ids if text else []
    assert model.pieces.encode(text) == expected


_REFERENCE: dict[str, Any] = {}


def _reference_tokenizer(tokenizers: Any, path: Path) -> Any:
    if "tokenizer" not in _REFERENCE:
        tokenizer = tokenizers.Tokenizer.from_file(str(path))
        tokenizer.no_padding()
        tokenizer.no_truncation()
        _REFERENCE["tokenizer"] = tokenizer
    return _REFERENCE["tokenizer"]


def test_a_damaged_vocabulary_copy_in_the_cache_is_parsed_again(tmp_path: Path) -> None:
    from memosite.bpe import load_pieces

    files = embedding.model_files()
    assert files is not None
    cache = tmp_path / "cache"
    cache.mkdir()
    first = load_pieces(files[0], cache)
    (copy,) = cache.iterdir()
    copy.write_text("32000\n▁the\n", encoding="utf-8")  # cut short, as a full disk leaves it
    again = load_pieces(files[0], cache)
    assert again.ids == first.ids
    assert again.encode("▁payment retries") == first.encode("▁payment retries")


def _fake_wordllama(root: Path, *, weights: bytes | None, tokenizer: str | None, names: tuple[str, str]) -> Path:
    """A ``wordllama`` package as another version or a damaged install leaves it."""
    package = root / "wordllama"
    (package / "weights").mkdir(parents=True)
    (package / "tokenizers").mkdir()
    (package / "__init__.py").write_text("raise ImportError('never imported')\n", encoding="utf-8")
    if weights is not None:
        (package / "weights" / names[0]).write_bytes(weights)
    if tokenizer is not None:
        (package / "tokenizers" / names[1]).write_text(tokenizer, encoding="utf-8")
    return root


_REAL_NAMES = ("l2_supercat_256.safetensors", "l2_supercat_tokenizer_config.json")


@pytest.mark.parametrize(
    ("case", "weights", "tokenizer", "names", "reason"),
    [
        ("other file names", b"\0" * 64, "{}", ("l3_other_512.safetensors", "l3_tokenizer.json"), "no weights/"),
        ("weights cut short", b"\x10\0\0\0\0\0\0\0{", "{}", _REAL_NAMES, "cannot read the model's weights"),
        ("a table of other shape", None, "{}", _REAL_NAMES, "not a 32000x256 table"),
        ("vocabulary not JSON", None, "{not json", _REAL_NAMES, "cannot read the model's vocabulary"),
    ],
)
def test_a_broken_or_other_version_of_the_model_package_is_one_line_and_words_alone(
    shop: Vault,
    tmp_path: Path,
    memosite_exe: Path,
    case: str,
    weights: bytes | None,
    tokenizer: str | None,
    names: tuple[str, str],
    reason: str,
) -> None:
    if weights is None:
        header = json.dumps({"embedding.weight": {"dtype": "F16", "shape": [100, 8], "data_offsets": [0, 1600]}})
        weights = len(header).to_bytes(8, "little") + header.encode() + b"\0" * 1600
    if case == "vocabulary not JSON":
        files = embedding.model_files()
        assert files is not None
        weights = files[1].read_bytes()
    fake = _fake_wordllama(tmp_path / "site", weights=weights, tokenizer=tokenizer, names=names)
    env = {**os.environ, "PYTHONPATH": str(fake), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    done = subprocess.run(
        [str(memosite_exe), "search", "--vault", str(shop.root), "--project", P, "--json", "--", "payment retries"],
        capture_output=True,
        text=True,
        encoding="utf-8",
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    (line,) = done.stderr.splitlines()
    assert line.startswith("memosite: warning: search ranks by words alone: ") and reason in line
    result = json.loads(done.stdout)
    assert result["ranking"] == "words"
    assert [hit["id"] for hit in result["results"]] == _lexical(shop, "payment retries")


_NEVER_LOADS = """
import sys
from pathlib import Path
from memosite.search import search_records
from memosite.vault import Vault
vault = Vault.open(Path(sys.argv[1]))
for query in sys.argv[2:]:
    found = search_records(vault, "{project}", query)
    assert found.ranking == "words", (query, found.ranking)
print("numpy" in sys.modules, "memosite.bpe" in sys.modules)
"""


def test_a_search_that_cannot_use_vectors_never_loads_the_model(shop: Vault, tmp_path: Path) -> None:
    queries = ['"signed out"', "title:login OR title:invoices", "Повторная оплата", "支付 重试", "🚀"]
    done = run_fresh(_NEVER_LOADS.replace("{project}", P), str(shop.root), *queries)
    assert done.stdout.split() == ["False", "False"]


def test_an_index_without_vectors_never_loads_the_model(tmp_path: Path) -> None:
    vault = open_vault(tmp_path / "vault", semantic=False)
    seed(vault)
    vault.close()
    (tmp_path / "vault" / "config.local.json").write_text(json.dumps({"search": {"semantic": True}}), encoding="utf-8")
    done = run_fresh(_NEVER_LOADS.replace("{project}", P), str(tmp_path / "vault"), SYNONYM_QUERY)
    assert done.stdout.split() == ["False", "False"]


@pytest.mark.parametrize(
    "query",
    [
        "quantum chromodynamics on a lattice",
        "the weather in the mountains is nice today",
        "recipe for a lemon tart with meringue",
        "Überraschungsei für Kinder",
    ],
)
def test_a_query_about_nothing_the_vault_knows_finds_nothing(shop: Vault, query: str) -> None:
    put(shop, "decision", "db-pool", "Postgres connection pool per worker", "Each worker opens its own pool.\n")
    found = search_records(shop, P, query, explain=True, now=NOW)
    assert found.ranking == "hybrid"
    assert found.results == [] and found.total == 0


# --- the words' reading hybrid fuses, and what a search leaves remembered -------------------------


def _many_holding_every_word(vault: Vault) -> None:
    for n in range(12):
        put(
            vault,
            "log",
            f"deploy-{n}",
            f"Deploy {n} of the payment service",
            f"Payment service deploy {n} went out (支付重试).\n",
        )
    put(vault, "trap", "payment-ru", "Платёж списан дважды", "Повтор платежа без ключа идемпотентности.\n")
    put(vault, "trap", "payment-el", "Διπλή χρέωση πληρωμής", "Η επανάληψη χωρίς κλειδί χρεώνει δύο φορές.\n")
    put(vault, "trap", "payment-zh", "重复扣款", "支付重试时没有幂等键会重复扣款。\n")


@pytest.mark.parametrize(
    "query",
    [
        "payment service deploy 支付重试",
        "deploy went out 支付重试",
        "payment service deploy",
        "Платёж дважды",
        "重复扣款",
    ],
)
def test_hybrid_reads_the_words_of_a_query_as_words_alone_do(tmp_path: Path, query: str) -> None:
    # Before: hybrid asked the words' ranking for 50 candidates, so a query every term of which a
    # page of records holds (12 here) still fell back to the any-term reading: the search reported
    # the character pairs of "支付重试" as its terms where the same search by words alone reported
    # "支付重试", and a second, costlier query ran for nothing.
    answers = {}
    for semantic in (False, True):
        vault = open_vault(tmp_path / f"vault-{semantic}", semantic=semantic)
        try:
            _many_holding_every_word(vault)
            found = search_records(vault, P, query, limit=10, now=NOW)
            answers[semantic] = (found.match, found.terms, found.holding_all)
        finally:
            vault.close()
    assert answers[True] == answers[False]


def test_a_search_does_not_count_as_a_write_of_the_index(shop: Vault) -> None:
    # Before: the rows a search puts in its own temp table for snippets moved ``total_changes``, so
    # every search dropped every remembered answer and made the held vectors be checked again.
    search_records(shop, P, "payment retries", now=NOW)
    index = shop.index()
    before = index.changes()
    calls = []
    index.remembered("probe", lambda: calls.append(1))
    for query in ("payment retries", SYNONYM_QUERY, "Платёж", "Διπλή", "重复扣款", "🦊"):
        search_records(shop, P, query, now=NOW)
    index.remembered("probe", lambda: calls.append(1))
    assert index.changes() == before
    assert calls == [1]
    put(shop, "trap", "new-one", "A new trap", "About something new.\n")
    assert index.changes() > before
    index.remembered("probe", lambda: calls.append(1))
    assert calls == [1, 1]


def _stands_for_its_text(vault: Vault, path: str) -> bool:
    """Whether the record at ``path`` holds the vector its current text embeds to."""
    from memosite.embedding import record_text
    from memosite.index import vectors

    model = embedding.load_embedder()
    assert model is not None
    entry = next(e for e in vault.index().entries(P) if e.path == path)
    expected = model.to_blob(model.embed_records([record_text(entry.title, entry.body, entry.tags)])[0])
    return vectors.blob_of(vault.index(), path) == expected


def test_a_vector_filled_in_while_another_process_rewrites_the_record_does_not_stand_for_the_new_text(
    shop: Vault,
) -> None:
    # A search fills in the vectors records lack, without the vault's lock: between reading a record's
    # text and storing its vector, a person's CLI (hybrid off there) rewrote it. The old text's vector
    # once landed on the new text, and since a rewrite that keeps the text keeps its vector, it stayed.
    from memosite.embedding import record_text
    from memosite.index import vectors
    from memosite.refresh import fill_missing_vectors, semantic_embedder
    from memosite.salience import record_hits

    shop.close()
    person = open_vault(shop.root, semantic=False)
    searcher = open_vault(shop.root, semantic=True)
    try:
        put(person, "decision", "ledger", "Ledger entries are immutable", "Corrections are new entries.\n")
        embedder = semantic_embedder(searcher)
        assert embedder is not None
        lacking = vectors.missing(searcher.index(), embedder.name)  # what fill_missing_vectors reads …
        rows = embedder.embed_records([record_text(item.title, item.body, item.tags) for item in lacking])
        put(person, "decision", "ledger", "Ledger lines are append-only — только добавление", "Never edit one.\n")
        vectors.store_rows(  # … and stores, once the other process committed
            searcher.index(),
            embedder.name,
            [(item, embedder.to_blob(row)) for item, row in zip(lacking, rows, strict=True)],
        )
        path = "projects/demo/decisions/ledger.md"
        record_hits(searcher, P, ["ledger"])  # a rewrite that leaves the text as it is
        fill_missing_vectors(searcher, embedder)
        assert _stands_for_its_text(searcher, path)
    finally:
        person.close()
        searcher.close()


def test_a_server_holding_the_vectors_briefs_as_a_new_process_after_the_cli_wrote(
    shop: Vault, memosite_exe: Path, run_cli: Any
) -> None:
    # The MCP server holds each kind's vectors between briefs; a person's CLI (another process)
    # rewrites a trap's text, adds one, purges one and reindexes. The server's next brief must be
    # the one a new process gives for the same vault and task.
    import anyio
    from mcp import ClientSession, StdioServerParameters, stdio_client

    root = shop.root
    shop.close()
    task = "why does a retry charge the customer twice at checkout"
    cli = ("--vault", str(root), "--project", P)
    server = StdioServerParameters(
        command=str(memosite_exe),
        args=["mcp", "--read-only", "--vault", str(root), "--project", P],
        env={"HOME": os.environ["HOME"]},
    )

    def person() -> None:
        steps = [
            ("upsert", "--kind", "trap", "--id", "retry-key", "--body", "A retry without its key charges twice."),
            (
                "upsert",
                "--kind",
                "trap",
                "--title",
                "Checkout retries double-charge — двойное списание",
                "--severity",
                "high",
                "--body",
                "The retry at checkout charges the card again.",
            ),
            ("forget", "--id", "cdn-cookie", "--purge"),
            ("upsert", "--kind", "decision", "--title", "Retries carry an idempotency key", "--body", "Always."),
        ]
        for step in steps:
            done = run_cli(*cli, *step)
            assert done.exit_code == 0, (step, done.stderr)
        assert run_cli(*cli, "reindex").exit_code == 0

    async def scenario() -> tuple[Any, Any]:
        async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            before = await session.call_tool("bootstrap", {"query": task})
            assert not before.is_error, before.content
            await anyio.to_thread.run_sync(person)
            after = await session.call_tool("bootstrap", {"query": task})
            assert not after.is_error and after.structured_content is not None, after.content
            return before.structured_content, after.structured_content

    before, after = anyio.run(scenario)
    fresh = run_cli(*cli, "--json", "bootstrap", "--query", task)
    assert fresh.exit_code == 0, fresh.stderr
    instant = re.compile(r"\d{4}-\d\d-\d\dT[\d:.]+Z")  # when each brief was made
    same = [instant.sub("", json.dumps(brief, ensure_ascii=False, sort_keys=True)) for brief in (after, fresh.json())]
    assert "двойное списание" in same[0] and "like the task" in same[0] and after != before
    assert same[0] == same[1]


def test_a_hand_edit_of_the_body_gets_a_new_vector_and_one_of_the_frontmatter_keeps_the_old(
    shop: Vault, run_cli: Any
) -> None:
    path = "projects/demo/traps/retry-key.md"
    record = shop.root / path
    cli = ("--vault", str(shop.root), "--project", P)
    kept = _stored_seqs(shop)[path]
    text = record.read_text(encoding="utf-8")
    assert "layer: other\n" in text
    record.write_text(text.replace("layer: other\n", "layer: domain\nmodule: billing\n", 1), encoding="utf-8")
    assert run_cli(*cli, "compile").exit_code == 0  # picks the edit up
    entry = shop.index().by_path(path)
    assert entry is not None and entry.module == "billing"
    assert _stored_seqs(shop)[path] == kept and _stands_for_its_text(shop, path)
    text = record.read_text(encoding="utf-8")
    assert "charges twice" in text
    record.write_text(text.replace("charges twice", "charges twice — дважды, 两次"), encoding="utf-8")
    assert run_cli(*cli, "compile").exit_code == 0
    assert _stored_seqs(shop)[path] != kept and _stands_for_its_text(shop, path)


_TOPICS = (
    "invalidation after a deploy",
    "stampede when the key expires",
    "warm-up before the sale",
    "ключи истекают одновременно",
    "η μνήμη γεμίζει 🧠",
    "per-tenant prefixes",
    "serialization of decimals",
)


def test_a_hybrid_total_counts_each_record_once_when_the_words_match_more_than_their_candidates(
    tmp_path: Path,
) -> None:
    # Before: the words' total already counted every record they match, and each record meaning
    # brought from beyond the words' 50 candidates was counted again ("75 results" for 72 records).
    vault = open_vault(tmp_path / "vault")
    try:
        for n in range(70):
            topic = _TOPICS[n % len(_TOPICS)]
            body = f"The cache {topic}: case {n}.\n" + "Details follow. " * (n % 9) + "\n"
            put(vault, ("decision", "spec", "plan")[n % 3], f"cache-{n}", f"Cache {topic} {n}", body)
        put(vault, "trap", "memo-stale", "Memoized results go stale", "Memoized lookups outlive the data.\n")
        put(vault, "decision", "redis-store", "Keep hot lookups in Redis", "A shared in-memory store.\n")
        found = search_records(vault, P, "cache", limit=5, now=NOW)
        assert found.ranking == "hybrid" and found.total_exact
        filters = fts.SearchFilters(P, "2026-11-30T12:00:00.000Z", hidden_kinds=("scratch",))
        words = find_matches(vault.index(), "cache", filters, sort="relevance", limit=1000)
        by_words = [match.rowid for match in words.matches]
        meaning = hybrid.rank_by_meaning(vault.index(), embedding.load_embedder(), "cache", filters)
        # The case this is about: meaning brings records the words match beyond their candidates.
        assert set(meaning.rowids) & set(by_words[hybrid.CANDIDATES :])
        assert words.total == len(by_words) == 70
        assert found.total == len(set(by_words) | set(meaning.rowids))
    finally:
        vault.close()


_SCRIPTS = (
    "invalidation after a deploy",
    "ключи истекают одновременно",
    "η μνήμη γεμίζει 🧠",
    "تخزين مؤقت للذاكرة",
    "缓存失效后数据库被击穿",
    "キャッシュの有効期限",
    "warm-up before the sale",
)


def _filters(**given: Any) -> fts.SearchFilters:
    """The filters ``search_records`` builds from the same arguments, written out."""
    return fts.SearchFilters(P, "2026-11-30T12:00:00.000Z", hidden_kinds=("scratch",), **given)


@pytest.mark.parametrize(
    ("query", "arguments", "filters"),
    [
        ("cache", {}, _filters()),
        ("cach", {}, _filters()),  # the last word is a prefix too
        ("cache deploy zzqx", {}, _filters()),  # no record holds every word: the any-word reading
        ("cache 缓存", {}, _filters()),  # a word and a substring of an unspaced script
        ("cache ключи", {}, _filters()),
        ("cache", {"kinds": ["decision", "spec"]}, _filters(kinds=["decision", "spec"])),
        ("cache", {"tags": ["кэш"]}, _filters(tags=["кэш"])),
        ("cache", {"path": "src/cache/x.py"}, _filters(path="src/cache/x.py")),
        ("cache", {"status": "archived"}, _filters(statuses=["archived"])),
        ("cache", {"author": "бо"}, _filters(author="бо")),
        ("cache", {"include_expired": True}, _filters(include_expired=True)),
        ("cache", {"as_of": "2026-11-27"}, _filters(as_of_iso="2026-11-27T23:59:59.999Z")),
    ],
)
def test_a_hybrid_total_is_the_union_of_what_the_words_match_and_what_meaning_brought(
    tmp_path: Path, query: str, arguments: dict[str, Any], filters: fts.SearchFilters
) -> None:
    vault = open_vault(tmp_path / "vault")
    try:
        for n in range(120):
            topic = _SCRIPTS[n % len(_SCRIPTS)]
            fields: dict[str, Any] = {
                "title": f"{'Cache ' if n % 3 else ''}{topic} {n}",
                "tags": [("ops", "кэш", "缓存")[n % 3]],
                "pathPatterns": [("src/cache/**", "lib/**")[n % 2]],
                "author": ("ana", "бо", "李")[n % 3],
            }
            kind = ("trap", "decision", "spec", "plan")[n % 4]
            if n % 11 == 0:
                fields["expires_at"] = "2026-11-28T00:00:00.000Z"
            if n % 7 == 0 and kind != "trap":
                fields["status"] = "archived"
            body = f"The {'cache ' if n % 5 else ''}{topic}: case {n}.\n" + "Details follow. " * (n % 9)
            upsert_record(vault, P, kind=kind, slug=f"c-{n}", body=body, frontmatter=fields, now=NOW)
        found = search_records(vault, P, query, limit=5, now=NOW, **arguments)
        assert found.ranking == "hybrid" and found.total_exact
        words = find_matches(vault.index(), query, filters, sort="relevance", limit=1000, page=5)
        assert found.match == words.match and found.terms == words.terms  # the same reading
        meaning = hybrid.rank_by_meaning(vault.index(), embedding.load_embedder(), query, filters)
        alike = {
            rowid
            for rowid, sim in zip(meaning.rowids, meaning.similarities, strict=True)
            if sim >= hybrid.MIN_SIMILARITY
        }
        assert found.total == len({match.rowid for match in words.matches} | alike)
    finally:
        vault.close()
