"""A write keeps the views exactly as a from-scratch compile would write them, while re-emitting
only what it changed (issue 24): a hit, which changes no row a month's inventory shows, leaves the
monthly files and the views of the kinds whose rows did not change as they are, and known current.

Every case compares the vault's views and monthly inventory files, byte for byte apart from their
``Last compiled`` stamp, with those of a new vault holding a copy of the same record files,
indexed and compiled from nothing.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memosite.errors import MemositeError
from memosite.index import fragments
from memosite.kinds import inventory_file, is_view_file
from memosite.refresh import reindex
from memosite.salience import record_hits
from memosite.schema import Record, serialize_record, validate_frontmatter
from memosite.store import forget_record, restore_record, upsert_record
from memosite.vault import Vault
from memosite.views import LINE_ROWS, write_views

PROJECT = "shop"
# Months long past (an edit moves a record to the month it is made in, whenever the suite runs),
# expiries far past or far ahead: no case depends on the clock.
MONTHS = ("2024-01", "2024-02", "2024-03")
SEVERITIES = ("critical", "high", "medium", "low")
TITLES = ("Café rounding", "Ошибка округления", "Σφάλμα στρογγυλοποίησης", "丸め誤差", "خطأ التقريب", "Emoji 🎉 race")
TRAPS = LINE_ROWS + 12  # more than INDEX.md lists: each kind has its monthly files
DECISIONS = LINE_ROWS + 6
PAST, FUTURE = "2020-01-01T00:00:00.000Z", "2999-01-01T00:00:00.000Z"


def _updated(n: int) -> str:
    month = MONTHS[n % len(MONTHS)]
    return f"{month}-{1 + n % 27:02d}T09:00:00.000Z"


def _write(root: Path, fm: dict[str, Any], body: str) -> None:
    """A record file as a person writes it (no index, no views)."""
    directory = {"trap": "traps", "decision": "decisions"}[str(fm["kind"])]
    path = root / "projects" / PROJECT / directory / f"{fm['id']}.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    fields = {key: value for key, value in fm.items() if value is not None}
    path.write_text(serialize_record(Record(validate_frontmatter(fields), body)), encoding="utf-8")


def _fill(root: Path) -> None:
    for n in range(TRAPS):
        _write(
            root,
            {
                "id": f"trap-{n:03d}",
                "kind": "trap",
                "project": PROJECT,
                "title": f"{TITLES[n % len(TITLES)]} {n}",
                "severity": SEVERITIES[n % len(SEVERITIES)],
                "status": "archived" if n % 9 == 4 else "active",
                "created": "2023-12-01T00:00:00.000Z",
                "updated": _updated(n),
                "expires_at": PAST if n % 13 == 5 else FUTURE if n % 13 == 6 else None,
                "hits": n % 3,
            },
            f"Trap {n}: the lock is taken twice · замок · 鎖.\n",
        )
    for n in range(DECISIONS):
        superseded = n % 17 == 3
        _write(
            root,
            {
                "id": f"decision-{n:03d}",
                "kind": "decision",
                "project": PROJECT,
                "title": f"Decision {n}: {TITLES[n % len(TITLES)]}",
                "status": "superseded" if superseded else "paused" if n % 11 == 2 else "active",
                "supersededBy": f"decision-{n + 1:03d}" if superseded else None,
                "created": "2023-12-01T00:00:00.000Z",
                "updated": _updated(n),
                "expires_at": PAST if n % 19 == 7 else None,
            },
            f"We chose way {n} — elegimos, 我们选择.\n",
        )


@pytest.fixture(scope="module")
def base_vault(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("follow-writes") / "vault"
    _fill(root)
    vault = Vault.open(root)
    reindex(vault, [PROJECT])
    vault.close()
    return root


_copies = iter(range(10**9))


@pytest.fixture
def copy_of(base_vault: Path, tmp_path: Path) -> Iterator[Callable[[], Vault]]:
    """Copies of the base vault, each opened once (a Hypothesis example takes a new one)."""
    opened: list[Vault] = []

    def new_copy() -> Vault:
        root = tmp_path / f"copy-{next(_copies)}"
        shutil.copytree(base_vault, root)
        opened.append(Vault.open(root))
        return opened[-1]

    yield new_copy
    for vault in opened:
        vault.close()


def _unstamped(data: bytes) -> bytes:
    return re.sub(rb"^> Last compiled: [^\n]*$", b"", data, count=1, flags=re.MULTILINE)


def _views(root: Path) -> dict[str, bytes]:
    directory = root / "projects" / PROJECT
    return {p.name: _unstamped(p.read_bytes()) for p in sorted(directory.iterdir()) if is_view_file(p.name)}


def _mtimes(root: Path) -> dict[str, int]:
    directory = root / "projects" / PROJECT
    return {p.name: p.stat().st_mtime_ns for p in sorted(directory.iterdir()) if is_view_file(p.name)}


def _from_scratch(vault: Vault, where: Path, now: datetime | None = None) -> dict[str, bytes]:
    """The views of a new vault holding a copy of ``vault``'s record files, indexed and compiled
    from nothing (at ``now`` when given)."""
    shutil.rmtree(where, ignore_errors=True)
    source = vault.project_dir(PROJECT)
    for directory in (d for d in source.iterdir() if d.is_dir()):
        shutil.copytree(directory, where / "projects" / PROJECT / directory.name)
    if (vault.root / "templates").is_dir():
        shutil.copytree(vault.root / "templates", where / "templates")
    fresh = Vault.open(where)
    try:
        reindex(fresh, [PROJECT])
    finally:
        fresh.close()
    if now is not None:
        fresh = Vault.open(where)  # a process that has compiled nothing yet
        try:
            write_views(fresh, PROJECT, now=now)
        finally:
            fresh.close()
    return _views(where)


def _assert_as_from_scratch(vault: Vault, tmp_path: Path, now: datetime | None = None) -> None:
    incremental, scratch = _views(vault.root), _from_scratch(vault, tmp_path / "scratch", now)
    assert sorted(incremental) == sorted(scratch)
    for name in scratch:
        assert incremental[name] == scratch[name], name


def _head_trap(vault: Vault) -> str:
    """The trap TRAPS.md shows first (most severe, newest)."""
    text = (vault.project_dir(PROJECT) / "TRAPS.md").read_text(encoding="utf-8")
    found = re.search(r"\]\(traps/(trap-\d+)\.md\)", text)
    assert found is not None
    return found.group(1)


# --- one write of each sort ------------------------------------------------------------------


def test_a_hit_on_the_first_trap_of_traps_md_shows_there_and_touches_no_monthly_file(
    copy_of: Callable[[], Vault], tmp_path: Path
) -> None:
    vault = copy_of()
    write_views(vault, PROJECT)  # a server that has compiled them once, as one that runs for a while
    head = _head_trap(vault)
    before = _mtimes(vault.root)
    known = set(fragments.written_files(vault.index(), PROJECT))
    assert record_hits(vault, PROJECT, [head]) == [head]
    after = _mtimes(vault.root)
    assert {name for name in after if after[name] != before[name]} == {"TRAPS.md"}
    # The month still lists the trap as it did: its file stays known current, read again by none.
    assert set(fragments.written_files(vault.index(), PROJECT)) == known
    _assert_as_from_scratch(vault, tmp_path)


def test_a_hit_on_a_decision_leaves_every_view_as_it_is_and_known_current(
    copy_of: Callable[[], Vault], tmp_path: Path
) -> None:
    vault = copy_of()
    write_views(vault, PROJECT)  # this process now knows every view current
    memo = dict(vault.index().view_memo)
    before = _mtimes(vault.root)
    assert record_hits(vault, PROJECT, ["decision-010"]) == ["decision-010"]
    assert _mtimes(vault.root) == before
    # No fragment of a decision shows hits: nothing this process remembered is forgotten.
    assert vault.index().view_memo.keys() == memo.keys()
    assert "hits: 1" in (vault.kind_dir(PROJECT, "decision") / "decision-010.md").read_text(encoding="utf-8")
    _assert_as_from_scratch(vault, tmp_path)


def test_a_hit_on_a_trap_of_an_old_month_rewrites_no_monthly_file(copy_of: Callable[[], Vault], tmp_path: Path) -> None:
    vault = copy_of()
    write_views(vault, PROJECT)
    old = "trap-111"  # low severity, the oldest month's: far down every list
    before = _mtimes(vault.root)
    known = set(fragments.written_files(vault.index(), PROJECT))
    assert record_hits(vault, PROJECT, [old]) == [old]
    after = _mtimes(vault.root)
    assert not {name for name in after if name.startswith("INDEX.") and after[name] != before[name]}
    assert set(fragments.written_files(vault.index(), PROJECT)) == known
    _assert_as_from_scratch(vault, tmp_path)


def test_an_edit_that_moves_a_record_to_another_month_rewrites_both_months(
    copy_of: Callable[[], Vault], tmp_path: Path
) -> None:
    vault = copy_of()
    moved = "trap-001"  # of 2024-02
    before = _mtimes(vault.root)
    upsert_record(vault, PROJECT, kind="trap", slug=moved, body="Edited: the lock is taken three times.")
    this_month = datetime.now(UTC).strftime("%Y-%m")
    after = _mtimes(vault.root)
    months = {name for name in after if name.startswith("INDEX.traps.") and after[name] != before.get(name)}
    assert months == {inventory_file("trap", "2024-02"), inventory_file("trap", this_month)}
    _assert_as_from_scratch(vault, tmp_path)


def test_a_record_set_to_expire_reads_expired_everywhere(copy_of: Callable[[], Vault], tmp_path: Path) -> None:
    vault = copy_of()
    upsert_record(vault, PROJECT, kind="decision", slug="decision-021", body=None, frontmatter={"expires_at": PAST})
    _assert_as_from_scratch(vault, tmp_path)


def test_views_known_current_are_compiled_again_once_a_record_expires(
    copy_of: Callable[[], Vault], tmp_path: Path
) -> None:
    vault = copy_of()
    soon = datetime.now(UTC) + timedelta(days=30)
    upsert_record(vault, PROJECT, kind="decision", slug="decision-030", body=None, frontmatter={"expires_at": soon})
    upsert_record(vault, PROJECT, kind="trap", slug="trap-030", body=None, frontmatter={"expires_at": soon})
    record_hits(vault, PROJECT, ["decision-031"])  # views known current until the first expiry
    later = soon + timedelta(days=1)
    write_views(vault, PROJECT, now=later)
    _assert_as_from_scratch(vault, tmp_path, later)


@pytest.mark.parametrize("kind", ["decision", "spec", "prompt", "scratch"])
def test_a_write_of_another_kind_compiles_again_the_views_in_which_a_record_expired_since(
    copy_of: Callable[[], Vault], tmp_path: Path, kind: str
) -> None:
    # Before: a write compiled only the views of its own kinds, so TRAPS.md went on calling a trap
    # that had expired since "active" until a trap was written again (or `memosite compile` ran).
    vault = copy_of()
    expired = datetime.now(UTC) - timedelta(days=1)
    upsert_record(vault, PROJECT, kind="trap", slug="trap-030", body=None, frontmatter={"expires_at": expired})
    write_views(vault, PROJECT, now=expired - timedelta(days=1))  # the views of a day it was active
    traps = vault.project_dir(PROJECT) / "TRAPS.md"
    assert "### [MEDIUM] Café rounding 30" in traps.read_text(encoding="utf-8")
    upsert_record(vault, PROJECT, kind=kind, slug=f"{kind}-written-now", body="Écrit maintenant · 今書いた 🕰")
    assert "[Café rounding 30](traps/trap-030.md) · trap · expired" in traps.read_text(encoding="utf-8")
    _assert_as_from_scratch(vault, tmp_path)


def test_a_supersession_moves_the_old_decision_and_names_its_successor(
    copy_of: Callable[[], Vault], tmp_path: Path
) -> None:
    vault = copy_of()
    record_hits(vault, PROJECT, ["decision-040", "decision-041"])
    upsert_record(
        vault,
        PROJECT,
        kind="decision",
        slug="decision-040-v2",
        body="We chose again.",
        frontmatter={"title": "Решение 40, пересмотрено", "supersedes": "decision-040"},
    )
    text = (vault.project_dir(PROJECT) / "DECISIONS.md").read_text(encoding="utf-8")
    assert "Решение 40, пересмотрено" in text
    _assert_as_from_scratch(vault, tmp_path)


def test_a_successor_retitled_is_named_anew_under_the_decision_it_superseded(
    copy_of: Callable[[], Vault], tmp_path: Path
) -> None:
    vault = copy_of()
    write_views(vault, PROJECT)
    upsert_record(
        vault, PROJECT, kind="decision", slug="decision-004", body=None, frontmatter={"title": "Nuevo título"}
    )
    assert "Nuevo título" in (vault.project_dir(PROJECT) / "DECISIONS.md").read_text(encoding="utf-8")
    _assert_as_from_scratch(vault, tmp_path)


def test_a_successor_waiting_for_review_renamed_is_named_anew_under_the_decision_it_superseded(
    copy_of: Callable[[], Vault], tmp_path: Path
) -> None:
    # The successor has no fragment (no view lists a record waiting for review), yet DECISIONS.md
    # names it under the decision it superseded: its new title must show there all the same.
    vault = copy_of()
    older = {
        "id": "decision-900",
        "kind": "decision",
        "project": PROJECT,
        "title": "Written by hand",
        "status": "superseded",
        "supersededBy": "decision-901",
        "created": "2024-03-01T00:00:00.000Z",
        "updated": "2024-03-02T00:00:00.000Z",
    }
    _write(vault.root, older, "Superseded by one waiting for review.\n")
    newer = {**older, "id": "decision-901", "title": "Proposée", "status": "active", "review": "pending"}
    del newer["supersededBy"]
    _write(vault.root, newer, "Waiting.\n")
    record_hits(vault, PROJECT, ["decision-010"])  # the next write picks the hand-written files up
    write_views(vault, PROJECT)
    assert "superseded by [Proposée]" in (vault.project_dir(PROJECT) / "DECISIONS.md").read_text(encoding="utf-8")
    renamed = vault.kind_dir(PROJECT, "decision") / "decision-901.md"
    staged = renamed.with_name("renamed.tmp")
    staged.write_text(renamed.read_text(encoding="utf-8").replace("Proposée", "Предложено"), encoding="utf-8")
    staged.replace(renamed)  # saved as an editor saves: the directory changes too
    record_hits(vault, PROJECT, ["decision-011"])
    assert "superseded by [Предложено]" in (vault.project_dir(PROJECT) / "DECISIONS.md").read_text(encoding="utf-8")
    _assert_as_from_scratch(vault, tmp_path)


def test_a_view_edited_by_hand_after_a_compile_is_compiled_again_by_the_next_write(
    copy_of: Callable[[], Vault], tmp_path: Path
) -> None:
    vault = copy_of()
    write_views(vault, PROJECT)
    decisions = vault.project_dir(PROJECT) / "DECISIONS.md"
    decisions.write_text("mine now, with more bytes than before? no: fewer\n", encoding="utf-8")
    upsert_record(vault, PROJECT, kind="decision", slug="decision-050", body="Edited.")
    _assert_as_from_scratch(vault, tmp_path)


def _override_view_template(vault: Vault, name: str, head: str = "", change: Callable[[str], str] = str) -> None:
    """The vault's own copy of the shipped view template ``name``, ``change``d, with ``head`` before it."""
    override = vault.root / "templates" / "views" / name
    override.parent.mkdir(parents=True, exist_ok=True)
    shipped = Path(__file__).resolve().parents[1] / "templates" / "views" / name
    override.write_text(head + change(shipped.read_text(encoding="utf-8")), encoding="utf-8")


def test_a_view_template_changed_is_seen_by_a_write_that_changes_no_row(
    copy_of: Callable[[], Vault], tmp_path: Path
) -> None:
    vault = copy_of()
    write_views(vault, PROJECT)
    _override_view_template(vault, "DECISIONS.md.j2", "Décisions · 决定\n")
    record_hits(vault, PROJECT, ["decision-060"])
    assert (vault.project_dir(PROJECT) / "DECISIONS.md").read_text(encoding="utf-8").startswith("Décisions · 决定\n")
    _assert_as_from_scratch(vault, tmp_path)


# --- any sequence of them --------------------------------------------------------------------

_HEAD_TRAPS = [f"trap-{n:03d}" for n in range(0, 24, 4)]  # critical ones, every month
_TRAP_IDS = [*_HEAD_TRAPS, "trap-004", "trap-005", "trap-006", "trap-111", "trap-057"]
_DECISION_IDS = ["decision-003", "decision-004", "decision-002", "decision-007", "decision-090", "decision-105"]
_IDS = st.sampled_from(_TRAP_IDS + _DECISION_IDS)
_STEPS = st.one_of(
    st.tuples(st.just("hit"), st.lists(_IDS, min_size=1, max_size=4)),
    st.tuples(st.just("edit"), _IDS),
    st.tuples(st.just("expire"), _IDS),
    st.tuples(st.just("retitle"), _IDS, st.sampled_from(TITLES)),
    st.tuples(st.just("severity"), st.sampled_from(_TRAP_IDS), st.sampled_from(SEVERITIES)),
    st.tuples(st.just("supersede"), st.sampled_from(_DECISION_IDS)),
    st.tuples(st.just("forget"), _IDS),
    st.tuples(st.just("archive"), _IDS),
    st.tuples(st.just("restore"), _IDS),
)


def _kind(record_id: str) -> str:
    return record_id.split("-", 1)[0]


def _apply(vault: Vault, step: tuple[Any, ...], n: int) -> None:
    action = step[0]
    if action == "hit":
        record_hits(vault, PROJECT, step[1])
    elif action == "edit":
        upsert_record(vault, PROJECT, kind=_kind(step[1]), slug=step[1], body=f"Edited {n} · изменено.")
    elif action == "expire":
        upsert_record(vault, PROJECT, kind=_kind(step[1]), slug=step[1], body=None, frontmatter={"expires_at": PAST})
    elif action == "retitle":
        fields = {"title": f"{step[2]} {n}"}
        upsert_record(vault, PROJECT, kind=_kind(step[1]), slug=step[1], body=None, frontmatter=fields)
    elif action == "severity":
        upsert_record(vault, PROJECT, kind="trap", slug=step[1], body=None, frontmatter={"severity": step[2]})
    elif action == "supersede":
        fields = {"title": f"Successor {n} · преемник", "supersedes": step[1]}
        upsert_record(
            vault, PROJECT, kind="decision", slug=f"successor-{n}", body="We chose again.", frontmatter=fields
        )
    elif action == "archive":
        forget_record(vault, PROJECT, record_id=step[1])
    elif action == "restore":
        restore_record(vault, PROJECT, record_id=step[1])
    else:
        forget_record(vault, PROJECT, record_id=step[1], purge=True)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(_STEPS, min_size=1, max_size=6))
def test_views_after_any_writes_are_those_compiled_from_nothing(
    copy_of: Callable[[], Vault], tmp_path: Path, steps: list[tuple[Any, ...]]
) -> None:
    vault = copy_of()
    write_views(vault, PROJECT)  # what a server that has compiled them once knows
    for n, step in enumerate(steps):
        try:
            _apply(vault, step, n)
        except MemositeError:
            continue  # a step that does not apply any more (the record was forgotten, superseded …)
    _assert_as_from_scratch(vault, tmp_path)


def test_a_monthly_file_template_changed_is_seen_by_the_next_write(
    copy_of: Callable[[], Vault], tmp_path: Path
) -> None:
    # A new inventory template renders no fragment differently: the months must be written again
    # all the same, as a from-scratch compile writes them with it.
    vault = copy_of()
    write_views(vault, PROJECT)
    _override_view_template(vault, "inventory.md.j2", "Inventaire · 目录 · Опись\n")
    record_hits(vault, PROJECT, ["decision-060"])
    month = vault.project_dir(PROJECT) / inventory_file("decision", "2024-01")
    assert month.read_text(encoding="utf-8").startswith("Inventaire · 目录 · Опись")
    _assert_as_from_scratch(vault, tmp_path)


def test_a_view_forged_with_its_size_and_modification_time_is_compiled_again_by_the_next_write(
    copy_of: Callable[[], Vault], tmp_path: Path
) -> None:
    # An edit that keeps the file's size and puts its modification time back (os.utime) must not
    # pass for the file this process wrote: the next write that compiles the view restores it.
    vault = copy_of()
    write_views(vault, PROJECT)
    traps = vault.project_dir(PROJECT) / "TRAPS.md"
    written = traps.stat()
    original = traps.read_bytes()
    forged = original.replace(b"critical", b"harmless", 1)
    assert len(forged) == len(original) and forged != original
    traps.write_bytes(forged)
    os.utime(traps, ns=(written.st_atime_ns, written.st_mtime_ns))
    record_hits(vault, PROJECT, ["decision-010"])  # a write that changes nothing TRAPS.md shows
    write_views(vault, PROJECT)
    assert traps.read_bytes() != forged
    _assert_as_from_scratch(vault, tmp_path)


# --- two processes ---------------------------------------------------------------------------


def test_a_server_holding_its_views_writes_them_as_from_scratch_after_the_cli_changed_the_vault(
    base_vault: Path, tmp_path: Path, memosite_exe: Path, run_cli: Callable[..., Any]
) -> None:
    # The MCP server compiles the views once and knows them current; meanwhile a person's CLI
    # writes, forgets, restores, supersedes, edits a file by hand and reindexes. The server's next
    # writes (the hits of a brief, an upsert) must leave what a compile from nothing writes.
    import anyio
    from mcp import ClientSession, StdioServerParameters, stdio_client

    root = tmp_path / "vault"
    shutil.copytree(base_vault, root)
    cli = ("--vault", str(root), "--project", PROJECT)
    server = StdioServerParameters(
        command=str(memosite_exe),
        args=["mcp", "--vault", str(root), "--project", PROJECT],
        env={"HOME": os.environ["HOME"]},
    )

    def person() -> None:
        steps = [
            ("upsert", "--kind", "trap", "--title", "Ключ повтора · 重试 🔁", "--severity", "critical", "--body", "x"),
            ("forget", "--id", "trap-000"),
            ("restore", "--id", "trap-000"),
            ("forget", "--id", "trap-004", "--purge"),
            (
                "upsert",
                "--kind",
                "decision",
                "--title",
                "Décision révisée",
                "--supersedes",
                "decision-020",
                "--body",
                "We chose again.",
            ),
            ("upsert", "--kind", "trap", "--id", "trap-008", "--severity", "low"),
        ]
        for step in steps:
            done = run_cli(*cli, *step)
            assert done.exit_code == 0, (step, done.stderr)
        edited = root / "projects" / PROJECT / "traps" / "trap-012.md"
        edited.write_text(
            edited.read_text(encoding="utf-8").replace("Trap 12:", "Trap 12, by hand — à la main:"), encoding="utf-8"
        )
        done = run_cli(*cli, "reindex")
        assert done.exit_code == 0, done.stderr

    async def scenario() -> None:
        with open(tmp_path / "server-stderr.log", "a", encoding="utf-8") as errlog:
            async with stdio_client(server, errlog=errlog) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                first = await session.call_tool("bootstrap", {"sessionId": "s-1", "query": "lock taken twice"})
                assert not first.is_error, first.content
                await anyio.to_thread.run_sync(person)
                brief = await session.call_tool("bootstrap", {"sessionId": "s-2", "query": "lock taken twice"})
                assert not brief.is_error, brief.content
                assert brief.structured_content and brief.structured_content["hitsRecorded"]
                wrote = await session.call_tool(
                    "upsert", {"kind": "decision", "title": "Решение сервера · 服务器", "body": "From the server."}
                )
                assert not wrote.is_error, wrote.content

    anyio.run(scenario)
    vault = Vault.open(root)
    try:
        _assert_as_from_scratch(vault, tmp_path)
    finally:
        vault.close()


def test_a_monthly_file_forged_with_its_size_and_modification_time_is_written_again_by_the_next_write(
    copy_of: Callable[[], Vault], tmp_path: Path
) -> None:
    # The index remembers each monthly file as written, for every process: a forgery that keeps
    # the size and puts the modification time back stayed until its month changed.
    vault = copy_of()
    write_views(vault, PROJECT)
    month = vault.project_dir(PROJECT) / inventory_file("trap", "2024-01")
    written = month.stat()
    original = month.read_bytes()
    forged = original.replace(b"critical", b"harmless", 1)
    assert len(forged) == len(original) and forged != original
    month.write_bytes(forged)
    os.utime(month, ns=(written.st_atime_ns, written.st_mtime_ns))
    vault.close()
    vault = Vault.open(vault.root)  # another process
    try:
        upsert_record(vault, PROJECT, kind="decision", slug="decision-050", body="Edited · изменено.")
        assert month.read_bytes() != forged
        _assert_as_from_scratch(vault, tmp_path)
    finally:
        vault.close()


def test_a_process_holding_its_views_writes_them_as_from_scratch_after_a_sync_brought_a_teammates_edits(
    base_vault: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Real git, a bare remote: the teammate retitles a decision's successor, changes a trap's
    # severity and purges a decision; the sync brings it all into a process whose views are known
    # current, and its next write (a hit that shows nowhere) must leave what a compile from nothing writes.
    from test_sync_support import make_team

    from memosite.sync.run import sync_vault

    (tmp_path / "team").mkdir()
    team_of = make_team(tmp_path / "team", monkeypatch)
    team = next(team_of)
    try:
        shutil.copytree(base_vault / "projects", tmp_path / "team" / "a" / "projects")
        a = team.machine("a")
        reindex(a, [PROJECT])
        sync_vault(a)
        b = team.machine("b")
        sync_vault(b)
        write_views(a, PROJECT)  # known current in this process
        upsert_record(b, PROJECT, kind="decision", slug="decision-004", body=None, frontmatter={"title": "Νέος τίτλος"})
        upsert_record(b, PROJECT, kind="trap", slug="trap-001", body=None, frontmatter={"severity": "critical"})
        forget_record(b, PROJECT, record_id="decision-010", purge=True)
        sync_vault(b)
        assert sync_vault(a).changed
        record_hits(a, PROJECT, ["decision-011"])
        _assert_as_from_scratch(a, tmp_path)
        assert "Νέος τίτλος" in (a.project_dir(PROJECT) / "DECISIONS.md").read_text(encoding="utf-8")
    finally:
        next(team_of, None)


def test_a_template_that_shows_the_compile_instant_outside_the_stamp_is_compiled_at_every_write(
    copy_of: Callable[[], Vault], tmp_path: Path
) -> None:
    # A vault's template may show when it was compiled elsewhere than in its stamp: such a view reads
    # differently at every instant, so no write may take it for current.
    vault = copy_of()
    for name in ("TRAPS.md.j2", "inventory.md.j2"):
        _override_view_template(vault, name, "Σύνταξη · 编译 {{ compiled }}\n")
    first, later = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC), datetime(2026, 1, 9, 3, 4, 5, tzinfo=UTC)
    write_views(vault, PROJECT, now=first)
    write_views(vault, PROJECT, now=later)
    assert "2026-01-09T03:04:05" in (vault.project_dir(PROJECT) / "TRAPS.md").read_text(encoding="utf-8")
    _assert_as_from_scratch(vault, tmp_path, later)


def test_a_view_template_naming_a_template_it_never_renders_compiles_as_before(
    copy_of: Callable[[], Vault], tmp_path: Path
) -> None:
    # Asking a template whether it shows the compile instant reads what it includes: an included
    # file memosite refuses to render (not UTF-8) but the view never reaches is no reason to fail.
    vault = copy_of()
    _override_view_template(vault, "TRAPS.md.j2", '{% if false %}{% include "views/never.j2" %}{% endif %}')
    (vault.root / "templates" / "views" / "never.j2").write_bytes(b"\xff\xfe not UTF-8 \xc0")
    write_views(vault, PROJECT)
    record_hits(vault, PROJECT, ["trap-000"])
    _assert_as_from_scratch(vault, tmp_path)


_STAMP_LINE = "> Last compiled: {{ compiled }}\n"


def _move_stamp_to_the_end(vault: Vault, name: str) -> None:
    """The vault's own copy of the shipped view template ``name``, its stamp line moved to its end."""

    def moved(source: str) -> str:
        assert _STAMP_LINE in source
        return source.replace(_STAMP_LINE, "") + "\n" + _STAMP_LINE

    _override_view_template(vault, name, change=moved)


def test_a_view_whose_template_moves_the_stamp_to_its_end_is_compiled_again_once_a_record_expired(
    copy_of: Callable[[], Vault], tmp_path: Path
) -> None:
    # Before: the stamp was looked for in the first 4 KB alone; a template that signs the view at its
    # foot (past 4 KB) left TRAPS.md calling an expired trap "active" after a write of another kind.
    vault = copy_of()
    _move_stamp_to_the_end(vault, "TRAPS.md.j2")
    expired = datetime.now(UTC) - timedelta(days=1)
    upsert_record(vault, PROJECT, kind="trap", slug="trap-030", body=None, frontmatter={"expires_at": expired})
    write_views(vault, PROJECT, now=expired - timedelta(days=1))  # the views of a day it was active
    traps = vault.project_dir(PROJECT) / "TRAPS.md"
    assert traps.stat().st_size > 4096 and "> Last compiled: " in traps.read_text(encoding="utf-8")[-80:]
    upsert_record(vault, PROJECT, kind="decision", slug="decision-written-now", body="Écrit · 今書いた 🕰")
    assert "[Café rounding 30](traps/trap-030.md) · trap · expired" in traps.read_text(encoding="utf-8")
    _assert_as_from_scratch(vault, tmp_path)


def _rows_read_by(vault: Vault, write: Callable[[], object]) -> list[str]:
    """The statements ``write`` sends to the index that assemble a section of a view from its rows."""
    statements: list[str] = []
    vault.index().conn.set_trace_callback(statements.append)
    try:
        write()
    finally:
        vault.index().conn.set_trace_callback(None)
    return [sql for sql in statements if re.search(r"\brow_(?:view|index|line) AS piece\b", sql)]


def test_a_view_that_reads_the_same_once_a_record_expired_is_compiled_by_one_write_not_by_every_write(
    copy_of: Callable[[], Vault], tmp_path: Path
) -> None:
    # Before: an archived trap that expired reads the same in TRAPS.md and INDEX.md, so the compile
    # it asked for left both files as they were, old stamp included: every later write, in each new
    # process (the CLI), compiled them again, as if the trap had just expired.
    vault = copy_of()
    expired = datetime.now(UTC) - timedelta(days=1)
    upsert_record(vault, PROJECT, kind="trap", slug="trap-031", body=None, frontmatter={"expires_at": expired})
    for name in ("TRAPS.md", "INDEX.md"):
        (vault.project_dir(PROJECT) / name).unlink()
    write_views(vault, PROJECT, now=expired - timedelta(days=1))  # views of a day it had not expired
    compiled = []
    for n in range(3):
        process = Vault.open(vault.root)  # a new process: it knows nothing current yet
        try:
            write = functools.partial(
                upsert_record, process, PROJECT, kind="scratch", slug=f"n-{n}", body=f"Brouillon {n} · черновик 🗒"
            )
            compiled.append(_rows_read_by(process, write))
        finally:
            process.close()
    assert compiled[0] and compiled[1:] == [[], []]
    _assert_as_from_scratch(vault, tmp_path)


_FORGED_STAMPS = {
    "in the future": b"> Last compiled: 2999-12-31T23:59:59.999Z\n",
    "not a date": b"> Last compiled: yesterday-ish \xce\xb1\xce\xb9 \xe6\x98\xa8\xe5\xa4\xa9 \xf0\x9f\x95\xb0\n",
    "a date that is no date": b"> Last compiled: 9999-99-99T99:99:99.999Z\n",
    "two stamps": b"> Last compiled: 2999-01-01T00:00:00.000Z\n> Last compiled: 2000-01-01T00:00:00.000Z\n",
    "beyond 4 KB": b"\xd0\xb6" * 3000 + b"\n> Last compiled: 2000-01-01T00:00:00.000Z\n",
    "not UTF-8": b"\xff\xfe\xc0 > Last compiled: \x00\n",
}


@pytest.mark.parametrize("forged", list(_FORGED_STAMPS), ids=list(_FORGED_STAMPS))
def test_a_view_with_a_forged_stamp_never_fails_a_write_and_is_restored_by_a_write_of_its_kinds(
    copy_of: Callable[[], Vault], tmp_path: Path, forged: str
) -> None:
    vault = copy_of()
    traps = vault.project_dir(PROJECT) / "TRAPS.md"
    expired = datetime.now(UTC) - timedelta(days=1)
    upsert_record(vault, PROJECT, kind="trap", slug="trap-030", body=None, frontmatter={"expires_at": expired})
    traps.write_bytes("# Traps — mine\n".encode() + _FORGED_STAMPS[forged] + "hand-written 手書き\n".encode())
    upsert_record(vault, PROJECT, kind="decision", slug="decision-after-forgery", body="Décidé · 决定 🗳")
    assert "Décidé · 决定 🗳" in (vault.kind_dir(PROJECT, "decision") / "decision-after-forgery.md").read_text(
        encoding="utf-8"
    )
    upsert_record(vault, PROJECT, kind="trap", slug="trap-after-forgery", body="Piège · ловушка · 陷阱")
    _assert_as_from_scratch(vault, tmp_path)


def test_a_view_whose_template_leaves_out_the_stamp_is_compiled_again_by_any_write_once_a_record_expired(
    copy_of: Callable[[], Vault], tmp_path: Path
) -> None:
    # The file says nowhere when it was compiled; the index knows when memosite found it current.
    vault = copy_of()
    _override_view_template(vault, "TRAPS.md.j2", change=lambda source: source.replace(_STAMP_LINE, ""))
    expired = datetime.now(UTC) - timedelta(days=1)
    upsert_record(vault, PROJECT, kind="trap", slug="trap-030", body=None, frontmatter={"expires_at": expired})
    write_views(vault, PROJECT, now=expired - timedelta(days=1))  # the views of a day it was active
    traps = vault.project_dir(PROJECT) / "TRAPS.md"
    assert "Last compiled" not in traps.read_text(encoding="utf-8")
    upsert_record(vault, PROJECT, kind="prompt", slug="prompt-written-now", body="Écrit · 今書いた 🕰")
    assert "[Café rounding 30](traps/trap-030.md) · trap · expired" in traps.read_text(encoding="utf-8")
    _assert_as_from_scratch(vault, tmp_path)


def test_a_view_checked_out_with_crlf_line_ends_is_compiled_again_once_a_record_expired(
    copy_of: Callable[[], Vault], tmp_path: Path
) -> None:
    # Before: the stamp was read only from a line ending in "\n"; a view a Windows checkout
    # (core.autocrlf) or editor wrote with "\r\n" kept calling an expired trap "active" after a
    # write of another kind.
    vault = copy_of()
    expired = datetime.now(UTC) - timedelta(days=1)
    upsert_record(vault, PROJECT, kind="trap", slug="trap-030", body=None, frontmatter={"expires_at": expired})
    write_views(vault, PROJECT, now=expired - timedelta(days=1))  # the views of a day it was active
    traps = vault.project_dir(PROJECT) / "TRAPS.md"
    traps.write_bytes(traps.read_bytes().replace(b"\n", b"\r\n"))
    upsert_record(vault, PROJECT, kind="decision", slug="decision-written-now", body="Écrit · 今書いた 🕰")
    assert "[Café rounding 30](traps/trap-030.md) · trap · expired" in traps.read_text(encoding="utf-8")
    _assert_as_from_scratch(vault, tmp_path)


def test_a_huge_view_without_a_stamp_is_not_held_in_memory_by_a_write_of_another_kind(tmp_path: Path) -> None:
    # Before: past its first 4 KB, a view without a stamp was read whole into memory (twice) by
    # every write of any kind: a 300 MB TRAPS.md made each write take 600 MB.
    import tracemalloc

    vault = Vault.open(tmp_path / "vault")
    try:
        upsert_record(vault, PROJECT, kind="trap", slug="piege", body="Piège · ловушка · 陷阱 🪤")
        traps = vault.project_dir(PROJECT) / "TRAPS.md"
        with traps.open("wb") as file:
            file.write("# Traps — à la main\n".encode())
            for _ in range(48):
                file.write(("ж" * 511 + "\n").encode() * 1024)  # 48 MB, no stamp
        tracemalloc.start()
        try:
            upsert_record(vault, PROJECT, kind="decision", slug="decision-apres", body="Décidé · 决定 🗳")
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert peak < 16 * 2**20
    finally:
        vault.close()


_STAMP_LINES = st.sampled_from(
    [
        b"> Last compiled: 2026-12-02T10:00:00.000Z",
        b"> Last compiled: 2025-01-31T23:59:59Z",
        b"> Last compiled: 2026-12-02T10:00:00.000Z \t",
        b"> Last compiled: not a date",
        b">> Last compiled: 2026-12-02T10:00:00.000Z",
    ]
)
_OTHER_LINES = st.text(st.characters(codec="utf-8", exclude_characters="\r\n"), max_size=14).map(str.encode)


@settings(max_examples=200, deadline=None)
@given(
    lines=st.lists(st.one_of(_STAMP_LINES, _OTHER_LINES), max_size=40),
    ending=st.sampled_from([b"\n", b"\r\n"]),
    last_ended=st.booleans(),
    head=st.integers(min_value=64, max_value=80),
    chunk=st.integers(min_value=1, max_value=200),
)
def test_the_stamp_read_a_piece_at_a_time_is_the_one_the_whole_file_holds(
    lines: list[bytes], ending: bytes, last_ended: bool, head: int, chunk: int
) -> None:
    # Every line is shorter than the head read first, as a stamp line is: wherever the pieces
    # cut the file, the stamp found is the first the whole file holds.
    import io

    from memosite import views

    data = ending.join(lines) + (ending if last_ended and lines else b"")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(views, "_STAMP_HEAD_BYTES", head)
        patch.setattr(views, "_STAMP_CHUNK_BYTES", chunk)
        found = views._stamp_in(io.BytesIO(data))
    whole = views._STAMPED_AT.search(data)
    assert (found and found.group(1)) == (whole and whole.group(1))
