"""Search rules: bm25 over title/body/tags, filters, expiry, as-of, FTS syntax errors, globs."""

from __future__ import annotations

import json
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner

from memosite.cli import cli
from memosite.curator import run_gc
from memosite.errors import InvalidArguments
from memosite.schema import format_iso
from memosite.search import path_matches, search_records
from memosite.store import upsert_record
from memosite.vault import Vault

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
P = "demo"


def put(vault: Vault, kind: str, slug: str, body: str, *, age: float = 1, project: str = P, **fm: object) -> None:
    upsert_record(
        vault,
        project,
        kind=kind,
        slug=slug,
        body=body,
        frontmatter={"title": fm.pop("title", slug), **fm},
        allow_duplicate=True,
        now=NOW - timedelta(days=age),
    )


def ids(vault: Vault, query: str | None = None, **kwargs: object) -> list[str]:
    return [hit.id for hit in search_records(vault, P, query, now=NOW, **kwargs).results]  # type: ignore[arg-type]


@pytest.fixture
def filled(vault: Vault) -> Vault:
    put(
        vault,
        "trap",
        "token-refresh",
        "The OAuth token refresh races with logout.\n",
        title="Auth token refresh race",
        severity="high",
        tags=["auth", "identity"],
        pathPatterns=["src/auth/**/*.py"],
        occurrences=4,
    )
    put(
        vault,
        "trap",
        "cookie",
        "Session cookie loses SameSite; token is dropped by the browser.\n",
        title="Session cookie",
        severity="medium",
        tags=["web"],
        pathPatterns=["src/web/session.ts"],
        hits=9,
    )
    put(
        vault,
        "decision",
        "auth-provider",
        "We use the hosted auth provider, not our own token service.\n",
        title="Hosted auth provider",
    )
    put(vault, "decision", "old-auth", "Roll our own auth.\n", title="Own auth", status="archived")
    put(vault, "scratch", "auth-idea", "Maybe cache the auth token.\n", age=10)  # expired: scratch TTL is 7 days
    put(
        vault,
        "trap",
        "temp-rule",
        "Auth freeze during the migration.\n",
        title="Auth freeze",
        age=10,
        ttl="7d",
    )
    put(vault, "spec", "billing", "Invoices round half up.\n", title="Billing rules", age=30)
    return vault


def test_title_match_ranks_above_body_match(filled: Vault) -> None:
    result = search_records(filled, P, "token", now=NOW)
    assert [h.id for h in result.results][:1] == ["token-refresh"]
    scores = [h.score for h in result.results]
    assert all(s is not None for s in scores) and scores == sorted(scores, reverse=True)


def test_tags_are_searched(filled: Vault) -> None:
    assert ids(filled, "identity") == ["token-refresh"]


def test_filters_kind_status_and_tags_apply_together(filled: Vault) -> None:
    assert ids(filled, "auth", kinds=["decision"]) == ["auth-provider"]
    assert ids(filled, "auth", kinds=["decision"], status="archived") == ["old-auth"]
    assert ids(filled, None, tags=["AUTH", "Identity"]) == ["token-refresh"]
    assert ids(filled, None, tags=["auth", "web"]) == []


def test_expired_records_excluded_by_default(filled: Vault) -> None:
    assert "auth-idea" not in ids(filled, "auth")
    assert "temp-rule" not in ids(filled, "auth")


def test_include_expired_stamps_expired_true(filled: Vault) -> None:
    hits = {h.id: h for h in search_records(filled, P, "auth", include_expired=True, now=NOW).results}
    assert hits["auth-idea"].expired and hits["temp-rule"].expired
    assert not hits["token-refresh"].expired


def test_as_of_returns_records_active_on_that_date(filled: Vault) -> None:
    as_of = format_iso(NOW - timedelta(days=5))
    found = ids(filled, "auth", as_of=as_of)
    assert "auth-idea" in found and "temp-rule" in found  # active five days ago, expired since
    assert "token-refresh" not in found  # created one day ago


def test_as_of_date_only_counts_the_whole_day(vault: Vault) -> None:
    put(vault, "trap", "late", "created late in the day\n", age=0)  # created at NOW = 12:00 on the 30th
    assert ids(vault, None, as_of="2026-11-30") == ["late"]
    assert ids(vault, None, as_of="2026-11-29") == []


def test_future_as_of_suppresses_records_expired_before_it(filled: Vault) -> None:
    put(filled, "trap", "short", "Auth short-lived rule.\n", age=1, ttl="3d")
    assert "short" in ids(filled, "auth")
    future = ids(filled, "auth", as_of=format_iso(NOW + timedelta(days=10)))
    assert "short" not in future and "token-refresh" in future


def test_as_of_and_include_expired_still_find_records_gc_archived_for_expiry(filled: Vault) -> None:
    run_gc(filled, P, now=NOW)
    assert "temp-rule" not in ids(filled, "auth")
    assert "temp-rule" in ids(filled, "auth", include_expired=True)
    assert "temp-rule" in ids(filled, "auth", as_of=format_iso(NOW - timedelta(days=5)))


def test_archived_and_superseded_hidden_unless_status_asks(vault: Vault) -> None:
    put(vault, "decision", "v1", "Cache layer choice one.\n", age=3)
    put(vault, "decision", "v2", "Cache layer choice two.\n", age=2, supersedes="v1")
    assert ids(vault, "cache") == ["v2"]
    assert ids(vault, "cache", status="superseded") == ["v1"]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ('"unbalanced quote', []),
        ("token AND(", ["token-refresh", "cookie", "auth-provider"]),
        ("-token", ["token-refresh", "cookie", "auth-provider"]),
        ("auth:token", ["token-refresh", "auth-provider"]),
        (
            "token OR",
            ["token-refresh", "cookie", "auth-provider"],
        ),  # a dangling operator is dropped
        ("(auth", ["token-refresh", "auth-provider"]),
        ('title:"refresh', []),  # "title" becomes a word too
        ("token - refresh", ["token-refresh"]),
        ("c++ token", []),  # plain words: "c" and "token" both required
        ("NOT", []),
        ("***", []),
        ("NEAR(", []),
        ("{", []),
    ],
)
def test_fts_syntax_errors_are_searched_as_plain_words(filled: Vault, query: str, expected: list[str]) -> None:
    result = search_records(filled, P, query, now=NOW)
    assert sorted(h.id for h in result.results) == sorted(expected)
    assert result.total == len(expected)


def test_valid_fts_syntax_is_honoured(filled: Vault) -> None:
    assert ids(filled, '"token refresh"') == ["token-refresh"]
    assert set(ids(filled, "sameSite OR hosted")) == {"cookie", "auth-provider"}
    assert ids(filled, "refr*") == ["token-refresh"]
    assert ids(filled, "title:cookie") == ["cookie"]


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        ("src/auth/**/*.py", "src/auth/oauth/refresh.py", True),
        ("src/auth/**/*.py", "src/auth/refresh.py", True),
        ("src/auth/**/*.py", "src/web/refresh.py", False),
        ("src/*.ts", "src/app.ts", True),
        ("src/*.ts", "src/web/app.ts", False),
        ("**/conftest.py", "conftest.py", True),
        ("**/conftest.py", "tests/unit/conftest.py", True),
        ("migrations/versions", "migrations/versions/0012_add.py", True),
        ("migrations/versions", "migrations/versions_old/x.py", False),
        ("src/web/session.ts", "src/web", True),  # a directory covers the patterns beneath it
        ("src/web/session.ts", "src/we", False),
        ("src/**", "src/a/b/c.txt", True),
        ("src/file?.py", "src/file1.py", True),
        ("src/[ab].py", "src/c.py", False),
        ("./src\\win.py", "src/win.py", True),
    ],
)
def test_path_pattern_matching(pattern: str, path: str, expected: bool) -> None:
    assert path_matches([pattern], path) is expected


def test_path_filter_keeps_records_whose_patterns_cover_the_path(filled: Vault) -> None:
    assert ids(filled, None, path="src/auth/oauth/client.py") == ["token-refresh"]
    assert ids(filled, "token", path="./src/web/session.ts") == ["cookie"]
    assert ids(filled, None, path="docs/readme.md") == []


def test_sort_by_occurrences_hits_and_updated(filled: Vault) -> None:
    assert ids(filled, None, kinds=["trap"], sort="occurrences") == ["token-refresh", "cookie"]
    assert ids(filled, None, kinds=["trap"], sort="hits") == ["cookie", "token-refresh"]
    put(filled, "trap", "newest", "fresh trap\n", age=0.1)
    assert ids(filled, None, kinds=["trap"], sort="updated")[0] == "newest"


def test_limit_caps_results_and_total_counts_all(filled: Vault) -> None:
    result = search_records(filled, P, None, limit=2, now=NOW)
    assert len(result.results) == 2 and result.total == 4  # 3 more are archived or expired


def test_flagged_stale_record_ranked_lower(filled: Vault) -> None:
    put(
        filled,
        "trap",
        "stale-one",
        "Token token token everywhere.\n",
        title="Token token",
        staleCount=3,
        helpfulCount=1,
    )
    found = ids(filled, "token")
    assert found[-1] == "stale-one"


def test_search_all_projects_when_project_is_none(filled: Vault) -> None:
    put(filled, "trap", "elsewhere", "Auth in another project.\n", project="other")
    everywhere = search_records(filled, None, "auth", now=NOW)
    assert {h.project for h in everywhere.results} == {P, "other"}
    assert "elsewhere" not in ids(filled, "auth")


def test_search_rebuilds_a_missing_index(filled: Vault) -> None:
    filled.close()
    for path in filled.internal_dir.glob("index.sqlite*"):
        path.unlink()
    reopened = Vault.open(filled.root)
    assert ids(reopened, "token")[0] == "token-refresh"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"sort": "random"}, "invalid sort"),
        ({"limit": 0}, "invalid limit"),
        ({"kinds": ["bug"]}, "invalid kind"),
        ({"status": "done"}, "invalid status"),
        ({"as_of": "yesterday"}, "as-of"),
        ({"path": "  "}, "path"),
    ],
)
def test_bad_arguments_are_invalid_arguments(filled: Vault, kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(InvalidArguments, match=message):
        search_records(filled, P, "x", now=NOW, **kwargs)  # type: ignore[arg-type]


def test_hit_ids_acknowledge_hits_once_per_session(filled: Vault) -> None:
    first = search_records(filled, P, "token", hit_ids=["token-refresh", "nope"], session_id="s1", now=NOW)
    again = search_records(filled, P, "token", hit_ids=["token-refresh"], session_id="s1", now=NOW)
    assert first.hits_recorded == ["token-refresh"] and again.hits_recorded == []
    assert search_records(filled, P, "token", now=NOW).results[0].hits == 1


RESULT_KEYS = {
    "id",
    "kind",
    "project",
    "title",
    "status",
    "path",
    "score",
    "expired",
    "severity",
    "tags",
    "updated",
    "snippet",
}


def test_cli_search_json_shape(vault: Vault) -> None:
    upsert_record(
        vault,
        P,
        kind="trap",
        body="Retry storms take the gateway down.\n",
        frontmatter={"title": "Retry storms", "severity": "high"},
    )
    upsert_record(
        vault,
        P,
        kind="scratch",
        body="retry idea\n",
        slug="old",
        now=datetime.now(UTC) - timedelta(days=8),
    )
    result = CliRunner().invoke(cli, ["search", "retry", "--json", "--include-expired"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert set(data) >= {"results", "total"} and data["total"] == 2
    assert all(set(hit) >= RESULT_KEYS for hit in data["results"])
    assert {hit["id"]: hit["expired"] for hit in data["results"]} == {
        "retry-storms": False,
        "old": True,
    }
    assert "**Retry**" in data["results"][0]["snippet"] or "**retry**" in data["results"][0]["snippet"].lower()


def test_cli_search_bad_input_is_one_line_error(vault: Vault) -> None:
    runner = CliRunner()
    bad = runner.invoke(cli, ["search", "x", "--as-of", "someday"])
    assert bad.exit_code == 1 and bad.stderr.count("\n") == 1 and "Traceback" not in bad.output
    as_json = runner.invoke(cli, ["search", "x", "--as-of", "someday", "--json"])
    assert json.loads(as_json.stdout)["error"]["code"] == "INVALID_ARGUMENTS"
    weird = runner.invoke(cli, ["search", '"auth', "AND(", "--json"])
    assert weird.exit_code == 0 and json.loads(weird.stdout)["total"] == 0


def test_cli_get_returns_expired_record_annotated(vault: Vault) -> None:
    upsert_record(
        vault,
        P,
        kind="scratch",
        body="old\n",
        slug="old",
        now=datetime.now(UTC) - timedelta(days=8),
    )
    result = CliRunner().invoke(cli, ["get", "--kind", "scratch", "--slug", "old", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["expired"] is True


def test_cli_search_subprocess_end_to_end(vault: Vault, memosite_exe: Path) -> None:
    upsert_record(
        vault,
        P,
        kind="decision",
        body="Use PostgreSQL full-text search.\n",
        frontmatter={"title": "Full-text search"},
    )
    done = subprocess.run(
        [str(memosite_exe), "search", "postgresql", "--json"],
        capture_output=True,
        text=True,
        encoding="utf-8",
        check=False,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert [hit["id"] for hit in json.loads(done.stdout)["results"]] == ["full-text-search"]
