"""Cursor rules: ``.cursor/rules/*.mdc`` files (and the one-file ``.cursorrules`` or
``.cursor/rules`` of older versions).

Each rule file is one spec record: its ``description`` (else its first heading, else its name) is
the title, its ``globs`` become the record's path patterns, and a rule Cursor always applies is
tagged ``always-apply``. Cursor writes ``globs: *.ts,*.tsx`` without quotes, which is no YAML: the
header is then read line by line. Source: the file.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath

from memosite.importers.source import (
    ImportedRecord,
    Parsed,
    Skipped,
    first_heading,
    relative_source,
    source_base,
    split_frontmatter,
    string_list,
)
from memosite.schema import slugify

FORMAT = "cursor-rules"
SUFFIX = ".mdc"
# The one-file rules of older Cursor versions, at the top of a repository.
LEGACY_FILES = (".cursorrules", ".cursor/rules")


def is_rule_file(path: Path) -> bool:
    """A file Cursor reads as rules: a ``.mdc`` rule or one of the one-file forms."""
    return (
        path.name.endswith(SUFFIX)
        or path.name == ".cursorrules"
        or (path.name, path.parent.name) == ("rules", ".cursor")
    )


def rules_folder(path: Path) -> Path:
    """The folder of rules a folder given holds: its own ``.cursor/rules``, or itself."""
    return path / ".cursor" / "rules" if (path / ".cursor" / "rules").is_dir() else path


def rule_files(path: Path) -> list[Path]:
    if path.is_file():
        return [path]
    rules = rules_folder(path)
    legacy = [path / name for name in LEGACY_FILES if (path / name).is_file()]
    return legacy + sorted(
        file for file in rules.rglob(f"*{SUFFIX}") if file.is_file() and "node_modules" not in file.parts
    )


def _always(value: object) -> bool:
    return value is True or (isinstance(value, str) and value.strip().lower() == "true")


def record_from_text(text: str, source_path: str) -> ImportedRecord | Skipped:
    header, body = split_frontmatter(text)
    header = header or {}
    if not body.strip():
        return Skipped(source_path, "the rule has no text")
    name = PurePosixPath(source_path).name.removesuffix(SUFFIX)
    description = header.get("description")
    title = description.strip() if isinstance(description, str) and description.strip() else None
    title = title or first_heading(body) or name
    tags = ["cursor-rule", *(["always-apply"] if _always(header.get("alwaysApply")) else [])]
    fields: dict[str, object] = {"tags": tags}
    globs = [glob.lstrip("/") for glob in string_list(header.get("globs")) if glob.lstrip("/")]
    if globs:
        fields["pathPatterns"] = globs
    return ImportedRecord(FORMAT, source_path, "", "spec", title, body, fields, f"cursor-rule-{slugify(name)}")


def parse(path: Path) -> Parsed:
    base = source_base(path)
    parsed = Parsed()
    if path.is_dir():
        parsed.covered.trees.add(relative_source(rules_folder(path), base))  # not a package's own rules elsewhere
    parsed.read_each(rule_files(path), base, record_from_text)
    return parsed


__all__ = ["FORMAT", "LEGACY_FILES", "is_rule_file", "parse", "record_from_text"]
