"""``memosite config``: list, get, set and unset a vault's settings, knowing whose each one is.

A team setting is written to ``config.json`` in a unit of work (one commit, shared at the next
sync); a machine setting to ``config.local.json`` (never committed). Values are read from text
(``7``, ``48h``, ``16MiB``, ``trap,decision``, ``true``) and checked by the one table of settings
(:mod:`memosite.settings`); a bad key or value is refused before anything is written. Changing
the configuration is a person's decision: every change is refused in a coding agent's shell, and a
person's change of the review policy is what this machine then enforces (it is accepted here).
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from memosite.errors import InvalidArguments
from memosite.expiration import parse_duration
from memosite.gitidentity import git_identity
from memosite.kinds import KIND_FACTS, KINDS
from memosite.mutation import mutation
from memosite.policy import ReviewPolicy
from memosite.provenance import require_person
from memosite.refresh import refresh_project
from memosite.settings import (
    BY_KEY,
    CONFIG_FILE,
    MACHINE_FILE,
    MACHINE_KEYS,
    MISSING,
    SECTIONS,
    SETTINGS,
    Setting,
    keys_in_section,
    lookup,
    settings_text,
    suggest_keys,
    value_problem,
    with_value,
    without,
)
from memosite.vault import Vault, atomic_write_text
from memosite.vaultconfig import ACCEPTED_KEY, Source, VaultConfig, accepted_entry, load_config, read_settings_object

Action = Literal["set", "unset"]


def find_setting(key: str) -> Setting:
    """The setting named ``key``; INVALID_ARGUMENTS naming the likely ones when there is none."""
    found = BY_KEY.get(key)
    if found is not None:
        return found
    if key in SECTIONS or keys_in_section(key):
        raise InvalidArguments(f"{key} is a section: name one of its settings ({', '.join(keys_in_section(key))})")
    hint = suggest_keys(key)
    did_you_mean = f"; did you mean {' or '.join(hint)}?" if hint else ""
    raise InvalidArguments(
        f"no setting {key!r}{did_you_mean} (`memosite config list` shows them all)", details={"suggestions": hint}
    )


# --- showing settings --------------------------------------------------------------------------


def shown(value: Any) -> str:
    """A value as a person reads it (and as ``config set`` reads it back)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ",".join(str(item) for item in value)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


ShownSource = Literal["default", "team", "machine", "accepted"]


@dataclass(frozen=True)
class SettingView:
    """One setting as it applies here: ``value`` is what memosite uses, ``source`` where it comes
    from (``accepted``: the review policy accepted on this machine, stricter than ``team``'s)."""

    setting: Setting
    value: Any
    source: ShownSource
    team_value: Any = MISSING  # config.json's value of a review setting when it is not in force

    def to_json(self) -> dict[str, Any]:
        data = {
            "key": self.setting.key,
            "value": self.value,
            "source": self.source,
            "scope": self.setting.scope,
            "file": self.setting.file,
            "default": self.setting.default,
            "description": self.setting.help,
        }
        if self.team_value is not MISSING:
            data["teamValue"] = self.team_value
        return data

    def line(self, width: int) -> str:
        text = shown(self.value) or ("(none)" if self.setting.kind == "kinds" else "(not set)")
        out = f"  {self.setting.key:<{width}}  {text:<16}  {self.source}"
        if self.team_value is not MISSING:
            out += f" (config.json says {shown(self.team_value) or 'none'}: waits for a person here)"
        return out


def view_setting(config: VaultConfig, setting: Setting) -> SettingView:
    if setting.review:
        policy, team = config.review_policy, config.team_review
        value: Any = policy.to_json()[setting.name]
        team_value: Any = team.to_json()[setting.name]
        if value != team_value:
            return SettingView(setting, value, "accepted", team_value)
    else:
        value = config.value(setting.key)
    source: Source = config.source(setting.key)
    return SettingView(setting, value, source)


def list_settings(config: VaultConfig) -> list[SettingView]:
    """Every setting, team policy first, as it applies on this machine."""
    ordered = sorted(SETTINGS, key=lambda s: s.scope != "team")
    return [view_setting(config, setting) for setting in ordered]


# --- reading a value from text -----------------------------------------------------------------

_TRUE = {"true", "yes", "on", "1"}
_FALSE = {"false", "no", "off", "0"}
_PLAIN_NUMBER_RE = re.compile(r"^[0-9]+(?:\.[0-9]+)?$")
_SIZE_RE = re.compile(r"^([0-9]+(?:\.[0-9]+)?)\s*([kmgt]i?b?|b)?$", re.IGNORECASE)
_SIZE_UNITS = {"": 1, "b": 1, "k": 1000, "m": 1000**2, "g": 1000**3, "t": 1000**4}


def _number(text: str) -> int | float:
    number = float(text)
    return int(number) if number.is_integer() and abs(number) < 2**53 else number


def _size(text: str) -> int | float | None:
    match = _SIZE_RE.match(text.strip())
    if match is None:
        return None
    unit = (match.group(2) or "").lower()
    base = 1024 if "i" in unit else 1
    factor = _SIZE_UNITS[unit[:1]] if base == 1 else 1024 ** " kmgt".index(unit[0])
    return _number(str(float(match.group(1)) * factor))


def _duration(setting: Setting, text: str) -> int | float | None:
    """Days (``ttl.*Days``) or seconds (``pushDelaySeconds``): a bare number is in the setting's
    unit, a duration (``48h``, ``90s``, ``2d``) is converted to it."""
    if _PLAIN_NUMBER_RE.match(text.strip()):
        return _number(text.strip())
    try:
        span = parse_duration(text)
    except InvalidArguments:  # longer than any date can hold
        raise InvalidArguments(f"{setting.key} must be at most {setting.maximum:g}, got {text!r}") from None
    if span is None:
        return None
    seconds = span.total_seconds()
    return _number(repr(seconds / 86400 if setting.kind == "days" else seconds))


def _kinds(words: Sequence[str]) -> list[str]:
    text = " ".join(words).strip()
    if text.startswith("["):
        try:
            items = json.loads(text)
        except ValueError as exc:
            raise InvalidArguments(f"review.required: not a JSON list of kinds: {exc}") from exc
        if not isinstance(items, list) or not all(isinstance(item, str) for item in items):
            raise InvalidArguments("review.required must be a list of kinds")
    else:
        items = [item for item in re.split(r"[,\s]+", text) if item and item.lower() != "none"]
    for item in items:
        if item not in KINDS:
            close = difflib.get_close_matches(item.lower(), KINDS, n=1, cutoff=0.6)
            hint = f"; did you mean {close[0]}?" if close else ""
            raise InvalidArguments(f"{item!r} is no kind{hint} (kinds: {', '.join(KINDS)})")
    return [kind for kind in KINDS if kind in items]  # one order: the same list is the same file


def parse_value(setting: Setting, words: Sequence[str]) -> Any:
    """The value ``words`` (the command line's VALUE…) give ``setting``; INVALID_ARGUMENTS with
    one sentence when they give none it may hold."""
    if setting.kind == "kinds":
        value: Any = _kinds(words)
    else:
        if len(words) != 1:
            got = "nothing" if not words else f"{len(words)} ({' '.join(words)})"
            raise InvalidArguments(f"{setting.key} takes one value, got {got}")
        text = words[0]
        value = text
        folded = text.strip().lower()
        if setting.kind == "bool":
            value = True if folded in _TRUE else False if folded in _FALSE else text
        elif setting.kind == "choice":
            value = folded if folded in setting.choices else text
            if value not in setting.choices:
                close = difflib.get_close_matches(folded, setting.choices, n=1, cutoff=0.5)
                if close:
                    raise InvalidArguments(f"{setting.key} cannot be {text!r}; did you mean {close[0]}?")
        elif setting.kind in ("days", "seconds"):
            parsed = _duration(setting, text)
            value = text if parsed is None else parsed
        elif setting.kind == "count":
            value = int(folded) if folded.isascii() and folded.isdigit() else text
        elif setting.kind == "bytes":
            size = _size(text)
            value = text if size is None else size
    problem = value_problem(setting, value)
    if problem is not None:
        raise InvalidArguments(f"{setting.key} {problem}, got {' '.join(words)!r}")
    return value


# --- changing settings -------------------------------------------------------------------------


@dataclass(frozen=True)
class SettingChange:
    """What ``config set``/``unset`` did: ``changed`` False when the setting already was so here;
    ``written`` whether its file changed, ``committed`` whether that is a vault commit (a team
    setting in a vault under git: shared at the next sync)."""

    setting: Setting
    action: Action
    previous: Any
    value: Any
    changed: bool
    written: bool
    committed: bool

    def to_json(self) -> dict[str, Any]:
        return {
            "key": self.setting.key,
            "action": self.action,
            "scope": self.setting.scope,
            "file": self.setting.file,
            "previous": self.previous,
            "value": self.value,
            "changed": self.changed,
            "committed": self.committed,
        }

    def line(self) -> str:
        where = self.setting.file
        now = shown(self.value) or "(none)"
        if not self.changed:
            return f"{self.setting.key} is already {now} here: nothing changed"
        if self.setting.scope == "machine":
            whose = "this machine only, never shared"
        elif self.committed:
            whose = "team policy, committed: shared at the next sync"
        elif self.written:
            whose = "team policy"
        else:
            whose = "accepted on this machine"
        verb = f"set {self.setting.key} to {now}" if self.action == "set" else f"unset {self.setting.key} ({now} now)"
        return f"{verb} in {where} ({whose}; was {shown(self.previous) or '(none)'})"


def set_setting(vault: Vault, key: str, words: Sequence[str], env: Mapping[str, str]) -> SettingChange:
    """``memosite config set KEY VALUE…``: check, then write the setting to its file."""
    setting = find_setting(key)
    require_person(env, f"config set {setting.key}")
    return _change(vault, setting, parse_value(setting, words), "set", env)


def unset_setting(vault: Vault, key: str, env: Mapping[str, str]) -> SettingChange:
    """``memosite config unset KEY``: remove the setting from its file (its default applies)."""
    setting = find_setting(key)
    require_person(env, f"config unset {setting.key}")
    return _change(vault, setting, MISSING, "unset", env)


def repair_machine_setting(root: Path, key: str, words: Sequence[str] | None, env: Mapping[str, str]) -> SettingChange:
    """``config set`` (``words``) or ``config unset`` (None) of a machine setting while
    ``config.local.json`` does not load (a value of the wrong type, a remote named like an option):
    the file is edited as it stands, under the vault lock, without loading it, so a bad value never
    stops the command that repairs it. What still does not load afterwards is this call's error
    (the edit stays: it did what it says)."""
    setting = find_setting(key)
    if setting.scope != "machine":
        raise InvalidArguments(f"{setting.key} is a team setting: repair {MACHINE_FILE} first")
    action: Action = "unset" if words is None else "set"
    require_person(env, f"config {action} {setting.key}")
    value = MISSING if words is None else parse_value(setting, words)
    with Vault(root=root, config=VaultConfig()).lock():
        data = read_settings_object(root / MACHINE_FILE)
        previous = lookup(data, setting.key)
        changed = _edited(data, setting.key, value)
        written = changed != data
        if written:
            atomic_write_text(root / MACHINE_FILE, settings_text(changed), mode=0o600)
    change = SettingChange(
        setting,
        action,
        None if previous is MISSING else previous,
        None if value is MISSING else value,
        written,
        written,
        False,
    )
    try:
        load_config(root)
    except InvalidArguments as exc:
        raise InvalidArguments(f"{change.line()}, but the settings still do not load: {exc.message}") from exc
    return change


def _change(vault: Vault, setting: Setting, value: Any, action: Action, env: Mapping[str, str]) -> SettingChange:
    previous = view_setting(vault.config, setting).value
    if setting.scope == "machine":
        written = edit_machine_file(vault, lambda data: _edited(data, setting.key, value))
    else:
        written = _change_team_setting(vault, setting, value, env)
    now = view_setting(vault.config, setting).value
    committed = written and setting.scope == "team" and vault.config.git_enabled
    return SettingChange(setting, action, previous, now, written or now != previous, written, committed)


def _edited(data: Mapping[str, Any], key: str, value: Any) -> dict[str, Any]:
    return without(data, [key]) if value is MISSING else with_value(data, key, value)


def read_settings_file(vault: Vault, name: str) -> dict[str, Any]:
    """``config.json`` or ``config.local.json`` as it is on disk (key order kept)."""
    return read_settings_object(vault.root / name)


def edit_machine_file(vault: Vault, edit: Callable[[dict[str, Any]], dict[str, Any]]) -> bool:
    """Change ``config.local.json`` by ``edit`` (a function of its content) under the vault lock;
    the vault's settings are read again. True when the file changed."""
    with vault.lock():
        data = read_settings_file(vault, MACHINE_FILE)
        changed: dict[str, Any] = edit(data)
        if changed == data:
            return False
        atomic_write_text(vault.root / MACHINE_FILE, settings_text(changed), mode=0o600)
        vault.config = load_config(vault.root)
    return True


def _change_team_setting(vault: Vault, setting: Setting, value: Any, env: Mapping[str, str]) -> bool:
    with vault.lock():
        team = read_settings_file(vault, CONFIG_FILE)
        # memosite writes team settings only: machine settings left there (ignored) go with it.
        wanted = _edited(without(team, MACHINE_KEYS), setting.key, value)
        changed = wanted != team
        if changed:
            said = (
                f"set {setting.key} to {shown(value) or '(none)'}" if value is not MISSING else f"unset {setting.key}"
            )
            with mutation(vault, f"config: {said}") as unit:
                unit.write_file(CONFIG_FILE, settings_text(wanted))
                before = vault.config
                vault.config = load_config(vault.root)
                if setting.section == "ttl" and before.value(setting.key) != vault.config.value(setting.key):
                    _expire_again(vault, setting, unit.touch)
        if setting.review:  # the person's own change of the review policy is the one accepted here
            accept_component(vault, setting, git_identity(env, vault.product_root))
    return changed


def _expire_again(vault: Vault, setting: Setting, touch: Callable[[str, Iterable[str]], None]) -> None:
    """A kind's default time to live changed: every row's expiry is worked out again, and the
    views of the kinds it applies to are rewritten."""
    kinds = [kind for kind, facts in KIND_FACTS.items() if facts.default_ttl == setting.name]
    for project in vault.projects():
        refresh_project(vault, project, force=True)
        touch(project, kinds)


def accept_component(vault: Vault, setting: Setting, by: str | None) -> None:
    """Record the value ``config.json`` now gives ``setting`` as accepted on this machine, by
    ``by`` (in ``config.local.json``; the other parts of the accepted review policy stay)."""
    config = vault.config
    accepted = (config.accepted or config.team_review).to_json()
    accepted[setting.name] = config.team_review.to_json()[setting.name]
    policy = ReviewPolicy.of(accepted)
    edit_machine_file(vault, lambda data: {**data, ACCEPTED_KEY: accepted_entry(policy, by)})
