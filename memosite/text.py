"""Text in every script: folding, word tokens and slugs.

* :func:`fold` — what two spellings of a word share: Unicode-normalised (NFKC), case-folded, with
  the diacritics of Latin, Greek and Cyrillic letters removed (``Café`` → ``cafe``).
* :func:`tokens` — the words of a text for comparing texts. Scripts written without spaces
  (Chinese, Japanese, Korean syllables) have no words to split on, so each run of them gives its
  character bigrams (a single character stands alone): ``数据库迁移`` → ``数据 据库 库迁 迁移``.
  Pictographs (emoji, dingbats) are read the same way: they are not letters, so a word tokenizer
  drops them, yet ``⚠️`` or ``🚀`` is what someone searching for them typed.
* :func:`slugify` — a file name for a title: letters of any script transliterated to ASCII
  (``anyascii``: ``Миграция`` → ``migratsiya``, ``数据`` → ``shu-ju``), everything else a hyphen.
  Slugs stay ASCII on purpose: file systems normalise non-ASCII names differently (macOS stores
  them decomposed), URLs escape them, and look-alike letters would make two slugs that read the same.
"""

from __future__ import annotations

import functools
import re
import unicodedata

# Ideographs, kana, Hangul and the other scripts written without spaces between words, and the
# pictographs of emoji: the characters a word index cannot see.
UNSPACED_RANGES = (
    (0x3040, 0x30FF),  # Hiragana, Katakana
    (0x31F0, 0x31FF),  # Katakana extensions
    (0x3400, 0x4DBF),  # CJK extension A
    (0x4E00, 0x9FFF),  # CJK unified ideographs
    (0xAC00, 0xD7AF),  # Hangul syllables
    (0xF900, 0xFAFF),  # CJK compatibility ideographs
    (0x20000, 0x3134F),  # CJK extensions B–G
    (0x0E00, 0x0E7F),  # Thai
    (0x0E80, 0x0EFF),  # Lao
    (0x1000, 0x109F),  # Myanmar
    (0x1780, 0x17FF),  # Khmer
    (0x2600, 0x27BF),  # Miscellaneous symbols, dingbats (⚠ ✅ ❌ ❤ ✨)
    (0x2B50, 0x2B55),  # ⭐ and the other stars and circles of the emoji set
    (0x1F000, 0x1FAFF),  # Emoji: pictographs, emoticons, transport, flags, supplemental symbols
)
# A word: letters, digits and underscore of any script, or a run of the characters above (the
# pictographs are no word characters to ``\w``). Every tokenizer of memosite uses this one pattern.
_UNSPACED_SET = "".join(f"{chr(low)}-{chr(high)}" for low, high in UNSPACED_RANGES)  # no ASCII to escape
WORD_PATTERN = f"[\\w{_UNSPACED_SET}]+"
_WORD_RE = re.compile(WORD_PATTERN)


# The two patterns below take milliseconds to compile, and most commands never need them (text
# in ASCII alone has no unspaced characters): compiled on first use.
@functools.cache
def _unspaced_char_re() -> re.Pattern[str]:
    return re.compile(f"[{_UNSPACED_SET}]")


@functools.cache
def _run_re() -> re.Pattern[str]:
    return re.compile(f"[{_UNSPACED_SET}]+|[^{_UNSPACED_SET}]+")


def is_unspaced(char: str) -> bool:
    """True for a character of a script written without spaces between words (or a pictograph)."""
    return not char.isascii() and _unspaced_char_re().match(char) is not None


def has_unspaced(text: str) -> bool:
    """True when ``text`` holds a character :func:`is_unspaced` (what the trigram table is for)."""
    return not text.isascii() and _unspaced_char_re().search(text) is not None


def fold(text: str) -> str:
    """NFKC, case-folded, combining marks removed (see the module docstring)."""
    if text.isascii():
        return text.lower()  # what the general path gives for ASCII, without its pass per character
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    stripped = "".join(char for char in decomposed if not unicodedata.combining(char))
    return unicodedata.normalize("NFKC", stripped)


def words(text: str) -> list[str]:
    """The folded words of ``text``; a run of an unspaced script is one word here."""
    return _WORD_RE.findall(fold(text))


def _split_unspaced(word: str) -> list[str]:
    """A word into its spaced parts and its runs of unspaced characters, in order."""
    return [word] if word.isascii() else _run_re().findall(word)


def bigrams(run: str) -> list[str]:
    """Character bigrams of a run of an unspaced script (the run itself when it is one character)."""
    if len(run) < 2:
        return [run]
    return [run[i : i + 2] for i in range(len(run) - 1)]


def tokens(text: str) -> set[str]:
    """The word tokens of ``text`` in every script (see the module docstring)."""
    found: set[str] = set()
    for word in words(text):
        for part in _split_unspaced(word):
            if is_unspaced(part[0]):
                found.update(bigrams(part))
            else:
                found.add(part)
    return found


def jaccard(left: str, right: str) -> float:
    """Token overlap of two texts; 0.0 when either has no tokens (nothing to call similar)."""
    a, b = tokens(left), tokens(right)
    if not a or not b:
        return 0.0
    return len(a & b) / len(a | b)


def slugify(text: str, max_length: int = 80) -> str:
    """An ASCII slug for ``text``, cut at a hyphen to at most ``max_length`` characters; empty when
    nothing in ``text`` transliterates to a letter or digit."""
    if text.isascii():
        ascii_text = text.lower()
    else:  # each unspaced character on its own, so that its transliteration is a word of the slug
        from anyascii import anyascii  # its tables load on first use: most slugs are ASCII

        ascii_text = anyascii(_unspaced_char_re().sub(r" \g<0> ", unicodedata.normalize("NFKC", text))).lower()
    slug = re.sub(r"[^a-z0-9]+", "-", ascii_text).strip("-")
    if len(slug) <= max_length:
        return slug
    cut = slug[: max_length + 1]
    return (cut.rsplit("-", 1)[0] if "-" in cut else cut[:max_length]).rstrip("-")


def suggest_ascii(name: object) -> str:
    """`` (try 'migratsiya')`` for a name written in another script, to end a message refusing it."""
    if not isinstance(name, str) or name.isascii():
        return ""
    suggestion = slugify(name)
    return f" (try {suggestion!r})" if suggestion else ""


def counted(count: int, one: str, many: str | None = None) -> str:
    """``1 record``, ``3 records``: a count with its noun in the right number."""
    return f"{count} {one if count == 1 else (many or one + 's')}"
