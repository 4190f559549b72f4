"""``vaultGit.push: "auto"``: a write schedules a sync that runs in the background.

:func:`schedule_push` (called by :func:`memosite.gitsync.request_commit` after a commit) notes the
request in ``.memosite/push-request`` and, unless a worker is already waiting, starts one: a
detached ``python -m memosite.sync.autopush <vault>`` process. The worker waits until no new
request came for ``vaultGit.pushDelaySeconds`` (a burst of writes makes one push), then runs
:func:`memosite.sync.run.sync_vault` — fetch, merge what teammates pushed meanwhile, push — and
repeats while requests keep coming. The write itself never waits for any of it. A failure is kept
in the sync state (``memosite status`` shows it) and the next write or sync tries again.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

from memosite.errors import MemositeError
from memosite.lockfile import LockBusy, lock_file
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
            [sys.executable, "-m", "memosite.sync.autopush", str(vault.root)],
            stdin=subprocess.DEVNULL,
            stdout=handle,
            stderr=handle,
            close_fds=True,
            **options,  # type: ignore[call-overload]
        )
    # Reap the worker when it ends (no zombie in a long-lived MCP server, no warning about a child
    # left running); the daemon thread never keeps this process alive.
    threading.Thread(target=process.wait, name="memosite-push-reaper", daemon=True).start()


def _requested_at(vault: Vault) -> float | None:
    try:
        return float(_request_path(vault).read_text(encoding="utf-8").strip())
    except (FileNotFoundError, ValueError):
        return None


def run_worker(vault: Vault, *, sleep: float = 0.2) -> int:
    """The worker's loop (see the module docstring); returns how many syncs it ran."""
    from memosite.schema import format_iso, utc_now
    from memosite.sync.run import sync_vault
    from memosite.sync.state import note_push

    runs = 0
    lock = lock_file(vault.internal_path(LOCK_FILE))
    while True:
        try:
            lock.acquire(timeout=0)
        except LockBusy:
            return runs  # another worker runs: it sees this request too
        try:
            atomic_write_text(vault.internal_path(PID_FILE), f"{os.getpid()}\n", durable=False)
            while (requested := _requested_at(vault)) is not None:
                wait = vault.config.git_push_delay_seconds - (time.time() - requested)
                if wait > 0:
                    time.sleep(min(wait, max(sleep, 0.01)))
                    continue
                # Take the request: one arriving while this sync runs makes a new file, and a new round.
                os.replace(_request_path(vault), vault.internal_path(TAKEN_FILE))
                try:
                    sync_vault(vault)
                except MemositeError as exc:
                    note_push(vault, "", exc.message)
                    sys.stderr.write(f"{format_iso(utc_now())} memosite auto push: {exc.message}\n")
                finally:
                    with contextlib.suppress(FileNotFoundError):
                        vault.internal_path(TAKEN_FILE).unlink()
                runs += 1
        finally:
            with contextlib.suppress(FileNotFoundError):
                vault.internal_path(PID_FILE).unlink()
            lock.release()
        # A request that came between the last look and the release found a live worker and
        # spawned none: look once more now that the lock is free.
        if _requested_at(vault) is None:
            return runs


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        sys.stderr.write("usage: python -m memosite.sync.autopush VAULT\n")
        return 2
    os.environ["GIT_TERMINAL_PROMPT"] = "0"  # nobody is there to type a password
    try:
        vault = Vault.open(args[0], create=False)
    except MemositeError as exc:
        sys.stderr.write(f"memosite auto push: {exc.message}\n")
        return 1
    try:
        run_worker(vault)
    finally:
        vault.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
