"""Every test gets its own vault and HOME under tmp_path; shared ways to run the real CLI."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner


@pytest.fixture(autouse=True)
def isolated_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    # This user's cache, state and data directories (compiled templates, the site manifest key, the
    # demo) follow HOME.
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.delenv("XDG_STATE_HOME", raising=False)
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    monkeypatch.setenv("MEMOSITE_VAULT", str(tmp_path / "vault"))
    monkeypatch.setenv("MEMOSITE_PROJECT", "demo")
    monkeypatch.delenv("MEMOSITE_DEBUG", raising=False)
    # A .memosite.toml or .git above the test's directory (one left in /tmp) is no part of the test,
    # for memosite's own upward search and for git's.
    monkeypatch.setenv("MEMOSITE_CEILING_DIRECTORIES", str(tmp_path.parent))
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))
    # The suite run from a coding agent's shell is still a person's command line to the tests that
    # do not say otherwise: the markers that would make every CLI call an agent's are cleared.
    from memosite.provenance import AGENT_SHELL_MARKERS

    for marker in AGENT_SHELL_MARKERS:
        monkeypatch.delenv(marker.variable, raising=False)


@pytest.fixture
def unpinned_env(tmp_path: Path) -> dict[str, str]:
    """An environment that pins no project, for resolving one from a directory under tmp_path."""
    return {"HOME": os.environ["HOME"], "MEMOSITE_CEILING_DIRECTORIES": str(tmp_path.parent)}


@pytest.fixture
def vault_dir(tmp_path: Path) -> Path:
    return Path(os.environ["MEMOSITE_VAULT"])


@pytest.fixture
def vault(vault_dir: Path) -> Iterator[Any]:
    from memosite.vault import Vault

    opened = Vault.open(vault_dir)
    yield opened
    opened.close()


@pytest.fixture(scope="session")
def memosite_exe() -> Path:
    """The installed ``memosite`` console script, next to the interpreter running the tests
    (a venv's bin/ or Scripts/), wherever the checkout lives."""
    directory = Path(sys.executable).parent
    for name in ("memosite", "memosite.exe"):
        if (directory / name).exists():
            return directory / name
    pytest.fail(f"the memosite console script is not installed next to {sys.executable}: pip install -e .")


@dataclass(frozen=True)
class CliOutcome:
    exit_code: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        return json.loads(self.stdout)


@pytest.fixture
def run_cli() -> Callable[..., CliOutcome]:
    """Run the command line in-process, through the same entry point as the console script."""
    from memosite.cli import cli

    def run(*args: str, input: str | None = None) -> CliOutcome:
        result = CliRunner().invoke(cli, list(args), input=input, catch_exceptions=False, standalone_mode=True)
        return CliOutcome(result.exit_code, result.stdout, result.stderr)

    return run


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    """A headless Chromium for a test module (see ``browser_support``)."""
    from browser_support import chromium

    with chromium() as launched:
        yield launched
