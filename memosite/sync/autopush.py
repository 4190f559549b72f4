"""``vaultGit.push: "auto"``: a write schedules a sync that runs in the background.

After each commit, vault git asks the push hook (:mod:`memosite.pushhook`) for a push later; the
composition roots register :func:`schedule_push` there (:func:`register_auto_push`). It notes the
request in ``.memosite/push-request`` and, unless a worker is already waiting, starts one: a
detached ``python -m memosite.sync.pushworker <vault>`` process (:mod:`memosite.sync.pushworker`).
The write itself never waits for any of it.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from pathlib import Path

from memosite.pushhook import register_push_scheduler
from memosite.vault import Vault, atomic_write_text

REQUEST_FILE = "push-request"
TAKEN_FILE = "push-request.taken"
PID_FILE = "push-worker.pid"
LOCK_FILE = "push-worker.lock"
LOG_FILE = "push-worker.log"
LOG_MAX_BYTES = 256 * 1024


def _request_path(vault: Vault) -> Path:
    return vault.internal_path(REQUEST_FILE)


def _worker_alive(vault: Vault) -> bool:
    try:
        pid = int(vault.internal_path(PID_FILE).read_text(encoding="utf-8").strip())
    except (FileNotFoundError, ValueError):
        return False
    if os.name != "posix":
        return True  # the worker lock keeps a second worker from running; spawning is harmless
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def push_scheduled(vault: Vault) -> bool:
    """True while an automatic push is waiting or running."""
    return _request_path(vault).exists() or vault.internal_path(TAKEN_FILE).exists() or _worker_alive(vault)


def schedule_push(vault: Vault) -> None:
    """Ask for a background push soon (see the module docstring); returns at once."""
    vault.internal_dir.mkdir(parents=True, exist_ok=True)
    atomic_write_text(_request_path(vault), f"{time.time():.6f}\n", durable=False)
    if _worker_alive(vault):
        return
    _spawn_worker(vault)


def _spawn_worker(vault: Vault) -> None:
    # Here, not at the top: every CLI command registers the push, few ever start one.
    import subprocess
    import threading

    log = vault.internal_path(LOG_FILE)
    with contextlib.suppress(OSError):
        if log.stat().st_size > LOG_MAX_BYTES:
            log.unlink()
    options: dict[str, object] = {}
    if os.name == "posix":
        options["start_new_session"] = True
    else:  # pragma: no cover - Windows
        options["creationflags"] = getattr(subprocess, "DETACHED_PROCESS", 0) | getattr(
            subprocess, "CREATE_NEW_PROCESS_GROUP", 0
        )
    with open(log, "a", encoding="utf-8") as handle:
        process = subprocess.Popen(
            [sys.executable, "-m", "memosite.sync.pushworker", str(vault.root)],
            stdin=subprocess.DEVNULL,
            stdout=handle,
            stderr=handle,
            close_fds=True,
            **options,  # type: ignore[call-overload]
        )
    # Reap the worker when it ends (no zombie in a long-lived MCP server, no warning about a child
    # left running); the daemon thread never keeps this process alive.
    threading.Thread(target=process.wait, name="memosite-push-reaper", daemon=True).start()


def register_auto_push() -> None:
    """Have every commit of this process with ``vaultGit.push: "auto"`` pushed in the background
    (a composition root calls this as it starts)."""
    register_push_scheduler(schedule_push)
