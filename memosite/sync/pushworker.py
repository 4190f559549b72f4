"""The background push worker: ``python -m memosite.sync.pushworker <vault>``.

Started by :func:`memosite.sync.autopush.schedule_push`. It waits until no new request came for
``vaultGit.pushDelaySeconds`` (a burst of writes makes one push), then runs
:func:`memosite.sync.run.sync_vault` — fetch, merge what teammates pushed meanwhile, push — and
repeats while requests keep coming. A failure is kept in the sync state (``memosite status`` shows
it) and the next write or sync tries again.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time

from memosite.errors import MemositeError
from memosite.lockfile import LockBusy, lock_file
from memosite.schema import format_iso, utc_now
from memosite.sync.autopush import LOCK_FILE, PID_FILE, REQUEST_FILE, TAKEN_FILE
from memosite.sync.run import sync_vault
from memosite.sync.state import note_push
from memosite.vault import Vault, atomic_write_text


def _requested_at(vault: Vault) -> float | None:
    try:
        return float(vault.internal_path(REQUEST_FILE).read_text(encoding="utf-8").strip())
    except (FileNotFoundError, ValueError):
        return None


def run_worker(vault: Vault, *, sleep: float = 0.2) -> int:
    """The worker's loop (see the module docstring); returns how many syncs it ran."""
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
                os.replace(vault.internal_path(REQUEST_FILE), vault.internal_path(TAKEN_FILE))
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
        sys.stderr.write("usage: python -m memosite.sync.pushworker VAULT\n")
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
