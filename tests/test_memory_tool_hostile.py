"""Claude's memory tool under hostile input, each test the attack it stops: names that read as
other names, separators smuggled in encoded, text no file can hold, a record too long to show,
names memosite keeps for itself, fields memosite records. Driven through the SDK class with the
tool-use blocks the API sends (no network)."""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path
from typing import Any

import pytest
from anthropic.lib.tools import ToolError
from anthropic.types.beta import BetaToolUseBlock
from hypothesis import given, settings
from hypothesis import strategies as st

from memosite.errors import InvalidArguments
from memosite.integrations.anthropic import MemositeMemoryTool
from memosite.memorytool.paths import ROOT, canonical_path
from memosite.memorytool.reading import MAX_VIEW_CHARS
from memosite.store import upsert_record
from memosite.vault import Vault

PROJECT = "shop"


@pytest.fixture
def tool(vault_dir: Path) -> MemositeMemoryTool:
    return MemositeMemoryTool(vault=vault_dir, project=PROJECT, client="shop-bot")


def call(tool: MemositeMemoryTool, command: dict[str, Any]) -> tuple[str, bool]:
    """One tool-use block through the SDK's entry point: its text, and whether it is an error."""
    block = BetaToolUseBlock(id="toolu_0001", type="tool_use", name="memory", input=command)
    try:
        return str(tool.call(block.input)), False
    except ToolError as exc:
        return str(exc.content), True


def record_files(vault_dir: Path) -> list[Path]:
    return sorted(p for p in (vault_dir / "projects").rglob("*.md") if p.parent.name != PROJECT)


# --- names that read as other names --------------------------------------------------------------

SPOOFED = [
    "/memories/\u200b../secret.md",  # a zero-width space: shows as ../secret.md
    "/memories/.\u200b./secret.md",
    "/memories/notes.md\u202e",  # right-to-left override: turns what follows around
    "/memories/\u202egnp.md",
    "/memories/\u2066a\u2069.md",  # a bidirectional isolate
    "/memories/a\u2028100B\t/memories/b.md",  # a line separator: a second entry in the listing
    "/memories/a\u2029b.md",
    "/memories/\ufeffnotes.md",  # a byte order mark
    "/memories/traps/retry\u00ad.md",  # a soft hyphen: invisible
    "/memories/%E2%80%8B../secret.md",  # the zero-width space percent-encoded
]


@pytest.mark.parametrize("path", SPOOFED)
def test_a_name_that_reads_as_another_is_refused_and_writes_nothing(
    tool: MemositeMemoryTool, vault_dir: Path, path: str
) -> None:
    text, error = call(tool, {"command": "create", "path": path, "file_text": "pwned\n"})
    assert error, text
    assert "invisible character" in text or "would escape /memories directory" in text, text
    assert "\n" not in text and "\u2028" not in text
    assert record_files(vault_dir) == []


def test_joiners_stay_allowed_in_names_written_with_them(tool: MemositeMemoryTool) -> None:
    # Persian writes ZWNJ inside words; emoji sequences are joined by ZWJ.
    for path in ("/memories/traps/می\u200cخواهم.md", "/memories/traps/team-\U0001f468\u200d\U0001f469.md"):
        assert call(tool, {"command": "create", "path": path, "file_text": "kept\n"}) == (
            f"File created successfully at: {path}",
            False,
        )


ENCODED_SEPARATORS = [
    "/memories/%2F%2Fsecret.md",
    "/memories/notes%2F..%2F..%2Fetc.md",
    "/memories/a%2Fb.md",
    "/memories/a%252Fb.md",
    "/memories/a%5Cb.md",
]


@pytest.mark.parametrize("path", ENCODED_SEPARATORS)
def test_a_separator_smuggled_in_encoded_is_refused(tool: MemositeMemoryTool, vault_dir: Path, path: str) -> None:
    text, error = call(tool, {"command": "create", "path": path, "file_text": "pwned\n"})
    assert error and text == f"Path {path} would escape /memories directory"
    assert record_files(vault_dir) == []


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [
                *("/memories/", "/", ".", "..", "%2F", "%2f", "%25", "%2e", "a"),
                *("\u200b", "\u202e", "\u2028", "\u200d", "é", "数", "ملف", "\U0001f680"),
            ]
        ),
        max_size=12,
    ).map("".join)
)
def test_every_accepted_path_holds_only_visible_characters(path: str) -> None:
    try:
        canonical = canonical_path(path)
    except InvalidArguments:
        return
    assert canonical == ROOT or canonical.startswith(ROOT + "/")
    assert not any(
        unicodedata.category(char) in ("Cc", "Cf", "Cs", "Zl", "Zp") and char not in "\u200c\u200d"
        for char in canonical
    )
    assert "%2F" not in canonical.upper()


# --- text no file can hold -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        {"command": "create", "path": "/memories/\ud800.md", "file_text": "x\n"},
        {"command": "create", "path": "/memories/notes.md", "file_text": "half a pair \ud83d\n"},
        {"command": "str_replace", "path": "/memories/notes.md", "old_str": "x", "new_str": "\udc00"},
    ],
)
def test_a_lone_surrogate_is_one_clear_refusal_not_an_encoding_crash(
    tool: MemositeMemoryTool, vault_dir: Path, command: dict[str, Any]
) -> None:
    # JSON carries "\ud800" as happily as any escape: the API can send it.
    text, error = call(tool, command)
    assert error
    assert text.startswith("Error: ") and "not valid Unicode (an unpaired surrogate)" in text
    assert "UnicodeEncodeError" not in text
    assert record_files(vault_dir) == []
    json.dumps(text, ensure_ascii=False).encode("utf-8")  # the refusal itself goes back to the API


# --- what a view returns ---------------------------------------------------------------------------


def test_a_record_of_one_huge_line_is_viewed_within_the_cap(tool: MemositeMemoryTool, vault_dir: Path) -> None:
    # A record written elsewhere (a person, an import) as one 3 MB line: the model gets its start and
    # the truth, not a result no context window holds.
    vault = Vault.open(vault_dir)
    upsert_record(vault, PROJECT, kind="spec", slug="minified", body="y" * 3_000_000 + "\ntail\n")
    vault.close()
    whole, error = call(tool, {"command": "view", "path": "/memories/specs/minified.md"})
    assert not error and len(whole) < MAX_VIEW_CHARS + 1_000
    cut = whole.rsplit("\n", 1)[-1]
    assert cut.startswith("… cut at line ") and cut.endswith(", -1]")
    long_line = int(cut.rsplit("[", 1)[1].split(",")[0])
    one, error = call(tool, {"command": "view", "path": "/memories/specs/minified.md", "view_range": [long_line, -1]})
    assert not error and len(one) < MAX_VIEW_CHARS + 1_000
    assert one.split("\n")[1] == f"{long_line:>6}\t" + "y" * MAX_VIEW_CHARS
    assert one.endswith(
        f"… line {long_line} holds 3,000,000 characters: cut after {MAX_VIEW_CHARS:,}, the rest of it cannot"
        f" be shown: view what follows with view_range [{long_line + 1}, -1]"
    )
    alone, _ = call(
        tool, {"command": "view", "path": "/memories/specs/minified.md", "view_range": [long_line, long_line]}
    )
    assert alone.endswith("the rest of it cannot be shown")
    rest, _ = call(tool, {"command": "view", "path": "/memories/specs/minified.md", "view_range": [long_line + 1, -1]})
    assert f"{long_line + 1:>6}\ttail" in rest


def test_hidden_files_stay_out_of_the_root_listing_and_its_index(tool: MemositeMemoryTool) -> None:
    for path in ("/memories/.scratchpad.md", "/memories/.cache/notes.md", "/memories/visible.md"):
        assert not call(tool, {"command": "create", "path": path, "file_text": f"text of {path}\n"})[1]
    listing, _ = call(tool, {"command": "view", "path": "/memories"})
    assert ".scratchpad" not in listing and ".cache" not in listing
    assert "/memories/visible.md (state, updated " in listing
    inside, _ = call(tool, {"command": "view", "path": "/memories/.cache"})
    assert "\t/memories/.cache/notes.md" in inside  # read by its path, as the tool's own listing allows


# --- names memosite keeps for itself ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("/memories/traps/retry.md", "/memories/traps/Retry.md"),  # one file on macOS and Windows
        ("/memories/decisions/orders.md", "/memories/decisions/x.accepted.md"),  # the accepted version's name
        ("/memories/decisions/orders.md", "/memories/decisions/orders.conflict.abc123.md"),  # a sync sidecar's
    ],
)
def test_a_name_memosite_keeps_for_a_sidecar_or_a_case_twin_gets_a_record_of_its_own(
    tool: MemositeMemoryTool, vault_dir: Path, first: str, second: str
) -> None:
    assert not call(tool, {"command": "create", "path": first, "file_text": "the first\n"})[1]
    text, error = call(tool, {"command": "create", "path": second, "file_text": "the second\n"})
    assert (text, error) == (f"File created successfully at: {second}", False)
    assert "\tthe second" in call(tool, {"command": "view", "path": second})[0]
    assert "\tthe first" in call(tool, {"command": "view", "path": first})[0]
    names = [p.name for p in record_files(vault_dir)]
    assert len(names) == 2 and not any(".accepted." in n or ".conflict." in n for n in names)
    assert len({n.lower() for n in names}) == 2  # never two files that are one on a case-blind disk
    renamed = first.rsplit("/", 1)[0] + "/moved.conflict.zz.md"
    assert call(tool, {"command": "rename", "old_path": first, "new_path": renamed}) == (
        f"Successfully renamed {first} to {renamed}",
        False,
    )
    assert "\tthe first" in call(tool, {"command": "view", "path": renamed})[0]


# --- fields memosite records -------------------------------------------------------------------------


@pytest.mark.parametrize("claim", ["occurrences: 40", "lastSeen: 2026-01-01", "helpfulCount: 500", "hits: 99999"])
def test_the_model_cannot_push_its_memory_up_the_ranking(tool: MemositeMemoryTool, vault_dir: Path, claim: str) -> None:
    path, name = "/memories/traps/retry.md", claim.split(":")[0]
    stored = vault_dir / "projects" / PROJECT / "traps" / "retry.md"
    assert not call(tool, {"command": "create", "path": path, "file_text": "---\nseverity: high\n---\nRetry twice.\n"})[
        1
    ]
    before = stored.read_text(encoding="utf-8")
    # The field's own line when memosite wrote one (occurrences, lastSeen), else a new line.
    old = next((line for line in before.splitlines() if line.startswith(f"{name}:")), "severity: high")
    new = claim if old != "severity: high" else f"severity: high\n{claim}"
    text, error = call(tool, {"command": "str_replace", "path": path, "old_str": old, "new_str": new})
    assert error and text.startswith(f"Error: {name} is kept by memosite"), text
    text, error = call(
        tool, {"command": "create", "path": "/memories/traps/other.md", "file_text": f"---\n{claim}\n---\nx\n"}
    )
    assert error and "kept by memosite" in text
    assert stored.read_text(encoding="utf-8") == before


def test_an_edit_that_names_a_field_twice_is_refused_not_silently_lost(
    tool: MemositeMemoryTool, vault_dir: Path
) -> None:
    # YAML keeps the last of two equal keys: the tags the model adds above memosite's own tags line
    # would be dropped while the tool reports the edit done.
    path = "/memories/traps/retry.md"
    stored = vault_dir / "projects" / PROJECT / "traps" / "retry.md"
    assert not call(tool, {"command": "create", "path": path, "file_text": "---\nseverity: high\n---\nRetry twice.\n"})[
        1
    ]
    before = stored.read_bytes()
    text, error = call(
        tool,
        {
            "command": "str_replace",
            "path": path,
            "old_str": "severity: high",
            "new_str": "severity: high\ntags: [payments]",
        },
    )
    assert (
        error
        and text.startswith(f"Error: the frontmatter of {path} names tags twice (lines ")
        and text.endswith("keep one; nothing was written")
    )
    assert stored.read_bytes() == before
    created, error = call(
        tool, {"command": "create", "path": "/memories/traps/x.md", "file_text": "---\ntitle: a\ntitle: b\n---\nx\n"}
    )
    assert error and "names title twice (lines 2 and 3)" in created
    # Replacing the line itself is the way: the edit lands.
    line = next(line for line in before.decode("utf-8").splitlines() if line.startswith("tags:"))
    assert not call(tool, {"command": "str_replace", "path": path, "old_str": line, "new_str": "tags: [payments]"})[1]
    assert "- payments" in stored.read_text(encoding="utf-8")


def test_renaming_across_kinds_carries_the_records_fields_not_what_memosite_recorded_of_it(
    tool: MemositeMemoryTool, vault_dir: Path
) -> None:
    trap = "/memories/traps/retry.md"
    text = "---\ntitle: Retries double charge\ntags: [payments]\n---\nRetry twice.\n"
    assert not call(tool, {"command": "create", "path": trap, "file_text": text})[1]
    old = (vault_dir / "projects" / PROJECT / "traps" / "retry.md").read_text(encoding="utf-8")
    assert "occurrences: 1" in old and "lastSeen:" in old  # memosite's count of a trap
    moved = "/memories/decisions/retry.md"
    assert call(tool, {"command": "rename", "old_path": trap, "new_path": moved}) == (
        f"Successfully renamed {trap} to {moved}",
        False,
    )
    new = (vault_dir / "projects" / PROJECT / "decisions" / "retry-2.md").read_text(encoding="utf-8")
    assert "title: Retries double charge" in new and "- payments" in new and "supersedes: retry" in new
    assert "occurrences:" not in new and "lastSeen:" not in new
