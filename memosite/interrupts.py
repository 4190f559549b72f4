"""Ctrl-C once a change has begun: held until the change is complete, then reported.

A command or a unit of work that has started changing the vault finishes what it started (an
agent that saw "interrupted" would retry and write twice); before anything changed, Ctrl-C stops
it as usual. Only the main thread of the main interpreter receives signals, so elsewhere this
does nothing.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable, Iterator
from types import FrameType

# Set once any unit of work of this process has begun changing a file: from then on an interrupt
# must not report the command as failed (see memosite.cli._common).
_CHANGED: list[bool] = []


def note_change() -> None:
    """A unit of work is about to change the vault (or a build, the folder its site is published in)."""
    if not _CHANGED:
        _CHANGED.append(True)


def changed_in_process() -> bool:
    """True once a unit of work in this process has begun changing the vault."""
    return bool(_CHANGED)


@contextlib.contextmanager
def held_after_change(changed: Callable[[], bool], report: Callable[[], None]) -> Iterator[None]:
    """Within the block, SIGINT raises KeyboardInterrupt while ``changed()`` is false and is held
    otherwise; ``report()`` runs after the block when one was held."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: list[int] = []

    def hold(signum: int, frame: FrameType | None) -> None:
        if not changed():
            raise KeyboardInterrupt
        received.append(signum)

    try:
        previous = signal.signal(signal.SIGINT, hold)
    except ValueError:  # not the main interpreter
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        if received:
            report()
