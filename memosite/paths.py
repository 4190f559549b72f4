"""Path patterns: how a record's ``pathPatterns`` cover a file or directory of the product.

``*`` and ``?`` stay inside one segment, ``**`` spans any number of segments, a pattern names its
whole subtree (``migrations/versions`` covers ``migrations/versions/0012.py``), and a directory
given as the path covers the patterns beneath it (``src/payments`` finds ``src/payments/client.py``).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable

from memosite.errors import InvalidArguments


def normalize_path(path: str) -> str:
    """A path as patterns are stored: forward slashes, no leading ``./``, no ``/`` at the ends."""
    if not isinstance(path, str) or "\x00" in path:
        raise InvalidArguments(f"invalid path {path!r}")
    cleaned = path.strip().replace("\\", "/")
    while cleaned.startswith("./"):
        cleaned = cleaned[2:]
    cleaned = re.sub(r"/{2,}", "/", cleaned).strip("/")
    if not cleaned:
        raise InvalidArguments("--path must not be empty")
    return cleaned


@functools.lru_cache(maxsize=4096)
def _pattern_regex(pattern: str) -> re.Pattern[str]:
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        char = pattern[i]
        if char == "*":
            if pattern.startswith("**", i):
                i += 2
                if i < n and pattern[i] == "/":
                    out.append("(?:.*/)?")
                    i += 1
                else:
                    out.append(".*")
                continue
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif char == "[":
            close = pattern.find("]", i + 2 if pattern[i + 1 : i + 2] in ("!", "^") else i + 1)
            if close == -1:
                out.append(re.escape(char))
            else:
                inner = pattern[i + 1 : close]
                negate = inner[:1] in ("!", "^")
                inner = inner[1:] if negate else inner
                out.append(f"[{'^/' if negate else ''}{inner.replace(chr(92), chr(92) * 2)}]")
                i = close
        else:
            out.append(re.escape(char))
        i += 1
    # A pattern also names everything beneath it: a directory pattern covers its files.
    return re.compile("".join(out) + r"(?:/.*)?", re.DOTALL)


def _literal_prefix(pattern: str) -> str:
    segments = []
    for segment in pattern.split("/"):
        if any(char in segment for char in "*?["):
            break
        segments.append(segment)
    return "/".join(segments)


def _normalized(raw: str) -> str:
    return raw.strip().replace("\\", "/").removeprefix("./").strip("/")


def literal_prefixes(patterns: Iterable[str]) -> list[str]:
    """The literal start of each pattern, whole segments up to the first with a wildcard (empty for
    a pattern that starts with one). A pattern can cover a path only when its literal start is the
    path, one of the path's parent directories, or a directory beneath the path: an index of these
    finds the few patterns worth testing against a path."""
    return sorted({_literal_prefix(pattern) for pattern in map(_normalized, patterns) if pattern})


def path_ancestors(path: str) -> list[str]:
    """``""``, then each parent directory of ``path``, then ``path`` itself."""
    parts = path.split("/")
    return ["", *("/".join(parts[:n]) for n in range(1, len(parts) + 1))]


def path_matches(patterns: Iterable[str], path: str) -> bool:
    """True when one of ``patterns`` covers ``path`` (see the module docstring for the rules)."""
    for raw in patterns:
        pattern = _normalized(raw)
        if not pattern:
            continue
        if _pattern_regex(pattern).fullmatch(path):
            return True
        prefix = _literal_prefix(pattern)
        if prefix == path or prefix.startswith(path + "/"):
            return True
    return False
