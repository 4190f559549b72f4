"""Compiled views at any size (issue 24): bounded files that list the most severe first and say
where the rest is, the whole inventory one file a month, a write that re-emits only what it
changed, and a compile that leaves a view alone when only its stamp would change (issue 25: a
reindex of a clean, committed vault leaves ``git status`` clean)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memosite.kinds import VIEW_FILES, inventory_file, is_view_file
from memosite.refresh import reindex
from memosite.schema import Record, format_iso, serialize_record, validate_frontmatter
from memosite.store import forget_record, upsert_record
from memosite.vault import Vault
from memosite.views import LINE_ROWS, VIEW_ROWS, write_views

PROJECT = "big"
NOW = datetime(2026, 11, 30, 12, tzinfo=UTC)
TRAPS = 5000
SEVERITIES = ("critical", "high", "medium", "low")
# Titles in many scripts: the views escape and count them like any other.
TITLES = ("Café rounding", "Ошибка округления", "Σφάλμα στρογγυλοποίησης", "丸め誤差", "خطأ التقريب", "Emoji 🎉 race")
MONTHS = ("2026-08", "2026-09", "2026-10", "2026-11")


def _write(vault: Vault, fm: dict[str, object], body: str) -> Path:
    """A record file as a person writes it (no index, no views)."""
    path = vault.record_path(PROJECT, str(fm["kind"]), str(fm["id"]))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(serialize_record(Record(validate_frontmatter(fm), body)), encoding="utf-8")
    return path


def _fill(vault: Vault, traps: int) -> None:
    for n in range(traps):
        updated = datetime(2026, 8 + n % 4, 1 + n % 28, 9, tzinfo=UTC)
        fm: dict[str, object] = {
            "id": f"trap-{n:05d}",
            "kind": "trap",
            "project": PROJECT,
            "title": f"{TITLES[n % len(TITLES)]} {n}",
            "severity": SEVERITIES[n % len(SEVERITIES)],
            "created": format_iso(updated - timedelta(days=3)),
            "updated": format_iso(updated),
        }
        if n % 10 == 0:
            fm["status"] = "archived"  # a tenth inactive
        _write(vault, fm, f"Trap number {n}: the lock is taken twice.\n")
    for n in range(12):
        _write(
            vault,
            {
                "id": f"decision-{n}",
                "kind": "decision",
                "project": PROJECT,
                "title": f"Decision {n}",
                "created": "2026-10-01T00:00:00.000Z",
                "updated": "2026-10-02T00:00:00.000Z",
            },
            "We chose the simple way.\n",
        )


@pytest.fixture(scope="module")
def big_vault(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("views-scale") / "vault"
    vault = Vault.open(root)
    _fill(vault, TRAPS)
    reindex(vault, [PROJECT])
    vault.close()
    return root


@pytest.fixture
def copy_of_big(big_vault: Path, tmp_path: Path) -> Iterator[Vault]:
    root = tmp_path / "big-copy"
    shutil.copytree(big_vault, root)
    vault = Vault.open(root)
    yield vault
    vault.close()


def _unstamped(text: str) -> str:
    return re.sub(r"^> Last compiled: .*$", "", text, count=1, flags=re.MULTILINE)


def _views(root: Path) -> dict[str, tuple[int, bytes]]:
    """Every view file of the project: its modification time and bytes."""
    directory = root / "projects" / PROJECT
    return {p.name: (p.stat().st_mtime_ns, p.read_bytes()) for p in sorted(directory.glob("*.md"))}


def test_traps_view_stays_bounded_and_most_severe_first_with_5000_traps(big_vault: Path) -> None:
    text = (big_vault / "projects" / PROJECT / "TRAPS.md").read_text(encoding="utf-8")
    assert len(text.encode("utf-8")) < 150_000  # 5,000 traps, one screenful of a few hundred
    assert text.startswith(f"# Traps — {PROJECT}\n") and "> Last compiled: " in text
    active, inactive = text.split("## Inactive traps")
    headings = re.findall(r"^### \[(\w+)\] ", active, re.MULTILINE)
    assert len(headings) == VIEW_ROWS and set(headings) == {"CRITICAL"}
    brief = active.split("**More active traps, in brief:**", 1)[1]
    assert len(re.findall(r"^- \[", brief, re.MULTILINE)) == LINE_ROWS
    live = TRAPS - TRAPS // 10
    assert f"{live} active traps, {TRAPS // 10} inactive." in text
    rest = live - VIEW_ROWS - LINE_ROWS
    note = re.search(r"\*([\d,]+) more active traps are not shown here \(([^)]*)\)", active)
    assert note is not None and int(note.group(1).replace(",", "")) == rest
    counted = {name: int(n.replace(",", "")) for n, name in re.findall(r"(\d[\d,]*) (\w+)", note.group(2))}
    assert sum(counted.values()) == rest and "low" in counted
    assert "[INDEX.md](INDEX.md#traps)" in active and "memosite serve" in active
    assert len(re.findall(r"^- \[", inactive, re.MULTILINE)) == LINE_ROWS
    assert "are not shown here" in inactive


def test_index_lists_each_kind_in_part_and_every_record_in_its_monthly_file(big_vault: Path) -> None:
    directory = big_vault / "projects" / PROJECT
    index = (directory / "INDEX.md").read_text(encoding="utf-8")
    assert len(index.encode("utf-8")) < 60_000
    assert f"| trap | {TRAPS} | {TRAPS - TRAPS // 10} |" in index
    traps_table = index.split("## Traps", 1)[1].split("## ", 1)[0]
    assert len(re.findall(r"^\| \[trap-", traps_table, re.MULTILINE)) == LINE_ROWS
    for month in MONTHS:
        assert f"[{month}]({inventory_file('trap', month)})" in traps_table
    assert "INDEX.decisions." not in index  # twelve decisions: INDEX.md holds them all
    listed: set[str] = set()
    for month in MONTHS:
        monthly = (directory / inventory_file("trap", month)).read_text(encoding="utf-8")
        assert monthly.startswith(f"# Traps — {PROJECT}, {month}\n") and "> Last compiled: " in monthly
        ids = re.findall(r"^\| \[(trap-\d+)\]\(traps/trap-\d+\.md\) \|", monthly, re.MULTILINE)
        dates = re.findall(r"\| (\d{4}-\d{2})-\d{2} \|$", monthly, re.MULTILINE)
        assert set(dates) == {month} and dates == sorted(dates, reverse=True)
        listed.update(ids)
    assert listed == {f"trap-{n:05d}" for n in range(TRAPS)}
    assert sorted(p.name for p in directory.glob("INDEX.*.md")) == sorted(inventory_file("trap", m) for m in MONTHS)
    assert all(is_view_file(p.name) for p in directory.glob("*.md"))


def test_a_one_record_upsert_rewrites_only_the_files_whose_records_changed(copy_of_big: Vault) -> None:
    before = _views(copy_of_big.root)
    upsert_record(
        copy_of_big,
        PROJECT,
        kind="trap",
        body="A new race in the lock.",
        slug="new-race",
        frontmatter={"title": "New race", "severity": "low"},
        now=NOW,
        allow_duplicate=True,
    )
    after = _views(copy_of_big.root)
    changed = {name for name in after if after[name] != before.get(name)}
    assert changed == {"TRAPS.md", "INDEX.md", inventory_file("trap", "2026-11")}
    assert "[new-race](traps/new-race.md)" in (
        copy_of_big.project_dir(PROJECT) / inventory_file("trap", "2026-11")
    ).read_text(encoding="utf-8")


def test_a_record_that_moves_month_rewrites_the_month_it_left_and_the_one_it_joined(copy_of_big: Vault) -> None:
    before = _views(copy_of_big.root)
    upsert_record(copy_of_big, PROJECT, kind="trap", body="Edited.", slug="trap-00001", now=NOW)  # from 2026-09
    after = _views(copy_of_big.root)
    months = {name for name in after if after[name] != before[name] and name.startswith("INDEX.traps.")}
    assert months == {inventory_file("trap", "2026-09"), inventory_file("trap", "2026-11")}


def test_an_inventory_file_edited_or_removed_by_hand_is_compiled_again(copy_of_big: Vault) -> None:
    directory = copy_of_big.project_dir(PROJECT)
    edited, removed = directory / inventory_file("trap", "2026-08"), directory / inventory_file("trap", "2026-09")
    original = edited.read_bytes()
    edited.write_text("mine now\n", encoding="utf-8")
    removed.unlink()
    written = write_views(copy_of_big, PROJECT, ["INDEX.md"])
    assert set(written) >= {edited, removed}
    assert _unstamped(edited.read_text(encoding="utf-8")) == _unstamped(original.decode("utf-8")) and removed.is_file()


def test_monthly_files_go_when_the_kind_fits_in_index_again(vault: Vault) -> None:
    for n in range(LINE_ROWS + 2):
        fm = {"id": f"t{n}", "kind": "trap", "project": "demo", "title": f"Trap {n}", "updated": "2026-10-05T00:00:00Z"}
        path = vault.record_path("demo", "trap", f"t{n}")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(
            serialize_record(Record(validate_frontmatter({**fm, "created": fm["updated"]}), "x\n")), encoding="utf-8"
        )
    reindex(vault, ["demo"])
    monthly = vault.project_dir("demo") / inventory_file("trap", "2026-10")
    assert monthly.is_file()
    forget_record(vault, "demo", record_id="t0", purge=True)
    assert monthly.is_file()  # 101 traps: still more than INDEX.md lists
    forget_record(vault, "demo", record_id="t1", purge=True)
    assert not monthly.exists()
    assert "INDEX.traps." not in (vault.project_dir("demo") / "INDEX.md").read_text(encoding="utf-8")


def test_a_view_unchanged_but_for_its_stamp_is_left_untouched(vault: Vault) -> None:
    upsert_record(vault, "demo", kind="trap", body="x", slug="x", frontmatter={"title": "Stamped"})
    directory = vault.project_dir("demo")
    before = {name: (directory / name).stat().st_mtime_ns for name in VIEW_FILES}
    stamps = (directory / "TRAPS.md").read_text(encoding="utf-8")
    assert write_views(vault, "demo", now=datetime.now(UTC) + timedelta(hours=1)) == []
    assert {name: (directory / name).stat().st_mtime_ns for name in VIEW_FILES} == before
    assert (directory / "TRAPS.md").read_text(encoding="utf-8") == stamps  # the old stamp stays too


def test_the_first_write_to_a_project_compiles_all_five_views(vault: Vault) -> None:
    upsert_record(vault, "demo", kind="trap", body="x", slug="x")
    assert sorted(p.name for p in vault.project_dir("demo").glob("*.md")) == sorted(VIEW_FILES)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.lists(
        st.text(st.characters(blacklist_categories=("Cc", "Cs")), min_size=1, max_size=40).filter(str.strip),
        min_size=1,
        max_size=4,
    )
)
def test_compiling_twice_writes_nothing_the_second_time(vault: Vault, titles: list[str]) -> None:
    project = f"p{abs(hash(tuple(titles))) % 10**9}"
    for n, title in enumerate(titles):
        upsert_record(vault, project, kind="trap", body=f"{title}\n", slug=f"t{n}", frontmatter={"title": title})
    write_views(vault, project)
    assert write_views(vault, project, now=datetime.now(UTC) + timedelta(minutes=5)) == []


def _git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(root), *args], capture_output=True, text=True, encoding="utf-8", check=True
    ).stdout


def test_reindex_of_a_clean_committed_vault_leaves_git_status_clean(vault_dir: Path, run_cli) -> None:  # type: ignore[no-untyped-def]
    vault_dir.mkdir(parents=True, exist_ok=True)
    (vault_dir / "config.json").write_text(
        json.dumps({"vaultGit": {"enabled": True, "atomic": True}}), encoding="utf-8"
    )
    vault = Vault.open(vault_dir)
    for n in range(LINE_ROWS + 20):  # more traps than INDEX.md lists: monthly files too
        updated = format_iso(NOW - timedelta(days=n))
        fm = {
            "id": f"t{n}",
            "kind": "trap",
            "project": "demo",
            "title": f"Trap {n} · ошибка",
            "created": updated,
            "updated": updated,
            "severity": SEVERITIES[n % 4],
        }
        path = vault.record_path("demo", "trap", f"t{n}")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(serialize_record(Record(validate_frontmatter(fm), "Body.\n")), encoding="utf-8")
    upsert_record(vault, "demo", kind="decision", body="Use SQLite.", slug="sqlite", frontmatter={"title": "SQLite"})
    upsert_record(
        vault, "demo", kind="prompt", body="Do it.", frontmatter={"title": "Prompt", "sessionId": "s1", "turn": 1}
    )
    vault.close()
    assert run_cli("compile").exit_code == 0
    assert _git(vault_dir, "status", "--porcelain") == ""
    assert any(name.startswith("projects/demo/INDEX.traps.") for name in _git(vault_dir, "ls-files").split())
    assert run_cli("reindex").exit_code == 0
    assert _git(vault_dir, "status", "--porcelain") == ""
    (vault_dir / ".memosite" / "index.sqlite").unlink()  # a new index, built from the files
    assert run_cli("reindex").exit_code == 0
    assert _git(vault_dir, "status", "--porcelain") == ""


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.lists(
        st.tuples(
            st.sampled_from(("active", "archived", "superseded", "paused")),
            st.sampled_from((None, "2020-01-01", "2999-01-01")),
            st.sampled_from((None, *SEVERITIES)),
            st.sampled_from(("2026-08-10", "2026-11-20")),
        ),
        min_size=1,
        max_size=12,
    )
)
def test_counts_from_the_chunks_agree_with_counting_the_rows(vault: Vault, traps: list[tuple[str, ...]]) -> None:
    from memosite.index import fragments
    from memosite.refresh import refresh_project
    from memosite.views import _Compiler

    project = f"c{abs(hash(tuple(traps))) % 10**9}"
    for n, (status, expires, severity, updated) in enumerate(traps):
        fm = {
            "id": f"t{n}",
            "kind": "trap",
            "project": project,
            "title": f"Trap {n}",
            "status": status,
            "created": updated,
            "updated": updated,
            "severity": severity,
            "expires_at": expires,
        }
        path = vault.record_path(project, "trap", f"t{n}")
        path.parent.mkdir(parents=True, exist_ok=True)
        fields = {key: value for key, value in fm.items() if value is not None}
        path.write_text(serialize_record(Record(validate_frontmatter(fields), "x\n")), encoding="utf-8")
    refresh_project(vault, project)
    index, now = vault.index(), format_iso(NOW)
    compiler = _Compiler(index, project, now)
    for spec in (fragments.LIVE_COUNT, fragments.TRAPS_ACTIVE, fragments.TRAPS_INACTIVE):
        assert compiler.count(spec, "trap") == fragments.section_count(index, spec, project, "trap", now)
        assert compiler.by_severity(spec, "trap") == fragments.severity_counts(index, spec, project, "trap", now)
