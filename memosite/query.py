"""What a query asks for: its terms in every script, as ``search``, ``bootstrap`` and MCP search use them.

:func:`parse_query` reads what an agent or a person typed — usually a sentence — into a
:class:`ParsedQuery`:

* **Words** of spaced scripts. Stop words (``how``, ``do``, ``the``, ``why``, ``qué``, ``der`` …) are
  dropped unless nothing else is left. Each word is searched as written, in its compatibility form
  (fullwidth ``ｐａｙ`` → ``pay``) and folded (``Straße`` → ``strasse``, ``Ελληνικά`` → ``ελληνικα``);
  the index's tokenizer removes Latin diacritics on both sides, so ``cafe`` finds ``café``. The last
  word is also a prefix (``retr`` finds ``retries``), as is any word written with a ``*``.
* **Phrases** in double quotes stay phrases.
* **Unspaced runs** — Chinese, Japanese, Thai and the other scripts written without spaces (and
  Hangul, whose words carry their particles) — are searched as substrings. A run is cut at
  function characters (``的``, ``吗``, ``の``, ``を`` …) into the parts that must all occur.

:meth:`ParsedQuery.all_terms` is the strict reading: every term. :meth:`ParsedQuery.any_terms` is
the loose one used when the strict reading finds too little: any term counts, and an unspaced
part also counts through its character pairs and characters (``锁表`` finds ``会锁住订单表``), so a
record holding more of them ranks higher.

A query that uses FTS5 syntax (``AND``/``OR``/``NOT``, ``NEAR(…)``, ``title:``/``body:``/``tags:``,
parentheses, ``^``) is first tried as written (:attr:`ParsedQuery.raw`); when SQLite rejects it, or
it finds nothing (a sentence about ``NOT NULL`` columns is not meant as FTS5), its words are searched
as plain words instead.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from memosite.index.fts import Terms
from memosite.text import WORD_PATTERN, bigrams, fold, is_unspaced

# Questions in English and the other languages agents ask in: words that say nothing about what to find.
_STOP_WORDS_TEXT = """
a about above after again against all am an and any are as at be because been before being below between both
but by can could did do does doing done down during each either few for from further had has have having he
her here hers him his how i if in into is it its itself just me more most my myself no nor not now of off on
once only or other our ours out over own same she should so some such than that the their theirs them then
there these they this those through to too under until up very was we were what whats when where which while
who whom whose why will with would you your yours yourself happen happens happened happening
work works use uses using used get gets go goes thing things way ways
s t d ll m re ve don doesn didn isn aren wasn weren won wouldn shouldn couldn cannot
le la les un une des du de et est sont pour dans sur avec que qui quoi pas ne se ce ces au aux ou comment
pourquoi quand quel quelle quels quelles il elle nous vous ils elles mon ma mes notre nos
el los las del por con para una unos unas es son lo como cuando donde porque por que cual cuales esta este
o os um uma do da dos das no na nos nas em com nao porquê quando onde qual quais
der das und ist sind nicht ein eine einen einem einer mit von zu im den dem wenn wie warum was wo welche welcher
il lo gli di che non per con perche come quando dove
"""
STOP_WORDS = frozenset(fold(word) for word in _STOP_WORDS_TEXT.split())
# Function characters of Chinese and Japanese that are (almost) never part of a content word: final
# and aspect particles, the passive marker, demonstratives; Japanese case particles. Characters that
# also start or end common words (在 in 现在 and 在庫, 会 in 会话, 过 in 过期) are not among them.
_STOP_CHARS_TEXT = "的了吗呢吧啊嘛呀被这那" + "のはがをにでともへやかねよ"
STOP_CHARS = frozenset(_STOP_CHARS_TEXT)
# Question phrases of Chinese and Japanese, taken out before the characters above split a run.
_STOP_PHRASES_TEXT = """
怎么办 为什么 为何 什么 怎么样 怎么 如何 是否 可以 能否 应该 需要 哪里 哪个 的话
なぜ どうして どうすれば どう ですか ますか について とは には では ください
"""
STOP_PHRASES = tuple(sorted(_STOP_PHRASES_TEXT.split(), key=len, reverse=True))
MAX_ANY_TERMS = 32  # an unspaced sentence expands into pairs and characters; more add noise, not recall
_MIN_PREFIX = 3  # "ui*" or "a*" would match half the vocabulary
_TERM_RE = re.compile(f'"([^"]*)"|({WORD_PATTERN})(\\*?)')
_OPERATORS = frozenset({"AND", "OR", "NOT", "NEAR"})
_FTS_SYNTAX = re.compile(
    r"(?:^|[\s(])(?:AND|OR|NOT)(?=$|[\s(\"])|NEAR\s*\(|(?:^|[\s(\-+])(?:title|body|tags)\s*:|[(){}^]"
)


@dataclass(frozen=True)
class Term:
    """One thing a query asks for.

    ``kind`` is ``word`` (a word of a spaced script), ``phrase`` (quoted words) or ``unspaced`` (a
    substring of a script without spaces). ``prefix`` words also match longer words."""

    kind: str
    text: str
    prefix: bool = False

    @property
    def label(self) -> str:
        """How the term is shown back: ``retr*``, ``"memory leak"``, ``锁表``."""
        if self.kind == "phrase":
            return f'"{self.text}"'
        return f"{self.text}*" if self.prefix else self.text

    def fts(self) -> str:
        """The term as one FTS5 expression over the word table (its spellings OR-ed)."""
        star = "*" if self.prefix else ""
        spellings = [f'"{variant.replace(chr(34), chr(34) * 2)}"{star}' for variant in _variants(self.text)]
        return spellings[0] if len(spellings) == 1 else f"({' OR '.join(spellings)})"


@dataclass(frozen=True)
class ParsedQuery:
    """A query read into terms (see the module docstring)."""

    text: str
    terms: tuple[Term, ...] = ()
    raw: str | None = None  # the text as an FTS5 query, when it uses FTS5 syntax
    loose_terms: tuple[Term, ...] = ()  # the any-term reading (see any_terms)

    @property
    def empty(self) -> bool:
        return not self.terms and self.raw is None

    def all_terms(self) -> Terms:
        """Every term must match."""
        return _to_index(self.terms)

    def any_terms(self) -> Terms:
        """Any term may match: the words and phrases, and the pairs and characters of unspaced parts."""
        return _to_index(self.loose_terms)

    @property
    def loosens(self) -> bool:
        """Whether the loose reading can find more than the strict one."""
        return len(self.loose_terms) > 1 or self.loose_terms != self.terms

    def labels(self, loose: bool = False) -> list[str]:
        return [term.label for term in (self.loose_terms if loose else self.terms)]


def _variants(text: str) -> list[str]:
    """The spellings a word is searched under: as written, compatibility form, folded, and its other
    English spelling (:func:`english_spellings`)."""
    seen: dict[str, str] = {}
    for variant in (text, unicodedata.normalize("NFKC", text), fold(text), *english_spellings(text)):
        seen.setdefault(variant.lower(), variant)  # the word index lower-cases, it does not case-fold
    return list(seen.values())


# British and American spellings of one English word. The index's porter stemmer folds inflections
# (``executing`` finds ``execution``) but not spellings: ``organising`` stems to ``organis`` and
# ``organizing`` to ``organ``, ``licence`` and ``license`` stay apart. Each rule swaps one ending for
# the other; a spelling no record uses costs one empty posting lookup, so the rules may overshoot.
_SPELLING_ENDINGS = (
    # organise/organize, serialising/serializing, normalisation/normalization, optimiser/optimizer
    (re.compile(r"(?<=[a-z]{3})is(e|es|ed|ing|ation|ations|er|ers)$"), r"iz\1"),
    (re.compile(r"(?<=[a-z]{3})iz(e|es|ed|ing|ation|ations|er|ers)$"), r"is\1"),
    # analyse/analyze, paralysed/paralyzed
    (re.compile(r"(?<=[a-z]{2})ys(e|es|ed|ing|er|ers)$"), r"yz\1"),
    (re.compile(r"(?<=[a-z]{2})yz(e|es|ed|ing|er|ers)$"), r"ys\1"),
    # colour/color, behaviours/behaviors, favourite/favorite (four, hour, your: too short to change)
    (re.compile(r"(?<=[a-z]{3})our(s|ed|ing|ite|ites|able)?$"), r"or\1"),
    # centre/center, fibres/fibers
    (re.compile(r"(?<=[a-z]{2})([tb])re(s|d)?$"), r"\1er\2"),
    # catalogue/catalog, dialogues/dialogs
    (re.compile(r"(?<=[a-z]{3})ogue(s)?$"), r"og\1"),
)
# Nouns in -ence whose American spelling ends in -ense (most -ence words have one spelling only).
_ENCE_NOUNS = frozenset({"licence", "defence", "offence", "pretence"})


def english_spellings(word: str) -> list[str]:
    """The other spellings of an English ``word`` (British ``organise`` → ``organize``, American
    ``license`` → ``licence`` …), lower-cased; none for a word of another language or script."""
    lowered = word.lower()
    if not lowered.isascii() or not lowered.isalpha() or len(lowered) < 5:
        return []
    found = [pattern.sub(replacement, lowered) for pattern, replacement in _SPELLING_ENDINGS]
    stem = lowered[:-1] if lowered.endswith("s") else lowered
    plural = lowered[len(stem) :]
    if stem in _ENCE_NOUNS:
        found.append(f"{stem[:-4]}ense{plural}")
    elif stem.endswith("ense") and f"{stem[:-4]}ence" in _ENCE_NOUNS:
        found.append(f"{stem[:-4]}ence{plural}")
    return [spelling for spelling in dict.fromkeys(found) if spelling != lowered]


def _to_index(terms: tuple[Term, ...]) -> Terms:
    return Terms(
        words=tuple(term.fts() for term in terms if term.kind != "unspaced"),
        substrings=tuple(term.text for term in terms if term.kind == "unspaced"),
    )


def is_stop_word(word: str) -> bool:
    """A word that says nothing about what to find: a stop word, or a lone letter (``c`` of ``c++``)."""
    folded = fold(word)
    return folded in STOP_WORDS or (len(folded) == 1 and folded.isalpha())


def uses_fts_syntax(text: str) -> bool:
    """True when ``text`` uses FTS5 operators, column filters or grouping."""
    return bool(_FTS_SYNTAX.search(text))


def _split_runs(word: str) -> list[tuple[bool, str]]:
    """``word`` into its runs of spaced and of unspaced characters, in order."""
    runs: list[tuple[bool, str]] = []
    for char in word:
        unspaced = is_unspaced(char)
        if runs and runs[-1][0] == unspaced:
            runs[-1] = (unspaced, runs[-1][1] + char)
        else:
            runs.append((unspaced, char))
    return runs


def _is_kana(char: str) -> bool:
    return 0x3040 <= ord(char) <= 0x30FF


def unspaced_parts(run: str) -> list[str]:
    """A run of an unspaced script cut at its function characters; lone kana are dropped (they are
    endings, not words). The run itself when nothing else would be left."""
    cut = run
    for phrase in STOP_PHRASES:
        cut = cut.replace(phrase, " ")
    parts = [part for part in re.split(f"[\\s{re.escape(_STOP_CHARS_TEXT)}]+", cut) if part]
    parts = [part for part in parts if len(part) > 1 or not _is_kana(part)]
    return parts or [run]


def _loose_unspaced(part: str) -> list[Term]:
    """A part's character pairs, and its characters that carry meaning alone (not kana)."""
    if len(part) < 2:
        return [Term("unspaced", part)]
    singles = [char for char in part if char not in STOP_CHARS and not _is_kana(char)]
    return [Term("unspaced", piece) for piece in dict.fromkeys([*bigrams(part), *singles])]


def parse_query(text: str, *, plain: bool = False) -> ParsedQuery:
    """Read ``text`` into terms (see the module docstring). ``plain`` ignores FTS5 syntax: the
    words of a query SQLite rejected."""
    text = " ".join(text.split())
    raw = text if not plain and uses_fts_syntax(text) else None
    normalized = unicodedata.normalize("NFKC", text)
    if normalized.count('"') % 2:
        normalized = normalized.replace('"', " ")  # an unbalanced quote is punctuation, not a phrase
    found: list[Term] = []
    matches = list(_TERM_RE.finditer(normalized))
    for position, match in enumerate(matches):
        phrase, word, star = match.groups()
        if phrase is not None:
            words = phrase.split()
            if not any(char.isalnum() or is_unspaced(char) for char in phrase):
                continue  # nothing the index holds a token for
            joined = " ".join(words)
            if any(is_unspaced(char) for char in joined):
                found.append(Term("unspaced", joined))
            else:
                found.append(Term("phrase", joined))
            continue
        if (plain or raw) and word in _OPERATORS:
            continue  # in a query SQLite rejected, AND/OR/NOT/NEAR were meant as operators
        runs = _split_runs(word)
        last = position == len(matches) - 1
        for index, (unspaced, run) in enumerate(runs):
            if unspaced:
                found.extend(Term("unspaced", part) for part in unspaced_parts(run))
                continue
            final = last and index == len(runs) - 1
            prefix = bool(star) or (final and len(run) >= _MIN_PREFIX and not run.isdigit() and not is_stop_word(run))
            found.append(Term("word", run, prefix=prefix))
    kept = [t for t in found if t.kind != "word" or not is_stop_word(t.text)] or found
    terms = tuple(dict.fromkeys(kept))
    loose: list[Term] = []
    for term in terms:
        loose.extend(_loose_unspaced(term.text) if term.kind == "unspaced" else [term])
    return ParsedQuery(text, terms, raw, tuple(dict.fromkeys(loose))[:MAX_ANY_TERMS])
