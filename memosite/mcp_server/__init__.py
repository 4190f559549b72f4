"""memosite as an MCP server: the core API as tools for coding agents, over stdio.

Named ``mcp_server`` so it never shadows the ``mcp`` SDK it is built on. The SDK is imported only
when a server is built, so ``memosite mcp --print-config`` stays fast.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memosite.mcp_server.server import build_server, run_stdio

__all__ = ["build_server", "run_stdio"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from memosite.mcp_server import server

        return getattr(server, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
