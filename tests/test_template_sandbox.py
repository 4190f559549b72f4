"""A vault's templates are data (issue 21): an override that arrives from the shared remote runs in
Jinja's sandbox, and no compiled template is ever read from a place the remote can write.

Each attack is written as it was reproduced: a template (or a cache file) planted in the vault,
then the command a teammate runs next.
"""

from __future__ import annotations

import json
import marshal
import os
import pickle
import resource
import subprocess
import sys
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jinja2
import jinja2.bccache
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memosite.errors import SafetyViolation
from memosite.resources import data_path
from memosite.store import upsert_record
from memosite.template_env import VaultSandbox, build_environment, bytecode_dir_for, environment_for
from memosite.template_files import override_names
from memosite.vault import Vault
from memosite.views import digest, env_for, render_view

SCRIPTS = "Café ошибка ελληνικά 日本語 عربى 🎉"


def _escapes(marker: Path) -> dict[str, str]:
    """The known ways out of a Jinja template, each aimed at creating ``marker``."""
    run = f"popen('mkdir {marker}').read()"
    return {
        "cycler-globals": f"{{{{ cycler.__init__.__globals__.os.{run} }}}}",
        "lipsum-globals": f"{{{{ lipsum.__globals__['os'].{run} }}}}",
        "joiner-globals": f"{{{{ joiner.__init__.__globals__.os.{run} }}}}",
        "namespace-globals": f"{{{{ namespace.__init__.__globals__.os.{run} }}}}",
        "subclasses": "{{ ''.__class__.__mro__[1].__subclasses__() }}",
        "attr-filter": "{{ (''|attr('__class__')).__mro__[1].__subclasses__() }}",
        "str-format": "{{ '{0.__class__.__mro__[1].__subclasses__}'.format(project) }}",
        "str-format-map": "{{ '{p.__class__.__mro__}'.format_map({'p': project}) }}",
        "template-reference": "{{ self._TemplateReference__context }}",
        "range-globals": "{{ range.__globals__.__builtins__ }}",
        "dict-globals": "{{ dict.__init__.__globals__ }}",
        "filter-globals": "{{ (project|md).__class__ }}",
    }


def _plant(vault_dir: Path, relative: str, text: str) -> Path:
    path = vault_dir / "templates" / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _one_line(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


ESCAPE_NAMES = list(_escapes(Path("m")))


@pytest.mark.parametrize("name", ESCAPE_NAMES)
def test_a_vault_view_template_that_tries_to_escape_runs_no_code_and_writes_no_view(
    name: str, vault_dir: Path, tmp_path: Path, run_cli: Callable[..., Any]
) -> None:
    assert run_cli("upsert", "--kind", "trap", "--title", "Cache leak", "--body", "x").exit_code == 0
    traps = vault_dir / "projects/demo/TRAPS.md"
    before = traps.read_bytes()
    marker = tmp_path / "pwned"
    _plant(vault_dir, "views/TRAPS.md.j2", f"# Traps\n{_escapes(marker)[name]}\n")
    outcome = run_cli("list")  # the next command a teammate runs after a sync
    assert outcome.exit_code == 0 and "cache-leak" in outcome.stdout
    assert not marker.exists()
    lines = _one_line(outcome.stderr)
    assert len(lines) == 1 and "SAFETY_VIOLATION" in lines[0] and "templates/views/TRAPS.md.j2 line 2" in lines[0]
    assert "Traceback" not in outcome.stderr
    assert traps.read_bytes() == before


@pytest.mark.parametrize("name", ESCAPE_NAMES)
def test_a_vault_row_template_that_tries_to_escape_runs_no_code_and_costs_the_views_their_rows_only(
    name: str, vault_dir: Path, tmp_path: Path, run_cli: Callable[..., Any]
) -> None:
    # Rows render while records are indexed, on reads too: a refusal there once stopped every
    # write and every `list` of every machine that synced the template. It costs the views now.
    assert run_cli("upsert", "--kind", "trap", "--title", "Cache leak", "--body", "x").exit_code == 0
    marker = tmp_path / "pwned"
    payload = _escapes(marker)[name].replace("project", "e.title")
    _plant(vault_dir, "rows.md.j2", "{% macro trap(e) %}" + payload + "{% endmacro %}")
    outcome = run_cli("upsert", "--kind", "trap", "--title", "Second", "--body", "y", "--json")
    assert outcome.exit_code == 0 and not marker.exists()
    assert outcome.json()["path"] == "projects/demo/traps/second.md"
    warned = [line for line in _one_line(outcome.stderr) if "templates/rows.md.j2" in line]
    assert warned and "sandbox" in warned[0] and "Traceback" not in outcome.stderr
    listed = run_cli("list")
    assert listed.exit_code == 0 and "second" in listed.stdout and not marker.exists()


def test_a_vault_site_template_that_tries_to_escape_fails_the_build_and_publishes_nothing(
    vault_dir: Path, tmp_path: Path, run_cli: Callable[..., Any]
) -> None:
    assert run_cli("upsert", "--kind", "trap", "--title", "Cache leak", "--body", "x").exit_code == 0
    marker = tmp_path / "pwned"
    _plant(vault_dir, "site/record.md.j2", _escapes(marker)["cycler-globals"])
    out = tmp_path / "site"
    outcome = run_cli("build", "--out", str(out), "--json")
    assert outcome.exit_code == 1 and not marker.exists() and not out.exists()
    message = outcome.json()["error"]["message"]
    assert "templates/site/record.md.j2 line 1" in message and "sandbox" in message
    exported = run_cli("export-docs", str(tmp_path / "docs"), "--json")
    assert exported.exit_code == 1 and exported.json()["error"]["code"] == "SAFETY_VIOLATION"
    assert not marker.exists() and not (tmp_path / "docs/memory").exists()


def test_a_vault_template_cannot_change_the_values_it_is_given(
    vault: Vault, capsys: pytest.CaptureFixture[str]
) -> None:
    upsert_record(vault, "demo", kind="trap", body="x", slug="t", frontmatter={"title": "Kept"})
    _plant(vault.root, "rows.md.j2", "{% macro trap(e) %}{{ e.frontmatter.update({'title': 'X'}) }}{% endmacro %}")
    upsert_record(vault, "demo", kind="trap", body="y", slug="u", frontmatter={"title": "Other"})
    assert "templates/rows.md.j2 line 1: access to attribute 'update'" in capsys.readouterr().err
    assert vault.index().by_path("projects/demo/traps/t.md").title == "Kept"  # type: ignore[union-attr]
    assert vault.index().by_path("projects/demo/traps/u.md").title == "Other"  # type: ignore[union-attr]


def test_a_vault_template_cannot_read_a_file_through_a_symlink_or_a_parent_path(vault: Vault, tmp_path: Path) -> None:
    secret = tmp_path / "home" / "token.txt"
    secret.write_text("ghp_notarealtokenbutsecretenough", encoding="utf-8")
    (vault.root / "templates/views").mkdir(parents=True)
    (vault.root / "templates/views/leak.md.j2").symlink_to(secret)
    (vault.root / "config.j2").write_text("vault config", encoding="utf-8")
    _plant(
        vault.root,
        "views/TRAPS.md.j2",
        '{% include ["views/leak.md.j2", "default:views/PROMPTS.md.j2"] %}'
        '{% include ["../config.j2", "default:views/SESSIONS.md.j2"] %}',
    )
    upsert_record(vault, "demo", kind="trap", body="x", slug="t")
    text = render_view(vault, "demo", "TRAPS.md")
    assert "ghp_" not in text and "vault config" not in text
    assert "# Prompts" in text and "# Sessions" in text  # the shipped templates stand in
    assert override_names(vault.root / "templates") == ["views/TRAPS.md.j2"]  # the link is no override


def test_a_legitimate_override_still_renders_text_in_every_script(vault: Vault) -> None:
    _plant(
        vault.root,
        "rows.md.j2",
        '{% import "default:rows.md.j2" as base %}'
        "{% macro trap(e) %}* {{ e.title | md }} — {{ e.frontmatter.tags | join(', ') }}\n{% endmacro %}"
        + "".join(
            f"{{% macro {name}(e) %}}{{{{ base.{name}(e) }}}}{{% endmacro %}}"
            for name in ("decision", "prompt", "session", "index_row", "line")
        ),
    )
    _plant(vault.root, "views/TRAPS.md.j2", f"{SCRIPTS}\n{{% include 'default:views/TRAPS.md.j2' %}}")
    upsert_record(vault, "demo", kind="trap", body="x", slug="t", frontmatter={"title": SCRIPTS, "tags": ["日本", "ñ"]})
    text = (vault.project_dir("demo") / "TRAPS.md").read_text(encoding="utf-8")
    assert text.startswith(SCRIPTS) and f"* {SCRIPTS} — 日本, ñ" in text
    assert isinstance(env_for(vault), VaultSandbox)


def test_memosites_own_templates_render_unsandboxed_and_an_override_switches_the_sandbox_on(vault: Vault) -> None:
    plain = env_for(vault)
    assert not isinstance(plain, jinja2.sandbox.SandboxedEnvironment) and plain.bytecode_cache is not None
    _plant(vault.root, "views/PROMPTS.md.j2", "custom\n")
    sandboxed = env_for(vault)
    assert isinstance(sandboxed, VaultSandbox) and sandboxed.bytecode_cache is None


# --- every filter and global a template is handed -------------------------------------------------

JINJA_GLOBALS = {"range", "dict", "lipsum", "cycler", "joiner", "namespace"}


def test_memosite_hands_templates_only_plain_text_filters_and_jinjas_own_globals(vault: Vault) -> None:
    env = env_for(vault)
    assert set(env.globals) == JINJA_GLOBALS
    ours = {name: f for name, f in env.filters.items() if getattr(f, "__module__", "").startswith("memosite")}
    assert set(ours) == {"inline", "cell", "day", "md", "mdcode", "digest"}
    assert digest is ours["digest"]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=st.one_of(st.text(), st.integers(), st.none(), st.lists(st.text(), max_size=3)))
def test_every_filter_memosite_adds_returns_text_made_of_its_value(vault: Vault, value: object) -> None:
    env = env_for(vault)
    for name in ("inline", "cell", "day", "md", "mdcode", "digest"):
        if name == "digest" and not isinstance(value, str):
            continue
        result = env.filters[name](value)
        parts = result if isinstance(result, tuple) else (result,)
        assert all(isinstance(part, (str, bool)) for part in parts)


ROOTS = ["cycler", "joiner", "namespace", "lipsum", "range", "dict", "project", "e", "e.entry", "e.frontmatter", "self"]
ATTRIBUTES = [
    "__init__",
    "__globals__",
    "__class__",
    "__mro__",
    "__subclasses__()",
    "__builtins__",
    "__dict__",
    "__self__",
    "__func__",
    "__code__",
    "__reduce__()",
    "__reduce_ex__(2)",
    "__getattribute__",
    "__module__",
    "_TemplateReference__context",
    "mro()",
    "os",
    "sys",
    "modules",
    "environ",
    "popen",
    "from_row",
    "func_globals",
    "gi_frame",
    "f_globals",
    "as_params()",
]


@settings(max_examples=300, deadline=None)
@given(root=st.sampled_from(ROOTS), chain=st.lists(st.sampled_from(ATTRIBUTES), min_size=1, max_size=4))
def test_no_attribute_chain_from_anything_a_template_sees_reaches_a_module_or_a_class(
    root: str, chain: list[str], tmp_path_factory: pytest.TempPathFactory
) -> None:
    from memosite.index import IndexEntry
    from memosite.views import _RowView

    override = tmp_path_factory.mktemp("templates")
    (override / "probe.md.j2").write_text("{{ " + ".".join([root, *chain]) + " }}", encoding="utf-8")
    env = build_environment(override, None, {"digest": digest})
    shown: list[object] = []
    env.finalize = lambda value: shown.append(value) or value
    entry = IndexEntry("projects/demo/traps/t.md", "demo", "trap", "t", "t", "T", "active")
    try:
        env.get_template("probe.md.j2").render(project="demo", e=_RowView(entry, "traps/t.md"))
    except SafetyViolation:
        return
    except (jinja2.UndefinedError, TypeError, AttributeError, KeyError, ValueError):
        return  # no such value: nothing was reached
    for value in shown:
        assert not isinstance(value, (types.ModuleType, type)), value
        assert not (isinstance(value, types.MethodType) and isinstance(value.__self__, type)), value


# --- no bytecode from where the remote writes ------------------------------------------------------


def _bytecode_payload(marker: Path) -> bytes:
    """A Jinja bytecode cache file that runs code when it is loaded: Jinja unpickles a checksum
    before the compiled code, and a pickle can call any function."""

    class Plant:
        def __reduce__(self) -> tuple[Any, tuple[str]]:
            return os.mkdir, (str(marker),)

    return jinja2.bccache.bc_magic + pickle.dumps(Plant(), 2) + marshal.dumps(compile("", "<x>", "exec"))


def _plant_bytecode(directory: Path, marker: Path) -> list[Path]:
    """The payload under the cache file name Jinja would look up for each shipped template."""
    directory.mkdir(parents=True, exist_ok=True)
    cache = jinja2.FileSystemBytecodeCache(str(directory))
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(data_path("templates"))))
    planted = []
    for name in env.list_templates():
        source, filename, _ = env.loader.get_source(env, name)  # type: ignore[union-attr]
        bucket = cache.get_bucket(env, name, filename, source)
        path = directory / (cache.pattern % bucket.key)
        path.write_bytes(_bytecode_payload(marker))
        planted.append(path)
    return planted


def test_the_planted_payload_runs_when_jinja_loads_it(tmp_path: Path) -> None:
    # The attack is real: plain Jinja pointed at the folder runs the pickle.
    marker = tmp_path / "pwned"
    _plant_bytecode(tmp_path / "cache", marker)
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(data_path("templates"))),
        bytecode_cache=jinja2.FileSystemBytecodeCache(str(tmp_path / "cache")),
    )
    env.get_template("views/TRAPS.md.j2")  # the checksum does not match: Jinja compiles anew...
    assert marker.is_dir()  # ...after the pickle ran


def test_bytecode_planted_under_the_vaults_jinja_cache_is_never_loaded(
    vault_dir: Path, tmp_path: Path, run_cli: Callable[..., Any]
) -> None:
    assert run_cli("upsert", "--kind", "trap", "--title", "Cache leak", "--body", "x").exit_code == 0
    marker = tmp_path / "pwned"
    assert _plant_bytecode(vault_dir / ".memosite" / "jinja-cache", marker)  # what a synced commit adds
    for args in (["list"], ["compile"], ["upsert", "--kind", "trap", "--title", "Next", "--body", "y"], ["reindex"]):
        outcome = run_cli(*args)
        assert outcome.exit_code == 0, outcome.stderr
    assert not marker.exists()


def test_a_sandboxed_template_never_loads_bytecode_even_from_this_users_cache(
    vault_dir: Path, tmp_path: Path, run_cli: Callable[..., Any]
) -> None:
    assert run_cli("upsert", "--kind", "trap", "--title", "Cache leak", "--body", "x").exit_code == 0
    vault = Vault.open(vault_dir)
    cache = bytecode_dir_for(vault)
    vault.close()
    marker = tmp_path / "pwned"
    _plant_bytecode(cache, marker)
    _plant(vault_dir, "views/PROMPTS.md.j2", "custom prompts\n")
    assert run_cli("compile").exit_code == 0
    assert not marker.exists()
    assert (vault_dir / "projects/demo/PROMPTS.md").read_text(encoding="utf-8") == "custom prompts\n"


def test_compiled_templates_live_in_this_users_cache_keyed_by_vault_and_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import memosite.version

    first, second = Vault.open(tmp_path / "one"), Vault.open(tmp_path / "two")
    upsert_record(first, "demo", kind="trap", body="x", slug="t")
    cache = bytecode_dir_for(first)
    assert cache.is_relative_to(tmp_path / "home" / ".cache" / "memosite")
    assert any(cache.iterdir()) and not (first.internal_dir / "jinja-cache").exists()
    assert oct(cache.stat().st_mode & 0o777) == oct(0o700)
    assert bytecode_dir_for(second) != cache
    monkeypatch.setattr(memosite.version, "__version__", "99.0")
    assert bytecode_dir_for(first) != cache
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert bytecode_dir_for(first).is_relative_to(tmp_path / "xdg" / "memosite")
    first.close()
    second.close()


def test_a_cache_folder_other_users_can_write_is_not_used(vault: Vault) -> None:
    cache = bytecode_dir_for(vault)
    cache.mkdir(parents=True)
    cache.chmod(0o777)
    env, _ = environment_for(vault, {"digest": digest})
    assert env.bytecode_cache is None
    assert sys.platform != "win32"


@pytest.mark.slow
def test_a_vault_override_of_the_memory_page_is_never_published(
    vault_dir: Path, tmp_path: Path, run_cli: Callable[..., Any]
) -> None:
    # The Memory page is the one page published unsanitised (a form and a table): a vault's
    # templates/ cannot put a script on it.
    assert run_cli("upsert", "--kind", "trap", "--title", "Cache leak", "--body", "x").exit_code == 0
    _plant(vault_dir, "site/memory.md.j2", "# Memory\n\n<script>window.__pwned = 1</script>\n")
    assert run_cli("build", "--out", str(tmp_path / "site")).exit_code == 0
    page = (tmp_path / "site/memory/index.html").read_text(encoding="utf-8")
    assert "window.__pwned" not in page and 'class="memosite-memory"' in page
    assert run_cli("export-docs", str(tmp_path / "docs")).exit_code == 0
    exported = (tmp_path / "docs/memory/index.md").read_text(encoding="utf-8")
    assert "window.__pwned" not in exported and 'class="memosite-memory"' in exported


# --- templates that never finish -------------------------------------------------------------------

ENDLESS = {
    "nested ranges": "{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}",
    "a list walked in a walk of itself": (
        "{% set xs = range(100000) | list %}{% for a in xs %}{% for b in xs %}{{ '' }}{% endfor %}{% endfor %}"
    ),
    "a recursive macro": "{% macro down(n) %}{{ down(n + 1) }}{{ down(n + 2) }}{% endmacro %}{{ down(0) }}",
}


@pytest.mark.parametrize("name", sorted(ENDLESS))
def test_a_vault_view_template_that_never_finishes_is_refused_and_the_command_ends(
    name: str, vault_dir: Path, run_cli: Callable[..., Any]
) -> None:
    # Before: `memosite compile` (and every command that rebuilt a view) ran until killed.
    assert run_cli("upsert", "--kind", "trap", "--title", "Кэш течёт", "--body", "x").exit_code == 0
    traps = vault_dir / "projects/demo/TRAPS.md"
    before = traps.read_bytes()
    _plant(vault_dir, "views/TRAPS.md.j2", "# Traps " + SCRIPTS + "\n" + ENDLESS[name] + "\n")
    outcome = run_cli("compile")
    # Before the refusal, compile also said "compiled projects/demo/TRAPS.md" after the warning.
    assert outcome.exit_code == 1 and "compiled" not in outcome.stdout
    [line] = [line for line in _one_line(outcome.stderr) if line.startswith("memosite: error:")]
    assert "templates/views/TRAPS.md.j2 line" in line and "Traceback" not in outcome.stderr
    assert "lines of template code" in line or "recursion that does not end" in line
    assert traps.read_bytes() == before
    assert run_cli("list").exit_code == 0


def test_a_row_template_that_never_finishes_is_run_out_once_and_reads_and_writes_go_on(
    vault_dir: Path, run_cli: Callable[..., Any]
) -> None:
    for n in range(3):
        assert run_cli("upsert", "--kind", "trap", "--title", f"Trap {n}", "--body", "x").exit_code == 0
    endless = ENDLESS["nested ranges"]
    _plant(vault_dir, "rows.md.j2", "{% macro trap(e) %}" + endless + "{% endmacro %}")
    outcome = run_cli("upsert", "--kind", "trap", "--title", "Ещё одна", "--body", "y")
    assert outcome.exit_code == 0 and (vault_dir / "projects/demo/traps/eshche-odna.md").exists()
    warned = [line for line in _one_line(outcome.stderr) if "the views show no rows" in line]
    assert len(warned) == 1 and "lines of template code" in warned[0]
    assert run_cli("list").exit_code == 0 and run_cli("search", "Trap").exit_code == 0


def test_a_missing_macro_in_a_row_template_costs_the_views_their_rows_not_the_vault(
    vault_dir: Path, run_cli: Callable[..., Any]
) -> None:
    # Before: every write and every read that indexed a record stopped on "unexpected AttributeError".
    assert run_cli("upsert", "--kind", "decision", "--title", "Use Postgres", "--body", "x").exit_code == 0
    _plant(vault_dir, "rows.md.j2", "{% macro index_row(e) %}{{ e.title }}{% endmacro %}")
    outcome = run_cli("upsert", "--kind", "decision", "--title", "Use SQLite", "--body", "y")
    assert outcome.exit_code == 0 and "unexpected" not in outcome.stderr
    assert any("templates/rows.md.j2" in line for line in _one_line(outcome.stderr))
    listed = run_cli("list")
    assert listed.exit_code == 0 and "use-sqlite" in listed.stdout


def test_a_legitimate_override_over_many_records_stays_within_the_budget(
    vault: Vault, run_cli: Callable[..., Any]
) -> None:
    for n in range(300):
        upsert_record(
            vault, "demo", kind="trap", slug=f"trap-{n}", body=f"Body {n} {SCRIPTS}", frontmatter={"title": f"T{n}"}
        )
    _plant(vault.root, "views/TRAPS.md.j2", '{% extends "default:views/TRAPS.md.j2" %}')
    _plant(vault.root, "rows.md.j2", '{% extends "default:rows.md.j2" %}')
    outcome = run_cli("compile")
    assert outcome.exit_code == 0 and "warning" not in outcome.stderr, outcome.stderr
    assert "trap-299" in (vault.root / "projects/demo/TRAPS.md").read_text(encoding="utf-8")


# --- templates that ask for more memory than the machine has ---------------------------------------

# Each bomb, as a synced template would carry it; before, `compile` (and every command that
# rebuilt the view) grew until the OOM killer ended it, or printed a MemoryError traceback.
BIG = '{% set s = "é" * 10000000 %}'  # 10M characters: under the cap, a thousand of them far over it
MEMORY_BOMBS = {
    "a string times 10**10": '{% set s = "x" * 10**10 %}{{ s | length }}',
    "a string doubled with ~ forty times": (
        '{% set ns = namespace(s="ab") %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}'
    ),
    "a string doubled with + forty times": (
        '{% set ns = namespace(s="ab") %}{% for i in range(40) %}{% set ns.s = ns.s + ns.s %}{% endfor %}'
    ),
    "str.ljust": '{{ "a".ljust(10**11) }}',
    "str.center": '{{ "日本".center(10**11, "語") }}',
    "str.zfill": '{{ "1".zfill(10**11) }}',
    "str.expandtabs": '{{ ("\t" * 1000).expandtabs(10**8) }}',
    "str.replace": '{{ ("a" * 1000000).replace("a", "ошибка" * 1000) }}',
    "str.join": BIG + "{{ s.join([s] * 1000) }}",
    "str.split": '{{ ("a " * 8000000).split() | length }}',
    "str.translate": '{{ ("a" * 1000000).translate({97: "€" * 10000}) }}',
    "printf with a * width": '{{ "%*s" % (10**10, "") }}',
    "printf with a literal width": '{{ "%10000000000s" % "x" }}',
    "str.format with a width": '{{ "{:>10000000000}".format(1) }}',
    "str.format_map with a width": '{{ "{a:>10000000000}".format_map({"a": 1}) }}',
    "a list times 10**10": "{{ ([0] * 10**10) | length }}",
    "a list grown with + without range": (
        "{% set ns = namespace(xs=[0]) %}{% for i in range(40) %}{% set ns.xs = ns.xs + ns.xs %}{% endfor %}"
    ),
    "an integer of 10**10 digits": "{{ 10 ** (10 ** 10) }}",
    "an integer squared forty times": (
        "{% set ns = namespace(x=3) %}{% for i in range(40) %}{% set ns.x = ns.x * ns.x %}{% endfor %}"
    ),
    "|join of one large string a thousand times": BIG + "{{ ([s] * 1000) | join }}",
    "|join with a large separator": BIG + "{{ range(1000) | join(s) }}",
    "|center": '{{ "x" | center(10**10) }}',
    "|indent": '{{ ("\\n" * 1000000) | indent(10**6) }}',
    "|indent with a text prefix": BIG + '{{ ("\\n" * 1000) | indent(s) }}',
    "|wordwrap": BIG + '{{ ("a " * 100000) | wordwrap(1, wrapstring=s) }}',
    "|replace": '{{ ("a" * 1000000) | replace("a", "🎉" * 1000) }}',
    "|format": '{{ "%*s" | format(10**10, "") }}',
    "|batch filled": "{{ [1] | batch(10**10, 0) | list }}",
    "|slice": "{{ [1] | slice(10**10) | list }}",
    "|list of a long text": '{{ ("ab" * 10000000) | list | length }}',
    "|sum of lists": "{{ ([[0] * 1000000] * 1000) | sum(start=[]) | length }}",
    "|tojson of a list of one large string": BIG + "{{ ([s] * 1000) | tojson }}",
    "|string of a dict": BIG + "{{ dict(a=[s] * 1000) | string }}",
    "printing a list of one large string": BIG + "{{ [s] * 1000 }}",
    "printing a namespace": BIG + "{% set ns = namespace(a=[s] * 1000) %}{{ ns }}",
    "~ of a list of one large string": BIG + '{{ "" ~ [s] * 1000 }}',
    "a loop printing a large string": BIG + "{% for i in range(100000) %}{{ s }}{% endfor %}",
    "a macro printing a large string": (
        BIG + "{% macro m() %}{% for i in range(100000) %}{{ s }}{% endfor %}{% endmacro %}{{ m() | length }}"
    ),
    "a set block printing a large string": (
        BIG + "{% set t %}{% for i in range(100000) %}{{ s }}{% endfor %}{% endset %}{{ t | length }}"
    ),
    "a filter applied a million times": '{{ range(100000) | map("string") | map("center", 10**7) | list | length }}',
    "lipsum": "{{ lipsum(10**8) }}",
    "|tojson with a huge indent": "{{ [[1] * 1000] | tojson(indent=10**9) }}",
    # Copies no operator makes: each is within the caps, a thousand kept in a list are not.
    "a slice of a large text kept a thousand times": (
        BIG + "{% set ns = namespace(xs=[]) %}{% for i in range(1000) %}{% set ns.xs = ns.xs + [s[i:]] %}{% endfor %}"
    ),
    "a list's slice kept a thousand times": (
        '{% set xs = ("ab" * 500000) | list %}{% set ns = namespace(xs=[]) %}'
        "{% for i in range(1000) %}{% set ns.xs = ns.xs + [xs[::-1]] %}{% endfor %}"
    ),
    "str.upper of a large text kept a thousand times": (
        BIG + "{% set ns = namespace(xs=[]) %}{% for i in range(1000) %}{% set ns.xs = ns.xs + [s.upper()] %}"
        "{% endfor %}"
    ),
    "str.encode of a large text kept a thousand times": (
        BIG + '{% set ns = namespace(xs=[]) %}{% for i in range(1000) %}{% set ns.xs = ns.xs + [s.encode("utf-32")] %}'
        "{% endfor %}"
    ),
    "list.copy kept a thousand times": (
        '{% set xs = ("ab" * 500000) | list %}{% set ns = namespace(xs=[]) %}'
        "{% for i in range(1000) %}{% set ns.xs = ns.xs + [xs.copy()] %}{% endfor %}"
    ),
    "str.format with !r of a list of one large string": BIG + '{{ "{0!r}".format([s] * 1000) }}',
    "|batch padded to a million kept a thousand times": (
        "{% set ns = namespace(xs=[]) %}{% for i in range(1000) %}"
        "{% set ns.xs = ns.xs + (range(1) | batch(10**6, i) | list) %}{% endfor %}"
    ),
    # Items that are new objects (the ints of range(), a dict's entries) cost far more than a character.
    "a list of range() kept a thousand times": (
        "{% set ns = namespace(xs=[]) %}{% for i in range(1000) %}"
        "{% set ns.xs = ns.xs + [range(10**5) | list] %}{% endfor %}"
    ),
    "dict.fromkeys kept a thousand times": (
        "{% set ns = namespace(xs=[]) %}{% for i in range(1000) %}"
        "{% set ns.xs = ns.xs + [dict.fromkeys(range(10**5))] %}{% endfor %}"
    ),
    "a namespace copying a large dict kept a thousand times": (
        "{% set d = dict.fromkeys(range(10**5)) %}{% set ns = namespace(xs=[]) %}{% for i in range(1000) %}"
        "{% set ns.xs = ns.xs + [namespace(d)] %}{% endfor %}"
    ),
    "|batch of one kept a thousand times": (
        "{% set ns = namespace(xs=[]) %}{% for i in range(1000) %}"
        "{% set ns.xs = ns.xs + [range(10**5) | batch(1) | list] %}{% endfor %}"
    ),
    "str.format with !s of a list of one large string": BIG + '{{ "{0!s}".format([s] * 1000) }}',
}


def _bounded_memosite(memosite_exe: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The console script with its address space capped at 2 GiB: a bomb that got through fails
    with MemoryError here instead of taking the machine's memory from everyone else."""

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))

    return subprocess.run(
        [str(memosite_exe), *args],
        capture_output=True,
        text=True,
        encoding="utf-8",
        preexec_fn=cap,  # only sets a limit, before exec
        timeout=300,
        check=False,
    )


@pytest.mark.parametrize("name", sorted(MEMORY_BOMBS))
def test_a_vault_view_template_that_asks_for_unbounded_memory_is_refused_and_the_command_ends(
    name: str, vault_dir: Path, memosite_exe: Path, run_cli: Callable[..., Any]
) -> None:
    assert run_cli("upsert", "--kind", "trap", "--title", "Кэш течёт", "--body", "x").exit_code == 0
    traps = vault_dir / "projects/demo/TRAPS.md"
    before = traps.read_bytes()
    _plant(vault_dir, "views/TRAPS.md.j2", "# Traps " + SCRIPTS + "\n" + MEMORY_BOMBS[name] + "\n")
    outcome = _bounded_memosite(memosite_exe, "compile")
    assert "MemoryError" not in outcome.stderr and "Traceback" not in outcome.stderr, outcome.stderr
    assert outcome.returncode == 1 and "compiled" not in outcome.stdout
    [line] = [line for line in _one_line(outcome.stderr) if line.startswith("memosite: error:")]
    assert "templates/views/TRAPS.md.j2 line 2" in line and "sandbox" in line, line
    assert "characters" in line or "items" in line or "bits" in line
    assert traps.read_bytes() == before
    assert run_cli("list").exit_code == 0


def test_a_row_template_that_asks_for_unbounded_memory_costs_the_views_their_rows_only(
    vault_dir: Path, memosite_exe: Path, run_cli: Callable[..., Any]
) -> None:
    assert run_cli("upsert", "--kind", "trap", "--title", "Trap", "--body", "x").exit_code == 0
    _plant(vault_dir, "rows.md.j2", '{% macro trap(e) %}{{ e.title ~ "x" * 10**10 }}{% endmacro %}')
    outcome = _bounded_memosite(memosite_exe, "upsert", "--kind", "trap", "--title", "Ещё одна", "--body", "y")
    assert outcome.returncode == 0 and "Traceback" not in outcome.stderr, outcome.stderr
    assert (vault_dir / "projects/demo/traps/eshche-odna.md").exists()
    assert any("templates/rows.md.j2 line 1" in line for line in _one_line(outcome.stderr))
    assert run_cli("list").exit_code == 0 and run_cli("search", "Trap").exit_code == 0


def test_a_vault_site_template_that_asks_for_unbounded_memory_fails_the_build_and_publishes_nothing(
    vault_dir: Path, tmp_path: Path, memosite_exe: Path, run_cli: Callable[..., Any]
) -> None:
    assert run_cli("upsert", "--kind", "trap", "--title", "Trap", "--body", "x").exit_code == 0
    _plant(vault_dir, "site/record.md.j2", "{{ page }}\n" + MEMORY_BOMBS["str.format with a width"])
    out = tmp_path / "site"
    outcome = _bounded_memosite(memosite_exe, "build", "--out", str(out), "--json")
    assert outcome.returncode == 1 and not out.exists() and "Traceback" not in outcome.stderr
    message = json.loads(outcome.stdout)["error"]["message"]
    assert "templates/site/record.md.j2 line 2" in message and "sandbox" in message, message
    exported = _bounded_memosite(memosite_exe, "export-docs", str(tmp_path / "docs"), "--json")
    assert exported.returncode == 1 and json.loads(exported.stdout)["error"]["code"] == "SAFETY_VIOLATION"


def test_a_large_but_bounded_override_still_renders(vault: Vault) -> None:
    # What a team writes on purpose stays possible: text of a few MB, padding, formatting, joins.
    upsert_record(vault, "demo", kind="trap", body="x", slug="t", frontmatter={"title": SCRIPTS})
    _plant(
        vault.root,
        "views/TRAPS.md.j2",
        '{% set s = "é" * 1000000 %}{{ (s ~ s) | length }} {{ ([SCRIPTS] * 1000) | join(", ") | length }}'.replace(
            "SCRIPTS", repr(SCRIPTS)
        )
        + ' {{ "%-8s|" % "日本" }}{{ "{:>6}".format("ñ") }}{{ "x".ljust(3, "·") }}{{ 2 ** 64 }}'
        + ' {{ lipsum(2, html=False) | wordcount > 10 }} {{ "a b" | replace(" ", "—") }}\n',
    )
    text = render_view(vault, "demo", "TRAPS.md")
    expected_join = 1000 * len(SCRIPTS) + 999 * 2
    assert text == f"2000000 {expected_join} 日本      |     ñx··18446744073709551616 True a—b\n"


# A small grammar of growing operations on small inputs: any template built from it either
# renders within the caps or is refused with SafetyViolation, never a MemoryError.
_SEEDS = st.sampled_from(['"ab"', '"日本"', '"🎉é"', "[1, 2]", "3", '["ошибка"]'])
_GROW = st.sampled_from(
    [
        "{x} ~ {x}",
        "{x} + {x}",
        "{x} * {n}",
        "{x} ** {n}",
        '"%*s" % ({n}, {x})',
        '"{{:>{{0}}}}".format({n}, {x})',
        "{x} | string | center({n})",
        "{x} | string | indent({n}, true)",
        '{x} | string | replace("", {x} | string)',
        "[{x}] * {n}",
        "{x} | string | wordwrap(1, wrapstring={x} | string)",
        "({x} | string).ljust({n})",
        "[{x}, {x}] | join({x} | string)",
        "({x} | string).join([{x} | string] * {n})",
        "{x} | tojson",
    ]
)
_NUMBERS = st.sampled_from(["2", "40", "1000", "10 ** 6", "10 ** 10", "2 ** 64"])


@st.composite
def _growing_templates(draw: st.DrawFn) -> str:
    lines = ["{% set ns = namespace(x=" + draw(_SEEDS) + ") %}"]
    for _ in range(draw(st.integers(1, 6))):
        step = draw(_GROW).format(x="ns.x", n=draw(_NUMBERS))
        loop = draw(st.sampled_from([1, 3, 40]))
        lines.append(f"{{% for i in range({loop}) %}}{{% set ns.x = {step} %}}{{% endfor %}}")
    lines.append("{{ ns.x }}")
    return "\n".join(lines)


@settings(max_examples=100, deadline=None)
@given(source=_growing_templates())
def test_a_template_of_growing_operations_renders_within_the_caps_or_is_refused(
    source: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    from memosite.template_limits import MAX_TEXT

    override = tmp_path_factory.mktemp("templates")
    (override / "probe.md.j2").write_text(source, encoding="utf-8")
    env = build_environment(override, None, {"digest": digest})
    try:
        text = env.get_template("probe.md.j2").render()
    except SafetyViolation as refused:
        assert "templates/probe.md.j2 line" in refused.message
        return
    except (TypeError, ValueError, OverflowError, jinja2.UndefinedError):
        return  # an operation these values do not support: Python says so, with no memory spent
    assert len(text) <= MAX_TEXT


def test_an_mcp_write_under_a_memory_bomb_in_a_view_template_stands_and_the_server_goes_on(
    vault_dir: Path, memosite_exe: Path
) -> None:
    # The MCP server recompiles the views after a write: the bomb once took the server (and the
    # agent's session) down with the machine's memory.
    import anyio
    from mcp import ClientSession, StdioServerParameters, stdio_client

    _plant(vault_dir, "views/TRAPS.md.j2", "# Traps\n" + MEMORY_BOMBS["a string doubled with ~ forty times"] + "\n")
    # The server under the same 2 GiB address-space limit as the CLI above.
    limited = ["-c", 'ulimit -v 2097152 && exec "$0" "$@"', str(memosite_exe)]
    server = StdioServerParameters(
        command="/bin/sh",
        args=[*limited, "mcp", "--vault", str(vault_dir), "--project", "demo"],
        env={"HOME": str(vault_dir.parent / "home")},
    )

    async def scenario() -> None:
        with open(vault_dir.parent / "server-stderr.log", "a", encoding="utf-8") as errlog:
            async with (
                stdio_client(server, errlog=errlog) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                for title in ("Кэш течёт", "日本語の罠"):
                    result = await session.call_tool("upsert", {"kind": "trap", "title": title, "body": "x"})
                    assert not result.is_error, result.content
                found = await session.call_tool("search", {"query": "罠"})
                assert not found.is_error and "日本語の罠" in json.dumps(found.structured_content, ensure_ascii=False)

    anyio.run(scenario)
    assert len(list((vault_dir / "projects/demo/traps").glob("*.md"))) == 2
    log = (vault_dir.parent / "server-stderr.log").read_text(encoding="utf-8")
    assert "MemoryError" not in log and "templates/views/TRAPS.md.j2 line 2" in log
