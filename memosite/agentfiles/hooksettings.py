"""``memosite hooks install|uninstall|status <agent>``: memosite's hooks in an agent's settings.

memosite's hooks are the entries whose command runs ``memosite hook …``; every other key and hook
of the settings file is the person's and is kept as it is. Installing twice changes nothing;
uninstalling removes memosite's entries (and the groups and event lists they leave empty). A file
that is not a JSON object is refused, never overwritten.

In the shared ``project`` scope the command is plain ``memosite hook …`` (each machine finds its
own ``memosite`` and vault); the ``local`` and ``user`` scopes are this machine's, so they name the
``memosite`` executable and the vault by their absolute paths.
"""

from __future__ import annotations

import json
import shlex
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memosite.agentfiles.hookagents import AGENT_TIME_LIMITS, AGENTS, Handler, HookAgent, agent_named
from memosite.errors import InvalidArguments, StorageError
from memosite.vault import atomic_write_bytes

MAX_SETTINGS_BYTES = 4 * 1024 * 1024


@dataclass(frozen=True)
class HookCommand:
    """How a settings file runs memosite: the program and what goes before ``hook``."""

    program: str = "memosite"
    vault: str | None = None

    def line(self, handler: Handler, agent: HookAgent) -> str:
        words = [self.program, "hook", handler, "--agent", agent.name]
        if self.vault:
            words += ["--vault", self.vault]
        return shlex.join(words)


def is_memosite_hook(command: Any) -> bool:
    """Whether a settings entry's command runs ``memosite hook`` (by any path to memosite)."""
    if not isinstance(command, str):
        return False
    try:
        words = shlex.split(command)
    except ValueError:
        return False
    return len(words) >= 2 and Path(words[0]).name in ("memosite", "memosite.exe") and words[1] == "hook"


def settings_path(agent: HookAgent, scope: str, root: Path | None, home: Path) -> Path:
    relative = agent.settings.get(scope)
    if relative is None:
        raise InvalidArguments(f"{agent.title} has no {scope} settings: use {' or '.join(agent.settings)}")
    if relative.startswith("~/"):
        return home / relative[2:]
    if root is None:
        raise InvalidArguments(f"no repository here for the {scope} settings: run this in the product repository")
    path = root / relative
    try:
        real = path.resolve()
        real.relative_to(root.resolve())
    except (OSError, RuntimeError, ValueError):
        # A repository's settings file that is a link elsewhere (your user settings, another
        # tool's JSON) came with the repository: what it points at is not its to change.
        raise InvalidArguments(
            f"{relative} leads out of the repository: memosite leaves it alone; nothing was changed"
        ) from None
    return path


def read_settings(path: Path) -> dict[str, Any]:
    """The settings object at ``path`` ({} when there is no file)."""
    if not path.exists():
        return {}
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_SETTINGS_BYTES + 1)
        parsed = json.loads(data.decode("utf-8")) if data.strip() else {}
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise InvalidArguments(f"{path.name} is not valid JSON ({exc}): fix it first; nothing was changed") from exc
    if len(data) > MAX_SETTINGS_BYTES or not isinstance(parsed, dict):
        raise InvalidArguments(f"{path.name} does not hold a JSON object: fix it first; nothing was changed")
    return parsed


def _entries(agent: HookAgent, group: Any) -> list[Any]:
    if agent.layout == "flat":
        return [group]
    return group.get("hooks", []) if isinstance(group, dict) and isinstance(group.get("hooks"), list) else []


def _without_memosite(agent: HookAgent, groups: list[Any]) -> list[Any]:
    """``groups`` of one event with memosite's entries taken out (and groups left empty dropped)."""
    kept: list[Any] = []
    for group in groups:
        if agent.layout == "flat":
            if not (isinstance(group, dict) and is_memosite_hook(group.get("command"))):
                kept.append(group)
            continue
        if not isinstance(group, dict) or not isinstance(group.get("hooks"), list):
            kept.append(group)
            continue
        hooks = [h for h in group["hooks"] if not (isinstance(h, dict) and is_memosite_hook(h.get("command")))]
        if hooks:
            kept.append({**group, "hooks": hooks})
        elif not group["hooks"]:
            kept.append(group)  # a person's empty group stays as they left it
    return kept


def _entry(agent: HookAgent, handler: Handler, command: HookCommand) -> dict[str, Any]:
    entry: dict[str, Any] = {"type": "command", "command": command.line(handler, agent)}
    if agent.layout == "flat":
        return {"command": entry["command"]}
    if agent.timeout_unit is not None:
        seconds = AGENT_TIME_LIMITS[handler]
        entry["timeout"] = seconds * 1000 if agent.timeout_unit == "ms" else seconds
    if agent.timeout_unit == "ms":
        entry = {"name": f"memosite-{handler}", **entry, "description": f"memosite: {handler.replace('-', ' ')}"}
    return {"hooks": [entry]}


def with_memosite(agent: HookAgent, settings: Mapping[str, Any], command: HookCommand) -> dict[str, Any]:
    """``settings`` with memosite's hooks in place of any it held before."""
    updated = dict(settings)
    hooks = updated.get("hooks", {})
    if not isinstance(hooks, dict):
        raise InvalidArguments("the settings' hooks is not an object: fix it first; nothing was changed")
    hooks = dict(hooks)
    for handler, events in agent.events.items():
        for event in events:
            groups = hooks.get(event, [])
            if not isinstance(groups, list):
                raise InvalidArguments(f"the settings' hooks.{event} is not a list: fix it first; nothing was changed")
            hooks[event] = [*_without_memosite(agent, groups), _entry(agent, handler, command)]
    updated["hooks"] = hooks
    if agent.layout == "flat":
        updated.setdefault("version", 1)
    return updated


def without_memosite(agent: HookAgent, settings: Mapping[str, Any]) -> dict[str, Any]:
    """``settings`` with every memosite hook removed, and nothing else changed."""
    updated = dict(settings)
    hooks = updated.get("hooks")
    if not isinstance(hooks, dict):
        return updated
    kept: dict[str, Any] = {}
    for event, groups in hooks.items():
        if not isinstance(groups, list):
            kept[event] = groups
            continue
        remaining = _without_memosite(agent, groups)
        if remaining or not groups:
            kept[event] = remaining
    if kept:
        updated["hooks"] = kept
    else:
        updated.pop("hooks")
    return updated


@dataclass
class HookStatus:
    agent: str
    scope: str
    path: str
    exists: bool
    installed: dict[str, list[str]] = field(default_factory=dict)  # handler -> events it runs at
    missing: list[str] = field(default_factory=list)  # events without memosite's hook
    others: int = 0  # hooks of the person's own
    changed: bool = False  # install/uninstall wrote the file
    note: str = ""

    @property
    def complete(self) -> bool:
        return not self.missing

    def to_json(self) -> dict[str, Any]:
        return {
            "agent": self.agent,
            "scope": self.scope,
            "path": self.path,
            "exists": self.exists,
            "installed": self.installed,
            "missing": self.missing,
            "otherHooks": self.others,
            "changed": self.changed,
            "note": self.note,
        }


def inspect(agent: HookAgent, settings: Mapping[str, Any]) -> tuple[dict[str, list[str]], list[str], int]:
    """Which events run memosite's hooks, which lack them, and how many other hooks there are."""
    raw = settings.get("hooks")
    hooks: dict[str, Any] = raw if isinstance(raw, dict) else {}
    installed: dict[str, list[str]] = {}
    missing: list[str] = []
    others = 0
    ours: dict[str, set[str]] = {}
    for event, groups in hooks.items():
        for group in groups if isinstance(groups, list) else []:
            for entry in _entries(agent, group):
                command = entry.get("command") if isinstance(entry, dict) else None
                if is_memosite_hook(command):
                    words = shlex.split(str(command))
                    ours.setdefault(event, set()).add(words[2] if len(words) > 2 else "")
                else:
                    others += 1
    for handler, events in agent.events.items():
        for event in events:
            if handler in ours.get(event, set()):
                installed.setdefault(handler, []).append(event)
            else:
                missing.append(event)
    return installed, missing, others


def _write_settings(path: Path, settings: Mapping[str, Any]) -> None:
    data = (json.dumps(settings, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
    target = path.resolve() if path.is_symlink() else path
    try:
        mode = stat.S_IMODE(target.stat().st_mode) if target.exists() else 0o644
        atomic_write_bytes(target, data, mode=mode)
    except OSError as exc:
        raise StorageError(f"cannot write {path.name}: {exc.strerror or exc}") from exc


def _status(agent: HookAgent, scope: str, path: Path, shown: str, settings: Mapping[str, Any]) -> HookStatus:
    installed, missing, others = inspect(agent, settings)
    return HookStatus(agent.name, scope, shown, path.exists(), installed, missing, others, note=agent.note)


def scopes_with_memosite(agent: HookAgent, *, root: Path | None, home: Path) -> list[str]:
    """The scopes whose settings (for the repository at ``root``) already run memosite's hooks."""
    found = []
    for scope in agent.settings:
        try:
            path = settings_path(agent, scope, root, home)
            settings = read_settings(path) if path.exists() else {}
        except InvalidArguments:
            continue  # no repository for this scope, or a file memosite cannot read: none of ours
        if inspect(agent, settings)[0]:
            found.append(scope)
    return found


def install_hooks(
    agent_name: str, scope: str, *, root: Path | None, home: Path, command: HookCommand, shown: str
) -> HookStatus:
    """Put memosite's hooks into the agent's settings for ``scope`` (no write when already there).

    INVALID_ARGUMENTS when another scope already holds them: the agent runs the hooks of every
    scope, so the session would get the brief twice and be recorded twice."""
    agent = agent_named(agent_name)
    path = settings_path(agent, scope, root, home)
    elsewhere = [other for other in scopes_with_memosite(agent, root=root, home=home) if other != scope]
    if elsewhere:
        other = elsewhere[0]
        raise InvalidArguments(
            f"memosite's hooks are already in {agent.settings[other]} ({other} scope) and {agent.title} runs"
            f" every scope's hooks: remove them there first (memosite hooks uninstall {agent.name} --scope"
            f" {other}); nothing was changed"
        )
    before = read_settings(path)
    after = with_memosite(agent, before, command)
    changed = after != before or not path.exists()
    if changed:
        _write_settings(path, after)
    status = _status(agent, scope, path, shown, after)
    status.changed = changed
    return status


def uninstall_hooks(agent_name: str, scope: str, *, root: Path | None, home: Path, shown: str) -> HookStatus:
    """Take memosite's hooks out of the agent's settings for ``scope``; nothing else changes."""
    agent = agent_named(agent_name)
    path = settings_path(agent, scope, root, home)
    before = read_settings(path)
    after = without_memosite(agent, before)
    changed = path.exists() and after != before
    if changed:
        _write_settings(path, after)
    status = _status(agent, scope, path, shown, after)
    status.changed = changed
    return status


def hook_status(agent_name: str | None, *, root: Path | None, home: Path) -> list[HookStatus]:
    """Where memosite's hooks are set, for one agent or every one, in every scope that has a file
    (or the shared one when none has)."""
    found: list[HookStatus] = []
    for agent in [agent_named(agent_name)] if agent_name else list(AGENTS.values()):
        statuses = []
        for scope in agent.settings:
            try:
                path = settings_path(agent, scope, root, home)
            except InvalidArguments:
                continue
            shown = agent.settings[scope]
            settings = read_settings(path) if path.exists() else {}
            statuses.append(_status(agent, scope, path, shown, settings))
        present = [status for status in statuses if status.exists]
        ours = [status for status in present if status.installed]
        for status in ours if len(ours) > 1 else []:
            status.note = "; ".join(
                [*filter(None, [status.note]), f"set in {len(ours)} scopes: {agent.title} runs each, keep one"]
            )
        found += present or statuses[:1]
    return found
