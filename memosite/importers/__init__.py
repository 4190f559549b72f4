"""Import what teams already keep: one module per source format, one planner for them all.

``agents-md`` (:mod:`.agents_md`), ``cursor-rules`` (:mod:`.cursor_rules`), ``claude-memory``
(:mod:`.claude_memory`), ``adr`` (:mod:`.adr`) and ``basic-memory`` (:mod:`.basic_memory`) read
their files into proposed records; :mod:`.plan` keys them by source, decides what changes and
applies it as one unit of work. ``auto`` looks at what a path holds and imports every format it
recognises there (:func:`detect`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from memosite.errors import InvalidArguments
from memosite.importers import adr, agents_md, basic_memory, claude_memory, cursor_rules
from memosite.importers.plan import ImportPlan, apply_import, plan_import
from memosite.importers.source import Parsed
from memosite.vault import Vault

FORMATS: dict[str, Callable[[Path], Parsed]] = {
    agents_md.FORMAT: agents_md.parse,
    cursor_rules.FORMAT: cursor_rules.parse,
    claude_memory.FORMAT: claude_memory.parse,
    adr.FORMAT: adr.parse,
    basic_memory.FORMAT: basic_memory.parse,
}
AUTO = "auto"


def _looks_like_adr(file: Path) -> bool:
    try:
        head = file.read_text(encoding="utf-8", errors="replace")[:4000].lower()
    except OSError:
        return False
    return "## status" in head or "status:" in head or "## context" in head


def _looks_like_note(file: Path) -> bool:
    try:
        head = file.read_text(encoding="utf-8", errors="replace")[:4000]
    except OSError:
        return False
    return "permalink:" in head or "## Observations" in head


def detect(path: Path) -> list[str]:
    """The formats ``path`` holds, in the order they are imported (none: it is not a known source)."""
    if path.is_file():
        name = path.name
        if cursor_rules.is_rule_file(path):
            return [cursor_rules.FORMAT]
        if name == claude_memory.INDEX_FILE:
            return [claude_memory.FORMAT]
        if name in agents_md.FILE_NAMES:
            return [agents_md.FORMAT]
        if name.endswith(".md") and adr.anchor_for(path.stem).startswith("ADR 0") and _looks_like_adr(path):
            return [adr.FORMAT]
        if name.endswith(".md") and _looks_like_note(path):
            return [basic_memory.FORMAT]
        return []
    if not path.is_dir():
        return []
    if (path / claude_memory.INDEX_FILE).is_file():
        return [claude_memory.FORMAT]
    found = []
    if any((path / name).is_file() for name in agents_md.FILE_NAMES):
        found.append(agents_md.FORMAT)
    if (
        (path / ".cursor" / "rules").exists()
        or (path / ".cursorrules").is_file()
        or any(path.glob(f"*{cursor_rules.SUFFIX}"))
    ):
        found.append(cursor_rules.FORMAT)
    folders = [path / sub for sub in adr.ADR_FOLDERS if (path / sub).is_dir()]
    numbered = [f for f in path.glob("*.md") if adr.anchor_for(f.stem).startswith("ADR 0") and _looks_like_adr(f)]
    if folders or numbered:
        found.append(adr.FORMAT)
    if not found and any(_looks_like_note(f) for f in sorted(path.rglob("*.md"))[:200]):
        found.append(basic_memory.FORMAT)
    return found


def _check_file_type(fmt: str, path: Path) -> None:
    """A file named on the command line is of the kind its format reads (a Markdown file, a Cursor
    rule), so a slip of the hand does not turn /etc/passwd or a README into records."""
    if fmt == cursor_rules.FORMAT:
        if not cursor_rules.is_rule_file(path):
            raise InvalidArguments(
                f"{path} is not a Cursor rule: cursor-rules imports .mdc files, .cursor/rules or .cursorrules"
            )
    elif not path.name.lower().endswith(".md"):
        raise InvalidArguments(f"{path} is not a Markdown file (.md): {fmt} imports Markdown")


def import_path(vault: Vault | None, project: str, fmt: str, path: Path, *, dry_run: bool) -> ImportPlan:
    """Plan (and unless ``dry_run``, apply) the import of ``path`` as ``fmt`` (or ``auto``).
    ``vault`` None: no vault exists yet (a dry run then plans against an empty one)."""
    if not path.exists():
        raise InvalidArguments(f"nothing to import at {path}: no such file or directory")
    if not path.is_file() and not path.is_dir():
        raise InvalidArguments(f"nothing to import at {path}: it is neither a file nor a folder")
    formats = detect(path) if fmt == AUTO else [fmt]
    if not formats:
        raise InvalidArguments(
            f"cannot tell what {path} holds: name the format ({', '.join(FORMATS)})", details={"formats": list(FORMATS)}
        )
    if formats[0] not in FORMATS:
        raise InvalidArguments(f"unknown format {fmt!r}: expected one of {', '.join([*FORMATS, AUTO])}")
    if fmt != AUTO and path.is_file():
        _check_file_type(fmt, path)
    parsed = Parsed()
    for name in formats:
        parsed.extend(FORMATS[name](path))
    shown = path.name or str(path)
    combined = plan_import(
        vault, project, " + ".join(formats), shown, parsed.records, parsed.skipped, parsed.covered, formats=formats
    )
    if dry_run or vault is None:
        return combined
    return apply_import(vault, combined)


__all__ = ["AUTO", "FORMATS", "detect", "import_path"]
