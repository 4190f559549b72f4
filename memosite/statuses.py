"""The six statuses a record takes, and what each one means, in one table.

Each rule that depends on a status is a predicate here with its SQL spelling beside it (the index
decides in SQL what Python decides of one record), and ``tests/test_architecture.py`` proves that
the two agree for every status, known or not:

* **live** — in force or in progress (``active``, ``paused``, ``shipped``, ``completed``): search,
  the views' live sections and the brief show it;
* **inactive** — out of date (``superseded``, ``archived``): left out unless asked for;
* **accepted** — a decision in force (``active``, ``shipped``, ``completed``; ``paused`` is one
  proposed);
* **terminal** — never changes again (``superseded``: a newer record took its place).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class StatusFacts:
    """What memosite knows of one status."""

    name: str
    live: bool
    accepted: bool
    terminal: bool


STATUS_FACTS: dict[str, StatusFacts] = {
    facts.name: facts
    for facts in (
        StatusFacts("active", live=True, accepted=True, terminal=False),
        StatusFacts("paused", live=True, accepted=False, terminal=False),
        StatusFacts("shipped", live=True, accepted=True, terminal=False),
        StatusFacts("superseded", live=False, accepted=False, terminal=True),
        StatusFacts("archived", live=False, accepted=False, terminal=False),
        StatusFacts("completed", live=True, accepted=True, terminal=False),
    )
}

STATUSES: tuple[str, ...] = tuple(STATUS_FACTS)
LIVE_STATUSES: tuple[str, ...] = tuple(s for s, f in STATUS_FACTS.items() if f.live)
INACTIVE_STATUSES: tuple[str, ...] = tuple(s for s, f in STATUS_FACTS.items() if not f.live)
ACCEPTED_STATUSES: tuple[str, ...] = tuple(s for s, f in STATUS_FACTS.items() if f.accepted)
TERMINAL_STATUSES: tuple[str, ...] = tuple(s for s, f in STATUS_FACTS.items() if f.terminal)


def _in_sql(column: str, statuses: tuple[str, ...]) -> str:
    return f"{column} IN ({', '.join(repr(status) for status in statuses)})"


def is_known_status(status: object) -> bool:
    return status in STATUS_FACTS


def known_status_sql(column: str = "status") -> str:
    """:func:`is_known_status` over an index column."""
    return _in_sql(column, STATUSES)


def is_live(status: object) -> bool:
    """In force or in progress (see the module docstring)."""
    return status in LIVE_STATUSES


def live_sql(column: str = "status") -> str:
    """:func:`is_live` over an index column."""
    return _in_sql(column, LIVE_STATUSES)


def is_inactive(status: object) -> bool:
    """Out of date: superseded or archived."""
    return status in INACTIVE_STATUSES


def inactive_sql(column: str = "status") -> str:
    """:func:`is_inactive` over an index column."""
    return _in_sql(column, INACTIVE_STATUSES)


def is_accepted(status: object) -> bool:
    """A decision in force."""
    return status in ACCEPTED_STATUSES


def accepted_sql(column: str = "status") -> str:
    """:func:`is_accepted` over an index column."""
    return _in_sql(column, ACCEPTED_STATUSES)


def is_terminal(status: object) -> bool:
    """Never changes again: no write replaces it, gc never rewrites it."""
    return status in TERMINAL_STATUSES


def terminal_sql(column: str = "status") -> str:
    """:func:`is_terminal` over an index column."""
    return _in_sql(column, TERMINAL_STATUSES)
