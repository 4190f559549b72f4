"""The product repository as ``memosite agents compile`` sees it: where each file it names really
lies, read within a bound, and the manifest of the rule files memosite wrote there.

A name leads to a file only when its real path stays inside the repository and is a regular file
(or nothing yet); a link out of it, a dangling link or a directory is left alone, with the reason.
The manifest ``.memosite-agents.json`` comes from the shared repository, so it is data: an entry
that is not a memosite rule file name is ignored.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path

from memosite.agentfiles.rules import RULE_DIRS, RULE_PREFIX
from memosite.errors import InvalidArguments, StorageError

MANIFEST = ".memosite-agents.json"
_MANIFEST_ABOUT = (
    "The files `memosite agents compile` wrote. It rewrites and removes only these; every other file is yours."
)
_RULE_NAME = re.compile(
    r"^(?P<dir>\.cursor/rules|\.claude/rules|\.github/instructions)/"
    + re.escape(RULE_PREFIX)
    + r"[a-z0-9][a-z0-9-]*(?P<suffix>\.instructions\.md|\.mdc|\.md)$"
)
MAX_READ = 16 * 1024 * 1024


def inside(path: Path, root: Path) -> bool:
    """Whether ``path`` lies at or below ``root`` (both as given: resolve them first)."""
    try:
        path.relative_to(root)
    except ValueError:
        return False
    return True


def read_bounded(path: Path) -> bytes:
    """The bytes of ``path``: STORAGE_ERROR when it cannot be read, INVALID_ARGUMENTS past
    :data:`MAX_READ` (no file an agent reads is that large)."""
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_READ + 1)
    except OSError as exc:
        raise StorageError(f"cannot read {path.name}: {exc.strerror or exc}") from exc
    if len(data) > MAX_READ:
        raise InvalidArguments(f"{path.name} is larger than {MAX_READ // (1024 * 1024)} MB: not a file agents read")
    return data


class Repository:
    """The product repository as a compile sees it: where each named file really lies."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.real_root = root.resolve()

    def locate(self, name: str) -> tuple[Path | None, str]:
        """Where ``name`` (relative to the root) would be read and written: its real path, or
        None and why it is left alone (a link out of the repository, a directory, a dangling link)."""
        path = self.root / name
        try:
            real = path.resolve()
        except (OSError, RuntimeError):
            return None, "cannot be resolved (a symlink loop?): left alone"
        if not inside(real, self.real_root):
            return None, "leads out of the repository: left alone"
        if path.is_symlink() and not real.exists():
            return None, "is a symlink to nothing: left alone"
        if real.exists() and not real.is_file():
            return None, "is not a regular file: left alone"
        return real, ""


def read_manifest(root: Path) -> list[str]:
    """The rule files an earlier compile wrote, as the manifest lists them (only names a compile
    could have written: the manifest is shared through git and may say anything)."""
    path = root / MANIFEST
    if not path.is_file():
        return []
    try:
        data = json.loads(read_bounded(path).decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise InvalidArguments(
            f"{MANIFEST} is not valid JSON ({exc}): restore it from git, or delete it (memosite then"
            " leaves the rule files it wrote before in place, as a person's)"
        ) from exc
    files = data.get("files") if isinstance(data, dict) else None
    if not isinstance(files, list):
        raise InvalidArguments(f"{MANIFEST} lists no files: restore it from git, or delete it")
    return sorted({entry for entry in files if isinstance(entry, str) and _is_rule_name(entry)})


def _is_rule_name(name: str) -> bool:
    match = _RULE_NAME.match(name)
    if match is None:
        return False
    return any(match["dir"] == directory and match["suffix"] == suffix for directory, suffix in RULE_DIRS.values())


def manifest_bytes(files: Sequence[str]) -> bytes:
    """The manifest listing ``files``, as a compile writes it."""
    return (json.dumps({"about": _MANIFEST_ABOUT, "files": sorted(files)}, indent=2) + "\n").encode("utf-8")
