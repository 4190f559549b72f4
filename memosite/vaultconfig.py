"""A vault's configuration on this machine: the team's ``config.json`` and this machine's
``config.local.json`` read into one :class:`VaultConfig` (the table of settings, and whose each
one is, is :mod:`memosite.settings`).

Reading writes nothing: what the first use of a vault on this machine must put on disk (the
machine file, ``config.json`` without the machine settings an older memosite kept there) is a
:class:`MachinePlan` the opening of a vault that may write carries out
(:func:`memosite.vault.carry_out_machine_plan`).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from memosite.errors import InvalidArguments
from memosite.gitfiles import git_common_dir, index_lists, origin_url
from memosite.policy import PolicyChange, ReviewPolicy, enforced, loosened
from memosite.schema import format_iso, utc_now
from memosite.settings import (
    CONFIG_FILE,
    DEFAULT_CONFIG,
    MACHINE_FILE,
    MACHINE_KEYS,
    MISSING,
    SECTIONS,
    SETTINGS,
    TEAM_KEYS,
    Scope,
    lookup,
    present_keys,
    value_problem,
    with_value,
    without,
)

PushMode = Literal["manual", "auto"]
Source = Literal["default", "team", "machine"]

# Where config.local.json keeps the review policy a person on this machine last accepted.
ACCEPTED_KEY = "acceptedPolicy"


def _deep_merge(base: dict[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    merged = copy.deepcopy(base)
    for key, value in over.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), dict):
            merged[key] = _deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


@dataclass(frozen=True)
class MachinePlan:
    """What the first use of a vault on this machine writes (see :func:`load_config`): the machine
    file, and ``config.json`` without the machine settings moved out of it (None: unchanged)."""

    machine: dict[str, Any]
    moved: tuple[str, ...] = ()
    team: dict[str, Any] | None = None
    left: tuple[str, ...] = ()  # machine settings of a fresh clone's config.json: another machine's

    def notice(self) -> str | None:
        """The one line the person is told when the plan is carried out (None: nothing to say)."""
        if self.moved:
            return (
                f"moved this machine's settings out of {CONFIG_FILE} (shared with the team) into {MACHINE_FILE}"
                f" (never shared): {', '.join(self.moved)}"
            )
        if self.left:
            return (
                f"{CONFIG_FILE} holds settings of the machine that committed them ({', '.join(self.left)}):"
                " not used here; this clone syncs with its origin (`memosite config set` to change)"
            )
        return None


@dataclass(frozen=True)
class VaultConfig:
    """The settings of one vault on this machine. ``raw`` holds the effective values: the team's
    from ``config.json`` (every key of it, known or not, machine settings aside) and this
    machine's from ``config.local.json``. ``accepted`` is the review policy a person here last
    accepted (None: none recorded), ``ignored`` the machine settings ``config.json`` holds and
    that are not used here, ``misplaced`` the team settings ``config.local.json`` holds (not used
    either), ``plan`` what the next opening that may write puts on disk."""

    raw: dict[str, Any] = field(default_factory=lambda: copy.deepcopy(DEFAULT_CONFIG))
    accepted: ReviewPolicy | None = None
    sources: Mapping[str, Source] = field(default_factory=dict)
    ignored: tuple[str, ...] = ()
    misplaced: tuple[str, ...] = ()
    plan: MachinePlan | None = None

    def _get(self, section: str, key: str) -> Any:
        return self.raw.get(section, {}).get(key, DEFAULT_CONFIG[section][key])

    def value(self, key: str) -> Any:
        """The effective value of the setting ``key`` (``ttl.scratchDays``)."""
        section, _, name = key.partition(".")
        return copy.deepcopy(self._get(section, name))

    def source(self, key: str) -> Source:
        """Where the value of ``key`` comes from: ``team`` (config.json), ``machine``
        (config.local.json) or ``default``."""
        return self.sources.get(key, "default")

    @property
    def scratch_days(self) -> float:
        return float(self._get("ttl", "scratchDays"))

    @property
    def review_days(self) -> float:
        return float(self._get("ttl", "reviewDays"))

    @property
    def team_review(self) -> ReviewPolicy:
        """The review policy ``config.json`` states (what the team last committed)."""
        return ReviewPolicy(frozenset(self._get("review", "required")), bool(self._get("review", "briefPending")))

    @property
    def review_policy(self) -> ReviewPolicy:
        """The review policy this machine enforces: the one a person here accepted, tightened by
        the team's (see :mod:`memosite.policy`)."""
        team = self.team_review
        return team if self.accepted is None else enforced(self.accepted, team)

    @property
    def loosened(self) -> list[PolicyChange]:
        """How ``config.json`` loosens review against what a person here accepted: not applied
        until a person accepts it (``memosite config accept-policy``)."""
        return [] if self.accepted is None else loosened(self.accepted, self.team_review)

    @property
    def review_required(self) -> frozenset[str]:
        """Kinds whose records an agent writes start as pending review (``review.required``)."""
        return self.review_policy.required

    @property
    def review_brief_pending(self) -> bool:
        """Whether the brief shows pending records (under their own heading) at all."""
        return self.review_policy.brief_pending

    def ttl_days(self, setting: str) -> float:
        """``ttl.<setting>`` in days (``scratchDays``, ``reviewDays``)."""
        return float(self._get("ttl", setting))

    @property
    def git_enabled(self) -> bool:
        return bool(self._get("vaultGit", "enabled"))

    @property
    def git_atomic(self) -> bool:
        return bool(self._get("vaultGit", "atomic"))

    @property
    def git_remote(self) -> str | None:
        """``vaultGit.remote``: the name of a remote of the vault's repository, or a URL or path
        any git can reach (None: the repository's ``origin``, when it has one)."""
        remote = self._get("vaultGit", "remote")
        return str(remote) if remote else None

    @property
    def git_branch(self) -> str | None:
        """``vaultGit.branch``: the branch of the remote the vault syncs with (None: the vault's
        own branch name, or the remote's only branch)."""
        branch = self._get("vaultGit", "branch")
        return str(branch) if branch else None

    @property
    def git_push(self) -> PushMode:
        """``vaultGit.push``: ``manual`` pushes at ``memosite sync`` only; ``auto`` also pushes in
        the background a short while after each write (see :mod:`memosite.sync.autopush`)."""
        return "auto" if self._get("vaultGit", "push") == "auto" else "manual"

    @property
    def git_push_delay_seconds(self) -> float:
        """How long an automatic push waits for more writes before it runs (debounce)."""
        return float(self._get("vaultGit", "pushDelaySeconds"))

    @property
    def bootstrap_max_bytes(self) -> int:
        return int(self._get("bootstrap", "maxBytes"))

    @property
    def search_semantic(self) -> bool:
        """``search.semantic``: rank by meaning as well as words when ``memosite[semantic]`` is
        installed (false: words alone, as without the extra)."""
        return self._get("search", "semantic") is not False

    @property
    def sessions_keep(self) -> int:
        return int(self._get("sessions", "keep"))

    @property
    def sessions_max_age_days(self) -> float:
        return float(self._get("sessions", "maxAgeDays"))

    @property
    def sessions_cap_events(self) -> int:
        return int(self._get("sessions", "capEvents"))

    @property
    def sessions_cap_bytes(self) -> int:
        return int(self._get("sessions", "capBytes"))


def load_config(vault_root: Path) -> VaultConfig:
    """Read ``config.json`` (team policy) and ``config.local.json`` (this machine's settings);
    missing keys take their defaults, unknown keys of ``config.json`` are kept. Writes nothing.

    A machine setting in ``config.json`` is never used from there. On the first use of a vault on
    this machine (no ``config.local.json`` yet) the plan moves them into the machine file, checked
    as they go — unless the vault is a ``git clone`` memosite has not used here yet: its
    ``config.json`` came from the remote, so its machine settings are another machine's, and the
    clone syncs with its own ``origin`` instead. The plan also records the review policy a person
    here accepts by using the vault (the team's as it stands then).
    """
    team_path = vault_root / CONFIG_FILE
    machine_path = vault_root / MACHINE_FILE
    team_data = read_settings_object(team_path)
    team_only = without(team_data, MACHINE_KEYS)
    _check_settings(team_only, "team", team_path)
    machine_data = read_settings_object(machine_path) if machine_path.exists() else None
    plan: MachinePlan | None = None
    if machine_data is None:
        plan = _first_use(vault_root, team_data, team_only)
        machine_data = plan.machine
        ignored = plan.left
    else:
        ignored = tuple(present_keys(team_data, MACHINE_KEYS))
        if ACCEPTED_KEY not in machine_data:  # a machine file written by hand
            plan = MachinePlan({**machine_data, ACCEPTED_KEY: accepted_entry(_team_review(team_only), None)})
            machine_data = plan.machine
    _check_settings(machine_data, "machine", machine_path)
    raw = _deep_merge(DEFAULT_CONFIG, team_only)
    sources: dict[str, Source] = {}
    for setting in SETTINGS:
        layer = team_only if setting.scope == "team" else machine_data
        value = lookup(layer, setting.key)
        if value is not MISSING:
            sources[setting.key] = setting.scope
        if setting.scope == "machine":
            raw[setting.section][setting.name] = setting.default if value is MISSING else value
    return VaultConfig(
        raw=raw,
        accepted=_accepted(machine_data, machine_path),
        sources=sources,
        ignored=ignored,
        misplaced=tuple(present_keys(machine_data, TEAM_KEYS)),
        plan=plan,
    )


def read_settings_object(path: Path) -> dict[str, Any]:
    """A settings file as it is on disk (key order kept; empty when there is none); InvalidArguments
    naming the file when it is not one JSON object."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise InvalidArguments(f"cannot read {path}: {exc}") from exc
    if not isinstance(data, dict):
        raise InvalidArguments(f"{path} must hold a JSON object")
    return data


def team_settings_problem(data: bytes) -> str | None:
    """Why ``data``, offered as a team's ``config.json`` (by a commit from the remote), is none
    this machine can load, or None when it is one. A file every command would refuse to read
    must never reach the work tree: it would stop every command here, the sync that could bring
    its repair and the ``config set`` that could fix it included. The machine settings it may
    hold are not checked: they are never used from ``config.json``."""
    try:
        parsed = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        return f"it is not JSON text ({exc})"
    if not isinstance(parsed, dict):
        return "it does not hold a JSON object"
    try:
        _check_settings(without(parsed, MACHINE_KEYS), "team", Path(CONFIG_FILE))
    except InvalidArguments as exc:
        return f"its team settings do not load ({exc.message.removeprefix(CONFIG_FILE + ': ')})"
    return None


def _check_settings(data: Mapping[str, Any], scope: Scope, path: Path) -> None:
    """Bad settings fail here, with the key named, not deep inside a command."""
    for section in SECTIONS:
        if section in data and not isinstance(data[section], dict):
            raise InvalidArguments(f"{path}: {section} must be an object")
    for setting in SETTINGS:
        value = lookup(data, setting.key)
        if setting.scope == scope and value is not MISSING:
            problem = value_problem(setting, value)
            if problem is not None:
                raise InvalidArguments(f"{path}: {setting.key} {problem}, got {value!r}")


def _team_review(team_only: Mapping[str, Any]) -> ReviewPolicy:
    review = team_only.get("review")
    return ReviewPolicy.of(review if isinstance(review, dict) else {})


def accepted_entry(policy: ReviewPolicy, by: str | None) -> dict[str, Any]:
    """How ``config.local.json`` records a review policy accepted here (by whom, and when)."""
    return {"review": policy.to_json(), "acceptedBy": by, "acceptedAt": format_iso(utc_now())}


def _accepted(machine_data: Mapping[str, Any], path: Path) -> ReviewPolicy | None:
    entry = machine_data.get(ACCEPTED_KEY)
    if entry is None:
        return None
    review = entry.get("review") if isinstance(entry, dict) else None
    if not isinstance(review, dict):
        raise InvalidArguments(f"{path}: {ACCEPTED_KEY} must hold the review policy accepted here")
    _check_settings({"review": review}, "team", path)
    return ReviewPolicy.of(review)


def _first_use(vault_root: Path, team_data: Mapping[str, Any], team_only: Mapping[str, Any]) -> MachinePlan:
    found = tuple(present_keys(team_data, MACHINE_KEYS))
    accepted = {ACCEPTED_KEY: accepted_entry(_team_review(team_only), None)}
    if joining_clone(vault_root):
        return MachinePlan({"vaultGit": {"enabled": True}, **accepted}, left=found)
    machine: dict[str, Any] = {}
    for key in found:
        machine = with_value(machine, key, lookup(team_data, key))
    _check_settings(machine, "machine", vault_root / CONFIG_FILE)
    return MachinePlan({**machine, **accepted}, moved=found, team=dict(team_only) if found else None)


INDEX_PATH = ".memosite/index.sqlite"


def joining_clone(vault_root: Path) -> bool:
    """Whether the vault is a ``git clone`` (it has an ``origin``) that memosite has not used on
    this machine yet: it built no index here. An index git tracks is no sign of that: a clone
    checks out whatever the remote's history holds, and an index committed there (with
    ``vaultGit.remote`` naming someone else's repository in ``config.json``) would otherwise
    have this machine take the remote's machine settings for its own."""
    common = git_common_dir(vault_root)
    if common is None or origin_url(common / "config") is None:
        return False
    return not (vault_root / INDEX_PATH).exists() or index_lists(vault_root, INDEX_PATH)
