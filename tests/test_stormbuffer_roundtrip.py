"""A Stormbuffer store through memosite and out to a new store (issue 25): every record memosite did
not change comes back byte for byte, whatever its TOML layout, as Stormbuffer's own transfer keeps a
record's markdown unless the record changed (``crates/core/src/backup.rs``); a record changed in
memosite is written as ``sbuf`` renders it. The stores are the corpus's, records written by hand."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memosite.cli import cli
from memosite.stormbuffer.codec import parse_record, render_record
from memosite.stormbuffer.tomlstyle import toml_string

CORPUS = Path(__file__).parent / "corpus" / "stormbuffer"
STORE = "sbuf-repository"
SCOPE = 'scope = "project:0198c0de-2000-7000-8000-0000000000aa"'


def run_json(*args: str) -> Any:
    result = CliRunner().invoke(cli, [*args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def corpus_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The corpus store laid out as Stormbuffer's repository keeps its own, with the corpus's
    hand-written project records moved into it (their scope line edited by hand, nothing else)."""
    repo = tmp_path / "ledger"
    shutil.copytree(CORPUS / "stores" / STORE, repo)
    records = repo / ".sbuf" / "records"
    for path in sorted((CORPUS / "valid").glob("*.md")):
        text = path.read_bytes().decode("utf-8")
        if 'scope = "project:ledger"' in text:
            (records / path.name).write_bytes(text.replace('scope = "project:ledger"', SCOPE).encode("utf-8"))
    monkeypatch.chdir(repo)
    monkeypatch.setenv("MEMOSITE_PROJECT", "ledger")
    return records


def files(directory: Path) -> dict[str, bytes]:
    """Record files by the id they hold (a store names its files as it likes)."""
    found = {}
    for path in directory.rglob("*.md"):
        data = path.read_bytes()
        found[parse_record(data.decode("utf-8")).key] = data
    return found


def test_export_to_a_new_store_keeps_every_unchanged_record_byte_for_byte(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    records = corpus_store(tmp_path, monkeypatch)
    source = files(records)
    laid_out_by_hand = [
        key for key, data in source.items() if render_record(parse_record(data.decode())) != data.decode()
    ]
    assert len(laid_out_by_hand) >= 3  # inline arrays, other quotes: what re-rendering would change
    run_json("stormbuffer", "import")
    exported = run_json("stormbuffer", "export", "--store", str(tmp_path / "new" / ".sbuf"))
    assert exported["count"] == len(source)
    assert files(tmp_path / "new" / ".sbuf" / "records") == source
    assert run_json("stormbuffer", "validate", "--store", str(tmp_path / "new" / ".sbuf"))["valid"] is True
    # Exported again into the same store: nothing to write.
    again = run_json("stormbuffer", "export", "--store", str(tmp_path / "new" / ".sbuf"))
    assert again["count"] == 0 and again["unchanged"] == len(source)


def test_a_record_changed_in_memosite_is_rendered_as_sbuf_renders_it_and_the_rest_keep_their_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    records = corpus_store(tmp_path, monkeypatch)
    source = files(records)
    changed = "0198c0de-2000-7000-8000-000000000001"  # tags = ["storage", "recovery"] on one line
    assert b'tags = ["storage", "recovery"]' in source[changed]
    run_json("stormbuffer", "import")
    run_json("upsert", "--kind", "decision", "--slug", changed, "--status", "paused")
    run_json("stormbuffer", "export", "--store", str(tmp_path / "new" / ".sbuf"))
    out = files(tmp_path / "new" / ".sbuf" / "records")
    written = out.pop(changed).decode("utf-8")
    assert written == render_record(parse_record(written)) and 'status = "candidate"' in written
    assert 'tags = [\n    "storage",\n    "recovery",\n]' in written
    assert out == {key: data for key, data in source.items() if key != changed}


def test_a_source_head_that_no_longer_says_the_record_is_never_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, vault_dir: Path
) -> None:
    corpus_store(tmp_path, monkeypatch)
    run_json("stormbuffer", "import")
    path = vault_dir / "projects/ledger/decisions/0198c0de-2000-7000-8000-000000000001.md"
    text = path.read_text(encoding="utf-8")
    # A hand edit of the kept layout (here: a title the record does not have) is not the record.
    path.write_text(
        text.replace("format_version = 1", 'format_version = 1\n\n    title = "Forged"', 1), encoding="utf-8"
    )
    run_json("reindex")
    run_json("stormbuffer", "export", "--store", str(tmp_path / "new" / ".sbuf"))
    written = files(tmp_path / "new" / ".sbuf" / "records")["0198c0de-2000-7000-8000-000000000001"].decode()
    assert "Forged" not in written and written == render_record(parse_record(written))


def test_an_import_of_records_sbuf_rendered_keeps_no_layout_of_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, vault_dir: Path
) -> None:
    corpus_store(tmp_path, monkeypatch)
    run_json("stormbuffer", "import")
    canonical = vault_dir / "projects/ledger/specs/0198c0de-1000-7000-8000-000000000008.md"  # rendered-by-sbuf.md
    hand_laid = vault_dir / "projects/ledger/decisions/0198c0de-1000-7000-8000-000000000002.md"  # decision-unicode.md
    assert "source_head" not in canonical.read_text(encoding="utf-8")
    assert "source_head" in hand_laid.read_text(encoding="utf-8")


WORDS = (
    st.text(
        alphabet=st.sampled_from(list("abcxyz019 -_éüçñПривет東京データمرحباΣίσυφος🚀✓'\"\\")), min_size=1, max_size=12
    )
    .map(str.strip)
    .filter(bool)
)


def _inline(values: list[str]) -> str:
    return "[" + ", ".join(toml_string(value) for value in values) + "]"


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    tags=st.lists(WORDS, min_size=2, max_size=4, unique=True),
    aliases=st.lists(WORDS, min_size=0, max_size=3, unique=True),
    title=WORDS,
)
def test_any_hand_laid_record_comes_back_byte_for_byte(
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
    tags: list[str],
    aliases: list[str],
    title: str,
) -> None:
    base = tmp_path_factory.mktemp("layout")
    monkeypatch.setenv("MEMOSITE_VAULT", str(base / "vault"))
    store = base / "repo" / ".sbuf"
    shutil.copytree(CORPUS / "stores" / STORE / ".sbuf", store)
    shutil.rmtree(store / "records")
    (store / "records").mkdir()
    text = (
        "+++\nformat_version = 1\n"
        'id = "0198c0de-9000-7000-8000-000000000001"\n'
        f"title = {toml_string(title)}\n"
        'kind = "decision"\n'
        f"{SCOPE}\n"
        'status = "active"\naccess = "human"\n'
        'created_at = "2026-09-01T10:00:00+02:00"\nupdated_at = "2026-09-01T10:00:00+02:00"\n'
        f"tags = {_inline(tags)}\naliases = {_inline(aliases)}\nsupersedes = []\n\n"
        '[[sources]]\nkind = "conversation"\nreference = "hand"\nactor = "me"\n+++\n\n'
        "Written by hand, arrays on one line.\n"
    )
    (store / "records" / "r.md").write_bytes(text.encode("utf-8"))
    monkeypatch.chdir(base / "repo")
    monkeypatch.setenv("MEMOSITE_PROJECT", "ledger")
    run_json("stormbuffer", "import")
    run_json("stormbuffer", "export", "--store", str(base / "new" / ".sbuf"))
    [written] = (base / "new" / ".sbuf" / "records").glob("*.md")
    assert written.read_bytes() == text.encode("utf-8")
