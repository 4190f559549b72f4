"""A record file read from the vault: parsed, validated, and named without an absolute path.

``read_record`` is what every module that reads a record file uses; what a hand-written file leaves
out is inferred from where it lies (:func:`path_defaults`), and never written back by a read.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memosite.errors import InvalidRecord, StorageError
from memosite.kinds import kinds_in_directory
from memosite.schema import Record, format_iso, parse_record

_HEADING_RE = re.compile(r"^\s{0,3}#{1,6}\s+(.+?)\s*#*\s*$", re.MULTILINE)


def record_label(path: Path) -> str:
    """How messages name a record file: ``<project>/<kind dir>/<file>``, never an absolute path."""
    parts = path.parts
    if len(parts) >= 4 and parts[-4] == "projects":
        return "/".join(parts[-3:])
    return path.name


def path_defaults(path: Path) -> dict[str, Any]:
    """What a record's place in the vault tells about it, for a file written by hand that leaves
    the required fields out: the id is the file name, the kind its directory's (``plans/`` means a
    plan), the project its project directory, created and updated the file's modification time."""
    parts = path.parts
    if len(parts) < 4 or parts[-4] != "projects":
        return {}
    # A file without a source was not written by memosite (every write records one): a person's.
    defaults: dict[str, Any] = {"id": path.stem, "project": parts[-3], "source": "human"}
    kinds = kinds_in_directory(parts[-2])
    if kinds:
        defaults["kind"] = kinds[0]
    try:
        stamp = format_iso(datetime.fromtimestamp(path.stat().st_mtime, UTC))
    except OSError:
        return defaults
    defaults["created"] = stamp
    defaults["updated"] = stamp
    return defaults


def read_record(path: Path) -> Record:
    """Read and parse one record file; InvalidRecord when it does not parse or validate.

    Required fields a hand-written file leaves out are inferred from its path (see
    :func:`path_defaults`); they are written into the file only by the next change to it.
    """
    label = record_label(path)
    try:
        text = path.read_bytes().decode("utf-8")  # no newline translation: bodies stay byte-exact
    except UnicodeDecodeError as exc:
        raise InvalidRecord(f"not UTF-8 text: {label} (byte {exc.start})") from exc
    except OSError as exc:
        raise StorageError(f"cannot read {label}: {exc.strerror or exc}") from exc
    defaults = path_defaults(path)
    record = parse_record(text, path, defaults=defaults, where=label)
    if "project" in defaults and record.frontmatter.get("project") != defaults["project"]:
        record.frontmatter["project"] = defaults["project"]  # the directory decides the project
    return record


def record_title(record: Record) -> str:
    title = record.frontmatter.get("title")
    if isinstance(title, str) and title.strip():
        return " ".join(title.split())
    heading = _HEADING_RE.search(record.body)
    if heading:
        return heading.group(1).strip()
    for line in record.body.splitlines():
        if line.strip():
            text = line.strip()
            return text if len(text) <= 80 else text[:77].rstrip() + "..."
    return record.id
