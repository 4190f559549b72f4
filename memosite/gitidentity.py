"""The person at this machine, as git knows them: the identity a CLI call acts for."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from pathlib import Path

from memosite.gitcommand import run_git


def git_identity(env: Mapping[str, str], cwd: Path | None = None) -> str | None:
    """The person's git identity (``Name <email>``): ``GIT_AUTHOR_NAME``, else ``git config``."""
    name = env.get("GIT_AUTHOR_NAME")
    email = env.get("GIT_AUTHOR_EMAIL")
    if not name:
        configured = _git_user(cwd)
        name = configured.get("user.name") or None  # set empty (to blank a global one): no name
        email = email or configured.get("user.email") or None
    if not name:
        return None
    return f"{name} <{email}>" if email else name


@functools.lru_cache(maxsize=8)
def _git_user(cwd: Path | None) -> dict[str, str]:
    """``user.name`` and ``user.email`` as git resolves them here, asked of one git process (the
    last value of a key wins, as ``git config --get`` has it)."""
    try:
        done = run_git(cwd or Path.cwd(), "config", "--null", "--get-regexp", args=[r"^user\.(name|email)$"])
    except OSError:
        return {}
    found: dict[str, str] = {}
    for entry in done.stdout.split("\0"):
        key, _, value = entry.partition("\n")
        if key:
            found[key.strip().lower()] = value.strip()  # an empty value counts: it blanks earlier ones
    return found
