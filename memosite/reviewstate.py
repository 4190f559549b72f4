"""Review state: whether a record waits for a person (``review: pending``), in Python and in SQL.

An agent's write that the team's review policy holds back carries ``review: pending`` until a
person approves it (``approved``) or rejects it (``rejected``); see :mod:`memosite.review`. A
pending record is left out of the brief's knowledge, of search (unless asked for), of ``rank``
and of the published site. :func:`is_pending` decides it of a record's front matter,
:func:`pending_sql` of an index row's; ``tests/test_architecture.py`` proves they agree.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

PENDING = "pending"
APPROVED = "approved"
REJECTED = "rejected"
REVIEW_STATES = (PENDING, APPROVED, REJECTED)


def is_pending(frontmatter: Mapping[str, Any]) -> bool:
    """Whether the record waits for a person's review."""
    return frontmatter.get("review") == PENDING


def pending_sql(frontmatter_column: str = "frontmatter") -> str:
    """:func:`is_pending` over an index column holding the front matter as JSON (0 or 1)."""
    return f"coalesce(json_extract({frontmatter_column}, '$.review') = '{PENDING}', 0)"
