"""Trap classification and recurrence (seed 000, "Trap classification", "Trap recurrence/dedup")."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memosite.recordfile import read_record
from memosite.recurrence import (
    body_labels,
    classify_layer,
    classify_module,
    classify_tags,
    classify_trap,
    is_recurrence,
    jaccard,
    normalize_layer,
    pattern_key,
    trap_layer,
    trap_occurrences,
    trap_recurrence,
)
from memosite.salience import backfill_traps
from memosite.store import upsert_record
from memosite.vault import Vault


@pytest.mark.parametrize(
    ("patterns", "body", "layer"),
    [
        (["tests/test_api.py"], "", "tests"),
        ([".github/workflows/ci.yml"], "", "devops"),
        (["migrations/0003_add.sql"], "", "infrastructure"),
        (["src/components/Cart.tsx"], "", "web"),
        (["domain/order.py"], "", "domain"),
        (["src/api/orders.py"], "", "application"),
        ([], "the postgres connection pool is exhausted", "infrastructure"),
        ([], "nothing to go on", "other"),
    ],
)
def test_layer_is_inferred_from_paths_then_words(patterns: list[str], body: str, layer: str) -> None:
    assert classify_layer(patterns, body) == layer


def test_module_is_the_first_meaningful_directory() -> None:
    assert classify_module(["src/payments/client.py"]) == "payments"
    assert classify_module(["README.md"]) == "README"
    assert classify_module(["**/*.py"]) is None


def test_security_label_is_promoted_into_tags() -> None:
    assert "security" in classify_tags({"label": "Security"}, "plain text")
    assert "security" in classify_tags({"security": True}, "plain text")
    assert "security" in classify_tags({}, "The CSRF check is skipped on logout")


def test_security_tag_needs_a_whole_security_word() -> None:
    assert "security" not in classify_tags({}, "The lexer drops tokens after a comment; the author knows")


def test_existing_tags_are_kept_first_and_not_duplicated() -> None:
    assert classify_tags({"tags": ["payments", "security"]}, "a race condition in the auth flow") == [
        "payments",
        "security",
        "concurrency",
    ]


def test_pattern_key_ignores_order_and_duplicates() -> None:
    assert pattern_key(["b", "a", "b"]) == pattern_key(["a", "b"])


def test_jaccard_threshold_is_0_7() -> None:
    base = "one two three four five six seven eight nine ten"
    assert jaccard(base, base + " eleven") >= 0.7 and is_recurrence(base, base + " eleven")
    assert not is_recurrence(base, "one two three four five six alpha beta gamma delta")


# --- labels people write in trap bodies ---------------------------------------------------------

LABELLED = """Checkout POSTs lose the session.

**Layer**: Web
**Module**: Checkout / Payments
"""


def test_classification_reads_body_labels_before_guessing_from_paths() -> None:
    fm: dict[str, object] = {"pathPatterns": ["migrations/0003_add.sql"]}
    classify_trap(fm, LABELLED)
    assert fm["layer"] == "web" and fm["module"] == "Checkout / Payments"


@pytest.mark.parametrize(
    "line",
    ["**Layer**: Frontend", "**Layer:** UI", "- **Layer**: front-end", "Layer: web", "__Camada__: Frontend"],
)
def test_a_layer_label_is_read_in_its_usual_spellings(line: str) -> None:
    assert trap_layer({}, f"Text.\n\n{line}\n") == "web"


def test_labels_inside_code_blocks_are_not_labels() -> None:
    body = "Config:\n\n```yaml\nlayer: infra\n```\n"
    assert body_labels(body) == {}
    assert trap_layer({"pathPatterns": ["src/components/Cart.tsx"]}, body) == "web"


@pytest.mark.parametrize(
    ("name", "layer"),
    [
        ("front", "web"),
        ("frontend", "web"),
        ("UI", "web"),
        ("フロントエンド", "web"),
        ("前端", "web"),
        ("infra", "infrastructure"),
        ("ops", "infrastructure"),
        ("Infraestrutura", "infrastructure"),
        ("test", "tests"),
        ("QA", "tests"),
        ("testes", "tests"),
        ("CI/CD", "devops"),
        ("Back End", "application"),
        ("Domäne", "domain"),
        ("Web, Security", "web"),
        ("segurança", None),  # a topic, not a layer
        ("bananas", None),
    ],
)
def test_layer_aliases_map_into_the_enum(name: str, layer: str | None) -> None:
    assert normalize_layer(name) == layer


@pytest.mark.parametrize(
    ("frontmatter", "body"),
    [
        ({}, "Tokens stay valid.\n\n**Layer**: Security\n"),
        ({}, "Tokens stay valid.\n\n**Category**: Segurança\n"),
        ({}, "Tokens stay valid.\n\nKategorie: Sicherheit\n"),
        ({"category": "セキュリティ"}, "Tokens stay valid."),
        ({}, "O token de sessão continua válido: problema de segurança."),
        ({}, "Вход без пароля: уязвимость безопасности."),
    ],
)
def test_security_and_its_translations_are_promoted_into_tags(frontmatter: dict[str, object], body: str) -> None:
    assert "security" in classify_tags(frontmatter, body)


def test_a_security_layer_label_leaves_the_layer_to_the_body_or_paths() -> None:
    fm: dict[str, object] = {"pathPatterns": ["src/auth/tokens.py"]}
    classify_trap(fm, "Tokens stay valid after logout.\n\n**Layer**: Segurança\n")
    assert fm["layer"] == "application" and "security" in fm["tags"]  # type: ignore[operator]


def test_a_layer_written_under_another_name_is_normalised() -> None:
    fm: dict[str, object] = {"layer": "Frontend"}
    classify_trap(fm, "x")
    assert fm["layer"] == "web"


def test_upsert_classifies_a_labelled_trap(vault: Vault) -> None:
    done = upsert_record(vault, "demo", kind="trap", slug="labelled", body=LABELLED, path="db/schema.sql")
    fm = read_record(vault.root / done.path).frontmatter
    assert (fm["layer"], fm["module"]) == ("web", "Checkout / Payments")
    assert read_record(vault.root / done.path).body == LABELLED


# --- occurrences ---------------------------------------------------------------------------------


def test_a_trap_superseding_another_carries_its_occurrences_plus_one(vault: Vault) -> None:
    upsert_record(vault, "demo", kind="trap", slug="old", body="Locks bite.", frontmatter={"occurrences": 4})
    done = upsert_record(
        vault, "demo", kind="trap", slug="new", body="Locks bite, reworded.", frontmatter={"supersedes": "old"}
    )
    assert read_record(vault.root / done.path).frontmatter["occurrences"] == 5
    assert read_record(vault.record_path("demo", "trap", "old")).frontmatter["status"] == "superseded"


def test_a_superseding_trap_that_says_its_own_occurrences_keeps_them(vault: Vault) -> None:
    upsert_record(vault, "demo", kind="trap", slug="old", body="Locks bite.", frontmatter={"occurrences": 4})
    done = upsert_record(
        vault, "demo", kind="trap", slug="new", body="Reworded.", frontmatter={"supersedes": "old", "occurrences": 2}
    )
    assert read_record(vault.root / done.path).frontmatter["occurrences"] == 2


def test_a_trap_without_occurrences_counts_as_seen_once() -> None:
    assert trap_occurrences("trap", None) == 1 and trap_occurrences("trap", 0) == 1
    assert trap_occurrences("trap", 7) == 7 and trap_occurrences("decision", None) == 0


counts = st.one_of(st.none(), st.integers(1, 10**9))
stamps = st.one_of(st.none(), st.just("2026-01-02T03:04:05.000Z"))
NOW_ISO = "2026-11-30T12:00:00.000Z"


@settings(max_examples=200, deadline=None)
@given(occurrences=counts, last_seen=stamps)
def test_a_trap_seen_again_counts_one_more_occurrence_and_was_seen_now(
    occurrences: int | None, last_seen: str | None
) -> None:
    frontmatter = {"title": "Повтор · 再発 · récidive", "occurrences": occurrences, "lastSeen": last_seen}
    assert trap_recurrence(frontmatter, seen_at=NOW_ISO, again=True) == {
        "occurrences": (occurrences or 1) + 1,
        "lastSeen": NOW_ISO,
    }


@settings(max_examples=200, deadline=None)
@given(occurrences=counts, last_seen=stamps, older=counts)
def test_recurrence_fields_never_lose_a_count_and_fill_only_what_is_missing(
    occurrences: int | None, last_seen: str | None, older: int | None
) -> None:
    frontmatter = {"occurrences": occurrences, "lastSeen": last_seen}
    kept = trap_recurrence(frontmatter, seen_at=NOW_ISO)
    assert kept.get("occurrences", occurrences) == (occurrences or 1)
    assert kept.get("lastSeen", last_seen) == (last_seen or NOW_ISO)
    carried = trap_recurrence(frontmatter, seen_at=NOW_ISO, succeeds={"occurrences": older})
    assert carried["occurrences"] == trap_occurrences("trap", older) + 1


def test_backfill_and_upsert_count_a_trap_alike(vault: Vault) -> None:
    """A hand-written trap without the fields gets from backfill what upsert writes on a new one."""
    written = upsert_record(vault, "demo", kind="trap", slug="written", body="Retries double the charge.")
    by_upsert = read_record(vault.root / written.path).frontmatter
    hand = vault.record_path("demo", "trap", "by-hand")
    hand.write_text(
        "---\nid: by-hand\nkind: trap\nproject: demo\ncreated: 2026-11-01\nupdated: 2026-11-02\n---\nÇa casse.\n",
        encoding="utf-8",
    )
    backfill_traps(vault, "demo")
    by_backfill = read_record(hand).frontmatter
    assert by_upsert["occurrences"] == by_backfill["occurrences"] == 1
    assert by_upsert["lastSeen"] == by_upsert["updated"] and str(by_backfill["lastSeen"]).startswith("2026-11-02")
