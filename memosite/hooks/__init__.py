"""The hook front end: ``memosite hook session-start|prompt|session-end``, run by coding agents.

Like the CLI and the MCP server it is a thin layer: it reads the agent's payload
(:mod:`~memosite.hooks.protocol`), calls the core — the brief, :mod:`memosite.recall`,
:mod:`memosite.agentsession` — and answers in the agent's shape, within a time limit
(:mod:`~memosite.hooks.runner`).
"""

from __future__ import annotations
