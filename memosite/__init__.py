"""memosite: durable project memory for coding agents, kept as Markdown."""

from __future__ import annotations

from memosite.version import __version__

__all__ = ["__version__"]
