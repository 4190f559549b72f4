"""The one "did you mean" rule (memosite.suggest), for every input."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from memosite.suggest import did_you_mean, near_misses

# Slug characters and letters of many scripts: ids as people and agents write them.
LETTERS = st.sampled_from(list("abcdefghijklmnopqrstuvwxyz0123456789-") + list("éüñçПриветΣίσυφος東京データمرحبا🚀"))
IDS = st.text(alphabet=LETTERS, min_size=4, max_size=30)


@settings(max_examples=300, deadline=None)
@given(known=IDS, at=st.integers(min_value=0), replacement=LETTERS)
def test_one_character_off_names_the_id(known: str, at: int, replacement: str) -> None:
    position = at % len(known)
    typed = known[:position] + replacement + known[position + 1 :]
    if typed != known:
        assert near_misses(typed, [known]) == [known]


@settings(max_examples=300, deadline=None)
@given(typed=st.text(max_size=40), known=st.lists(st.text(max_size=40), max_size=30))
def test_suggestions_are_few_known_and_never_what_was_typed(typed: str, known: list[str]) -> None:
    found = near_misses(typed, known)
    assert len(found) <= 3 and len(set(found)) == len(found)
    assert all(name in known and name != typed for name in found)


def test_nothing_close_suggests_nothing() -> None:
    assert near_misses("zzzz", ["lock-order", "retries"]) == []
    assert did_you_mean([]) == ""


def test_a_short_start_of_a_long_id_names_it() -> None:
    assert near_misses("checkout-v2-ro", ["checkout-v2-rollout", "image-cdn"]) == ["checkout-v2-rollout"]


def test_the_sentence_lists_the_names() -> None:
    assert did_you_mean(["a"]) == " (did you mean a?)"
    assert did_you_mean(["a", "b", "c"]) == " (did you mean a, b or c?)"


def test_a_typo_in_a_repetitive_id_names_it() -> None:
    # difflib alone scores this pair 0.57: its longest block is the 17 zeros after the typo
    assert near_misses("000000000000a00000000000000000", ["0" * 30]) == ["0" * 30]
