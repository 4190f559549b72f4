"""No value from a file, a config or an argument reaches a command line as an option.

Each call site of git that carries a value is attacked the way a hostile record, config or
argument would: the attack is the test. The last tests walk memosite's source (ast) and fail on a
subprocess started anywhere but the guarded runner, and on a git call whose options hold anything
but memosite's own literals.
"""

from __future__ import annotations

import ast
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_sync_support import Team, git, make_team, push_forged, synced_pair
from test_trust import cite_trap, repo

from memosite.errors import InvalidArguments
from memosite.gitcommand import NO_END_OF_OPTIONS, branch_name, commit_id, git_argv, remote_location
from memosite.settings import MACHINE_FILE
from memosite.vault import Vault

__all__ = ["repo"]  # the product-repository fixture, shared with test_trust

PACKAGE = Path(__file__).resolve().parents[1] / "memosite"
SHA = "0" * 64


@pytest.fixture
def team(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Team]:
    yield from make_team(tmp_path, monkeypatch)


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    """A file of the person's that an option smuggled into git would truncate or overwrite."""
    path = tmp_path / "precious.txt"
    path.write_text("my work, ünïcödé, 日本語\n", encoding="utf-8")
    return path


def still_whole(path: Path) -> bool:
    return path.read_text(encoding="utf-8") == "my work, ünïcödé, 日本語\n"


# --- memosite verify: cites[].commit -------------------------------------------------------------


def hand_written_citing_record(vault_dir: Path, commit: str) -> Path:
    """A trap citing a changed file (so verify asks git for its history) and a gone one (so it
    asks git for renames), both pinned at ``commit``, written by hand."""
    path = vault_dir / "projects/demo/traps/hostile-cite.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        "---\n"
        "id: hostile-cite\nkind: trap\ntitle: Ловушка\n"
        "cites:\n"
        f"- {{path: src/pay/client.py, lines: 1-2, sha256: '{SHA}', commit: '{commit}'}}\n"
        f"- {{path: src/gone.py, sha256: '{SHA}', commit: '{commit}'}}\n"
        "---\nA record nobody wrote through memosite.\n",
        encoding="utf-8",
    )
    return path


def test_a_cited_commit_that_is_an_option_never_truncates_a_file(
    repo: Path, vault_dir: Path, run_cli: Any, victim: Path
) -> None:
    cite_trap(run_cli, "honest", "src/pay/client.py:1-3")
    hand_written_citing_record(vault_dir, f"--output={victim}")
    done = run_cli("verify", "--json")
    assert done.exit_code == 0, done.stdout
    assert still_whole(victim)
    assert "invalid cites[0].commit" in done.stderr and "hostile-cite" in done.stderr
    assert [record["id"] for record in done.json()["records"]] == ["honest"]


def test_verify_update_of_a_record_citing_an_option_is_refused_in_one_line(
    repo: Path, vault_dir: Path, run_cli: Any, victim: Path
) -> None:
    record = hand_written_citing_record(vault_dir, f"--output={victim}")
    before = record.read_bytes()
    done = run_cli("verify", "--update", "hostile-cite")
    assert done.exit_code != 0 and len(done.stderr.strip().splitlines()) == 1
    assert "expected 7 to 64 hex digits" in done.stderr
    assert still_whole(victim) and record.read_bytes() == before


def test_a_synced_record_citing_an_option_never_truncates_a_file(team: Team, victim: Path, run_cli: Any) -> None:
    _a, b = synced_pair(team)
    text = (
        "---\nid: synced-cite\nkind: trap\ntitle: Ψ\ncites:\n"
        f"- {{path: README.md, sha256: '{SHA}', commit: '--output={victim}'}}\n---\nfrom the remote\n"
    )
    push_forged(team, {"projects/demo/traps/synced-cite.md": ("100644", text.encode("utf-8"))})
    assert run_cli("sync", "--vault", str(b.root)).exit_code == 0
    product = team.base / "product"
    product.mkdir()
    git(product, "init", "-q")
    (product / "README.md").write_text("hello\n", encoding="utf-8")
    done = run_cli("verify", "--vault", str(b.root), "--repo", str(product))
    assert done.exit_code == 0 and still_whole(victim)


# --- memosite sync: vaultGit.remote and --remote -------------------------------------------------


def configure(vault: Vault, **vault_git: object) -> None:
    """This machine's vault git settings, written by hand (as an older config or an editor would)."""
    path = vault.root / MACHINE_FILE
    settings = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    settings.setdefault("vaultGit", {}).update(vault_git)
    path.write_text(json.dumps(settings), encoding="utf-8")


COMMANDS = {
    "upload-pack": "--upload-pack=touch {marker}",
    "receive-pack": "--receive-pack=touch {marker}",
    "ext transport": "ext::sh -c touch% {marker}",
    "fd transport": "fd::0",
}


@pytest.mark.parametrize("attack", sorted(COMMANDS))
@pytest.mark.parametrize("dry_run", [False, True])
def test_a_remote_in_the_config_that_runs_a_command_is_refused(
    team: Team, run_cli: Any, attack: str, dry_run: bool
) -> None:
    a, _ = synced_pair(team)
    marker = team.base / "pwned"
    configure(a, remote=COMMANDS[attack].format(marker=marker))
    done = run_cli("sync", "--vault", str(a.root), *(["--dry-run"] if dry_run else []))
    assert done.exit_code != 0 and len(done.stderr.strip().splitlines()) == 1
    # Refused where this machine's settings are read, and again where git would get it.
    assert "vaultGit.remote" in done.stderr or "refusing the remote" in done.stderr
    assert not marker.exists()


@pytest.mark.parametrize("attack", sorted(COMMANDS))
def test_a_remote_on_the_command_line_that_runs_a_command_is_refused(team: Team, run_cli: Any, attack: str) -> None:
    a, _ = synced_pair(team)
    marker = team.base / "pwned"
    done = run_cli("sync", "--vault", str(a.root), f"--remote={COMMANDS[attack].format(marker=marker)}")
    assert done.exit_code != 0 and "refusing the remote" in done.stderr
    assert not marker.exists() and git(a.root, "remote").split() == ["origin"]


def test_a_named_remote_of_the_repository_with_a_command_transport_is_stopped_by_git(team: Team, run_cli: Any) -> None:
    a, _ = synced_pair(team)
    marker = team.base / "pwned"
    git(a.root, "remote", "add", "evil", f"ext::sh -c touch% {marker}")
    done = run_cli("sync", "--vault", str(a.root), "--remote", "evil")
    assert done.exit_code != 0 and not marker.exists()


def test_status_names_a_refused_remote_and_exits_non_zero(team: Team, run_cli: Any) -> None:
    a, _ = synced_pair(team)
    configure(a, remote="--upload-pack=touch pwned")
    done = run_cli("status", "--vault", str(a.root))
    assert done.exit_code != 0 and "'--upload-pack=touch pwned'" in done.stdout + done.stderr


# --- memosite publish --gh-pages: --remote and --branch -----------------------------------------


@pytest.mark.parametrize(
    ("option", "value"),
    [("--remote", "--upload-pack=touch {marker}"), ("--branch", "--output={victim}"), ("--remote", "ext::sh")],
)
def test_publish_never_hands_a_remote_or_branch_to_git_as_an_option(
    vault: Vault, run_cli: Any, victim: Path, tmp_path: Path, option: str, value: str
) -> None:
    marker = tmp_path / "pwned"
    done = run_cli("publish", "--gh-pages", f"{option}={value.format(marker=marker, victim=victim)}")
    assert done.exit_code != 0 and len(done.stderr.strip().splitlines()) == 1
    assert still_whole(victim) and not marker.exists()


# --- the site's changelog: a project directory name -----------------------------------------------


def test_the_changelog_never_hands_a_project_name_to_git_as_an_option(team: Team, victim: Path) -> None:
    from memosite.site.changelog import git_events

    a, _ = synced_pair(team)
    with pytest.raises(InvalidArguments):
        git_events(a, f"--output={victim}")
    assert still_whole(victim)


# --- the values at the boundary -------------------------------------------------------------------


@pytest.mark.parametrize("value", ["abc1234", "0" * 40, "f" * 64, "ABCDEF0"])
def test_a_commit_is_7_to_64_hex_digits(value: str) -> None:
    assert commit_id(value) == value


@pytest.mark.parametrize("value", ["abc123", "0" * 65, "--output=x", "HEAD", "abc1234..HEAD", "ab cd123", "", "ģ" * 8])
def test_anything_else_is_no_commit(value: str) -> None:
    with pytest.raises(InvalidArguments):
        commit_id(value)


@pytest.mark.parametrize(
    "value", ["--upload-pack=x", "-oProxyCommand=x", "ext::sh -c x", "EXT::x", "fd::3", "a\nb", " ", "x\x00y"]
)
def test_a_remote_that_is_an_option_or_a_command_is_refused(value: str) -> None:
    with pytest.raises(InvalidArguments):
        remote_location(value)


@pytest.mark.parametrize(
    "value", ["git@github.com:acme/memory.git", "https://example.org/r.git", "../remote.git", "/srv/r.git", "origin"]
)
def test_urls_paths_and_remote_names_pass(value: str) -> None:
    assert remote_location(value) == value


@pytest.mark.parametrize("value", ["main", "team/memory", "ветка", "release-1.0"])
def test_a_branch_name_git_accepts_passes(value: str) -> None:
    assert branch_name(value) == value


@pytest.mark.parametrize("value", ["--output=x", "-b", "a..b", "a b", "a~1", "@{-1}", "x.lock", ""])
def test_a_branch_name_git_refuses_is_refused(value: str) -> None:
    with pytest.raises(InvalidArguments):
        branch_name(value)


def test_values_go_after_end_of_options_and_paths_after_the_separator() -> None:
    argv = git_argv("log", ["--format=%H"], args=["--output=x"], paths=["-p"])
    assert argv[argv.index("log") :] == ["log", "--format=%H", "--end-of-options", "--output=x", "--", "-p"]


@pytest.mark.parametrize("command", sorted(NO_END_OF_OPTIONS))
def test_a_command_without_end_of_options_refuses_a_value_that_looks_like_one(command: str) -> None:
    with pytest.raises(InvalidArguments):
        git_argv(command, [], args=["--output=x"])


# --- the source: every subprocess goes through the guarded runner -----------------------------------

SPAWNERS = {
    ("subprocess", "run"),
    ("subprocess", "Popen"),
    ("subprocess", "call"),
    ("subprocess", "check_call"),
    ("subprocess", "check_output"),
    ("os", "system"),
    ("os", "popen"),
    ("asyncio", "create_subprocess_exec"),
    ("asyncio", "create_subprocess_shell"),
}
# Where a process may be started: the runner itself, and the background push worker (this Python,
# memosite's own module, the vault's absolute path: no value of a file).
# The modules that start processes: git's guarded runner, the background push, and the two site
# engines run as this interpreter's children (ProperDocs reads its request from stdin; Zensical
# gets an absolute path memosite made for its config). Any other module goes through these.
SPAWNING_MODULES = {"gitcommand.py", "sync/autopush.py", "site/engines.py", "site/zensical.py"}
# Calls that run git: name -> index of the command among the positional arguments.
RUNNERS = {"run_git": 1, "run_git_bytes": 1, "run": 0, "git": 0, "read_bytes": 0, "_git": 0, "_run": 0, "_commits": -1}
# Flags whose value is the next word: git reads that word as the value whatever it looks like.
VALUE_FLAGS = {"-m", "-p", "-b", "-X", "-C", "-c", "-n", "-F"}
OPTION_WITH_VALUE = ("--",)


def _spawns(tree: ast.AST) -> list[int]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            owner = node.func.value
            if isinstance(owner, ast.Name) and (owner.id, node.func.attr) in SPAWNERS:
                found.append(node.lineno)
            if isinstance(owner, ast.Name) and owner.id == "os" and node.func.attr.startswith(("exec", "spawn")):
                found.append(node.lineno)
        if isinstance(node, ast.ImportFrom) and node.module in ("subprocess", "os"):
            for alias in node.names:
                if (node.module, alias.name) in SPAWNERS:
                    found.append(node.lineno)
    return found


def _is_literal_option(node: ast.expr) -> bool:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return True
    if isinstance(node, ast.JoinedStr) and node.values:
        head = node.values[0]
        # `--name=<value>`: git binds whatever follows the = to that option.
        return (
            isinstance(head, ast.Constant)
            and isinstance(head.value, str)
            and head.value.startswith("--")
            and "=" in head.value
        )
    return False


Scope = ast.Module | ast.FunctionDef | ast.AsyncFunctionDef


class _OptionChecker:
    """Whether a sequence of positional arguments holds only memosite's own options, looking up a
    name where it is bound: in the enclosing functions, then the module."""

    def __init__(self, scopes: list[Scope]) -> None:
        self.scopes = scopes  # innermost first

    def sequence(self, items: list[ast.expr]) -> bool:
        previous: ast.expr | None = None
        for item in items:
            if not self.item(item, previous):
                return False
            previous = item
        return True

    def item(self, item: ast.expr, previous: ast.expr | None) -> bool:
        if _is_literal_option(item):
            return True
        if isinstance(previous, ast.Constant) and previous.value in VALUE_FLAGS:
            return True
        if isinstance(item, ast.Starred) and isinstance(item.value, ast.Name):
            return self.name(item.value.id, forwarded=True)
        if isinstance(item, ast.Name):
            return self.name(item.id, forwarded=False)
        return False

    def parameter(self, name: str) -> ast.arguments | None:
        for scope in self.scopes:
            if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
                arguments = scope.args
                if any(a.arg == name for a in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs)):
                    return arguments
                if arguments.vararg is not None and arguments.vararg.arg == name:
                    return arguments
        return None

    def name(self, name: str, *, forwarded: bool) -> bool:
        for scope in self.scopes:
            if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
                vararg = scope.args.vararg
                if forwarded and vararg is not None and vararg.arg == name:
                    return True  # the caller's own options, checked at the caller
            values = self.bindings(scope, name)
            if values:
                return all(self.options(value) for value in values)
        return False

    @staticmethod
    def bindings(scope: Scope, name: str) -> list[ast.expr]:
        found: list[ast.expr] = []
        for node in ast.walk(scope):
            if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
                found.append(node.value)
            elif (
                isinstance(node, (ast.For, ast.comprehension))
                and isinstance(node.target, ast.Name)
                and node.target.id == name
            ):
                iterated = node.iter
                found.extend(iterated.elts if isinstance(iterated, (ast.Tuple, ast.List)) else [iterated])
        return found

    def options(self, value: ast.expr) -> bool:
        if isinstance(value, (ast.List, ast.Tuple)):
            return self.sequence(list(value.elts))
        if isinstance(value, ast.IfExp):
            return self.options(value.body) and self.options(value.orelse)
        return _is_literal_option(value)


def _git_calls(tree: ast.Module) -> Iterator[tuple[ast.Call, list[Scope]]]:
    def visit(node: ast.AST, scopes: list[Scope]) -> Iterator[tuple[ast.Call, list[Scope]]]:
        for child in ast.iter_child_nodes(node):
            inner = [child, *scopes] if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else scopes
            if isinstance(child, ast.Call):
                yield child, scopes
            yield from visit(child, inner)

    yield from visit(tree, [tree])


def _unguarded(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found = []
    for call, scopes in _git_calls(tree):
        func = call.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        if name not in RUNNERS:
            continue
        checker = _OptionChecker(scopes)
        position = RUNNERS[name]
        positional = list(call.args)
        options = positional
        if position >= 0:
            if len(positional) <= position:
                continue
            command = positional[position]
            literal = isinstance(command, ast.Constant) and isinstance(command.value, str)
            # A wrapper hands its own `command` parameter on: its callers are checked instead.
            forwarding = isinstance(command, ast.Name) and command.id == "command" and checker.parameter("command")
            if not literal and not forwarding:
                if name in ("git", "_git", "run_git", "run_git_bytes"):
                    found.append(f"{path.name}:{call.lineno}: the git command is not a literal")
                continue
            options = positional[position + 1 :]
        if not checker.sequence(options):
            found.append(f"{path.name}:{call.lineno}: {ast.unparse(call)[:120]}")
    return found


def _sources() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def test_no_module_but_the_guarded_runner_starts_a_process() -> None:
    offenders = [
        f"{path.relative_to(PACKAGE).as_posix()}:{line}"
        for path in _sources()
        if path.relative_to(PACKAGE).as_posix() not in SPAWNING_MODULES
        for line in _spawns(ast.parse(path.read_text(encoding="utf-8")))
    ]
    assert offenders == []


def test_every_git_call_keeps_values_out_of_its_options() -> None:
    offenders = [offence for path in _sources() for offence in _unguarded(path)]
    assert offenders == []


@pytest.mark.slow
def test_the_source_checks_see_what_they_look_for(tmp_path: Path) -> None:
    # Checks that saw nothing would pass vacuously: they must see the calls there are, and flag these.
    assert sum(1 for path in _sources() for _ in _git_calls(ast.parse(path.read_text(encoding="utf-8")))) > 100
    assert _spawns(ast.parse((PACKAGE / "gitcommand.py").read_text(encoding="utf-8")))
    bad = tmp_path / "bad.py"
    bad.write_text(
        "def f(root, ref, options):\n"
        "    run_git(root, 'log', ref)\n"
        "    repo.git('show', f'{ref}:x')\n"
        "    repo.run('fetch', *options)\n"
        "    run_git(root, 'log', f'-{ref}')\n"
        "    repo.git(command)\n",
        encoding="utf-8",
    )
    assert len(_unguarded(bad)) == 5
    good = tmp_path / "good.py"
    good.write_text(
        "def f(root, ref, message, head, *options):\n"
        "    parents = ['-p', head] if head else []\n"
        "    run_git(root, 'log', '--format=%H', f'--max-count={ref}', args=[ref], paths=['x'])\n"
        "    repo.git('commit-tree', *parents, '-m', message, *options, args=[ref])\n",
        encoding="utf-8",
    )
    assert _unguarded(good) == []
    assert os.fspath(PACKAGE).endswith("memosite")
