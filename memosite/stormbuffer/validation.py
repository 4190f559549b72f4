"""Check record files strictly and report every problem with its file and field."""

from __future__ import annotations

import tomllib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memosite.errors import InvalidRecord
from memosite.stormbuffer.codec import load_frontmatter, split_document
from memosite.stormbuffer.model import GLOBAL_SCOPE, KINDS, Problem, check_frontmatter
from memosite.stormbuffer.store import RECORDS_DIR, STORE_FILE, Store, check_store_file
from memosite.vault import is_temp_name


@dataclass(frozen=True)
class FileProblem:
    path: str
    field: str
    message: str

    def describe(self) -> str:
        return f"{self.path}: {self.field}: {self.message}"

    def to_json(self) -> dict[str, str]:
        return {"path": self.path, "field": self.field, "message": self.message}


@dataclass
class ValidationReport:
    checked: int = 0
    problems: list[FileProblem] = field(default_factory=list)

    @property
    def valid(self) -> bool:
        return not self.problems

    def to_json(self) -> dict[str, Any]:
        return {
            "valid": self.valid,
            "checked": self.checked,
            "files_with_problems": len({p.path for p in self.problems}),
            "problems": [p.to_json() for p in self.problems],
        }


def check_record_text(text: str, path: Path, store: Store | None = None) -> list[Problem]:
    """Every problem of one record file: layout, TOML, each schema rule, and where it lives."""
    try:
        toml_text, _ = split_document(text, str(path))
        data = load_frontmatter(toml_text, str(path))
    except InvalidRecord as exc:
        return [Problem("frontmatter", exc.message.removeprefix(f"{path}: "))]
    problems = check_frontmatter(data)
    record_id, kind, scope = data.get("id"), data.get("kind"), data.get("scope")
    if isinstance(record_id, str) and path.stem != record_id.lower():
        problems.append(Problem("id", f"file is named {path.name}, expected {record_id.lower()}.md"))
    if store is not None:
        in_records = path.absolute().parent.parent == (store.path / RECORDS_DIR).absolute()
        if in_records and kind in KINDS and path.parent.name != kind:
            problems.append(Problem("kind", f"a {kind} record must live in {RECORDS_DIR}/{kind}/"))
        if isinstance(scope, str) and scope not in (GLOBAL_SCOPE, store.scope) and scope.startswith("project:"):
            problems.append(Problem("scope", f"{scope!r} is not this store's project ({store.scope})"))
    return problems


def _expand(paths: Iterable[Path]) -> Iterable[Path]:
    for path in paths:
        if path.is_dir():
            yield from (p for p in sorted(path.rglob("*.md")) if p.is_file() and not is_temp_name(p.name))
        else:
            yield path


def validate_files(paths: Sequence[Path], store: Store | None = None) -> ValidationReport:
    """Check ``paths`` (files, or directories searched for ``*.md``); never raises for bad files."""
    report = ValidationReport()
    for path in _expand(paths):
        report.checked += 1
        try:
            text = path.read_bytes().decode("utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            report.problems.append(FileProblem(str(path), "file", f"cannot read: {exc}"))
            continue
        checker = store if store is not None and _inside(path, store.path) else None
        for problem in check_record_text(text, path, checker):
            report.problems.append(FileProblem(str(path), problem.field, problem.message))
    return report


def validate_store(path: Path) -> ValidationReport:
    """Check ``store.toml`` and every record file of the store at ``path``."""
    store_file = path / STORE_FILE
    report = ValidationReport(checked=1)
    try:
        data = tomllib.loads(store_file.read_bytes().decode("utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        report.problems.append(FileProblem(str(store_file), "file", f"cannot read: {exc}"))
        return report
    problems = check_store_file(data)
    report.problems.extend(FileProblem(str(store_file), p.field, p.message) for p in problems)
    store = Store.open(path) if not problems else None
    records = validate_files([path / RECORDS_DIR], store)
    report.checked += records.checked
    report.problems.extend(records.problems)
    return report


def _inside(path: Path, directory: Path) -> bool:
    try:
        path.absolute().relative_to(directory.absolute())
    except ValueError:
        return False
    return True
