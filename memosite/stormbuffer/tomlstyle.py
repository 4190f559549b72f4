"""TOML text laid out the way Stormbuffer's ``toml`` crate (0.8.23, toml_edit 0.22) writes it.

Stormbuffer renders records with ``toml::to_string_pretty`` and ``store.toml`` with
``toml::to_string``. Writing the same bytes means a file rewritten by memosite and one rewritten
by ``sbuf`` are identical, so neither tool shows a spurious diff in the other's store.

What the crate does for the values Stormbuffer has (strings, integers, arrays of strings, arrays
of tables of strings):

* a string is written basic (``"…"``) when it needs no escape, no ``"`` and no newline; else
  literal (``'…'``) when it has no ``'``, no newline and no control character; else multi-line
  basic or literal when those fit; else basic with escapes (``\\b \\t \\n \\f \\r \\" \\\\``,
  ``\\uXXXX`` for other control bytes);
* pretty output puts an array of two or more items one per line, indented four spaces, with a
  trailing comma; shorter arrays stay on one line;
* an array of tables becomes ``[[name]]`` sections, each after a blank line.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

TomlScalar = str | int
TomlValue = TomlScalar | Sequence[str]

_ESCAPES = {0x08: "\\b", 0x09: "\\t", 0x0A: "\\n", 0x0C: "\\f", 0x0D: "\\r", 0x5C: "\\\\"}


def _is_escape_code(code: int) -> bool:
    return (code <= 0x1F and code not in (0x09, 0x0A)) or code == 0x7F


def _longest_run(value: str, char: str) -> int:
    longest = run = 0
    for item in value:
        run = run + 1 if item == char else 0
        longest = max(longest, run)
    return longest


def _escaped(value: str, *, multiline: bool) -> str:
    out: list[str] = []
    quotes = 0
    limit = 2 if multiline else 0
    for char in value:
        code = ord(char)
        if char == '"':
            quotes += 1
            out.append('\\"' if quotes > limit else '"')
            if quotes > limit:
                quotes = 0
            continue
        quotes = 0
        if code == 0x0A and multiline:
            out.append(char)
        elif code in _ESCAPES:
            out.append(_ESCAPES[code])
        elif code <= 0x1F or code == 0x7F:
            out.append(f"\\u{code:04X}")
        else:
            out.append(char)
    return "".join(out)


def toml_string(value: str) -> str:
    """One string value as toml_edit's default representation writes it."""
    escape_codes = any(_is_escape_code(ord(char)) for char in value)
    backslash = "\\" in value
    newline = "\n" in value
    doubles = _longest_run(value, '"')
    singles = _longest_run(value, "'")
    if not (escape_codes or backslash or doubles or newline):
        return f'"{_escaped(value, multiline=False)}"'
    if not (escape_codes or singles or newline):
        return f"'{value}'"
    lead = "\n" if newline else ""
    if not (escape_codes or backslash or doubles > 2):
        return f'"""{lead}{_escaped(value, multiline=True)}"""'
    if not (escape_codes or singles > 2):
        return f"'''{lead}{value}'''"
    if newline:
        return f'"""{lead}{_escaped(value, multiline=True)}"""'
    return f'"{_escaped(value, multiline=False)}"'


def toml_value(value: TomlValue, *, pretty: bool) -> str:
    if isinstance(value, bool):
        raise TypeError("booleans are not part of the Stormbuffer format")
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return toml_string(value)
    items = [toml_string(item) for item in value]
    if pretty and len(items) >= 2:
        return "[" + "".join(f"\n    {item}," for item in items) + "\n]"
    return "[" + ", ".join(items) + "]"


def render_document(
    values: Mapping[str, TomlValue],
    tables: Iterable[tuple[str, Mapping[str, TomlValue]]] = (),
    *,
    pretty: bool,
) -> str:
    """Top-level ``key = value`` lines, then each ``[[name]]`` table after a blank line."""
    text = "".join(f"{key} = {toml_value(value, pretty=pretty)}\n" for key, value in values.items())
    for name, table in tables:
        text += f"\n[[{name}]]\n"
        text += "".join(f"{key} = {toml_value(value, pretty=pretty)}\n" for key, value in table.items())
    return text
