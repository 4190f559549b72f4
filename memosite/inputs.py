"""What every front end checks of the raw arguments it was given, before the core sees them.

Some values pass any type check and still cannot be handled anywhere: an integer beyond SQLite's
64-bit range, or text holding a lone surrogate (a broken UTF-16 half that no file, index or JSON
output can encode). Both are refused here with INVALID_ARGUMENTS naming the argument.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from memosite.errors import InvalidArguments

MAX_INTEGER = 2**63 - 1


def _has_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _problem(value: Any, depth: int = 0) -> str | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return "is too large a number" if abs(value) > MAX_INTEGER else None
    if isinstance(value, str):
        return "holds text that is not valid Unicode (an unpaired surrogate)" if _has_surrogate(value) else None
    if depth > 50:
        return "is nested too deeply"
    if isinstance(value, Mapping):
        for key, item in value.items():
            problem = _problem(key, depth + 1) or _problem(item, depth + 1)
            if problem:
                return problem
    elif isinstance(value, (list, tuple)):
        for item in value:
            problem = _problem(item, depth + 1)
            if problem:
                return problem
    return None


def check_arguments(arguments: Mapping[str, Any], *, spell: Any = None) -> None:
    """INVALID_ARGUMENTS naming the first argument that no part of memosite could handle.
    ``spell`` turns an argument's name into how the caller wrote it (``--limit``)."""
    for name, value in arguments.items():
        problem = _problem(value)
        if problem:
            shown = spell(name) if spell is not None else name
            raise InvalidArguments(f"{shown} {problem}", details={"argument": str(shown)})
