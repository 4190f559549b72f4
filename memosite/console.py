"""The ``memosite`` console script: a hook goes straight to its runner, the rest to the CLI.

Agents run ``memosite hook prompt`` in a fresh process at every prompt, so what it imports is
what the person waits for: click alone costs tens of milliseconds, and its usage errors exit 2,
which an agent reads as "block this prompt". Every other command goes to :mod:`memosite.cli`.
"""

from __future__ import annotations

import sys
from typing import Any

from memosite.process_end import leave_to_os


def main(argv: list[str] | None = None) -> Any:
    args = sys.argv[1:] if argv is None else argv
    try:
        if args[:1] == ["hook"]:
            from memosite.hooks.runner import main as run_hook

            sys.exit(run_hook(args[1:]))
        from memosite.cli import main as run_cli

        return run_cli(args)
    finally:
        if argv is None:  # the console script itself, about to exit (not a caller's own process)
            leave_to_os()
