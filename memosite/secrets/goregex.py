"""Go RE2 patterns as Python ``re`` patterns: what gitleaks' rule file needs, and no more.

RE2 and Python agree on most syntax. Where they differ, :func:`translate` rewrites:

* a flag group mid-pattern (``\\b(p8e-(?i)[a-z0-9]{32})``): RE2 applies it to the end of the
  enclosing group, Python refuses it outside the start; it becomes a scoped group ``(?i:…)``
  closed where the enclosing group (or an alternative of it) ends;
* ``\\z`` (end of text) becomes Python's ``\\Z``;
* POSIX classes inside brackets (``[[:alnum:]]``) become their ASCII ranges;
* a bracket expression's ``[`` and doubled ``-&~|`` are escaped, so Python reads no nested set.

Patterns are compiled with :data:`FLAGS`: RE2's ``\\w``, ``\\d``, ``\\s`` and ``\\b`` are ASCII.
"""

from __future__ import annotations

import re

FLAGS = re.ASCII

_POSIX = {
    "alnum": "A-Za-z0-9",
    "alpha": "A-Za-z",
    "ascii": "\\x00-\\x7f",
    "blank": "\\t ",
    "cntrl": "\\x00-\\x1f\\x7f",
    "digit": "0-9",
    "graph": "!-~",
    "lower": "a-z",
    "print": " -~",
    "punct": "!-/:-@\\[-`{-~",
    "space": "\\t\\n\\v\\f\\r ",
    "upper": "A-Z",
    "word": "A-Za-z0-9_",
    "xdigit": "0-9A-Fa-f",
}
_FLAG_GROUP = re.compile(r"\(\?([imsU-]+)\)")
_CLASS_SPECIAL = frozenset("[]\\^-&~|")


class UnsupportedPattern(ValueError):
    """A pattern uses RE2 syntax that has no Python equivalent here."""


def translate(pattern: str) -> str:
    """``pattern`` (Go RE2 syntax) rewritten so Python's ``re`` matches the same strings."""
    out: list[str] = []
    # One entry per open group: how many scoped flag groups were opened inside it at its level.
    opened: list[int] = [0]
    scoped: list[list[str]] = [[]]  # the flags of those scoped groups, to reopen after "|"
    index, size = 0, len(pattern)
    while index < size:
        char = pattern[index]
        if char == "\\":
            escape = pattern[index : index + 2]
            if escape == "\\z":
                escape = "\\Z"
            elif escape in ("\\Q", "\\C") or escape.startswith("\\p") or escape.startswith("\\P"):
                raise UnsupportedPattern(f"{escape} at position {index}")
            out.append(escape)
            index += 2
        elif char == "[":
            text, index = _bracket(pattern, index)
            out.append(text)
        elif char == "(":
            flags = _FLAG_GROUP.match(pattern, index)
            if flags is not None:
                if "U" in flags.group(1):
                    raise UnsupportedPattern(f"ungreedy flag at position {index}")
                out.append(f"(?{flags.group(1)}:")
                opened[-1] += 1
                scoped[-1].append(flags.group(1))
                index = flags.end()
            else:
                out.append(char)
                opened.append(0)
                scoped.append([])
                index += 1
        elif char == "|":
            out.append(")" * opened[-1] + "|" + "".join(f"(?{flag}:" for flag in scoped[-1]))
            index += 1
        elif char == ")":
            out.append(")" * opened.pop() + ")")
            scoped.pop()
            if not opened:
                raise UnsupportedPattern(f"unbalanced ')' at position {index}")
            index += 1
        else:
            out.append(char)
            index += 1
    if len(opened) != 1:
        raise UnsupportedPattern("unbalanced '('")
    out.append(")" * opened[0])
    return "".join(out)


def _bracket(pattern: str, start: int) -> tuple[str, int]:
    """The bracket expression at ``start`` in Python syntax, and the index after it."""
    index = start + 1
    parts = ["["]
    if pattern.startswith("^", index):
        parts.append("^")
        index += 1
    first = True
    while True:
        if index >= len(pattern):
            raise UnsupportedPattern(f"unterminated bracket expression at position {start}")
        char = pattern[index]
        if char == "]" and not first:
            parts.append("]")
            return "".join(parts), index + 1
        first = False
        if char == "[" and pattern.startswith("[:", index):
            end = pattern.find(":]", index + 2)
            name = pattern[index + 2 : end] if end != -1 else ""
            negated = name.startswith("^")
            if end == -1 or name.lstrip("^") not in _POSIX or negated:
                raise UnsupportedPattern(f"bracket class at position {index}")
            parts.append(_POSIX[name])
            index = end + 2
        elif char == "\\":
            parts.append(pattern[index : index + 2])
            index += 2
        elif char == "-" and parts[-1] not in ("[", "^") and not pattern.startswith("]", index + 1):
            parts.append("-")  # a range between the items on either side
            index += 1
        elif char in _CLASS_SPECIAL:
            parts.append("\\" + char)
            index += 1
        else:
            parts.append(char)
            index += 1
