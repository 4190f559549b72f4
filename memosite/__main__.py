"""``python -m memosite``."""

from __future__ import annotations

from memosite.cli import main

main()
