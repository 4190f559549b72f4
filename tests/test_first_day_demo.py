"""The demo as the README has a newcomer run it (issue 25): from a fresh clone, in any directory,
then queried from the command line with the commands it prints."""

from __future__ import annotations

import os
import queue
import re
import shlex
import socket
import subprocess
import threading
import urllib.request
from pathlib import Path
from typing import Any

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


@pytest.fixture
def clone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh clone of memosite's repository, as far as the demo can tell: a git work tree with a
    README, the directory the newcomer runs the demo in. No vault or project is configured."""
    root = tmp_path / "memosite"
    root.mkdir()
    (root / "README.md").write_text("# memosite\n", encoding="utf-8")
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    monkeypatch.chdir(root)
    monkeypatch.delenv("MEMOSITE_VAULT")
    monkeypatch.delenv("MEMOSITE_PROJECT")
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    return root


def ok(run_cli: Any, *args: str) -> dict[str, Any]:
    outcome = run_cli(*args, "--json")
    assert outcome.exit_code == 0, outcome.stdout + outcome.stderr
    data: dict[str, Any] = outcome.json()
    return data


def untracked(repo: Path) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), "status", "--porcelain"], capture_output=True, text=True, encoding="utf-8", check=True
    )
    return done.stdout


def test_the_demo_lands_outside_the_clone_and_the_commands_it_prints_query_it(clone: Path, run_cli: Any) -> None:
    before = untracked(clone)
    printed = run_cli("demo")
    assert printed.exit_code == 0, printed.stderr
    demo = Path.home() / ".local" / "share" / "memosite" / "demo"
    assert f"demo vault: {demo}, project acme-shop" in printed.stdout
    assert (demo / "projects/acme-shop/TRAPS.md").is_file()
    assert (demo.parent / "demo-repo" / "AGENTS.md").is_file()
    assert untracked(clone) == before and sorted(p.name for p in clone.iterdir()) == [".git", "README.md"]
    commands = printed.stdout.split("query it from any directory:\n", 1)[1].splitlines()
    assert len(commands) == 2
    search, brief = (shlex.split(line.strip())[1:] for line in commands)
    found = run_cli(*search, "--json").json()
    assert found["results"][0]["id"] == "payment-retries-must-carry-an-idempotency-key"
    assert "idempotency key" in run_cli(*brief).stdout
    # The README's next step: write to the demo from the command line, from the clone.
    written = ok(run_cli, "--vault", str(demo), "--project", "acme-shop", "upsert", "--kind", "trap",
                 "--title", "Coupons stack", "--body", "Two coupons stack on one order.")  # fmt: skip
    assert written["action"] == "created" and untracked(clone) == before


def test_the_demos_json_names_the_commands_too(clone: Path, run_cli: Any) -> None:
    data = ok(run_cli, "demo")
    assert data["project"] == "acme-shop" and len(data["commands"]) == 2
    assert all(f"--vault {data['vault']} --project acme-shop" in command for command in data["commands"])


def test_a_search_without_project_says_which_project_it_searched_and_that_others_exist(
    clone: Path, run_cli: Any
) -> None:
    demo = ok(run_cli, "demo")["vault"]
    empty = run_cli("--vault", demo, "search", "payment", "retries")
    assert empty.exit_code == 0
    assert empty.stdout == (
        "no matches in project memosite (from the git repository's name);"
        " this vault also holds acme-shop: --project acme-shop, or --all-projects\n"
    )
    everywhere = run_cli("--vault", demo, "search", "zzzz-nothing", "--all-projects")
    assert everywhere.stdout == "no matches in any project of the vault\n"


def test_a_demo_asked_into_the_clone_is_refused_before_anything_is_written(clone: Path, run_cli: Any) -> None:
    refused = run_cli("demo", "--vault", "./memosite-demo")
    assert refused.exit_code == 1 and len(refused.stderr.splitlines()) == 1
    assert "leave --vault out" in refused.stderr and ".local/share/memosite/demo" in refused.stderr
    assert sorted(p.name for p in clone.iterdir()) == [".git", "README.md"]


def test_a_demo_directory_outside_any_repository_is_used_as_given(clone: Path, run_cli: Any, tmp_path: Path) -> None:
    data = ok(run_cli, "demo", "--vault", str(tmp_path / "elsewhere"), "--project", "shop")
    assert data["vault"] == str(tmp_path / "elsewhere") and data["project"] == "shop"
    assert (tmp_path / "elsewhere-repo" / "AGENTS.md").is_file()


def test_the_demo_follows_xdg_data_home(
    clone: Path, run_cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    assert ok(run_cli, "demo")["vault"] == str(tmp_path / "data" / "memosite" / "demo")


def test_demo_help_agrees_with_itself_and_with_the_readme(run_cli: Any) -> None:
    shown = " ".join(run_cli("demo", "--help").stdout.split())
    assert "~/.local/share/memosite/demo" in shown
    assert "default: MEMOSITE_VAULT" not in shown and "never MEMOSITE_VAULT or ~/.memosite" in shown
    assert "(default: acme-shop)" in shown and "--serve" in shown
    readme = README.read_text(encoding="utf-8")
    first = readme.split("## Try it on a fresh machine", 1)[1].split("## ", 1)[0]
    assert 'python3 -m venv .venv && .venv/bin/pip install ".[semantic]" && .venv/bin/memosite demo --serve' in first
    assert "~/.local/share/memosite/demo" in first and "./memosite-demo" not in first


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_the_readmes_first_command_serves_the_demo_from_a_fresh_clone(clone: Path, memosite_exe: Path) -> None:
    before = untracked(clone)
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("MEMOSITE_VAULT", "MEMOSITE_PROJECT")}
    lines: queue.Queue[str] = queue.Queue()
    with subprocess.Popen(
        [str(memosite_exe), "demo", "--serve", "--dev-addr", f"127.0.0.1:{port}"],
        cwd=clone,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        encoding="utf-8",
        env=env,
    ) as process:
        assert process.stderr is not None

        def read(stream: Any) -> None:
            for line in stream:
                lines.put(line)
            lines.put("")

        threading.Thread(target=read, args=(process.stderr,), daemon=True).start()
        try:
            while True:  # the server says when it listens: that line is the signal to ask it
                line = lines.get(timeout=300)
                assert line, "memosite demo --serve ended before serving"
                if re.search(rf"Serving on http://127\.0\.0\.1:{port}/", line):
                    break
            with urllib.request.urlopen(
                f"http://127.0.0.1:{port}/memory/acme-shop/traps/payment-retries-must-carry-an-idempotency-key/",
                timeout=60,
            ) as response:
                page = response.read().decode("utf-8")
            assert "idempotency key" in page
        finally:
            process.terminate()
            out, _ = process.communicate(timeout=60)
    assert "query it from any directory:" in out
    assert sorted(p.name for p in clone.iterdir()) == [".git", "README.md"]
    assert untracked(clone) == before
