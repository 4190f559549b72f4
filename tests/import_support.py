"""Shared by the tests of ``memosite import``: the real files of tests/corpus/import, copied where
a test may change them, and a way to read what an import wrote."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from memosite.recordfile import read_record

CORPUS = Path(__file__).with_name("corpus") / "import"
PROJECT = "demo"  # the conftest's MEMOSITE_PROJECT


def corpus_copy(name: str, tmp_path: Path) -> Path:
    """``tests/corpus/import/<name>`` copied under ``tmp_path`` (without its SOURCE.md)."""
    target = tmp_path / "sources" / name
    shutil.copytree(CORPUS / name, target, ignore=shutil.ignore_patterns("SOURCE.md"))
    return target


def records(vault_dir: Path, kind_dir: str | None = None) -> dict[str, Any]:
    """Every record file of the project (of one kind directory) by id."""
    base = vault_dir / "projects" / PROJECT
    pattern = f"{kind_dir}/*.md" if kind_dir else "*/*.md"
    found = {}
    for path in sorted(base.glob(pattern)):
        if path.name.endswith(".accepted.md"):
            continue
        record = read_record(path)
        found[record.id] = record
    return found


def snapshot(vault_dir: Path) -> dict[str, bytes]:
    """The bytes of every record file: equal before and after means nothing changed."""
    base = vault_dir / "projects"
    return {
        str(p.relative_to(base)): p.read_bytes() for p in sorted(base.rglob("*.md")) if "/" in str(p.relative_to(base))
    }
