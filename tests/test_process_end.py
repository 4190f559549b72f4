"""A one-shot command leaves what it built to the operating system, and nothing else changes.

The console script freezes the objects still alive when its command is done, so Python's exit
does not walk them with the cycle collector (:mod:`memosite.process_end`). What a person or an
agent sees of the command (its output, its exit status, its one-line errors) stays the same, and
a caller that runs the CLI inside its own process keeps its collector as it was.
"""

from __future__ import annotations

import gc
import json
import subprocess
import sys
from pathlib import Path

from memosite.console import main

# Runs the console script's main as the installed script does (argv from sys.argv), then says at
# exit how many objects were frozen and what the command's exit status was.
_RUN = """
import atexit, gc, sys
atexit.register(lambda: sys.stderr.write(f"\\nfrozen={gc.get_freeze_count()}\\n"))
from memosite.console import main
sys.argv = ["memosite", *sys.argv[1:]]
main()
"""


def _command(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-P", "-c", _RUN, *args],
        capture_output=True,
        text=True,
        encoding="utf-8",
        check=False,
        timeout=120,
    )


def _frozen(stderr: str) -> int:
    return int(stderr.rsplit("frozen=", 1)[1].split()[0])


def test_a_finished_command_leaves_its_objects_to_the_os_and_prints_what_it_did(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    title = "Kafka-Konsument: Ξ offset Смещение 偏移 إزاحة 🚀"
    done = _command(
        "--vault",
        str(vault),
        "--project",
        "demo",
        "--json",
        "upsert",
        "--kind",
        "trap",
        "--title",
        title,
        "--body",
        "Commit the offset after the write.",
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["action"] == "created"
    assert _frozen(done.stderr) > 0
    listed = _command("--vault", str(vault), "--project", "demo", "--json", "list")
    assert listed.returncode == 0, listed.stderr
    assert title in listed.stdout
    assert _frozen(listed.stderr) > 0


def test_a_refused_command_keeps_its_exit_status_and_its_one_line_error(tmp_path: Path) -> None:
    done = _command("--vault", str(tmp_path / "vault"), "upsert", "--kind", "no-such-kind", "--title", "x")
    assert done.returncode == 1
    assert "no-such-kind" in done.stderr
    assert "Traceback" not in done.stderr
    assert _frozen(done.stderr) > 0


def test_a_caller_running_the_cli_in_its_own_process_keeps_its_collector(tmp_path: Path) -> None:
    before = gc.get_freeze_count()
    vault = str(tmp_path / "vault")
    main(["--vault", vault, "--project", "demo", "--json", "upsert", "--kind", "log", "--title", "Ω", "--body", "β"])
    assert gc.get_freeze_count() == before
