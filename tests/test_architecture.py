"""The layers' rules, checked on the source: SQL only in memosite/index/, each rule spelled once."""

from __future__ import annotations

import ast
import functools
import json
import re
import sqlite3
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from fresh_python import run_fresh
from hypothesis import given, settings
from hypothesis import strategies as st

from memosite.codelayers import LAYER_ALIASES, normalize_layer, shown_layer
from memosite.codelayers import LAYERS as CODE_LAYERS
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
from memosite.reviewstate import PENDING, REVIEW_STATES, is_pending, pending_sql
from memosite.schema import flagged_stale_sql, format_iso, is_flagged_stale
from memosite.statuses import (
    ACCEPTED_STATUSES,
    INACTIVE_STATUSES,
    LIVE_STATUSES,
    STATUSES,
    TERMINAL_STATUSES,
    accepted_sql,
    inactive_sql,
    is_accepted,
    is_inactive,
    is_known_status,
    is_live,
    is_terminal,
    known_status_sql,
    live_sql,
    terminal_sql,
)

PACKAGE = Path(__file__).resolve().parents[1] / "memosite"
SQL_CALLS = {"execute", "executemany", "executescript"}


@functools.cache
def parsed(path: Path) -> ast.Module:
    """A module's syntax tree, parsed once for every check of this file."""
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def _sql_uses(path: Path) -> list[str]:
    tree = parsed(path)
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


@pytest.mark.slow
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
heavy = ("jinja2", "anyascii", "subprocess", "memosite.mutation", "memosite.vaultgit", "memosite.commitpolicy",
         "memosite.gitcommand", "memosite.salience", "memosite.bootstrap")
heavy = sorted(n for n in heavy if n in sys.modules)
print("HEAVY", heavy, file=sys.stderr)
"""


def test_a_read_only_search_loads_no_templates_no_write_machinery_and_runs_no_git(tmp_path: Path) -> None:
    # A CLI search is a fresh process each time: what it imports and runs is its latency.

    from memosite.store import upsert_record
    from memosite.vault import Vault

    vault = Vault.open(tmp_path / "vault")
    upsert_record(vault, "demo", kind="trap", body="Retries of a payment double the charge", slug="retries")
    vault.close()
    done = run_fresh(_READ_ONLY_SEARCH, str(tmp_path / "vault"))
    assert '"retries"' in done.stdout
    assert "HEAVY []" in done.stderr


# --- layers: the import graph runs one way ---------------------------------------------------
# Lowest first (docs/ARCHITECTURE.md, "Layers"). A module may import from its own layer and from
# any layer below it, never from one above, and no chain of imports comes back to where it began.
# A package's entry covers its modules unless one of them has its own (the longest name wins).
LAYER_MEMBERS: dict[str, list[str]] = {
    # Rules and values: no vault, no disk of memosite's own.
    "vocabulary": [
        "archive",
        "bpe",
        "codelayers",
        "config",
        "embedding",
        "errors",
        "expiration",
        "gitfiles",
        "inputs",
        "interrupts",
        "kinds",
        "mdtext",
        "paths",
        "policy",
        "process_end",
        "provenance",
        "recurrence",
        "resources",
        "reviewstate",
        "sanitize",
        "schema",
        "secrets",
        "settings",
        "statuses",
        "suggest",
        "template_files",
        "template_limits",
        "text",
        "userdirs",
        "vaultconfig",
        "version",
        "warning",
    ],
    # The vault on disk, the index, git.
    "storage": [
        "commitpolicy",
        "gitcommand",
        "gitidentity",
        "gitlock",
        "gitsetup",
        "vaultgit",
        "index",
        "lockfile",
        "pushhook",
        "recordfile",
        "sharedtree",  # what a shared tree may hold: the rule every vault commit stages by
        "vault",
        "workspace",
    ],
    # What is rebuilt from the files: index rows, views, templates.
    "derived": ["refresh", "template_env", "views"],
    # Reads: they never write a record.
    "reads": ["bootstrap", "brief_focus", "freshness", "hybrid", "lookup", "proposals", "query", "recall", "search"],
    # The unit of work and everything that changes the vault through it.
    "changes": [
        "acceptance",
        "agentsession",
        "configuration",
        "curator",
        "edit",
        "hits",
        "importers",
        "mutation",
        "recompile",
        "review",
        "rollup",
        "salience",
        "store",
        "verify",
        "writeplan",
    ],
    "features": [
        "agentfiles",
        "demo",
        "integrations",
        "memorytool",
        "plugin",
        "sessions",
        "site",
        "status",
        "stormbuffer",
        "sync",
        "watch",
    ],
    # Composition roots: configuration is read here and passed down.
    "front ends": ["__main__", "cli", "console", "hooks", "mcp_server", "memory", "memosite"],
}
LAYERS = tuple(LAYER_MEMBERS)
LAYER_OF = {module: layer for layer, modules in LAYER_MEMBERS.items() for module in modules}


@dataclass(frozen=True)
class Import:
    """One import of a memosite module by another."""

    importer: str
    imported: str
    line: int

    def __str__(self) -> str:
        return f"{self.importer.replace('.', '/')}.py:{self.line} imports {self.imported}"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imports_in(source: str | ast.Module, name: str, modules: set[str], *, package: bool = False) -> list[Import]:
    """Every import of a module in ``modules`` that ``source`` (module ``name``) runs: at module
    level and inside functions and classes alike, but not under ``if TYPE_CHECKING:`` (the type
    checker's alone); ``importlib.import_module("memosite.…")`` with a literal name counts too."""

    def nearest(dotted: str) -> str | None:
        while dotted and dotted not in modules:
            dotted = dotted.rpartition(".")[0]
        return dotted or None

    found: list[Import] = []

    def add(target: str | None, line: int) -> None:
        if target is not None and target != name:
            found.append(Import(name, target, line))

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child.test):
                for other in child.orelse:
                    visit_node(other)
            else:
                visit_node(child)

    def visit_node(node: ast.AST) -> None:
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(nearest(alias.name), node.lineno)
        elif isinstance(node, ast.ImportFrom):
            source_module = node.module or ""
            if node.level:
                base = name.split(".")[: len(name.split(".")) - node.level + (1 if package else 0)]
                source_module = ".".join([*base, *([node.module] if node.module else [])])
            for alias in node.names:
                submodule = f"{source_module}.{alias.name}"
                add(submodule if submodule in modules else nearest(source_module), node.lineno)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            add(nearest(node.args[0].value), node.lineno)
        visit(node)

    visit(ast.parse(source) if isinstance(source, str) else source)
    return found


def package_modules() -> dict[str, Path]:
    return {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def package_imports() -> list[Import]:
    paths = package_modules()
    return [
        found
        for name, path in paths.items()
        for found in imports_in(parsed(path), name, set(paths), package=path.name == "__init__.py")
    ]


def layer_of(module: str) -> str | None:
    dotted = "memosite" if module == "memosite" else module.removeprefix("memosite.")
    while dotted:
        if dotted in LAYER_OF:
            return LAYER_OF[dotted]
        dotted = dotted.rpartition(".")[0]
    return None


def import_cycles(edges: list[Import]) -> list[list[str]]:
    """The groups of modules that import each other in a circle (Tarjan's strongly connected
    components of more than one module), each sorted."""
    graph: dict[str, set[str]] = {}
    for edge in edges:
        graph.setdefault(edge.importer, set()).add(edge.imported)
        graph.setdefault(edge.imported, set())
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def connect(node: str) -> None:
        order[node] = low[node] = len(order)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in order:
                connect(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], order[nxt])
        if low[node] == order[node]:
            group = []
            while (member := stack.pop()) != node:
                on_stack.discard(member)
                group.append(member)
            on_stack.discard(node)
            if group:
                groups.append(sorted([node, *group]))

    for node in sorted(graph):
        if node not in order:
            connect(node)
    return groups


def shortest_circle(group: list[str], edges: list[Import]) -> list[Import]:
    """One shortest circle of imports through ``group`` (a group from :func:`import_cycles`): the
    edge to cut is one of these, while the group can hold dozens of modules."""
    inside = [edge for edge in edges if edge.importer in group and edge.imported in group]
    best: list[Import] = []
    for start in group:
        reached: dict[str, list[Import]] = {start: []}
        frontier = [start]
        while frontier and not (best and len(reached[frontier[0]]) >= len(best)):
            following = []
            for node in frontier:
                for edge in inside:
                    if edge.importer != node:
                        continue
                    if edge.imported == start and (not best or len(reached[node]) + 1 < len(best)):
                        best = [*reached[node], edge]
                    elif edge.imported not in reached:
                        reached[edge.imported] = [*reached[node], edge]
                        following.append(edge.imported)
            frontier = following
    return best


WHEN_A_LOWER_MODULE_NEEDS_AN_UPPER_ONE = (
    "\nA lower module that needs something from above takes it as a hook the upper one registers, a"
    " callable passed down, or from a leaf module both import (docs/ARCHITECTURE.md, Layers);"
    " a function-level import counts like any other."
)


def test_every_module_has_a_layer() -> None:
    missing = sorted(name for name in package_modules() if layer_of(name) is None)
    assert missing == [], (
        f"{', '.join(missing)}: in no layer. Add each to LAYER_MEMBERS in tests/test_architecture.py,"
        " in the lowest layer whose modules it imports from (the layers: docs/ARCHITECTURE.md)"
    )


def test_every_layer_entry_names_a_module() -> None:
    names = set(package_modules())
    assert sorted(entry for entry in LAYER_OF if entry != "memosite" and f"memosite.{entry}" not in names) == []


def test_no_import_runs_up_a_layer() -> None:
    upward = [
        f"{edge}: {layer_of(edge.imported)} is above {layer_of(edge.importer)}"
        for edge in package_imports()
        if (importer := layer_of(edge.importer)) is not None
        and (imported := layer_of(edge.imported)) is not None
        and LAYERS.index(imported) > LAYERS.index(importer)
    ]
    assert upward == [], "imports that run up a layer:\n" + "\n".join(upward) + WHEN_A_LOWER_MODULE_NEEDS_AN_UPPER_ONE


def test_no_import_cycle_even_through_deferred_imports() -> None:
    edges = package_imports()
    described = [
        f"{len(group)} modules import each other in a circle; the shortest: "
        + " → ".join(str(edge) for edge in shortest_circle(group, edges))
        for group in import_cycles(edges)
    ]
    assert described == [], "\n".join(described) + WHEN_A_LOWER_MODULE_NEEDS_AN_UPPER_ONE


def test_the_import_walk_counts_deferred_imports_and_skips_type_checking_ones() -> None:
    source = """
from typing import TYPE_CHECKING
from memosite.kinds import KINDS
if TYPE_CHECKING:
    from memosite.mutation import Mutation
def write():
    from memosite.store import upsert_record
    import memosite.vaultgit
class Later:
    def build(self):
        from memosite.site import pages
"""
    modules = {"memosite.kinds", "memosite.mutation", "memosite.store", "memosite.vaultgit", "memosite.site"}
    modules.add("memosite.site.pages")
    found = [(edge.imported, edge.line) for edge in imports_in(source, "memosite.views", modules)]
    assert found == [
        ("memosite.kinds", 3),
        ("memosite.store", 7),
        ("memosite.vaultgit", 8),
        ("memosite.site.pages", 11),
    ]
    assert import_cycles([Import("a", "b", 1), Import("b", "c", 1), Import("c", "a", 1), Import("c", "d", 1)]) == [
        ["a", "b", "c"]
    ]


def test_a_cycle_is_reported_by_its_shortest_circle() -> None:
    edges = [Import(*edge) for edge in [("a", "b", 1), ("b", "c", 2), ("c", "d", 3), ("d", "a", 4), ("c", "a", 5)]]
    assert import_cycles(edges) == [["a", "b", "c", "d"]]
    assert [(edge.importer, edge.imported) for edge in shortest_circle(["a", "b", "c", "d"], edges)] == [
        ("a", "b"),
        ("b", "c"),
        ("c", "a"),
    ]


def _private_uses(path: Path, name: str, modules: set[str]) -> list[str]:
    """Private names (``_x``) a module takes from another memosite module: imported, or read off
    an imported module (``vaultgit._schedule``)."""
    tree = parsed(path)
    imported_modules: set[str] = set()
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("memosite"):
            for alias in node.names:
                if alias.name.startswith("_") and not alias.name.startswith("__") and node.module != name:
                    found.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}: {node.module}.{alias.name}")
                if f"{node.module}.{alias.name}" in modules:
                    imported_modules.add(alias.asname or alias.name)
        elif isinstance(node, ast.Import):
            imported_modules.update(alias.asname or alias.name for alias in node.names if alias.name in modules)
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in imported_modules
            and node.attr.startswith("_")
            and not node.attr.startswith("__")
        ):
            found.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}: {node.value.id}.{node.attr}")
    return found


def test_no_module_takes_a_private_name_from_another() -> None:
    paths = package_modules()
    assert [use for name, path in paths.items() for use in _private_uses(path, name, set(paths))] == []


def test_a_vault_carries_only_the_state_it_declares(tmp_path: Path) -> None:
    from memosite.mutation import mutation
    from memosite.vault import Vault

    vault = Vault.open(tmp_path / "vault")
    declared = {"root", "config", "product_root", "actor_source", "current_unit", "template_cache", "_index"}
    assert set(Vault.__slots__) == declared
    with mutation(vault, "nothing") as unit:
        assert vault.current_unit is unit
    assert vault.current_unit is None
    with pytest.raises(AttributeError):
        vault._mutation = None  # type: ignore[attr-defined]
    vault.close()


# --- one table per vocabulary: statuses, review state, layers --------------------------------

status_values = st.one_of(st.sampled_from(STATUSES), st.text(alphabet=st.characters(exclude_categories=("Cs",))))
STATUS_RULES = (
    (is_live, live_sql),
    (is_inactive, inactive_sql),
    (is_accepted, accepted_sql),
    (is_terminal, terminal_sql),
    (is_known_status, known_status_sql),
)


def test_status_table_holds_the_seed_facts() -> None:
    assert STATUSES == ("active", "paused", "shipped", "superseded", "archived", "completed")
    assert LIVE_STATUSES == ("active", "paused", "shipped", "completed")
    assert INACTIVE_STATUSES == ("superseded", "archived")
    assert ACCEPTED_STATUSES == ("active", "shipped", "completed")
    assert TERMINAL_STATUSES == ("superseded",)
    assert set(LIVE_STATUSES) | set(INACTIVE_STATUSES) == set(STATUSES)


@settings(max_examples=300, deadline=None)
@given(status=status_values)
def test_status_rules_in_sql_agree_with_python(status: str) -> None:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE r (status TEXT NOT NULL)")
    conn.execute("INSERT INTO r VALUES (?)", (status,))
    for python, sql in STATUS_RULES:
        assert bool(conn.execute(f"SELECT {sql('status')} FROM r").fetchone()[0]) == python(status), sql("status")
    conn.close()


review_values = st.one_of(
    st.none(),
    st.sampled_from(REVIEW_STATES),
    st.text(alphabet=st.characters(exclude_categories=("Cs",))),
    st.integers(),
    st.booleans(),
    st.lists(st.just(PENDING), max_size=2),
)


@settings(max_examples=300, deadline=None)
@given(review=review_values, present=st.booleans())
def test_pending_sql_agrees_with_is_pending(review: object, present: bool) -> None:
    frontmatter = {"title": "Ревью · レビュー", **({"review": review} if present else {})}
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE r (frontmatter TEXT)")
    conn.execute("INSERT INTO r VALUES (?)", (json.dumps(frontmatter, ensure_ascii=False),))
    assert bool(conn.execute(f"SELECT {pending_sql('frontmatter')} FROM r").fetchone()[0]) == is_pending(frontmatter)
    conn.close()


def _vocabulary_copies(path: Path) -> list[str]:
    """Status lists and the pending-review test written out, instead of read from their table."""
    found = []
    for node in ast.walk(parsed(path)):
        where = f"{path.name}:{getattr(node, 'lineno', 0)}"
        if isinstance(node, ast.Tuple | ast.List | ast.Set) and len(node.elts) >= 2:
            values = [e.value for e in node.elts if isinstance(e, ast.Constant)]
            if len(values) == len(node.elts) and all(v in STATUSES for v in values):
                found.append(f"{where}: statuses {values}")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            if re.search(r"'(active|paused|shipped|superseded|archived|completed)'\s*,\s*'", node.value):
                found.append(f"{where}: statuses in SQL {node.value!r}")
            if "'$.review') = 'pending'" in node.value:
                found.append(f"{where}: the pending rule in SQL")
        elif (
            isinstance(node, ast.Compare)
            and isinstance(node.left, ast.Call)
            and isinstance(node.left.func, ast.Attribute)
            and node.left.func.attr == "get"
            and [a.value for a in node.left.args if isinstance(a, ast.Constant)] == ["review"]
            and any(isinstance(c, ast.Constant) and c.value == PENDING for c in node.comparators)
        ):
            found.append(f"{where}: the pending rule in Python")
    return found


def test_each_vocabulary_is_spelled_once() -> None:
    # Stormbuffer stores have their own lifecycle (candidate → active → superseded …).
    owners = {PACKAGE / "statuses.py", PACKAGE / "reviewstate.py"}
    copies = [
        copy
        for path in sorted(PACKAGE.rglob("*.py"))
        if path not in owners and PACKAGE / "stormbuffer" not in path.parents
        for copy in _vocabulary_copies(path)
    ]
    templates = [
        f"{path.name}: {line.strip()}"
        for path in sorted((PACKAGE.parent / "templates").rglob("*.j2"))
        for line in path.read_text(encoding="utf-8").splitlines()
        if 'review == "pending"' in line
    ]
    assert copies + templates == []


def test_the_vocabulary_check_sees_copies_where_they_are(tmp_path: Path) -> None:
    planted = tmp_path / "planted.py"
    planted.write_text(
        'LIVE = ("active", "shipped")\n'
        "SQL = \"status NOT IN ('archived', 'superseded')\"\n"
        'def waits(fm):\n    return fm.get("review") == "pending"\n',
        encoding="utf-8",
    )
    assert len(_vocabulary_copies(planted)) == 3


def test_layer_names_read_as_their_layer_in_every_script() -> None:
    assert shown_layer(None) == shown_layer("") == "other" and shown_layer("web") == "web"
    for alias, layer in (("Frontend", "web"), ("フロントエンド", "web"), ("инфраструктура", "infrastructure")):
        assert normalize_layer(alias) == layer and normalize_layer(f"**{alias} / Payments**") == layer
    assert normalize_layer("segurança") is None and set(LAYER_ALIASES.values()) == set(CODE_LAYERS)
