"""What every importer shares: reading a source file, the record it proposes, Markdown sections.

A source file is read as UTF-8 text (a byte order mark dropped, CRLF and CR line endings read as
LF), at most :data:`MAX_SOURCE_BYTES`; a larger or unreadable file is skipped with its reason, not
half imported. Each importer turns files into :class:`ImportedRecord` values; the planner
(:mod:`memosite.importers.plan`) decides which of them create, update or leave records.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import yaml

from memosite.schema import load_yaml
from memosite.workspace import find_work_tree

MAX_SOURCE_BYTES = 1_000_000
# What an imported record says of where it came from (see memosite.importers.plan).
SOURCE_FIELDS = ("sourceFormat", "sourcePath", "sourceAnchor", "sourceHash")

_HEADING_RE = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t]*#*[ \t]*$")
_FENCE_RE = re.compile(r"^[ \t]{0,3}(`{3,}|~{3,})")


@dataclass
class ImportedRecord:
    """One record an importer proposes, keyed by where it comes from (file and anchor)."""

    format: str
    source_path: str  # relative to the repository (or to the imported folder's parent), '/'-separated
    anchor: str  # the heading, "ADR 0007", or "" for a whole file
    kind: str
    title: str
    body: str
    fields: dict[str, Any] = field(default_factory=dict)  # status, created, tags, pathPatterns …
    slug_hint: str = ""
    supersedes: str | None = None  # the anchor of the record (same folder) it supersedes
    superseded_by: str | None = None  # the anchor of the record that supersedes it

    @property
    def key(self) -> str:
        return import_key(self.format, self.source_path, self.anchor)


def import_key(fmt: str, source_path: str, anchor: str) -> str:
    """What identifies an imported record across imports: an ADR by its folder and number (its
    file may be renamed), anything else by its file and anchor."""
    where = str(PurePosixPath(source_path).parent) if anchor.startswith("ADR ") else source_path
    return f"{fmt}:{where}#{anchor}"


@dataclass(frozen=True)
class Skipped:
    source_path: str
    reason: str

    def to_json(self) -> dict[str, str]:
        return {"sourcePath": self.source_path, "reason": self.reason}


@dataclass
class Coverage:
    """What an import read, in source paths: a record it gave earlier whose source lies in what it
    read and is gone now is archived — and nothing outside what it read is."""

    files: set[str] = field(default_factory=set)  # files read
    folders: set[str] = field(default_factory=set)  # folders whose files were read, not below them
    trees: set[str] = field(default_factory=set)  # folders read with everything below them ("." all)

    def covers(self, source_path: str) -> bool:
        if source_path in self.files or str(PurePosixPath(source_path).parent) in self.folders:
            return True
        return any(tree == "." or source_path.startswith(tree + "/") for tree in self.trees)

    def extend(self, other: Coverage) -> None:
        self.files |= other.files
        self.folders |= other.folders
        self.trees |= other.trees


@dataclass
class Parsed:
    """What an importer found: the records it proposes, the files it skipped, and what it read."""

    records: list[ImportedRecord] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    covered: Coverage = field(default_factory=Coverage)

    def extend(self, other: Parsed) -> None:
        self.records.extend(other.records)
        self.skipped.extend(other.skipped)
        self.covered.extend(other.covered)

    def read(self, file: Path, base: Path) -> tuple[str, str] | None:
        """``file``'s source path and text, counted as read; None (and the file listed as skipped,
        with why) when it cannot be imported."""
        source_path = relative_source(file, base)
        self.covered.files.add(source_path)
        try:
            return source_path, read_source(file)
        except (OSError, ValueError) as exc:
            self.skipped.append(Skipped(source_path, str(getattr(exc, "strerror", None) or exc)))
            return None

    def read_each(
        self, files: Iterable[Path], base: Path, record_from_text: Callable[[str, str], ImportedRecord | Skipped]
    ) -> None:
        """Read each of ``files`` into one record (or a skipped file) by ``record_from_text(text,
        source_path)``."""
        for file in files:
            read = self.read(file, base)
            if read is None:
                continue
            found = record_from_text(read[1], read[0])
            if isinstance(found, Skipped):
                self.skipped.append(found)
            else:
                self.records.append(found)


def source_base(path: Path) -> Path:
    """What source paths are relative to: the repository holding ``path``; outside one, the parent
    of the folder imported (or of the folder holding the file imported), so a file imported alone
    and with its folder has one source path."""
    folder = path.absolute() if path.is_dir() else path.absolute().parent
    tree = find_work_tree(folder)
    return tree if tree is not None else folder.parent


def relative_source(file: Path, base: Path) -> str:
    try:
        return file.absolute().relative_to(base.absolute()).as_posix()
    except ValueError:
        return file.name


def read_source(file: Path) -> str:
    """The text of a source file; OSError or ValueError (naming why) when it cannot be imported."""
    if file.is_symlink():
        raise ValueError("a symbolic link (imported files are read where they are)")
    with open(file, "rb") as handle:
        data = handle.read(MAX_SOURCE_BYTES + 1)
    if len(data) > MAX_SOURCE_BYTES:
        raise ValueError(f"larger than {MAX_SOURCE_BYTES // 1_000_000} MB")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"not UTF-8 text (byte {exc.start})") from exc
    if "\x00" in text:
        raise ValueError("holds a NUL character (not text)")
    return text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n")


def split_frontmatter(text: str) -> tuple[dict[str, Any] | None, str]:
    """A leading ``---`` YAML block and the rest. None when there is no block; a block that is not
    YAML is read line by line as ``key: value`` (Cursor writes ``globs: *.ts`` unquoted)."""
    if not text.startswith("---\n"):
        return None, text
    end = re.search(r"^---[ \t]*$", text[4:], re.MULTILINE)
    if end is None:
        return None, text
    block, rest = text[4 : 4 + end.start()], text[4 + end.end() :].removeprefix("\n")
    try:
        data = load_yaml(block) if block.strip() else {}
    except (yaml.YAMLError, ValueError, RecursionError):
        data = None
    if not isinstance(data, dict):
        data = {}
        for line in block.splitlines():
            key, colon, value = line.partition(":")
            if colon and key.strip() and not key.startswith((" ", "\t", "-", "#")):
                data[key.strip()] = value.strip().strip("'\"")
    return {str(k): v for k, v in data.items()}, rest


@dataclass
class Section:
    level: int  # 0: the text before the first heading
    heading: str
    body: str  # the lines under the heading, up to the next heading of the same or a higher level


def sections(text: str, level: int) -> list[Section]:
    """The text split at headings of ``level`` (or higher, i.e. fewer ``#``); headings inside
    fenced code blocks are text. The first section (level 0) is what precedes the first heading."""
    found = [Section(0, "", "")]
    fence: str | None = None
    for line in text.split("\n"):
        opened = _FENCE_RE.match(line)
        if opened:
            marker = opened.group(1)
            if fence is None:
                fence = marker[0] * len(marker)
            elif marker.startswith(fence):
                fence = None
        heading = _HEADING_RE.match(line) if fence is None else None
        if heading and len(heading.group(1)) <= level:
            found.append(Section(len(heading.group(1)), clean_heading(heading.group(2)), ""))
            continue
        found[-1].body += line + "\n"
    for section in found:
        section.body = section.body.strip("\n") + "\n" if section.body.strip() else ""
    return found


def clean_heading(text: str) -> str:
    """A heading's words without Markdown emphasis, code marks or a trailing anchor ``{#id}``."""
    text = re.sub(r"\s*\{#[^}]*\}\s*$", "", text)
    return " ".join(re.sub(r"[*_`]+", "", text).split())


def first_heading(text: str) -> str | None:
    for section in sections(text, 1)[1:]:
        return section.heading
    return None


def string_list(value: Any) -> list[str]:
    """A list of strings from a YAML list or a comma-separated string."""
    if isinstance(value, str):
        return [part.strip().strip("'\"") for part in value.split(",") if part.strip()]
    if isinstance(value, list):
        return [str(item).strip() for item in value if str(item).strip()]
    return []


def plain_fields(data: Mapping[str, Any], names: tuple[str, ...]) -> dict[str, Any]:
    return {name: data[name] for name in names if data.get(name) not in (None, "", [])}


__all__ = [
    "MAX_SOURCE_BYTES",
    "SOURCE_FIELDS",
    "Coverage",
    "ImportedRecord",
    "Parsed",
    "Section",
    "Skipped",
    "clean_heading",
    "first_heading",
    "import_key",
    "read_source",
    "relative_source",
    "sections",
    "source_base",
    "split_frontmatter",
    "string_list",
]
