"""The layers' rules, checked on the source: SQL only in memosite/index/, each rule spelled once."""

from __future__ import annotations

import ast
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from memosite.expiration import active_at_sql, expired_sql, is_active_at, is_expired_at, not_expired_sql
from memosite.kinds import (
    ARCHIVE_ON_EXPIRE_KINDS,
    DURABLE_KINDS,
    KIND_FACTS,
    KINDS,
    PRIVATE_KINDS,
    RECORD_DIRS,
    VIEW_FILES,
    views_for_kinds,
)
from memosite.schema import flagged_stale_sql, format_iso, is_flagged_stale

PACKAGE = Path(__file__).resolve().parents[1] / "memosite"
SQL_CALLS = {"execute", "executemany", "executescript"}


def _sql_uses(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and (node.attr in SQL_CALLS or node.attr == "conn"):
            found.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}: .{node.attr}")
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "connect"
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "sqlite3"
        ):
            found.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}: sqlite3.connect")
    return found


def test_only_the_index_package_executes_sql_or_touches_the_connection() -> None:
    offenders = [
        use
        for path in sorted(PACKAGE.rglob("*.py"))
        if PACKAGE / "index" not in path.parents
        for use in _sql_uses(path)
    ]
    assert offenders == []


def test_the_boundary_check_sees_sql_where_it_is() -> None:
    # The check would pass vacuously if it could not see SQL at all.
    assert any(_sql_uses(path) for path in (PACKAGE / "index").glob("*.py"))


# --- each rule once: SQL and Python agree --------------------------------------------------

instants = st.datetimes(min_value=datetime(1970, 1, 1), max_value=datetime(2200, 1, 1), timezones=st.just(UTC)).map(
    lambda moment: moment.replace(microsecond=moment.microsecond // 1000 * 1000)
)


def _sql(expression: str, *params: object) -> bool:
    conn = sqlite3.connect(":memory:")
    try:
        return bool(conn.execute(f"SELECT {expression}", params).fetchone()[0])
    finally:
        conn.close()


@settings(max_examples=300, deadline=None)
@given(expires=st.one_of(st.none(), instants), now=instants)
def test_expiry_sql_agrees_with_is_expired_at(expires: datetime | None, now: datetime) -> None:
    column = "NULL" if expires is None else f"'{format_iso(expires)}'"
    python = is_expired_at(expires, now)
    assert _sql(expired_sql(column), format_iso(now)) == python
    assert _sql(not_expired_sql(column), format_iso(now)) == (not python)


@settings(max_examples=100, deadline=None)
@given(moment=instants)
def test_expiry_boundary_instant_is_expired_in_both(moment: datetime) -> None:
    assert is_expired_at(moment, moment)
    assert _sql(expired_sql(f"'{format_iso(moment)}'"), format_iso(moment))


@settings(max_examples=300, deadline=None)
@given(created=st.one_of(st.none(), instants), expires=st.one_of(st.none(), instants), as_of=instants)
def test_active_at_sql_agrees_with_is_active_at(
    created: datetime | None, expires: datetime | None, as_of: datetime
) -> None:
    def literal(moment: datetime | None) -> str:
        return "NULL" if moment is None else f"'{format_iso(moment)}'"

    stamp = format_iso(as_of)
    assert _sql(active_at_sql(literal(created), literal(expires)), stamp, stamp) == is_active_at(
        created, expires, as_of
    )


@settings(max_examples=200, deadline=None)
@given(helpful=st.integers(0, 10**6), stale=st.integers(0, 10**6))
def test_flagged_stale_sql_agrees_with_python(helpful: int, stale: int) -> None:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE r (helpful INTEGER, stale INTEGER)")
    conn.execute("INSERT INTO r VALUES (?, ?)", (helpful, stale))
    assert bool(conn.execute(f"SELECT {flagged_stale_sql('r')} FROM r").fetchone()[0]) == is_flagged_stale(
        helpful, stale
    )
    conn.close()


def test_iso_instants_sort_as_the_instants_do() -> None:
    # The SQL rules compare ISO strings: that only works because format_iso is fixed width.
    moments = [datetime(1999, 12, 31, 23, 59, 59, 999000, tzinfo=UTC) + timedelta(milliseconds=n) for n in range(3)]
    assert sorted(format_iso(m) for m in moments) == [format_iso(m) for m in moments]


# --- one table of per-kind facts ----------------------------------------------------------


def test_kind_table_holds_the_seed_facts() -> None:
    assert KINDS == ("trap", "decision", "spec", "plan", "state", "log", "scratch", "review", "prompt", "session")
    assert KIND_FACTS["state"].directory == "plans" == KIND_FACTS["plan"].directory
    assert {k: f.directory for k, f in KIND_FACTS.items() if k != "state"} == {
        "trap": "traps",
        "decision": "decisions",
        "spec": "specs",
        "plan": "plans",
        "log": "logs",
        "scratch": "scratch",
        "review": "reviews",
        "prompt": "prompts",
        "session": "sessions",
    }
    assert set(DURABLE_KINDS) == set(KINDS) - {"state", "scratch"}
    assert set(PRIVATE_KINDS) == {"scratch", "state", "review"}
    assert {"trap", "decision", "plan"} == ARCHIVE_ON_EXPIRE_KINDS
    assert {k: f.default_ttl for k, f in KIND_FACTS.items() if f.default_ttl} == {
        "scratch": "scratchDays",
        "review": "reviewDays",
    }
    assert len(RECORD_DIRS) == 9


def test_views_of_a_kind_come_from_the_table() -> None:
    assert views_for_kinds(["trap"]) == ("TRAPS.md", "INDEX.md")
    assert views_for_kinds(["state", "scratch"]) == ()
    assert views_for_kinds(KINDS) == VIEW_FILES


_READ_ONLY_SEARCH = """
import sys
from memosite.cli import main
sys.argv = ["memosite", "--vault", sys.argv[1], "--project", "demo", "search", "payment", "--json"]
try:
    main()
except SystemExit as done:
    assert not done.code, done.code
heavy = sorted(n for n in ("jinja2", "anyascii", "memosite.mutation", "memosite.gitsync") if n in sys.modules)
print("HEAVY", heavy, file=sys.stderr)
"""


def test_a_read_only_search_loads_no_templates_no_write_machinery_and_runs_no_git(tmp_path: Path) -> None:
    # A CLI search is a fresh process each time: what it imports and runs is its latency.
    import subprocess
    import sys

    from memosite.store import upsert_record
    from memosite.vault import Vault

    vault = Vault.open(tmp_path / "vault")
    upsert_record(vault, "demo", kind="trap", body="Retries of a payment double the charge", slug="retries")
    vault.close()
    done = subprocess.run(
        [sys.executable, "-c", _READ_ONLY_SEARCH, str(tmp_path / "vault")],
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert '"retries"' in done.stdout
    assert "HEAVY []" in done.stderr
