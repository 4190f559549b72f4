"""Changes waiting beside the record they would change: an agent's proposal, a legacy accepted copy.

When an agent changes or supersedes a record a person approved, the approved record stays where it
is, serving search, ``get``, the brief, the views and the site, and the change is written beside it
as ``<slug>.proposed.md``: vault Markdown that git commits and syncs with the record, so every
machine reviews the same change, and that is never listed, indexed, searched or published
(:func:`memosite.vault.is_record_name`). A person's ``review approve`` puts it in place, ``review
reject`` deletes it (:mod:`memosite.review`).

Older versions did the reverse: the pending version in place and the accepted one beside it as
``<slug>.accepted.md`` (before that, under ``.memosite/review-base/``). Those copies are still read,
so a change pending when memosite was upgraded is reviewed as it was written; no new one is made.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from memosite.errors import InvalidRecord
from memosite.kinds import RECORD_DIRS
from memosite.lookup import writable_target
from memosite.recordfile import path_defaults, record_label
from memosite.schema import Record, parse_record
from memosite.vault import ACCEPTED_SUFFIX, PROPOSED_SUFFIX, Vault, atomic_write_bytes

LEGACY_BASE_DIR = "review-base"  # where memosite kept accepted versions before the sidecar


# --- proposals --------------------------------------------------------------------------------


def proposal_path(record_path: Path) -> Path:
    """Where a proposed change of the record at ``record_path`` waits: ``<slug>.proposed.md``."""
    return record_path.with_name(record_path.stem + PROPOSED_SUFFIX)


def record_path_of(proposal: Path) -> Path:
    """The record a proposal file would change."""
    return proposal.with_name(proposal.name.removesuffix(PROPOSED_SUFFIX) + ".md")


def parse_proposal(proposal: Path) -> Record:
    """The proposed record, addressed to the record file it would replace (its ``path``); the
    required fields a hand-written proposal leaves out are inferred from that file's place.
    InvalidRecord when it does not parse."""
    target = record_path_of(proposal)
    try:
        text = proposal.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidRecord(f"not UTF-8 text: {record_label(proposal)} (byte {exc.start})") from exc
    return parse_record(text, target, defaults=path_defaults(target), where=record_label(proposal))


def read_proposal(record_path: Path) -> Record | None:
    """The change proposed for the record at ``record_path``, or None: none waits, or the file
    does not parse (a new proposal then replaces it)."""
    proposal = proposal_path(record_path)
    if proposal.is_symlink():
        return None
    try:
        return parse_proposal(proposal)
    except (FileNotFoundError, NotADirectoryError, InvalidRecord):
        return None


def iter_proposals(vault: Vault, project: str) -> Iterator[Path]:
    """The proposal files of a project, in directory order (never through a symlink)."""
    base = vault.project_dir(project)
    if base.is_symlink():
        return
    for subdir in RECORD_DIRS:
        directory = base / subdir
        if directory.is_symlink():
            continue
        try:
            entries = sorted(os.scandir(directory), key=lambda entry: entry.name)
        except (FileNotFoundError, NotADirectoryError):
            continue
        for entry in entries:
            if entry.name.endswith(PROPOSED_SUFFIX) and entry.is_file(follow_symlinks=False):
                yield Path(entry.path)


def find_proposal(vault: Vault, project: str, record_id: str) -> Path | None:
    """The proposal that would create or change the record ``record_id`` when no record file holds
    that id (the record was purged, or never existed): by file name, then by the id inside."""
    found = [path for path in iter_proposals(vault, project) if record_path_of(path).stem == record_id]
    if found:
        return found[0]
    for path in iter_proposals(vault, project):
        try:
            if parse_proposal(path).id == record_id:
                return path
        except (OSError, InvalidRecord):
            continue
    return None


def count_proposals(vault: Vault, project: str) -> int:
    return sum(1 for _ in iter_proposals(vault, project))


# --- what older versions kept ----------------------------------------------------------------


def accepted_path(record_path: Path) -> Path:
    """Where an older memosite kept the accepted version of a pending record: ``<slug>.accepted.md``."""
    return record_path.with_name(record_path.stem + ACCEPTED_SUFFIX)


def legacy_accepted_path(vault: Vault, record_path: Path) -> Path:
    return vault.internal_path(LEGACY_BASE_DIR, *Path(vault.relative(record_path)).parts)


def read_accepted(vault: Vault, record_path: Path) -> str | None:
    """The accepted version an older memosite kept for a pending record, or None: the sidecar,
    else the copy under ``.memosite/review-base/``."""
    for kept in (accepted_path(record_path), legacy_accepted_path(vault, record_path)):
        try:
            return kept.read_text(encoding="utf-8")
        except (FileNotFoundError, NotADirectoryError):
            continue
    return None


def keep_legacy_copies(vault: Vault, record_path: Path, *, created: bool) -> None:
    """Before a pending write lands in place at ``record_path``: a new record drops the accepted
    copy a removed namesake left; a further write to a pending record keeps the one an older
    memosite made, moving a copy kept under ``.memosite/`` beside the record, where git keeps it."""
    if created:
        drop_accepted_version(vault, record_path)
        return
    sidecar = writable_target(vault, accepted_path(record_path))
    legacy = legacy_accepted_path(vault, record_path)
    if not sidecar.exists() and legacy.is_file():
        atomic_write_bytes(sidecar, legacy.read_bytes())
        legacy.unlink()


def drop_accepted_version(vault: Vault, record_path: Path) -> None:
    """The review is over (or the record is gone): a kept accepted copy goes."""
    writable_target(vault, accepted_path(record_path)).unlink(missing_ok=True)
    legacy_accepted_path(vault, record_path).unlink(missing_ok=True)


__all__ = [
    "accepted_path",
    "count_proposals",
    "drop_accepted_version",
    "find_proposal",
    "iter_proposals",
    "keep_legacy_copies",
    "parse_proposal",
    "proposal_path",
    "read_accepted",
    "read_proposal",
    "record_path_of",
]
