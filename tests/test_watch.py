"""The watch loop: what counts as a change (pure, with made-up events) and real file system edits."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from memosite.store import upsert_record
from memosite.vault import Vault
from memosite.watch import (
    PROBE_PREFIX,
    Debouncer,
    FileEvent,
    VaultWatcher,
    WatchBatch,
    projects_changed,
    record_project,
    records_changed,
)

ROOT = Path("/vault/projects")


def _event(kind: str, path: str, dest: str = "", *, directory: bool = False) -> FileEvent:
    return FileEvent(kind, str(ROOT / path), str(ROOT / dest) if dest else "", directory)


# --- what changed: pure decisions ------------------------------------------------------------


def test_record_file_in_a_kind_directory_belongs_to_its_project() -> None:
    assert record_project(ROOT, str(ROOT / "shop/traps/cookie.md")) == "shop"
    assert record_project(ROOT, str(ROOT / "shop/plans/rollout.md")) == "shop"


@pytest.mark.parametrize(
    "path",
    [
        "shop/TRAPS.md",  # a compiled view, written by memosite itself
        "shop/INDEX.md",
        "shop/traps/.memosite-tmp-abc123",  # the temp file of an atomic write
        "shop/traps/cookie.conflict.1.md",  # a sync conflict sidecar
        "shop/traps/cookie.md.swp",  # an editor's swap file
        "shop/traps/notes/cookie.md",  # deeper than a record can be
        "shop/attic/cookie.md",  # not a kind directory
        ".git/traps/cookie.md",  # hidden directory
        "bad project/traps/cookie.md",  # not a project id
    ],
)
def test_paths_that_are_not_records_are_ignored(path: str) -> None:
    assert record_project(ROOT, str(ROOT / path)) is None
    assert projects_changed(ROOT, [_event("modified", path)]) == set()


def test_paths_outside_the_projects_directory_are_ignored() -> None:
    internal = FileEvent("modified", "/vault/.memosite/index.sqlite")
    assert projects_changed(ROOT, [internal]) == set()


def test_reading_a_record_is_not_a_change() -> None:
    reads = [_event("opened", "shop/traps/cookie.md"), _event("closed_no_write", "shop/traps/cookie.md")]
    assert projects_changed(ROOT, reads) == set()


def test_create_modify_delete_of_a_record_are_changes() -> None:
    for kind in ("created", "modified", "deleted"):
        assert projects_changed(ROOT, [_event(kind, "shop/traps/cookie.md")]) == {"shop"}


def test_save_by_rename_counts_the_destination_record() -> None:
    save = _event("moved", "shop/traps/.cookie.md.swx", "shop/traps/cookie.md")
    assert projects_changed(ROOT, [save]) == {"shop"}


def test_renaming_a_record_away_counts_its_source() -> None:
    away = _event("moved", "shop/traps/cookie.md", "shop/traps/cookie.md.bak")
    assert projects_changed(ROOT, [away]) == {"shop"}


def test_moving_a_record_between_projects_counts_both() -> None:
    move = _event("moved", "shop/traps/cookie.md", "blog/traps/cookie.md")
    assert projects_changed(ROOT, [move]) == {"shop", "blog"}


def test_deleting_a_kind_directory_or_project_counts_the_project() -> None:
    assert projects_changed(ROOT, [_event("deleted", "shop/traps", directory=True)]) == {"shop"}
    assert projects_changed(ROOT, [_event("deleted", "shop", directory=True)]) == {"shop"}
    assert projects_changed(ROOT, [_event("modified", "shop/traps", directory=True)]) == set()


def test_record_events_name_their_files_and_directory_events_the_whole_project() -> None:
    changes = records_changed(
        ROOT,
        [
            _event("modified", "shop/traps/a.md"),
            _event("moved", "shop/traps/.a.md.tmp", "shop/traps/b.md"),
            _event("moved", "shop/traps/c.md", "shop/decisions/c.md"),
            _event("deleted", "shop/traps/d.md"),
            _event("deleted", "billing/traps", directory=True),
            _event("modified", "billing/traps/e.md"),
            _event("modified", "ops/traps", directory=True),  # a file came or went: its own event says which
            _event("opened", "ops/traps/f.md"),
        ],
    )
    assert changes == {
        "shop": {
            "projects/shop/traps/a.md",
            "projects/shop/traps/b.md",
            "projects/shop/traps/c.md",
            "projects/shop/decisions/c.md",
            "projects/shop/traps/d.md",
        },
        "billing": None,
    }


def test_burst_is_due_once_events_stop_for_the_quiet_period() -> None:
    debouncer = Debouncer(quiet=0.25, max_delay=2.0)
    assert not debouncer.due(0.0)
    for moment in (10.0, 10.1, 10.2):
        debouncer.note(moment)
    assert not debouncer.due(10.4)
    assert debouncer.wait_time(10.4) == pytest.approx(0.05)
    assert debouncer.due(10.45)
    debouncer.reset()
    assert not debouncer.pending and not debouncer.due(20.0)


def test_steady_trickle_is_due_after_the_maximum_delay() -> None:
    debouncer = Debouncer(quiet=0.25, max_delay=2.0)
    moment = 0.0
    while moment < 1.95:
        debouncer.note(moment)
        assert not debouncer.due(moment)
        moment += 0.1
    debouncer.note(2.0)
    assert debouncer.due(2.0)


# --- real file system ------------------------------------------------------------------------

QUIET = 0.2


class _Recorder:
    def __init__(self) -> None:
        self.batches: list[WatchBatch] = []
        self.changed = threading.Condition()
        self.watcher: VaultWatcher | None = None

    def __call__(self, batch: WatchBatch) -> None:
        with self.changed:
            self.batches.append(batch)
            self.changed.notify_all()

    def wait_for(self, count: int, timeout: float = 120.0) -> list[WatchBatch]:
        with self.changed:
            self.changed.wait_for(lambda: len(self.batches) >= count, timeout)
        return list(self.batches)

    def settle(self) -> list[WatchBatch]:
        """The batches once every change made so far has been handled (the watcher's handshake)."""
        assert self.watcher is not None and self.watcher.wait_settled(120)
        return list(self.batches)


@pytest.fixture
def shop(vault: Vault) -> Path:
    upsert_record(
        vault,
        "shop",
        kind="trap",
        body="The session cookie loses SameSite behind the CDN.",
        frontmatter={"title": "Cookie loses SameSite"},
    )
    return vault.record_path("shop", "trap", "cookie-loses-samesite")


@pytest.fixture
def watching(vault: Vault, shop: Path) -> Iterator[_Recorder]:
    recorder = _Recorder()
    watcher = VaultWatcher(vault.root, on_change=recorder, quiet=QUIET, catch_up=False)
    recorder.watcher = watcher
    watcher.start()
    assert watcher.wait_ready(120)
    try:
        yield recorder
    finally:
        watcher.stop()


def _view(vault: Vault) -> str:
    return (vault.project_dir("shop") / "TRAPS.md").read_text(encoding="utf-8")


def test_external_edit_leads_to_exactly_one_recompile(vault: Vault, shop: Path, watching: _Recorder) -> None:
    text = shop.read_text(encoding="utf-8")
    with open(shop, "w", encoding="utf-8") as handle:  # an editor writing in place, in pieces
        handle.write(text)
        handle.flush()
        handle.write("\nSet SameSite=Lax explicitly in the session middleware.\n")
    batches = watching.wait_for(1)
    assert len(watching.settle()) == 1
    assert batches[0].to_json()["projects"][0]["changed"] == ["projects/shop/traps/cookie-loses-samesite.md"]
    assert "SameSite=Lax explicitly" in _view(vault)
    assert "SameSite=Lax explicitly" in vault.index().by_path(vault.relative(shop)).body


def test_atomic_save_by_rename_leads_to_exactly_one_recompile(vault: Vault, shop: Path, watching: _Recorder) -> None:
    temp = shop.with_name(".cookie-loses-samesite.md.tmp")
    temp.write_text(shop.read_text(encoding="utf-8").replace("behind the CDN", "behind the proxy"), encoding="utf-8")
    os.replace(temp, shop)
    watching.wait_for(1)
    assert len(watching.settle()) == 1
    assert "behind the proxy" in _view(vault)


def test_delete_leads_to_exactly_one_recompile(vault: Vault, shop: Path, watching: _Recorder) -> None:
    shop.unlink()
    batches = watching.wait_for(1)
    assert len(watching.settle()) == 1
    assert batches[0].projects[0].removed == ["projects/shop/traps/cookie-loses-samesite.md"]
    assert "Cookie loses SameSite" not in _view(vault)
    assert vault.index().by_path(vault.relative(shop)) is None


def test_new_record_file_is_indexed_and_compiled(vault: Vault, shop: Path, watching: _Recorder) -> None:
    fresh = shop.with_name("retry-storm.md")
    fresh.write_text(
        "---\nid: retry-storm\nkind: trap\nproject: shop\ncreated: 2026-01-01\nupdated: 2026-01-01\n"
        "title: Retry storm after deploy\nseverity: high\n---\nClients retry in lockstep.\n",
        encoding="utf-8",
    )
    watching.wait_for(1)
    assert "Retry storm after deploy" in _view(vault)


def test_unparseable_record_warns_and_the_watcher_keeps_going(
    vault: Vault, shop: Path, watching: _Recorder, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = shop.with_name("broken.md")
    broken.write_text("---\ntitle: [unclosed\n---\nbody\n", encoding="utf-8")
    first = watching.wait_for(1)
    assert first[0].projects[0].invalid == ["projects/shop/traps/broken.md"]
    assert "skipping projects/shop/traps/broken.md" in capsys.readouterr().err
    shop.write_text(shop.read_text(encoding="utf-8") + "\nStill watching.\n", encoding="utf-8")
    watching.wait_for(2)
    assert "Still watching." in _view(vault)


def test_memosite_own_writes_do_not_recompile_the_views_again(vault: Vault, shop: Path, watching: _Recorder) -> None:
    views = vault.project_dir("shop") / "TRAPS.md"
    before = views.stat().st_mtime_ns
    upsert_record(
        vault, "shop", kind="trap", body="Timezones default to the server's.", frontmatter={"title": "Server timezone"}
    )
    after_store = views.stat().st_mtime_ns
    batches = watching.wait_for(1)
    settled = watching.settle()
    assert len(settled) == 1 and not batches[0].touched  # the store had indexed it already
    assert views.stat().st_mtime_ns == after_store != before


def test_watch_command_prints_one_json_line_per_compile(vault: Vault, shop: Path) -> None:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    command = [
        str(Path(sys.executable).with_name("memosite")),
        "watch",
        "--vault",
        str(vault.root),
        "--json",
        "--quiet-seconds",
        str(QUIET),
    ]
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, encoding="utf-8", env=env
    ) as process:
        try:
            assert "watching" in process.stderr.readline()  # printed once the watcher sees the files
            shop.write_text(shop.read_text(encoding="utf-8") + "\nEdited by hand.\n", encoding="utf-8")
            line = process.stdout.readline()
            changed = json.loads(line)["projects"][0]["changed"]
            assert changed == ["projects/shop/traps/cookie-loses-samesite.md"]
        finally:
            process.terminate()
            process.wait(timeout=10)
    assert process.returncode == 0


def test_settled_means_every_change_made_so_far_was_compiled(vault: Vault, shop: Path, watching: _Recorder) -> None:
    shop.write_text(shop.read_text(encoding="utf-8") + "\nÉdité à la main · 手で編集.\n", encoding="utf-8")
    settled = watching.settle()  # no waiting for a batch first: settling waits for it
    assert len(settled) == 1 and "手で編集" in _view(vault)
    assert not [p.name for p in (vault.root / "projects").iterdir() if p.name.startswith(PROBE_PREFIX)]


def test_a_watcher_not_started_is_never_ready(vault: Vault) -> None:
    watcher = VaultWatcher(vault.root, quiet=QUIET)
    assert not watcher.wait_ready(0.01)
    assert not watcher.wait_settled(0.01)


# --- only the files the watcher saw change are read ------------------------------------------


def _record_text(slug: str, title: str, body: str) -> str:
    return (
        f"---\nid: {slug}\nkind: trap\nproject: shop\ncreated: 2026-01-01\nupdated: 2026-01-01\n"
        f"title: {title}\nseverity: high\n---\n{body}\n"
    )


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the record files the index reads, in order (the real parser does the reading)."""
    import memosite.refresh

    seen: list[str] = []
    real = memosite.refresh.read_record

    def counting(path: Path) -> object:
        seen.append(path.name)
        return real(path)

    monkeypatch.setattr(memosite.refresh, "read_record", counting)
    return seen


@pytest.fixture
def bystander(vault: Vault, shop: Path) -> Path:
    """A record edited while no watcher ran: a refresh of the whole project would read it again."""
    path = shop.with_name("bystander.md")
    path.write_text(_record_text("bystander", "Bystander", "Untouched by the watcher."), encoding="utf-8")
    from memosite.refresh import refresh_project

    refresh_project(vault, "shop")
    edited = _record_text("bystander", "Bystander", "Edited while nobody watched · 見ていない.")
    path.write_text(edited, encoding="utf-8")
    return path


def _changes(batches: list[WatchBatch]) -> dict[str, list[str]]:
    merged: dict[str, list[str]] = {"added": [], "changed": [], "removed": [], "invalid": []}
    for batch in batches:
        for project in batch.to_json()["projects"]:
            for key in merged:
                merged[key] += project[key]
    return merged


def test_an_edit_seen_by_the_watcher_reads_that_file_alone(
    vault: Vault, shop: Path, bystander: Path, parses: list[str], watching: _Recorder
) -> None:
    shop.write_text(shop.read_text(encoding="utf-8") + "\nÉdité · Ελληνικά · правка · 🍪\n", encoding="utf-8")
    batches = watching.settle()
    assert parses == ["cookie-loses-samesite.md"]
    assert _changes(batches)["changed"] == ["projects/shop/traps/cookie-loses-samesite.md"]
    assert "🍪" in vault.index().by_path(vault.relative(shop)).body
    assert "見ていない" not in vault.index().by_path(vault.relative(bystander)).body  # not read: not seen


def test_a_new_file_seen_by_the_watcher_is_indexed_alone(
    vault: Vault, shop: Path, bystander: Path, parses: list[str], watching: _Recorder
) -> None:
    fresh = shop.with_name("retry-storm.md")
    fresh.write_text(_record_text("retry-storm", "Retry storm · عاصفة", "Clients retry in lockstep."), encoding="utf-8")
    batches = watching.settle()
    assert parses == ["retry-storm.md"]
    assert _changes(batches)["added"] == ["projects/shop/traps/retry-storm.md"]
    assert "Retry storm · عاصفة" in _view(vault)


def test_a_deletion_seen_by_the_watcher_drops_that_row_and_reads_nothing(
    vault: Vault, shop: Path, bystander: Path, parses: list[str], watching: _Recorder
) -> None:
    shop.unlink()
    batches = watching.settle()
    assert parses == []
    assert _changes(batches)["removed"] == ["projects/shop/traps/cookie-loses-samesite.md"]
    assert vault.index().by_path(vault.relative(shop)) is None
    assert vault.index().by_path(vault.relative(bystander)) is not None
    assert "Cookie loses SameSite" not in _view(vault)


def test_a_rename_seen_by_the_watcher_moves_that_row_alone(
    vault: Vault, shop: Path, bystander: Path, parses: list[str], watching: _Recorder
) -> None:
    renamed = shop.with_name("samesite-cookie.md")
    os.replace(shop, renamed)
    batches = watching.settle()
    assert parses == ["samesite-cookie.md"]
    changes = _changes(batches)
    assert changes["added"] == ["projects/shop/traps/samesite-cookie.md"]
    assert changes["removed"] == ["projects/shop/traps/cookie-loses-samesite.md"]
    assert vault.index().by_path(vault.relative(shop)) is None
    assert vault.index().by_path(vault.relative(renamed)) is not None


def test_a_file_that_stops_parsing_is_reported_and_leaves_the_index(
    vault: Vault,
    shop: Path,
    bystander: Path,
    parses: list[str],
    watching: _Recorder,
    capsys: pytest.CaptureFixture[str],
) -> None:
    shop.write_text("---\ntitle: [unclosed · 閉じていない\n---\nbody\n", encoding="utf-8")
    batches = watching.settle()
    assert parses == ["cookie-loses-samesite.md"]
    changes = _changes(batches)
    assert changes["invalid"] == changes["removed"] == ["projects/shop/traps/cookie-loses-samesite.md"]
    assert "skipping projects/shop/traps/cookie-loses-samesite.md" in capsys.readouterr().err
    assert vault.index().by_path(vault.relative(shop)) is None
    assert "Cookie loses SameSite" not in _view(vault)


def test_a_kind_directory_moved_away_refreshes_its_project_whole(
    vault: Vault, shop: Path, bystander: Path, parses: list[str], watching: _Recorder
) -> None:
    os.replace(shop.parent, vault.root / "traps-aside")
    batches = watching.settle()
    assert parses == []
    assert sorted(_changes(batches)["removed"]) == [
        "projects/shop/traps/bystander.md",
        "projects/shop/traps/cookie-loses-samesite.md",
    ]


def test_lost_events_refresh_every_project_whole(
    vault: Vault, shop: Path, bystander: Path, parses: list[str], watching: _Recorder
) -> None:
    import logging

    # What watchdog logs when the kernel's inotify queue overflowed (its only report of it).
    logging.getLogger("watchdog.observers.inotify_c").warning("Inotify queue overflowed; filesystem events were lost")
    batches = watching.settle()
    assert parses == ["bystander.md"]
    assert _changes(batches)["changed"] == ["projects/shop/traps/bystander.md"]
    assert "見ていない" in vault.index().by_path(vault.relative(bystander)).body
