"""The brief in constant time (issue 24): its traps and decisions are read through indexes (the
project's rowid ranges per kind, path patterns by their literal start), never by scanning the
project's records, and a fixed vault briefs exactly as it did before."""

from __future__ import annotations

import random
import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memosite.bootstrap import build_bootstrap
from memosite.index import fts, partitions, queries
from memosite.paths import path_matches
from memosite.refresh import reindex
from memosite.schema import Record, format_iso, serialize_record, validate_frontmatter
from memosite.store import upsert_record
from memosite.vault import Vault

P = "fixed"
NOW = datetime(2026, 11, 30, 12, tzinfo=UTC)
WORDS = ("lock", "cache", "retry", "webhook", "invoice", "cookie", "migration", "timeout", "queue", "deploy")
RARE = ("idempotency", "samesite", "advisory", "jitter")
SCRIPTS = ("Café", "ошибка", "σφάλμα", "錯誤", "خطأ", "🎉")
PATTERNS = (
    "src/payments/client.py",
    "src/payments",
    "src/**/*.py",
    "**/conftest.py",
    "src/web/*.ts",
    "migrations/versions",
    "deploy/helm/values.yaml",
)


def write_fixed_vault(root: Path) -> Vault:
    """A fixed vault (the same files for every run): 60 traps and 24 decisions, words common and
    rare, titles in many scripts, path patterns of every shape, some expired, archived or pending."""
    rng = random.Random(24)
    vault = Vault.open(root)
    for n in range(84):
        kind = "trap" if n < 60 else "decision"
        words = [rng.choice(WORDS) for _ in range(rng.randint(3, 8))] + ([rng.choice(RARE)] if n % 5 == 0 else [])
        updated = NOW - timedelta(days=n % 17, hours=n)
        fm: dict[str, object] = {
            "id": f"{kind}-{n:02d}",
            "kind": kind,
            "project": P,
            "title": f"{SCRIPTS[n % len(SCRIPTS)]} {' '.join(words[:3])} {n}",
            "created": format_iso(updated - timedelta(days=1)),
            "updated": format_iso(updated),
        }
        if kind == "trap":
            fm["severity"] = ("low", "medium", "high", "critical", None)[n % 5]
            fm["pathPatterns"] = [PATTERNS[n % len(PATTERNS)]] + (
                [PATTERNS[(n + 3) % len(PATTERNS)]] if n % 4 == 0 else []
            )
            fm["occurrences"] = 1 + n % 4
            fm["hits"] = n % 7
        if n % 11 == 0:
            fm["status"] = "archived"
        if n % 13 == 0:
            fm["expires_at"] = "2026-11-01"
        if n % 17 == 0:
            fm["review"] = "pending"
        path = vault.record_path(P, kind, str(fm["id"]))
        path.parent.mkdir(parents=True, exist_ok=True)
        body = " ".join(words) + ".\n\nThe fix: " + " ".join(rng.choice(WORDS) for _ in range(12)) + ".\n"
        path.write_text(
            serialize_record(Record(validate_frontmatter({k: v for k, v in fm.items() if v is not None}), body)),
            encoding="utf-8",
        )
    reindex(vault, [P])
    return vault


BRIEFS: list[dict[str, str]] = [
    {},
    {"query": "lock cache"},
    {"query": "idempotency retry"},
    {"query": "samesite cookie webhook"},
    {"path": "src/payments/client.py"},
    {"path": "src/web/cart.ts", "query": "jitter queue"},
    {"path": "tests/e2e/conftest.py"},
    {"path": "src", "query": "advisory lock migration"},
    {"path": "migrations/versions/0042_orders.py", "query": "deploy"},
]
# What these briefs held before issue 24 (memosite main before the views and brief work merged,
# e79c725, the same vault and clock): traps, then decisions, in the brief's order.
BEFORE: list[tuple[list[str], list[str]]] = [
    (
        ["trap-03", "trap-23", "trap-43", "trap-18", "trap-38", "trap-58", "trap-53", "trap-48", "trap-08", "trap-28"],
        [
            "decision-69",
            "decision-70",
            "decision-71",
            "decision-72",
            "decision-73",
            "decision-74",
            "decision-75",
            "decision-76",
            "decision-60",
            "decision-61",
            "decision-62",
            "decision-79",
            "decision-63",
            "decision-80",
            "decision-64",
            "decision-81",
            "decision-82",
            "decision-83",
            "decision-67",
        ],
    ),
    (
        ["trap-03", "trap-23", "trap-43", "trap-18", "trap-38", "trap-58", "trap-53", "trap-48", "trap-08", "trap-28"],
        [
            "decision-61",
            "decision-76",
            "decision-79",
            "decision-70",
            "decision-82",
            "decision-75",
            "decision-81",
            "decision-64",
            "decision-74",
            "decision-63",
            "decision-69",
            "decision-67",
            "decision-73",
            "decision-60",
            "decision-62",
            "decision-80",
            "decision-71",
            "decision-72",
            "decision-83",
        ],
    ),
    (
        ["trap-25", "trap-40", "trap-03", "trap-23", "trap-43", "trap-18", "trap-38", "trap-58", "trap-53", "trap-48"],
        [
            "decision-69",
            "decision-70",
            "decision-71",
            "decision-72",
            "decision-73",
            "decision-74",
            "decision-75",
            "decision-76",
            "decision-60",
            "decision-61",
            "decision-62",
            "decision-79",
            "decision-63",
            "decision-80",
            "decision-64",
            "decision-81",
            "decision-82",
            "decision-83",
            "decision-67",
        ],
    ),
    (
        ["trap-15", "trap-35", "trap-03", "trap-23", "trap-43", "trap-18", "trap-38", "trap-58", "trap-53", "trap-48"],
        [
            "decision-75",
            "decision-81",
            "decision-82",
            "decision-73",
            "decision-60",
            "decision-83",
            "decision-62",
            "decision-79",
            "decision-64",
            "decision-72",
            "decision-80",
            "decision-70",
            "decision-69",
            "decision-71",
            "decision-74",
            "decision-76",
            "decision-61",
            "decision-63",
            "decision-67",
        ],
    ),
    (
        ["trap-23", "trap-43", "trap-58", "trap-48", "trap-08", "trap-28", "trap-07", "trap-02", "trap-42", "trap-37"],
        [
            "decision-69",
            "decision-70",
            "decision-71",
            "decision-72",
            "decision-73",
            "decision-74",
            "decision-75",
            "decision-76",
            "decision-60",
            "decision-61",
            "decision-62",
            "decision-79",
            "decision-63",
            "decision-80",
            "decision-64",
            "decision-81",
            "decision-82",
            "decision-83",
            "decision-67",
        ],
    ),
    (
        ["trap-18", "trap-53", "trap-08", "trap-32", "trap-46", "trap-36", "trap-25", "trap-04", "trap-05", "trap-50"],
        [
            "decision-70",
            "decision-80",
            "decision-71",
            "decision-63",
            "decision-61",
            "decision-64",
            "decision-67",
            "decision-76",
            "decision-83",
            "decision-74",
            "decision-79",
            "decision-69",
            "decision-72",
            "decision-73",
            "decision-75",
            "decision-60",
            "decision-62",
            "decision-81",
            "decision-82",
        ],
    ),
    (
        ["trap-03", "trap-38", "trap-28", "trap-31", "trap-56", "trap-10", "trap-45", "trap-59", "trap-24", "trap-23"],
        [
            "decision-69",
            "decision-70",
            "decision-71",
            "decision-72",
            "decision-73",
            "decision-74",
            "decision-75",
            "decision-76",
            "decision-60",
            "decision-61",
            "decision-62",
            "decision-79",
            "decision-63",
            "decision-80",
            "decision-64",
            "decision-81",
            "decision-82",
            "decision-83",
            "decision-67",
        ],
    ),
    (
        ["trap-23", "trap-43", "trap-18", "trap-58", "trap-53", "trap-48", "trap-08", "trap-28", "trap-07", "trap-02"],
        [
            "decision-60",
            "decision-69",
            "decision-73",
            "decision-67",
            "decision-72",
            "decision-70",
            "decision-75",
            "decision-79",
            "decision-82",
            "decision-80",
            "decision-61",
            "decision-71",
            "decision-64",
            "decision-74",
            "decision-76",
            "decision-63",
            "decision-62",
            "decision-81",
            "decision-83",
        ],
    ),
    (
        ["trap-47", "trap-12", "trap-16", "trap-05", "trap-40", "trap-19", "trap-54", "trap-03", "trap-23", "trap-43"],
        [
            "decision-80",
            "decision-71",
            "decision-76",
            "decision-82",
            "decision-67",
            "decision-69",
            "decision-70",
            "decision-72",
            "decision-73",
            "decision-74",
            "decision-75",
            "decision-60",
            "decision-61",
            "decision-62",
            "decision-79",
            "decision-63",
            "decision-64",
            "decision-81",
            "decision-83",
        ],
    ),
]


@pytest.fixture
def fixed(tmp_path: Path) -> Iterator[Vault]:
    vault = write_fixed_vault(tmp_path / "fixed")
    yield vault
    vault.close()


@pytest.mark.parametrize("number", range(len(BRIEFS)))
def test_a_fixed_vault_briefs_the_same_traps_and_decisions_as_before(fixed: Vault, number: int) -> None:
    result = build_bootstrap(fixed, P, now=NOW, max_bytes=65536, **BRIEFS[number])
    assert ([item.id for item in result.traps], [item.id for item in result.decisions]) == BEFORE[number]


def _plans(vault: Vault, run: object) -> list[tuple[str, list[str]]]:
    """Every query ``run()`` sends to the index, with its plan."""
    conn = vault.index().conn
    statements: list[str] = []
    conn.set_trace_callback(statements.append)
    try:
        run()  # type: ignore[operator]
    finally:
        conn.set_trace_callback(None)
    plans: list[tuple[str, list[str]]] = []
    for sql in statements:
        if sql.lstrip().upper().startswith(("SELECT", "WITH")):
            plans.append((sql, [row[3] for row in conn.execute(f"EXPLAIN QUERY PLAN {sql}")]))
    return plans


@pytest.mark.parametrize("brief", [BRIEFS[2], BRIEFS[4], BRIEFS[7]])
def test_the_briefs_traps_are_read_through_indexes_not_a_scan_of_the_records(
    fixed: Vault, brief: dict[str, str]
) -> None:
    # Words alone: the ranking by meaning keeps its own bookkeeping of vectors.
    (fixed.root / "config.local.json").write_text('{"search": {"semantic": false}}', encoding="utf-8")
    vault = Vault.open(fixed.root)
    try:
        plans = _plans(vault, lambda: build_bootstrap(vault, P, now=NOW, **brief))
    finally:
        vault.close()
    every = [plan for _, steps in plans for plan in steps]
    scans = [plan for plan in every if re.match(r"SCAN (records|r|search_facts|f|fragments)\b(?! USING INDEX)", plan)]
    assert scans == []
    # The section's words are matched in its kind's range of rowids alone ("><": a rowid range).
    focus = [steps for sql, steps in plans if "MATERIALIZED" in sql and "records_fts" in sql]
    assert ("query" not in brief) == (focus == [])
    for steps in focus:
        assert any("records_fts VIRTUAL TABLE INDEX 0:M4><" in step for step in steps), steps
    counts = [sql for sql, _ in plans if sql.startswith("SELECT count(*) FROM records_fts WHERE")]
    assert ("query" not in brief) or counts


def test_a_path_brief_looks_patterns_up_by_their_literal_start(fixed: Vault) -> None:
    plans = _plans(fixed, lambda: fts.matching_pattern_sets(fixed.index(), P, "src/payments/client.py"))
    assert any("path_prefixes_prefix" in step for _, steps in plans for step in steps)


def test_knowledge_counts_read_the_kinds_rowid_ranges(fixed: Vault) -> None:
    index = fixed.index()
    for word in (*WORDS, *RARE):
        expected = index.conn.execute(
            "SELECT count(*) FROM records_fts CROSS JOIN search_facts AS f ON f.rowid = records_fts.rowid"
            " WHERE records_fts MATCH ? AND f.project = ? AND f.kind IN ('trap', 'decision') AND NOT f.pending",
            (f'"{word}"', P),
        ).fetchone()[0]
        assert queries.knowledge_holding(index, P, f'"{word}"', None) == expected, word


def test_a_record_that_changes_kind_moves_to_its_new_kinds_range(vault: Vault) -> None:
    upsert_record(vault, "demo", kind="plan", body="A plan.", slug="rollout")
    path = vault.project_dir("demo") / "plans" / "rollout.md"
    path.write_text(path.read_text(encoding="utf-8").replace("kind: plan", "kind: state"), encoding="utf-8")
    upsert_record(vault, "demo", kind="state", body="Now a state.", slug="rollout")
    index = vault.index()
    rowid, kind = index.conn.execute("SELECT rowid, kind FROM records WHERE path LIKE '%rollout.md'").fetchone()
    low, high = partitions.project_range(index, "demo", kind) or (0, 0)
    assert kind == "state" and low <= rowid < high
    assert index.conn.execute("SELECT count(*) FROM records_fts WHERE records_fts MATCH 'state'").fetchone()[0] == 1


PATH_PARTS = st.sampled_from(["src", "web", "api", "payments", "tests", "é", "日本", "a.py", "b.ts", "conftest.py"])
PATTERN_PARTS = st.one_of(PATH_PARTS, st.sampled_from(["*", "**", "*.py", "?.ts", "[ab].py"]))


@settings(max_examples=60, deadline=None)
@given(
    patterns=st.lists(st.lists(PATTERN_PARTS, min_size=1, max_size=4).map("/".join), min_size=1, max_size=6),
    path=st.lists(PATH_PARTS, min_size=1, max_size=4).map("/".join),
)
def test_patterns_looked_up_by_literal_start_cover_exactly_what_a_full_test_covers(
    tmp_path_factory: pytest.TempPathFactory, patterns: list[str], path: str
) -> None:
    vault = Vault.open(tmp_path_factory.mktemp("patterns") / "vault")
    try:
        for n, pattern in enumerate(patterns):
            upsert_record(vault, "p", kind="trap", body=f"Trap {n}.", slug=f"t{n}", path=pattern, allow_duplicate=True)
        found = set(fts.matching_pattern_sets(vault.index(), "p", path))
        every = {row[0] for row in vault.index().conn.execute("SELECT DISTINCT path_patterns FROM search_facts")}
        import json

        assert found == {sets for sets in every if path_matches(json.loads(sets), path)}
    finally:
        vault.close()


@settings(max_examples=25, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(("upsert", "pending", "purge", "edit-by-hand")),
            st.sampled_from(("trap", "decision", "log")),
            st.integers(min_value=0, max_value=5),
            st.lists(st.sampled_from((*WORDS[:4], *RARE[:2], "ошибка", "café")), min_size=1, max_size=4),
        ),
        min_size=1,
        max_size=12,
    )
)
def test_remembered_term_counts_follow_every_write(
    tmp_path_factory: pytest.TempPathFactory, steps: list[tuple[str, str, int, list[str]]]
) -> None:
    """A long-running process remembers how many traps and decisions hold a word and follows its own
    writes: after any of them the count is what counting the word index says."""
    from memosite.refresh import refresh_project
    from memosite.store import forget_record

    vault = Vault.open(tmp_path_factory.mktemp("terms") / "vault")
    terms = ['"lock"', '"idempotency"', '"cache"*', '"ошибка"', '"cafe"']

    def counted(term: str) -> int:
        return int(
            vault.index()
            .conn.execute(
                "SELECT count(*) FROM records_fts CROSS JOIN search_facts AS f ON f.rowid = records_fts.rowid"
                " WHERE records_fts MATCH ? AND f.project = 'p' AND f.kind IN ('trap', 'decision') AND NOT f.pending",
                (term,),
            )
            .fetchone()[0]
        )

    try:
        upsert_record(vault, "p", kind="trap", body="lock cache", slug="seed")
        for action, kind, n, words in steps:
            for term in terms:  # remembered before the write
                queries.knowledge_holding(vault.index(), "p", term, None)
            assert vault.index().term_counts  # the counts are remembered, and followed below
            slug = f"{kind}-{n}"
            path = vault.record_path("p", kind, slug)
            if action == "purge" and path.exists():
                forget_record(vault, "p", record_id=slug, kind=kind, purge=True)
            elif action == "edit-by-hand" and path.exists():
                text = path.read_text(encoding="utf-8").rstrip("\n")
                path.write_text(f"{text} {' '.join(words)}\n", encoding="utf-8")
                refresh_project(vault, "p")
            else:
                fm = {"title": " ".join(words[:2])} | ({"review": "pending"} if action == "pending" else {})
                upsert_record(vault, "p", kind=kind, body=" ".join(words), slug=slug, frontmatter=fm)
            for term in terms:
                assert queries.knowledge_holding(vault.index(), "p", term, None) == counted(term), (term, action)
    finally:
        vault.close()


def test_section_counts_from_the_chunks_agree_with_counting_the_facts(fixed: Vault) -> None:
    index = fixed.index()
    for now in (NOW, datetime(2026, 10, 1, tzinfo=UTC), datetime(2027, 1, 1, tzinfo=UTC)):
        now_iso = format_iso(now)
        for section, values in (("traps", (0, 1, 2, 3, 4)), ("traps", (3, 4)), ("decisions", ("active", "shipped"))):
            counted = queries.brief_section_count(index, P, section, values, now_iso)  # type: ignore[arg-type]
            scope = queries._section_scope(P, section, values, now_iso)  # type: ignore[arg-type]
            facts = index.conn.execute(f"SELECT count(*) FROM search_facts AS f WHERE {scope.sql()}", scope.params)
            assert counted == facts.fetchone()[0], (section, values, now_iso)


@pytest.fixture(scope="module")
def fixed_once(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Vault]:
    vault = write_fixed_vault(tmp_path_factory.mktemp("fixed") / "vault")
    yield vault
    vault.close()


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.sampled_from((*WORDS, *RARE, "ошибка", "σφάλμα", "café", "lock*")), min_size=2, max_size=5),
    st.integers(min_value=1, max_value=4),
    st.sampled_from(("traps", "decisions")),
    st.integers(min_value=1, max_value=12),
)
def test_the_records_holding_a_task_word_come_in_one_order_however_many_are_asked(
    fixed_once: Vault, words: list[str], holding_terms: int, section: queries.BriefSection, limit: int
) -> None:
    """A brief's words are matched among the records holding one of its needed terms; how many of
    the task's words each holds comes first in the order. When fewer than asked match, that count is
    taken of them alone; when more do, in SQL: either way, the first records and their counts are
    the same, and each count is how many of the words the word index finds in the record."""
    from memosite.bootstrap import ACCEPTED_STATUSES, TRAP_WEIGHTS
    from memosite.query import parse_query

    parsed = parse_query(" ".join(words))
    terms = parsed.any_terms()
    needed = [term.fts() for term in parsed.loose_terms][:holding_terms]
    values = list(TRAP_WEIGHTS) if section == "traps" else list(ACCEPTED_STATUSES)
    index = fixed_once.index()
    now = format_iso(NOW)

    def focused(asked: int) -> list[queries.BriefCandidate]:
        return queries.brief_section(
            index,
            P,
            section,
            values,
            now,
            terms=terms,
            path=None,
            limit=asked,
            holding=" OR ".join(f"({expression})" for expression in needed),
        )

    every = [candidate for candidate in focused(100) if candidate.matched]
    first = [candidate for candidate in focused(limit) if candidate.matched]
    assert first == every[:limit]
    for candidate in every:
        held = [
            word
            for word in terms.words
            if index.conn.execute(
                "SELECT 1 FROM records_fts WHERE records_fts MATCH ? AND rowid = ?", (word, candidate.rowid)
            ).fetchone()
        ]
        assert candidate.matched == len(held), (candidate, held)
