"""Which template files are in effect for a vault, and their checksum, without Jinja.

memosite's own templates ship in the package; a vault's ``templates/`` may override any of them
by name (see :mod:`memosite.template_env`, which builds the environment). Whatever was rendered from
templates and kept is keyed by :func:`templates_checksum_for`, which every command checks before
using the index: it reads file names and times (and hashes a file only when those moved), so the
check costs a read-only command no Jinja import.
"""

from __future__ import annotations

import functools
import hashlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from memosite.resources import data_path

if TYPE_CHECKING:
    from memosite.vault import Vault

DEFAULT_PREFIX = "default:"
TEMPLATE_SUFFIX = ".j2"


def _template_files(root: Path) -> Iterator[tuple[str, Path]]:
    """``(name, path)`` of every template under ``root``, never following a symlink out."""
    if not root.is_dir() or root.is_symlink():
        return
    for walked, subdirs, files in os.walk(root):
        subdirs[:] = sorted(d for d in subdirs if not os.path.islink(os.path.join(walked, d)))
        for name in sorted(files):
            path = Path(walked) / name
            if name.endswith(TEMPLATE_SUFFIX) and not path.is_symlink():
                yield path.relative_to(root).as_posix(), path


@functools.lru_cache(maxsize=1)
def builtin_checksum() -> str:
    """A checksum of memosite's own templates (they change only with memosite)."""
    digest = hashlib.sha256()
    for name, path in _template_files(data_path("templates")):
        digest.update(f"{name}\0".encode())
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


@functools.lru_cache(maxsize=256)
def _file_digest(path: str, mtime_ns: int, ctime_ns: int, size: int) -> bytes:
    try:
        return hashlib.sha256(Path(path).read_bytes()).digest()
    except OSError:
        return b""


def override_names(override_dir: Path) -> list[str]:
    """The names of the templates ``override_dir`` overrides (or adds); empty when none."""
    return [name for name, _path in _template_files(override_dir)]


def templates_checksum(override_dir: Path) -> str:
    """A checksum of the effective templates: memosite's own plus ``override_dir``'s files."""
    digest = hashlib.sha256(builtin_checksum().encode())
    for name, path in _template_files(override_dir):
        try:
            stat = path.stat()
        except OSError:
            continue
        digest.update(f"override:{name}\0".encode())
        digest.update(_file_digest(str(path), stat.st_mtime_ns, stat.st_ctime_ns, stat.st_size))
    return digest.hexdigest()[:32]


def templates_checksum_for(vault: Vault) -> str:
    """The checksum of the templates the vault's fragments and views are rendered with."""
    return templates_checksum(vault.root / "templates")
