"""Claude's memory tool on the vault: the SDK's ``BetaAbstractMemoryTool`` subclasses and the MCP
``memory`` tool, driven with the tool-use blocks the API sends (built with the SDK's own types; no
network), and the rules every command keeps: paths stay in /memories, writes go through the store
(validation, secrets, review), delete archives, rename keeps the record, working notes expire."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import anyio
import pytest
from anthropic.lib.tools import ToolError
from anthropic.types.beta import BetaToolUseBlock
from hypothesis import given, settings
from hypothesis import strategies as st

from memosite.errors import InvalidArguments
from memosite.integrations.anthropic import AsyncMemositeMemoryTool, MemositeMemoryTool
from memosite.memorytool.backend import MAX_FILE_BYTES, MemoryBackend
from memosite.memorytool.paths import ROOT, canonical_path
from memosite.recordfile import read_record
from memosite.schema import utc_now
from memosite.search import search_records
from memosite.vault import Vault

PROJECT = "shop"
TOKEN = "ghp_" + "A1b2" * 9  # a GitHub token shape the secret scanner knows

TRAP = "/memories/traps/retry-double-charge.md"
DECISION = "/memories/decisions/use-postgres.md"
NOTES = "/memories/progress.md"

# One working session of a model, as the tool-use blocks the API sends (their ``input``).
SESSION: list[dict[str, Any]] = [
    {"command": "view", "path": "/memories"},
    {
        "command": "create",
        "path": TRAP,
        "file_text": "---\ntitle: Payment retries double the charge\nseverity: high\npathPatterns: [billing/**]\n---\n"
        "Retrying a payment without an idempotency key charges twice.\n",
    },
    {"command": "create", "path": DECISION, "file_text": "# Use Postgres for orders\n\nSQLite locks under load.\n"},
    {"command": "create", "path": NOTES, "file_text": "# Progress\n- orders table migrated\n"},
    {"command": "view", "path": TRAP},
    {"command": "str_replace", "path": TRAP, "old_str": "charges twice", "new_str": "charges the customer twice"},
    {"command": "view", "path": DECISION},
    {"command": "insert", "path": DECISION, "insert_line": 999, "insert_text": "Revisit when we shard."},
    {"command": "rename", "old_path": DECISION, "new_path": "/memories/decisions/postgres-for-orders.md"},
    {"command": "rename", "old_path": NOTES, "new_path": "/memories/notes/progress.md"},
    {"command": "delete", "path": "/memories/notes/progress.md"},
    {"command": "view", "path": "/memories"},
]


def block(number: int, command: dict[str, Any]) -> BetaToolUseBlock:
    return BetaToolUseBlock(id=f"toolu_{number:04d}", type="tool_use", name="memory", input=command)


def call(tool: MemositeMemoryTool, command: dict[str, Any]) -> tuple[str, bool]:
    """Run one tool-use block as the SDK's runner does: its result text, and whether it is an error."""
    try:
        return str(tool.call(block(1, command).input)), False
    except ToolError as exc:
        return str(exc.content), True


def fix_insert_line(tool: MemositeMemoryTool, command: dict[str, Any]) -> dict[str, Any]:
    """The model inserts after the last line it saw: count them as it would from its last view."""
    if command["command"] == "insert" and command["insert_line"] == 999:
        text, _ = call(tool, {"command": "view", "path": command["path"]})
        lines = text.split("\n")[1:]
        last = next(n for n, line in enumerate(reversed(lines)) if line.split("\t", 1)[-1])
        return {**command, "insert_line": len(lines) - last}
    return command


@pytest.fixture
def tool(vault_dir: Path) -> MemositeMemoryTool:
    return MemositeMemoryTool(vault=vault_dir, project=PROJECT, client="shop-bot")


def run_session(tool: MemositeMemoryTool) -> list[tuple[str, bool]]:
    return [call(tool, fix_insert_line(tool, command)) for command in SESSION]


def record_at(vault_dir: Path, relative: str) -> Any:
    return read_record(vault_dir / "projects" / PROJECT / relative)


# --- a whole session --------------------------------------------------------------------------


@pytest.mark.slow
def test_a_whole_sdk_session_lands_in_records_index_views_and_site(
    tool: MemositeMemoryTool, vault_dir: Path, tmp_path: Path
) -> None:
    results = run_session(tool)
    assert [error for _, error in results] == [False] * len(SESSION), results
    texts = [text for text, _ in results]
    assert texts[1] == f"File created successfully at: {TRAP}"
    assert texts[4].startswith(f"Here's the content of {TRAP} with line numbers:\n     1\t---\n")
    assert "\tRetrying a payment without an idempotency key charges twice." in texts[4]
    assert texts[5].startswith("The memory file has been edited. Here is the snippet showing the change")
    assert "charges the customer twice." in texts[5]
    assert texts[7] == f"The file {DECISION} has been edited."
    assert texts[8] == f"Successfully renamed {DECISION} to /memories/decisions/postgres-for-orders.md"
    assert texts[10] == "Successfully deleted /memories/notes/progress.md"
    final = texts[-1]
    assert final.startswith("Here're the files and directories up to 2 levels deep in /memories,")
    assert f"\t{TRAP}\n" in final and "\t/memories/decisions/postgres-for-orders.md\n" in final
    assert "progress.md" not in final.split("\n\n")[0]

    # The records: written as an agent's, through the store.
    trap = record_at(vault_dir, "traps/retry-double-charge.md")
    assert trap.body == "Retrying a payment without an idempotency key charges the customer twice.\n"
    assert trap.frontmatter["severity"] == "high" and trap.frontmatter["pathPatterns"] == ["billing/**"]
    assert trap.frontmatter["source"] == "agent" and trap.frontmatter["author"] == "shop-bot via memosite"
    decision = record_at(vault_dir, "decisions/use-postgres.md")
    assert decision.frontmatter["memoryPath"] == "/memories/decisions/postgres-for-orders.md"
    assert decision.body.endswith("SQLite locks under load.\nRevisit when we shard.\n")
    notes = record_at(vault_dir, "plans/progress.md")
    assert notes.kind == "state" and notes.status == "archived"  # deleted = archived, the file stays

    # The index, the views and the site.
    vault = Vault.open(vault_dir)
    found = search_records(vault, PROJECT, "idempotency")
    assert [hit.id for hit in found.results] == ["retry-double-charge"]
    traps_view = (vault_dir / "projects" / PROJECT / "TRAPS.md").read_text(encoding="utf-8")
    decisions_view = (vault_dir / "projects" / PROJECT / "DECISIONS.md").read_text(encoding="utf-8")
    assert "Payment retries double the charge" in traps_view
    assert "Use Postgres for orders" in decisions_view
    from memosite.site.build import build_site

    build_site(vault, out_dir=tmp_path / "site")
    vault.close()
    records = json.loads((tmp_path / "site/memory/records.json").read_text(encoding="utf-8"))["records"]
    titles = {r["title"]: r for r in records}
    assert {"Payment retries double the charge", "Use Postgres for orders"} <= set(titles)
    assert "Progress" not in titles  # a working note (state) is never published
    page = tmp_path / "site/memory" / titles["Payment retries double the charge"]["url"] / "index.html"
    assert "charges the customer twice" in page.read_text(encoding="utf-8")


def test_the_async_tool_runs_the_same_commands(vault_dir: Path) -> None:
    tool = AsyncMemositeMemoryTool(vault=vault_dir, project=PROJECT)

    async def scenario() -> list[str]:
        created = await tool.call(block(1, SESSION[1]).input)
        viewed = await tool.call(block(2, {"command": "view", "path": TRAP, "view_range": [5, 5]}).input)
        with pytest.raises(ToolError) as refused:
            await tool.call(block(3, SESSION[1]).input)
        return [str(created), str(viewed), str(refused.value.content)]

    created, viewed, refused = anyio.run(scenario)
    assert created == f"File created successfully at: {TRAP}"
    assert viewed.startswith(f"Here's the content of {TRAP} with line numbers:\n     5\t")
    assert refused == f"Error: File {TRAP} already exists"


def test_the_sdk_tool_declares_itself_as_the_memory_tool(tool: MemositeMemoryTool) -> None:
    assert tool.to_dict() == {"type": "memory_20250818", "name": "memory"}
    assert tool.name == "memory"


# --- the documented texts --------------------------------------------------------------------


def test_refusals_use_the_texts_of_the_tool_documentation(tool: MemositeMemoryTool) -> None:
    call(tool, {"command": "create", "path": NOTES, "file_text": "one\ntwo\none\n"})
    cases = {
        "view missing": ({"command": "view", "path": "/memories/nope.md"}, None),
        "create existing": ({"command": "create", "path": NOTES, "file_text": "x"}, None),
        "replace missing text": ({"command": "str_replace", "path": NOTES, "old_str": "three", "new_str": "3"}, None),
        "replace twice found": ({"command": "str_replace", "path": NOTES, "old_str": "one", "new_str": "1"}, None),
        "insert out of range": ({"command": "insert", "path": NOTES, "insert_line": 99, "insert_text": "x"}, None),
        "delete missing": ({"command": "delete", "path": "/memories/gone.md"}, None),
        "rename onto existing": ({"command": "rename", "old_path": NOTES, "new_path": NOTES}, None),
        "rename missing": ({"command": "rename", "old_path": "/memories/a.md", "new_path": "/memories/b.md"}, None),
    }
    got = {name: call(tool, command) for name, (command, _) in cases.items()}
    assert all(error for _, error in got.values()), got
    text = {name: value for name, (value, _) in got.items()}
    assert text["view missing"] == "The path /memories/nope.md does not exist. Please provide a valid path."
    assert text["create existing"] == f"Error: File {NOTES} already exists"
    assert (
        text["replace missing text"]
        == f"No replacement was performed, old_str `three` did not appear verbatim in {NOTES}."
    )
    assert text["replace twice found"].startswith("No replacement was performed. Multiple occurrences of old_str `one`")
    assert text["replace twice found"].endswith("Please ensure it is unique")
    assert text["insert out of range"].startswith("Error: Invalid `insert_line` parameter: 99. It should be within")
    assert text["delete missing"] == "Error: The path /memories/gone.md does not exist"
    assert text["rename onto existing"] == f"Error: The destination {NOTES} already exists"
    assert text["rename missing"] == "Error: The path /memories/a.md does not exist"


def test_viewing_a_file_numbers_its_lines_and_honours_view_range(tool: MemositeMemoryTool) -> None:
    call(tool, {"command": "create", "path": NOTES, "file_text": "alpha\nbeta\ngamma\n"})
    whole, _ = call(tool, {"command": "view", "path": NOTES})
    lines = whole.split("\n")[1:]
    first = next(n for n, line in enumerate(lines, 1) if line.endswith("\talpha"))
    assert lines[first - 1 : first + 2] == [f"{first:>6}\talpha", f"{first + 1:>6}\tbeta", f"{first + 2:>6}\tgamma"]
    part, _ = call(tool, {"command": "view", "path": NOTES, "view_range": [first + 1, -1]})
    assert part.split("\n")[1:3] == [f"{first + 1:>6}\tbeta", f"{first + 2:>6}\tgamma"]
    bad, error = call(tool, {"command": "view", "path": NOTES, "view_range": [0, 2]})
    assert error and bad.startswith("Error: Invalid `view_range` parameter: [0, 2].")


def test_the_root_view_ends_with_an_index_of_the_freshest_records(tool: MemositeMemoryTool) -> None:
    call(tool, SESSION[1])
    call(tool, SESSION[3])
    listing, _ = call(tool, {"command": "view", "path": "/memories"})
    tree, index = listing.split("\n\n", 1)
    assert tree.split("\n")[2:] == [
        "0B\t/memories/decisions/",
        "0B\t/memories/plans/",
        tree.split("\n")[4],
        "0B\t/memories/specs/",
        tree.split("\n")[6],
        tree.split("\n")[7],
    ]
    assert tree.split("\n")[4].endswith("\t/memories/progress.md")
    assert "(state, updated " in index and ", expires " in index  # a working note says when it goes
    assert f"{TRAP} (trap, high, updated " in index


# --- paths -----------------------------------------------------------------------------------

TRAVERSALS = [
    "/memories/../etc/passwd",
    "/memories/..\\..\\windows\\system.ini",
    "/memories/%2e%2e/%2e%2e/etc/passwd",
    "/memories/%2e%2e%2fsecret.md",
    "/memories/%252e%252e%252fsecret.md",
    "/memories/%25252e%25252e%25252fsecret.md",
    "/memories/%2E%2E%5Csecret.md",
    "/memories/．．/secret.md",
    "/memories/a/./b.md",
    "/memories/a\x00.md",
    "/memories/a\nb.md",
]
OUTSIDE = ["/etc/passwd", "/memoriesX/a.md", "memories/a.md", "~/notes.md", "C:\\memories\\a.md", ""]


@pytest.mark.parametrize("path", TRAVERSALS)
def test_a_traversal_out_of_memories_is_refused_and_writes_nothing(
    tool: MemositeMemoryTool, vault_dir: Path, path: str
) -> None:
    for command in (
        {"command": "create", "path": path, "file_text": "pwned"},
        {"command": "view", "path": path},
        {"command": "delete", "path": path},
        {"command": "rename", "old_path": NOTES, "new_path": path},
    ):
        text, error = call(tool, command)
        assert error, command
        assert "would escape /memories directory" in text or "longer than" in text, text
    assert not list(vault_dir.rglob("*.md"))


@pytest.mark.parametrize("path", OUTSIDE)
def test_an_absolute_path_elsewhere_is_refused(tool: MemositeMemoryTool, vault_dir: Path, path: str) -> None:
    text, error = call(tool, {"command": "create", "path": path, "file_text": "x"})
    assert error
    assert text.startswith("Path must start with /memories") or "would escape" in text
    assert not list(vault_dir.rglob("*.md"))


def test_an_overlong_path_is_refused(tool: MemositeMemoryTool) -> None:
    text, error = call(tool, {"command": "create", "path": "/memories/" + "a" * 300 + ".md", "file_text": "x"})
    assert error and "longer than 255 characters" in text


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from([*"/.\\%2eEfF5cC0a-_ ．\x00", "memories", "/memories/", "%2e", "%25", "..", "é", "数"]),
        max_size=16,
    ).map("".join)
)
def test_every_accepted_path_is_canonical_and_inside_memories(path: str) -> None:
    try:
        canonical = canonical_path(path)
    except InvalidArguments:
        return
    assert canonical == ROOT or canonical.startswith(ROOT + "/")
    parts = canonical.split("/")[2:]
    assert all(part not in ("", ".", "..") for part in parts)
    assert "\\" not in canonical and "\x00" not in canonical
    assert canonical_path(canonical) == canonical


def test_a_symlink_planted_in_the_vault_is_neither_read_nor_written_through(
    tool: MemositeMemoryTool, vault_dir: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("---\nid: secret\nkind: trap\n---\nthe neighbour's notes\n", encoding="utf-8")
    traps = vault_dir / "projects" / PROJECT / "traps"
    traps.mkdir(parents=True)
    os.symlink(outside / "secret.md", traps / "secret.md")
    os.symlink(outside, vault_dir / "projects" / PROJECT / "decisions")

    listing, _ = call(tool, {"command": "view", "path": "/memories"})
    assert "secret" not in listing
    text, error = call(tool, {"command": "view", "path": "/memories/traps/secret.md"})
    assert error and "does not exist" in text
    text, error = call(tool, {"command": "create", "path": "/memories/decisions/x.md", "file_text": "through a link"})
    assert error and "symlink" in text
    assert sorted(p.name for p in outside.iterdir()) == ["secret.md"]


# --- the write path --------------------------------------------------------------------------


def test_invalid_frontmatter_is_the_tools_error_and_nothing_is_written(
    tool: MemositeMemoryTool, vault_dir: Path
) -> None:
    bad_value, error = call(
        tool, {"command": "create", "path": TRAP, "file_text": "---\nseverity: urgent\n---\nbody\n"}
    )
    assert error and bad_value.startswith("Error: invalid severity 'urgent'") and "nothing was written" in bad_value
    not_yaml, error = call(tool, {"command": "create", "path": TRAP, "file_text": "---\ntitle: [unclosed\n---\nbody\n"})
    assert error and "not valid YAML" in not_yaml
    assert not list(vault_dir.rglob("*.md"))


def test_an_edit_that_breaks_the_frontmatter_is_refused_and_the_record_kept(
    tool: MemositeMemoryTool, vault_dir: Path
) -> None:
    call(tool, SESSION[1])
    before = (vault_dir / "projects" / PROJECT / "traps/retry-double-charge.md").read_bytes()
    for old, new in (("severity: high", "severity: [high"), ("---\nRetrying", "Retrying")):
        text, error = call(tool, {"command": "str_replace", "path": TRAP, "old_str": old, "new_str": new})
        assert error and "nothing was written" in text, text
    assert (vault_dir / "projects" / PROJECT / "traps/retry-double-charge.md").read_bytes() == before


@pytest.mark.parametrize(
    ("old", "new", "field"),
    [
        ("source: agent", "source: human", "source"),
        ("author: shop-bot", "author: a person", "author"),
        ("kind: trap", "kind: decision", "kind"),
        ("severity: high", "severity: high\nreview: approved", "review"),
        ("severity: high", "severity: high\nreviewedBy: me", "reviewedBy"),
        ("severity: high", "severity: high\nmemoryPath: /memories/x.md", "memoryPath"),
    ],
)
def test_an_agent_cannot_claim_provenance_or_approve_itself(
    tool: MemositeMemoryTool, vault_dir: Path, old: str, new: str, field: str
) -> None:
    call(tool, SESSION[1])
    text, error = call(tool, {"command": "str_replace", "path": TRAP, "old_str": old, "new_str": new})
    assert error and text.startswith(f"Error: {field} is kept by memosite"), text
    created, error = call(
        tool, {"command": "create", "path": "/memories/traps/other.md", "file_text": f"---\n{new}\n---\nbody\n"}
    )
    assert error and "kept by memosite" in created
    assert record_at(vault_dir, "traps/retry-double-charge.md").frontmatter["source"] == "agent"


def test_a_secret_is_refused_and_nothing_is_written(tool: MemositeMemoryTool, vault_dir: Path) -> None:
    text, error = call(tool, {"command": "create", "path": NOTES, "file_text": f"deploy token {TOKEN}\n"})
    assert error and text.startswith("Error: ") and "nothing was written" in text
    assert not list(vault_dir.rglob("*.md"))
    call(tool, {"command": "create", "path": NOTES, "file_text": "deploy token: ask ops\n"})
    text, error = call(tool, {"command": "str_replace", "path": NOTES, "old_str": "ask ops", "new_str": TOKEN})
    assert error
    assert TOKEN not in (vault_dir / "projects" / PROJECT / "plans/progress.md").read_text(encoding="utf-8")


def test_where_review_is_required_the_tools_writes_wait_and_accepted_memory_stays(
    vault_dir: Path, run_cli: Any
) -> None:
    vault = Vault.open(vault_dir)
    config = json.loads((vault_dir / "config.json").read_text(encoding="utf-8"))
    config["review"]["required"] = ["decision"]
    (vault_dir / "config.json").write_text(json.dumps(config), encoding="utf-8")
    vault.close()
    tool = MemositeMemoryTool(vault=vault_dir, project=PROJECT, client="shop-bot")
    call(tool, SESSION[2])
    decision = record_at(vault_dir, "decisions/use-postgres.md")
    assert decision.frontmatter["review"] == "pending" and decision.frontmatter["source"] == "agent"
    # Its own proposal it may still move; once a person approved it, the tool cannot delete it.
    assert run_cli("--project", PROJECT, "review", "approve", "use-postgres").exit_code == 0
    text, error = call(tool, {"command": "delete", "path": DECISION})
    assert error and "reviewed memory" in text
    assert record_at(vault_dir, "decisions/use-postgres.md").status == "active"
    # An edit is a proposal: the approved record keeps serving, the change waits beside it.
    approved = (vault_dir / "projects" / PROJECT / "decisions/use-postgres.md").read_bytes()
    text, error = call(tool, {"command": "str_replace", "path": DECISION, "old_str": "load", "new_str": "heavy load"})
    assert not error, text
    assert (vault_dir / "projects" / PROJECT / "decisions/use-postgres.md").read_bytes() == approved
    proposed = vault_dir / "projects" / PROJECT / "decisions/use-postgres.proposed.md"
    assert "heavy load" in proposed.read_text(encoding="utf-8")


def test_renaming_across_kinds_supersedes_and_keeps_the_old_record(tool: MemositeMemoryTool, vault_dir: Path) -> None:
    call(tool, SESSION[3])
    text, error = call(tool, {"command": "rename", "old_path": NOTES, "new_path": "/memories/decisions/progress.md"})
    assert not error, text
    old = record_at(vault_dir, "plans/progress.md")
    assert old.status == "superseded"
    new = read_record(vault_dir / "projects" / PROJECT / "decisions" / f"{old.frontmatter['supersededBy']}.md")
    assert new.kind == "decision" and new.frontmatter["supersedes"] == "progress"
    assert new.frontmatter["created"] == old.frontmatter["created"]  # the history keeps its date
    listing, _ = call(tool, {"command": "view", "path": "/memories/decisions"})
    assert "\t/memories/decisions/progress.md" in listing


def test_a_directory_of_notes_moves_and_is_deleted_as_one_unit(tool: MemositeMemoryTool, vault_dir: Path) -> None:
    for name in ("a", "b"):
        call(tool, {"command": "create", "path": f"/memories/notes/{name}.md", "file_text": f"note {name}\n"})
    text, error = call(tool, {"command": "rename", "old_path": "/memories/notes", "new_path": "/memories/done"})
    assert not error, text
    listing, _ = call(tool, {"command": "view", "path": "/memories/done"})
    assert "\t/memories/done/a.md" in listing and "\t/memories/done/b.md" in listing
    text, error = call(tool, {"command": "delete", "path": "/memories/traps"})
    assert error and "one by one" in text
    assert call(tool, {"command": "delete", "path": "/memories/done"}) == ("Successfully deleted /memories/done", False)
    assert {record_at(vault_dir, f"plans/{n}").status for n in ("notes-a.md", "notes-b.md")} == {"archived"}


def test_working_notes_expire_when_not_written_for_the_idle_time(vault_dir: Path) -> None:
    vault = Vault.open(vault_dir)
    backend = MemoryBackend(vault, PROJECT, idle_ttl="30d")
    backend.run({"command": "create", "path": NOTES, "file_text": "half done\n"})
    backend.run({"command": "create", "path": TRAP, "file_text": "A lasting trap.\n"})
    later = MemoryBackend(vault, PROJECT, clock=lambda: utc_now() + timedelta(days=31))
    listing = later.run({"command": "view", "path": "/memories"})
    assert NOTES not in listing and TRAP in listing  # durable kinds keep their own (no) expiry
    record = record_at(vault_dir, "plans/progress.md")
    assert record.frontmatter["ttl"] == "30d" and record.frontmatter["expires_at"]
    vault.close()


def test_a_file_larger_than_the_cap_is_refused(tool: MemositeMemoryTool, vault_dir: Path) -> None:
    text, error = call(tool, {"command": "create", "path": NOTES, "file_text": "x" * (MAX_FILE_BYTES + 1)})
    assert error and f"at most {MAX_FILE_BYTES}" in text
    assert not list(vault_dir.rglob("*.md"))


def test_a_huge_record_written_elsewhere_is_viewed_in_parts(tool: MemositeMemoryTool, vault_dir: Path) -> None:
    from memosite.store import upsert_record

    vault = Vault.open(vault_dir)
    upsert_record(vault, PROJECT, kind="spec", slug="big", body="".join(f"line {n}\n" for n in range(40_000)))
    vault.close()
    text, error = call(tool, {"command": "view", "path": "/memories/specs/big.md"})
    assert not error and len(text) < 110_000
    assert text.rstrip().split("\n")[-1].startswith("… cut at line ")


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("заметки.md", "Миграция счёта ломается при повторе."),
        ("数据库.md", "数据库迁移需要锁表。"),
        ("ملاحظات.md", "إعادة المحاولة تضاعف الدفع."),
        ("Ελληνικά.md", "Η επανάληψη χρεώνει δύο φορές."),
        ("café 🚀.md", "Accents é and emoji 🚀 stay as written."),
    ],
)
def test_files_named_and_written_in_any_script_round_trip(
    tool: MemositeMemoryTool, vault_dir: Path, name: str, content: str
) -> None:
    path = f"/memories/traps/{name}"
    assert call(tool, {"command": "create", "path": path, "file_text": content + "\n"}) == (
        f"File created successfully at: {path}",
        False,
    )
    listing, _ = call(tool, {"command": "view", "path": "/memories/traps"})
    assert f"\t{path}" in listing
    text, _ = call(tool, {"command": "view", "path": path})
    assert f"\t{content}" in text
    files = list((vault_dir / "projects" / PROJECT / "traps").glob("*.md"))
    assert len(files) == 1 and files[0].name.isascii()


@pytest.mark.parametrize(
    "command",
    [
        {"command": "explode", "path": "/memories"},
        {"command": "create", "path": NOTES},
        {"command": "view", "path": "/memories", "file_text": "x"},
        {"command": "insert", "path": NOTES, "insert_line": "2", "insert_text": "x"},
        {"command": "insert", "path": NOTES, "insert_line": True, "insert_text": "x"},
        {"command": "view", "path": NOTES, "view_range": [1]},
        {"command": "str_replace", "path": NOTES, "old_str": "", "new_str": "x"},
        {"command": "create", "path": "/memories", "file_text": "x"},
        {"command": "create", "path": "/memories/traps", "file_text": "x"},
        {"command": "create", "path": "/memories/progress.md/inner.md", "file_text": "x"},
    ],
)
def test_wrong_and_extra_arguments_are_one_clear_refusal(tool: MemositeMemoryTool, command: dict[str, Any]) -> None:
    call(tool, {"command": "create", "path": NOTES, "file_text": "one\n"})
    text, error = call(tool, command)
    assert error and text and "Traceback" not in text
    assert "\n" not in text


def test_clearing_all_memory_is_refused(tool: MemositeMemoryTool) -> None:
    with pytest.raises(ToolError):
        tool.clear_all_memory()


# --- the MCP memory tool -----------------------------------------------------------------------


@pytest.fixture
def mcp_texts(vault_dir: Path) -> Iterator[Any]:
    from test_mcp import connect

    def drive(commands: list[dict[str, Any]], project: str = "demo") -> list[tuple[str, bool]]:
        async def scenario() -> list[tuple[str, bool]]:
            out = []
            async with connect(vault_dir) as session:
                for command in commands:
                    arguments = fix_mcp_insert(out, command)
                    result = await session.call_tool("memory", {**arguments, "projectId": PROJECT})
                    out.append((result.content[0].text, bool(result.is_error)))
            return out

        return anyio.run(scenario)

    yield drive


def fix_mcp_insert(out: list[tuple[str, bool]], command: dict[str, Any]) -> dict[str, Any]:
    if command["command"] == "insert" and command["insert_line"] == 999:
        lines = out[-1][0].split("\n")[1:]
        last = next(n for n, line in enumerate(reversed(lines)) if line.split("\t", 1)[-1])
        return {**command, "insert_line": len(lines) - last}
    return command


def test_the_mcp_memory_tool_passes_the_same_session(mcp_texts: Any, vault_dir: Path) -> None:
    results = mcp_texts(SESSION)
    assert [error for _, error in results] == [False] * len(SESSION), results
    assert results[1][0] == f"File created successfully at: {TRAP}"
    assert results[8][0] == f"Successfully renamed {DECISION} to /memories/decisions/postgres-for-orders.md"
    assert "\t/memories/decisions/postgres-for-orders.md\n" in results[-1][0]
    trap = record_at(vault_dir, "traps/retry-double-charge.md")
    assert trap.body == "Retrying a payment without an idempotency key charges the customer twice.\n"
    assert trap.frontmatter["source"] == "agent"
    assert record_at(vault_dir, "plans/progress.md").status == "archived"


def test_mcp_refusals_are_the_tools_own_texts_with_a_stable_code(mcp_texts: Any, vault_dir: Path) -> None:
    results = mcp_texts(
        [
            {"command": "view", "path": "/memories/nope.md"},
            {"command": "create", "path": "/memories/%2e%2e%2fx.md", "file_text": "x"},
        ]
    )
    assert results[0] == ("The path /memories/nope.md does not exist. Please provide a valid path.", True)
    assert results[1] == ("Path /memories/%2e%2e%2fx.md would escape /memories directory", True)


def test_an_mcp_view_before_any_vault_exists_creates_none(tmp_path: Path) -> None:
    from mcp import Client

    from memosite.mcp_server.server import build_server

    vault = Vault(root=tmp_path / "no-vault", config=Vault.open(tmp_path / "cfg").config)

    async def scenario() -> tuple[str, bool]:
        async with Client(build_server(vault, "demo"), mode="legacy") as client:
            result = await client.call_tool("memory", {"command": "view", "path": "/memories"})
            return result.content[0].text, bool(result.is_error)

    text, error = anyio.run(scenario)
    assert not error and text.startswith("Here're the files and directories up to 2 levels deep in /memories")
    assert not (tmp_path / "no-vault").exists()


# --- the README's ten lines, against a local stand-in for the API ------------------------------


def test_the_readme_snippet_runs_a_session_through_the_sdk_runner(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The README's code as written, with the SDK's own tool runner: the API's replies come from a
    server on the loopback address that answers as the API does (two tool-use turns, then text)."""
    import threading
    from http.server import BaseHTTPRequestHandler, HTTPServer

    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
    section = readme.split("### Claude's memory tool on the vault\n", 1)[1]
    snippet = section.split("```python\n", 1)[1].split("```", 1)[0]
    turns = [
        [{"type": "tool_use", "id": "toolu_01", "name": "memory", "input": SESSION[1]}],
        [{"type": "tool_use", "id": "toolu_02", "name": "memory", "input": {"command": "view", "path": "/memories"}}],
        [{"type": "text", "text": "Remembered the retry trap."}],
    ]
    sent: list[dict[str, Any]] = []

    class Api(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            sent.append(json.loads(self.rfile.read(int(self.headers["content-length"]))))
            content = turns[min(len(sent), len(turns)) - 1]
            reply = {
                "id": f"msg_{len(sent)}",
                "type": "message",
                "role": "assistant",
                "model": "claude-sonnet-4-5",
                "content": content,
                "stop_reason": "tool_use" if content[0]["type"] == "tool_use" else "end_turn",
                "stop_sequence": None,
                "usage": {"input_tokens": 10, "output_tokens": 10},
            }
            body = json.dumps(reply).encode("utf-8")
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Api)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    monkeypatch.setenv("ANTHROPIC_BASE_URL", f"http://127.0.0.1:{server.server_port}")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    try:
        exec(compile(snippet, "README.md", "exec"), {})
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
    assert capsys.readouterr().out == "Remembered the retry trap.\n"
    results = [block for request in sent[1:] for block in request["messages"][-1]["content"]]
    assert results[0]["tool_use_id"] == "toolu_01" and results[0]["content"] == f"File created successfully at: {TRAP}"
    assert f"\t{TRAP}" in results[1]["content"]
    vault_dir = Path(os.environ["HOME"]) / ".memosite"
    trap = read_record(vault_dir / "projects" / "shop" / "traps" / "retry-double-charge.md")
    assert trap.frontmatter["author"] == "shop-bot via memosite"
