"""What a built site holds, for the tests that compare two builds of one vault file by file."""

from __future__ import annotations

import re
from collections.abc import Container
from pathlib import Path

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
