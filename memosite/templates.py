"""The Jinja templates of the views and the site: memosite's own, overridden by a vault's.

A vault may carry ``templates/`` with files of the same names as memosite's (``rows.md.j2``,
``views/TRAPS.md.j2``, ``site/record.md.j2``, …); the vault's file wins, and ``default:<name>``
always names memosite's own, so an override can extend it. Anything rendered from templates and
kept (the view fragments in the index) is keyed by :func:`templates_checksum` of the effective set,
and each vault builds its environment for that checksum: an override that appears, changes or goes
is picked up by the next command, and by a long-running ``serve``, ``watch`` or ``mcp`` on its next
rebuild.
"""

from __future__ import annotations

import contextlib
import io
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import jinja2

from memosite.errors import StorageError
from memosite.mdtext import code_span, markdown_text
from memosite.resources import data_path
from memosite.template_files import DEFAULT_PREFIX, templates_checksum
from memosite.vault import atomic_write_bytes, warn

if TYPE_CHECKING:
    from memosite.vault import Vault


def _inline(value: Any) -> str:
    return " ".join(str(value or "").split())


def _cell(value: Any) -> str:
    return _inline(value).replace("|", "\\|")


def _day(value: Any) -> str:
    return str(value)[:10] if value else ""


def build_environment(
    override_dir: Path | None, bytecode_dir: Path | None, filters: dict[str, Callable[..., Any]]
) -> jinja2.Environment:
    """An environment over ``override_dir`` (when it exists) then memosite's templates, with
    ``default:<name>`` naming memosite's own. Compiled templates are kept in ``bytecode_dir``
    (keyed by their source's checksum), so a short-lived CLI process does not compile them."""
    builtin = jinja2.FileSystemLoader(str(data_path("templates")))
    loaders: list[jinja2.BaseLoader] = []
    if override_dir is not None and override_dir.is_dir() and not override_dir.is_symlink():
        loaders.append(jinja2.FileSystemLoader(str(override_dir)))
    loaders.append(builtin)
    defaults = jinja2.PrefixLoader({DEFAULT_PREFIX.rstrip(":"): builtin}, delimiter=":")
    env = jinja2.Environment(
        loader=jinja2.ChoiceLoader([defaults, *loaders]),
        autoescape=False,  # Markdown, not HTML: the site sanitises the rendered HTML instead
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        undefined=jinja2.Undefined,
        bytecode_cache=_bytecode_cache(bytecode_dir),
    )
    env.filters.update(inline=_inline, cell=_cell, day=_day, md=markdown_text, mdcode=code_span, **filters)
    return env


class _NoFollowBytecodeCache(jinja2.FileSystemBytecodeCache):
    """Jinja's file cache, but a cache file is never read or written through a symlink: it is read
    with ``O_NOFOLLOW`` and written atomically (a rename replaces a planted link, not its target)."""

    def load_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        try:
            fd = os.open(self._get_cache_filename(bucket), os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        except OSError:
            return
        with os.fdopen(fd, "rb") as handle:
            bucket.load_bytecode(handle)

    def dump_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        buffer = io.BytesIO()
        bucket.write_bytecode(buffer)
        with contextlib.suppress(StorageError):  # a cache, not a requirement
            atomic_write_bytes(Path(self._get_cache_filename(bucket)), buffer.getvalue(), durable=False)


def _bytecode_cache(directory: Path | None) -> jinja2.BytecodeCache | None:
    if directory is None:
        return None
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        warn(f"template cache {directory.name} not used: {exc}")
        return None  # a cache, not a requirement
    return _NoFollowBytecodeCache(str(directory))


def environment_for(vault: Vault, filters: dict[str, Callable[..., Any]]) -> tuple[jinja2.Environment, str]:
    """The vault's environment for its current templates, and their checksum (one environment per
    vault object and checksum: an edited override gets a new one)."""
    override = vault.root / "templates"
    checksum = templates_checksum(override)  # the same as templates_checksum_for(vault)
    cached: tuple[str, jinja2.Environment] | None = getattr(vault, "_templates", None)
    if cached is not None and cached[0] == checksum:
        return cached[1], checksum
    env = build_environment(override, vault.internal_path("jinja-cache"), filters)
    object.__setattr__(vault, "_templates", (checksum, env))
    return env, checksum
