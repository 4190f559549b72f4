"""`memosite verify` against a real git repository: re-pinning follows the code, the wrong
repository is refused, changes not committed yet are said to be so, and a citation that is gone
for good can be dropped."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from test_trust import CLIENT_CODE, cite_trap, commit_all, git, repo, verdicts

from memosite.recordfile import read_record

__all__ = ["repo"]  # the fixture, shared with test_trust


def cites_of(vault_dir: Path, slug: str) -> list[dict[str, Any]]:
    return read_record(vault_dir / "projects/demo/traps" / f"{slug}.md").frontmatter.get("cites") or []


def test_verify_update_pins_the_lines_where_the_cited_code_moved(repo: Path, vault_dir: Path, run_cli: Any) -> None:
    cite_trap(run_cli, "span", "src/pay/client.py:40-42")
    client = repo / "src/pay/client.py"
    client.write_text("# header\n# more\n" + CLIENT_CODE, encoding="utf-8")
    commit_all(repo, "a header")
    [cite] = verdicts(run_cli)["span"]["cites"]
    assert cite["verdict"] == "fresh" and cite["movedTo"] == "42-44"
    assert run_cli("verify", "--update", "span").exit_code == 0
    assert cites_of(vault_dir, "span")[0]["lines"] == "42-44"
    # The re-pinned span is the code the record is about: a change to it is seen.
    lines = client.read_text(encoding="utf-8").splitlines(keepends=True)
    lines[42] = "line 41: charge(order, key=None)\n"
    client.write_text("".join(lines), encoding="utf-8")
    commit_all(repo, "change line 41")
    assert verdicts(run_cli)["span"]["verdict"] == "drifted"


def test_verify_update_follows_a_rename_and_the_move_together(repo: Path, vault_dir: Path, run_cli: Any) -> None:
    cite_trap(run_cli, "moved", "src/pay/client.py:10-12")
    git(repo, "mv", "src/pay/client.py", "src/pay/gateway.py")
    (repo / "src/pay/gateway.py").write_text("import os\n" + CLIENT_CODE, encoding="utf-8")
    commit_all(repo, "rename the client")
    assert verdicts(run_cli)["moved"]["cites"][0]["renamedTo"] == "src/pay/gateway.py"
    assert run_cli("verify", "--update", "moved").exit_code == 0
    [cite] = cites_of(vault_dir, "moved")
    assert cite["path"] == "src/pay/gateway.py" and cite["lines"] == "11-13"
    assert verdicts(run_cli)["moved"]["verdict"] == "fresh"


def test_verify_refuses_a_repository_that_holds_none_of_the_pinned_commits(
    repo: Path, tmp_path: Path, vault_dir: Path, run_cli: Any
) -> None:
    cite_trap(run_cli, "ours", "src/pay/client.py:1-3")
    assert verdicts(run_cli)["ours"]["verdict"] == "fresh"
    other = tmp_path / "other-product"
    (other / "src").mkdir(parents=True)
    (other / "src" / "main.py").write_text("print('hi')\n", encoding="utf-8")
    git(other, "init", "-q")
    commit_all(other, "another product")
    outcome = run_cli("verify", "--repo", str(other))
    assert outcome.exit_code != 0
    assert "none of the commits" in outcome.stderr and "--repo" in outcome.stderr
    assert "\n" not in outcome.stderr.strip() and str(tmp_path) not in outcome.stderr
    # What was stored before stands: nothing was judged against the wrong code.
    status = run_cli("status", "--json").json()
    assert status["verdicts"] == {"fresh": 1, "drifted": 0, "missing": 0}, json.dumps(status)


@pytest.mark.slow
def test_changes_not_committed_yet_are_said_to_be_so(repo: Path, vault_dir: Path, run_cli: Any) -> None:
    cite_trap(run_cli, "wip", "src/pay/client.py:5-6")
    client = repo / "src/pay/client.py"
    client.write_text(CLIENT_CODE.replace("line 5: charge(order, key=5)", "line 5: charge(order)"), encoding="utf-8")
    outcome = run_cli("verify", "--json")
    result = outcome.json()
    [cite] = result["records"][0]["cites"]
    assert result["uncommitted"] is True and cite["verdict"] == "drifted" and cite["uncommitted"] is True
    assert "commits" not in cite  # nothing was committed since the pin
    text = run_cli("verify").stdout
    assert "and changes not committed yet" in text and "(not committed yet)" in text
    assert run_cli("build", "--out", str(repo.parent / "site")).exit_code == 0
    page = (repo.parent / "site" / "memory" / "demo" / "traps" / "wip" / "index.html").read_text(encoding="utf-8")
    assert "with changes not committed yet" in page
    commit_all(repo, "drop the key")
    again = run_cli("verify", "--json").json()
    assert again["uncommitted"] is False and again["records"][0]["cites"][0]["commits"]


def test_a_cite_given_from_a_subdirectory_means_the_file_there(
    repo: Path, vault_dir: Path, run_cli: Any, monkeypatch: Any
) -> None:
    monkeypatch.chdir(repo / "src" / "pay")
    cite_trap(run_cli, "from-here", "client.py:1-2")
    assert cites_of(vault_dir, "from-here")[0]["path"] == "src/pay/client.py"
    refused = run_cli("upsert", "--kind", "trap", "--slug", "nowhere", "--body", "x", "--cite", "nope.py")
    assert refused.exit_code != 0 and "relative to its root" in refused.stderr


def test_a_citation_gone_for_good_is_dropped_and_the_rest_re_pinned(repo: Path, vault_dir: Path, run_cli: Any) -> None:
    cite_trap(run_cli, "two", "src/pay/client.py:1-2", "src/pay/refunds.py")
    (repo / "src/pay/refunds.py").unlink()
    commit_all(repo, "refunds go")
    assert verdicts(run_cli)["two"]["verdict"] == "missing"
    hint = run_cli("verify").stdout
    assert "--drop PATH" in hint
    refused = run_cli("verify", "--update", "two")
    assert refused.exit_code != 0 and "--drop src/pay/refunds.py" in refused.stderr
    assert len(cites_of(vault_dir, "two")) == 2  # a refused update changes nothing
    assert run_cli("verify", "--update", "two", "--drop", "src/pay/nothing.py").exit_code != 0
    assert run_cli("verify", "--update", "two", "--drop", "src/pay/refunds.py").exit_code == 0
    assert [c["path"] for c in cites_of(vault_dir, "two")] == ["src/pay/client.py"]
    assert verdicts(run_cli)["two"]["verdict"] == "fresh"
    last = run_cli("verify", "--update", "two", "--drop", "src/pay/client.py")
    assert last.exit_code == 0 and "cites no code any more" in last.stdout
    assert cites_of(vault_dir, "two") == [] and "two" not in verdicts(run_cli)
    assert run_cli("verify", "--drop", "x.py").exit_code != 0  # --drop only with --update


def test_fresh_only_says_what_it_left_out_and_fresh_records_say_fresh(repo: Path, run_cli: Any) -> None:
    for n in range(3):
        cite_trap(run_cli, f"gone-{n}", "src/pay/refunds.py")
    cite_trap(run_cli, "stays", "src/pay/client.py:1-5")
    (repo / "src/pay/refunds.py").unlink()
    verdicts(run_cli)
    brief = run_cli("bootstrap", "--json").json()
    marks = {item["id"]: item["freshness"] for item in brief["sections"]["traps"]}
    assert marks == {"stays": "fresh", "gone-0": "missing", "gone-1": "missing", "gone-2": "missing"}
    fresh = run_cli("bootstrap", "--fresh-only", "--json").json()
    assert [item["id"] for item in fresh["sections"]["traps"]] == ["stays"]
    assert fresh["truncated"] is True
    left_out = {"section": "traps", "reason": "freshness", "count": 3, "ids": [], "idsTruncated": True}
    assert left_out in fresh["omitted"]
    assert "Left out (fresh only): 3 traps whose cited code drifted or is missing" in fresh["markdown"]
    (repo / "src/pay/client.py").unlink()
    verdicts(run_cli)
    nothing = run_cli("bootstrap", "--fresh-only").stdout
    assert "4 traps whose cited code" in nothing and "recorded yet" not in nothing
