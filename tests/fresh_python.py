"""A script run in a fresh interpreter, for what only a new process shows (what an import loads)."""

from __future__ import annotations

import subprocess
import sys


def run_fresh(script: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Run ``script`` with ``args`` in a new Python process of this environment; fails the test
    when it does not exit 0 (its stderr is the message)."""
    done = subprocess.run(
        [sys.executable, "-c", script, *args],
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done
