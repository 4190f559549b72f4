"""The SQLite FTS5 index: a disposable cache of what the Markdown files say, and the only package
that speaks SQL.

* :mod:`~memosite.index.database` — the connection and the record rows (:class:`Index`);
* :mod:`~memosite.index.entry` — what a row holds (:class:`IndexEntry`);
* :mod:`~memosite.index.fragments` — pre-rendered view rows and the view sections built from them;
* :mod:`~memosite.index.queries` — the named queries of recurrence, gc, rank and the brief;
* :mod:`~memosite.index.fts` — full-text search with its filters.

Delete ``index.sqlite`` and ``memosite reindex`` rebuilds it from the records.
"""

from __future__ import annotations

from memosite.index.database import Index
from memosite.index.entry import IndexEntry

__all__ = ["Index", "IndexEntry"]
