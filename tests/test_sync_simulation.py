"""Three machines, one bare remote: random interleavings of writes and syncs until quiet.

Each operation a machine is told succeeded leaves a unique token (in a body), or changes fields.
Knowledge is tracked the way git spreads it: a machine knows its own writes, and a sync adds what
the remote held and hands everything back. Afterwards every vault must hold the same files byte
for byte, no file a conflict marker, each index what a fresh reindex gives, and every token must
be in its record or a conflict sidecar — unless a machine that knew it wrote over it, resolved it
away or purged the record, or a later purge took it.

CI runs a fixed seed. Locally: ``MEMOSITE_SYNC_SIM_OPS=2000 MEMOSITE_SYNC_SIM_SEED=7 pytest -s
tests/test_sync_simulation.py`` (the counts are printed either way).
"""

from __future__ import annotations

import dataclasses
import os
import random
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import pytest
from test_sync_support import Team, git, make_team, worktree_files

from memosite.errors import MemositeError
from memosite.refresh import reindex
from memosite.salience import record_feedback, record_hits
from memosite.schema import parse_datetime, parse_record, serialize_record, utc_now
from memosite.search import search_records
from memosite.store import append_event, forget_record, list_records, upsert_record
from memosite.sync.conflicts import list_conflicts, resolve_conflict
from memosite.sync.result import SyncResult
from memosite.sync.run import sync_vault
from memosite.vault import Vault

SEED = int(os.environ.get("MEMOSITE_SYNC_SIM_SEED", "20261201"))
OPERATIONS = int(os.environ.get("MEMOSITE_SYNC_SIM_OPS", "200"))
P = "team"
MACHINES = ("laptop", "desktop", "ci-box")
SLUGS = {f"{kind}-{n}": kind for kind in ("trap", "decision", "spec") for n in range(5)}
WORDS = [
    "lock", "verrou", "Sperre", "κλείδωμα", "замок", "قفل", "מנעול", "ताला", "锁", "ロック", "자물쇠",
    "กุญแจ", "kilit", "zámek", "🔒", "cache", "кэш", "キャッシュ", "ذاكرة", "缓存", "retry", "επανάληψη",
]  # fmt: skip
SEVERITIES = ("low", "medium", "high", "critical")


def sentence(rng: random.Random, n: int = 6) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


@dataclass(frozen=True)
class Write:
    token: str
    path: str
    machine: str
    at: datetime


@dataclass
class Simulation:
    team: Team
    rng: random.Random
    vaults: dict[str, Vault] = field(default_factory=dict)
    knowledge: dict[str, set[str]] = field(default_factory=dict)
    remote: set[str] = field(default_factory=set)
    writes: list[Write] = field(default_factory=list)
    overwritten: list[tuple[str, frozenset[str]]] = field(default_factory=list)  # (path, tokens known then)
    purges: list[tuple[str, datetime]] = field(default_factory=list)
    results: list[SyncResult] = field(default_factory=list)
    counts: Counter[str] = field(default_factory=Counter)
    serial: int = 0

    def token(self) -> str:
        self.serial += 1
        return f"tok-{self.serial:05d}"

    def records(self, name: str) -> list[Path]:
        return list(self.vaults[name].iter_record_files(P))

    def knew(self, name: str, path: str) -> frozenset[str]:
        return frozenset(w.token for w in self.writes if w.path == path and w.token in self.knowledge[name])

    def acknowledge(self, name: str, token: str, path: str, at: datetime) -> None:
        self.writes.append(Write(token, path, name, at))
        self.knowledge[name].add(token)

    # --- operations ------------------------------------------------------------------------
    def upsert(self, name: str) -> None:
        vault, slug = self.vaults[name], self.rng.choice(sorted(SLUGS))
        token, at = self.token(), utc_now()
        path = f"projects/{P}/{SLUGS[slug]}s/{slug}.md"
        before = self.knew(name, path)
        frontmatter: dict[str, object] = {"title": sentence(self.rng, 3)}
        if SLUGS[slug] == "trap":
            frontmatter["severity"] = self.rng.choice(SEVERITIES)
        result = upsert_record(
            vault, P, kind=SLUGS[slug], slug=slug, body=f"{token} {sentence(self.rng)}\n", frontmatter=frontmatter
        )
        assert result.path == path
        self.overwritten.append((path, before))
        self.acknowledge(name, token, path, at)

    def append(self, name: str) -> None:
        token, at = self.token(), utc_now()
        result = append_event(self.vaults[name], P, event=f"{token} {sentence(self.rng, 4)}")
        self.acknowledge(name, token, result.path, at)

    def hit(self, name: str) -> None:
        files = self.records(name)
        if files:
            record_hits(self.vaults[name], P, [self.rng.choice(files).stem])

    def feedback(self, name: str) -> None:
        files = self.records(name)
        if files:
            record_feedback(self.vaults[name], P, self.rng.choice(files).stem, helpful=self.rng.random() < 0.6)

    def archive(self, name: str) -> None:
        files = self.records(name)
        if files:
            forget_record(self.vaults[name], P, record_id=self.rng.choice(files).stem)

    def purge(self, name: str) -> None:
        files = self.records(name)
        if not files:
            return
        chosen = self.rng.choice(files)
        path = self.vaults[name].relative(chosen)
        before = self.knew(name, path)
        forget_record(self.vaults[name], P, record_id=chosen.stem, purge=True)
        self.overwritten.append((path, before))
        self.purges.append((path, utc_now()))

    def hand_edit_body(self, name: str) -> None:
        files = self.records(name)
        if not files:
            return
        chosen = self.rng.choice(files)
        path = self.vaults[name].relative(chosen)
        token, at = self.token(), utc_now()
        record = parse_record(chosen.read_text(encoding="utf-8"), validate=False)
        record.body = f"{token} edited by hand: {sentence(self.rng)}\n"
        self.overwritten.append((path, self.knew(name, path)))
        chosen.write_text(serialize_record(record), encoding="utf-8")
        self.acknowledge(name, token, path, at)

    def hand_edit_field(self, name: str) -> None:
        files = self.records(name)
        if not files:
            return
        chosen = self.rng.choice(files)
        record = parse_record(chosen.read_text(encoding="utf-8"), validate=False)
        record.frontmatter["note"] = sentence(self.rng, 2)
        chosen.write_text(serialize_record(record), encoding="utf-8")

    def resolve(self, name: str) -> None:
        found = list_conflicts(self.vaults[name])
        if not found:
            return
        conflict = self.rng.choice(found)
        before = self.knew(name, conflict.path)
        # mine/theirs where this machine wrote one of the versions, else by place
        take = self.rng.choice(["mine", "theirs", "local", "remote"] if conflict.mine else ["in-place", "sidecar"])
        resolve_conflict(self.vaults[name], conflict.short_id, take=take)  # type: ignore[arg-type]
        self.overwritten.append((conflict.path, before))
        self.counts[f"resolve-{take}"] += 1

    def read(self, name: str) -> None:
        """What an agent does between writes: list and search (each picks up edits made by hand)."""
        list_records(self.vaults[name], P)
        search_records(self.vaults[name], P, self.rng.choice(WORDS))

    def sync(self, name: str) -> SyncResult:
        result = sync_vault(self.vaults[name])
        self.knowledge[name] |= self.remote
        self.remote = set(self.knowledge[name])
        self.results.append(result)
        self.counts[f"sync-{result.integration}"] += 1
        self.counts["conflicts"] += len(result.conflicts)
        self.counts["merged-records"] += len(result.merged)
        self.counts["purged-by-tombstone"] += len(result.purged)
        self.counts["kept-after-purge"] += len(result.kept_after_purge)
        return result

    def step(self) -> None:
        name = self.rng.choice(MACHINES)
        operations = [
            (self.upsert, 28),
            (self.append, 8),
            (self.hit, 14),
            (self.feedback, 5),
            (self.archive, 4),
            (self.purge, 6),
            (self.hand_edit_body, 7),
            (self.hand_edit_field, 4),
            (self.resolve, 3),
            (self.read, 4),
            (self.sync, 16),
        ]
        operation = self.rng.choices([op for op, _ in operations], [w for _, w in operations])[0]
        try:
            operation(name)
        except MemositeError as exc:  # a refusal (e.g. a superseded record): nothing acknowledged
            self.counts[f"refused-{exc.code}"] += 1
            return
        self.counts[operation.__name__] += 1


@pytest.fixture
def team(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Team]:
    yield from make_team(tmp_path, monkeypatch)


def index_rows(vault: Vault) -> list[dict[str, object]]:
    rows = [dataclasses.asdict(entry) for entry in vault.index().entries()]
    for row in rows:
        row.pop("mtime_ns", None)
    return sorted(rows, key=lambda row: str(row["path"]))


@pytest.mark.slow
def test_three_machines_converge_without_losing_a_write(team: Team, capsys: pytest.CaptureFixture[str]) -> None:
    sim = Simulation(team, random.Random(SEED))
    for name in MACHINES:
        sim.vaults[name] = team.machine(name)
        sim.knowledge[name] = set()
    sim.upsert(MACHINES[0])
    for name in MACHINES:  # the first machine publishes its vault, the others join it
        sim.sync(name)
    for _ in range(OPERATIONS):
        sim.step()
    for _round in range(8):  # sync in random order until a whole round moves nothing
        order = list(MACHINES)
        sim.rng.shuffle(order)
        if all([sim.sync(name).quiet for name in order]):
            break
    else:
        raise AssertionError("the machines did not become quiet")

    vaults = [sim.vaults[name] for name in MACHINES]
    for name in MACHINES:  # a read after the last sync finds the index in step: it changes no file
        sim.read(name)
    # The same records, byte for byte, everywhere; nothing uncommitted, no conflict markers.
    heads = {git(v.root, "rev-parse", "HEAD").strip() for v in vaults}
    assert len(heads) == 1 and git(team.remote, "rev-parse", "main").strip() in heads
    files = [worktree_files(v.root) for v in vaults]
    assert files[0] == files[1] == files[2]
    for vault in vaults:
        assert git(vault.root, "status", "--porcelain") == ""
    for relative, data in files[0].items():
        for marker in (b"<<<<<<< ", b"\n=======\n", b">>>>>>> "):
            assert marker not in data, f"conflict marker in {relative}"
    # Every acknowledged write is in its record or a sidecar, or legitimately gone.
    tombstones = [
        (t["path"], parse_datetime(t["deletedAt"])) for t in vaults[0].read_tombstones() if t.get("deletedAt")
    ]
    texts = {path: data.decode("utf-8") for path, data in files[0].items() if path.startswith("projects/")}
    lost = []
    for write in sim.writes:
        stem = write.path[: -len(".md")]
        holders = [text for path, text in texts.items() if path == write.path or path.startswith(f"{stem}.conflict.")]
        if any(write.token in text for text in holders):
            continue
        if any(path == write.path and write.token in known for path, known in sim.overwritten):
            continue
        if any(path == write.path and deleted > write.at for path, deleted in tombstones):
            continue
        lost.append(write)
    assert lost == []
    # A purged record that is back was edited after the purge (and the sync said so).
    kept = {note.path for result in sim.results for note in result.kept_after_purge}
    for path, purged_at in sim.purges:
        if path in files[0]:
            later = any(w.path == path and w.at > purged_at for w in sim.writes)
            assert later or path in kept, f"{path} came back after its purge without a reason"
    # Each index is what a fresh reindex gives.
    for vault in vaults:
        before = index_rows(vault)
        vault.close()
        for suffix in ("", "-wal", "-shm"):
            Path(f"{vault.index_path}{suffix}").unlink(missing_ok=True)
        reindex(vault)
        fresh = index_rows(vault)
        differences = [
            (old["path"], key, old.get(key), new.get(key))
            for old, new in zip(before, fresh, strict=False)
            for key in old
            if old.get(key) != new.get(key)
        ]
        assert len(fresh) == len(before) and differences == [], f"{vault.root.name}: index differs from a reindex"
    with capsys.disabled():
        summary = ", ".join(f"{key} {value}" for key, value in sorted(sim.counts.items()))
        print(f"\nsync simulation (seed {SEED}, {OPERATIONS} operations): {summary}")
    assert sim.counts["sync-merge"] > 0 and sim.counts["upsert"] > 0
