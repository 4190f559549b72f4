"""Site search reads words as the CLI does (memosite.site.search): every character of an unspaced
script is a word of its own, punctuation splits words, and the folded words of an entry are what
:func:`memosite.text.fold` makes of it."""

from __future__ import annotations

import re
import unicodedata

from hypothesis import given
from hypothesis import strategies as st

from memosite.site.search import folded_fields, folded_words, separator, with_folded_fields
from memosite.text import WORD_PATTERN, fold, is_unspaced

# Letters of many scripts, punctuation, and combining marks written apart from their letter (a
# stress mark on Cyrillic, Arabic harakat, Hebrew points, a decomposed acute), and words that hold them.
SCRIPTS = st.lists(
    st.sampled_from(
        [
            *"Café Zoë ошибка счёт ελληνικά πίνακα 数据库迁移会锁表 日本語 한국어 عربى 🎉 -_.,:;!?()[]\"'`/",
            *"\u0301\u0308\u064e\u0652\u05b8\u05bc",
            "Замо\u0301к",
            "الجَدْوَل",
            "שָׁלוֹם",
            "Cafe\u0301",
        ]
    )
).map("".join)


def _tokens(text: str) -> list[str]:
    return [token for token in re.split(separator(), text) if token]


@given(SCRIPTS)
def test_every_unspaced_character_is_a_word_of_its_own(text: str) -> None:
    for token in _tokens(text):
        if any(is_unspaced(char) and ord(char) <= 0xFFFF for char in token):
            assert len(token) == 1, token


def test_a_cjk_query_splits_into_the_characters_the_index_holds() -> None:
    assert _tokens("数据库迁移会锁表几分钟")[4:7] == ["移", "会", "锁"]
    assert set(_tokens("锁表")) <= set(_tokens("数据库迁移会锁表几分钟"))
    assert _tokens("double-charge customers.") == ["double", "charge", "customers"]
    assert _tokens("v1.8.0 (Dramatiq + Redis)") == ["v1.8.0", "Dramatiq", "+", "Redis"]


@given(SCRIPTS)
def test_folded_words_are_the_cli_folding_of_the_words_it_changes(text: str) -> None:
    words = folded_words(text).split()
    assert len(words) == len(set(words))
    for word in words:
        assert word == fold(word) and word in fold(text)


@given(SCRIPTS)
def test_every_indexed_word_that_folding_changes_is_searchable_folded(text: str) -> None:
    words = set(folded_words(text).split())
    for token in _tokens(text):
        folded = fold(token)
        if folded != unicodedata.normalize("NFKC", token.casefold()):
            assert set(re.findall(WORD_PATTERN, folded)) <= words, token


def test_a_word_with_a_combining_mark_is_found_without_it() -> None:
    # A stress mark (U+0301) or a vowel point has no precomposed letter: it is a character of
    # its own, and the word around it is still one word.
    assert folded_words("Миграция держит замо\u0301к на таблице") == "замок"
    assert folded_words("يقفل الجَدْوَل لعدة ساعات") == "الجدول"
    assert folded_words("שָׁלוֹם") == "שלום"


def test_cafe_and_zoe_get_folded_fields_and_plain_ascii_none() -> None:
    doc = {"title": "Café menu", "text": "<p>Ask Zoë &amp; ωμέγα</p>", "tags": ["счёт"]}
    assert folded_fields(doc) == {"title_folded": "cafe счет", "text_folded": "zoe ωμεγα"}
    assert folded_fields({"title": "Retries", "text": "<p>double charge</p>"}) == {}
    config = with_folded_fields({"fields": {"title": {"boost": 1000.0}, "text": {"boost": 1.0}}}, [doc])
    assert config["fields"]["title_folded"] == {"boost": 1000.0} and config["fields"]["text_folded"] == {"boost": 1.0}
    assert doc["title_folded"] == "cafe счет"
