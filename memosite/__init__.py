"""memosite: durable project memory for coding agents, kept as Markdown.

From Python::

    import memosite

    with memosite.Memory(vault="~/.memosite", project="shop") as memory:
        memory.upsert(kind="trap", title="Retries double-charge", body="Send an idempotency key.")
        found = memory.search("idempotency")

:class:`Memory` (in :mod:`memosite.memory`) is loaded on first use, so ``import memosite`` stays
light; the errors every call may raise are here at once: :class:`MemositeError` and its
subclasses, each with a stable ``code``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memosite.errors import (
    BuildError,
    Interrupted,
    InvalidArguments,
    InvalidRecord,
    InvalidTransition,
    LockTimeout,
    MemositeError,
    PersonRequired,
    RecordNotFound,
    SafetyViolation,
    StorageError,
    VaultNotFound,
)
from memosite.version import __version__

if TYPE_CHECKING:
    from memosite.memory import Memory
    from memosite.provenance import Actor


def __getattr__(name: str) -> Any:
    # Loaded on first use, so that importing memosite loads none of the core.
    if name == "Memory":
        from memosite.memory import Memory

        return Memory
    if name == "Actor":
        from memosite.provenance import Actor

        return Actor
    raise AttributeError(f"module 'memosite' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), "Actor", "Memory"])


__all__ = [
    "Actor",
    "BuildError",
    "Interrupted",
    "InvalidArguments",
    "InvalidRecord",
    "InvalidTransition",
    "LockTimeout",
    "Memory",
    "MemositeError",
    "PersonRequired",
    "RecordNotFound",
    "SafetyViolation",
    "StorageError",
    "VaultNotFound",
    "__version__",
]
