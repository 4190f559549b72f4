"""What a built site holds, for the tests that compare two builds of one vault file by file."""

from __future__ import annotations

import re
from collections.abc import Callable, Container, Mapping
from pathlib import Path
from typing import Any

from memosite.demo import write_demo_vault
from memosite.plugin import MemositePlugin
from memosite.site.build import load_site_config, memosite_plugin, run_build
from memosite.store import upsert_record
from memosite.vault import Vault

# The one part two builds of the same vault write differently: the views' compile stamp.
_COMPILED = re.compile(rb"Last compiled: [0-9T:.Z-]+")


def site_files(site_dir: Path, *, leave_out: Container[str] = ()) -> dict[str, bytes]:
    """Every file under ``site_dir`` by its relative POSIX path, its bytes with the compile stamp
    blanked; files named in ``leave_out`` are skipped."""
    return {
        path.relative_to(site_dir).as_posix(): _COMPILED.sub(b"Last compiled: -", path.read_bytes())
        for path in sorted(site_dir.rglob("*"))
        if path.is_file() and path.name not in leave_out
    }


# Titles and text in the scripts a site must render alike, for the tests that build it two ways.
SCRIPTS = [
    "Зачем нужен ключ",  # Cyrillic
    "Ο πίνακας κλειδώνει",  # Greek
    "数据库迁移会锁住订单表",  # CJK
    "المفتاح مطلوب",  # Arabic
    "Café résumé naïve",  # accents
    "🚀 deploys ⚠️ break",  # emoji
]


def demo_with_every_script(vault: Vault, body: Callable[[str], str]) -> None:
    """The demo vault, and a trap per text of :data:`SCRIPTS` titled by it, whose body ``body(text)`` makes."""
    write_demo_vault(vault)
    for n, text in enumerate(SCRIPTS):
        upsert_record(
            vault,
            "demo",
            kind="trap",
            body=body(text),
            frontmatter={"title": f"{text} {n}"},
            allow_duplicate=True,
        )


def build_uncached(
    vault: Vault, site_dir: Path, *, config: Mapping[str, Any] | None = None, **switches: Any
) -> tuple[MemositePlugin, dict[str, bytes]]:
    """A build of ``vault`` into ``site_dir`` that renders every page (no page cache), with the
    plugin's ``switches`` set and ``config`` keys put in the site's configuration: the plugin as it
    ended the build, and :func:`site_files` of what it wrote."""
    site = load_site_config(vault, site_dir=site_dir)
    for key, value in (config or {}).items():
        site[key] = value
    plugin = memosite_plugin(site)
    plugin.config.cache = False
    for name, value in switches.items():
        setattr(plugin, name, value)
    run_build(site)
    return plugin, site_files(site_dir)
