"""The JSON contracts scripts and agents rely on: the shape of every command's ``--json`` output, the
MCP tool list with its schemas, and one naming rule for their keys.

The shapes are pinned in ``tests/snapshots/``. A change to a contract is a change users see: update
the snapshot on purpose (``MEMOSITE_UPDATE_SNAPSHOTS=1 pytest tests/test_contracts.py``), say so in
the CHANGELOG.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from memosite.mcp_server.server import build_server
from memosite.vault import Vault

SNAPSHOTS = Path(__file__).with_name("snapshots")
UPDATE = bool(os.environ.get("MEMOSITE_UPDATE_SNAPSHOTS"))
CAMEL = re.compile(r"^[a-z][a-zA-Z0-9]*$")
# Keys that keep another contract's spelling: a frontmatter field's name (the seed's schema) where a
# result repeats that field, and Stormbuffer's own field names in its records and store.toml.
FOREIGN_KEYS = {"expires_at", "format_version", "project_id", "project_name", "record_scope", "store_created"}
# The arguments of Claude's memory tool keep its own names (a model trained on that tool sends them).
FOREIGN_KEYS |= {"view_range", "file_text", "old_str", "new_str", "insert_line", "insert_text", "old_path", "new_path"}
# Values whose keys are data, not contract: a record's frontmatter, counts by kind or status.
DATA_KEYS = {"frontmatter", "counts", "projects", "byKind", "byStatus", "fields", "verdicts"}


def shape(value: Any, key: str = "") -> Any:
    """The structure of a JSON value: keys and types, the first element of lists."""
    if key in DATA_KEYS and isinstance(value, dict):
        return "object"
    if isinstance(value, dict):
        return {k: shape(v, k) for k, v in sorted(value.items())}
    if isinstance(value, list):
        return [shape(value[0])] if value else []
    if value is None:
        return "null"
    return type(value).__name__


def keys(value: Any, key: str = "") -> list[str]:
    if isinstance(value, dict):
        if key in DATA_KEYS:
            return []
        return [k for k in value] + [inner for k, v in value.items() for inner in keys(v, k)]
    if isinstance(value, list):
        return [inner for item in value for inner in keys(item)]
    return []


def check_snapshot(name: str, actual: Any) -> None:
    path = SNAPSHOTS / f"{name}.json"
    text = json.dumps(actual, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    if UPDATE or not path.exists():
        if not UPDATE:
            pytest.fail(f"no snapshot {path.name} yet: run with MEMOSITE_UPDATE_SNAPSHOTS=1 to create it")
        path.parent.mkdir(exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return
    assert json.loads(path.read_text(encoding="utf-8")) == actual, f"{path.name} changed: see the module docstring"


COMMANDS: list[tuple[str, list[str]]] = [
    ("init", ["init", "--no-pin"]),
    (
        "upsert",
        ["upsert", "--kind", "trap", "--title", "Locks bite", "--body", "Migrations lock tables.", "--path", "db/m.py"],
    ),
    (
        "upsert-recurrence",
        ["upsert", "--kind", "trap", "--title", "Locks bite", "--body", "Migrations lock tables!", "--path", "db/m.py"],
    ),
    ("get", ["get", "--id", "locks-bite"]),
    ("append", ["append", "--event", "deployed", "--details", '{"v": 1}']),
    ("list", ["list"]),
    ("search", ["search", "migrations lock"]),
    ("bootstrap", ["bootstrap"]),
    ("rank", ["rank"]),
    ("feedback", ["feedback", "locks-bite", "--helpful"]),
    ("forget", ["forget", "--id", "locks-bite"]),
    ("restore", ["restore", "--id", "locks-bite"]),
    ("status", ["status"]),
    ("config-list", ["config", "list"]),
    ("config-get", ["config", "get", "review.required"]),
    ("config-set", ["config", "set", "ttl.scratchDays", "3"]),
    ("config-unset", ["config", "unset", "ttl.scratchDays"]),
    ("config-accept-policy", ["config", "accept-policy"]),
    ("compile", ["compile"]),
    ("reindex", ["reindex"]),
    ("gc", ["gc", "--dry-run"]),
    ("review", ["review"]),
    ("import", ["import", "adr", str(Path(__file__).with_name("corpus") / "import" / "adr-log4brains"), "--dry-run"]),
    ("error", ["get", "--id", "nothing-here"]),
]


def test_every_commands_json_shape_is_pinned(vault: Vault, run_cli: Any) -> None:
    shapes = {}
    for name, args in COMMANDS:
        outcome = run_cli(*args, "--json")
        data = outcome.json()
        assert (outcome.exit_code == 0) is (name != "error"), (name, outcome.stdout)
        shapes[name] = shape(data)
    check_snapshot("cli_json", shapes)


def test_json_keys_follow_one_naming_rule(vault: Vault, run_cli: Any) -> None:
    offenders = set()
    for name, args in COMMANDS:
        data = run_cli(*args, "--json").json()
        offenders |= {f"{name}: {key}" for key in keys(data) if not CAMEL.match(key) and key not in FOREIGN_KEYS}
    assert offenders == set()


def _tools(vault: Vault) -> list[Any]:
    async def listing() -> list[Any]:
        async with Client(build_server(vault, "demo"), mode="legacy") as client:
            return list((await client.list_tools()).tools)

    return anyio.run(listing)


def test_the_mcp_tool_list_and_schemas_are_pinned(vault: Vault) -> None:
    tools = {
        tool.name: {
            "inputSchema": tool.input_schema,
            "outputSchema": tool.output_schema,
            "annotations": tool.annotations.model_dump(mode="json", exclude_none=True) if tool.annotations else None,
        }
        for tool in _tools(vault)
    }
    check_snapshot("mcp_tools", tools)


def test_mcp_argument_names_follow_the_naming_rule(vault: Vault) -> None:
    offenders = {
        f"{tool.name}.{name}"
        for tool in _tools(vault)
        for name in tool.input_schema.get("properties", {})
        if not CAMEL.match(name) and name not in FOREIGN_KEYS
    }
    assert offenders == set()
