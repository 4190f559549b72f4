"""Repairs on a built site directory: empty it (a refused build), drop pages that are gone.

These run at the end of a build (from the plugin's ``on_post_build``) and know only the site
directory, not MkDocs.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterable
from pathlib import Path


def clean_site_dir(site_dir: Path) -> None:
    """Empty ``site_dir`` (a build that found a secret publishes nothing)."""
    if not site_dir.is_dir():
        return
    for entry in site_dir.iterdir():
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)


def remove_outputs(site_dir: Path, paths: Iterable[str]) -> None:
    """Delete pages of records that are gone, and directories they leave empty."""
    root = site_dir.resolve()
    for raw in paths:
        path = Path(raw)
        path.unlink(missing_ok=True)
        parent = path.parent
        while parent.resolve() != root and root in parent.resolve().parents:
            try:
                parent.rmdir()
            except OSError:
                break
            parent = parent.parent
