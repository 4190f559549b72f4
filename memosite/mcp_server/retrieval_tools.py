"""The retrieval and upkeep tools: search, bootstrap, rank, gc.

Like the record tools they only adapt arguments and call the core (``memosite.search``,
``memosite.bootstrap``, ``memosite.salience``, ``memosite.curator``). A tool whose core module is
not installed is not offered at all rather than offered and failing.
"""

from __future__ import annotations

import contextlib
from typing import Annotated, Any, Literal

import anyio.from_thread
from mcp.server.mcpserver import Context
from mcp.types import CallToolResult, ToolAnnotations
from pydantic import Field

from memosite.mcp_server.runtime import ToolCall, ToolRuntime, tool_hints
from memosite.mcp_server.store_tools import KindName, ProjectId, SessionId, StatusName
from memosite.vault import Vault

SortOrder = Literal["relevance", "occurrences", "updated", "hits"]


class RetrievalTools:
    """Bound methods registered as MCP tools; their docstrings are the descriptions models read."""

    def __init__(self, runtime: ToolRuntime) -> None:
        self.runtime = runtime

    async def search(
        self,
        query: Annotated[
            str | None,
            Field(
                description="What you are looking for, in words or a sentence, in any language. Records "
                'holding every word come first, then those holding most of them; "quoted phrases" stay '
                "phrases, the last word is also a prefix, accents do not matter and Chinese or Japanese "
                "text is found as a substring. FTS5 syntax (OR, NOT, title:word) works too. Omit it to "
                "list records by the other filters."
            ),
        ] = None,
        kinds: Annotated[
            list[KindName] | None, Field(description='Only these kinds, e.g. ["trap", "decision"].')
        ] = None,
        status: Annotated[
            StatusName | list[StatusName] | None,
            Field(
                description="Only records with this status (or any of these). By default active, "
                "paused, shipped and completed records are searched."
            ),
        ] = None,
        tags: Annotated[list[str] | None, Field(description="Only records carrying all these tags.")] = None,
        path: Annotated[
            str | None, Field(description="A repository file path: only records whose pathPatterns match it.")
        ] = None,
        includeExpired: Annotated[
            bool, Field(description="Also return expired records (marked expired: true).")
        ] = False,
        asOf: Annotated[
            str | None, Field(description="A date (YYYY-MM-DD or RFC 3339): return what was active then.")
        ] = None,
        sort: Annotated[
            SortOrder, Field(description="relevance (default), occurrences, updated (newest first) or hits.")
        ] = "relevance",
        limit: Annotated[int, Field(ge=1, le=1000, description="Most results to return.")] = 20,
        hitIds: Annotated[
            list[str] | None,
            Field(
                description="Ids of records (from an earlier search) that you actually used: each "
                "counts a hit, at most once per session (this server's, unless sessionId names "
                "another), which ranks it higher later."
            ),
        ] = None,
        sessionId: SessionId = None,
        projectId: ProjectId = None,
        includePending: Annotated[
            bool, Field(description="Also records waiting for a person's review (marked pending).")
        ] = False,
        author: Annotated[
            str | None, Field(description="Only records whose author holds this (a name, or part of one).")
        ] = None,
        explain: Annotated[
            bool,
            Field(
                description="Give each hit an explain object: its bm25Rank, vectorRank (by meaning), "
                "similarity and fusedScore."
            ),
        ] = False,
        exactTotal: Annotated[
            bool,
            Field(
                description="Count every match for total. By default counting stops at 1000: total is "
                "then at least that many and totalExact is false. The results are the same either way."
            ),
        ] = False,
    ) -> CallToolResult:
        """Search the project's memory. Expired records and scratch notes are left out unless
        asked for (includeExpired, kinds=["scratch"]).

        Search before you change code (pass its path) or when something looks familiar; each hit
        has id, kind, title, status, path and a snippet; read one in full with get. The result's
        match is "all" when some record holds every term (holdingAll says how many; records
        holding only some may follow them) and "any" when none does; terms lists what was searched.
        total counts the matches up to 1000 (totalExact false: at least that many) unless exactTotal.
        ranking is "hybrid" when records were also ranked by meaning (same idea, other words).
        """
        from memosite.hits import search_counting_hits

        counts_hits = bool(hitIds) and not self.runtime.read_only
        # A call that names no session counts under this server's own: one server, one agent session.
        session = sessionId or self.runtime.session_id

        def run(vault: Vault, project: str) -> Any:
            return search_counting_hits(
                vault,
                project,
                query,
                kinds=kinds,
                status=status,
                tags=tags,
                path=path,
                include_expired=includeExpired,
                as_of=asOf,
                sort=sort,
                limit=limit,
                hit_ids=hitIds if counts_hits else None,
                session_id=session if counts_hits else None,
                include_pending=includePending,
                author=author,
                explain=explain,
                exact_total=exactTotal,
            )

        return await self.runtime.call(ToolCall(run, projectId, writes=counts_hits, creates=False), name="search")

    async def bootstrap(
        self,
        query: Annotated[
            str | None, Field(description="What the session is about; pulls in the most relevant records.")
        ] = None,
        slug: Annotated[
            str | None, Field(description="Slug of the spec, plan or state record the work follows.")
        ] = None,
        path: Annotated[
            str | None, Field(description="A repository path the work touches; adds the traps recorded for it.")
        ] = None,
        maxBytes: Annotated[
            int | None,
            Field(ge=512, description="Size budget of the brief in bytes (default from the vault's config, 8192)."),
        ] = None,
        maxTokens: Annotated[
            int | None,
            Field(
                ge=128,
                description="Size budget in tokens instead (estimated as bytes / 4); with maxBytes too, "
                "the brief keeps within both.",
            ),
        ] = None,
        sessionId: SessionId = None,
        projectId: ProjectId = None,
        freshOnly: Annotated[
            bool, Field(description="Leave out records whose cited code was found drifted or missing.")
        ] = False,
    ) -> CallToolResult:
        """A budgeted brief to start a session with: the current spec/plan/state, the active
        traps that matter most and the accepted decisions, within maxBytes. Call it first.

        The text block is the brief as Markdown; the structured content has its sections too, its
        size in bytes and estimated tokens, and says what it left out: truncated is true whenever
        a record was left out or cut short, omitted says how many of each section and why, and the
        Markdown's last line names the search that lists them.
        """
        from memosite.hits import bootstrap_counting_hits

        # Every record the brief shows counts a hit of this agent session (the server's own when
        # no sessionId is given), once per session; a read-only server counts none.
        counts_hits = not self.runtime.read_only
        session = sessionId or self.runtime.session_id

        def run(vault: Vault, project: str) -> Any:
            return bootstrap_counting_hits(
                vault,
                project,
                query=query,
                slug=slug,
                path=path,
                max_bytes=maxBytes,
                max_tokens=maxTokens,
                session_id=session if counts_hits else None,
                fresh_only=freshOnly,
            )

        work = ToolCall(run, projectId, writes=counts_hits, creates=False, text=lambda data: data["markdown"])
        return await self.runtime.call(work, name="bootstrap")

    async def rank(
        self,
        layer: Annotated[
            str | None,
            Field(
                description="Only traps of this layer: application, domain, web, infrastructure, tests, "
                "devops or other, or another name for one as upsert accepts (frontend, ui, infra, ops, qa …)."
            ),
        ] = None,
        limit: Annotated[int, Field(ge=1, le=100, description="How many traps to return.")] = 10,
        projectId: ProjectId = None,
    ) -> CallToolResult:
        """The active traps that matter most: ranked by occurrences, then hits, then severity;
        traps flagged stale by feedback come last. Use it to see what keeps biting this project."""
        from memosite.salience import rank_traps

        def run(vault: Vault, project: str) -> Any:
            return rank_traps(vault, project, layer=layer, limit=limit)

        return await self.runtime.call(ToolCall(run, projectId), name="rank")

    async def gc(
        self,
        dryRun: Annotated[
            bool, Field(description="Only report what would change; nothing is written or deleted.")
        ] = False,
        purge: Annotated[
            bool, Field(description="Delete expired traps, decisions and plans instead of archiving them.")
        ] = False,
        projectId: ProjectId = None,
        ctx: Context | None = None,
    ) -> CallToolResult:
        """Tidy the project's memory: archive expired traps/decisions/plans (or delete them with
        purge), delete expired scratch and review notes, compact shipped plans and roll old logs
        up by month. Try dryRun first; the result counts what was (or would be) changed."""
        from memosite.curator import run_gc

        def progress(step: Any) -> None:
            # Called on the worker thread; a client that asked for progress sees each step.
            if ctx is not None:
                with contextlib.suppress(Exception):
                    anyio.from_thread.run(
                        ctx.report_progress, step.done, step.total, f"gc: {step.done}/{step.total} steps"
                    )

        def run(vault: Vault, project: str) -> Any:
            return run_gc(vault, project, dry_run=dryRun, purge=purge, progress=progress)

        return await self.runtime.call(ToolCall(run, projectId, writes=not dryRun), name="gc")


RETRIEVAL_TOOL_HINTS: dict[str, ToolAnnotations] = {
    "search": tool_hints(read_only=True, idempotent=True, title="Search the project's memory"),
    "bootstrap": tool_hints(read_only=True, idempotent=True, title="Brief for a new session"),
    "rank": tool_hints(read_only=True, idempotent=True, title="Rank the traps that matter most"),
    "gc": tool_hints(read_only=False, destructive=True, idempotent=True, title="Expire and compact memory"),
}
