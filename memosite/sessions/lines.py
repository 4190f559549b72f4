"""Reading single lines of a session file by byte offset, without reading the whole file.

Used by the reopen spot checks (does the line at a turn index offset hold that turn's event?),
by ``tail`` and by search snippets; :func:`line_numbers` turns offsets into the line numbers a
person can look up (an event vtcode wrote has no sequence number of its own).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from memosite.errors import StorageError
from memosite.sessions import safefs
from memosite.sessions.events import decode_event
from memosite.sessions.lifecycle import LifecycleKind

_LINE_PROBE = 4096


def last_line(fd: int, end: int) -> bytes | None:
    """The complete line that ends at byte ``end`` (which must follow a newline), or None."""
    if end <= 0 or os.pread(fd, 1, end - 1) != b"\n":
        return None
    block = _LINE_PROBE
    while True:
        start = max(0, end - block)
        chunk = os.pread(fd, end - start, start)
        cut = chunk.rfind(b"\n", 0, len(chunk) - 1)
        if cut >= 0:
            return chunk[cut + 1 :]
        if start == 0:
            return chunk
        block *= 4


def line_at(fd: int, offset: int) -> bytes:
    """The complete line that starts at ``offset``, or b"" when none does."""
    if offset > 0 and os.pread(fd, 1, offset - 1) != b"\n":
        return b""
    block = _LINE_PROBE
    while True:
        chunk = os.pread(fd, block, offset)
        cut = chunk.find(b"\n")
        if cut >= 0:
            return chunk[: cut + 1]
        if len(chunk) < block:
            return b""
        block *= 4


def read_line_at(path: Path, offset: int) -> bytes:
    """The complete line of a session file that starts at ``offset`` (b"" if there is none)."""
    fd = safefs.open_private(path, os.O_RDONLY)
    try:
        return line_at(fd, offset)
    except OSError as exc:
        raise StorageError(f"cannot read {path}: {exc.strerror or exc}") from exc
    finally:
        os.close(fd)


def line_is(fd: int, offset: int, kind: LifecycleKind, turn: int, seq: int | None) -> bool:
    event = decode_event(line_at(fd, offset) or b"-", offset)
    return event is not None and event.type == kind.value and event.turn == turn and event.seq == seq


def line_numbers(path: Path, offsets: Iterable[int]) -> dict[int, int]:
    """The 1-based line number of the line starting at each offset, counting from the start of the
    file (one read of the file up to the last offset asked for)."""
    wanted = sorted(set(offsets))
    found: dict[int, int] = {}
    if not wanted:
        return found
    fd = safefs.open_private(path, os.O_RDONLY)
    try:
        newlines = 0
        position = 0
        for offset in wanted:
            while position < offset:
                block = os.pread(fd, min(1024 * 1024, offset - position), position)
                if not block:
                    break
                newlines += block.count(b"\n")
                position += len(block)
            found[offset] = newlines + 1
    except OSError as exc:
        raise StorageError(f"cannot read {path}: {exc.strerror or exc}") from exc
    finally:
        os.close(fd)
    return found
