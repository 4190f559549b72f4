"""Check record files and stores strictly, reporting every problem with its file and field.

For a store this is everything ``sbuf`` would refuse: ``store.toml`` itself, a shared store's
ignore rules, each record's layout and schema, a record whose scope is not the store's, and two
files that hold one id (which makes every ``sbuf`` command on the store fail).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memosite.errors import InvalidArguments, InvalidRecord
from memosite.stormbuffer.codec import load_frontmatter, split_document
from memosite.stormbuffer.locate import location_scope
from memosite.stormbuffer.model import Problem, check_frontmatter
from memosite.stormbuffer.store import Store
from memosite.stormbuffer.storefile import STORE_FILE, check_store_file, gitignore_problem, load_store_toml
from memosite.stormbuffer.values import parse_uuid


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

    def add(self, path: Path, problems: Iterable[Problem]) -> None:
        self.problems.extend(FileProblem(str(path), p.field, p.message) for p in problems)

    def to_json(self) -> dict[str, Any]:
        return {
            "valid": self.valid,
            "checked": self.checked,
            "files_with_problems": len({p.path for p in self.problems}),
            "problems": [p.to_json() for p in self.problems],
        }


def check_record_text(text: str, path: Path, store_scope: str | None = None) -> tuple[list[Problem], str | None]:
    """Every problem of one record file, and its canonical id when it has a usable one."""
    try:
        toml_text, body = split_document(text, str(path))
        data = load_frontmatter(toml_text, str(path))
    except InvalidRecord as exc:
        return [Problem("frontmatter", exc.message.removeprefix(f"{path}: "))], None
    problems = check_frontmatter(data, body)
    scope = data.get("scope")
    if store_scope is not None and isinstance(scope, str) and scope != store_scope:
        problems.append(Problem("scope", f"{scope!r} is outside this store's scope ({store_scope!r})"))
    return problems, parse_uuid(data.get("id"))


def _expand(paths: Iterable[Path]) -> Iterable[Path]:
    for path in paths:
        if path.is_dir():
            yield from (p for p in sorted(path.rglob("*.md")) if p.is_file() and not p.is_symlink())
        else:
            yield path


def validate_files(paths: Sequence[Path], store: Store | None = None) -> ValidationReport:
    """Check ``paths`` (files, or directories searched for ``*.md``); never raises for bad files.

    With ``store``, files inside it are also checked against its scope and for repeated ids.
    """
    report = ValidationReport()
    owners: dict[str, Path] = {}
    for path in _expand(paths):
        report.checked += 1
        try:
            text = path.read_bytes().decode("utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            report.problems.append(FileProblem(str(path), "file", f"cannot read: {exc}"))
            continue
        inside = store is not None and _inside(path, store.path)
        problems, record_id = check_record_text(text, path, store.scope if inside and store else None)
        report.add(path, problems)
        if inside and record_id is not None:
            first = owners.setdefault(record_id, path)
            if first != path:
                report.add(path, [Problem("id", f"record {record_id} appears in multiple files: also in {first}")])
    return report


def validate_store(path: Path) -> ValidationReport:
    """Check ``store.toml``, the ignore rules and every record file of the store at ``path``."""
    store_file = path / STORE_FILE
    report = ValidationReport(checked=1)
    try:
        data = load_store_toml(store_file)
    except (InvalidArguments, InvalidRecord) as exc:
        report.problems.append(FileProblem(str(store_file), "file", exc.message))
        return report
    problems = check_store_file(data, location_scope(path))
    report.add(store_file, problems)
    if problems:
        return report
    store = Store.open(path)
    ignore_problem = gitignore_problem(path, store.info.config.visibility)
    if ignore_problem:
        report.add(path / ".gitignore", [Problem("rules", ignore_problem)])
    records = validate_files(list(store.record_files()), store)
    report.checked += records.checked
    report.problems.extend(records.problems)
    return report


def _inside(path: Path, directory: Path) -> bool:
    try:
        path.absolute().relative_to(directory.absolute())
    except ValueError:
        return False
    return True
