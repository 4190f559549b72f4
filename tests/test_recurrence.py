"""Trap classification and recurrence (seed 000, "Trap classification", "Trap recurrence/dedup")."""

from __future__ import annotations

import pytest

from memosite.recurrence import (
    classify_layer,
    classify_module,
    classify_tags,
    is_recurrence,
    jaccard,
    pattern_key,
)


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
