"""``memosite config``: list, get, set and unset settings; accept the team's review policy."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from memosite.cli._common import App, vault_options

if TYPE_CHECKING:
    from memosite.configuration import SettingChange

_GROUP_HELP = """This vault's settings: the team's policy and this machine's own.

Team policy (ttl.*, review.*, bootstrap.*, sessions.* but sessions.root) lives in
config.json, which is committed and synced: every machine of the team shares it.
This machine's settings (vaultGit.*, sessions.root) live in config.local.json,
which git never carries. `memosite config list` shows every setting, its value
here and where it comes from (default, team, machine, or accepted: the review
policy a person on this machine accepted).

A change the team's config.json makes that loosens review is not applied here
until you accept it with `memosite config accept-policy`. Changing settings is
refused in a coding agent's shell.
"""


@click.group(help=_GROUP_HELP)
def config() -> None:
    pass


@config.command("list")
@vault_options
def list_(app: App) -> None:
    """Every setting: its value here and where it comes from."""
    from memosite.acceptance import config_report
    from memosite.configuration import list_settings

    views = list_settings(app.vault.config)
    report = config_report(app.vault)
    policy = app.vault.config

    def text() -> str:
        width = max(len(view.setting.key) for view in views)
        lines = ["team policy (config.json: committed, shared with the team)"]
        lines += [view.line(width) for view in views if view.setting.scope == "team"]
        lines.append("this machine (config.local.json: never shared)")
        lines += [view.line(width) for view in views if view.setting.scope == "machine"]
        return "\n".join(lines + report.lines())

    accepted = policy.accepted.to_json() if policy.accepted is not None else None
    app.emit(
        {
            "settings": [view.to_json() for view in views],
            "reviewPolicy": {
                "enforced": policy.review_policy.to_json(),
                "team": policy.team_review.to_json(),
                "accepted": accepted,
            },
            "report": report.to_json(),
        },
        text,
    )


@config.command()
@click.argument("key")
@vault_options
def get(app: App, key: str) -> None:
    """The value of KEY here (empty when not set): e.g. `memosite config get review.required`."""
    from memosite.configuration import find_setting, shown, view_setting

    view = view_setting(app.vault.config, find_setting(key))
    app.emit(view.to_json(), shown(view.value))


@config.command("set", context_settings={"ignore_unknown_options": True})
@click.argument("key")
@click.argument("values", nargs=-1, required=True, metavar="VALUE…")
@vault_options
def set_(app: App, key: str, values: tuple[str, ...]) -> None:
    """Set KEY to VALUE, checked first; a team setting is committed, a machine one never.

    \b
    memosite config set ttl.scratchDays 3          (or 72h)
    memosite config set review.required trap,decision
    memosite config set bootstrap.maxBytes 16KiB
    memosite config set vaultGit.enabled true
    memosite config set vaultGit.remote git@github.com:acme/memory.git
    """
    from memosite.configuration import set_setting

    change = _repaired(app, key, values) or set_setting(app.vault, key, values, app.env)
    app.emit(change.to_json(), change.line())


@config.command()
@click.argument("key")
@vault_options
def unset(app: App, key: str) -> None:
    """Remove KEY from its file: its default applies again."""
    from memosite.configuration import unset_setting

    change = _repaired(app, key, None) or unset_setting(app.vault, key, app.env)
    app.emit(change.to_json(), change.line())


def _repaired(app: App, key: str, values: tuple[str, ...] | None) -> SettingChange | None:
    """The change made to a ``config.local.json`` that stops the vault from opening, when KEY is
    a machine setting (the way to repair it); None when the vault opens."""
    from memosite.configuration import find_setting, repair_machine_setting
    from memosite.errors import InvalidArguments
    from memosite.settings import MACHINE_FILE

    try:
        app.vault  # noqa: B018 - opening it is the question
    except InvalidArguments as exc:
        if MACHINE_FILE not in exc.message or find_setting(key).scope != "machine":
            raise
        return repair_machine_setting(app.vault_root, key, values, app.env)
    return None


@config.command("accept-policy")
@vault_options
def accept_policy(app: App) -> None:
    """Apply the review policy the team's config.json states, loosenings included, as yours."""
    from memosite.acceptance import accept_policy as accept

    accepted = accept(app.vault, app.env)
    app.emit(accepted.to_json(), accepted.line())
