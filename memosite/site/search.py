"""Site search that reads text the way the CLI's search does (:mod:`memosite.text`).

Two things make the published site's search find what ``memosite search`` finds:

* :func:`separator` — the word separator given to the site's search (Material's lunr, Zensical):
  punctuation splits words, and every character of a script written without spaces (Chinese,
  Japanese, Korean, Thai, ...) is a word of its own, so ``锁表`` finds a record holding
  ``数据库迁移会锁表几分钟`` (the query is split the same way; records holding every character
  rank first). Only characters of the Basic Multilingual Plane are listed: the search engines
  compile the pattern without the ``u`` flag.
* :func:`folded_fields` — for each search entry whose text changes under :func:`memosite.text.fold`
  beyond case (``Café`` → ``cafe``, ``Zoë`` → ``zoe``, ``счёт`` → ``счет``), the folded words in
  extra fields the search engine indexes but never shows. ``cafe`` then finds "Café" while the
  result still reads "Café"; most entries (plain ASCII) get none. Zensical folds diacritics itself.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from typing import Any

from memosite.text import UNSPACED_RANGES, WORD_PATTERN, fold

# Extra fields of the search index, and the boost each has (the one of the field it folds).
FOLDED_FIELDS = {"title_folded": "title", "text_folded": "text"}
_TAGS = re.compile(r"<[^>]*>")
_WORD_RE = re.compile(WORD_PATTERN)
_ENTITY = re.compile(r"&(?:[a-zA-Z]+|#\d+|#x[0-9a-fA-F]+);")
# Punctuation that separates words, as FTS5's tokenizer reads it (and a full stop not in a number).
# Written so that JavaScript reads it alike with and without the "u" flag (no needless escapes).
_PUNCTUATION = "[\\s\\-_,:;!?=\\[\\]()\\\\\"'`/|<>{}*#~]+|\\.(?!\\d)"


@functools.cache
def separator() -> str:
    """The search separator: punctuation, and the edges of every unspaced character."""
    bmp = [(low, high) for low, high in UNSPACED_RANGES if high <= 0xFFFF]
    unspaced = "".join(f"\\u{low:04x}-\\u{high:04x}" for low, high in bmp)
    return f"{_PUNCTUATION}|(?=[{unspaced}])|(?<=[{unspaced}])"


def _plain(html_text: str) -> str:
    return _ENTITY.sub(" ", _TAGS.sub(" ", html_text))


@functools.cache
def _separator_re() -> re.Pattern[str]:
    return re.compile(separator())


def folded_words(text: str) -> str:
    """The words of ``text`` that :func:`memosite.text.fold` changes beyond case, folded, once
    each, in order ("" when there are none).

    The words are the ones the site's search indexes: ``text`` split by :func:`separator`, so a
    combining mark stays with its letter (``Замо́к`` with a stress mark is one word, ``замок``)."""
    if text.isascii():
        return ""
    seen: dict[str, None] = {}
    for word in _separator_re().split(text):
        if not word or word.isascii():
            continue
        folded = fold(word)
        if folded != unicodedata.normalize("NFKC", word.casefold()):
            # Folding can leave a space or nothing (a lone mark): only the pieces that are words.
            for piece in _WORD_RE.findall(folded):
                seen.setdefault(piece, None)
    return " ".join(seen)


def folded_fields(doc: dict[str, Any]) -> dict[str, str]:
    """The folded fields of one search entry (title and text; tags count as title)."""
    found: dict[str, str] = {}
    tags = " ".join(str(tag) for tag in doc.get("tags") or ())
    title = folded_words(f"{_plain(str(doc.get('title', '')))} {tags}")
    text = folded_words(_plain(str(doc.get("text", ""))))
    if title:
        found["title_folded"] = title
    if text:
        found["text_folded"] = text
    return found


def with_folded_fields(config: dict[str, Any], docs: list[dict[str, Any]]) -> dict[str, Any]:
    """``config`` of a Material search index with the folded fields added (boosted as the fields
    they fold); ``docs`` gain theirs in place."""
    for doc in docs:
        doc.update(folded_fields(doc))
    fields = dict(config.get("fields") or {})
    for name, source in FOLDED_FIELDS.items():
        fields.setdefault(name, dict(fields.get(source) or {"boost": 1.0}))
    return {**config, "fields": fields}
