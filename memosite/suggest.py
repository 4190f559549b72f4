"""Near misses: what a mistyped id, command or name was most likely meant to be.

One rule for every "did you mean" memosite prints: the closest few of the known names by
:func:`difflib.get_close_matches` (similarity 0.6 or more), compared case and accents aside, plus
a name one typo away (difflib's matching blocks undercount a repetitive name such as ``aaaa-0000``)
and a known name that starts with what was typed (an id given short). Nothing is suggested when
nothing is close: a wrong guess is worse than none.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

from memosite.text import fold

MAX_SUGGESTIONS = 3
SIMILARITY = 0.6
_MIN_PREFIX = 3  # "ab" is the start of too many names to mean any one of them
_MIN_TYPO_LENGTH = 4  # "v" is one typo away from every one-letter name


def near_misses(typed: str, known: Iterable[str], limit: int = MAX_SUGGESTIONS) -> list[str]:
    """The known names closest to ``typed`` (best first, at most ``limit``), never ``typed`` itself."""
    if not isinstance(typed, str) or not typed.strip():
        return []
    wanted = fold(typed.strip())
    by_folded: dict[str, str] = {}
    for name in known:
        if isinstance(name, str) and name and name != typed:
            by_folded.setdefault(fold(name), name)
    close = [name for name in by_folded if _one_typo_apart(wanted, name)]
    close += [
        name
        for name in difflib.get_close_matches(wanted, list(by_folded), n=limit, cutoff=SIMILARITY)
        if name not in close
    ]
    if len(wanted) >= _MIN_PREFIX:
        close += sorted(name for name in by_folded if name.startswith(wanted) and name not in close)
    return [by_folded[name] for name in close[:limit]]


def _one_typo_apart(typed: str, name: str) -> bool:
    """One character replaced, added or left out (``typed`` differs from ``name``)."""
    if abs(len(typed) - len(name)) > 1 or typed == name or max(len(typed), len(name)) < _MIN_TYPO_LENGTH:
        return False
    start = 0
    while start < min(len(typed), len(name)) and typed[start] == name[start]:
        start += 1
    end = 0
    while end < min(len(typed), len(name)) - start and typed[-1 - end] == name[-1 - end]:
        end += 1
    return max(len(typed), len(name)) - start - end <= 1


def did_you_mean(suggestions: Iterable[str]) -> str:
    """`` (did you mean a, b or c?)`` for an error message; empty when there is nothing to offer."""
    names = list(suggestions)
    if not names:
        return ""
    listed = names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"
    return f" (did you mean {listed}?)"
