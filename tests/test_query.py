"""How a query is read (memosite.query): stop words, the last word as a prefix, phrases, folding,
scripts without spaces, FTS5 syntax — pure, no vault."""

from __future__ import annotations

import sqlite3

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memosite.index.schema import ensure_schema
from memosite.query import STOP_WORDS, is_stop_word, parse_query, unspaced_parts, uses_fts_syntax


def labels(text: str, *, loose: bool = False) -> list[str]:
    return parse_query(text).labels(loose=loose)


def test_stop_words_of_a_question_are_dropped() -> None:
    assert labels("how do payment retries work") == ["payment", "retries"]  # "work" was the last word
    assert labels("why postgres") == ["postgres*"]
    assert labels("pourquoi une file d'attente redis pour les tâches") == ["file", "attente", "redis", "tâches*"]


def test_a_query_of_stop_words_only_keeps_them() -> None:
    assert labels("the who") == ["the", "who"]


def test_a_lone_letter_is_not_a_word_to_find() -> None:
    assert is_stop_word("c") and not is_stop_word("429")
    assert labels("c++ token") == ["token*"]


def test_the_last_word_is_also_a_prefix() -> None:
    assert labels("retr") == ["retr*"]
    assert labels("cookie samesite cdn logout") == ["cookie", "samesite", "cdn", "logout*"]


def test_short_or_numeric_last_words_are_not_prefixes() -> None:
    assert labels("partner returns 429") == ["partner", "returns", "429"]
    assert labels("react ui") == ["react", "ui"]


def test_a_star_asks_for_a_prefix_anywhere() -> None:
    assert labels("cach* layer") == ["cach*", "layer*"]


def test_quoted_phrases_stay_phrases() -> None:
    parsed = parse_query('"memory leak" in the worker')
    assert parsed.labels() == ['"memory leak"', "worker*"]
    assert parsed.all_terms().words[0] == '"memory leak"'


def test_an_unbalanced_quote_is_punctuation() -> None:
    assert labels('"unbalanced quote') == ["unbalanced", "quote*"]


def test_words_are_searched_folded_and_as_written() -> None:
    terms = parse_query("Straße café").all_terms().words
    assert terms == ('("Straße" OR "strasse")', '("café"* OR "cafe"*)')


def test_fullwidth_letters_read_as_ascii() -> None:
    assert labels("ｐａｙｍｅｎｔ") == ["payment*"]


@pytest.mark.parametrize(
    ("text", "parts"),
    [
        ("锁表", ["锁表"]),
        ("订单表被锁住怎么办", ["订单表", "锁住"]),
        ("为什么选择PostgreSQL", ["选择"]),
        ("バッチ処理が二回実行される", ["バッチ処理", "二回実行される"]),
        ("在庫のキャッシュが古い", ["在庫", "キャッシュ", "古い"]),
        ("什么", ["什么"]),  # nothing but a question word: kept rather than searching for nothing
    ],
)
def test_unspaced_runs_are_cut_at_function_characters(text: str, parts: list[str]) -> None:
    assert [t.text for t in parse_query(text).terms if t.kind == "unspaced"] == parts


def test_unspaced_parts_keep_a_single_ideograph_but_drop_a_lone_kana() -> None:
    assert unspaced_parts("表の") == ["表"]
    assert unspaced_parts("に表") == ["表"]


def test_the_loose_reading_of_an_unspaced_part_adds_its_pairs_and_characters() -> None:
    assert labels("锁表", loose=True) == ["锁表", "锁", "表"]
    assert "ッ" not in labels("ロック", loose=True)  # a lone kana says nothing


def test_mixed_scripts_split_into_words_and_unspaced_parts() -> None:
    parsed = parse_query("PostgreSQL数据库 migration")
    assert [(t.kind, t.text) for t in parsed.terms] == [
        ("word", "PostgreSQL"),
        ("unspaced", "数据库"),
        ("word", "migration"),
    ]


@pytest.mark.parametrize(
    ("text", "fts"),
    [
        ("sameSite OR hosted", True),
        ("title:cookie", True),
        ("NEAR(a b)", True),
        ("(auth", True),
        ("a NOT b", True),
        ("token AND(", True),
        ("or and not", False),  # lower case: words of a sentence
        ("auth:token", False),  # not a column
        ("-token", False),
        ("c++ token", False),
        ("how do payment retries work?", False),
    ],
)
def test_fts_syntax_is_recognised(text: str, fts: bool) -> None:
    assert uses_fts_syntax(text) is fts


def test_a_plain_reading_drops_fts_operators() -> None:
    assert parse_query("token AND(", plain=True).labels() == ["token"]
    assert parse_query("NEAR(", plain=True).empty


def test_stop_words_are_folded() -> None:
    assert "porque" in STOP_WORDS and is_stop_word("Porqué")


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=60))
def test_every_query_reads_into_terms_sqlite_accepts(text: str) -> None:
    # Whatever an agent sends, the plain reading is valid FTS5: it never needs a fallback.
    parsed = parse_query(text, plain=True)
    conn = sqlite3.connect(":memory:")
    ensure_schema(conn)
    for terms in (parsed.all_terms(), parsed.any_terms()):
        for word in terms.words:
            conn.execute("SELECT count(*) FROM records_fts WHERE records_fts MATCH ?", (word,)).fetchone()
        assert all(sub and "\n" not in sub for sub in terms.substrings)
    conn.close()
