"""The output schema each tool declares for its structured content (MCP ``outputSchema``).

They describe the ``to_json()`` of the core's results — the same JSON the CLI prints with
``--json`` — so a client can check what it gets. Keys a result may grow later are allowed
(``additionalProperties`` stays open); the keys listed are always there. Error results carry
``{"error": {"code", "message"}}`` and, being errors, are not checked against these.
"""

from __future__ import annotations

from typing import Any

STRING: dict[str, Any] = {"type": "string"}
OPT_STRING: dict[str, Any] = {"type": ["string", "null"]}
INTEGER: dict[str, Any] = {"type": "integer"}
OPT_INTEGER: dict[str, Any] = {"type": ["integer", "null"]}
BOOLEAN: dict[str, Any] = {"type": "boolean"}
STRINGS: dict[str, Any] = {"type": "array", "items": STRING}
OBJECT: dict[str, Any] = {"type": "object"}


def obj(properties: dict[str, dict[str, Any]], *, optional: dict[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    """An object schema: ``properties`` are required, ``optional`` may be missing."""
    return {
        "type": "object",
        "properties": {**properties, **(optional or {})},
        "required": list(properties),
    }


def array(items: dict[str, Any]) -> dict[str, Any]:
    return {"type": "array", "items": items}


WRITTEN = obj(
    {
        "id": STRING,
        "kind": STRING,
        "project": STRING,
        "path": STRING,
        "status": STRING,
        "created": STRING,
        "updated": STRING,
        "expires_at": OPT_STRING,
        "action": {"enum": ["created", "updated", "proposed", "recurrence"]},
        "recurrence": BOOLEAN,
        "occurrences": OPT_INTEGER,
        "superseded": BOOLEAN,
    },
    optional={"supersedesMissing": OPT_STRING, "pending": BOOLEAN, "supersedesPending": OPT_STRING},
)
RECORD = obj(
    {
        "id": STRING,
        "kind": STRING,
        "project": STRING,
        "path": STRING,
        "frontmatter": OBJECT,
        "body": STRING,
        "expired": BOOLEAN,
        "expires_at": OPT_STRING,
        "pending": BOOLEAN,
    }
)
APPENDED = obj(
    {"id": STRING, "kind": STRING, "project": STRING, "path": STRING, "event": STRING, "created": STRING},
    optional={"details": {}},
)
FORGOTTEN = obj(
    {"id": STRING, "kind": STRING, "status": {"enum": ["archived", "purged"]}, "purged": BOOLEAN, "restored": STRINGS}
)
SEARCH_HIT = obj(
    {
        "id": STRING,
        "kind": STRING,
        "project": STRING,
        "title": STRING,
        "status": STRING,
        "path": STRING,
        "expired": BOOLEAN,
        "pending": BOOLEAN,
    }
)
SEARCHED = obj(
    {"results": array(SEARCH_HIT), "total": INTEGER, "query": OPT_STRING},
    optional={
        "match": {"enum": ["all", "any", None]},
        "terms": STRINGS,
        "holdingAll": OPT_INTEGER,
        "totalExact": BOOLEAN,
    },
)
BRIEF = obj(
    {
        "project": STRING,
        "sections": OBJECT,
        "omitted": array(
            obj(
                {
                    "section": STRING,
                    "reason": {"enum": ["budget", "cap", "freshness"]},
                    "count": INTEGER,
                    "ids": STRINGS,
                    "idsTruncated": BOOLEAN,
                }
            )
        ),
        "truncated": BOOLEAN,
        "bytes": INTEGER,
        "maxBytes": INTEGER,
        "markdown": STRING,
    }
)
RANKED = obj(
    {
        "project": STRING,
        "layer": OPT_STRING,
        "traps": array(obj({"id": STRING, "title": STRING, "occurrences": INTEGER, "hits": INTEGER})),
        "total": INTEGER,
    }
)
COLLECTED = obj(
    {
        "projectId": STRING,
        "purgedScratchCount": INTEGER,
        "purgedReviewCount": INTEGER,
        "compactedPlansCount": INTEGER,
        "rebuiltFts": BOOLEAN,
        "rebuiltViews": BOOLEAN,
        "dryRun": BOOLEAN,
        "details": OBJECT,
    },
    optional={
        "trapsArchivedCount": INTEGER,
        "decisionsArchivedCount": INTEGER,
        "plansArchivedCount": INTEGER,
        "compactedLogsCount": INTEGER,
    },
)

# The memory tool answers in text (the memory tool's own); the same text is the structured result.
MEMORY_RESULT = obj({"result": STRING})

OUTPUT_SCHEMAS: dict[str, dict[str, Any]] = {
    "upsert": WRITTEN,
    "get": RECORD,
    "append": APPENDED,
    "forget": FORGOTTEN,
    "restore": WRITTEN,
    "search": SEARCHED,
    "bootstrap": BRIEF,
    "rank": RANKED,
    "gc": COLLECTED,
    "memory": MEMORY_RESULT,
}
