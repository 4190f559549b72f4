"""Per-session event logs: an append-only ``events.jsonl`` per agent session, its turn index,
manifest and derived views, cap eviction, retention, BM25 search and audit packs.

Layout: ``<vault>/projects/<p>/sessions/<session-id>/`` (0700) holding ``events.jsonl``,
``manifest.json``, ``index/turns.json``, ``index/search.bin``, ``derived/memory.json``,
``derived/progress.json`` and, once packed, ``audit-pack.json`` (all 0600).
"""

from __future__ import annotations

from memosite.sessions.cap import CapLimits, CapResult, CapSummary, EvictionContext, default_summary_hook
from memosite.sessions.catalog import SessionEntry, list_sessions
from memosite.sessions.pack import PackResult, VerifyResult, pack_session, verify_session
from memosite.sessions.retention import RetentionResult, apply_retention
from memosite.sessions.search import SearchResults, search_sessions
from memosite.sessions.session import Session, SessionSummary, latest_handoff

__all__ = [
    "CapLimits",
    "CapResult",
    "CapSummary",
    "EvictionContext",
    "PackResult",
    "RetentionResult",
    "SearchResults",
    "Session",
    "SessionEntry",
    "SessionSummary",
    "VerifyResult",
    "apply_retention",
    "default_summary_hook",
    "latest_handoff",
    "list_sessions",
    "pack_session",
    "search_sessions",
    "verify_session",
]
