"""Memory you can trust (issue 14): citations pinned to the code and judged against a real git
repository, review before agent memory counts, and provenance on every record."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, types

from memosite.mcp_server.server import build_server
from memosite.recordfile import read_record
from memosite.vault import Vault

CLIENT_CODE = "".join(f"line {n}: charge(order, key={n})\n" for n in range(1, 101))


def git(repo: Path, *args: str) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "Dev Person",
        "GIT_AUTHOR_EMAIL": "dev@example.org",
        "GIT_COMMITTER_NAME": "Dev Person",
        "GIT_COMMITTER_EMAIL": "dev@example.org",
    }
    done = subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, encoding="utf-8", env=env, check=True
    )
    return done.stdout.strip()


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "shop"
    (root / "src" / "pay").mkdir(parents=True)
    (root / "src" / "pay" / "client.py").write_text(CLIENT_CODE, encoding="utf-8")
    (root / "src" / "pay" / "refunds.py").write_text("def refund():\n    return 1\n", encoding="utf-8")
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "first")
    monkeypatch.chdir(root)
    for name in ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL"):
        monkeypatch.setenv(name, {"GIT_AUTHOR_NAME": "Dev Person", "GIT_AUTHOR_EMAIL": "dev@example.org"}[name])
    return root


def commit_all(repo: Path, message: str) -> str:
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", message)
    return git(repo, "rev-parse", "--short", "HEAD")


def cite_trap(run_cli: Any, slug: str, *cites: str) -> dict[str, Any]:
    args = ["upsert", "--kind", "trap", "--slug", slug, "--body", f"Trap {slug}.", "--json"]
    for cite in cites:
        args += ["--cite", cite]
    outcome = run_cli(*args)
    assert outcome.exit_code == 0, outcome.stdout
    return outcome.json()


def verdicts(run_cli: Any) -> dict[str, dict[str, Any]]:
    outcome = run_cli("verify", "--json")
    assert outcome.exit_code == 0, outcome.stdout
    return {record["id"]: record for record in outcome.json()["records"]}


# --- citations ---------------------------------------------------------------------------


def test_a_cite_pins_the_lines_hash_and_the_commit(repo: Path, vault_dir: Path, run_cli: Any) -> None:
    cite_trap(run_cli, "retries", "src/pay/client.py:40-72")
    fm = read_record(vault_dir / "projects/demo/traps/retries.md").frontmatter
    span = "".join(CLIENT_CODE.splitlines(keepends=True)[39:72]).encode()
    assert fm["cites"] == [
        {
            "path": "src/pay/client.py",
            "lines": "40-72",
            "sha256": hashlib.sha256(span).hexdigest(),
            "commit": git(repo, "rev-parse", "HEAD"),
        }
    ]


@pytest.mark.parametrize(
    ("cite", "reason"),
    [("src/pay/nope.py", "no such file"), ("src/pay/client.py:90-120", "has 100 lines"), ("../etc/passwd", "inside")],
)
def test_a_cite_that_cannot_be_read_is_refused(repo: Path, run_cli: Any, cite: str, reason: str) -> None:
    outcome = run_cli("upsert", "--kind", "trap", "--body", "x", "--cite", cite, "--json")
    assert outcome.exit_code == 1 and reason in outcome.json()["error"]["message"]


def test_verdicts_follow_the_code(repo: Path, vault_dir: Path, run_cli: Any) -> None:
    cite_trap(run_cli, "inside", "src/pay/client.py:40-50")
    cite_trap(run_cli, "after", "src/pay/client.py:60-70")
    cite_trap(run_cli, "whole", "src/pay/refunds.py")
    cite_trap(run_cli, "deleted", "src/pay/client.py:1-3", "src/pay/refunds.py:1-2")
    assert {k: v["verdict"] for k, v in verdicts(run_cli).items()} == dict.fromkeys(
        ["inside", "after", "whole", "deleted"], "fresh"
    )
    before = {p.name: p.read_bytes() for p in (vault_dir / "projects/demo/traps").iterdir()}

    lines = CLIENT_CODE.splitlines(keepends=True)
    lines[44] = "line 45: charge(order)  # the key went missing\n"  # inside 40-50
    lines.insert(0, "import retry\n")  # shifts 60-70 down by one, unchanged
    (repo / "src/pay/client.py").write_text("".join(lines), encoding="utf-8")
    edited = commit_all(repo, "drop the idempotency key")
    git(repo, "mv", "src/pay/refunds.py", "src/pay/refund_api.py")
    renamed = commit_all(repo, "rename refunds")

    found = verdicts(run_cli)
    assert found["inside"]["verdict"] == "drifted"
    inside = found["inside"]["cites"][0]
    assert inside["changedLines"] == "46-46"  # one line inserted above, then the edited line
    assert inside["commits"][0] == f"{edited} drop the idempotency key"
    assert found["after"]["verdict"] == "fresh" and found["after"]["cites"][0]["movedTo"] == "61-71"
    assert found["whole"]["verdict"] == "missing" and found["whole"]["cites"][0]["renamedTo"] == "src/pay/refund_api.py"
    assert found["deleted"]["verdict"] == "missing"  # its worst citation decides
    assert renamed
    after = {p.name: p.read_bytes() for p in (vault_dir / "projects/demo/traps").iterdir()}
    assert after == before  # verify is a read path: no record changes


def test_verify_update_repins_a_record_a_person_confirmed(repo: Path, vault_dir: Path, run_cli: Any) -> None:
    cite_trap(run_cli, "inside", "src/pay/client.py:40-50")
    text = CLIENT_CODE.replace("line 45: charge(order, key=45)", "line 45: charge(order, key=45, retry=True)")
    (repo / "src/pay/client.py").write_text(text, encoding="utf-8")
    commit_all(repo, "retry flag")
    assert verdicts(run_cli)["inside"]["verdict"] == "drifted"
    updated = run_cli("verify", "--update", "inside", "--json")
    assert updated.exit_code == 0 and updated.json()["verdict"] == "fresh"
    assert verdicts(run_cli)["inside"]["verdict"] == "fresh"
    cite = read_record(vault_dir / "projects/demo/traps/inside.md").frontmatter["cites"][0]
    assert cite["commit"] == git(repo, "rev-parse", "HEAD")


def test_status_counts_the_verdicts(repo: Path, run_cli: Any) -> None:
    cite_trap(run_cli, "a", "src/pay/client.py:1-2")
    cite_trap(run_cli, "b", "src/pay/refunds.py")
    (repo / "src/pay/refunds.py").unlink()
    verdicts(run_cli)
    report = run_cli("status", "--json").json()
    assert report["verdicts"] == {"fresh": 1, "drifted": 0, "missing": 1}


# --- provenance --------------------------------------------------------------------------


def test_a_cli_write_records_the_persons_git_identity_and_the_commit(repo: Path, vault_dir: Path, run_cli: Any) -> None:
    run_cli("upsert", "--kind", "decision", "--slug", "d", "--body", "We keep Postgres.", "--session-id", "s-9")
    fm = read_record(vault_dir / "projects/demo/decisions/d.md").frontmatter
    assert fm["source"] == "human" and fm["author"] == "Dev Person <dev@example.org>"
    assert fm["repoCommit"] == git(repo, "rev-parse", "HEAD") and fm["sessionId"] == "s-9"


def test_without_author_variables_the_identity_is_the_one_git_config_resolves(
    repo: Path, vault_dir: Path, run_cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # One git process answers both keys; the repository's own setting wins over the global one.
    monkeypatch.delenv("GIT_AUTHOR_NAME")
    monkeypatch.delenv("GIT_AUTHOR_EMAIL")
    global_config = repo.parent / "global.gitconfig"
    global_config.write_text("[user]\n\tname = Someone Else\n\temail = else@example.org\n", encoding="utf-8")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(global_config))
    git(repo, "config", "user.name", "Ана Дев")
    run_cli("upsert", "--kind", "decision", "--slug", "named", "--body", "We keep Postgres.")
    fm = read_record(vault_dir / "projects/demo/decisions/named.md").frontmatter
    assert fm["author"] == "Ана Дев <else@example.org>"
    # A repository that sets its email empty blanks the global one, as `git config --get` says.
    other = repo.parent / "other"
    git(repo.parent, "init", "-q", str(other))
    git(other, "config", "user.name", "Ана Дев")
    git(other, "config", "user.email", "")
    monkeypatch.chdir(other)
    run_cli("upsert", "--kind", "decision", "--slug", "blank", "--body", "We keep Redis.")
    assert read_record(vault_dir / "projects/demo/decisions/blank.md").frontmatter["author"] == "Ана Дев"


# --- review ------------------------------------------------------------------------------


def review_vault(vault_dir: Path, **review: Any) -> None:
    vault_dir.mkdir(parents=True, exist_ok=True)
    config = {"review": {"required": ["trap", "decision"], **review}, "vaultGit": {"enabled": True, "atomic": True}}
    (vault_dir / "config.json").write_text(json.dumps(config), encoding="utf-8")


async def agent_upsert(vault_dir: Path, **arguments: Any) -> types.CallToolResult:
    vault = Vault.open(vault_dir)
    try:
        server = build_server(vault, "demo")
        async with Client(server, mode="legacy", client_info=types.Implementation(name="codex", version="2.0")) as c:
            return await c.call_tool("upsert", arguments)
    finally:
        vault.close()


def test_agent_writes_of_reviewed_kinds_wait_for_a_person(repo: Path, vault_dir: Path, run_cli: Any) -> None:
    review_vault(vault_dir)
    result = anyio.run(lambda: agent_upsert(vault_dir, kind="decision", slug="cache", body="Cache for 5 minutes."))
    assert not result.is_error
    fm = read_record(vault_dir / "projects/demo/decisions/cache.md").frontmatter
    assert fm["review"] == "pending" and fm["source"] == "agent" and fm["author"] == "codex 2.0 via memosite"
    run_cli("upsert", "--kind", "decision", "--slug", "human", "--body", "People decide this.")
    assert "review" not in read_record(vault_dir / "projects/demo/decisions/human.md").frontmatter
    run_cli("upsert", "--kind", "trap", "--slug", "scripted", "--body", "x", "--source", "agent")
    assert read_record(vault_dir / "projects/demo/traps/scripted.md").frontmatter["review"] == "pending"
    run_cli("upsert", "--kind", "spec", "--slug", "spec", "--body", "x", "--source", "agent")
    assert "review" not in read_record(vault_dir / "projects/demo/specs/spec.md").frontmatter
    listed = run_cli("review", "--json").json()["pending"]
    assert [item["id"] for item in listed] == ["scripted", "cache"] or {i["id"] for i in listed} == {
        "scripted",
        "cache",
    }


@pytest.mark.parametrize("field", [{"review": "approved"}, {"reviewedBy": "me"}, {"source": "human"}, {"author": "x"}])
def test_an_agent_cannot_approve_itself_or_claim_a_person_wrote(vault_dir: Path, field: dict[str, str]) -> None:
    review_vault(vault_dir)
    result = anyio.run(lambda: agent_upsert(vault_dir, kind="decision", slug="d", body="x", frontmatter=field))
    assert result.is_error and (result.structured_content or {})["error"]["code"] == "INVALID_ARGUMENTS"
    assert not (vault_dir / "projects/demo/decisions/d.md").exists()


def test_approve_accepts_and_the_commit_names_the_reviewer(repo: Path, vault_dir: Path, run_cli: Any) -> None:
    review_vault(vault_dir)
    anyio.run(lambda: agent_upsert(vault_dir, kind="trap", slug="t", body="Locks bite."))
    outcome = run_cli("review", "approve", "t", "--json")
    assert outcome.exit_code == 0
    fm = read_record(vault_dir / "projects/demo/traps/t.md").frontmatter
    assert fm["review"] == "approved" and fm["reviewedBy"] == "Dev Person <dev@example.org>"
    last = git(vault_dir, "log", "-1", "--format=%s")
    assert last == "approve trap:t (reviewed by Dev Person <dev@example.org>)"
    again = run_cli("review", "approve", "t", "--json")
    assert again.exit_code == 1 and again.json()["error"]["code"] == "INVALID_TRANSITION"


def test_an_agents_change_of_a_persons_decision_is_reviewed_as_a_diff_and_rejecting_leaves_it_byte_for_byte(
    repo: Path, vault_dir: Path, run_cli: Any
) -> None:
    review_vault(vault_dir)
    run_cli("upsert", "--kind", "decision", "--slug", "db", "--body", "Use Postgres.\n")
    approved = (vault_dir / "projects/demo/decisions/db.md").read_bytes()
    changed = anyio.run(lambda: agent_upsert(vault_dir, kind="decision", slug="db", body="Use MongoDB.\n"))
    assert (changed.structured_content or {})["action"] == "proposed"
    assert (vault_dir / "projects/demo/decisions/db.md").read_bytes() == approved
    listed = run_cli("review", "--json").json()["pending"]
    assert listed[0]["replaces"] is True and listed[0]["proposal"] == "projects/demo/decisions/db.proposed.md"
    assert "-Use Postgres." in listed[0]["diff"] and "+Use MongoDB." in listed[0]["diff"]
    rejected = run_cli("review", "reject", "db", "--reason", "we are not moving databases", "--json")
    assert rejected.exit_code == 0
    assert rejected.json()["records"][0]["outcome"] == "dropped the proposed change; the approved version is unchanged"
    assert (vault_dir / "projects/demo/decisions/db.md").read_bytes() == approved
    assert not (vault_dir / "projects/demo/decisions/db.proposed.md").exists()
    assert "we are not moving databases" in git(vault_dir, "log", "-1", "--format=%s")


def test_rejecting_a_new_record_archives_it_with_the_reason(repo: Path, vault_dir: Path, run_cli: Any) -> None:
    review_vault(vault_dir)
    anyio.run(lambda: agent_upsert(vault_dir, kind="trap", slug="wrong", body="A wrong hypothesis."))
    assert run_cli("review", "reject", "wrong", "--json").exit_code == 2  # --reason is required
    run_cli("review", "reject", "wrong", "--reason", "not reproducible")
    fm = read_record(vault_dir / "projects/demo/traps/wrong.md").frontmatter
    assert (fm["status"], fm["review"], fm["reviewReason"]) == ("archived", "rejected", "not reproducible")


def test_verify_update_follows_a_rename_git_saw(repo: Path, vault_dir: Path, run_cli: Any) -> None:
    cite_trap(run_cli, "refunds", "src/pay/refunds.py:1-2")
    git(repo, "mv", "src/pay/refunds.py", "src/pay/refund_api.py")  # staged, not committed
    found = verdicts(run_cli)["refunds"]
    assert found["verdict"] == "missing" and found["cites"][0]["renamedTo"] == "src/pay/refund_api.py"
    updated = run_cli("verify", "--update", "refunds", "--json")
    assert updated.exit_code == 0 and updated.json()["verdict"] == "fresh"
    cite = read_record(vault_dir / "projects/demo/traps/refunds.md").frontmatter["cites"][0]
    assert cite["path"] == "src/pay/refund_api.py"


# --- where people and agents look -----------------------------------------------------------


def test_search_and_the_brief_keep_pending_records_apart(repo: Path, vault_dir: Path, run_cli: Any) -> None:
    review_vault(vault_dir)
    anyio.run(lambda: agent_upsert(vault_dir, kind="trap", slug="guess", body="Maybe the zebra cache leaks."))
    run_cli(
        "upsert", "--kind", "trap", "--slug", "known", "--body", "The zebra cache needs a TTL.", "--severity", "high"
    )
    found = run_cli("search", "zebra cache", "--json").json()
    assert [hit["id"] for hit in found["results"]] == ["known"]
    with_pending = run_cli("search", "zebra cache", "--include-pending", "--json").json()
    assert {hit["id"] for hit in with_pending["results"]} == {"known", "guess"}
    brief = run_cli("bootstrap", "--json").json()
    assert [item["id"] for item in brief["sections"]["traps"]] == ["known"]
    assert [item["id"] for item in brief["sections"]["pending"]] == ["guess"]
    assert "## Pending review (unreviewed" in brief["markdown"] and "**unreviewed trap**" in brief["markdown"]
    config = json.loads((vault_dir / "config.json").read_text(encoding="utf-8"))
    config["review"]["briefPending"] = False
    (vault_dir / "config.json").write_text(json.dumps(config), encoding="utf-8")
    hidden = run_cli("bootstrap", "--json").json()
    assert hidden["sections"]["pending"] == [] and "guess" not in hidden["markdown"]


def test_the_vaults_own_views_never_show_or_count_a_pending_record_until_a_person_approves(
    repo: Path, vault_dir: Path, run_cli: Any
) -> None:
    review_vault(vault_dir)
    anyio.run(lambda: agent_upsert(vault_dir, kind="trap", slug="guess", body="Maybe the zebra cache leaks."))
    anyio.run(lambda: agent_upsert(vault_dir, kind="decision", slug="plan-b", body="Maybe use the queue."))
    project = vault_dir / "projects" / "demo"
    views = {name: (project / name).read_text("utf-8") for name in ("TRAPS.md", "DECISIONS.md", "INDEX.md")}
    for name, text in views.items():
        assert "guess" not in text and "plan-b" not in text and "zebra" not in text, name
    assert "| 0 | 0 | 0 | 0 | 0 | 0 |" in views["DECISIONS.md"]  # accepted … total: none counted
    assert run_cli("review", "approve", "guess", "plan-b").exit_code == 0
    traps, decisions = (project / "TRAPS.md").read_text("utf-8"), (project / "DECISIONS.md").read_text("utf-8")
    assert "zebra cache" in traps and "queue" in decisions and "| 1 | 0 | 0 | 0 | 0 | 1 |" in decisions
    for name in ("TRAPS.md", "DECISIONS.md", "INDEX.md"):
        assert "nreviewed" not in (project / name).read_text("utf-8"), name


def test_search_by_author(repo: Path, vault_dir: Path, run_cli: Any) -> None:
    run_cli("upsert", "--kind", "decision", "--slug", "mine", "--body", "Use the queue.")
    anyio.run(lambda: agent_upsert(vault_dir, kind="decision", slug="theirs", body="Use the queue too."))
    by_person = run_cli("search", "queue", "--author", "dev person", "--json").json()
    by_agent = run_cli("search", "queue", "--author", "codex", "--json").json()
    assert [h["id"] for h in by_person["results"]] == ["mine"] and [h["id"] for h in by_agent["results"]] == ["theirs"]


def test_drifted_records_are_marked_and_fresh_only_leaves_them_out(repo: Path, run_cli: Any) -> None:
    cite_trap(run_cli, "stays", "src/pay/client.py:1-5")
    cite_trap(run_cli, "changes", "src/pay/client.py:40-45")
    run_cli("upsert", "--kind", "trap", "--slug", "uncited", "--body", "No code cited.")
    (repo / "src/pay/client.py").write_text(CLIENT_CODE.replace("line 42:", "line 42 (edited):"), encoding="utf-8")
    verdicts(run_cli)
    hits = {h["id"]: h["freshness"] for h in run_cli("search", "--kind", "trap", "--json").json()["results"]}
    assert hits == {"stays": "fresh", "changes": "drifted", "uncited": None}
    brief = run_cli("bootstrap", "--json").json()
    marked = {item["id"]: item["freshness"] for item in brief["sections"]["traps"]}
    assert marked["changes"] == "drifted" and "**cited code drifted**" in brief["markdown"]
    fresh = run_cli("bootstrap", "--fresh-only", "--json").json()
    assert {item["id"] for item in fresh["sections"]["traps"]} == {"stays", "uncited"}


# --- what a review keeps ----------------------------------------------------------------------


DECISION = "projects/demo/decisions/db.md"
PROPOSED = "projects/demo/decisions/db.proposed.md"
ACCEPTED = "projects/demo/decisions/db.accepted.md"


def change_an_accepted_decision(run_cli: Any, *vault: str) -> None:
    """A person's decision db, then an agent's change of it waiting for review."""
    assert run_cli("upsert", *vault, "--kind", "decision", "--id", "db", "--body", "Use Postgres.\n").exit_code == 0
    changed = run_cli("upsert", *vault, "--kind", "decision", "--id", "db", "--source", "agent", "--body", "Use Mongo.")
    assert changed.exit_code == 0, changed.stdout
    assert changed.stdout.startswith("proposed a change to decision db: it waits for a person's review")


def test_a_proposed_change_survives_deleting_the_memosite_directory(repo: Path, vault_dir: Path, run_cli: Any) -> None:
    review_vault(vault_dir)
    change_an_accepted_decision(run_cli)
    assert "Use Mongo." in (vault_dir / PROPOSED).read_text(encoding="utf-8")
    assert PROPOSED in git(vault_dir, "ls-files").splitlines()  # committed: sync carries it
    shutil.rmtree(vault_dir / ".memosite")
    assert run_cli("reindex").exit_code == 0
    listed = run_cli("review", "--json").json()["pending"]
    assert listed[0]["replaces"] is True and "-Use Postgres." in listed[0]["diff"]
    rejected = run_cli("review", "reject", "db", "--reason", "x", "--json").json()
    assert rejected["records"][0]["outcome"].startswith("dropped the proposed change")
    assert read_record(vault_dir / DECISION).body.strip() == "Use Postgres."
    assert not (vault_dir / PROPOSED).exists()
    assert PROPOSED not in git(vault_dir, "ls-files").splitlines()


def test_a_proposed_change_is_never_a_record_and_the_approved_one_keeps_serving(
    repo: Path, vault_dir: Path, run_cli: Any
) -> None:
    review_vault(vault_dir)
    change_an_accepted_decision(run_cli)
    assert [r["path"] for r in run_cli("list", "--json").json()["records"]] == [DECISION]
    assert run_cli("search", "Mongo", "--include-pending", "--json").json()["results"] == []
    assert [h["id"] for h in run_cli("search", "Postgres", "--json").json()["results"]] == ["db"]
    assert run_cli("get", "db", "--json").json()["body"].strip() == "Use Postgres."
    assert run_cli("get", "--id", "db.proposed", "--json").json()["error"]["code"] == "RECORD_NOT_FOUND"
    refused = run_cli("upsert", "--kind", "decision", "--slug", "db.proposed", "--body", "x", "--json")
    assert refused.exit_code == 1 and refused.json()["error"]["code"] == "INVALID_ARGUMENTS"
    for view in ("DECISIONS.md", "INDEX.md"):
        text = (vault_dir / "projects/demo" / view).read_text(encoding="utf-8")
        assert "Postgres" in text and "Mongo" not in text, view
    approved = run_cli("review", "approve", "db", "--json")
    assert approved.exit_code == 0, approved.stdout
    assert not (vault_dir / PROPOSED).exists()
    fm = read_record(vault_dir / DECISION).frontmatter
    assert read_record(vault_dir / DECISION).body.strip() == "Use Mongo." and fm["review"] == "approved"
    assert "Mongo" in (vault_dir / "projects/demo/DECISIONS.md").read_text(encoding="utf-8")


def test_a_new_record_is_not_reviewed_against_a_leftover_accepted_version(vault_dir: Path, run_cli: Any) -> None:
    review_vault(vault_dir)
    (vault_dir / "projects/demo/decisions").mkdir(parents=True)
    (vault_dir / ACCEPTED).write_text("---\nid: db\nkind: decision\nproject: demo\n---\nOld.\n", encoding="utf-8")
    run_cli("upsert", "--kind", "decision", "--id", "db", "--source", "agent", "--body", "Fresh guess.")
    assert run_cli("review", "--json").json()["pending"][0]["replaces"] is False
    assert run_cli("review", "reject", "db", "--reason", "no").exit_code == 0
    assert read_record(vault_dir / DECISION).frontmatter["status"] == "archived"


def older_memosites_pending_change(vault_dir: Path) -> bytes:
    """What an older memosite left for an agent's pending change of a person's decision: the
    pending version in place, the accepted one beside it (written by hand here: memosite no longer
    makes these). Returns the accepted version's bytes."""
    accepted = (
        b"---\nid: db\nkind: decision\nproject: demo\nsource: human\ncreated: '2026-01-01T00:00:00.000Z'\n"
        b"---\nUse Postgres.\n"
    )
    pending = accepted.replace(b"source: human", b"source: agent\nreview: pending").replace(b"Postgres", b"Mongo")
    (vault_dir / "projects/demo/decisions").mkdir(parents=True, exist_ok=True)
    (vault_dir / DECISION).write_bytes(pending)
    (vault_dir / ACCEPTED).write_bytes(accepted)
    return accepted


def test_an_accepted_version_an_older_memosite_kept_still_restores_byte_for_byte(vault_dir: Path, run_cli: Any) -> None:
    review_vault(vault_dir)
    accepted = older_memosites_pending_change(vault_dir)
    legacy = vault_dir / ".memosite/review-base" / DECISION
    legacy.parent.mkdir(parents=True)
    (vault_dir / ACCEPTED).rename(legacy)  # where memosite kept it before the sidecar
    assert run_cli("review", "--json").json()["pending"][0]["replaces"] is True
    run_cli("upsert", "--kind", "decision", "--id", "db", "--source", "agent", "--body", "Use Mongo, really.")
    assert not legacy.exists() and (vault_dir / ACCEPTED).read_bytes() == accepted
    assert run_cli("review", "reject", "db", "--reason", "no").exit_code == 0
    assert (vault_dir / DECISION).read_bytes() == accepted and not (vault_dir / ACCEPTED).exists()


def test_a_change_synced_from_another_machine_is_reviewed_against_the_approved_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, run_cli: Any
) -> None:
    from test_sync_support import isolate_git

    isolate_git(tmp_path, monkeypatch)
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(remote)], check=True)
    machines = {}
    for name in ("a", "b"):
        root = machines[name] = tmp_path / name
        root.mkdir()
        config = {"review": {"required": ["decision"]}, "vaultGit": {"enabled": True, "remote": str(remote)}}
        (root / "config.json").write_text(json.dumps(config), encoding="utf-8")
    a, b = ("--vault", str(machines["a"])), ("--vault", str(machines["b"]))
    assert run_cli("upsert", *a, "--kind", "decision", "--id", "db", "--body", "Use Postgres.\n").exit_code == 0
    assert run_cli("sync", *a).exit_code == 0 and run_cli("sync", *b).exit_code == 0
    approved = (machines["a"] / DECISION).read_bytes()
    changed = anyio.run(lambda: agent_upsert(machines["b"], kind="decision", slug="db", body="Use Mongo.\n"))
    assert not changed.is_error
    assert run_cli("sync", *b).exit_code == 0 and run_cli("sync", *a).exit_code == 0

    assert run_cli("get", *a, "db", "--json").json()["body"] == "Use Postgres.\n"
    listed = run_cli("review", *a).stdout
    assert "(proposed change, by codex 2.0 via memosite)" in listed and "-Use Postgres." in listed
    rejected = run_cli("review", *a, "reject", "db", "--reason", "we stay on Postgres", "--json").json()
    assert rejected["records"][0]["outcome"].startswith("dropped the proposed change")
    assert run_cli("sync", *a).exit_code == 0 and run_cli("sync", *b).exit_code == 0
    for root in machines.values():
        assert (root / DECISION).read_bytes() == approved, root.name
        assert not (root / PROPOSED).exists(), root.name


def test_a_rejection_says_its_reason_and_leaves_the_record_as_it_was(
    vault_dir: Path, run_cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GIT_AUTHOR_NAME", "Rita Reviewer")
    monkeypatch.setenv("GIT_AUTHOR_EMAIL", "rita@example.org")
    vault_dir.mkdir(parents=True)
    (vault_dir / "config.json").write_text(json.dumps({"review": {"required": ["decision"]}}), encoding="utf-8")
    change_an_accepted_decision(run_cli)
    before = (vault_dir / DECISION).read_bytes()
    outcome = run_cli("review", "reject", "db", "--reason", "we are not  moving\ndatabases", "--json")
    assert outcome.exit_code == 0
    assert outcome.json()["reviewer"] == "Rita Reviewer <rita@example.org>"
    assert (vault_dir / DECISION).read_bytes() == before


@pytest.mark.parametrize("field", [{"editedBy": "Dev Person"}, {"rejectedChangeReason": "fine"}])
def test_an_agent_cannot_claim_a_persons_edit_or_a_rejection(vault_dir: Path, field: dict[str, str]) -> None:
    review_vault(vault_dir)
    result = anyio.run(lambda: agent_upsert(vault_dir, kind="decision", slug="d", body="x", frontmatter=field))
    assert result.is_error and (result.structured_content or {})["error"]["code"] == "INVALID_ARGUMENTS"


# --- provenance of an edit ----------------------------------------------------------------------


def test_a_persons_field_edit_keeps_the_agents_provenance_and_names_the_editor(
    repo: Path, vault_dir: Path, run_cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    review_vault(vault_dir)
    monkeypatch.setenv("GIT_AUTHOR_NAME", "Agent Script")
    monkeypatch.setenv("GIT_AUTHOR_EMAIL", "bot@example.org")
    run_cli("upsert", "--kind", "decision", "--id", "d1", "--source", "agent", "--body", "agent v3")
    monkeypatch.setenv("GIT_AUTHOR_NAME", "Dev Person")
    monkeypatch.setenv("GIT_AUTHOR_EMAIL", "dev@example.org")
    run_cli("upsert", "--kind", "decision", "--id", "d1", "--status", "paused")
    edited = read_record(vault_dir / "projects/demo/decisions/d1.md")
    fm = edited.frontmatter
    assert (fm["source"], fm["author"], edited.body.strip()) == ("agent", "Agent Script <bot@example.org>", "agent v3")
    assert fm["editedBy"] == "Dev Person <dev@example.org>" and fm["status"] == "paused"
    assert fm["review"] == "pending"
    listed = run_cli("review").stdout
    assert "by Agent Script <bot@example.org>; fields edited by Dev Person <dev@example.org>" in listed
    run_cli("upsert", "--kind", "decision", "--id", "d1", "--body", "person v4")
    fm = read_record(vault_dir / "projects/demo/decisions/d1.md").frontmatter
    assert (fm["source"], fm["author"]) == ("human", "Dev Person <dev@example.org>") and "editedBy" not in fm


def test_an_agents_field_edit_of_a_persons_record_is_proposed_and_keeps_its_author(
    repo: Path, vault_dir: Path, run_cli: Any
) -> None:
    review_vault(vault_dir)
    run_cli("upsert", "--kind", "decision", "--id", "d2", "--body", "Keep the queue.")
    before = (vault_dir / "projects/demo/decisions/d2.md").read_bytes()
    result = anyio.run(lambda: agent_upsert(vault_dir, kind="decision", slug="d2", status="paused"))
    assert not result.is_error, result.structured_content
    assert (vault_dir / "projects/demo/decisions/d2.md").read_bytes() == before
    fm = read_record(vault_dir / "projects/demo/decisions/d2.proposed.md").frontmatter
    assert (fm["source"], fm["author"]) == ("human", "Dev Person <dev@example.org>")
    assert fm["editedBy"] == "codex 2.0 via memosite" and fm["review"] == "pending" and fm["status"] == "paused"
    assert run_cli("review", "reject", "d2", "--reason", "still active").exit_code == 0
    assert (vault_dir / "projects/demo/decisions/d2.md").read_bytes() == before


# --- where unreviewed records show -----------------------------------------------------------------


async def agent_reads(vault_dir: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    vault = Vault.open(vault_dir)
    try:
        async with Client(build_server(vault, "demo"), mode="legacy") as client:
            found = await client.call_tool("search", {"query": "zebra", "includePending": True})
            got = await client.call_tool("get", {"id": "guess"})
            return found.structured_content or {}, got.structured_content or {}
    finally:
        vault.close()


def test_search_list_and_get_mark_unreviewed_records(repo: Path, vault_dir: Path, run_cli: Any) -> None:
    review_vault(vault_dir)
    anyio.run(lambda: agent_upsert(vault_dir, kind="trap", slug="guess", body="Maybe the zebra cache leaks."))
    run_cli("upsert", "--kind", "trap", "--slug", "known", "--body", "The zebra cache needs a TTL.")
    found = run_cli("search", "zebra", "--include-pending", "--json").json()["results"]
    assert {hit["id"]: hit["pending"] for hit in found} == {"guess": True, "known": False}
    text = run_cli("search", "zebra", "--include-pending").stdout.splitlines()
    assert [line for line in text if "[unreviewed]" in line] == [
        line for line in text if line.startswith("trap     guess")
    ]
    listed = run_cli("list", "--json").json()["records"]
    assert {r["id"]: r["pending"] for r in listed} == {"guess": True, "known": False}
    rows = {line.split()[1]: line for line in run_cli("list").stdout.splitlines()}
    assert "unreviewed" in rows["guess"] and "unreviewed" not in rows["known"]
    assert run_cli("get", "--id", "guess", "--json").json()["pending"] is True
    assert run_cli("get", "--id", "guess").stdout.startswith("(unreviewed)\n")
    assert run_cli("get", "--id", "known", "--json").json()["pending"] is False
    searched, got = anyio.run(lambda: agent_reads(vault_dir))
    assert {hit["id"]: hit["pending"] for hit in searched["results"]} == {"guess": True, "known": False}
    assert got["pending"] is True


def test_review_messages_read_in_the_singular_and_the_plural(repo: Path, vault_dir: Path, run_cli: Any) -> None:
    review_vault(vault_dir)
    anyio.run(lambda: agent_upsert(vault_dir, kind="trap", slug="one", body="One guess."))
    assert run_cli("review").stdout.startswith("1 record waits for review in demo\n")
    anyio.run(lambda: agent_upsert(vault_dir, kind="trap", slug="two", body="Another guess."))
    assert run_cli("review").stdout.startswith("2 records wait for review in demo\n")
    run_cli("review", "approve", "one", "two")
    again = run_cli("review", "approve", "one").stderr
    assert "demo/trap/one is not waiting for review: it was approved by Dev Person <dev@example.org>" in again
    run_cli("upsert", "--kind", "spec", "--slug", "s", "--body", "A spec.")
    never = run_cli("review", "approve", "s").stderr
    assert "demo/spec/s is not waiting for review" in never and "(" not in never
    assert run_cli("reindex").stdout == "indexed 3 records in demo\n"
