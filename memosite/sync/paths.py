"""What a path in the vault repository is, for merging: a record, a compiled view, a conflict
sidecar, an append-only ``.jsonl`` log, the vault's ``config.json``, or any other file. And how
sidecars are named."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Literal

from memosite.kinds import RECORD_DIRS, is_view_file
from memosite.vault import CONFLICT_MARK, is_record_name

PathClass = Literal["record", "view", "sidecar", "jsonl", "config", "file"]
CONFIG_PATH = "config.json"

SHORT_ID_LENGTH = 8
_SIDECAR_RE = re.compile(r"^(?P<stem>.+?)\.conflict\.(?P<short>[0-9a-f]{4,40})(?P<suffix>\.[^.]*)?$")


def classify(path: str) -> PathClass:
    """The class of a vault-relative POSIX path (``projects/demo/traps/x.md`` is a record)."""
    parts = path.split("/")
    name = parts[-1]
    if CONFLICT_MARK in name:
        return "sidecar"
    if len(parts) == 4 and parts[0] == "projects" and parts[2] in RECORD_DIRS and is_record_name(name):
        return "record"
    if len(parts) == 3 and parts[0] == "projects" and is_view_file(name):
        return "view"
    if name.endswith(".jsonl"):
        return "jsonl"
    if path == CONFIG_PATH:
        return "config"
    return "file"


def record_project(path: str) -> str | None:
    """The project a record path belongs to (the directory decides, as everywhere)."""
    parts = path.split("/")
    return parts[1] if len(parts) >= 3 and parts[0] == "projects" else None


def blob_id(data: bytes) -> str:
    """The id git gives ``data`` as a blob (``git hash-object``): a version's name in history."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


def sidecar_path(path: str, remote_version: bytes) -> str:
    """Where the remote version of ``path`` is kept beside the local one:
    ``<slug>.conflict.<short id>.md``, the short id being the remote version's blob id, so the same
    remote version always lands in the same sidecar on every machine."""
    directory, _, name = path.rpartition("/")
    stem, dot, suffix = name.rpartition(".")
    if not dot or not stem:
        stem, suffix = name, ""
    short = blob_id(remote_version)[:SHORT_ID_LENGTH]
    sidecar = f"{stem}{CONFLICT_MARK}{short}" + (f".{suffix}" if suffix else "")
    return f"{directory}/{sidecar}" if directory else sidecar


@dataclass(frozen=True)
class SidecarName:
    """A sidecar's name taken apart: the file it stands beside and the remote version's short id."""

    original: str  # vault-relative path of the file the sidecar belongs to
    short_id: str


def parse_sidecar(path: str) -> SidecarName | None:
    directory, _, name = path.rpartition("/")
    match = _SIDECAR_RE.match(name)
    if match is None:
        return None
    original = match.group("stem") + (match.group("suffix") or "")
    return SidecarName(f"{directory}/{original}" if directory else original, match.group("short"))
