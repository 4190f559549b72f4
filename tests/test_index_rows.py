"""Reading record rows back: each entry is what its row's columns say, decoded for its caller alone
(memosite.index.entry), and a refresh walks the files that ``iter_record_files`` lists
(memosite.refresh.record_file_stats)."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from site_support import SCRIPTS

from memosite.index import IndexEntry
from memosite.index.database import Index
from memosite.index.entry import COLUMNS, ENTRY_COLUMNS, json_list
from memosite.index.queries import live_traps_with_patterns
from memosite.kinds import DURABLE_KINDS
from memosite.refresh import record_file_stats, refresh_project
from memosite.store import upsert_record
from memosite.vault import Vault

NOT_READ_BACK = ("tags_json", "folded", "unspaced", "pattern_prefixes")


def _as_written(index: Index, where: str = "", params: tuple[Any, ...] = ()) -> list[IndexEntry]:
    """The entries of ``SELECT * FROM records{where}``, each column looked up by name and each JSON
    column decoded by ``json.loads`` on its own: what a row says, read the plain way."""
    found = []
    for row in index.conn.execute(f"SELECT * FROM records{where}", params):
        data = {name: row[name] for name in COLUMNS if name not in NOT_READ_BACK}
        data["tags"] = json.loads(row["tags_json"])
        data["path_patterns"] = json.loads(row["path_patterns"])
        data["frontmatter"] = json.loads(row["frontmatter"])
        found.append(IndexEntry(**data))
    return found


def _assert_same(read: list[IndexEntry], expected: list[IndexEntry]) -> None:
    assert read == expected
    for got, want in zip(read, expected, strict=True):
        # equality alone would let a tuple pass for a list only when both are empty: [] != ()
        assert [type(getattr(got, f.name)) for f in dataclasses.fields(got)] == [
            type(getattr(want, f.name)) for f in dataclasses.fields(want)
        ]


def _every_read(index: Index, project: str) -> None:
    """Every way the index hands out entries agrees with the plain reading of the same rows."""
    order = " ORDER BY project, kind, updated DESC"
    _assert_same(index.entries(), _as_written(index, order))
    _assert_same(index.entries(project), _as_written(index, " WHERE project = ?" + order, (project,)))
    marks = ", ".join("?" for _ in DURABLE_KINDS)
    _assert_same(
        index.entries(project, kinds=DURABLE_KINDS),
        _as_written(index, f" WHERE project = ? AND kind IN ({marks})" + order, (project, *DURABLE_KINDS)),
    )
    for entry in _as_written(index):
        assert index.by_path(entry.path) == entry
        _assert_same(index.by_id(entry.id, project), _as_written(index, " WHERE id = ? ORDER BY path", (entry.id,)))
        _assert_same(
            live_traps_with_patterns(index, project, entry.pattern_key),
            [
                e
                for e in _as_written(
                    index,
                    " WHERE project = ? AND kind = 'trap' AND pattern_key = ? ORDER BY updated DESC",
                    (project, entry.pattern_key),
                )
                if e.status not in ("archived", "superseded")
            ],
        )


def _entry(number: int, **values: Any) -> IndexEntry:
    fields: dict[str, Any] = {
        "path": f"projects/shop/traps/r{number}.md",
        "project": "shop",
        "kind": "trap",
        "id": f"trap-{number}",
        "slug": f"r{number}",
        "title": f"Record {number}",
        "status": "active",
        "updated": f"2026-01-{1 + number % 28:02d}T00:00:00Z",
    }
    fields.update(values)
    return IndexEntry(**fields)


@pytest.fixture
def index(tmp_path: Path) -> Index:
    return Index(tmp_path / "index.sqlite")


def test_entry_columns_are_the_entry_fields_in_order() -> None:
    """An entry is built from a row positionally: the columns read must be its fields, in order, and
    every field left out must be one that is not read back (the fragments and the vector)."""
    names = [f.name for f in dataclasses.fields(IndexEntry)]
    read = ["tags" if name == "tags_json" else name for name in ENTRY_COLUMNS]
    assert names[: len(read)] == read
    assert names[len(read) :] == ["row_view", "row_index", "row_line", "vector"]
    assert set(COLUMNS) - set(ENTRY_COLUMNS) == {"tags", "folded", "unspaced", "pattern_prefixes"}


_WORDS = st.sampled_from([*SCRIPTS, "", "[]", "a", "db", 'quote " and \\ slash', "Ελληνικά", "中文", "🙂"])
_TEXT = st.one_of(_WORDS, st.text(st.characters(codec="utf-8"), max_size=12))
_LISTS = st.lists(_TEXT, max_size=4)
_STATUSES = st.sampled_from(["active", "archived", "superseded", "draft"])
_KINDS = st.sampled_from(["trap", "decision", "plan", "scratch"])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    rows=st.lists(
        st.tuples(_KINDS, _STATUSES, _LISTS, _LISTS, _TEXT, st.sampled_from(["r1", "r2", "shared"])),
        min_size=1,
        max_size=8,
    )
)
def test_entries_read_back_are_what_the_rows_say(index: Index, rows: list[tuple[Any, ...]]) -> None:
    """Tags and path patterns in any script, empty or shared by many rows, read the same through
    every query as a plain ``json.loads`` of each column."""
    index.clear()
    for number, (kind, status, tags, patterns, title, record_id) in enumerate(rows):
        index.upsert(
            _entry(
                number,
                kind=kind,
                status=status,
                id=record_id,
                title=title or "untitled",
                tags=tags,
                path_patterns=patterns,
                frontmatter={"tags": tags, "title": title, "pathPatterns": patterns},
            )
        )
    _every_read(index, "shop")


# Column texts an older version or a hand-made index may hold: spacing, escapes, non-strings.
ODD_LISTS = [
    "[]",
    "[ ]",
    '["a","b"]',
    '[ "a" , "b" ]',
    '["\\u00e9t\\u00e9", "\\u0417\\u0430\\u0447\\u0435\\u043c"]',
    '["été", "Зачем", "数据库", "المفتاح", "🚀"]',
    '["a", "a"]',
    "[1, 2.5, true, null]",
    '[{"k": "v"}]',
    '[["nested"]]',
    "null",
    "{}",
    '"one"',
]


@pytest.mark.parametrize("text", ODD_LISTS)
def test_list_columns_written_by_hand_read_as_json_says(index: Index, text: str) -> None:
    for number in range(3):  # three rows holding the same text: decoded once, handed out three times
        index.upsert(_entry(number, pattern_key="k"))
    index.conn.execute("UPDATE records SET tags_json = ?, path_patterns = ?", (text, text))
    _every_read(index, "shop")
    assert json_list(text) == json.loads(text)


@pytest.mark.parametrize("text", ['["a", "b"]', "[]", '[{"k": "v"}]', '[["nested"]]'])
def test_a_caller_changing_its_entry_changes_no_other_entry(index: Index, text: str) -> None:
    """Rows share a decoded text, never an object: one caller appending a tag (or changing an item)
    is seen by no other entry and by no later read."""
    for number in range(2):
        index.upsert(_entry(number))
    index.conn.execute("UPDATE records SET tags_json = ?, path_patterns = ?", (text, text))
    first, second = index.entries("shop")
    first.tags.append("mine")
    first.path_patterns.append("mine/**")
    for items in (first.tags, first.path_patterns):
        if isinstance(items[0], dict):
            items[0]["k"] = "changed"
        elif isinstance(items[0], list):
            items[0].append("changed")
    assert second.tags == json.loads(text) and second.path_patterns == json.loads(text)
    assert [e.tags for e in index.entries("shop")] == [json.loads(text)] * 2
    assert json_list(text) == json.loads(text)


@settings(max_examples=200, deadline=None)
@given(
    value=st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(st.characters(codec="utf-8")),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
        max_leaves=8,
    ),
    ensure_ascii=st.booleans(),
)
def test_json_list_decodes_as_json_loads_into_a_new_object(value: Any, ensure_ascii: bool) -> None:
    text = json.dumps(value, ensure_ascii=ensure_ascii)
    first, second = json_list(text), json_list(text)
    assert first == second == json.loads(text)
    if isinstance(first, list | dict):
        assert first is not second


# --- the file walk of a refresh --------------------------------------------------------------


def _write(path: Path, text: str = "x") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def test_record_file_stats_lists_the_record_files_with_their_stat(tmp_path: Path) -> None:
    """The refresh's walk lists exactly the files ``iter_record_files`` lists, in its order, with
    the stat ``Path.stat`` gives: names in any script; temp files, sidecars, symlinks, directories
    named like records and files outside the kind directories left out."""
    vault = Vault.open(tmp_path / "vault", create=True)
    base = vault.project_dir("shop")
    outside = tmp_path / "outside"
    _write(outside / "secret.md")
    names = ["cookie.md", "зачем.md", "πίνακας.md", "数据库.md", "المفتاح.md", "café.md", "🚀.md"]
    for name in names:
        _write(base / "traps" / name, f"# {name}\n")
    _write(base / "decisions" / "db.md", "longer text " * 20)
    _write(base / "traps" / ".memosite-tmp-abc123")
    _write(base / "traps" / "cookie.conflict.1.md")
    _write(base / "traps" / "cookie.proposed.md")
    _write(base / "traps" / "cookie.md.swp")
    _write(base / "attic" / "old.md")
    _write(base / "TRAPS.md")
    (base / "traps" / "folder.md").mkdir()
    (base / "traps" / "linked.md").symlink_to(outside / "secret.md")
    (base / "plans").symlink_to(outside)

    listed = list(record_file_stats(vault, "shop"))
    walked = list(vault.iter_record_files("shop"))
    assert [(relative, path) for relative, path, _ in listed] == [(vault.relative(p), os.fspath(p)) for p in walked]
    assert {relative for relative, _, _ in listed} == {
        *(f"projects/shop/traps/{name}" for name in names),
        "projects/shop/decisions/db.md",
    }
    for (_, _, stat), path in zip(listed, walked, strict=True):
        want = path.stat()
        assert (stat.st_ino, stat.st_mtime_ns, stat.st_size) == (want.st_ino, want.st_mtime_ns, want.st_size)


def test_refresh_reports_the_kind_a_removed_or_broken_file_had(tmp_path: Path) -> None:
    """A decision removed by hand and a plan broken by hand are reported under the kinds their rows
    had (their views are rewritten), an edited trap as changed, a new file as added."""
    vault = Vault.open(tmp_path / "vault", create=True)
    written = {
        kind: upsert_record(vault, "shop", kind=kind, slug=f"{kind}-one", body=f"Зачем {kind} 数据库", frontmatter=fm)
        for kind, fm in (
            ("trap", {"title": "Cookie", "severity": "high", "pathPatterns": ["src/**"]}),
            ("decision", {"title": "Database"}),
            ("plan", {"title": "Rollout"}),
        )
    }
    paths = {kind: vault.root / result.path for kind, result in written.items()}
    paths["decision"].unlink()
    paths["plan"].write_text("---\nkind: [broken\n---\n", encoding="utf-8")
    with paths["trap"].open("a", encoding="utf-8") as handle:
        handle.write("\nΟ πίνακας κλειδώνει\n")
    copy = paths["trap"].read_text(encoding="utf-8").replace("id: trap-one", "id: new-one")
    _write(paths["trap"].with_name("new-one.md"), copy.replace("Cookie", "Новый"))

    result = refresh_project(vault, "shop", embed=False)

    decision, plan, trap = (vault.relative(paths[kind]) for kind in ("decision", "plan", "trap"))
    assert result.changed == [trap]
    assert result.added == ["projects/shop/traps/new-one.md"]
    assert sorted(result.removed) == sorted([decision, plan])
    assert result.invalid == [plan]
    assert result.kinds == {"trap", "decision", "plan"}
    assert vault.index().file_stats("shop").keys() == {trap, "projects/shop/traps/new-one.md"}
