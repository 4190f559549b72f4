"""``AGENTS.md`` / ``CLAUDE.md``: agent instruction files.

Each ``##`` section (``#`` when the file has no ``##``) becomes a record named by its heading,
of the kind its heading suggests: pitfalls and warnings are traps — one per bullet rule, so each
shows in TRAPS.md on its own —, decisions and architecture are decisions, roadmaps are plans, and
everything else (conventions, commands, testing, style) is a spec. Text before the first section
is an introduction record. A section that only imports other files (Claude Code's ``@AGENTS.md``)
or only lists the file's sections is skipped with that reason. A file in a subdirectory applies to
that part of the repository: its records get the directory as a path pattern. Source: the file and
the heading.
"""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath

from memosite.importers.source import (
    ImportedRecord,
    Parsed,
    Skipped,
    first_heading,
    relative_source,
    sections,
    source_base,
)
from memosite.schema import slugify
from memosite.text import fold

FORMAT = "agents-md"
FILE_NAMES = ("AGENTS.md", "CLAUDE.md", "CLAUDE.local.md", "AGENT.md")
_SKIPPED_DIRS = {".git", "node_modules", ".venv", "venv", "__pycache__", "dist", "build"}
# Words of a heading that say what kind of memory its section is (folded: accents and case aside).
KIND_WORDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "trap",
        (
            "gotcha",
            "pitfall",
            "caveat",
            "warning",
            "trap",
            "known issue",
            "troubleshoot",
            "don't",
            "dont",
            "do not",
            "never",
            "avoid",
            "beware",
            "careful",
            "common mistake",
            "footgun",
            # The same in a few other languages (folded: no accents).
            "piege",
            "fallstrick",
            "stolperfalle",
            "подводн",
            "ловушк",
            "陷阱",
            "注意事项",
            "落とし穴",
        ),
    ),
    ("decision", ("decision", "architecture", "rationale", "why we", "adr")),
    ("plan", ("roadmap", "plan", "todo", "to do", "next step")),
)
_BULLET_RE = re.compile(r"^(?:[-*+]|\d+[.)])[ \t]+")
_IMPORT_LINE_RE = re.compile(r"^[ \t]*@[^\s@]+[ \t]*$")  # Claude Code's "@AGENTS.md": read that file here
_CONTENTS_LINE_RE = re.compile(r"^[ \t]*(?:[-*+]|\d+[.)])[ \t]+\[[^\]]*\]\(#[^)]*\)[ \t]*$")  # "- [Setup](#setup)"
_BREAK_LINE_RE = re.compile(r"^[ \t]*(?:-{3,}|\*{3,}|_{3,})[ \t]*$")


def says_nothing_of_its_own(text: str) -> str | None:
    """Why a section (or a file's introduction) holds no memory of its own — it only pulls in other
    files (``@AGENTS.md``) or only lists the file's own sections — or None when it does."""
    lines = [line for line in text.split("\n") if line.strip() and not _BREAK_LINE_RE.match(line)]
    if lines and all(_IMPORT_LINE_RE.match(line) for line in lines):
        return f"it only imports {', '.join(line.strip() for line in lines)} (imported from there)"
    if lines and all(_CONTENTS_LINE_RE.match(line) for line in lines):
        return "a table of contents"
    return None


def kind_for_heading(heading: str) -> str:
    folded = fold(heading).replace("’", "'")
    for kind, words in KIND_WORDS:
        if any(re.search(rf"(?<![a-z]){re.escape(word)}", folded) for word in words):
            return kind
    return "spec"


def bullets(body: str) -> list[str]:
    """The top-level list items of a section, each with its continuation lines."""
    items: list[str] = []
    for line in body.split("\n"):
        if _BULLET_RE.match(line):
            items.append(_BULLET_RE.sub("", line, count=1))
        elif items and line.startswith((" ", "\t")) and line.strip():
            items[-1] += "\n" + line.strip()
        elif line.strip() and items:
            items.append("")  # prose between lists ends the list
    return [item.strip() for item in items if item.strip()]


def _title_of_rule(rule: str) -> str:
    line = re.sub(r"[*_`]+", "", rule.split("\n", 1)[0]).strip()
    sentence = re.split(r"(?<=[.!?])\s", line, maxsplit=1)[0]
    return sentence if len(sentence) <= 100 else sentence[:97].rstrip() + "…"


def records_from_text(
    text: str, source_path: str, *, fmt: str = FORMAT, path_patterns: list[str] | None = None
) -> tuple[list[ImportedRecord], list[Skipped]]:
    """The records of one instruction file's text."""
    level = 2 if any(s.level == 2 for s in sections(text, 2)[1:]) else 1
    parts = sections(text, level)
    file_title = first_heading(text) or PurePosixPath(source_path).name
    stem = slugify(PurePosixPath(source_path).as_posix().removesuffix(".md")) or "instructions"
    fields = {"pathPatterns": path_patterns} if path_patterns else {}
    records: list[ImportedRecord] = []
    skipped: list[Skipped] = []
    # Under ## sections, what precedes the first of them (the # title's paragraph too) introduces the file.
    intro = parts[0].body + "".join(s.body for s in parts[1:] if level == 2 and s.level == 1)
    intro = intro.strip("\n") + "\n" if intro.strip() else ""
    empty = says_nothing_of_its_own(intro)
    if empty is not None:
        skipped.append(Skipped(source_path, f"the introduction: {empty}"))
    elif intro:
        records.append(
            ImportedRecord(fmt, source_path, "(introduction)", "spec", file_title, intro, dict(fields), f"{stem}-intro")
        )
    seen: dict[str, int] = {}
    for section in parts[1:]:
        if level == 2 and section.level == 1:
            continue  # the file's own title (its text is the introduction)
        seen[section.heading] = seen.get(section.heading, 0) + 1
        if seen[section.heading] > 1:  # a heading repeated in one file: its anchor is numbered
            section.heading = f"{section.heading} ({seen[section.heading]})"
        if not section.body:
            skipped.append(Skipped(source_path, f"section {section.heading!r} has no text"))
            continue
        empty = says_nothing_of_its_own(section.body)
        if empty is not None:
            skipped.append(Skipped(source_path, f"section {section.heading!r}: {empty}"))
            continue
        kind = kind_for_heading(section.heading)
        hint = f"{stem}-{slugify(section.heading)}"[:80]
        rules = bullets(section.body) if kind == "trap" else []
        if rules:
            for number, rule in enumerate(rules, 1):
                records.append(
                    ImportedRecord(
                        fmt,
                        source_path,
                        f"{section.heading} › {number}",
                        "trap",
                        _title_of_rule(rule),
                        rule + "\n",
                        dict(fields),
                        f"{hint}-{number}",
                    )
                )
            continue
        records.append(
            ImportedRecord(fmt, source_path, section.heading, kind, section.heading, section.body, dict(fields), hint)
        )
    return records, skipped


def instruction_files(path: Path) -> list[Path]:
    if path.is_file():
        return [path]
    found = []
    for candidate in sorted(path.rglob("*")):
        if candidate.name in FILE_NAMES and candidate.is_file() and not (_SKIPPED_DIRS & set(candidate.parts)):
            found.append(candidate)
    return found


def parse(path: Path) -> Parsed:
    base = source_base(path)
    # A file below the imported folder (or the repository) applies to its own directory.
    root = base if (base / ".git").exists() else path if path.is_dir() else None
    parsed = Parsed()
    if path.is_dir():
        parsed.covered.trees.add(relative_source(path, base))  # every instruction file below it was read
    for file in instruction_files(path):
        read = parsed.read(file, base)
        if read is None:
            continue
        source_path, text = read
        directory = PurePosixPath(relative_source(file.parent, root)) if root is not None else PurePosixPath(".")
        scoped = str(directory) not in ("", ".") and ".claude" not in directory.parts and file.parent != root
        patterns = [f"{directory}/**"] if scoped else None
        records, skipped = records_from_text(text, source_path, path_patterns=patterns)
        parsed.records.extend(records)
        parsed.skipped.extend(skipped)
    return parsed


__all__ = ["FORMAT", "bullets", "kind_for_heading", "parse", "records_from_text", "says_nothing_of_its_own"]
