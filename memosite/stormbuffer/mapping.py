"""How a Stormbuffer record and a memosite record describe each other.

Kinds (Stormbuffer → memosite → Stormbuffer):

    fact        → spec   (``stormbuffer.kind: fact`` tells it apart from a procedure)
    decision    → decision
    procedure   → spec
    checkpoint  → state
    memosite trap → fact, memosite plan → checkpoint (the memosite kind rides along, see below)

Statuses: candidate → paused, active → active, superseded → superseded, archived → archived;
memosite's shipped and completed export as archived.

A memosite record keeps the Stormbuffer fields memosite has no column for in one frontmatter
block, ``stormbuffer:`` (id, kind, scope, access, created_at/updated_at as written, aliases,
supersedes, sources). memosite keeps unknown keys through every rewrite, so nothing is lost.

The other direction needs the same care: Stormbuffer rejects unknown fields, so what a memosite
record says beyond them (its slug, severity, pathPatterns, ...) goes into a sidecar next to the
records, ``memosite/<id>.json``. Each sidecar value carries the Stormbuffer-derived value it
replaced (its *basis*); an import applies it only while the store still says the same thing, so
an edit made in the store (a promotion, a new title) wins over a stale sidecar.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from memosite.errors import InvalidRecord
from memosite.schema import format_iso, same_value
from memosite.stormbuffer.model import StormRecord, parse_timestamp

BLOCK_KEY = "stormbuffer"  # the memosite frontmatter key holding Stormbuffer-only fields
# In the block: the imported file's text before its body, when it was laid out otherwise than memosite
# renders it (``tags = ["a", "b"]`` on one line …). An export writes that file back while the record
# says the same, so a store's records keep their bytes through memosite (see ``codec.source_head``).
SOURCE_HEAD = "source_head"

KIND_TO_MEMOSITE = {"fact": "spec", "decision": "decision", "procedure": "spec", "checkpoint": "state"}
KIND_FROM_MEMOSITE = {
    "decision": "decision", "spec": "procedure", "state": "checkpoint", "plan": "checkpoint",
    "trap": "fact",
}  # fmt: skip
STATUS_TO_MEMOSITE = {
    "candidate": "paused", "active": "active", "superseded": "superseded", "archived": "archived",
}  # fmt: skip
STATUS_FROM_MEMOSITE = {
    "paused": "candidate", "active": "active", "superseded": "superseded", "archived": "archived",
    "shipped": "archived", "completed": "archived",
}  # fmt: skip

# Ids for memosite records that never had a Stormbuffer id: derived, so a second export of the
# same record updates the same Stormbuffer file instead of adding a copy.
_ID_NAMESPACE = uuid.UUID("dd5bf6a8-eb7a-411c-98e4-a6559f53f544")
_ABSENT = object()


def derived_id(project: str, kind: str, memosite_id: str) -> str:
    return str(uuid.uuid5(_ID_NAMESPACE, f"memosite:{project}/{kind}/{memosite_id}"))


def storm_kind_for(memosite_kind: str, block: Mapping[str, Any]) -> str:
    """The Stormbuffer kind: the one the block names when it still fits, else the default."""
    named = block.get("kind")
    if isinstance(named, str) and KIND_TO_MEMOSITE.get(named) == memosite_kind:
        return named
    return KIND_FROM_MEMOSITE[memosite_kind]


def memosite_time(written: str) -> str:
    """How memosite stores the moment an RFC 3339 text names (InvalidRecord if it cannot)."""
    try:
        return format_iso(parse_timestamp(written).to_datetime())
    except ValueError as exc:
        raise InvalidRecord(f"timestamp {written!r} cannot be held by memosite: {exc}") from exc


def same_instant(written: Any, iso: Any) -> bool:
    """True when the RFC 3339 text ``written`` names the moment memosite stores as ``iso``."""
    try:
        return isinstance(iso, str) and format_iso(parse_timestamp(written).to_datetime()) == iso
    except ValueError:
        return False


def superseded_by_map(records: Iterable[StormRecord]) -> dict[str, str]:
    """old id (canonical) → id of the newest record that supersedes it, for superseded records."""
    ordered = sorted(records, key=lambda r: (r.created.instant, r.key))
    status = {r.key: r.status for r in ordered}
    result: dict[str, str] = {}
    for record in ordered:
        for old in record.superseded_keys:
            if status.get(old) == "superseded":
                result[old] = record.key
    return result


def memosite_view(record: StormRecord, superseded_by: str | None = None) -> dict[str, Any]:
    """The memosite frontmatter (with ``kind``, without ``project``) a Stormbuffer record maps to."""
    block: dict[str, Any] = {
        "id": record.id,
        "kind": record.kind,
        "scope": record.scope,
        "access": record.access,
        "created_at": record.created_at,
        "updated_at": record.updated_at,
    }
    if record.aliases:
        block["aliases"] = list(record.aliases)
    if record.supersedes:
        block["supersedes"] = list(record.supersedes)
    # Always present, even empty: an export adds a memosite provenance source only to records
    # that never had a block.
    block["sources"] = [source.to_json() for source in record.sources]
    view: dict[str, Any] = {
        "id": record.key,
        "kind": KIND_TO_MEMOSITE[record.kind],
        "title": record.title,
        "status": STATUS_TO_MEMOSITE[record.status],
        "source": "imported",
        "created": memosite_time(record.created_at),
        "updated": memosite_time(record.updated_at),
    }
    if record.tags:
        view["tags"] = list(record.tags)
    view[BLOCK_KEY] = block
    if superseded_by:
        view["supersededBy"] = superseded_by
    return view


@dataclass
class Sidecar:
    """memosite facts a Stormbuffer record cannot hold (see the module docstring)."""

    slug: str | None = None
    values: dict[str, Any] = field(default_factory=dict)
    basis: dict[str, Any] = field(default_factory=dict)
    omit: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"format_version": 1}
        if self.slug:
            data["slug"] = self.slug
        data.update(frontmatter=self.values, basis=self.basis, omit=self.omit)
        return data

    @classmethod
    def from_json(cls, data: Any, where: str) -> Sidecar:
        valid = (
            isinstance(data, dict)
            and data.get("format_version") == 1
            and isinstance(data.get("frontmatter", {}), dict)
            and isinstance(data.get("basis", {}), dict)
            and isinstance(data.get("omit", []), list)
            and isinstance(data.get("slug", ""), str)
        )
        if not valid:
            raise InvalidRecord(f"{where}: not a memosite sidecar (format_version 1)", details={"field": "sidecar"})
        return cls(
            slug=data.get("slug") or None,
            values=dict(data.get("frontmatter", {})),
            basis=dict(data.get("basis", {})),
            omit=[str(key) for key in data.get("omit", [])],
        )


def without_source_head(frontmatter: Mapping[str, Any]) -> dict[str, Any]:
    """``frontmatter`` without the block's :data:`SOURCE_HEAD`: how the file was laid out is no
    memosite fact a sidecar has to keep."""
    result = dict(frontmatter)
    block = result.get(BLOCK_KEY)
    if isinstance(block, Mapping) and SOURCE_HEAD in block:
        result[BLOCK_KEY] = {key: value for key, value in block.items() if key != SOURCE_HEAD}
    return result


def make_sidecar(original: Mapping[str, Any], slug: str, view: Mapping[str, Any]) -> Sidecar | None:
    """What ``original`` (memosite frontmatter with kind) says beyond ``view``; None if nothing."""
    sidecar = Sidecar(slug=slug if slug != str(original.get("id")) else None)
    for key, value in original.items():
        if key == "project":
            continue  # the import target decides the project
        if key not in view:
            sidecar.values[key] = value
        elif not same_value(value, view[key]):
            sidecar.values[key] = value
            sidecar.basis[key] = view[key]
    for key, value in view.items():
        # The block is the record's link to its Stormbuffer id: an import always keeps it, so a
        # later export updates the same Stormbuffer record whatever project it is exported from.
        if key not in original and key != BLOCK_KEY:
            sidecar.omit.append(key)
            sidecar.basis[key] = value
    if not (sidecar.slug or sidecar.values or sidecar.omit):
        return None
    return sidecar


def apply_sidecar(view: Mapping[str, Any], sidecar: Sidecar | None) -> dict[str, Any]:
    """The memosite frontmatter to import: ``view`` with the sidecar's still-current values."""
    result = dict(view)
    if sidecar is None:
        return result

    def current(key: str) -> bool:
        return key not in sidecar.basis or same_value(view.get(key, _ABSENT), sidecar.basis[key])

    for key, value in sidecar.values.items():
        if current(key):
            result[key] = value
    for key in sidecar.omit:
        if key in result and current(key):
            del result[key]
    return result
