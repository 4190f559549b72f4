"""What a shared vault tree may hold: the one allowlist of team sync.

A vault travels between machines as a git tree; everything in it that memosite (or git) reads is
data, and only this list of paths may be in it. Each is a regular, non-executable file (git mode
``100644``; never a symlink, a submodule or an executable), its path free of control characters
and backslashes:

* ``config.json`` — the team's configuration, only as a JSON object whose team settings this
  machine loads (:func:`memosite.vaultconfig.team_settings_problem`: one it could not read would
  stop every command here) — and its conflict sidecar ``config.conflict.<id>.json``;
* ``.gitignore`` — only memosite's own patterns (:data:`KNOWN_IGNORE_LINES`: the managed block,
  and the lines an older memosite wrote; comments and blank lines aside), never a negation or a
  pattern of anyone else's: a ``.gitignore`` decides what this machine commits next. Its conflict
  sidecar ``.gitignore.conflict.<id>`` is data;
* ``.memosite/tombstones.jsonl`` — the purges, merged as a union of lines. Nothing else under
  ``.memosite/`` (the index, caches, locks, state: this machine's);
* ``templates/…/<name>.j2`` — a team's template overrides (rendered in a sandbox), with names of
  ASCII letters, digits, ``.``, ``_`` and ``-`` that do not start with a dot;
* under ``projects/<project>/`` (a valid project id):

  - the compiled views at its root (``TRAPS.md``, ``DECISIONS.md``, ``INDEX.md``, ``PROMPTS.md``,
    ``SESSIONS.md``, and a large kind's monthly inventory ``INDEX.<kind dir>.<YYYY-MM>.md``);
  - in a kind directory (``traps/``, ``decisions/``, … ``sessions/``) any ``<name>.md`` whose name
    does not start with a dot: records, ``<slug>.accepted.md`` review files and
    ``<slug>.conflict.<id>.md`` sidecars;
  - in ``sessions/<session id>/``, the session's ``events.jsonl`` (its manifest, index and
    derived files are rebuilt on each machine).

Everything else is refused: ``.gitattributes`` and ``.gitmodules`` anywhere, another
``.gitignore``, ``.memosite/index.sqlite`` or a template cache, files outside ``projects/`` but the
ones above, hidden files, symlinks, submodules, executables. :func:`refusal` says why a path and
mode may not be shared; :mod:`memosite.sync.incoming` applies it to every commit that arrives, and
:mod:`memosite.vaultgit` to what this machine commits.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from memosite.kinds import RECORD_DIRS, is_view_file
from memosite.settings import CONFIG_FILE
from memosite.vault import DISPOSABLE_PATTERNS, INTERNAL_DIR, TEMP_PREFIX, TOMBSTONES_FILE
from memosite.vaultconfig import team_settings_problem

REGULAR_FILE = "100644"
TOMBSTONES_PATH = f"{INTERNAL_DIR}/{TOMBSTONES_FILE}"
GITIGNORE_PATH = ".gitignore"
CONFIG_PATH = CONFIG_FILE
# The paths whose content decides whether they may be shared (see refusal).
CONTENT_CHECKED = frozenset({GITIGNORE_PATH, CONFIG_PATH})
SESSION_EVENTS = "events.jsonl"
_MODES = {
    "100755": "an executable file",
    "120000": "a symbolic link",
    "160000": "a submodule (gitlink)",
    "040000": "a directory entry",
}
# What earlier memosite versions wrote into .gitignore before the managed block existed.
LEGACY_IGNORE_LINES = (
    ".memosite/index.sqlite*",
    ".memosite/vault.lock",
    ".memosite/pending-commits",
    f"{TEMP_PREFIX}*",
)
KNOWN_IGNORE_LINES = frozenset((*DISPOSABLE_PATTERNS, *LEGACY_IGNORE_LINES))

_PROJECT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
_SESSION_DIR = re.compile(r"^[A-Za-z0-9_-][A-Za-z0-9._-]{0,199}$")
_TEMPLATE_PART = re.compile(r"^[A-Za-z0-9_-][A-Za-z0-9._-]{0,199}$")
_UNSAFE_CHARACTERS = re.compile(r"[\x00-\x1f\x7f\\]")
_SIDE_ID = r"\.conflict\.[0-9a-f]{4,40}"
_ROOT_FILES = re.compile(rf"^(?:config\.json|config{_SIDE_ID}\.json|\.gitignore{_SIDE_ID})$")

ReadBlob = Callable[[], bytes]


def refusal(path: str, mode: str, read: ReadBlob | None = None) -> str | None:
    """Why ``path`` (vault-relative, POSIX) with git ``mode`` may not be in a shared vault, or None
    when it may. ``read`` gives the file's content, asked only where the content decides (the
    ``.gitignore``); without it such a file passes on its path."""
    if _UNSAFE_CHARACTERS.search(path):
        return "its name holds a control character or a backslash"
    if mode != REGULAR_FILE:
        return f"it is {_MODES.get(mode, f'of git mode {mode}')}, and a shared vault holds only regular files"
    if not _allowed_path(path):
        return "it is not something a shared vault holds (records, views, sidecars, tombstones, config.json, templates)"
    if path == GITIGNORE_PATH and read is not None:
        return gitignore_refusal(read())
    if path == CONFIG_PATH and read is not None:
        return team_settings_problem(read())
    return None


def _allowed_path(path: str) -> bool:
    parts = path.split("/")
    if any(part in ("", ".", "..") for part in parts):
        return False
    if len(parts) == 1:
        return parts[0] == GITIGNORE_PATH or bool(_ROOT_FILES.match(parts[0]))
    head = parts[0]
    if head == INTERNAL_DIR:
        return path == TOMBSTONES_PATH
    if head == "templates":
        return parts[-1].endswith(".j2") and all(_TEMPLATE_PART.match(part) for part in parts[1:])
    if head != "projects" or not _PROJECT.match(parts[1]) or ".." in parts[1]:
        return False
    if len(parts) == 3:
        return is_view_file(parts[2])
    if parts[2] not in RECORD_DIRS:
        return False
    if len(parts) == 4:
        name = parts[3]
        return name.endswith(".md") and not name.startswith(".") and len(name) > len(".md")
    return (
        len(parts) == 5
        and parts[2] == "sessions"
        and bool(_SESSION_DIR.match(parts[3]))
        and ".." not in parts[3]
        and parts[4] == SESSION_EVENTS
    )


def gitignore_refusal(data: bytes) -> str | None:
    """Why a ``.gitignore`` may not be shared: a line that is not one of memosite's own patterns."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return "its .gitignore is not UTF-8 text"
    for line in text.splitlines():
        pattern = line.strip()
        if pattern and not pattern.startswith("#") and pattern not in KNOWN_IGNORE_LINES:
            return f"its .gitignore holds {pattern[:60]!r}, which is not one of memosite's own patterns"
    return None


def is_shared(path: str, mode: str = REGULAR_FILE) -> bool:
    """Whether ``path`` with ``mode`` may be in a shared vault (on its path and mode alone)."""
    return refusal(path, mode) is None
