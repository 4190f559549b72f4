"""Lifecycle transitions, as Stormbuffer's ``RecordStatus::can_transition_to`` and repository have them.

candidate → active (promote) or archived (reject); active → superseded or archived;
archived → active (restore). Superseded is terminal. Each operation also names the one status
it starts from, like ``sbuf``'s ``approve``/``reject``/``archive``/``restore``.
"""

from __future__ import annotations

from types import MappingProxyType

from memosite.errors import InvalidTransition

TRANSITIONS: MappingProxyType[str, frozenset[str]] = MappingProxyType(
    {
        "candidate": frozenset({"active", "archived"}),
        "active": frozenset({"superseded", "archived"}),
        "archived": frozenset({"active"}),
        "superseded": frozenset(),
    }
)

# operation -> (the status it requires, the status it leaves)
OPERATIONS: MappingProxyType[str, tuple[str, str]] = MappingProxyType(
    {
        "promote": ("candidate", "active"),
        "reject": ("candidate", "archived"),
        "archive": ("active", "archived"),
        "restore": ("archived", "active"),
        "supersede": ("active", "superseded"),
    }
)

# Statuses normal retrieval returns; superseded and archived records are history.
RETRIEVABLE = ("candidate", "active")

_HINTS = {
    "superseded": "superseded records are terminal",
    "candidate": "promote it first, or reject it",
}


def can_transition(current: str, target: str) -> bool:
    """An allowed step; staying in the same status is allowed too, as in Stormbuffer."""
    return current == target or target in TRANSITIONS.get(current, frozenset())


def check_operation(record_id: str, operation: str, current: str) -> str:
    """The status ``operation`` leaves; :class:`InvalidTransition` unless it may start from ``current``."""
    required, target = OPERATIONS[operation]
    if current == required:
        return target
    article = "an" if required[0] in "aeiou" else "a"
    hint = _HINTS.get(current, f"{operation} needs {article} {required} record")
    raise InvalidTransition(
        f"cannot {operation} {record_id}: it is {current}, not {required}; {hint}",
        details={"id": record_id, "from": current, "to": target, "requires": required},
    )


def initial_status(access: str, requested: str | None) -> str:
    """The status a new record starts in: agents propose candidates; people may go active at once."""
    if requested is None:
        return "candidate" if access == "agent" else "active"
    if requested not in RETRIEVABLE:
        raise InvalidTransition(
            f"a new record starts as candidate or active, not {requested}",
            details={"to": requested, "allowed": list(RETRIEVABLE)},
        )
    if requested == "active" and access == "agent":
        raise InvalidTransition(
            "agent-created records start as candidates; promote them once a person agrees",
            details={"to": requested, "access": access},
        )
    return requested
