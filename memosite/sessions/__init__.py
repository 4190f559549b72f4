"""Per-session event logs: an append-only ``events.jsonl`` per agent session, its turn index,
manifest and derived views, cap eviction, retention, BM25 search and audit packs.

Layout (vtcode-memory's): ``<root>/<session-id>/`` (0700) holding ``events.jsonl`` (one
``{"schema_version", "event": {"type", ...}}`` envelope a line), ``manifest.json``,
``index/turns.json``, ``index/search.bin``, ``derived/memory.json``, ``derived/progress.json`` and,
once packed, ``derived/audit-pack.json`` (all 0600). The root is the project's
``<vault>/projects/<p>/sessions/`` unless one is named (such as a workspace's ``.vtcode/sessions``).
"""

from __future__ import annotations

from memosite.sessions.cap import CapLimits, CapResult, CapSummary, EvictionContext, default_summary_hook
from memosite.sessions.catalog import SessionEntry, list_sessions
from memosite.sessions.pack import PackResult, VerifyResult, pack_session, verify_session
from memosite.sessions.retention import RetentionResult, apply_retention
from memosite.sessions.search import SearchResults, search_sessions
from memosite.sessions.session import Session, latest_handoff
from memosite.sessions.summary import SessionSummary

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
