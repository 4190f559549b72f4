"""The git merge drivers memosite registers in the vault repository (``git pull`` uses them).

``python -m memosite.sync.driver record|union|file %O %A %B %P``: git hands over the ancestor
(``%O``), our version (``%A``, where the result goes) and theirs (``%B``) of the path ``%P``; the
rules are those sync applies (:mod:`memosite.sync.resolution`). The result is always clean — a
conflict keeps ours and writes theirs beside it as a sidecar in the work tree (git runs drivers at
its top level) — so git never writes conflict markers into a vault file. A record removed on one
side never reaches a driver: git stops on it, and ``memosite sync`` settles it by its tombstones.
"""

from __future__ import annotations

import sys
from pathlib import Path

from memosite.sync.resolution import MergeContext, resolve_path
from memosite.vault import atomic_write_bytes


def _nothing(*_: object) -> None:
    return None


def run_driver(argument: str, base: Path, ours: Path, theirs: Path, path: str, work_tree: Path) -> int:
    """Merge into ``ours``; returns git's exit status for the driver (0: merged cleanly)."""
    base_bytes = base.read_bytes() or None  # an empty ancestor: both sides added the path
    ours_bytes, theirs_bytes = ours.read_bytes(), theirs.read_bytes()
    if argument not in ("record", "union", "file"):
        sys.stderr.write(f"memosite merge driver: unknown kind {argument!r}\n")
        return 2
    resolution = resolve_path(path, base_bytes, ours_bytes, theirs_bytes, MergeContext(_nothing, _nothing))
    if resolution.content is None:  # only a deletion verdict gives None, and no driver sees one
        return 1
    ours.write_bytes(resolution.content)
    if resolution.sidecar is not None and resolution.sidecar_content is not None:
        atomic_write_bytes(work_tree / resolution.sidecar, resolution.sidecar_content)
        sys.stderr.write(f"memosite: conflict in {path}: the remote version is kept in {resolution.sidecar}\n")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 5:
        sys.stderr.write("usage: python -m memosite.sync.driver record|union|file BASE OURS THEIRS PATH\n")
        return 2
    argument, base, ours, theirs, path = args
    try:
        return run_driver(argument, Path(base), Path(ours), Path(theirs), path, Path.cwd())
    except Exception as exc:  # a driver that crashes must leave git a clear "conflict", not a traceback
        sys.stderr.write(f"memosite merge driver failed on {path}: {exc}\n")
        return 1


if __name__ == "__main__":
    sys.exit(main())
