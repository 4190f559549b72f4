"""Claude Code's auto memory: ``~/.claude/projects/<project>/memory/``.

The folder holds ``MEMORY.md``, an index Claude Code loads into every session (one line per memory,
a link to its topic file and a short hook), and topic files. A topic file written by current
versions starts with ``name``, ``description`` and ``type`` (``user``, ``feedback``, ``project``,
``reference``); older ones are plain Markdown. Each topic file becomes one record, its kind by type:
feedback (how to work, and why) a decision, project (ongoing work and its constraints) a plan,
reference (where things are) a spec, user (who the user is) a private ``state`` record that is
never published. The index lines that only point at a topic file are left out (the file itself is
imported); anything else ``MEMORY.md`` says is imported by section, as an instruction file is. A
topic file named on its own is imported on its own.
"""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath

from memosite.importers.agents_md import records_from_text
from memosite.importers.source import (
    ImportedRecord,
    Parsed,
    Skipped,
    first_heading,
    relative_source,
    source_base,
    split_frontmatter,
)
from memosite.schema import slugify
from memosite.workspace import find_work_tree

FORMAT = "claude-memory"
INDEX_FILE = "MEMORY.md"
KIND_BY_TYPE = {"feedback": "decision", "project": "plan", "reference": "spec", "user": "state"}
_POINTER_RE = re.compile(r"^\s*(?:[-*+]|\d+[.)])?\s*\[[^\]]*\]\(([^)\s]+\.md)\)\s*(?:[-—–:].*)?$")


def memory_folder(path: Path) -> Path:
    return path.parent if path.is_file() else path


def topic_record(text: str, source_path: str) -> ImportedRecord | Skipped:
    header, body = split_frontmatter(text)
    header = header or {}
    description = str(header.get("description") or "").strip()
    if not body.strip():
        if not description:
            return Skipped(source_path, "the memory file has no text")
        body = description + "\n"
    kind = KIND_BY_TYPE.get(str(header.get("type") or "").strip().lower(), "spec")
    stem = PurePosixPath(source_path).name.removesuffix(".md")
    name = str(header.get("name") or "").strip()
    title = name or first_heading(body) or stem
    fields: dict[str, object] = {"tags": ["claude-memory"]}
    if description:
        fields["description"] = description
    if header.get("type"):
        fields["memoryType"] = str(header["type"]).strip().lower()
    return ImportedRecord(FORMAT, source_path, "", kind, title, body, fields, f"claude-memory-{slugify(stem)}")


def parse(path: Path) -> Parsed:
    folder = memory_folder(path)
    base = source_base(folder)
    if find_work_tree(folder.absolute()) is None:
        # Outside a repository (as under ~/.claude/projects), the source path keeps the Claude
        # project's folder: each worktree of one repository has a memory folder of its own, and
        # importing one must not update, or archive, what another one gave.
        base = base.parent
    parsed = Parsed()
    if path.is_file() and path.name != INDEX_FILE:
        files = [path]  # one topic file named: that file, not the folder around it
    else:
        parsed.covered.folders.add(relative_source(folder, base))  # a topic file gone from it too
        files = sorted(file for file in folder.glob("*.md") if file.is_file())
    topics = {file.name for file in files if file.name != INDEX_FILE}
    for file in files:
        read = parsed.read(file, base)
        if read is None:
            continue
        source_path, text = read
        if file.name == INDEX_FILE:
            kept = [line for line in text.split("\n") if not _points_to_topic(line, topics)]
            records, skipped = records_from_text("\n".join(kept), source_path, fmt=FORMAT)
            for record in records:
                record.fields.setdefault("tags", ["claude-memory"])
            parsed.records.extend(records)
            parsed.skipped.extend(skipped)
            continue
        found = topic_record(text, source_path)
        if isinstance(found, Skipped):
            parsed.skipped.append(found)
        else:
            parsed.records.append(found)
    return parsed


def _points_to_topic(line: str, topics: set[str]) -> bool:
    match = _POINTER_RE.match(line)
    return match is not None and PurePosixPath(match.group(1)).name in topics


__all__ = ["FORMAT", "INDEX_FILE", "parse", "topic_record"]
