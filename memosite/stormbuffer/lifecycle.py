"""Lifecycle transitions: candidate → active → superseded, active ⇄ archived. Superseded is terminal."""

from __future__ import annotations

from types import MappingProxyType

from memosite.errors import InvalidTransition

TRANSITIONS: MappingProxyType[str, frozenset[str]] = MappingProxyType(
    {
        "candidate": frozenset({"active"}),
        "active": frozenset({"superseded", "archived"}),
        "archived": frozenset({"active"}),  # restore
        "superseded": frozenset(),
    }
)

# Statuses normal retrieval returns; superseded and archived records are history.
RETRIEVABLE = ("candidate", "active")

_HINTS = {
    "superseded": "superseded records are terminal",
    "candidate": "promote it to active first",
}


def can_transition(current: str, target: str) -> bool:
    return target in TRANSITIONS.get(current, frozenset())


def check_transition(record_id: str, current: str, target: str) -> None:
    """Raise :class:`InvalidTransition` unless ``current → target`` is an allowed step."""
    if can_transition(current, target):
        return
    allowed = sorted(TRANSITIONS.get(current, frozenset()))
    hint = _HINTS.get(current, f"from {current} only {', '.join(allowed)} is allowed")
    raise InvalidTransition(
        f"cannot change {record_id} from {current} to {target}: {hint}",
        details={"id": record_id, "from": current, "to": target, "allowed": allowed},
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
