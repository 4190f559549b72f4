"""The review policy a person on this machine accepted, and what ``sync`` and ``status`` say about
the configuration.

This machine enforces the review policy recorded as accepted in ``config.local.json``, tightened
by the team's ``config.json`` (see :mod:`memosite.policy`). After a sync a tightening is recorded
at once (:func:`settle_policy`), so a later loosening is measured against it; a loosening waits
until a person runs ``memosite config accept-policy`` (:func:`accept_policy`), which a coding
agent's shell cannot. Meanwhile ``sync`` and ``status`` say what changed, who committed it and
how to accept it (:class:`ConfigReport`), and name the machine settings ``config.json`` holds that
are not used here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from memosite.configuration import edit_machine_file
from memosite.gitidentity import git_identity
from memosite.policy import ConfigReport, PolicyChange, ReviewPolicy, enforced, tightened
from memosite.provenance import require_person
from memosite.settings import CONFIG_FILE
from memosite.vault import Vault
from memosite.vaultconfig import ACCEPTED_KEY, accepted_entry, load_config
from memosite.vaultgit import run_git


def config_report(vault: Vault, *, applied: tuple[PolicyChange, ...] = ()) -> ConfigReport:
    """The report on the vault's configuration as loaded (reads git history only when a
    loosening waits, to say who committed it; writes nothing)."""
    config = vault.config
    waiting = tuple(config.loosened)
    changed_by, commit = _last_change(vault) if waiting else (None, None)
    return ConfigReport(waiting, applied, config.ignored, config.misplaced, changed_by, commit)


def _last_change(vault: Vault) -> tuple[str | None, str | None]:
    """Who last changed ``config.json`` and in which commit; (``…this machine…``, None) for a
    change not committed (or a vault without git)."""
    here = "changed on this machine"
    if not (vault.root / ".git").exists():
        return here, None
    quiet = {"GIT_OPTIONAL_LOCKS": "0"}  # a report takes no lock and refreshes no git index
    if run_git(vault.root, "diff", "--quiet", args=["HEAD"], paths=[CONFIG_FILE], env=quiet).returncode == 1:
        return f"{here}, not committed yet", None
    done = run_git(vault.root, "log", "-1", "--format=%h%x00%an <%ae>", paths=[CONFIG_FILE], env=quiet)
    commit, _, author = done.stdout.strip().partition("\0")
    return (author or None, commit) if done.returncode == 0 and commit else (here, None)


def settle_policy(vault: Vault) -> ConfigReport:
    """After a sync: read the configuration again, record at once what the team's ``config.json``
    tightens (so a later loosening is measured against it) and report what waits for a person."""
    vault.config = load_config(vault.root)
    config = vault.config
    applied: tuple[PolicyChange, ...] = ()
    if config.accepted is not None:
        applied = tuple(tightened(config.accepted, config.team_review))
        if applied:
            stricter = enforced(config.accepted, config.team_review)
            edit_machine_file(vault, lambda data: _with_accepted_review(data, stricter))
    return config_report(vault, applied=applied)


def _with_accepted_review(data: Mapping[str, Any], policy: ReviewPolicy) -> dict[str, Any]:
    """``data`` (the machine file) with ``policy`` as the accepted review policy; who accepted it
    and when stay as they were (a tightening is nobody's acceptance)."""
    entry = data.get(ACCEPTED_KEY)
    kept = dict(entry) if isinstance(entry, dict) else accepted_entry(policy, None)
    return {**data, ACCEPTED_KEY: {**kept, "review": policy.to_json()}}


@dataclass(frozen=True)
class PolicyAcceptance:
    """What ``config accept-policy`` did: ``changes`` are the loosenings now applied."""

    accepted: ReviewPolicy
    previous: ReviewPolicy
    changes: list[PolicyChange] = field(default_factory=list)
    by: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "accepted": self.accepted.to_json(),
            "previous": self.previous.to_json(),
            "changes": [change.to_json() for change in self.changes],
            "acceptedBy": self.by,
        }

    def line(self) -> str:
        if not self.changes:
            policy = self.accepted.describe()
            return f"nothing to accept: this machine enforces {CONFIG_FILE}'s review policy ({policy})"
        what = " and ".join(change.text for change in self.changes)
        return f"accepted the team's review policy, which {what}: {self.accepted.describe()}"


def accept_policy(vault: Vault, env: Mapping[str, str]) -> PolicyAcceptance:
    """``memosite config accept-policy``: this machine takes the review policy ``config.json``
    states as accepted by the person running it (refused in a coding agent's shell)."""
    require_person(env, "config accept-policy")
    config = vault.config
    team, previous = config.team_review, config.review_policy
    changes = config.loosened
    by = git_identity(env, vault.product_root)
    if config.accepted != team:
        edit_machine_file(vault, lambda data: {**data, ACCEPTED_KEY: accepted_entry(team, by)})
    return PolicyAcceptance(team, previous, changes, by)
