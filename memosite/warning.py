"""A warning for the person at the terminal: one line on stderr, the command goes on.

A leaf: every layer may warn, so this module imports nothing of memosite's.
"""

from __future__ import annotations

import sys


def warn(message: str) -> None:
    """A non-fatal problem, one line on stderr (stdout stays clean for --json)."""
    sys.stderr.write(f"memosite: warning: {message}\n")
