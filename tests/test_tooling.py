"""The code stays lint-clean, formatted and type-checked (ruff and mypy as configured in pyproject)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ["memosite", "benchmarks", "tests"]


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, encoding="utf-8", check=False
    )


@pytest.mark.parametrize("command", [("ruff", "check", *SOURCES), ("ruff", "format", "--check", *SOURCES)])
def test_ruff_is_clean(command: tuple[str, ...]) -> None:
    result = _run(*command)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.slow
def test_mypy_is_clean() -> None:
    result = _run("mypy", "memosite")
    assert result.returncode == 0, result.stdout + result.stderr
