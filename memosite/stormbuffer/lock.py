"""The store's mutation lock and supersession journal, shared with ``sbuf``.

Stormbuffer serialises every change to a store with an exclusive ``flock`` on
``<store>/locks/mutation.lock`` (``fs2::try_lock_exclusive``). memosite takes the same lock on the
same file, so it never writes while ``sbuf`` is writing and the other way round. Where ``sbuf``
gives up at once when the lock is busy, memosite waits a little first.

A supersession rewrites two records. ``sbuf`` first writes ``locks/supersede.toml`` holding
both files' contents before and after, then the two files, then removes the journal; whoever
takes the lock next finishes an interrupted one. memosite writes the same journal and
recovers it the same way, so a crash in either tool leaves a store the other can repair.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import tomli_w

from memosite.errors import LockTimeout, StorageError
from memosite.lockfile import LockBusy, lock_file
from memosite.stormbuffer.storefile import STORE_FILE
from memosite.vault import atomic_write_bytes

LOCK_DIR = "locks"
MUTATION_LOCK = "mutation.lock"
SUPERSEDE_JOURNAL = "supersede.toml"
LOCK_TIMEOUT_SECONDS = 10.0


class StoreBusy(LockTimeout):
    code = "STORE_BUSY"


@contextmanager
def mutation_lock(
    store_dir: Path, *, timeout: float = LOCK_TIMEOUT_SECONDS, require_store: bool = True
) -> Iterator[None]:
    """Hold ``locks/mutation.lock`` (re-entrant within this process), then recover any journal."""
    if require_store and not (store_dir / STORE_FILE).is_file():
        raise StorageError(f"store is not initialized: {store_dir / STORE_FILE} does not exist")
    path = store_dir / LOCK_DIR / MUTATION_LOCK
    lock = lock_file(path)  # the same flock sbuf takes (fs2's exclusive lock is flock too)
    try:
        first = lock.acquire(timeout)
    except LockBusy:
        raise StoreBusy(f"the store is busy: another writer (sbuf or memosite) holds {path}; try again") from None
    except OSError as exc:
        raise StorageError(f"cannot lock {path}: {exc.strerror or exc}") from exc
    try:
        if first and require_store:
            recover_supersession(store_dir)
        yield
    finally:
        lock.release()


# --- the supersession journal -------------------------------------------------------------------


def journal_path(store_dir: Path) -> Path:
    return store_dir / LOCK_DIR / SUPERSEDE_JOURNAL


def _read_optional(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise StorageError(f"cannot read {path}: {exc.strerror or exc}") from exc


def write_pair(store_dir: Path, old: tuple[Path, bytes, str], new: tuple[Path, bytes | None, str]) -> None:
    """Rewrite two records as one step: journal, old file, new file, journal removed."""
    old_path, old_before, old_after = old
    new_path, new_before, new_after = new
    journal: dict[str, Any] = {
        "old_path": str(old_path.absolute()),
        "new_path": str(new_path.absolute()),
        "old_before": list(old_before),
        "old_after": old_after,
    }
    if new_before is not None:
        journal["new_before"] = list(new_before)
    journal["new_after"] = new_after
    path = journal_path(store_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(path, tomli_w.dumps(journal).encode("utf-8"))
    atomic_write_bytes(old_path, old_after.encode("utf-8"))
    atomic_write_bytes(new_path, new_after.encode("utf-8"))
    _remove(path)


def _remove(path: Path) -> None:
    try:
        path.unlink()
    except FileNotFoundError:
        return
    except OSError as exc:
        raise StorageError(f"cannot remove {path}: {exc.strerror or exc}") from exc


def _journal_bytes(data: dict[str, Any], key: str) -> bytes | None:
    value = data.get(key)
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(b, int) and 0 <= b <= 255 for b in value):
        raise ValueError(f"{key} is not a byte array")
    return bytes(value)


def recover_supersession(store_dir: Path) -> bool:
    """Finish a supersession a crashed writer left behind; True when there was one."""
    path = journal_path(store_dir)
    raw = _read_optional(path)
    if raw is None:
        return False
    try:
        data = tomllib.loads(raw.decode("utf-8"))
        old_path, new_path = Path(data["old_path"]), Path(data["new_path"])
        old_before, new_before = _journal_bytes(data, "old_before"), _journal_bytes(data, "new_before")
        old_after, new_after = str(data["old_after"]).encode("utf-8"), str(data["new_after"]).encode("utf-8")
        if old_before is None:
            raise KeyError("old_before")
    except (UnicodeDecodeError, tomllib.TOMLDecodeError, KeyError, TypeError, ValueError) as exc:
        raise StorageError(f"{path}: the supersession journal is invalid ({exc})") from exc
    old_now, new_now = _read_optional(old_path), _read_optional(new_path)
    if old_now not in (old_before, old_after):
        raise StorageError(f"supersession recovery conflicts with an authored change in {old_path}")
    if new_now not in (new_before, new_after):
        raise StorageError(f"supersession recovery conflicts with an authored change in {new_path}")
    if old_now != old_after:
        atomic_write_bytes(old_path, old_after)
    if new_now != new_after:
        atomic_write_bytes(new_path, new_after)
    _remove(path)
    return True
