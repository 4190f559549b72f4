"""Memory that never silently loses what it is given (issue 10): titles in every script, slugs that
never overwrite an unrelated record, kinds that share a directory, partial updates, hand-written
files, successors purged, a vault inside the product repository, init, status and edit."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memosite.errors import InvalidArguments, InvalidRecord, InvalidTransition, SafetyViolation
from memosite.kinds import KIND_FACTS, KINDS
from memosite.lookup import get_record
from memosite.recompile import compile_project
from memosite.recordfile import read_record
from memosite.schema import slugify
from memosite.search import search_records
from memosite.store import forget_record, list_records, restore_record, upsert_record
from memosite.text import jaccard, tokens
from memosite.vault import Vault

ROOT = Path(__file__).resolve().parents[1]


# --- titles in other scripts -------------------------------------------------------------


@pytest.mark.parametrize(
    ("title", "slug"),
    [
        ("Café crème décision", "cafe-creme-decision"),
        ("Straße über Öl", "strasse-uber-ol"),
        ("Миграция блокирует таблицу orders", "migratsiya-blokiruet-tablitsu-orders"),
        ("Ελληνικά δοκιμή", "ellinika-dokimi"),
        ("数据库迁移会锁表", "shu-ju-ku-qian-yi-hui-suo-biao"),
        ("🚀 launch day", "rocket-launch-day"),
    ],
)
def test_slugs_transliterate_every_script(title: str, slug: str) -> None:
    assert slugify(title) == slug


def test_two_cyrillic_traps_sharing_an_ascii_word_are_two_records(vault: Vault) -> None:
    first = upsert_record(
        vault,
        "demo",
        kind="trap",
        body="Миграция блокирует таблицу заказов на минуты.",
        frontmatter={"title": "Миграция блокирует таблицу orders"},
    )
    second = upsert_record(
        vault,
        "demo",
        kind="trap",
        body="Индекс перестраивается часами на больших таблицах.",
        frontmatter={"title": "Индекс orders перестраивается часами"},
    )
    assert (first.action, second.action) == ("created", "created")
    assert first.id != second.id
    assert read_record(vault.root / first.path).body.startswith("Миграция")
    assert read_record(vault.root / second.path).body.startswith("Индекс")


def test_two_different_chinese_traps_are_not_a_recurrence(vault: Vault) -> None:
    first = upsert_record(
        vault, "demo", kind="trap", body="数据库迁移会锁表", frontmatter={"title": "数据库迁移会锁表"}
    )
    second = upsert_record(
        vault, "demo", kind="trap", body="数据库索引重建很慢", frontmatter={"title": "数据库索引重建很慢"}
    )
    assert second.action == "created" and first.id != second.id
    assert read_record(vault.root / second.path).body == "数据库索引重建很慢"


def test_texts_without_tokens_are_never_similar() -> None:
    assert jaccard("", "") == 0.0
    assert jaccard("!!!", "...") == 0.0
    assert jaccard("数据库迁移会锁表", "数据库迁移会锁表") == 1.0
    assert "迁移" in tokens("数据库迁移会锁表") and "cafe" in tokens("Café")


def test_a_repeated_chinese_trap_is_a_recurrence(vault: Vault) -> None:
    body = "添加非空列会锁住订单表,先加可空列再回填。"
    upsert_record(vault, "demo", kind="trap", body=body, frontmatter={"title": "非空列锁表"}, path="db/migrations")
    again = upsert_record(
        vault, "demo", kind="trap", body=body + "!", frontmatter={"title": "锁表"}, path="db/migrations"
    )
    assert again.action == "recurrence" and again.occurrences == 2


# --- a derived slug never overwrites an unrelated record ---------------------------------


def test_a_derived_slug_that_hits_another_record_gets_a_new_slug(vault: Vault) -> None:
    first = upsert_record(vault, "demo", kind="spec", body="Orders API v1.", frontmatter={"title": "Orders!"})
    second = upsert_record(vault, "demo", kind="spec", body="Orders screens.", frontmatter={"title": "orders?"})
    third = upsert_record(vault, "demo", kind="spec", body="Orders exports.", frontmatter={"title": "Orders…"})
    assert [r.path.rsplit("/", 1)[1] for r in (first, second, third)] == ["orders.md", "orders-2.md", "orders-3.md"]
    assert [r.action for r in (first, second, third)] == ["created", "created", "created"]
    assert read_record(vault.root / first.path).body == "Orders API v1."


def test_the_same_title_reaches_its_record_only_when_nothing_is_lost(vault: Vault) -> None:
    first = upsert_record(vault, "demo", kind="spec", body="one", frontmatter={"title": "Orders!"})
    fields_only = upsert_record(
        vault, "demo", kind="spec", body=None, frontmatter={"title": "Orders!", "status": "paused"}
    )
    same_body = upsert_record(vault, "demo", kind="spec", body="one", frontmatter={"title": "orders!"})
    assert (fields_only.action, same_body.action) == ("updated", "updated") and fields_only.path == first.path
    other_body = upsert_record(vault, "demo", kind="spec", body="two", frontmatter={"title": "Orders!"})
    assert other_body.action == "created" and other_body.path.endswith("orders-2.md")
    assert read_record(vault.root / first.path).body == "one"


def test_two_traps_of_one_title_about_different_files_are_two_traps(vault: Vault) -> None:
    first = upsert_record(
        vault,
        "demo",
        kind="trap",
        body="test_refund fails at midnight",
        path="tests/test_payments.py",
        frontmatter={"title": "Flaky test", "severity": "high"},
    )
    second = upsert_record(
        vault,
        "demo",
        kind="trap",
        body="test_rank depends on dict order",
        path="tests/test_search.py",
        frontmatter={"title": "Flaky test", "severity": "medium"},
    )
    assert second.action == "created" and second.id != first.id
    assert read_record(vault.root / first.path).frontmatter["severity"] == "high"


def test_the_same_words_under_another_title_are_another_trap(vault: Vault) -> None:
    upsert_record(vault, "demo", kind="trap", body="Run it again.", frontmatter={"title": "Flaky test in CI"})
    other = upsert_record(
        vault, "demo", kind="trap", body="Run it again.", frontmatter={"title": "Cache warmup is slow"}
    )
    assert other.action == "created"


def test_an_explicit_slug_names_the_record_to_update(vault: Vault) -> None:
    upsert_record(vault, "demo", kind="spec", body="one", slug="orders", frontmatter={"title": "Orders"})
    updated = upsert_record(vault, "demo", kind="spec", body="other", slug="orders", frontmatter={"title": "New"})
    assert updated.action == "updated" and updated.path.endswith("/orders.md")


def test_every_upsert_says_what_happened_in_json_and_one_line(vault: Vault, run_cli) -> None:  # type: ignore[no-untyped-def]
    args = ["upsert", "--kind", "trap", "--title", "Cache stampede", "--path", "src/cache.py", "--json"]
    created = run_cli(*args, "--body", "Expiring keys at once stampede the database.").json()
    again = run_cli(*args, "--body", "Expiring keys at once stampede the database!").json()
    updated = run_cli(*args[:-1], "--slug", created["id"], "--severity", "high").stdout
    assert (created["action"], created["occurrences"]) == ("created", 1)
    assert (again["action"], again["recurrence"], again["occurrences"]) == ("recurrence", True, 2)
    assert updated.startswith(f"updated trap {created['id']} → ")


@pytest.mark.parametrize(
    ("option", "name", "suggestion"),
    [
        ("--slug", "миграция-заказов", "migratsiya-zakazov"),
        ("--project", "Проект-α", "proekt-a"),
        ("--slug", "数据库", "shu-ju-ku"),
    ],
)
def test_a_name_in_another_script_is_refused_with_its_ascii_spelling_offered(
    vault: Vault, run_cli, option: str, name: str, suggestion: str
) -> None:  # type: ignore[no-untyped-def]
    outcome = run_cli("upsert", "--kind", "trap", "--title", "Orders", "--body", "x", option, name)
    assert outcome.exit_code != 0 and outcome.stderr.count("\n") == 1
    assert "use ASCII letters" in outcome.stderr and f"(try {suggestion!r})" in outcome.stderr
    assert list_records(vault, "demo") == []  # nothing written


# --- a record of another kind at the target ----------------------------------------------


def test_state_over_a_plan_of_the_same_slug_is_refused(vault: Vault) -> None:
    upsert_record(vault, "demo", kind="plan", body="Ship v2.", slug="invoice-api-v2")
    with pytest.raises(InvalidArguments, match="demo/plan/invoice-api-v2 holds a plan, not a state"):
        upsert_record(vault, "demo", kind="state", body="half done", slug="invoice-api-v2")
    assert read_record(vault.project_dir("demo") / "plans/invoice-api-v2.md").frontmatter["kind"] == "plan"


@pytest.mark.parametrize(("written", "wanted"), [(a, b) for a in KINDS for b in KINDS if a != b][::7])
def test_a_write_never_replaces_a_record_of_another_kind(vault: Vault, written: str, wanted: str) -> None:
    # A file of kind ``written`` placed (by hand) where a ``wanted`` record would go.
    target = vault.kind_dir("demo", wanted) / "same.md"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(f"---\nid: same\nkind: {written}\nproject: demo\n---\nkeep me\n", encoding="utf-8")
    with pytest.raises(InvalidArguments, match=f"holds a {written}, not a {wanted}"):
        upsert_record(vault, "demo", kind=wanted, body="replace", slug="same")
    assert target.read_text(encoding="utf-8").endswith("keep me\n")


# --- superseding ---------------------------------------------------------------------------


def test_purging_a_successor_makes_its_predecessor_active_again(vault: Vault) -> None:
    upsert_record(vault, "demo", kind="decision", body="Use LIKE.", slug="search-like")
    upsert_record(
        vault, "demo", kind="decision", body="Use FTS5.", slug="search-fts", frontmatter={"supersedes": "search-like"}
    )
    assert get_record(vault, "demo", record_id="search-like").frontmatter["status"] == "superseded"
    result = forget_record(vault, "demo", record_id="search-fts", purge=True)
    assert result.restored == ["search-like"]
    older = get_record(vault, "demo", record_id="search-like").frontmatter
    assert older["status"] == "active" and "supersededBy" not in older


def test_a_superseded_record_whose_successor_is_gone_can_be_restored(vault: Vault) -> None:
    upsert_record(vault, "demo", kind="decision", body="A.", slug="a")
    upsert_record(vault, "demo", kind="decision", body="B.", slug="b", frontmatter={"supersedes": "a"})
    with pytest.raises(InvalidTransition):
        restore_record(vault, "demo", record_id="a")
    (vault.project_dir("demo") / "decisions/b.md").unlink()  # removed by hand, not by a purge
    assert restore_record(vault, "demo", record_id="a").status == "active"


# --- a vault inside the product repository ------------------------------------------------


def test_a_vault_inside_the_product_repository_refuses_writes(tmp_path: Path) -> None:
    product = tmp_path / "product"
    product.mkdir()
    subprocess.run(["git", "init", "-q", str(product)], check=True)
    vault = Vault.open(product / "memory")
    vault.product_root = product
    with pytest.raises(SafetyViolation) as refused:
        upsert_record(vault, "demo", kind="spec", body="b", slug="s")
    assert str(product) in refused.value.message and str(product / "memory") in refused.value.message
    assert not (product / "memory" / "projects" / "demo").exists()


def test_the_vaults_own_repository_is_not_a_product(tmp_path: Path) -> None:
    vault = Vault.open(tmp_path / "vault")
    subprocess.run(["git", "init", "-q", str(vault.root)], check=True)
    vault.product_root = vault.root
    assert upsert_record(vault, "demo", kind="spec", body="b", slug="s").action == "created"


def test_the_cli_refuses_a_vault_inside_the_repository_it_runs_in(tmp_path: Path, run_cli, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    product = tmp_path / "product"
    (product / "src").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(product)], check=True)
    monkeypatch.chdir(product / "src")
    outcome = run_cli("upsert", "--vault", str(product / ".memory"), "--kind", "spec", "--body", "b", "--json")
    assert outcome.exit_code == 1 and outcome.json()["error"]["code"] == "SAFETY_VIOLATION"


# --- partial updates -----------------------------------------------------------------------


def test_changing_fields_needs_no_body(vault: Vault, run_cli) -> None:  # type: ignore[no-untyped-def]
    run_cli("upsert", "--kind", "trap", "--slug", "t", "--body", "The body stays.\n", "--severity", "low")
    outcome = run_cli("upsert", "--kind", "trap", "--slug", "t", "--severity", "high", "--ttl", "30d", "--json")
    assert outcome.exit_code == 0 and outcome.json()["action"] == "updated"
    record = read_record(vault.project_dir("demo") / "traps/t.md")
    assert record.body == "The body stays.\n" and record.frontmatter["severity"] == "high"
    new = run_cli("upsert", "--kind", "trap", "--slug", "new", "--severity", "high", "--json")
    assert new.exit_code == 1 and "needs one" in new.json()["error"]["message"]


def test_kind_narrows_an_id_that_two_kinds_share(vault: Vault, run_cli) -> None:  # type: ignore[no-untyped-def]
    upsert_record(vault, "demo", kind="plan", body="the plan", slug="v2")
    upsert_record(vault, "demo", kind="spec", body="the spec", slug="v2")
    ambiguous = run_cli("get", "--id", "v2", "--json")
    assert ambiguous.exit_code == 1 and "ambiguous" in ambiguous.json()["error"]["message"]
    narrowed = run_cli("get", "--id", "v2", "--kind", "spec", "--json")
    assert narrowed.exit_code == 0 and narrowed.json()["body"] == "the spec"
    updated = run_cli("upsert", "--kind", "plan", "--id", "v2", "--status", "shipped", "--json").json()
    assert updated["action"] == "updated" and updated["status"] == "shipped"


# --- hand-written records -------------------------------------------------------------------


def test_a_hand_written_record_with_few_fields_is_indexed(vault: Vault) -> None:
    path = vault.kind_dir("demo", "trap") / "redis-timeouts.md"
    path.parent.mkdir(parents=True)
    text = "---\ntitle: Redis timeouts under load\nkind: trap\nseverity: high\n---\nRaise the pool size first.\n"
    path.write_text(text, encoding="utf-8")
    found = search_records(vault, "demo", "redis pool")
    assert [hit.id for hit in found.results] == ["redis-timeouts"]
    assert [r.id for r in list_records(vault, "demo")] == ["redis-timeouts"]
    assert path.read_text(encoding="utf-8") == text  # reading never rewrites it
    compile_project(vault, "demo")
    assert "Redis timeouts under load" in (vault.project_dir("demo") / "TRAPS.md").read_text(encoding="utf-8")
    assert path.read_text(encoding="utf-8") == text
    upsert_record(vault, "demo", kind="trap", slug="redis-timeouts", frontmatter={"status": "paused"}, body=None)
    written = path.read_text(encoding="utf-8")
    assert written.startswith("---\ntitle: Redis timeouts under load\nkind: trap\nseverity: high\n")
    for inferred in ("id: redis-timeouts", "project: demo", "created:", "updated:"):
        assert inferred in written


def test_a_hand_written_file_without_a_kind_takes_its_directorys(vault: Vault) -> None:
    path = vault.kind_dir("demo", "decision") / "use-postgres.md"
    path.parent.mkdir(parents=True)
    path.write_text("---\ntitle: Use Postgres\n---\nFor its locks.\n", encoding="utf-8")
    record = get_record(vault, "demo", record_id="use-postgres")
    assert record.kind == "decision" and record.project == "demo"


def test_one_unreadable_file_never_breaks_the_project(vault: Vault, run_cli) -> None:  # type: ignore[no-untyped-def]
    upsert_record(vault, "demo", kind="trap", body="fine", slug="fine")
    bad = vault.kind_dir("demo", "trap") / "huge.md"
    bad.write_text(f"---\nid: huge\nkind: trap\nproject: demo\nhits: {'9' * 5000}\n---\nx\n", encoding="utf-8")
    for args in (["list"], ["compile"], ["reindex"], ["gc", "--dry-run"], ["search", "fine"]):
        outcome = run_cli(*args, "--json")
        assert outcome.exit_code == 0, (args, outcome.stdout)
    outcome = run_cli("get", "--id", "huge", "--json")
    assert outcome.json()["error"]["code"] == "INVALID_RECORD"
    with pytest.raises(InvalidRecord):
        forget_record(vault, "demo", record_id="huge")


# --- messages name records, not paths ------------------------------------------------------


def test_error_messages_never_show_the_vaults_path(vault: Vault, run_cli) -> None:  # type: ignore[no-untyped-def]
    upsert_record(vault, "demo", kind="plan", body="x", slug="p")
    bad = vault.kind_dir("demo", "spec") / "broken.md"
    bad.parent.mkdir(parents=True)
    bad.write_text("---\nid: [unclosed\n---\nx\n", encoding="utf-8")
    for args in (
        ["get", "--id", "broken"],
        ["upsert", "--kind", "state", "--slug", "p", "--body", "y"],
        ["upsert", "--kind", "spec", "--slug", "broken", "--body", "y"],
        ["get", "--id", "missing"],
    ):
        message = run_cli(*args, "--json").json()["error"]["message"]
        assert str(vault.root) not in message, message


# --- init, status, edit -------------------------------------------------------------------


def test_init_creates_vault_project_and_project_file(tmp_path: Path, run_cli, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    repo = tmp_path / "Shop"
    (repo / "src").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    monkeypatch.chdir(repo / "src")
    monkeypatch.delenv("MEMOSITE_PROJECT")
    vault_dir = tmp_path / "vault-new"
    outcome = run_cli("init", "--vault", str(vault_dir))
    assert outcome.exit_code == 0 and "memosite bootstrap" in outcome.stdout
    assert (vault_dir / "config.json").is_file() and (vault_dir / "projects" / "shop").is_dir()
    assert (repo / ".memosite.toml").read_text(encoding="utf-8") == 'id = "shop"\nname = "Shop"\n'
    again = run_cli("init", "--vault", str(vault_dir), "--json").json()
    assert again["created"] == []


def test_status_reports_without_changing_anything(vault: Vault, run_cli) -> None:  # type: ignore[no-untyped-def]
    upsert_record(vault, "demo", kind="trap", body="a", slug="a")
    upsert_record(vault, "demo", kind="scratch", body="b", slug="old", frontmatter={"created": "2020-01-01"})
    hand = vault.kind_dir("demo", "spec") / "by-hand.md"
    hand.parent.mkdir(parents=True)
    hand.write_text("---\ntitle: By hand\n---\nx\n", encoding="utf-8")
    (vault.kind_dir("demo", "trap") / "a.conflict.1a2b3c.md").write_text("---\nid: a\n---\nremote\n", encoding="utf-8")
    before = sorted((p, p.stat().st_mtime_ns) for p in vault.root.rglob("*") if p.is_file())
    report = run_cli("status", "--json").json()
    assert report["project"] == "demo" and report["projectSource"] == "env"
    assert report["counts"]["trap"] == {"active": 1} and report["records"] == 2
    assert report["index"]["notIndexed"] == ["projects/demo/specs/by-hand.md"] and not report["index"]["upToDate"]
    assert report["expiredAwaitingGc"] == 1
    assert report["conflicts"] == ["projects/demo/traps/a.conflict.1a2b3c.md"]
    assert report["git"] == {"enabled": False, "repository": False, "pendingCommits": 0, "stuck": None}
    text = run_cli("status").stdout
    assert "1 not indexed" in text and "1 expired record awaits gc" in text
    after = sorted((p, p.stat().st_mtime_ns) for p in vault.root.rglob("*") if p.is_file())
    assert after == before


def test_status_on_a_missing_vault_says_so(vault_dir: Path, run_cli) -> None:  # type: ignore[no-untyped-def]
    outcome = run_cli("status")
    assert outcome.exit_code == 0 and "not created yet" in outcome.stdout and "memosite init" in outcome.stdout
    assert not vault_dir.exists()


def _editor(tmp_path: Path, replace: str, by: str) -> str:
    script = tmp_path / "editor.py"
    script.write_text(
        "import pathlib, sys\n"
        "p = pathlib.Path(sys.argv[1])\n"
        f"p.write_text(p.read_text(encoding='utf-8').replace({replace!r}, {by!r}), encoding='utf-8')\n",
        encoding="utf-8",
    )
    return f"{shlex.quote(sys.executable)} {shlex.quote(str(script))}"


def test_edit_saves_a_valid_change(vault: Vault, run_cli, tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    upsert_record(vault, "demo", kind="trap", body="Old advice.\n", slug="t", frontmatter={"severity": "low"})
    monkeypatch.setenv("EDITOR", _editor(tmp_path, "Old advice.", "Better advice: ünïcödé ✓."))
    monkeypatch.delenv("VISUAL", raising=False)
    outcome = run_cli("edit", "t", "--json")
    assert outcome.exit_code == 0 and outcome.json()["changed"] is True
    assert read_record(vault.project_dir("demo") / "traps/t.md").body == "Better advice: ünïcödé ✓.\n"
    assert "ünïcödé" in (vault.project_dir("demo") / "TRAPS.md").read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("replace", "by", "reason"),
    [
        ("severity: low", "severity: apocalyptic", "invalid severity"),
        ("\n---\n", "\n--\n", "unterminated frontmatter"),
        ("Old advice.", "token ghp_" + "Zq7xK2mP9w4bT8nV1cR6" * 2, "GitHub"),
        ("kind: trap", "kind: decision", "does not live in traps/"),
        ("\nid: t\n", "\nid: renamed\n", "the id must stay t"),
    ],
)
def test_edit_refuses_an_invalid_save_and_keeps_the_record(  # type: ignore[no-untyped-def]
    vault: Vault, run_cli, tmp_path: Path, monkeypatch, replace: str, by: str, reason: str
) -> None:
    upsert_record(vault, "demo", kind="trap", body="Old advice.\n", slug="t", frontmatter={"severity": "low"})
    path = vault.project_dir("demo") / "traps/t.md"
    before = path.read_bytes()
    monkeypatch.setenv("EDITOR", _editor(tmp_path, replace, by))
    monkeypatch.delenv("VISUAL", raising=False)
    outcome = run_cli("edit", "t", "--json")
    assert outcome.exit_code == 1 and reason in outcome.json()["error"]["message"]
    assert "your text is in" in outcome.json()["error"]["message"]
    assert path.read_bytes() == before


# --- one id, one record --------------------------------------------------------------------


def _sh_editor(tmp_path: Path, sed: str) -> str:
    script = tmp_path / "ide.sh"
    script.write_text(f'#!/bin/sh\nsed -i "{sed}" "$1"\n', encoding="utf-8")
    script.chmod(0o755)
    return str(script)


@pytest.mark.skipif(sys.platform == "win32", reason="the editor is a shell script")
def test_edit_refuses_a_new_id_so_no_second_record_can_take_it(  # type: ignore[no-untyped-def]
    vault: Vault, run_cli, tmp_path: Path, monkeypatch
) -> None:
    run_cli("upsert", "--kind", "decision", "--title", "Edit me", "--body", "original")
    path = vault.kind_dir("demo", "decision") / "edit-me.md"
    before = path.read_bytes()
    monkeypatch.setenv("EDITOR", _sh_editor(tmp_path, "s/^id: edit-me/id: renamed/"))
    monkeypatch.delenv("VISUAL", raising=False)
    refused = run_cli("edit", "edit-me", "--kind", "decision")
    assert refused.exit_code == 1 and refused.stderr.count("\n") == 1
    assert "edit refused, demo/decisions/edit-me.md unchanged: the id must stay edit-me" in refused.stderr
    assert path.read_bytes() == before
    assert (
        "created decision renamed"
        in run_cli("upsert", "--kind", "decision", "--title", "Renamed", "--body", "new").stdout
    )
    assert sorted(r.id for r in list_records(vault, "demo")) == ["edit-me", "renamed"]


def test_a_derived_slug_never_takes_an_id_another_file_holds(vault: Vault, run_cli) -> None:  # type: ignore[no-untyped-def]
    hand = vault.kind_dir("demo", "trap") / "mismatched-id.md"
    hand.parent.mkdir(parents=True)
    hand.write_text("---\nid: something-else\ntitle: Hand written\n---\nby hand\n", encoding="utf-8")
    created = run_cli("upsert", "--kind", "trap", "--title", "Something else", "--body", "new", "--json").json()
    assert created["id"] == "something-else-2" and created["action"] == "created"
    assert sorted(r.id for r in list_records(vault, "demo")) == ["something-else", "something-else-2"]
    assert read_record(hand).body == "by hand\n"


def _save_as_an_editor_does(path: Path, text: str) -> None:
    """Write a new version beside the file and rename it over the file (vim, VS Code, …)."""
    aside = path.with_name(f".{path.name}.swp")
    aside.write_text(text, encoding="utf-8")
    os.replace(aside, path)


def _two_files_holding_one_id(vault: Vault) -> list[Path]:
    """decisions/edit-me.md, its id changed by hand to renamed, and then decisions/renamed.md."""
    upsert_record(vault, "demo", kind="decision", body="brand new", slug="renamed")
    twin = vault.kind_dir("demo", "decision") / "edit-me.md"
    _save_as_an_editor_does(twin, "---\nid: renamed\nkind: decision\ntitle: Edit me\n---\noriginal\n")
    return [twin, vault.kind_dir("demo", "decision") / "renamed.md"]


@pytest.mark.parametrize(
    "args",
    [
        ["get", "--id", "renamed"],
        ["get", "--id", "renamed", "--kind", "decision"],
        ["upsert", "--kind", "decision", "--id", "renamed", "--body", "overwritten"],
        ["upsert", "--kind", "decision", "--slug", "renamed", "--body", "overwritten"],
        ["forget", "--id", "renamed", "--purge"],
        ["restore", "--id", "renamed"],
        ["feedback", "renamed", "--stale"],
    ],
)
def test_an_id_two_files_hold_is_refused_naming_both(vault: Vault, run_cli, args: list[str]) -> None:  # type: ignore[no-untyped-def]
    files = _two_files_holding_one_id(vault)
    before = [path.read_bytes() for path in files]
    error = run_cli(*args, "--json").json()["error"]
    assert error["code"] == "INVALID_ARGUMENTS"
    assert "demo/decisions/edit-me.md and demo/decisions/renamed.md" in error["message"]
    assert [path.read_bytes() for path in files] == before


def test_a_named_slug_is_refused_when_another_file_holds_that_id(vault: Vault) -> None:
    upsert_record(vault, "demo", kind="decision", body="original", slug="edit-me", frontmatter={"id": "edit-me"})
    twin = vault.kind_dir("demo", "decision") / "edit-me.md"
    _save_as_an_editor_does(twin, twin.read_text(encoding="utf-8").replace("id: edit-me", "id: renamed"))
    with pytest.raises(InvalidArguments, match=re.escape("demo/decisions/edit-me.md")):
        upsert_record(vault, "demo", kind="decision", body="brand new", slug="renamed")
    assert not (vault.kind_dir("demo", "decision") / "renamed.md").exists()


def test_either_file_of_a_shared_id_is_still_reached_by_kind_and_slug(vault: Vault) -> None:
    _two_files_holding_one_id(vault)
    assert get_record(vault, "demo", kind="decision", slug="edit-me").body == "original\n"


def test_status_names_the_files_that_share_an_id(vault: Vault, run_cli) -> None:  # type: ignore[no-untyped-def]
    _two_files_holding_one_id(vault)
    list_records(vault, "demo")  # the hand edit is indexed
    report = run_cli("status", "--json").json()
    assert report["sharedIds"] == [
        {"id": "renamed", "paths": ["projects/demo/decisions/edit-me.md", "projects/demo/decisions/renamed.md"]}
    ]
    text = run_cli("status").stdout
    assert "shared id  renamed is held by 2 files" in text and "projects/demo/decisions/edit-me.md" in text


def test_status_counts_no_shared_id_for_one_id_in_two_kinds(vault: Vault, run_cli) -> None:  # type: ignore[no-untyped-def]
    upsert_record(vault, "demo", kind="decision", body="the decision", slug="same")
    upsert_record(vault, "demo", kind="trap", body="the trap", slug="same")
    assert run_cli("status", "--json").json()["sharedIds"] == []


# --- names that differ only in letter case ---------------------------------------------------


def test_a_slug_differing_only_in_case_is_refused_naming_the_existing_file(vault: Vault, run_cli) -> None:  # type: ignore[no-untyped-def]
    run_cli("upsert", "--kind", "decision", "--slug", "FOO", "--body", "the first")
    error = run_cli("upsert", "--kind", "decision", "--slug", "foo", "--body", "the second", "--json").json()["error"]
    assert error["code"] == "INVALID_ARGUMENTS"
    assert "demo/decisions/FOO.md exists and differs only in letter case" in error["message"]
    assert "--slug FOO" in error["message"]
    assert [p.name for p in vault.kind_dir("demo", "decision").glob("*.md")] == ["FOO.md"]
    assert get_record(vault, "demo", record_id="FOO").body.strip() == "the first"


def test_a_derived_slug_skips_a_file_differing_only_in_case(vault: Vault) -> None:
    hand = vault.kind_dir("demo", "decision") / "Use-Postgres.md"
    hand.parent.mkdir(parents=True)
    hand.write_text("---\ntitle: Something else\n---\nby hand\n", encoding="utf-8")
    list_records(vault, "demo")
    created = upsert_record(vault, "demo", kind="decision", body="b", frontmatter={"title": "Use postgres"})
    assert created.id == "use-postgres-2" and read_record(hand).body == "by hand\n"


# --- status and files that are not records -------------------------------------------------


def test_status_after_reindex_reports_invalid_files_as_skipped_not_behind(vault: Vault, run_cli) -> None:  # type: ignore[no-untyped-def]
    upsert_record(vault, "demo", kind="trap", body="fine", slug="fine")
    traps = vault.kind_dir("demo", "trap")
    (traps / "broken-yaml.md").write_text("---\ntitle: [unclosed\n---\nx\n", encoding="utf-8")
    (traps / "no-frontmatter.md").write_text("just text\n", encoding="utf-8")
    (traps / "bad-date.md").write_text("---\ncreated: not a date\n---\nx\n", encoding="utf-8")
    run_cli("reindex")
    report = run_cli("status", "--json").json()["index"]
    assert report["notIndexed"] == [] and report["upToDate"] is True
    assert report["invalid"] == [f"projects/demo/traps/{n}.md" for n in ("bad-date", "broken-yaml", "no-frontmatter")]
    text = run_cli("status").stdout
    assert "behind" not in text and "skipped, not valid records (memosite reindex says why" in text


# --- every script, every time ---------------------------------------------------------------

SCRIPTS = st.sampled_from(
    [
        "Café crème décision à l'été",
        "Миграция блокирует таблицу",
        "Ελληνικά κείμενα δοκιμής",
        "数据库迁移会锁表",
        "データベースの移行",
        "مرحبا بالعالم",
        "🚀🔥 emoji only",
        "mixed 中文 and English",
        "हिन्दी पाठ",
        "עברית",
    ]
)
TEXT = st.builds(
    lambda base, extra: f"{base} {extra}".strip(),
    SCRIPTS,
    st.text(min_size=0, max_size=30).filter(
        lambda s: "\x00" not in s and not any(0xD800 <= ord(c) <= 0xDFFF for c in s)
    ),
)


@pytest.mark.slow
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    batch=st.lists(
        st.tuples(st.sampled_from(["trap", "decision", "spec", "log"]), TEXT, TEXT), min_size=20, max_size=30
    )
)
def test_hundreds_of_records_in_many_scripts_are_all_kept(tmp_path_factory, batch) -> None:  # type: ignore[no-untyped-def]
    vault = Vault.open(tmp_path_factory.mktemp("v"))
    try:
        written: dict[str, tuple[str, str]] = {}
        for kind, title, body in batch:
            result = upsert_record(vault, "demo", kind=kind, body=body or "·", frontmatter={"title": title})
            if result.action == "created":
                assert result.path not in written  # a new record never lands on another one's file
                written[result.path] = (title, body or "·")
            elif result.action == "updated":
                # Only the same title (folded) updates a record it did not name.
                assert result.path in written
                assert slugify(written[result.path][0]) == slugify(title) or written[result.path][0] == title
                written[result.path] = (title, body or "·")
            else:
                assert result.action == "recurrence" and kind == "trap"
        for relative, (title, body) in written.items():
            record = read_record(vault.root / relative)
            assert record.frontmatter["title"] == title
            assert record.body == body or record.frontmatter.get("occurrences", 1) > 1
    finally:
        vault.close()


# --- the README's everyday commands, as written --------------------------------------------


def readme_everyday_commands() -> list[list[str]]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## Everyday commands", 1)[1]
    block = re.search(r"```sh\n(.*?)```", section, re.DOTALL)
    assert block is not None
    joined = block.group(1).replace("\\\n", " ")
    commands = []
    for line in joined.splitlines():
        line = line.split("  #", 1)[0].strip()
        if line.startswith("memosite "):
            commands.append(shlex.split(line))
    return commands


@pytest.mark.slow
def test_the_readmes_everyday_commands_run_as_written_in_a_fresh_vault(tmp_path: Path, memosite_exe: Path) -> None:
    commands = readme_everyday_commands()
    assert len(commands) >= 8
    work = tmp_path / "work"
    work.mkdir()
    (work / "decision.md").write_text("We search with FTS5: fast, and it ships with Python.\n", encoding="utf-8")
    env = {**os.environ, "MEMOSITE_VAULT": str(tmp_path / "fresh-vault"), "MEMOSITE_PROJECT": "readme"}
    for words in commands:
        done = subprocess.run(
            [str(memosite_exe), *words[1:]],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
            encoding="utf-8",
            input="",
        )
        assert done.returncode == 0, f"{shlex.join(words)}: {done.stderr}"
        assert "Traceback" not in done.stderr
    assert (
        json.loads(
            subprocess.run(
                [str(memosite_exe), "list", "--json"],
                cwd=work,
                env=env,
                capture_output=True,
                text=True,
                encoding="utf-8",
            ).stdout
        )["total"]
        >= 2
    )


def test_every_kind_has_facts() -> None:
    assert set(KIND_FACTS) == set(KINDS)


def test_purging_the_middle_of_a_chain_closes_it(vault: Vault) -> None:
    upsert_record(vault, "demo", kind="decision", body="v1", slug="a1")
    upsert_record(vault, "demo", kind="decision", body="v2", slug="a2", frontmatter={"supersedes": "a1"})
    upsert_record(vault, "demo", kind="decision", body="v3", slug="a3", frontmatter={"supersedes": "a2"})
    assert forget_record(vault, "demo", record_id="a2", purge=True).restored == []
    a1 = get_record(vault, "demo", record_id="a1").frontmatter
    a3 = get_record(vault, "demo", record_id="a3").frontmatter
    assert (a1["status"], a1["supersededBy"]) == ("superseded", "a3")
    assert (a3["status"], a3["supersedes"]) == ("active", "a1")


def test_a_kind_and_slug_name_a_record_of_that_kind_only(vault: Vault, run_cli) -> None:  # type: ignore[no-untyped-def]
    upsert_record(vault, "demo", kind="plan", body="the plan", slug="invoice-api-v2")
    for args in (["get"], ["forget", "--purge"], ["restore"]):
        outcome = run_cli(*args, "--kind", "state", "--slug", "invoice-api-v2", "--json")
        assert outcome.json()["error"]["code"] == "RECORD_NOT_FOUND", args
    assert (vault.project_dir("demo") / "plans/invoice-api-v2.md").exists()


def test_a_ttl_set_on_an_existing_record_counts_from_now(vault: Vault) -> None:
    upsert_record(
        vault, "demo", kind="decision", body="old", slug="old", frontmatter={"created": "2026-01-01T00:00:00Z"}
    )
    result = upsert_record(vault, "demo", kind="decision", body=None, slug="old", frontmatter={"ttl": "30d"})
    assert result.expires_at is not None and result.expires_at > "2026-12-01"


def test_a_path_is_added_to_what_the_record_names(vault: Vault) -> None:
    upsert_record(vault, "demo", kind="trap", body="pool", slug="pool", path="src/db/pool.py")
    upsert_record(vault, "demo", kind="trap", body=None, slug="pool", path="src/db/engine.py")
    patterns = get_record(vault, "demo", record_id="pool").frontmatter["pathPatterns"]
    assert patterns == ["src/db/pool.py", "src/db/engine.py"]


def test_an_id_of_another_kind_is_named_not_created_again(vault: Vault) -> None:
    upsert_record(vault, "demo", kind="trap", body="t", slug="locks")
    with pytest.raises(InvalidArguments, match="demo/trap/locks is a trap, not a decision"):
        upsert_record(vault, "demo", kind="decision", body=None, frontmatter={"id": "locks", "status": "paused"})


def test_absolute_paths_are_refused(vault: Vault) -> None:
    with pytest.raises(InvalidArguments, match="relative to the repository root"):
        upsert_record(vault, "demo", kind="trap", body="x", path="/etc/passwd")


def test_a_supersedes_of_nothing_says_so(vault: Vault) -> None:
    result = upsert_record(
        vault,
        "demo",
        kind="decision",
        body="b",
        slug="b",
        frontmatter={"supersedes": "ghost"},
        supersedes_missing_ok=True,
    )
    assert result.supersedes_missing == "ghost" and "no record ghost" in result.summary()


def test_a_file_added_by_hand_is_found_by_the_next_search(vault: Vault) -> None:
    upsert_record(vault, "demo", kind="trap", body="first", slug="first")
    assert search_records(vault, "demo", "first").total == 1
    path = vault.kind_dir("demo", "trap") / "quokka.md"
    path.write_text("---\ntitle: Quokka habitats\n---\nThe quokka lives on Rottnest.\n", encoding="utf-8")
    assert [hit.id for hit in search_records(vault, "demo", "quokka").results] == ["quokka"]
    assert "Quokka habitats" in (vault.project_dir("demo") / "TRAPS.md").read_text(encoding="utf-8")
    path.unlink()
    assert search_records(vault, "demo", "quokka").total == 0


def test_a_crlf_file_written_on_windows_stays_crlf(vault: Vault) -> None:
    path = vault.kind_dir("demo", "decision") / "crlf.md"
    path.parent.mkdir(parents=True)
    path.write_bytes(b"---\r\ntitle: Windows\r\nkind: decision\r\n---\r\nLine one.\r\nLine two.\r\n")
    upsert_record(vault, "demo", kind="decision", slug="crlf", body=None, frontmatter={"status": "paused"})
    data = path.read_bytes()
    assert data.startswith(b"---\r\ntitle: Windows\r\nkind: decision\r\n")
    assert b"\r\n---\r\nLine one.\r\nLine two.\r\n" in data
    assert data.count(b"\n") == data.count(b"\r\n")  # no bare LF crept in


def test_a_file_saved_with_a_byte_order_mark_is_read(vault: Vault) -> None:
    path = vault.kind_dir("demo", "spec") / "bom.md"
    path.parent.mkdir(parents=True)
    path.write_bytes("\ufeff---\ntitle: Сохранено с BOM\n---\nТекст.\n".encode())
    record = get_record(vault, "demo", record_id="bom")
    assert record.frontmatter["title"] == "Сохранено с BOM" and record.body == "Текст.\n"
    assert record.frontmatter["source"] == "human"


def _broken_editor(tmp_path: Path, code: str) -> str:
    script = tmp_path / "editor.py"
    script.write_text(f"import pathlib, sys\np = pathlib.Path(sys.argv[1])\n{code}\n", encoding="utf-8")
    return f"{shlex.quote(sys.executable)} {shlex.quote(str(script))}"


@pytest.mark.parametrize(
    ("code", "reason"),
    [
        ("p.write_bytes(p.read_bytes().replace(b'Old', 'Ölt'.encode('latin-1')))", "not UTF-8"),
        ("p.unlink()", "removed the file"),
        ("sys.exit(3)", "the editor failed"),
    ],
)
def test_edit_survives_what_editors_do(  # type: ignore[no-untyped-def]
    vault: Vault, run_cli, tmp_path: Path, monkeypatch, code: str, reason: str
) -> None:
    upsert_record(vault, "demo", kind="trap", body="Old advice.\n", slug="t")
    path = vault.project_dir("demo") / "traps/t.md"
    before = path.read_bytes()
    monkeypatch.setenv("EDITOR", _broken_editor(tmp_path, code))
    monkeypatch.delenv("VISUAL", raising=False)
    outcome = run_cli("edit", "t", "--json")
    assert outcome.exit_code == 1 and reason in outcome.json()["error"]["message"]
    assert path.read_bytes() == before


def test_init_in_a_repository_pinned_to_another_project_says_so(tmp_path: Path, run_cli, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / ".memosite.toml").write_text('id = "repo"\n', encoding="utf-8")
    monkeypatch.chdir(repo)
    outcome = run_cli("init", "--vault", str(tmp_path / "v"), "--project", "other", "--json").json()
    assert outcome["projectFile"] is None and "pins project 'repo'" in outcome["nextSteps"][0]
    assert (repo / ".memosite.toml").read_text(encoding="utf-8") == 'id = "repo"\n'


def test_a_storage_error_names_the_record_not_the_machine(vault: Vault, run_cli) -> None:  # type: ignore[no-untyped-def]
    (vault.project_dir("demo")).mkdir(parents=True)
    (vault.project_dir("demo") / "decisions").write_text("not a directory", encoding="utf-8")
    message = run_cli("upsert", "--kind", "decision", "--slug", "d", "--body", "x", "--json").json()["error"]["message"]
    assert str(vault.root) not in message and "projects/demo/decisions" in message


def test_another_name_for_a_layer_means_that_layer(vault: Vault, run_cli) -> None:  # type: ignore[no-untyped-def]
    outcome = run_cli("upsert", "--kind", "trap", "--slug", "ui", "--body", "x", "--layer", "Frontend", "--json")
    assert outcome.exit_code == 0
    assert get_record(vault, "demo", record_id="ui").frontmatter["layer"] == "web"
    refused = run_cli("upsert", "--kind", "trap", "--slug", "bad", "--body", "x", "--layer", "kitchen", "--json")
    assert refused.json()["error"]["code"] == "INVALID_ARGUMENTS"


def test_a_body_with_a_nul_character_is_refused(vault: Vault) -> None:
    with pytest.raises(InvalidArguments, match="NUL"):
        upsert_record(vault, "demo", kind="spec", body="a\x00b", slug="nul")
