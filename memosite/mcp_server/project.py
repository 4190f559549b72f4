"""Which project an MCP session works on, and who the agent is.

A desktop client starts the server wherever it likes — often in ``/`` or the home directory, which
say nothing about the work. So the project is, in this order: the one pinned at start
(``--project`` or ``MEMOSITE_PROJECT``); derived from the client's first root (``roots/list``), as
the CLI derives it from its directory; derived from the server's own directory unless that is
``/`` or the home directory; else none, and tool calls that need one are refused with how to pin
it. The product repository (whose work tree the vault must not lie in) comes from the same place.
"""

from __future__ import annotations

import logging
import sys
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import anyio

from memosite.config import ProjectIdentity, resolve_project
from memosite.errors import InvalidArguments
from memosite.provenance import Actor
from memosite.workspace import find_work_tree

logger = logging.getLogger("memosite.mcp")

ROOTS_TIMEOUT_SECONDS = 5.0
NO_PROJECT = (
    "no project: the server was started in {where}, which is no project, and the client named no roots;"
    " pin one in the server's configuration with `memosite mcp --project ID` (or MEMOSITE_PROJECT=ID),"
    " or give projectId in the call"
)


@dataclass(frozen=True)
class SessionProject:
    """The project of this session (None: unknown), why, and the product repository."""

    identity: ProjectIdentity | None
    reason: str
    product_root: Path | None = None
    awaiting_roots: bool = False  # unknown until the client was asked for its roots


def is_meaningless_directory(path: Path, env: Mapping[str, str]) -> bool:
    """``/`` and the home directory say nothing about which project is being worked on."""
    home = env.get("HOME")
    resolved = path.resolve()
    return resolved == Path(resolved.anchor) or (home is not None and resolved == Path(home).resolve())


def from_directory(directory: Path, env: Mapping[str, str], reason: str) -> SessionProject:
    """The project a directory means, as the CLI would derive it there."""
    unpinned = {key: value for key, value in env.items() if key != "MEMOSITE_PROJECT"}
    identity = resolve_project(None, unpinned, cwd=directory)
    return SessionProject(identity, f"{reason} {directory}", find_work_tree(directory, env))


def at_start(project_arg: str | None, env: Mapping[str, str], cwd: Path) -> SessionProject:
    """What is known before any client speaks: a pinned project, or the server's directory."""
    if project_arg or env.get("MEMOSITE_PROJECT"):
        identity = resolve_project(project_arg, env, cwd=cwd)
        source = "--project" if project_arg else "MEMOSITE_PROJECT"
        return SessionProject(identity, f"pinned with {source}", find_work_tree(cwd, env))
    if is_meaningless_directory(cwd, env):
        return SessionProject(None, NO_PROJECT.format(where=cwd), awaiting_roots=True)
    return from_directory(cwd, env, "from the server's directory")


def root_directory(uri: str) -> Path | None:
    """A ``file://`` root as a local directory (other schemes name nothing on this machine)."""
    parsed = urlparse(uri)
    if parsed.scheme != "file":
        return None
    path = Path(unquote(parsed.path))
    return path if path.is_dir() else None


async def from_roots(session: Any, env: Mapping[str, str]) -> SessionProject | None:
    """The project of the client's first usable root, or None when it names none."""
    capabilities = getattr(session, "client_capabilities", None)
    if capabilities is None or getattr(capabilities, "roots", None) is None:
        return None
    try:
        with warnings.catch_warnings():
            # Deprecated by the newest protocol revision, still how current clients name their roots.
            warnings.simplefilter("ignore")
            with anyio.fail_after(ROOTS_TIMEOUT_SECONDS):
                result = await session.list_roots()
    except Exception as exc:  # a client that cannot answer leaves the project to the other rules
        logger.info("roots/list failed: %r", exc)
        return None
    for root in result.roots:
        directory = root_directory(str(root.uri))
        if directory is not None and not is_meaningless_directory(directory, env):
            return from_directory(directory, env, "from the client's root")
    return None


def agent_actor(session: Any, session_id: str) -> Actor:
    """The agent behind this session, from its ``initialize`` request's client info."""
    params = getattr(session, "client_params", None)
    info = getattr(params, "client_info", None) if params is not None else None
    return Actor.mcp_client(getattr(info, "name", None), getattr(info, "version", None), session_id)


def announce(project: SessionProject) -> None:
    """One line on stderr saying which project the server works on (stdout is the protocol's).
    Nothing while the project waits for the client's roots: that the client named none is said
    only once it was asked."""
    if project.identity is None and project.awaiting_roots:
        return
    if project.identity is not None:
        sys.stderr.write(f"memosite: project {project.identity.id} ({project.reason})\n")
    else:
        sys.stderr.write(f"memosite: {project.reason}\n")
    sys.stderr.flush()


def require(project: SessionProject) -> str:
    if project.identity is None:
        raise InvalidArguments(project.reason)
    return project.identity.id


__all__ = [
    "SessionProject",
    "agent_actor",
    "announce",
    "at_start",
    "from_roots",
    "is_meaningless_directory",
    "require",
    "root_directory",
]
