"""The marked block memosite owns inside a file a person also writes (``AGENTS.md``, ``CLAUDE.md``,
``.github/copilot-instructions.md``).

The block runs from a line ``<!-- memosite:begin -->`` to a line ``<!-- memosite:end -->`` (each
marker alone on its line, spaces around it allowed). Everything outside the markers — and the
marker lines themselves — is kept byte for byte: the file is handled as bytes, so another encoding,
a byte order mark or Windows line endings come back exactly as they were. A marker that is not
alone on its line (quoted in prose or in a code span) is text like any other.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from memosite.errors import InvalidArguments

BEGIN = "<!-- memosite:begin -->"
END = "<!-- memosite:end -->"
# A file saved with a byte order mark may hold the begin marker on its very first line.
_BEGIN_LINE = re.compile(rb"^(?:\xef\xbb\xbf)?[ \t]*" + re.escape(BEGIN.encode()) + rb"[ \t]*\r?$", re.MULTILINE)
_END_LINE = re.compile(rb"^(?:\xef\xbb\xbf)?[ \t]*" + re.escape(END.encode()) + rb"[ \t]*\r?$", re.MULTILINE)


@dataclass(frozen=True)
class BlockSpan:
    """Where the block's inside lies: from the byte after the begin line's newline (``start``) to
    the first byte of the end line (``end``)."""

    start: int
    end: int


def find_block(data: bytes, name: str) -> BlockSpan | None:
    """The block of ``data`` (the file ``name``), None when the file has no markers at all.

    A file with one marker but not the other, with two blocks or with the end before the begin is
    refused (INVALID_ARGUMENTS naming the file): guessing which text is memosite's would risk a
    person's."""
    begins = list(_BEGIN_LINE.finditer(data))
    ends = list(_END_LINE.finditer(data))
    if not begins and not ends:
        return None
    if len(begins) != 1 or len(ends) != 1 or ends[0].start() < begins[0].end():
        raise InvalidArguments(
            f"{name}: the memosite markers are not one {BEGIN} line followed by one {END} line;"
            " fix them by hand (nothing was changed)"
        )
    newline = data.find(b"\n", begins[0].end() - 1)
    start = len(data) if newline == -1 else newline + 1
    return BlockSpan(start, ends[0].start())


def newline_of(data: bytes) -> bytes:
    """The line ending the file already uses (``\\r\\n`` when most of its lines end so)."""
    crlf = data.count(b"\r\n")
    return b"\r\n" if crlf and crlf * 2 >= data.count(b"\n") else b"\n"


def with_newlines(text: str, newline: bytes) -> bytes:
    """``text`` (``\\n`` line endings) as UTF-8 with ``newline`` line endings."""
    return text.encode("utf-8").replace(b"\n", newline)


def replace_block(data: bytes, span: BlockSpan, inner: str) -> bytes:
    """``data`` with the block's inside replaced by ``inner``; every other byte as it was."""
    body = with_newlines(inner, newline_of(data))
    if span.start == len(data) and not data.endswith(b"\n"):
        body = newline_of(data) + body  # a begin marker on the file's last line, with no newline
    return data[: span.start] + body + data[span.end :]


def block_file(inner: str) -> str:
    """A new file holding only the block."""
    return f"{BEGIN}\n{inner}{END}\n"


def append_block(data: bytes, inner: str) -> bytes:
    """``data`` with the markers and the block added at its end (``--init``), after a blank line."""
    newline = newline_of(data) if data else b"\n"
    if not data:
        return with_newlines(block_file(inner), newline)
    separator = b"" if data.endswith(newline * 2) else newline if data.endswith(newline) else newline * 2
    return data + separator + with_newlines(block_file(inner), newline)
