"""Creating a store as ``stormbuffer-core``'s ``initialize_store`` does, and completing an old one.

Under the store's lock: create ``records/``; write ``store.toml`` if it is missing (a new UUIDv7
project id; the name of the directory holding ``.sbuf`` as the project name unless one is
given), else read and check it. A project store then gets its ``.gitignore`` if it has none,
and a shared store's existing one is checked. Initialising again is harmless. A store memosite
wrote with its old ``name`` key is rewritten with Stormbuffer's keys, identity kept.
"""

from __future__ import annotations

import os
from pathlib import Path

from memosite.errors import InvalidArguments, InvalidRecord, StorageError
from memosite.stormbuffer.locate import STORE_DIR_NAME
from memosite.stormbuffer.lock import mutation_lock
from memosite.stormbuffer.storefile import (
    GITIGNORE_FILE,
    RECORDS_DIR,
    STORE_FILE,
    StoreConfig,
    StoreInfo,
    gitignore_problem,
    gitignore_text,
    is_legacy,
    load_store_toml,
    project_name_problem,
    read_store_config,
    upgrade_legacy,
)
from memosite.stormbuffer.values import is_canonical_project_id, new_uuid
from memosite.vault import atomic_write_text


def initialize_store(
    path: Path,
    *,
    name: str | None = None,
    shared: bool = False,
    global_store: bool = False,
    project_id: str | None = None,
) -> StoreInfo:
    """Create or complete the store at ``path``; ``project_id`` is for a new store only."""
    scope = "global" if global_store else "project"
    if global_store and shared:
        raise InvalidArguments("shared stores require project scope; the global store is always private")
    if global_store and (name is not None or project_id is not None):
        raise InvalidArguments("the global store has no project identity")
    if project_id is not None and not is_canonical_project_id(project_id):
        raise InvalidArguments(
            f"invalid project_id {project_id!r}: not a canonical lower-case UUID", details={"field": "project_id"}
        )
    try:
        (path / RECORDS_DIR).mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StorageError(f"cannot create {path}: {exc.strerror or exc}") from exc
    created = upgraded = False
    store_file = path / STORE_FILE
    with mutation_lock(path, require_store=False):
        if store_file.exists():
            data = load_store_toml(store_file)
            if not global_store and is_legacy(data):
                config = upgrade_legacy(data)
                atomic_write_text(store_file, config.render())
                upgraded = True
            else:
                config = read_store_config(store_file, scope)
            if shared and config.visibility != "shared":
                raise InvalidArguments(
                    f"store is already {config.visibility}; explicit shared initialization requires a shared store"
                )
            if name is not None and name != config.project_name:
                raise InvalidArguments(
                    f"a store already exists at {path} (name {config.project_name!r}); "
                    "use `memosite stormbuffer rename` to change its name"
                )
        else:
            config = new_config(path, name, shared=shared, global_store=global_store, project_id=project_id)
            atomic_write_text(store_file, config.render())
            created = True
    if config.is_project:
        ensure_gitignore(path, config.visibility)
    return StoreInfo(path=path, config=config, created=created, upgraded=upgraded)


def new_config(
    path: Path, name: str | None, *, shared: bool, global_store: bool, project_id: str | None = None
) -> StoreConfig:
    if global_store:
        return StoreConfig(scope="global", visibility="private")
    default = path.absolute().parent.name if path.name == STORE_DIR_NAME else path.absolute().name
    project_name = name if name is not None else default
    problem = project_name_problem(project_name)
    if problem:
        hint = "" if name is not None else f" (from the directory name {default!r}); pass --name"
        raise InvalidArguments(f"invalid project_name: {problem}{hint}", details={"field": "project_name"})
    return StoreConfig(
        scope="project", visibility="shared" if shared else "private",
        project_id=project_id or new_uuid(), project_name=project_name,
    )  # fmt: skip


def ensure_gitignore(path: Path, visibility: str) -> None:
    """Write the store's ignore rules if it has none; check a shared store's existing ones."""
    ignore = path / GITIGNORE_FILE
    if ignore.exists():
        problem = gitignore_problem(path, visibility)
        if problem:
            raise InvalidRecord(f"{ignore}: {problem}", details={"field": "gitignore"})
        return
    try:
        fd = os.open(ignore, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        return
    except OSError as exc:
        raise StorageError(f"cannot write {ignore}: {exc.strerror or exc}") from exc
    with os.fdopen(fd, "wb") as handle:
        handle.write(gitignore_text(visibility).encode("utf-8"))
        handle.flush()
        os.fsync(handle.fileno())
