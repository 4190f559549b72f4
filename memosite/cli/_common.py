"""What every command shares: --vault/--project/--json, error reporting, output."""

from __future__ import annotations

import contextlib
import functools
import json
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from memosite.config import working_directory
from memosite.errors import MemositeError

if TYPE_CHECKING:
    from memosite.config import ProjectIdentity
    from memosite.provenance import Actor
    from memosite.vault import Vault

F = TypeVar("F", bound=Callable[..., Any])


# Commands that may create the vault when there is none yet; every other command reads, and on a
# missing vault says so instead of leaving an empty one behind.
CREATING_COMMANDS = frozenset(
    {"init", "upsert", "append", "demo", "session start", "stormbuffer import", "sync", "import"}
)


class App:
    """The composition root of one CLI call: configuration is resolved here, once."""

    def __init__(self, vault_arg: str | None, project_arg: str | None, as_json: bool, command: str = "") -> None:
        self.vault_arg = vault_arg
        self.project_arg = project_arg
        self.as_json = as_json
        self.command = command
        self.env = dict(os.environ)
        self._vault: Vault | None = None
        from memosite.sync.autopush import register_auto_push

        register_auto_push()  # this command's commits are pushed when the vault says so
        self._identity: ProjectIdentity | None = None

    @property
    def vault_root(self) -> Path:
        from memosite.config import resolve_vault_root

        return resolve_vault_root(self.vault_arg, self.env)

    @property
    def vault_source(self) -> str:
        """How the vault was chosen: ``--vault``, ``MEMOSITE_VAULT`` or the default."""
        if self.vault_arg:
            return "--vault"
        return "MEMOSITE_VAULT" if self.env.get("MEMOSITE_VAULT") else "default (~/.memosite)"

    @property
    def vault(self) -> Vault:
        if self._vault is None:
            from memosite.config import holds_vault
            from memosite.errors import VaultNotFound
            from memosite.vault import Vault

            root = self.vault_root
            if not root.is_dir() and self.command in CREATING_COMMANDS:
                from memosite.workspace import check_vault_placement

                check_vault_placement(root, self.product_root)  # refuse before anything is created
            if self.command not in CREATING_COMMANDS and not (root.is_dir() and holds_vault(root)):
                where = {"--vault": "the directory --vault names", "MEMOSITE_VAULT": "MEMOSITE_VAULT"}
                named = where.get(self.vault_source, "~/.memosite (the default)")
                if root.is_dir():  # an empty directory (a clone not checked out yet, say) stays as it is
                    raise VaultNotFound(
                        f"{named} is not a memosite vault yet (no config.json or projects/):"
                        " `memosite init` makes it one (so does the first upsert or append)"
                    )
                raise VaultNotFound(
                    f"no vault yet at {named}: `memosite init` creates it (so does the first upsert or append)"
                )
            self._vault = Vault.open(root)
            self._vault.product_root = self.product_root
            self._vault.actor_source = self.actor
        return self._vault

    def actor(self) -> Actor:
        """Who this command acts for: the agent whose shell tool runs it (by the markers agents
        document), else the person whose git identity it runs under (asked of git when a change
        first needs it: a read-only command runs no git)."""
        from memosite.gitidentity import git_identity
        from memosite.provenance import Actor, detect_agent_shell

        shell = detect_agent_shell(self.env)
        if shell is not None:
            return Actor.in_agent_shell(shell)
        return Actor.person(git_identity(self.env, self.product_root))

    def require_person(self, action: str) -> None:
        """Refuse ``action`` (PERSON_REQUIRED) when an agent's shell runs this command."""
        from memosite.provenance import require_person

        require_person(self.env, action)

    def vault_for_reading(self) -> Vault:
        """The vault, or — when there is none yet — an absent one with the default settings: for
        commands that read files elsewhere (a vtcode sessions root) and need no vault of their own.
        Nothing is created."""
        from memosite.config import VaultConfig, holds_vault

        if self.vault_root.is_dir() and holds_vault(self.vault_root):
            return self.vault
        from memosite.vault import Vault

        return Vault(root=self.vault_root, config=VaultConfig())

    @property
    def identity(self) -> ProjectIdentity:
        if self._identity is None:
            from memosite.config import resolve_project

            self._identity = resolve_project(self.project_arg, self.env, vault_root=self.vault_root)
        return self._identity

    @property
    def project(self) -> str:
        return self.identity.id

    @property
    def product_root(self) -> Path | None:
        """The git work tree of the product the command runs in (the vault must not lie in it);
        None in the vault itself, whose own git repository is no product."""
        from memosite.workspace import find_work_tree

        found = find_work_tree(working_directory(), self.env)
        if found is not None and self._in_vault(found):
            return None
        return found

    def _in_vault(self, work_tree: Path) -> bool:
        """Whether ``work_tree`` is the vault's own repository (or lies in the vault)."""
        try:
            work_tree.resolve().relative_to(self.vault_root.expanduser().resolve())
        except (OSError, ValueError):
            return False
        return True

    @property
    def project_explicit(self) -> str | None:
        """The project only when the caller named one (``get`` may then search siblings)."""
        if self.project_arg or self.env.get("MEMOSITE_PROJECT"):
            return self.project
        return None

    def emit(self, data: Any, text: str | Callable[[], str] | None = None) -> None:
        """Print the result: JSON when --json was given, else the human text."""
        if self.as_json:
            sys.stdout.write(json.dumps(data, ensure_ascii=False, default=str) + "\n")
            return
        if text is None:
            text = json.dumps(data, indent=2, ensure_ascii=False, default=str)
        elif callable(text):
            text = text()
        if text:
            sys.stdout.write(text if text.endswith("\n") else text + "\n")

    def fail(self, error: MemositeError) -> None:
        if self.as_json:
            sys.stdout.write(json.dumps(error.to_json(), ensure_ascii=False) + "\n")
        else:
            sys.stderr.write(f"memosite: error: {error.message}\n")
        sys.stdout.flush()
        raise SystemExit(error.exit_code)

    def close(self) -> None:
        if self._vault is not None:
            self._vault.close()


# Commands that run until stopped: Ctrl-C stops them, whatever they changed on the way.
LONG_RUNNING_COMMANDS = frozenset({"serve", "watch"})


def _option_name(ctx: click.Context, name: str) -> str:
    """How the command line spells a parameter (``--tag`` for ``tags``, ``ID`` for an argument)."""
    for param in ctx.command.params:
        if param.name == name:
            if isinstance(param, click.Option) and param.opts:
                return max(param.opts, key=len)
            return param.human_readable_name
    return "--" + name.replace("_", "-")


@contextlib.contextmanager
def _interrupts_after_a_change(*, enabled: bool) -> Iterator[None]:
    """Once a command has begun changing the vault, Ctrl-C no longer makes it fail: the change is
    completed and reported (an agent that saw "interrupted" would retry and write twice)."""
    if not enabled:
        yield
        return
    from memosite.interrupts import changed_in_process, held_after_change

    def report() -> None:
        sys.stderr.write("memosite: interrupted after the change was made: it is complete\n")

    with held_after_change(changed_in_process, report):
        yield


VAULT_HELP = "Vault directory (default: MEMOSITE_VAULT or ~/.memosite)."
PROJECT_HELP = "Project id (default: MEMOSITE_PROJECT or derived from the working directory)."


def vault_options_with(*, vault_help: str = VAULT_HELP, project_help: str = PROJECT_HELP) -> Callable[[F], F]:
    """:func:`vault_options` for a command whose --vault or --project default is its own (the demo)."""
    return functools.partial(_vault_options, vault_help=vault_help, project_help=project_help)


def vault_options(func: F) -> F:
    """Add --vault/--project/--json and turn every MemositeError into one line (or JSON)."""
    return _vault_options(func, vault_help=VAULT_HELP, project_help=PROJECT_HELP)


def _vault_options(func: F, *, vault_help: str, project_help: str) -> F:
    @click.option("--vault", "vault_arg", metavar="DIR", help=vault_help)
    @click.option("--project", "project_arg", metavar="ID", help=project_help)
    @click.option("--json", "as_json", is_flag=True, help="Print one JSON object on stdout.")
    @functools.wraps(func)
    def wrapper(vault_arg: str | None, project_arg: str | None, as_json: bool, **kwargs: Any) -> Any:
        ctx = click.get_current_context()
        shared = ctx.find_root().obj if isinstance(ctx.find_root().obj, dict) else {}
        command = " ".join(ctx.command_path.split()[1:])
        app = App(
            vault_arg if vault_arg is not None else shared.get("vault"),
            project_arg if project_arg is not None else shared.get("project"),
            as_json or bool(shared.get("json")),
            command,
        )
        try:
            from memosite.inputs import check_arguments

            check_arguments(kwargs, spell=lambda name: _option_name(ctx, name))
            with _interrupts_after_a_change(enabled=command not in LONG_RUNNING_COMMANDS):
                return func(app, **kwargs)
        except MemositeError as exc:
            app.fail(exc)
        except KeyboardInterrupt:
            from memosite.errors import Interrupted

            app.fail(Interrupted("interrupted before anything was changed"))
        except (BrokenPipeError, SystemExit, click.ClickException):
            raise
        except Exception as exc:
            if os.environ.get("MEMOSITE_DEBUG"):
                raise
            from memosite.errors import from_exception

            app.fail(from_exception(exc))
        finally:
            app.close()
        return None

    return wrapper  # type: ignore[return-value]


def parse_json_option(name: str, value: str | None) -> Any:
    """Parse a JSON-valued option, reporting bad JSON as INVALID_ARGUMENTS."""
    from memosite.errors import InvalidArguments

    if value is None:
        return None

    def refuse_constant(token: str) -> Any:
        raise InvalidArguments(f"{name}: {token} is not a JSON number")

    try:
        parsed = json.loads(value, parse_constant=refuse_constant)
        json.dumps(parsed, ensure_ascii=False, allow_nan=False).encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidArguments(f"{name} holds text that is not valid Unicode (an unpaired surrogate)") from exc
    except ValueError as exc:
        raise InvalidArguments(f"{name} is not valid JSON: {exc}") from exc
    return parsed


MAX_BODY_BYTES = 8_000_000


def read_body(body: str | None, body_file: str | None) -> str:
    """The body from ``--body`` or ``--body-file`` (``-`` for stdin); one of them is required."""
    from memosite.errors import InvalidArguments

    found = read_optional_body(body, body_file)
    if found is None:
        raise InvalidArguments("a body is required: --body TEXT or --body-file PATH|-")
    return found


def read_optional_body(body: str | None, body_file: str | None) -> str | None:
    """The body from ``--body`` or ``--body-file`` (``-`` for stdin); None when neither is given
    (an upsert of an existing record then keeps its body)."""
    from memosite.errors import InvalidArguments

    if body is not None and body_file is not None:
        raise InvalidArguments("give either --body or --body-file, not both")
    if body_file is not None:
        try:
            if body_file == "-":
                data = sys.stdin.buffer.read(MAX_BODY_BYTES + 1)
            else:
                with open(body_file, "rb") as handle:
                    data = handle.read(MAX_BODY_BYTES + 1)
        except OSError as exc:
            raise InvalidArguments(f"cannot read --body-file {body_file}: {exc.strerror or exc}") from exc
        if len(data) > MAX_BODY_BYTES:
            raise InvalidArguments(f"--body-file is larger than {MAX_BODY_BYTES // 1_000_000} MB")
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidArguments(f"--body-file is not UTF-8 text (byte {exc.start})") from exc
    return body
