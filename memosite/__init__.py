"""memosite: durable project memory for coding agents, kept as Markdown."""

from __future__ import annotations

__version__ = "0.1.0"
