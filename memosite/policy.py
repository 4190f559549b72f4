"""The review policy, and which changes to it loosen review and which tighten it.

A team's review policy (``review.required``, ``review.briefPending`` in ``config.json``) arrives
with every sync, and anyone who can push can change it. A machine therefore enforces the policy
a person *here* last accepted, tightened by anything stricter the team file says: a tightening
applies at once, a loosening waits until a person on this machine accepts it
(``memosite config accept-policy``). What is stricter is decided here and nowhere else:

* a kind in ``review.required`` is stricter than its absence (an agent's record of that kind
  waits for a person);
* ``review.briefPending: false`` is stricter than ``true`` (no unreviewed text reaches an agent's
  brief).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from memosite.kinds import KINDS
from memosite.settings import CONFIG_FILE, MACHINE_FILE

ACCEPT_COMMAND = "memosite config accept-policy"


def _in_kind_order(kinds: Iterable[str]) -> list[str]:
    chosen = set(kinds)
    return [kind for kind in KINDS if kind in chosen] + sorted(chosen - set(KINDS))


@dataclass(frozen=True)
class ReviewPolicy:
    """Which kinds an agent's records need review for, and whether the brief shows waiting ones."""

    required: frozenset[str] = frozenset()
    brief_pending: bool = True

    @classmethod
    def of(cls, review: Mapping[str, Any]) -> ReviewPolicy:
        """The policy of a ``review`` section whose values were checked (missing keys: defaults)."""
        required = review.get("required", [])
        return cls(frozenset(required if isinstance(required, list) else ()), review.get("briefPending", True) is True)

    def to_json(self) -> dict[str, Any]:
        return {"required": _in_kind_order(self.required), "briefPending": self.brief_pending}

    def describe(self) -> str:
        kinds = ", ".join(_in_kind_order(self.required)) or "nothing"
        brief = "shown in" if self.brief_pending else "kept out of"
        return f"review required for {kinds}; waiting records {brief} the brief"


@dataclass(frozen=True)
class PolicyChange:
    """One difference between two policies, said as what the newer one does."""

    key: str
    text: str

    def to_json(self) -> dict[str, str]:
        return {"key": self.key, "change": self.text}


def enforced(accepted: ReviewPolicy, team: ReviewPolicy) -> ReviewPolicy:
    """The policy a machine enforces: what a person here accepted, tightened by the team's."""
    return ReviewPolicy(accepted.required | team.required, accepted.brief_pending and team.brief_pending)


def loosened(accepted: ReviewPolicy, team: ReviewPolicy) -> list[PolicyChange]:
    """What ``team`` loosens against ``accepted`` (each waits for a person's acceptance)."""
    changes = []
    dropped = accepted.required - team.required
    if dropped:
        text = (
            "switches review off (review.required is empty)"
            if not team.required
            else f"stops requiring review of {', '.join(_in_kind_order(dropped))}"
        )
        changes.append(PolicyChange("review.required", text))
    if team.brief_pending and not accepted.brief_pending:
        changes.append(PolicyChange("review.briefPending", "shows records waiting for review in the brief"))
    return changes


def tightened(accepted: ReviewPolicy, team: ReviewPolicy) -> list[PolicyChange]:
    """What ``team`` tightens against ``accepted`` (applied at once)."""
    changes = []
    added = team.required - accepted.required
    if added:
        changes.append(PolicyChange("review.required", f"requires review of {', '.join(_in_kind_order(added))}"))
    if accepted.brief_pending and not team.brief_pending:
        changes.append(PolicyChange("review.briefPending", "keeps records waiting for review out of the brief"))
    return changes


@dataclass(frozen=True)
class ConfigReport:
    """What a person should know about the configuration: the loosenings of review that wait for
    them (with who last changed ``config.json``: ``changed_by``, ``commit``), the tightenings a sync
    just applied, the machine settings ``config.json`` holds (``ignored``) and the team settings
    ``config.local.json`` holds (``misplaced``), neither used."""

    loosened: tuple[PolicyChange, ...] = ()
    tightened: tuple[PolicyChange, ...] = ()
    ignored: tuple[str, ...] = ()
    misplaced: tuple[str, ...] = ()
    changed_by: str | None = None
    commit: str | None = None

    @property
    def quiet(self) -> bool:
        return not (self.loosened or self.tightened or self.ignored or self.misplaced)

    def to_json(self) -> dict[str, Any]:
        return {
            "loosened": [change.to_json() for change in self.loosened],
            "tightened": [change.to_json() for change in self.tightened],
            "ignoredMachineSettings": list(self.ignored),
            "misplacedTeamSettings": list(self.misplaced),
            "changedBy": self.changed_by,
            "commit": self.commit,
        }

    def lines(self) -> list[str]:
        """One line per fact, for ``sync`` and ``status``."""
        out = []
        if self.loosened:
            if self.commit:
                who = f"commit {self.commit} by {self.changed_by or 'an unknown author'}"
            else:
                who = self.changed_by or "changed on this machine"
            what = " and ".join(change.text for change in self.loosened)
            out.append(
                f"review policy: {CONFIG_FILE} ({who}) {what}; not applied: this machine keeps the policy"
                f" accepted here until a person runs `{ACCEPT_COMMAND}`"
            )
        if self.tightened:
            what = " and ".join(change.text for change in self.tightened)
            out.append(f"review policy: the team's {CONFIG_FILE} now {what} (applied)")
        if self.ignored:
            out.append(
                f"{CONFIG_FILE} holds machine settings, not used here: {', '.join(self.ignored)}"
                f" (this machine's are in {MACHINE_FILE}: `memosite config set`)"
            )
        if self.misplaced:
            out.append(
                f"{MACHINE_FILE} holds team settings, not used: {', '.join(self.misplaced)}"
                f" (team policy is in {CONFIG_FILE}: `memosite config set`)"
            )
        return out
