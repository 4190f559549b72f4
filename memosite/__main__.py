"""``python -m memosite``."""

from __future__ import annotations

from memosite.console import main

main()
