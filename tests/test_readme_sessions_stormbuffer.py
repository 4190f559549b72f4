"""The README's "Session logs" and "Stormbuffer stores" commands run as written, in a real process."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
from pathlib import Path

import pytest

README = Path(__file__).resolve().parent.parent / "README.md"


def section_commands(title: str) -> list[list[str]]:
    section = README.read_text(encoding="utf-8").split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```sh\n(.*?)```", section, re.DOTALL)
    assert block is not None, title
    commands = []
    for line in block.group(1).splitlines():
        line = line.split("  #", 1)[0].strip()
        for part in line.split("&&"):
            if part.strip():
                commands.append(shlex.split(part))
    assert commands and all(words[0] == "memosite" for words in commands)
    return commands


def run_all(commands: list[list[str]], work: Path, env: dict[str, str], exe: Path) -> None:
    for words in commands:
        done = subprocess.run(
            [str(exe), *words[1:]], cwd=work, env=env, capture_output=True, text=True, encoding="utf-8", input=""
        )
        assert done.returncode == 0, f"{shlex.join(words)}: {done.stderr}"
        assert "Traceback" not in done.stderr


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return {
        **os.environ,
        "MEMOSITE_VAULT": str(tmp_path / "vault"),
        "MEMOSITE_PROJECT": "readme",
        "HOME": str(tmp_path / "home"),
        "XDG_DATA_HOME": str(tmp_path / "data"),
    }


@pytest.mark.slow
def test_the_session_commands_run_as_written(tmp_path: Path, env: dict[str, str], memosite_exe: Path) -> None:
    work = tmp_path / "work"
    (work / ".vtcode" / "sessions").mkdir(parents=True)  # a project vtcode has run in (`list --root` needs one)
    run_all(section_commands("Session logs"), work, env, memosite_exe)
    shown = subprocess.run(
        [str(memosite_exe), "session", "show", "s42", "--json"],
        cwd=work, env=env, capture_output=True, text=True, encoding="utf-8", check=True,
    )  # fmt: skip
    summary = json.loads(shown.stdout)
    assert (summary["status"], summary["turns"], summary["facts"]) == ("ended", 1, 1)
    pack = tmp_path / "vault" / "projects" / "readme" / "sessions" / "s42" / "derived" / "audit-pack.json"
    assert pack.is_file()


@pytest.mark.slow
def test_the_stormbuffer_commands_run_as_written(tmp_path: Path, env: dict[str, str], memosite_exe: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    run_all(section_commands("Stormbuffer stores"), work, env, memosite_exe)
    assert (work / ".sbuf" / ".gitignore").read_text(encoding="utf-8") == "*\n!.gitignore\n"
    assert len(list((work / ".sbuf" / "records").glob("*.md"))) == 1
    assert len(list((tmp_path / "other" / ".sbuf" / "records").glob("*.md"))) == 1
    assert (tmp_path / "data" / "stormbuffer" / "store.toml").is_file()
