"""Every test gets its own vault and HOME under tmp_path."""

from __future__ import annotations

import os
from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def isolated_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("MEMOSITE_VAULT", str(tmp_path / "vault"))
    monkeypatch.setenv("MEMOSITE_PROJECT", "demo")
    monkeypatch.delenv("MEMOSITE_DEBUG", raising=False)


@pytest.fixture
def vault_dir(tmp_path: Path) -> Path:
    return Path(os.environ["MEMOSITE_VAULT"])


@pytest.fixture
def vault(vault_dir: Path):  # type: ignore[no-untyped-def]
    from memosite.vault import Vault

    opened = Vault.open(vault_dir)
    yield opened
    opened.close()
