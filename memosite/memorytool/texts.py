"""What the memory tool says: the result and error texts of Anthropic's memory tool documentation
and of its reference implementation in the Python SDK, so a model trained on that tool reads our
answers as it expects (and recovers from our errors as it would from theirs).

Results are plain text; a file's lines are numbered right-aligned in six columns and a tab, a
directory is listed as ``<size>\\t<path>`` lines up to two levels deep.
"""

from __future__ import annotations

from collections.abc import Sequence

LINE_NUMBER_WIDTH = 6
MAX_LINES = 999_999


def listing_header(path: str) -> str:
    return f"Here're the files and directories up to 2 levels deep in {path}, excluding hidden items and node_modules:"


def file_header(path: str) -> str:
    return f"Here's the content of {path} with line numbers:"


def created(path: str) -> str:
    return f"File created successfully at: {path}"


def edited_snippet_header() -> str:
    return "The memory file has been edited. Here is the snippet showing the change (with line numbers):"


def inserted(path: str) -> str:
    return f"The file {path} has been edited."


def deleted(path: str) -> str:
    return f"Successfully deleted {path}"


def renamed(old_path: str, new_path: str) -> str:
    return f"Successfully renamed {old_path} to {new_path}"


def no_such_path(path: str) -> str:
    return f"The path {path} does not exist. Please provide a valid path."


def no_such_path_short(path: str) -> str:
    return f"Error: The path {path} does not exist"


def already_exists(path: str) -> str:
    return f"Error: File {path} already exists"


def destination_exists(path: str) -> str:
    return f"Error: The destination {path} already exists"


def not_found_verbatim(old_str: str, path: str) -> str:
    return f"No replacement was performed, old_str `{old_str}` did not appear verbatim in {path}."


def not_unique(old_str: str, lines: Sequence[int]) -> str:
    numbers = ", ".join(str(n) for n in lines)
    return (
        f"No replacement was performed. Multiple occurrences of old_str `{old_str}` in lines: {numbers}."
        " Please ensure it is unique"
    )


def bad_insert_line(insert_line: object, n_lines: int) -> str:
    return (
        f"Error: Invalid `insert_line` parameter: {insert_line}. It should be within the range of lines of the"
        f" file: [0, {n_lines}]"
    )


def numbered(lines: Sequence[str], first: int = 1) -> str:
    """Lines numbered as the tool numbers them: the number right-aligned in six columns, a tab."""
    return "\n".join(f"{str(number).rjust(LINE_NUMBER_WIDTH)}\t{line}" for number, line in enumerate(lines, first))


def human_size(size: int) -> str:
    """A size as the listing shows it: ``0B``, ``512B``, ``1.5K``, ``2M``."""
    if size <= 0:
        return "0B"
    units = ("B", "K", "M", "G")
    step = min((size.bit_length() - 1) // 10, len(units) - 1)
    value = size / (1024**step)
    return f"{int(value)}{units[step]}" if value == int(value) else f"{value:.1f}{units[step]}"


def split_lines(text: str) -> list[str]:
    """The lines of a file as ``insert`` counts them: split on LF only (a CR stays with its line),
    without the empty tail a final newline leaves."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


__all__ = [
    "LINE_NUMBER_WIDTH",
    "MAX_LINES",
    "already_exists",
    "bad_insert_line",
    "created",
    "deleted",
    "destination_exists",
    "edited_snippet_header",
    "file_header",
    "human_size",
    "inserted",
    "listing_header",
    "no_such_path",
    "no_such_path_short",
    "not_found_verbatim",
    "not_unique",
    "numbered",
    "renamed",
    "split_lines",
]
