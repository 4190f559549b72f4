"""The published site: build, serve and publish a vault with MkDocs Material.

``build_site`` (``build``), ``publish_to_dir`` (``engines``), ``serve`` / ``SiteServer`` (``server``) and
``publish_gh_pages`` (``ghpages``) are imported on first use, so that importing this package stays
cheap. ``export_docs`` (``export``) writes the memory section as plain Markdown.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "BuildResult": "memosite.site.build",
    "build_site": "memosite.site.build",
    "publish_to_dir": "memosite.site.engines",
    "SiteServer": "memosite.site.server",
    "serve": "memosite.site.server",
    "GhPagesResult": "memosite.site.ghpages",
    "publish_gh_pages": "memosite.site.ghpages",
    "export_docs": "memosite.site.export",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'memosite.site' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
