"""memosite's version: a leaf, so that any layer may name it (a cache key, the MCP handshake)."""

from __future__ import annotations

__version__ = "0.1.0"
