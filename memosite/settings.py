"""The one table of a vault's settings: each key, whose it is (the team's or this machine's), what
its values may be and its default.

**Team policy** lives in ``config.json``: it is committed and synced, so every machine of a team
keeps records for as long, reviews the same kinds and fits the brief in the same budget. **This
machine's settings** live in ``config.local.json`` beside it, which git never carries: whether and
where this machine syncs (a remote URL may hold credentials; a path is only meaningful here), how
it pushes, and where its session logs are. A machine setting found in ``config.json`` is never
used from there (see :mod:`memosite.config`).

Values are checked here, in one place, whether they come from a file or from ``memosite config
set``: a problem is one sentence naming what a value must be.
"""

from __future__ import annotations

import copy
import difflib
import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from memosite.kinds import KINDS

Scope = Literal["team", "machine"]
# What a value is: it decides the check, how `config set` reads text, and how `config list` shows it.
ValueKind = Literal["days", "seconds", "count", "bytes", "bool", "kinds", "choice", "remote", "branch", "path"]

CONFIG_FILE = "config.json"
MACHINE_FILE = "config.local.json"
SCOPE_FILES: dict[Scope, str] = {"team": CONFIG_FILE, "machine": MACHINE_FILE}


@dataclass(frozen=True)
class Setting:
    """One setting: ``key`` is its dotted path in the file (``ttl.scratchDays``)."""

    key: str
    scope: Scope
    kind: ValueKind
    default: Any
    help: str
    choices: tuple[str, ...] = ()
    minimum: float = 0
    maximum: float = math.inf
    review: bool = False  # part of the review policy: loosening it waits for a person here

    @property
    def section(self) -> str:
        return self.key.split(".", 1)[0]

    @property
    def name(self) -> str:
        return self.key.split(".", 1)[1]

    @property
    def nullable(self) -> bool:
        return self.default is None

    @property
    def file(self) -> str:
        return SCOPE_FILES[self.scope]


_DAYS_MAX = 36_500.0  # a century: far beyond any retention, well inside what a date can hold

SETTINGS: tuple[Setting, ...] = (
    Setting("ttl.scratchDays", "team", "days", 7, "days a scratch record lives", maximum=_DAYS_MAX),
    Setting("ttl.reviewDays", "team", "days", 14, "days a review record lives", maximum=_DAYS_MAX),
    Setting(
        "review.required",
        "team",
        "kinds",
        [],
        "kinds whose records an agent writes wait for a person's review",
        review=True,
    ),
    Setting(
        "review.briefPending",
        "team",
        "bool",
        True,
        "whether the brief shows records waiting for review (marked unreviewed)",
        review=True,
    ),
    Setting("bootstrap.maxBytes", "team", "bytes", 8192, "size budget of the brief", minimum=512, maximum=2**30),
    Setting("sessions.keep", "team", "count", 50, "ended sessions retention keeps", maximum=10**9),
    Setting("sessions.maxAgeDays", "team", "days", 30, "days an ended session is kept", maximum=_DAYS_MAX),
    Setting("sessions.capEvents", "team", "count", 10_000, "events a session log holds (0: no cap)", maximum=10**9),
    Setting(
        "sessions.capBytes", "team", "bytes", 16 * 1024 * 1024, "bytes a session log holds (0: no cap)", maximum=2**40
    ),
    Setting("vaultGit.enabled", "machine", "bool", False, "whether this machine commits the vault to git"),
    Setting("vaultGit.atomic", "machine", "bool", True, "one commit per change (false: batched)"),
    Setting("vaultGit.remote", "machine", "remote", None, "the remote this machine syncs with (default: origin)"),
    Setting("vaultGit.branch", "machine", "branch", None, "the remote's branch (default: chosen by sync)"),
    Setting("vaultGit.push", "machine", "choice", "manual", "manual: at sync; auto: after writes", ("manual", "auto")),
    Setting(
        "vaultGit.pushDelaySeconds", "machine", "seconds", 10, "quiet time before an automatic push", maximum=86_400
    ),
    Setting("sessions.root", "machine", "path", None, "sessions root to use (relative to the working directory)"),
    # Whether meaning ranks beside words depends on what this machine installed (memosite[semantic]).
    Setting("search.semantic", "machine", "bool", True, "rank by meaning as well as words (memosite[semantic])"),
)

BY_KEY: dict[str, Setting] = {setting.key: setting for setting in SETTINGS}
SECTIONS: tuple[str, ...] = tuple(dict.fromkeys(setting.section for setting in SETTINGS))
MACHINE_KEYS: tuple[str, ...] = tuple(s.key for s in SETTINGS if s.scope == "machine")
TEAM_KEYS: tuple[str, ...] = tuple(s.key for s in SETTINGS if s.scope == "team")
REVIEW_KEYS: tuple[str, ...] = tuple(s.key for s in SETTINGS if s.review)


def _defaults(scope: Scope | None) -> dict[str, Any]:
    tree: dict[str, Any] = {}
    for setting in SETTINGS:
        if scope is None or setting.scope == scope:
            tree.setdefault(setting.section, {})[setting.name] = copy.deepcopy(setting.default)
    return tree


# What a new config.json holds (every team setting at its default), what this machine starts
# from, and both together (the effective settings of a vault nobody configured).
TEAM_DEFAULTS: dict[str, Any] = _defaults("team")
MACHINE_DEFAULTS: dict[str, Any] = _defaults("machine")
DEFAULT_CONFIG: dict[str, Any] = _defaults(None)


# --- reading dotted keys out of nested objects -------------------------------------------------

MISSING: Any = object()


def lookup(tree: Mapping[str, Any], key: str) -> Any:
    """The value at dotted ``key`` in ``tree``, or :data:`MISSING`."""
    section, _, name = key.partition(".")
    holder = tree.get(section)
    if not isinstance(holder, Mapping) or name not in holder:
        return MISSING
    return holder[name]


def present_keys(tree: Mapping[str, Any], keys: tuple[str, ...]) -> list[str]:
    """Which of ``keys`` ``tree`` holds."""
    return [key for key in keys if lookup(tree, key) is not MISSING]


def without(tree: Mapping[str, Any], keys: tuple[str, ...] | list[str]) -> dict[str, Any]:
    """A copy of ``tree`` without ``keys`` (a section left empty by it goes too)."""
    out = copy.deepcopy(dict(tree))
    for key in keys:
        section, _, name = key.partition(".")
        holder = out.get(section)
        if isinstance(holder, dict) and name in holder:
            del holder[name]
            if not holder:
                del out[section]
    return out


def with_value(tree: Mapping[str, Any], key: str, value: Any) -> dict[str, Any]:
    """A copy of ``tree`` with ``key`` set to ``value`` (its section made when missing)."""
    out = copy.deepcopy(dict(tree))
    section, _, name = key.partition(".")
    holder = out.get(section)
    if not isinstance(holder, dict):
        holder = out[section] = {}
    holder[name] = copy.deepcopy(value)
    return out


def settings_text(tree: Mapping[str, Any]) -> str:
    """How memosite writes a settings file (``config.json``, ``config.local.json``)."""
    return json.dumps(tree, indent=2, ensure_ascii=False) + "\n"


# --- checking values ---------------------------------------------------------------------------

# A git branch name, a safe subset: no "..", no leading "-", no ref-syntax characters.
BRANCH_RE = re.compile(r"^(?!-)(?!.*\.\.)(?!.*//)(?!.*@\{)[A-Za-z0-9._/-]{1,200}(?<![./])$")
# git's "<transport>::<address>" runs the program git-remote-<transport> (ext:: runs any command).
_TRANSPORT_HELPER_RE = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*::")
_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f]")


def remote_problem(value: object) -> str | None:
    """Why ``value`` cannot be ``vaultGit.remote`` (None: it can): a remote's name, or a URL or path
    that git cannot mistake for an option or a command."""
    if not isinstance(value, str) or not value.strip():
        return "must be a URL, a path or a remote's name"
    if value != value.strip():
        return "must not start or end with spaces"
    if value.startswith("-"):
        return "must not start with '-' (git would read it as an option)"
    if _CONTROL_RE.search(value):
        return "must not hold control characters"
    if _TRANSPORT_HELPER_RE.match(value):
        return "must not name a git transport helper ('<helper>::…' runs a program)"
    return None


def branch_problem(value: object) -> str | None:
    """Why ``value`` cannot be ``vaultGit.branch`` (None: it can)."""
    if not isinstance(value, str) or not BRANCH_RE.match(value):
        return "must be a branch name (letters, digits, '.', '_', '/', '-'; not starting with '-', no '..')"
    return None


def _number_problem(setting: Setting, value: object) -> str | None:
    integral = setting.kind in ("count", "bytes")
    wanted = "a non-negative whole number" if integral else "a non-negative number"
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return f"must be {wanted}"
    if (integral and not isinstance(value, int)) or value < 0:
        return f"must be {wanted}"
    if value < setting.minimum:
        return f"must be at least {setting.minimum:g}"
    if value > setting.maximum:
        return f"must be at most {setting.maximum:g}"
    return None


def value_problem(setting: Setting, value: object) -> str | None:
    """Why ``value`` cannot be ``setting``'s value (None: it can). ``None`` is fine for a setting
    whose default is None (unset)."""
    if value is None and setting.nullable:
        return None
    kind = setting.kind
    if kind in ("days", "seconds", "count", "bytes"):
        return _number_problem(setting, value)
    if kind == "bool":
        return None if isinstance(value, bool) else "must be true or false"
    if kind == "kinds":
        if not isinstance(value, list) or not all(isinstance(item, str) and item in KINDS for item in value):
            return f"must be a list of kinds ({', '.join(KINDS)})"
        return None
    if kind == "choice":
        return None if value in setting.choices else "must be " + " or ".join(f'"{c}"' for c in setting.choices)
    if kind == "remote":
        return remote_problem(value)
    if kind == "branch":
        return branch_problem(value)
    if not isinstance(value, str) or not value.strip() or _CONTROL_RE.search(value):
        return "must be a directory path"
    return None


# --- finding a setting by name -----------------------------------------------------------------


def suggest_keys(text: str) -> list[str]:
    """Settings a mistyped ``text`` may mean: the same key in another case, a key whose last part
    it is, the closest spellings within the section it names, else the closest keys."""
    folded = text.casefold()
    exact = [key for key in BY_KEY if key.casefold() == folded]
    if exact:
        return exact
    section, _, name = folded.rpartition(".")
    tails = [key for key in BY_KEY if key.split(".", 1)[1].casefold() == name]
    names = {key.split(".", 1)[1].casefold(): key for key in BY_KEY if key.split(".", 1)[0].casefold() == section}
    close = [names[n] for n in difflib.get_close_matches(name, list(names), n=2, cutoff=0.6)] if names else []
    if not close:
        lowered = {key.casefold(): key for key in BY_KEY}
        close = [lowered[k] for k in difflib.get_close_matches(folded, list(lowered), n=2, cutoff=0.75)]
    return list(dict.fromkeys(tails + close))[:3]


def keys_in_section(section: str) -> list[str]:
    return [setting.key for setting in SETTINGS if setting.section.casefold() == section.casefold()]
