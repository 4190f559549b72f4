"""Files shipped with memosite (templates, the default mkdocs.yml, site_src/), found installed or in a checkout."""

from __future__ import annotations

from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parent
# The Memory page's stylesheet and script (under site_src/), which every site and export ships.
SITE_ASSETS = ("assets/memosite/memory.css", "assets/memosite/memory.js")


def data_path(name: str) -> Path:
    """Path of a shipped resource: inside the wheel (``memosite/_data``) or the source checkout."""
    installed = _PACKAGE_DIR / "_data" / name
    if installed.exists():
        return installed
    checkout = _PACKAGE_DIR.parent / name
    if checkout.exists():
        return checkout
    raise FileNotFoundError(f"memosite resource missing: {name}")
