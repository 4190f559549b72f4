"""The record tools: upsert, get, append, forget, restore.

Each tool is a thin adapter: it checks what the input schema cannot express, then hands one core
call to the runtime. Parameter names are the wire names (``projectId``, ``allowDuplicate``): the SDK
derives the input schema, and its lenient parsing of JSON-encoded arguments, from them.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from mcp.types import CallToolResult, ToolAnnotations
from pydantic import Field

from memosite.kinds import KINDS
from memosite.mcp_server.runtime import ToolCall, ToolRuntime, tool_hints
from memosite.statuses import STATUSES
from memosite.vault import Vault

KindName = Literal[KINDS]  # type: ignore[valid-type]
StatusName = Literal[STATUSES]  # type: ignore[valid-type]

ProjectId = Annotated[
    str | None,
    Field(description="Project id. Omit it to use the project this server was started for."),
]
RecordId = Annotated[str | None, Field(description="The record id (give either id, or kind and slug).")]
LookupKind = Annotated[KindName | None, Field(description="The record kind; use together with slug.")]
LookupSlug = Annotated[str | None, Field(description="The record's file name without .md; use together with kind.")]
SessionId = Annotated[
    str | None,
    Field(
        description="Your agent session id. Each record you read (get, bootstrap) or acknowledge "
        "(search hitIds) counts as a hit for salience, at most once per session: under this id when "
        "given, otherwise under this server's own session (one per connection)."
    ),
]
WriterSessionId = Annotated[
    str | None, Field(description="Your agent session id, kept on the record as the session that wrote it.")
]

_KIND_HELP = (
    "What the record is: trap (a pitfall that bit you and will bite again), decision (a choice and "
    "why), spec, plan, state (current working state), log (an event), scratch (throwaway notes, "
    "expire after 7 days), review (expire after 14 days), prompt or session."
)


class StoreTools:
    """Bound methods registered as MCP tools; their docstrings are the descriptions models read."""

    def __init__(self, runtime: ToolRuntime) -> None:
        self.runtime = runtime

    async def upsert(
        self,
        kind: Annotated[KindName, Field(description=_KIND_HELP)],
        body: Annotated[
            str | None,
            Field(
                description="The Markdown body; never put secrets (keys, tokens, passwords) in it. A new "
                "record needs one; omit it to change only fields of an existing record."
            ),
        ] = None,
        slug: Annotated[
            str | None,
            Field(
                description="File name without .md (letters, digits, '.', '_', '-'). Omit it to derive "
                "one from frontmatter.id or the title. An existing kind+slug is updated."
            ),
        ] = None,
        frontmatter: Annotated[
            dict[str, Any] | None,
            Field(
                description="Extra fields: title, status (active|paused|shipped|superseded|archived|"
                "completed), severity (low|medium|high|critical), layer (application|domain|"
                "web|infrastructure|tests|devops|other), module, tags (list), pathPatterns "
                "(list of globs), supersedes (id of the record this one replaces), ttl ('7d', "
                "'48h', '30m' or a date), expires_at (RFC 3339 or YYYY-MM-DD). Other keys "
                "are kept as given."
            ),
        ] = None,
        path: Annotated[
            str | None,
            Field(
                description="A repository file path the record is about; added to pathPatterns and "
                "linkedPaths and used to spot a recurring trap."
            ),
        ] = None,
        projectId: ProjectId = None,
        allowDuplicate: Annotated[
            bool,
            Field(
                description="For traps: always create a new record. By default a trap with the same "
                "paths and a near-identical body bumps the existing one's occurrences."
            ),
        ] = False,
        title: Annotated[str | None, Field(description="The record's title (also accepted in frontmatter).")] = None,
        severity: Annotated[
            Literal["low", "medium", "high", "critical"] | None, Field(description="For traps: how much it hurts.")
        ] = None,
        tags: Annotated[list[str] | None, Field(description='Tags, e.g. ["payments"].')] = None,
        layer: Annotated[
            str | None,
            Field(description="application, domain, web, infrastructure, tests, devops or other."),
        ] = None,
        module: Annotated[str | None, Field(description="The module or component it is about.")] = None,
        status: Annotated[
            StatusName | None,
            Field(description="The record's status (default active)."),
        ] = None,
        ttl: Annotated[str | None, Field(description="Time to live: '7d', '48h', '30m' or a date.")] = None,
        expires_at: Annotated[str | None, Field(description="Expiry: RFC 3339 or YYYY-MM-DD.")] = None,
        supersedes: Annotated[
            str | None,
            Field(
                description="Id of the record this one replaces. An id that names no record is refused "
                "(the error lists the nearest ids) unless supersedesMissingOk is true."
            ),
        ] = None,
        supersedesMissingOk: Annotated[
            bool,
            Field(
                description="With supersedes: the record it names is gone on purpose, so write anyway "
                "(nothing is superseded). Leave it false to catch a mistyped id."
            ),
        ] = False,
        cites: Annotated[
            list[str] | None,
            Field(
                description="Code the record is about, as 'path' or 'path:start-end' relative to the repository "
                "root; pinned by hash so a later verify can tell when it changed."
            ),
        ] = None,
        sessionId: WriterSessionId = None,
    ) -> CallToolResult:
        """Create or update one memory record (a Markdown file in the vault).

        Use it to remember what the next session must know: a trap you hit, a decision and its
        reasons, a spec, the plan or state of the work. Returns the record's id, path, status,
        expires_at, and `recurrence: true` when a known trap was seen again instead of created.
        A change of a record a person approved is proposed, not applied (`action: proposed`): the
        approved version keeps serving until a person approves the change.
        """
        from memosite.store import upsert_record

        fields = {
            "title": title,
            "severity": severity,
            "tags": tags,
            "layer": layer,
            "module": module,
            "status": status,
            "ttl": ttl,
            "expires_at": expires_at,
            "supersedes": supersedes,
            "sessionId": sessionId,
        }

        def run(vault: Vault, project: str) -> Any:
            return upsert_record(
                vault,
                project,
                kind=kind,
                body=body,
                slug=slug,
                frontmatter=agent_frontmatter(merge_fields(frontmatter, fields)),
                path=path,
                allow_duplicate=allowDuplicate,
                cites=cites,
                supersedes_missing_ok=supersedesMissingOk,
            )

        return await self.runtime.call(ToolCall(run, projectId, writes=True), name="upsert")

    async def get(
        self,
        id: RecordId = None,
        kind: LookupKind = None,
        slug: LookupSlug = None,
        projectId: ProjectId = None,
        sessionId: SessionId = None,
    ) -> CallToolResult:
        """Read one record in full: frontmatter and Markdown body.

        Address it by id, or by kind and slug. Without projectId a record not found in this
        project is looked up in sibling projects (never their scratch, state or review records).
        An expired record is still returned, marked `expired: true`.
        """
        from memosite.hits import get_record_counting_hit

        # A read counts as a hit of this agent session (the server's own when none is given).
        count_hit = not self.runtime.read_only
        session = sessionId or self.runtime.session_id

        def run(vault: Vault, project: str) -> Any:
            return get_record_counting_hit(
                vault,
                project,
                record_id=id,
                kind=kind,
                slug=slug,
                cross_project=projectId is None,
                session_id=session if count_hit else None,
            )

        return await self.runtime.call(ToolCall(run, projectId, writes=count_hit, creates=False), name="get")

    async def append(
        self,
        event: Annotated[
            str, Field(description="What happened, in a sentence or a short Markdown paragraph. Must not be empty.")
        ],
        kind: Annotated[KindName, Field(description="The kind of the event record.")] = "log",
        details: Annotated[
            Any, Field(description="Optional structured details (any JSON value), stored in the record's frontmatter.")
        ] = None,
        projectId: ProjectId = None,
    ) -> CallToolResult:
        """Append an event to the project's log (a new record each time; earlier ones are never
        rewritten). Use it for an audit trail: what was done, tried or decided, and when."""
        from memosite.store import append_event

        def run(vault: Vault, project: str) -> Any:
            return append_event(vault, project, event=event, kind=kind, details=details)

        return await self.runtime.call(ToolCall(run, projectId, writes=True), name="append")

    async def forget(
        self,
        id: RecordId = None,
        kind: LookupKind = None,
        slug: LookupSlug = None,
        purge: Annotated[
            bool,
            Field(
                description="Delete the file for good (a tombstone is kept for sync). By default the "
                "record is only archived: kept on disk, out of the active views."
            ),
        ] = False,
        projectId: ProjectId = None,
    ) -> CallToolResult:
        """Retire a record that is wrong or no longer useful: archive it (reversible with
        restore), or purge it. Address it by id, or by kind and slug. A record a person approved
        can only be archived: purging it is a person's decision (PERSON_REQUIRED)."""
        from memosite.store import forget_record

        def run(vault: Vault, project: str) -> Any:
            return forget_record(vault, project, record_id=id, kind=kind, slug=slug, purge=purge)

        return await self.runtime.call(ToolCall(run, projectId, writes=True), name="forget")

    async def restore(
        self,
        id: RecordId = None,
        kind: LookupKind = None,
        slug: LookupSlug = None,
        projectId: ProjectId = None,
    ) -> CallToolResult:
        """Bring an archived record back to active. Superseded records cannot be restored."""
        from memosite.store import restore_record

        def run(vault: Vault, project: str) -> Any:
            return restore_record(vault, project, record_id=id, kind=kind, slug=slug)

        return await self.runtime.call(ToolCall(run, projectId, writes=True), name="restore")


def merge_fields(frontmatter: dict[str, Any] | None, fields: dict[str, Any]) -> dict[str, Any]:
    """The upsert's frontmatter with the fields given at the top level of the call; a field given
    both ways with different values is refused (which one the agent meant cannot be guessed)."""
    from memosite.errors import InvalidArguments

    merged = dict(frontmatter or {})
    for name, value in fields.items():
        if value is None:
            continue
        if name in merged and merged[name] != value:
            raise InvalidArguments(f"{name} is given twice, at the top level and in frontmatter, with different values")
        merged[name] = value
    return merged


def agent_frontmatter(frontmatter: dict[str, Any]) -> dict[str, Any]:
    """An agent's write is the agent's: it cannot set its own review state (and so approve itself),
    claim a person wrote it, or claim the provenance, usage and dates memosite records
    (:func:`memosite.provenance.agent_write_claims`)."""
    from memosite.errors import InvalidArguments
    from memosite.provenance import agent_write_claims

    claimed = agent_write_claims(frontmatter)
    if claimed:
        raise InvalidArguments(
            f"{', '.join(claimed)} cannot be set over MCP: an agent's write is source agent, a person"
            " reviews it with `memosite review approve`, and provenance, usage and dates are recorded, not claimed"
        )
    if "project" in frontmatter:
        raise InvalidArguments("project cannot be set in frontmatter: give projectId")
    return frontmatter


# name -> annotations; read-only tools are the ones a --read-only server exposes.
STORE_TOOL_HINTS: dict[str, ToolAnnotations] = {
    "get": tool_hints(read_only=True, idempotent=True, title="Read a memory record"),
    "upsert": tool_hints(read_only=False, title="Remember (create or update) a record"),
    "append": tool_hints(read_only=False, title="Append an event to the log"),
    "forget": tool_hints(read_only=False, destructive=True, idempotent=True, title="Archive or purge a record"),
    "restore": tool_hints(read_only=False, idempotent=True, title="Restore an archived record"),
}
