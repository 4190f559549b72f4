"""memosite from Python: memosite.Memory, the README's example run as written, a light import."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
from fresh_python import run_fresh

import memosite
from memosite.provenance import AGENT_SHELL_MARKERS

README = Path(__file__).resolve().parents[1] / "README.md"


def readme_example() -> str:
    section = README.read_text(encoding="utf-8").split("\n## Python API\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, re.DOTALL)
    assert len(blocks) == 1, "the Python API section holds one example"
    return blocks[0]


def test_the_readme_example_runs_as_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    exec(compile(readme_example(), "README.md", "exec"), {"__name__": "readme"})
    assert (tmp_path / "team-vault" / "projects" / "shop" / "traps" / "payment-retries.md").is_file()


LIGHT_IMPORT = """
import sys
import memosite
memory = memosite.Memory(vault=sys.argv[1], project="shop")
found = memory.search("anything")
heavy = sorted(name for name in ("mkdocs", "jinja2", "mcp", "memosite.mutation") if name in sys.modules)
print(found.total, heavy)
"""


def test_importing_memosite_and_reading_loads_no_site_generator_templates_or_mcp(tmp_path: Path) -> None:
    done = run_fresh(LIGHT_IMPORT, str(tmp_path / "vault"))
    assert done.stdout.split() == ["0", "[]"]


def test_the_errors_are_the_one_hierarchy_and_unknown_names_are_attribute_errors() -> None:
    assert issubclass(memosite.RecordNotFound, memosite.MemositeError)
    assert memosite.MemositeError is __import__("memosite.errors").errors.MemositeError
    assert {"Memory", "Actor", "MemositeError", "__version__"} <= set(dir(memosite))
    with pytest.raises(AttributeError, match="no attribute 'Memroy'"):
        memosite.Memroy  # noqa: B018


@pytest.fixture
def memory(vault_dir: Path) -> Any:
    with memosite.Memory(vault=vault_dir, project="shop") as opened:
        yield opened


def test_memory_returns_what_the_cli_prints(memory: memosite.Memory, run_cli: Any) -> None:
    written = memory.upsert(kind="trap", slug="retries", title="Ретраи платежей", body="Idempotency key: 冪等キー.")
    cli = run_cli("get", "retries", "--project", "shop", "--json")
    assert cli.exit_code == 0, cli.stderr
    assert json.loads(cli.stdout) == memory.get(written.id).to_json()
    searched = run_cli("search", "冪等キー", "--project", "shop", "--json")
    assert json.loads(searched.stdout)["results"] == memory.search("冪等キー").to_json()["results"]


def test_a_python_caller_acts_as_the_person(memory: memosite.Memory, monkeypatch: pytest.MonkeyPatch) -> None:
    memory.env.update(GIT_AUTHOR_NAME="Zoë Ünal", GIT_AUTHOR_EMAIL="zoe@example.org")
    written = memory.upsert(kind="decision", slug="queue", title="Queue retries", body="Use the job queue.")
    frontmatter = memory.get(written.id).frontmatter
    assert frontmatter["source"] == "human" and frontmatter["author"] == "Zoë Ünal <zoe@example.org>"
    assert "review" not in frontmatter


def test_a_python_program_in_an_agents_shell_is_that_agent(vault_dir: Path) -> None:
    person = memosite.Memory(vault=vault_dir, project="shop")
    person.upsert(kind="decision", slug="queue", title="Queue retries", body="Use the job queue.")
    marker = AGENT_SHELL_MARKERS[0]
    agent = memosite.Memory(vault=vault_dir, project="shop", env={**os.environ, marker.variable: marker.value or "1"})
    assert agent.actor is not None and agent.actor.is_agent
    with pytest.raises(memosite.PersonRequired):
        agent.forget("queue", purge=True)  # a person approved it: only a person destroys it
    with pytest.raises(memosite.PersonRequired):
        agent.upsert(kind="trap", body="x", source="human")
    assert (vault_dir / "projects" / "shop" / "decisions" / "queue.md").is_file()
    person.close()
    agent.close()


def test_a_caller_that_says_it_is_an_agent_is_one(vault_dir: Path) -> None:
    bot = memosite.Actor.mcp_client("nightly-bot", "2.0", None)
    with memosite.Memory(vault=vault_dir, project="shop", actor=bot) as memory:
        written = memory.upsert(kind="trap", slug="t", title="Ошибка", body="Breaks on Fridays.")
        assert memory.get(written.id).frontmatter["source"] == "agent"


@pytest.mark.parametrize(
    ("call", "error"),
    [
        (lambda m: m.get("nope"), "RECORD_NOT_FOUND"),
        (lambda m: m.upsert(kind="bug", body="x"), "INVALID_ARGUMENTS"),
        (lambda m: m.search("x", sort="loudest"), "INVALID_ARGUMENTS"),
        (lambda m: m.search("x", limit=0), "INVALID_ARGUMENTS"),
        (lambda m: m.restore("nope"), "RECORD_NOT_FOUND"),
        (lambda m: m.bootstrap(max_bytes=10), "INVALID_ARGUMENTS"),
    ],
)
def test_wrong_arguments_raise_one_error_with_its_code_and_change_nothing(
    memory: memosite.Memory, call: Any, error: str
) -> None:
    before = sorted(p.relative_to(memory.vault.root) for p in memory.vault.root.rglob("*.md"))
    with pytest.raises(memosite.MemositeError) as raised:
        call(memory)
    assert raised.value.code == error
    assert sorted(p.relative_to(memory.vault.root) for p in memory.vault.root.rglob("*.md")) == before


def test_an_argument_no_method_takes_is_a_type_error(memory: memosite.Memory) -> None:
    with pytest.raises(TypeError):
        memory.forget("x", purge=True, hard=True)  # type: ignore[call-arg]
    with pytest.raises(memosite.InvalidArguments):
        memosite.Memory(vault="", project="shop")


@pytest.mark.parametrize(
    "call",
    [
        lambda m: m.get(5),
        lambda m: m.get(["retries"]),
        lambda m: m.forget(7, purge=True),
        lambda m: m.restore(b"retries"),
    ],
)
def test_an_id_that_is_not_text_is_invalid_arguments_and_changes_nothing(memory: memosite.Memory, call: Any) -> None:
    memory.upsert(kind="trap", slug="retries", title="Повторы", body="Idempotency key.")
    before = {p: p.read_bytes() for p in memory.vault.root.rglob("*.md")}
    with pytest.raises(memosite.InvalidArguments, match=r"invalid id .*: an id is text"):
        call(memory)
    assert {p: p.read_bytes() for p in memory.vault.root.rglob("*.md")} == before


@pytest.mark.parametrize(
    ("method", "call"),
    [
        ("search", lambda m: m.search("x", colour="red")),
        ("bootstrap", lambda m: m.bootstrap(colour="red")),
        ("build", lambda m: m.build("site", colour="red")),
        ("build", lambda m: m.build("site", projects=["other"])),
    ],
)
def test_an_option_a_method_does_not_take_is_a_type_error_naming_that_method(
    memory: memosite.Memory, method: str, call: Any
) -> None:
    with pytest.raises(TypeError, match=rf"^Memory\.{method}\(\) got an unexpected keyword argument .*it takes "):
        call(memory)


def test_a_vault_or_an_actor_of_the_wrong_type_is_invalid_arguments(tmp_path: Path) -> None:
    with pytest.raises(memosite.InvalidArguments, match="vault must be a path"):
        memosite.Memory(vault=5, project="shop")  # type: ignore[arg-type]
    with pytest.raises(memosite.InvalidArguments, match=r"^vault must not be empty"):
        memosite.Memory(vault="  ", project="shop")
    with pytest.raises(memosite.InvalidArguments, match=r"actor must be a memosite\.Actor"):
        memosite.Memory(vault=tmp_path / "v", project="shop", actor="me")  # type: ignore[arg-type]
    assert not (tmp_path / "v").exists()


@pytest.mark.parametrize(
    "fields",
    [{"extra": object()}, {"extra": {"nested": {1, 2}}}, {"extra": [b"bytes"]}],
)
def test_a_field_value_the_frontmatter_cannot_hold_is_refused_and_nothing_is_written(
    memory: memosite.Memory, fields: dict[str, Any]
) -> None:
    with pytest.raises(memosite.InvalidArguments, match=r"invalid extra: .*text, a number, true/false"):
        memory.upsert(kind="decision", slug="d", title="Décision", body="Body.", **fields)
    assert list(memory.vault.root.rglob("d.md")) == []


@pytest.mark.parametrize(("field", "value"), [("title", ["Заголовок"]), ("body", 3), ("title", {"en": "Title"})])
def test_a_title_or_body_that_is_not_text_is_refused_naming_it(memory: memosite.Memory, field: str, value: Any) -> None:
    arguments = {"title": "Titre", "body": "Corps.", field: value}
    with pytest.raises(memosite.InvalidArguments, match=f"^{field} must be text"):
        memory.upsert(kind="decision", slug="d", **arguments)
    assert list(memory.vault.root.rglob("d.md")) == []


def test_a_tuple_field_value_is_written_as_a_list(memory: memosite.Memory) -> None:
    written = memory.upsert(
        kind="trap", slug="t", title="Τίτλος", body="Body.", pathPatterns=("src/**",), extra=(1, "ж")
    )
    frontmatter = memory.get(written.id).frontmatter
    assert frontmatter["pathPatterns"] == ["src/**"] and frontmatter["extra"] == [1, "ж"]


def test_one_tag_or_kind_given_as_text_is_that_one_value_not_its_letters(memory: memosite.Memory) -> None:
    memory.upsert(kind="trap", slug="t", title="Jeton", body="Le jeton fuit.", tags=["security"])
    memory.upsert(kind="decision", slug="d", title="Jeton", body="Le jeton tourne.")
    assert [hit.id for hit in memory.search("jeton", tags="security").results] == ["t"]
    assert [hit.id for hit in memory.search("jeton", kinds="decision").results] == ["d"]


def test_inside_a_projects_folder_of_a_git_vault_memory_works_in_that_project_as_the_cli_does(
    vault_dir: Path, monkeypatch: pytest.MonkeyPatch, run_cli: Any
) -> None:
    # Before: Memory() in <vault>/projects/shop-1/traps took the vault's own repository for the
    # project ("vault"), while the CLI there works in the folder's project.
    with memosite.Memory(vault=vault_dir, project="shop-1") as first:
        first.upsert(kind="trap", slug="t", title="Ловушка", body="Body.")
    subprocess.run(["git", "init", "-q", str(vault_dir)], check=True)
    monkeypatch.delenv("MEMOSITE_PROJECT", raising=False)
    monkeypatch.chdir(vault_dir / "projects" / "shop-1" / "traps")
    with memosite.Memory(vault=vault_dir) as inside:
        assert inside.project == "shop-1" and inside.vault.product_root is None
        assert [hit.id for hit in inside.search("Ловушка").results] == ["t"]
    assert json.loads(run_cli("list", "--json").stdout)["project"] == "shop-1"


@pytest.mark.slow
def test_build_publishes_the_project_with_the_installed_engine(memory: memosite.Memory, tmp_path: Path) -> None:
    memory.upsert(kind="trap", slug="retries", title="Retries double-charge", body="Send an idempotency key.")
    result = memory.build(tmp_path / "site")
    assert result.projects == ["shop"] and result.records == 1
    assert (tmp_path / "site" / "index.html").is_file()


@pytest.mark.parametrize(
    ("call", "named"),
    [
        (lambda m: m.gc(dry_run="no"), "dry_run"),
        (lambda m: m.gc(purge=1), "purge"),
        (lambda m: m.forget("retries", purge="yes"), "purge"),
        (lambda m: m.search("ключ", include_expired="no"), "include_expired"),
        (lambda m: m.search("ключ", all_projects=None), "all_projects"),
        (lambda m: m.upsert(kind="trap", body="Ζ", allow_duplicate="false"), "allow_duplicate"),
        (lambda m: m.build("out", strict="no"), "strict"),
    ],
)
def test_a_switch_that_is_not_true_or_false_is_refused_not_read_by_truthiness(
    memory: memosite.Memory, vault_dir: Path, call: Any, named: str
) -> None:
    memory.upsert(kind="trap", slug="retries", title="Повтор без ключа", body="Idempotency ключ, 冪等キー.")
    files = sorted(path.read_bytes() for path in vault_dir.rglob("*.md"))
    with pytest.raises(memosite.InvalidArguments, match=f"{named} must be True or False") as refused:
        call(memory)
    assert refused.value.code == "INVALID_ARGUMENTS"
    assert sorted(path.read_bytes() for path in vault_dir.rglob("*.md")) == files
