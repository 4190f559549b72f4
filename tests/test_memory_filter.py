"""The Memory page's text filter folds text as memosite's search does (:func:`memosite.text.fold`):
``site_src/assets/memosite/memory.js`` spells the rule again in JavaScript, and these tests hold the
two spellings to each other in real Chromium, character by character for the scripts a team writes
in and for any text drawn from them."""

from __future__ import annotations

import unicodedata
from collections.abc import Iterator

import pytest
from browser_support import chromium
from hypothesis import given, settings
from hypothesis import strategies as st

from memosite.resources import data_path
from memosite.text import fold

# Latin, its combining marks, Greek, Cyrillic, Armenian, Hebrew, Arabic; Latin and Greek extended;
# the extended combining marks; kana; halfwidth and fullwidth forms.
BLOCKS = [(0x20, 0x6FF), (0x1AB0, 0x1AFF), (0x1DC0, 0x1FFF), (0x20D0, 0x20FF), (0x3040, 0x30FF), (0xFF00, 0xFFEF)]
# Characters whose fold is no letter a person types: a spacing ypogegrammeni (Python's case
# folding gives a space and an iota, which its own folding then leaves as a space).
NOT_COMPARED = {0x037A}
WORDS = st.lists(
    st.sampled_from(
        [
            *"Café Zoë STRASSE Straße ΣΊΣΥΦΟΣ ᾼ ошибка счёт Ёлка ελληνικά",
            *"数据库迁移会锁表 がぎぐ ｶﾞ ﬁ ① 한국어 🎉 -_.,'",
            *"\u0301\u0308\u0327\u064e\u0652\u05b8\u05bc\u3099",
            "Замо\u0301к",
            "الجَدْوَل",
            "שָׁלוֹם",
            "Cafe\u0301",
        ]
    )
).map("".join)


@pytest.fixture(scope="module")
def page() -> Iterator[object]:
    script = (data_path("site_src") / "assets/memosite/memory.js").read_text(encoding="utf-8")
    with chromium() as browser:
        opened = browser.new_page()  # type: ignore[attr-defined]
        opened.set_content("<!doctype html><html><body></body></html>")
        opened.add_script_tag(content=script)
        yield opened


def _js_fold(page: object, texts: list[str]) -> list[str]:
    return list(page.evaluate("texts => texts.map(window.memosite.fold)", texts))  # type: ignore[attr-defined]


@pytest.mark.browser
def test_the_memory_filter_folds_every_character_of_these_scripts_as_the_cli_does(page: object) -> None:
    characters = [
        chr(code)
        for low, high in BLOCKS
        for code in range(low, high + 1)
        if code not in NOT_COMPARED and unicodedata.category(chr(code)) not in ("Cn", "Co", "Cs", "Cc")
    ]
    folded = _js_fold(page, characters)
    differ = [(f"U+{ord(c):04X}", js, fold(c)) for c, js in zip(characters, folded, strict=True) if js != fold(c)]
    assert not differ, differ[:20]


@pytest.mark.browser
@settings(max_examples=150, deadline=None)
@given(texts=st.lists(WORDS, min_size=1, max_size=20))
def test_the_memory_filter_folds_any_text_of_many_scripts_as_the_cli_does(page: object, texts: list[str]) -> None:
    assert _js_fold(page, texts) == [fold(text) for text in texts]
