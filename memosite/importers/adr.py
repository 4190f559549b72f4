"""Architecture decision records: adr-tools' Nygard format, MADR and log4brains.

Every ADR file becomes a decision. Its status — MADR's ``status:`` field, a ``Status:`` line
(``* Status: accepted``, ``__Status__: proposed``) or Nygard's ``## Status`` section — maps onto
memosite's: accepted (approved, adopted) is active; proposed, draft and on hold wait as paused (the
"Proposed" part of DECISIONS.md); deprecated and rejected are archived with that reason;
superseded is superseded. An ADR that states no status, or one memosite does not know, is paused:
memosite never claims a decision was accepted when its record does not say so. The status as
written is kept in ``adrStatus``. "Superseded by" and "Supersedes" links (to another ADR's file, or
``ADR-0005``) become memosite's ``supersedes``; the ADR's date is the record's ``created``.

An ADR is keyed by its folder and number (``0007-…``), or its file name when it has no number
(log4brains names files by date and slug), so a renamed file updates its record.
"""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath
from typing import Any

from memosite.importers.source import (
    ImportedRecord,
    Parsed,
    Skipped,
    clean_heading,
    relative_source,
    sections,
    source_base,
    split_frontmatter,
    string_list,
)
from memosite.schema import slugify

FORMAT = "adr"
ADR_FOLDERS = ("doc/adr", "docs/adr", "docs/decisions", "docs/architecture/decisions", "adr", "decisions")
STATUS_MAP = {
    "accepted": ("active", None),
    "approved": ("active", None),
    "adopted": ("active", None),
    "done": ("active", None),
    "proposed": ("paused", None),
    "draft": ("paused", None),
    "on hold": ("paused", None),
    "deprecated": ("archived", "deprecated"),
    "rejected": ("archived", "rejected"),
    "declined": ("archived", "rejected"),
    "superseded": ("superseded", None),
}
_NUMBER_RE = re.compile(r"^(?:adr[-_]?)?(\d{1,5})[-_]", re.I)
_DATE_NAME_RE = re.compile(r"^\d{4}-?\d{2}-?\d{2}[-_]")
_STATUS_LINE_RE = re.compile(r"^[ \t]*(?:[-*+][ \t]+)?[*_]{0,2}status[*_]{0,2}[ \t]*:[*_]{0,2}[ \t]*(.+)$", re.I | re.M)
_FIELD_LINE_RE = r"^[ \t]*(?:[-*+][ \t]+)?[*_]{{0,2}}{name}[*_]{{0,2}}[ \t]*:[*_]{{0,2}}[ \t]*(.+)$"
_LINK_RE = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
_ADR_REF_RE = re.compile(r"\bADR[- ]?0*(\d{1,5})\b", re.I)
_TITLE_NUMBER_RE = re.compile(r"^(?:ADR[- ]?\d+\s*[:.\-—–]\s*|\d+\.\s+)", re.I)


def adr_folder(path: Path) -> Path:
    """The folder of ADRs a folder given holds: its own ``doc/adr``, ``docs/decisions`` … or itself."""
    return next((path / sub for sub in ADR_FOLDERS if (path / sub).is_dir()), path)


def adr_files(path: Path) -> list[Path]:
    if path.is_file():
        return [path]
    folder = adr_folder(path)
    return sorted(
        file
        for file in folder.glob("*.md")
        if file.is_file()
        and is_adr_name(file.stem)  # README, index, a guide …: about the folder, not decisions
        and "template" not in file.name.lower()
    )


def is_adr_name(stem: str) -> bool:
    """A file name an ADR tool gives: numbered (``0007-…``, ``ADR-007-…``) or dated (log4brains'
    ``20201016-…``). A folder's other files (notes, an index, a guide) are not decisions."""
    return bool(_NUMBER_RE.match(stem) or _DATE_NAME_RE.match(stem))


def anchor_for(stem: str) -> str:
    """``ADR 0007`` for ``0007-…``; ``ADR <file name>`` for a file without a number."""
    number = _NUMBER_RE.match(stem)
    return f"ADR {int(number.group(1)):04d}" if number else f"ADR {stem}"


def _anchor_of_reference(text: str) -> str | None:
    link = _LINK_RE.search(text)
    if link:
        target = PurePosixPath(link.group(1).split("#", 1)[0]).name
        if target.endswith(".md"):
            return anchor_for(target[:-3])
    number = _ADR_REF_RE.search(text)
    return f"ADR {int(number.group(1)):04d}" if number else None


def _field_line(text: str, name: str) -> str | None:
    match = re.search(_FIELD_LINE_RE.format(name=name), text, re.I | re.M)
    return match.group(1).strip() if match else None


def status_text(header: dict[str, Any] | None, body: str) -> str | None:
    """The ADR's status as written (its first line, without Markdown emphasis)."""
    if header and header.get("status"):
        return str(header["status"]).strip()
    for section in sections(body, 3)[1:]:
        if section.heading.lower() == "status" and section.body.strip():
            return section.body.strip()
    top = body.split("\n## ", 1)[0]
    match = _STATUS_LINE_RE.search(top)
    return match.group(1).strip() if match else None


def map_status(raw: str | None) -> tuple[str, str | None]:
    """memosite's status (and archive reason) for an ADR status as written."""
    if not raw:
        return "paused", None
    first = re.sub(r"[*_`\[\]]", "", raw.split("\n", 1)[0]).strip().lower()
    for word, mapped in STATUS_MAP.items():
        if first.startswith(word):
            return mapped
    return "paused", None


def _date(header: dict[str, Any] | None, body: str, stem: str) -> str | None:
    value = str((header or {}).get("date") or "").strip() or _field_line(body.split("\n## ", 1)[0], "date") or ""
    found = re.search(r"\b(\d{4})-(\d{2})-(\d{2})\b", value)
    if found:
        return found.group(0)
    prefix = re.match(r"^(\d{4})(\d{2})(\d{2})-", stem)
    return f"{prefix.group(1)}-{prefix.group(2)}-{prefix.group(3)}" if prefix else None


def record_from_text(text: str, source_path: str) -> ImportedRecord | Skipped:
    header, body = split_frontmatter(text)
    stem = PurePosixPath(source_path).name.removesuffix(".md")
    lines = body.split("\n")
    title_at = next((n for n, line in enumerate(lines) if re.match(r"^#[ \t]", line)), None)
    title = clean_heading(lines[title_at][1:]) if title_at is not None else ""
    given = str((header or {}).get("title") or "")  # Docusaurus and MADR 3 keep the title up there
    title = _TITLE_NUMBER_RE.sub("", title).strip() or _TITLE_NUMBER_RE.sub("", given).strip() or stem
    if title_at is not None:
        del lines[title_at]
    content = "\n".join(lines).strip("\n")
    if not content.strip():
        return Skipped(source_path, "the ADR has no text under its title")
    raw = status_text(header, body)
    status, reason = map_status(raw)
    fields: dict[str, Any] = {"status": status, "tags": ["adr"]}
    if raw:
        fields["adrStatus"] = " ".join(re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", raw.split("\n", 1)[0]).split())
    if reason:
        fields["archivedReason"] = reason
    date = _date(header, body, stem)
    if date:
        fields["created"] = date
        fields["updated"] = date
    tags = string_list((header or {}).get("tags")) or string_list(_field_line(body.split("\n## ", 1)[0], "tags"))
    fields["tags"] = ["adr", *[t for t in tags if t != "adr"]]
    deciders = (header or {}).get("deciders") or _field_line(body.split("\n## ", 1)[0], "deciders")
    if deciders:
        fields["deciders"] = string_list(deciders) if isinstance(deciders, (str, list)) else str(deciders)
    superseded_by = supersedes = None
    for line in content.split("\n"):
        lowered = line.lower()
        if "superseded by" in lowered:
            superseded_by = superseded_by or _anchor_of_reference(line[lowered.index("superseded by") :])
        elif re.search(r"\bsupersedes\b", lowered):
            supersedes = supersedes or _anchor_of_reference(line[lowered.index("supersedes") :])
    if raw and "superseded by" in raw.lower():
        superseded_by = superseded_by or _anchor_of_reference(raw[raw.lower().index("superseded by") :])
    if superseded_by and status != "superseded":
        fields["status"] = "superseded"  # a "Superseded by" link says so even without the word
    anchor = anchor_for(stem)
    hint = (
        f"adr-{anchor.removeprefix('ADR ')}-{slugify(title)}"[:80] if _NUMBER_RE.match(stem) else f"adr-{slugify(stem)}"
    )
    return ImportedRecord(
        FORMAT,
        source_path,
        anchor,
        "decision",
        title,
        content + "\n",
        fields,
        hint,
        supersedes=supersedes if supersedes != anchor else None,
        superseded_by=superseded_by if superseded_by != anchor else None,
    )


def parse(path: Path) -> Parsed:
    base = source_base(path)
    parsed = Parsed()
    files = adr_files(path)
    if path.is_dir():
        folder = adr_folder(path)
        parsed.covered.folders.add(relative_source(folder, base))  # not below it: ADRs are not nested
        for other in sorted(set(folder.glob("*.md")) - set(files)):
            if (
                is_adr_name(other.stem)
                or other.stem.isupper()
                or other.stem.lower() == "index"
                or "template" in other.stem.lower()
            ):
                continue  # a template, or what is about the folder (README, index)
            parsed.skipped.append(Skipped(relative_source(other, base), "not named as an ADR (0001-… or 20201016-…)"))
    parsed.read_each(files, base, record_from_text)
    link_successors(parsed.records)
    return parsed


def link_successors(records: list[ImportedRecord]) -> None:
    """An ADR that says it is "Superseded by" another, where that other does not say what it
    supersedes (an edit made by hand, a tool that writes only one side): the newer one supersedes
    it, so the chain reads from both ends."""
    by_anchor = {(PurePosixPath(r.source_path).parent, r.anchor): r for r in records}
    for older in records:
        if older.superseded_by is None:
            continue
        newer = by_anchor.get((PurePosixPath(older.source_path).parent, older.superseded_by))
        if newer is not None and newer.supersedes is None:
            newer.supersedes = older.anchor


__all__ = [
    "FORMAT",
    "anchor_for",
    "is_adr_name",
    "link_successors",
    "map_status",
    "parse",
    "record_from_text",
    "status_text",
]
