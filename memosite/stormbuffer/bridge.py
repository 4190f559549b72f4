"""Import a Stormbuffer store into a memosite project, and export a project to a store.

Both directions plan first and write after: every record is converted, validated and
secret-scanned before the first file is written, so a bad record stops the run with nothing
half done. Import writes through :func:`memosite.store.upsert_record` (lock, index, views, vault
commit). Export never deletes: store records the vault does not know are left alone, and a status
change is written only when the Stormbuffer lifecycle allows it. See :mod:`.mapping` for how
kinds, statuses and fields correspond.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memosite.errors import InvalidArguments, InvalidRecord, InvalidTransition, PersonRequired
from memosite.provenance import PROVENANCE_FIELDS, REVIEW_FIELDS, Actor
from memosite.secrets import assert_no_secrets
from memosite.stormbuffer import lifecycle
from memosite.stormbuffer.codec import render_record, says_the_same, source_head
from memosite.stormbuffer.mapping import (
    BLOCK_KEY,
    KIND_FROM_MEMOSITE,
    SOURCE_HEAD,
    STATUS_FROM_MEMOSITE,
    Sidecar,
    apply_sidecar,
    derived_id,
    make_sidecar,
    memosite_view,
    same_instant,
    storm_kind_for,
    superseded_by_map,
    without_source_head,
)
from memosite.stormbuffer.model import (
    GLOBAL_SCOPE,
    Source,
    StormRecord,
    is_uuid,
    scope_project_id,
    source_from_json,
    validate_record,
)
from memosite.stormbuffer.store import STORE_FILE, Store
from memosite.stormbuffer.values import is_canonical_project_id, is_control, parse_uuid, rust_trim
from memosite.vault import Vault, atomic_write_text

SIDECAR_DIR = "memosite"


@dataclass(frozen=True)
class BridgedRecord:
    id: str
    storm_kind: str
    memosite_kind: str
    status: str
    path: str

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class SkippedRecord:
    id: str
    kind: str
    reason: str

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class BridgeResult:
    """What an import or export did."""

    direction: str  # "import" or "export"
    store: str
    project_id: str | None
    project: str
    records: list[BridgedRecord] = field(default_factory=list)
    skipped: list[SkippedRecord] = field(default_factory=list)
    unchanged: int = 0
    store_created: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "direction": self.direction,
            "store": self.store,
            "project_id": self.project_id,
            "project": self.project,
            "count": len(self.records),
            "records": [r.to_json() for r in self.records],
            "skipped": [s.to_json() for s in self.skipped],
            "unchanged": self.unchanged,
            "store_created": self.store_created,
        }


def sidecar_path(store: Store, record_id: str) -> Path:
    return store.path / SIDECAR_DIR / f"{parse_uuid(record_id) or record_id.lower()}.json"


def read_sidecar(store: Store, record_id: str) -> Sidecar | None:
    path = sidecar_path(store, record_id)
    try:
        data = json.loads(path.read_bytes().decode("utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise InvalidRecord(f"{path}: unreadable sidecar: {exc}", details={"field": "sidecar"}) from exc
    return Sidecar.from_json(data, str(path))


# --- import ----------------------------------------------------------------------------------


@dataclass
class _Planned:
    record: StormRecord
    kind: str
    slug: str
    frontmatter: dict[str, Any]


def import_store(vault: Vault, project: str, store: Store) -> BridgeResult:
    """Bring every record of ``store`` (history included) into ``project`` of ``vault``.

    Imported by an agent (``vault.actor`` an agent: a CLI call in its shell), the records are the
    agent's writes (``source: agent``, reviewed as its writes are) and a record that claims a person
    — ``access: human``, a person's ``source`` or any review field — stops the import before
    anything is written (PERSON_REQUIRED): an agent may have written the store it imports."""
    actor = vault.actor
    by_agent = actor if actor is not None and actor.is_agent else None
    from memosite.mutation import mutation
    from memosite.schema import normalize_kind, validate_slug
    from memosite.store import upsert_record

    stored = store.records()
    items = [item.record for item in stored]
    heads = {item.record.key: source_head(item.text, item.record) for item in stored if item.text is not None}
    newer = superseded_by_map(items)
    result = BridgeResult("import", str(store.path), store.info.project_id, project)
    plan: list[_Planned] = []
    for record in items:
        if not record.body.strip():
            result.skipped.append(SkippedRecord(record.id, record.kind, "empty body (memosite needs one)"))
            continue
        sidecar = read_sidecar(store, record.id)
        frontmatter = apply_sidecar(memosite_view(record, newer.get(record.key)), sidecar)
        head = heads.get(record.key)
        if head is not None and isinstance(frontmatter.get(BLOCK_KEY), dict):
            # The file's own layout, so an export writes it back byte for byte while it is unchanged.
            frontmatter[BLOCK_KEY] = {**frontmatter[BLOCK_KEY], SOURCE_HEAD: head}
        kind = normalize_kind(frontmatter.pop("kind"))
        if sidecar is not None and sidecar.slug:
            slug = validate_slug(sidecar.slug)
        else:
            slug = validate_slug(str(frontmatter.get("id") or record.key), "id")
        if by_agent is not None:
            frontmatter = _agents_import(record, frontmatter, by_agent)
        assert_no_secrets(record.body, frontmatter)
        plan.append(_Planned(record, kind, slug, frontmatter))
    # One unit of work for the whole store: one lock, one view rebuild, one commit.
    with mutation(vault, f"import stormbuffer store into {project} ({len(plan)} records)"):
        for planned in _superseders_first(plan):
            written = upsert_record(
                vault,
                project,
                kind=planned.kind,
                body=planned.record.body,
                slug=planned.slug,
                frontmatter=planned.frontmatter,
                allow_duplicate=True,
                # Superseders are written first (see _superseders_first): the record one names may
                # arrive later in this import, or not be in the store at all.
                supersedes_missing_ok=True,
            )
            result.records.append(
                BridgedRecord(
                    planned.record.key,
                    planned.record.kind,
                    planned.kind,
                    written.status,
                    written.path,
                )
            )
    return result


def _agents_import(record: StormRecord, frontmatter: dict[str, Any], actor: Actor) -> dict[str, Any]:
    """The frontmatter an agent's import writes: the agent's own (``source: agent``, its provenance
    recorded, not taken from the store). PERSON_REQUIRED for a record that claims a person."""
    claimed = ["access human"] if record.access == "human" else []
    if frontmatter.get("source") == "human":
        claimed.append("source human")
    claimed += [name for name in REVIEW_FIELDS if name in frontmatter]
    if claimed:
        raise PersonRequired(
            f"stormbuffer import is refused in {actor.where()}: record {record.id} claims a person"
            f" ({', '.join(claimed)}); only a person imports it, from their own terminal"
        )
    kept = {key: value for key, value in frontmatter.items() if key not in PROVENANCE_FIELDS}
    kept["source"] = "agent"
    return kept


def _superseders_first(plan: list[_Planned]) -> list[_Planned]:
    """Order so a record naming memosite ``supersedes`` is written before the one it replaces.

    memosite marks the older record superseded (and re-stamps it) when the newer one is written;
    when the older one does not exist yet nothing is re-stamped, and it arrives with its own
    status and dates intact.
    """
    replaced_by = {
        str(p.frontmatter.get("supersedes")): str(p.frontmatter.get("id"))
        for p in plan
        if p.frontmatter.get("supersedes")
    }
    depth: dict[str, int] = {}

    def rank(memosite_id: str, seen: frozenset[str] = frozenset()) -> int:
        if memosite_id not in depth:
            above = replaced_by.get(memosite_id)
            depth[memosite_id] = 0 if above is None or above in seen else 1 + rank(above, seen | {memosite_id})
        return depth[memosite_id]

    return sorted(plan, key=lambda p: rank(str(p.frontmatter.get("id"))))


# --- export ----------------------------------------------------------------------------------


@dataclass
class _Exported:
    record: StormRecord
    memosite_kind: str
    slug: str
    frontmatter: dict[str, Any]
    text: str | None = None  # the source's own file, when the record is unchanged since its import


def export_project(vault: Vault, project: str, store_path: Path, *, name: str | None = None) -> BridgeResult:
    """Write the durable records of ``project`` into the store at ``store_path`` (made if missing)."""
    from memosite.recordfile import read_record

    resolved, root = store_path.resolve(), vault.root.resolve()
    if resolved == root or root in resolved.parents or resolved in root.parents:
        raise InvalidArguments(f"the store {store_path} overlaps the vault {vault.root}: choose a directory outside it")

    with vault.lock():
        sources = [(path, read_record(path)) for path in vault.iter_record_files(project)]
    exportable = []
    skipped = []
    for path, record in sources:
        if record.kind in KIND_FROM_MEMOSITE:
            exportable.append((path, record))
        else:
            skipped.append(
                SkippedRecord(record.id, record.kind, f"{record.kind} records are not exported (no Stormbuffer kind)")
            )
    created = not (store_path / STORE_FILE).exists()
    if created:
        store = Store.init(store_path, name=name, project_id=_inherited_project_id([r for _, r in exportable]))
    else:
        store = Store.open(store_path)
        if name is not None and name != store.info.name:
            store.rename(name)
    result = BridgeResult(
        "export", str(store.path), store.info.project_id, project, skipped=skipped, store_created=created
    )

    # memosite `supersedes` names a memosite id; Stormbuffer's names the replaced record's UUID.
    ids: dict[str, str] = {}
    for _, record in reversed(exportable):
        ids[str(record.frontmatter["id"])] = _storm_id(project, record.kind, record.frontmatter)
    planned: list[_Exported] = []
    planned_paths: list[Path] = []
    for path, record in exportable:
        converted = _to_storm(vault, store, project, path, record.frontmatter, record.body, ids)
        if isinstance(converted, SkippedRecord):
            result.skipped.append(converted)
        else:
            planned.append(converted)
            planned_paths.append(path)
    _check_unique(vault, planned, planned_paths)
    with store.lock():
        existing = {item.record.key: item for item in store.records()}
        known = {key: found.path for key, found in existing.items()}
        _check_lifecycle({key: item.record for key, item in existing.items()}, planned)
        everything = {
            **{key: item.record for key, item in existing.items()},
            **{p.record.key: p.record for p in planned},
        }
        newer = superseded_by_map(everything.values())
        sidecars = {}
        for item in planned:
            view = memosite_view(item.record, newer.get(item.record.key))
            sidecars[item.record.key] = make_sidecar(without_source_head(item.frontmatter), item.slug, view)
            assert_no_secrets(item.record.body, item.record.frontmatter())
            sidecar = sidecars[item.record.key]
            if sidecar is not None:
                assert_no_secrets("", sidecar.to_json())
        for item in planned:
            before = existing.get(item.record.key)
            record_changed = before is None or render_record(before.record) != render_record(item.record)
            saved = store.save(item.record, known=known, text=item.text) if record_changed else None
            written = saved.path if saved is not None else before.path if before else None
            sidecar_changed = _write_sidecar(store, item.record.id, sidecars[item.record.key])
            if not (record_changed or sidecar_changed):
                result.unchanged += 1
                continue
            result.records.append(
                BridgedRecord(item.record.key, item.record.kind, item.memosite_kind, item.record.status, str(written))
            )
    return result


def _storm_id(project: str, kind: str, frontmatter: Mapping[str, Any]) -> str:
    block = frontmatter.get(BLOCK_KEY)
    if isinstance(block, Mapping) and is_uuid(block.get("id")):
        return str(block["id"])
    return derived_id(project, kind, str(frontmatter["id"]))


def _inherited_project_id(records: list[Any]) -> str | None:
    """When every exported record names the same project scope, a new store keeps that identity."""
    found = set()
    for record in records:
        block = record.frontmatter.get(BLOCK_KEY)
        scope = block.get("scope") if isinstance(block, Mapping) else None
        if isinstance(scope, str) and scope != GLOBAL_SCOPE:
            found.add(scope_project_id(scope))
    candidate = found.pop() if len(found) == 1 else None
    return candidate if is_canonical_project_id(candidate) else None


def _clean_text(value: Any) -> str:
    """A text Stormbuffer accepts: control characters become spaces, surrounding space goes."""
    text = "".join(" " if is_control(char) else char for char in str(value))
    return rust_trim(text)


def _with_actor(data: Any, actor: str) -> Any:
    # Stores memosite wrote before Stormbuffer's rules allowed sources without an actor.
    if isinstance(data, Mapping) and "actor" not in data:
        return {**data, "actor": actor}
    return data


def _to_storm(
    vault: Vault, store: Store, project: str, path: Path, fm: Mapping[str, Any], body: str, ids: Mapping[str, str]
) -> _Exported | SkippedRecord:
    """The Stormbuffer record for one memosite record; raises :class:`InvalidRecord` naming the file.

    A record Stormbuffer cannot hold is skipped with the reason: one whose body has no text, or
    a global-scope record when the store is a project store (it belongs in the global store).
    """
    from memosite.recordfile import record_title
    from memosite.schema import Record

    where = vault.relative(path)
    kind = str(fm["kind"])
    raw_block = fm.get(BLOCK_KEY, {})
    if not isinstance(raw_block, Mapping):
        raise InvalidRecord(f"{where}: invalid {BLOCK_KEY}: must be a mapping", details={"field": BLOCK_KEY})
    block: Mapping[str, Any] = raw_block
    if not rust_trim(body) or "\x00" in body:
        return SkippedRecord(str(fm["id"]), kind, "the body has no text (or a NUL), which Stormbuffer refuses")
    if block.get("scope") == GLOBAL_SCOPE and store.scope != GLOBAL_SCOPE:
        return SkippedRecord(str(fm["id"]), kind, "a global-scope record goes to the global store (--global)")
    # A record moving to another store takes that store's identity.
    scope = store.scope
    created_at = str(block["created_at"] if same_instant(block.get("created_at"), fm.get("created")) else fm["created"])
    updated_at = str(block["updated_at"] if same_instant(block.get("updated_at"), fm.get("updated")) else fm["updated"])
    if str(fm["updated"]) < str(fm["created"]):
        updated_at = created_at
    raw_supersedes = block.get("supersedes", [])
    supersedes = [*raw_supersedes] if isinstance(raw_supersedes, list) else raw_supersedes
    older = ids.get(str(fm.get("supersedes"))) if fm.get("supersedes") else None
    if older and isinstance(supersedes, list) and older not in supersedes:
        supersedes.append(older)
    access = block.get("access", "human" if fm.get("source") == "human" else "agent")
    actor = access if access in ("human", "agent") else "agent"
    try:
        if block.get("sources"):
            raw_sources = block["sources"]
            if not isinstance(raw_sources, list):
                raise InvalidArguments("invalid sources: must be a list", details={"field": "sources"})
            sources = tuple(source_from_json(_with_actor(s, actor), n) for n, s in enumerate(raw_sources))
        else:
            sources = (Source(kind="document", reference=f"memosite://{project}/{kind}/{path.stem}", actor=actor),)
        title = _clean_text(record_title(Record(frontmatter=dict(fm), body=body)) or "") or str(fm["id"])
        record = validate_record(
            StormRecord(
                id=_storm_id(project, kind, fm),
                title=title,
                kind=storm_kind_for(kind, block),
                scope=scope,
                status=STATUS_FROM_MEMOSITE.get(str(fm.get("status", "active")), "active"),
                access=access,
                created_at=created_at,
                updated_at=updated_at,
                body=body,
                tags=tuple(dict.fromkeys(t for t in (_clean_text(tag) for tag in fm.get("tags") or ()) if t)),
                aliases=tuple(block.get("aliases", ())),
                supersedes=tuple(supersedes),
                sources=sources,
            )
        )
    except InvalidArguments as exc:
        raise InvalidRecord(f"{where}: {exc.message}", details=exc.details) from exc
    head = block.get(SOURCE_HEAD)
    kept = f"{head}{body}" if isinstance(head, str) and says_the_same(f"{head}{body}", record) else None
    return _Exported(record, kind, path.stem, {**fm}, kept)


def _check_unique(vault: Vault, planned: list[_Exported], paths: list[Path]) -> None:
    seen: dict[str, Path] = {}
    for item, path in zip(planned, paths, strict=True):
        other = seen.setdefault(item.record.key, path)
        if other != path:
            raise InvalidRecord(
                f"{vault.relative(path)}: {BLOCK_KEY}.id {item.record.id} is also used by "
                f"{vault.relative(other)}; nothing was written",
                details={"field": f"{BLOCK_KEY}.id"},
            )


def _check_lifecycle(existing: Mapping[str, StormRecord], planned: list[_Exported]) -> None:
    refused = []
    for item in planned:
        before = existing.get(item.record.key)
        if (
            before is not None
            and before.status != item.record.status
            and not lifecycle.can_transition(before.status, item.record.status)
        ):
            refused.append(f"{item.record.id} {before.status}→{item.record.status}")
    if refused:
        raise InvalidTransition(
            f"export refused: the store's lifecycle does not allow {', '.join(refused[:5])}"
            + (f" and {len(refused) - 5} more" if len(refused) > 5 else "")
            + "; nothing was written",
            details={"refused": refused},
        )


def _write_sidecar(store: Store, record_id: str, sidecar: Sidecar | None) -> bool:
    """Write (or remove) the sidecar; True when the file changed."""
    path = sidecar_path(store, record_id)
    if sidecar is None:
        if path.exists():
            path.unlink()
            return True
        return False
    text = json.dumps(sidecar.to_json(), indent=2, ensure_ascii=False, sort_keys=True) + "\n"
    if path.is_file() and path.read_bytes().decode("utf-8", "replace") == text:
        return False
    atomic_write_text(path, text)
    return True
