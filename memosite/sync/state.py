"""What this machine remembers about its syncs: ``<vault>/.memosite/sync-state.json``.

Disposable and local (it is under ``.memosite/``): the last sync and its outcome, the last push,
the error of the last push that failed (shown by ``memosite status`` until a push succeeds), and
when an automatic push was last asked for.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from typing import Any

from memosite.lockfile import lock_file
from memosite.schema import format_iso, utc_now
from memosite.vault import Vault, atomic_write_text

STATE_FILE = "sync-state.json"


def read_state(vault: Vault) -> dict[str, Any]:
    try:
        data = json.loads(vault.internal_path(STATE_FILE).read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError, UnicodeDecodeError):
        return {}
    return data if isinstance(data, dict) else {}


@contextlib.contextmanager
def editing_state(vault: Vault) -> Iterator[dict[str, Any]]:
    """Read, change and write the state back under its own small lock (the background push and a
    ``memosite sync`` may both report at once)."""
    lock = lock_file(vault.internal_path("sync-state.lock"))
    lock.acquire(timeout=None)
    try:
        state = read_state(vault)
        yield state
        text = json.dumps(state, indent=2, sort_keys=True) + "\n"
        atomic_write_text(vault.internal_path(STATE_FILE), text, durable=False)  # a report, rebuilt by the next sync
    finally:
        lock.release()


def note_push(vault: Vault, head: str, error: str | None) -> None:
    """A push of ``head`` succeeded (``error`` None) or failed with ``error``."""
    now = format_iso(utc_now())
    with editing_state(vault) as state:
        if error is None:
            state["lastPush"] = {"at": now, "head": head}
            state["pushError"] = None
        else:
            state["pushError"] = {"at": now, "message": error, "head": head}


def note_sync(vault: Vault, summary: dict[str, Any]) -> None:
    with editing_state(vault) as state:
        state["lastSync"] = {"at": format_iso(utc_now()), **summary}
