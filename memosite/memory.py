"""memosite from Python: :class:`Memory`, one vault and one project, the calls the CLI makes.

``Memory`` is a composition root, as a CLI command and the MCP server are: it resolves the vault
and the project once (the arguments, else ``MEMOSITE_VAULT`` / ``MEMOSITE_PROJECT`` and the working
directory, as the CLI does), says who acts, and passes both down to the core. Each method returns
the typed result the CLI prints with ``--json`` (``.to_json()`` gives that JSON) and raises the one
error hierarchy (:class:`memosite.errors.MemositeError` and its subclasses, each with a stable
``code``).

Who acts: a Python caller is the person at this machine (their git identity authors the vault's
commits), unless the program runs in a coding agent's shell tool (the markers of
:data:`memosite.provenance.AGENT_SHELL_MARKERS`): then it is that agent, as a CLI call would be,
and its writes wait for review where the team asks for it. ``actor=`` says otherwise outright
(``Actor.mcp_client("my-bot", "1.0", None)`` for an agent). Reads count no hits: hits are an
agent session's (:mod:`memosite.hits`).

The core modules are imported by the method that needs them, so ``import memosite`` and
``Memory(...)`` load no site generator, no template engine and no MCP SDK.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable, Collection, Mapping, Sequence
from datetime import date
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from memosite.config import resolve_project, resolve_vault_root, working_directory
from memosite.errors import InvalidArguments
from memosite.provenance import Actor, detect_agent_shell
from memosite.schema import shown
from memosite.sync.autopush import register_auto_push
from memosite.vault import Vault
from memosite.workspace import check_vault_placement, find_work_tree

if TYPE_CHECKING:
    from memosite.bootstrap import BootstrapResult
    from memosite.curator import GcResult
    from memosite.lookup import StoredRecord
    from memosite.search import SearchResult
    from memosite.site.build import BuildResult
    from memosite.store import ForgetResult, UpsertResult


class Memory:
    """One project of one vault (see the module docstring).

    ``vault`` is the vault's directory (created when missing, as the first ``memosite upsert``
    does); ``project`` the project id. Use it as a context manager, or call :meth:`close`.
    """

    def __init__(
        self,
        vault: str | Path | None = None,
        project: str | None = None,
        *,
        actor: Actor | None = None,
        env: Mapping[str, str] | None = None,
    ) -> None:
        if vault is not None and not isinstance(vault, (str, os.PathLike)):
            raise InvalidArguments(f"vault must be a path (text or a pathlib.Path), not {type(vault).__name__}")
        if vault is not None and not os.fspath(vault).strip():
            raise InvalidArguments("vault must not be empty (None means MEMOSITE_VAULT, else ~/.memosite)")
        if actor is not None and not isinstance(actor, Actor):
            raise InvalidArguments(
                f"actor must be a memosite.Actor (Actor.mcp_client(name, version, None)), not {type(actor).__name__}"
            )
        self.env = dict(os.environ if env is None else env)
        root = resolve_vault_root(vault, self.env)
        product_root = find_work_tree(working_directory(), self.env)
        check_vault_placement(root, product_root)  # refused before anything is created
        if product_root is not None and product_root.resolve().is_relative_to(root.resolve()):
            product_root = None  # the vault's own repository is no product, as for the CLI
        # In <vault>/projects/<p>/ (or deeper) the project is <p>, as for the CLI.
        self.project = resolve_project(project, self.env, vault_root=root).id
        register_auto_push()  # this program's commits are pushed when the vault says so
        self.vault = Vault.open(root)
        self.vault.product_root = product_root
        self.vault.actor_source = (lambda: actor) if actor is not None else self._actor

    def _actor(self) -> Actor:
        # Asked when a change first needs it: a program that only reads runs no git.
        from memosite.gitidentity import git_identity

        shell = detect_agent_shell(self.env)
        if shell is not None:
            return Actor.in_agent_shell(shell)
        return Actor.person(git_identity(self.env, self.vault.product_root))

    @property
    def actor(self) -> Actor | None:
        """Who changes the vault through this object."""
        return self.vault.actor

    # --- records -----------------------------------------------------------------------------
    def upsert(
        self,
        *,
        kind: str,
        body: str | None = None,
        title: str | None = None,
        slug: str | None = None,
        cites: Sequence[str] = (),
        path: str | None = None,
        allow_duplicate: bool = False,
        **fields: Any,
    ) -> UpsertResult:
        """Create or update a record (``memosite upsert``): ``fields`` are front matter
        (``severity="high"``, ``tags=[...]``, ``pathPatterns=[...]``, ``supersedes=...``). ``body``
        None keeps an existing record's body; ``cites`` pins code of the product repository."""
        from memosite.store import upsert_record

        if fields.get("source") not in (None, "agent") and self.vault.actor is not None:
            self.vault.actor.require_person(f"upsert with source {fields['source']}")
        for name, value in (("title", title), ("body", body)):
            if value is not None and not isinstance(value, str):
                raise InvalidArguments(f"{name} must be text, not {type(value).__name__}", details={"field": name})
        _check_flags(allow_duplicate=allow_duplicate)
        for name, value in fields.items():
            _check_plain(name, value)
        frontmatter = {**fields, **({"title": title} if title is not None else {})}
        return upsert_record(
            self.vault,
            self.project,
            kind=kind,
            body=body,
            slug=slug,
            frontmatter=frontmatter,
            path=path,
            allow_duplicate=allow_duplicate,
            cites=list(cites),
        )

    def get(self, id: str) -> StoredRecord:
        """One record by id (``memosite get``), annotated ``expired`` and ``pending``."""
        from memosite.lookup import get_record

        return get_record(self.vault, self.project, record_id=id)

    def search(self, query: str | None = None, *, all_projects: bool = False, **filters: Any) -> SearchResult:
        """Records matching ``query`` and the filters (``kinds``, ``status``, ``tags``, ``path``,
        ``include_expired``, ``as_of``, ``sort``, ``limit``, ``include_pending``, ``author``,
        ``explain``), as ``memosite search`` finds them."""
        from memosite.search import search_records

        _check_flags(all_projects=all_projects)
        _check_options("search", filters, search_records)
        return search_records(self.vault, None if all_projects else self.project, query, **filters)

    def forget(self, id: str, purge: bool = False) -> ForgetResult:
        """Archive a record, or with ``purge`` delete it (a tombstone kept): ``memosite forget``."""
        from memosite.store import forget_record

        _check_flags(purge=purge)
        return forget_record(self.vault, self.project, record_id=id, purge=purge)

    def restore(self, id: str) -> UpsertResult:
        """Bring an archived record back to active (``memosite restore``)."""
        from memosite.store import restore_record

        return restore_record(self.vault, self.project, record_id=id)

    # --- the project as a whole ----------------------------------------------------------------
    def bootstrap(self, **options: Any) -> BootstrapResult:
        """The session brief (``memosite bootstrap``); ``options``: ``query``, ``slug``, ``path``,
        ``max_bytes``, ``max_tokens``, ``fresh_only``."""
        from memosite.bootstrap import build_bootstrap

        _check_options("bootstrap", options, build_bootstrap)
        return build_bootstrap(self.vault, self.project, **options)

    def gc(self, dry_run: bool = False, *, purge: bool = False) -> GcResult:
        """One gc pass (``memosite gc``): expired records swept, shipped plans compacted, logs
        rolled up by month. ``dry_run`` changes nothing and reports the same counts."""
        from memosite.curator import run_gc

        _check_flags(dry_run=dry_run, purge=purge)
        return run_gc(self.vault, self.project, dry_run=dry_run, purge=purge)

    def build(
        self, out: str | Path, *, engine: str | None = None, all_projects: bool = False, **options: Any
    ) -> BuildResult:
        """Build the published site into ``out`` (``memosite build``): this project, or every
        project of the vault. ``options``: ``config_file``, ``strict``, ``site_url``,
        ``site_name``, ``include_pending``. Nothing changes at ``out`` unless the build succeeds."""
        from memosite.site.engines import build_with_engine, choose_engine

        _check_flags(all_projects=all_projects)
        _check_options("build", options, build_with_engine, set_here=("out_dir", "projects"))
        projects = None if all_projects else [self.project]
        return build_with_engine(self.vault, choose_engine(engine), out_dir=Path(out), projects=projects, **options)

    # --- lifetime ------------------------------------------------------------------------------
    def close(self) -> None:
        """Close the index connection (the object may be used again: it reopens)."""
        self.vault.close()

    def __enter__(self) -> Memory:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Memory(vault={str(self.vault.root)!r}, project={self.project!r})"


def _check_options(
    method: str, given: Mapping[str, Any], core: Callable[..., Any], set_here: Collection[str] = ()
) -> None:
    # The options pass through to the core function: a name it does not take would surface as a
    # TypeError naming that inner function, which the caller never called.
    parameters = inspect.signature(core).parameters
    takes = [
        name
        for name, parameter in parameters.items()
        if parameter.kind is inspect.Parameter.KEYWORD_ONLY and name not in set_here
    ]
    for name, value in given.items():
        if name not in takes:
            raise TypeError(
                f"Memory.{method}() got an unexpected keyword argument {name!r}; it takes {', '.join(takes)}"
            )
        if parameters[name].annotation in ("bool", bool):
            _check_flags(**{name: value})


def _check_flags(**flags: Any) -> None:
    # "no" is true to Python: a switch given as anything but True or False is refused, as the
    # MCP server refuses it, rather than read by its truthiness.
    for name, value in flags.items():
        if not isinstance(value, bool):
            raise InvalidArguments(f"{name} must be True or False, not {shown(value)}", details={"field": name})


# What a front-matter value may be: what JSON (the CLI's --frontmatter, an MCP call) can carry,
# and dates. Python can pass anything else, which the YAML writer would refuse half way.
_PLAIN_VALUES = (str, int, float, bool, date, type(None))


def _check_plain(name: str, value: Any) -> None:
    if isinstance(value, Mapping):
        for key, inner in value.items():
            _check_plain(name, key)
            _check_plain(name, inner)
    elif isinstance(value, (list, tuple)):
        for inner in value:
            _check_plain(name, inner)
    elif not isinstance(value, _PLAIN_VALUES):
        raise InvalidArguments(
            f"invalid {name}: {shown(value)} is not text, a number, true/false, a date, a list or a mapping",
            details={"field": name},
        )
