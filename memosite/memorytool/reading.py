"""What ``view`` shows: a file's numbered lines, a directory's listing and the short index of the
freshest records under the root — each within a size a model's context holds.

A file is shown whole or from ``view_range`` on, and cut where it would pass
:data:`MAX_VIEW_CHARS`, with where to read on; a single line longer than a whole view (a record
written elsewhere as one line) is cut too, and says so. A directory lists what lies up to two
levels below it, hidden items left out, at most :data:`MAX_LISTED` entries.
"""

from __future__ import annotations

from typing import Any

from memosite.errors import InvalidArguments, RecordNotFound
from memosite.memorytool import texts
from memosite.memorytool.paths import ROOT, SHOWN_KIND_DIRECTORIES, canonical_path
from memosite.memorytool.tree import MemoryTree, freshness_line, is_fixed_directory, is_hidden

MAX_VIEW_CHARS = 100_000  # what one view returns before it says where to read on
MAX_LISTED = 500  # entries one directory listing shows
INDEX_LINES = 10  # records in the freshness index under the root listing


def file_view(shown_path: str, text: str, view_range: Any = None) -> str:
    """A file's text as ``view`` shows it: numbered lines (those ``view_range`` asks for), cut at
    :data:`MAX_VIEW_CHARS` with where to read on."""
    lines = text.split("\n")
    if len(lines) > texts.MAX_LINES:
        raise InvalidArguments(f"File {shown_path} exceeds maximum line limit of 999,999 lines.")
    first, last = view_range_lines(view_range, len(lines))
    body: list[str] = []
    note = None
    used = 0
    for number, line in enumerate(lines[first - 1 : last], first):
        used += len(line) + texts.LINE_NUMBER_WIDTH + 2
        if used <= MAX_VIEW_CHARS:
            body.append(line)
            continue
        if number > first:
            note = f"… cut at line {number - 1} of {len(lines)}: view the rest with view_range [{number}, -1]"
        else:
            # One line longer than a whole view (a record written elsewhere, as one line): its
            # start, rather than a result the model's context cannot hold.
            body.append(line[:MAX_VIEW_CHARS])
            rest = f": view what follows with view_range [{number + 1}, -1]" if number < last else ""
            note = (
                f"… line {number} holds {len(line):,} characters: cut after {MAX_VIEW_CHARS:,}, the rest of it"
                f" cannot be shown{rest}"
            )
        break
    result = f"{texts.file_header(shown_path)}\n{texts.numbered(body, first)}"
    return result if note is None else f"{result}\n{note}"


def directory_view(tree: MemoryTree, shown_path: str, where: str) -> str:
    """A directory as ``view`` lists it; under the root, the freshest records follow."""
    lines = [f"{texts.human_size(tree.size_of(where))}\t{where}"]
    entries = list(tree.walk(where))
    for path in entries[:MAX_LISTED]:
        suffix = "/" if tree.is_directory(path) else ""
        lines.append(f"{texts.human_size(tree.size_of(path))}\t{path}{suffix}")
    if len(entries) > MAX_LISTED:
        lines.append(f"… and {len(entries) - MAX_LISTED} more: view a directory inside {where} to see them")
    result = f"{texts.listing_header(shown_path)}\n" + "\n".join(lines)
    listed = [item for item in tree.files.values() if not is_hidden(item.path)]
    if where == ROOT and listed:
        newest = sorted(listed, key=lambda f: f.entry.updated or "", reverse=True)[:INDEX_LINES]
        result += "\n\nNewest memory first (kind, last update, expiry), to help you pick what to read:\n" + "\n".join(
            freshness_line(item) for item in newest
        )
    return result


def view_range_lines(view_range: Any, n_lines: int) -> tuple[int, int]:
    """The first and last line (1-based, inclusive) a ``view_range`` asks for."""
    if view_range is None:
        return 1, n_lines
    valid = (
        isinstance(view_range, (list, tuple))
        and len(view_range) == 2
        and all(isinstance(n, int) and not isinstance(n, bool) for n in view_range)
    )
    if valid:
        start, end = view_range
        if 1 <= start <= max(n_lines, 1) and (end == -1 or start <= end):
            return start, n_lines if end == -1 else min(end, n_lines)
    raise InvalidArguments(
        f"Error: Invalid `view_range` parameter: {view_range}. Its first element should be within the range of"
        f" lines of the file: [1, {n_lines}], its second -1 or at least the first"
    )


def view_without_vault(path: str) -> str:
    """What ``view`` shows before the vault exists (a read never creates it): the empty tree."""
    where = canonical_path(path)
    tree = MemoryTree()
    tree.directories.add(ROOT)
    tree.directories.update(f"{ROOT}/{directory}" for directory in SHOWN_KIND_DIRECTORIES)
    if tree.is_directory(where) or is_fixed_directory(where):
        lines = [f"0B\t{where}", *(f"0B\t{child}/" for child in tree.walk(where))]
        return f"{texts.listing_header(path)}\n" + "\n".join(lines)
    raise RecordNotFound(texts.no_such_path(path))


__all__ = ["INDEX_LINES", "MAX_LISTED", "MAX_VIEW_CHARS", "directory_view", "file_view", "view_without_vault"]
