"""Search rules: bm25 over title/body/tags, filters, expiry, as-of, FTS syntax errors, globs."""

from __future__ import annotations

import json
import re
import sqlite3
import subprocess
import unicodedata
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from memosite.cli import cli
from memosite.curator import run_gc
from memosite.errors import InvalidArguments
from memosite.hits import search_counting_hits
from memosite.refresh import refresh_project
from memosite.schema import format_iso
from memosite.search import path_matches, search_records
from memosite.store import forget_record, upsert_record
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
    put(vault, "spec", "auth-idea", "Maybe cache the auth token.\n", age=10, ttl="7d")  # expired 3 days ago
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


TOKEN_RECORDS = ["token-refresh", "cookie", "auth-provider"]


@pytest.mark.parametrize(
    ("query", "expected", "match"),
    [
        ('"unbalanced quote', [], None),  # nothing matches: no reading to report
        ("token AND(", TOKEN_RECORDS, "all"),
        ("-token", TOKEN_RECORDS, "all"),
        ("auth:token", TOKEN_RECORDS, "all"),  # both words in two records, "token" alone in a third
        ("token OR", TOKEN_RECORDS, "all"),  # a dangling operator is dropped
        ("(auth", ["token-refresh", "auth-provider"], "all"),
        ('title:"refresh', ["token-refresh"], "any"),  # "title" becomes a word too, found nowhere
        ("token - refresh", TOKEN_RECORDS, "all"),  # "token refresh" in one record, then "token" alone
        ("c++ token", TOKEN_RECORDS, "all"),  # "c" is a letter, not a word to find
        ("NOT", [], None),
        ("***", [], None),
        ("NEAR(", [], None),
        ("{", [], None),
    ],
)
def test_fts_syntax_errors_are_searched_as_plain_words(
    filled: Vault, query: str, expected: list[str], match: str | None
) -> None:
    result = search_records(filled, P, query, now=NOW)
    assert sorted(h.id for h in result.results) == sorted(expected)
    assert result.total == len(expected)
    assert result.match == match


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
    first = search_counting_hits(filled, P, "token", hit_ids=["token-refresh", "nope"], session_id="s1", now=NOW)
    again = search_counting_hits(filled, P, "token", hit_ids=["token-refresh"], session_id="s1", now=NOW)
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
        kind="review",
        body="retry idea\n",
        slug="old",
        now=datetime.now(UTC) - timedelta(days=15),  # reviews expire after 14 days
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


# --- what agents ask: sentences, every script ---------------------------------------------------


@pytest.fixture
def shop(vault: Vault) -> Vault:
    put(
        vault,
        "trap",
        "payment-retry",
        "When the gateway times out we retry the charge; without an idempotency key the customer pays twice.\n",
        title="Payment retries must carry an idempotency key",
        severity="critical",
    )
    put(
        vault,
        "trap",
        "samesite",
        "Behind the CDN the SameSite attribute of the session cookie disappears and users are logged out.\n",
        title="Session cookie loses SameSite behind the CDN",
    )
    put(vault, "decision", "postgres", "We chose PostgreSQL for transactions across orders.\n", title="PostgreSQL")
    put(vault, "log", "deploy-log", "Deployed payments 3.2; checked the gateway timeout.\n", title="Deployed payments")
    put(vault, "trap", "zh-lock", "在生产数据上执行会锁住订单表好几分钟。\n", title="添加非空列会锁住订单表")
    put(
        vault,
        "trap",
        "ja-batch",
        "夏時間が終わる夜にバッチ処理が二回実行される。\n",
        title="バッチ処理が二回実行される",
    )
    put(
        vault,
        "trap",
        "ko-pay",
        "게이트웨이 시간 초과 후 결제를 재시도하면 중복 결제가 발생합니다.\n",
        title="결제 재시도",
    )
    put(vault, "decision", "cafe", "Le café de l'équipe ferme à midi.\n", title="Café")
    put(vault, "spec", "strasse", "Die Lieferadresse enthält Straße und Hausnummer.\n", title="Adressen")
    return vault


def test_all_words_first_then_any_word_ranked_by_how_many_match(shop: Vault) -> None:
    result = search_records(shop, P, "payment gateway idempotency", now=NOW)
    assert [h.id for h in result.results] == ["payment-retry", "deploy-log"]
    assert [h.matched_terms for h in result.results] == [3, 2]


def test_match_is_all_when_some_record_holds_every_term_even_with_others_after_it(shop: Vault) -> None:
    result = search_records(shop, P, "payment gateway idempotency", now=NOW)
    assert (result.match, result.holding_all, result.total) == ("all", 1, 2)


def test_match_is_any_only_when_no_record_holds_every_term(shop: Vault) -> None:
    result = search_records(shop, P, "payment gateway postgres", now=NOW)
    assert (result.match, result.holding_all) == ("any", 0)
    held = {hit.id: hit.matched_terms for hit in result.results}
    assert held["payment-retry"] == 2 and held["postgres"] == 1


def test_match_is_none_when_nothing_matches(shop: Vault) -> None:
    result = search_records(shop, P, "kubernetes helm", now=NOW)
    assert (result.results, result.match) == ([], None)


def test_a_question_finds_what_its_words_name(shop: Vault) -> None:
    assert ids(shop, "how do payment retries work")[:1] == ["payment-retry"]
    assert ids(shop, "why postgres") == ["postgres"]
    assert ids(shop, "cookie samesite cdn logout") == ["samesite"]


def test_when_every_word_matches_the_result_says_all(shop: Vault) -> None:
    result = search_records(shop, P, "session cookie", now=NOW)
    assert (result.match, result.terms) == ("all", ["session", "cookie*"])
    assert [h.matched_terms for h in result.results] == [2]


def test_stop_words_are_ignored(shop: Vault) -> None:
    assert ids(shop, "what is the idempotency") == ids(shop, "idempotency")


def test_the_last_word_is_a_prefix(shop: Vault) -> None:
    assert ids(shop, "retr") == ["payment-retry"]
    assert ids(shop, "idempot") == ["payment-retry"]


def test_a_quoted_phrase_stays_a_phrase(shop: Vault) -> None:
    assert ids(shop, '"session cookie"') == ["samesite"]
    assert ids(shop, '"cookie session"') == []


def test_diacritics_do_not_matter(shop: Vault) -> None:
    assert ids(shop, "cafe") == ["cafe"]
    assert ids(shop, "CAFÉ") == ["cafe"]
    assert ids(shop, "equipe") == ["cafe"]
    assert ids(shop, "Straße") == ["strasse"]


@pytest.mark.parametrize(
    ("query", "expected", "match"),
    [
        ("订单表", ["zh-lock"], "all"),  # a substring of a run of Chinese
        ("锁表", ["zh-lock"], "any"),  # 锁 and 表 both there, not side by side
        ("订单表被锁住怎么办", ["zh-lock"], "all"),  # a question: its function words are not searched
        ("バッチ処理", ["ja-batch"], "all"),
        ("バッチ処理が二回実行される", ["ja-batch", "zh-lock"], "all"),  # then a record sharing one kanji (行)
        ("결제 재시도 중복", ["ko-pay"], "all"),  # Hangul words with their particles attached
        ("重试", [], None),
    ],
)
def test_text_without_word_spaces_is_found_by_substrings(
    shop: Vault, query: str, expected: list[str], match: str | None
) -> None:
    result = search_records(shop, P, query, now=NOW)
    assert [h.id for h in result.results] == expected
    assert result.match == match


def test_diacritics_of_every_script_do_not_matter(vault: Vault) -> None:
    put(vault, "trap", "greek", "Η μετάβαση κλειδώνει τον πίνακα παραγγελιών.\n", title="Κλείδωμα πίνακα")
    put(vault, "trap", "russian", "Счёт округляется до копеек.\n", title="Округление счёта")
    put(vault, "trap", "french", "La file d'attente bloque l'été.\n", title="File d'attente")
    for query in ("πινακα", "πίνακα", "ΠΙΝΑΚΑ", "κλειδωνει", "μεταβαση παραγγελιων"):
        assert ids(vault, query) == ["greek"], query
    for query in ("счет", "счёт", "СЧЕТ", "округляется"):
        assert ids(vault, query) == ["russian"], query
    assert ids(vault, "ete") == ids(vault, "été") == ["french"]
    hit = search_records(vault, P, "πινακα", now=NOW).results[0]
    assert "πίνακα" in hit.snippet  # the snippet is the text as written


def test_emoji_are_searched_as_written(vault: Vault) -> None:
    put(vault, "trap", "rocket", "Deploys 🚀 stall when the cache is cold 🔥\n", title="Cold cache deploys")
    put(vault, "trap", "warning", "⚠️ Never run the migration twice.\n", title="Migration twice", tags=["✅"])
    put(vault, "trap", "plain", "Deploys stall when the queue is full.\n", title="Queue full")
    assert ids(vault, "🚀") == ["rocket"]
    both = search_records(vault, P, "deploys 🚀", now=NOW)  # the word and the pictograph first, then either
    assert [h.id for h in both.results] == ["rocket", "plain"] and both.results[0].matched_terms == 2
    assert ids(vault, "⚠") == ids(vault, "⚠️") == ["warning"]  # with or without the emoji presentation selector
    assert ids(vault, "✅") == ["warning"]  # a tag
    assert ids(vault, "🔥🚀") == ["rocket"]  # no record holds the pair: any of them
    assert ids(vault, "🦄") == []


def test_an_unspaced_match_has_a_snippet_around_it(shop: Vault) -> None:
    hit = search_records(shop, P, "订单表", now=NOW).results[0]
    assert "**订单表**" in hit.snippet


def test_unspaced_text_is_found_after_an_edit_and_not_after_a_purge(shop: Vault) -> None:
    from memosite.store import forget_record

    put(shop, "trap", "zh-lock", "改了：缓存失效。\n", title="缓存失效")
    assert ids(shop, "订单表") == [] and ids(shop, "缓存失效") == ["zh-lock"]
    forget_record(shop, P, record_id="zh-lock", purge=True)
    assert ids(shop, "缓存失效") == []


def test_a_sentence_that_only_looks_like_fts_syntax_is_read_as_words(shop: Vault) -> None:
    put(shop, "trap", "not-null", "Adding a NOT NULL column locks the orders table.\n", title="NOT NULL column lock")
    result = search_records(shop, P, "what happens when I add a NOT NULL column", now=NOW)
    assert [h.id for h in result.results][:1] == ["not-null"]


def test_scratch_is_left_out_of_the_default_search(shop: Vault) -> None:
    put(shop, "scratch", "idea", "maybe retry payment with a queue\n")
    assert "idea" not in ids(shop, "payment")
    assert "idea" not in ids(shop, None)
    assert ids(shop, "payment", kinds=["scratch"]) == ["idea"]


def test_knowledge_outranks_the_event_log_at_equal_relevance(vault: Vault) -> None:
    put(vault, "log", "log-postgres", "Upgraded postgres.\n", title="Upgraded postgres")
    put(vault, "decision", "dec-postgres", "Upgraded postgres.\n", title="Upgraded postgres")
    assert ids(vault, "postgres") == ["dec-postgres", "log-postgres"]


def test_a_trap_without_occurrences_reports_and_sorts_as_seen_once(vault: Vault, vault_dir: Path) -> None:
    put(vault, "trap", "counted", "seen twice\n", occurrences=2)
    hand = vault_dir / "projects" / P / "traps" / "hand.md"
    hand.write_text(
        "---\nid: hand\nkind: trap\nproject: demo\ntitle: hand written\ncreated: 2026-11-01T00:00:00.000Z\n"
        "updated: 2026-11-02T00:00:00.000Z\n---\nhand written trap\n",
        encoding="utf-8",
    )
    refresh_project(vault, P)  # a hand edit, seen as list and compile see it
    hits = {h.id: h for h in search_records(vault, P, None, kinds=["trap"], now=NOW).results}
    assert hits["hand"].occurrences == 1 and hits["counted"].occurrences == 2
    assert ids(vault, None, kinds=["trap"], sort="occurrences") == ["counted", "hand"]


def test_sort_by_occurrences_breaks_ties_by_last_seen_then_severity(vault: Vault) -> None:
    seen = {"older": "2026-11-01T00:00:00.000Z", "newer": "2026-11-20T00:00:00.000Z"}
    put(vault, "trap", "older", "x\n", occurrences=3, lastSeen=seen["older"], severity="critical")
    put(vault, "trap", "newer", "x\n", occurrences=3, lastSeen=seen["newer"], severity="low")
    put(vault, "trap", "newer-high", "x\n", occurrences=3, lastSeen=seen["newer"], severity="high")
    put(vault, "trap", "most", "x\n", occurrences=5, severity="low")
    assert ids(vault, None, kinds=["trap"], sort="occurrences") == ["most", "newer-high", "newer", "older"]


def test_search_json_says_the_match_and_the_terms(shop: Vault, run_cli) -> None:  # type: ignore[no-untyped-def]
    data = run_cli("search", "how", "do", "payment", "retries", "work", "--json").json()
    assert data["match"] in ("all", "any") and data["terms"] == ["payment", "retries"]
    assert data["results"][0]["id"] == "payment-retry" and data["results"][0]["matchedTerms"] == 2


def test_cli_text_says_how_many_hold_every_term_and_that_the_others_rank_by_relevance(shop: Vault, run_cli) -> None:  # type: ignore[no-untyped-def]
    text = run_cli("search", "payment", "gateway", "idempotency").stdout
    assert text.startswith(
        "(1 record holds every term; records holding some of payment, gateway, idempotency* "
        "rank among them by relevance)"
    )


def test_cli_text_says_when_no_record_holds_every_term(shop: Vault, run_cli) -> None:  # type: ignore[no-untyped-def]
    text = run_cli("search", "payment", "gateway", "postgres").stdout
    assert text.startswith(
        "(no record holds every term; records holding some of payment, gateway, postgres*, most relevant"
    )


def test_cli_text_says_nothing_about_terms_when_every_hit_holds_all(shop: Vault, run_cli) -> None:  # type: ignore[no-untyped-def]
    assert run_cli("search", "session", "cookie").stdout.startswith("trap")


def test_search_and_bootstrap_report_match_by_the_same_rule(shop: Vault, run_cli) -> None:  # type: ignore[no-untyped-def]
    for query in ("how do payment retries work", "payment gateway idempotency", "payment gateway postgres"):
        searched = run_cli("search", query, "--kind", "trap", "--kind", "decision", "--json").json()
        brief = run_cli("bootstrap", "--query", query, "--json").json()
        assert brief["match"] == searched["match"], query


# --- the search tables stay in step with the records --------------------------------------------


def test_the_trigram_table_holds_exactly_the_records_with_unspaced_text(vault: Vault) -> None:
    """Whether a record's text holds a script written without spaces is decided once, in Python
    (``has_unspaced``, which agrees with ``is_unspaced`` character by character), and the index's
    triggers follow it on insert, update and delete."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from memosite.text import UNSPACED_RANGES, has_unspaced, is_unspaced

    edges = [chr(point) for low, high in UNSPACED_RANGES for point in (low - 1, low, high, high + 1)]
    printable = st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00")
    alphabet = st.one_of(printable, st.sampled_from([*edges, "…", "é", "a", "—", "→", "ह", "ệ", "🚀", "⚠"]))

    @settings(max_examples=400, deadline=None)
    @given(st.text(alphabet=alphabet, max_size=12))
    def check(text: str) -> None:
        assert has_unspaced(text) == any(is_unspaced(char) for char in text)

    check()

    def trigram_rows() -> set[str]:
        """The ids of the records the trigram table holds (its docsize table has a row for each)."""
        rows = vault.index().conn.execute(
            "SELECT r.id FROM records AS r JOIN records_trigram_docsize AS d ON d.id = r.rowid"
        )
        return {row[0] for row in rows}

    upsert_record(vault, "demo", kind="spec", slug="latin", body="Plain café text — with an em dash.")
    upsert_record(vault, "demo", kind="spec", slug="cjk", body="添加非空列会锁住订单表")
    upsert_record(vault, "demo", kind="spec", slug="emoji", body="Deploys on Friday ⚠ are risky.")
    assert trigram_rows() == {"cjk", "emoji"}
    upsert_record(vault, "demo", kind="spec", slug="cjk", body="Now in plain English.")
    upsert_record(vault, "demo", kind="spec", slug="latin", body="Теперь с японским: ロック")
    assert trigram_rows() == {"latin", "emoji"}
    forget_record(vault, "demo", record_id="emoji", purge=True)
    assert trigram_rows() == {"latin"}
    assert [hit.id for hit in search_records(vault, "demo", "ロック").results] == ["latin"]


@given(st.text())
def test_text_helpers_agree_with_their_definitions(text: str) -> None:
    from memosite.text import UNSPACED_RANGES, fold, is_unspaced, slugify

    for char in text:
        assert is_unspaced(char) == any(low <= ord(char) <= high for low, high in UNSPACED_RANGES)
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    plain = "".join(char for char in decomposed if not unicodedata.combining(char))
    assert fold(text) == unicodedata.normalize("NFKC", plain)
    assert fold(text + "é") == fold(text) + "e" or not text.isascii()  # the ASCII shortcut is the same fold
    assert re.fullmatch(r"(?:[a-z0-9]+(?:-[a-z0-9]+)*)?", slugify(text))


@pytest.mark.slow
def test_occurrences_sql_agrees_with_trap_occurrences() -> None:
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from memosite.recurrence import occurrences_sql, trap_occurrences

    @settings(max_examples=200, deadline=None)
    @given(kind=st.sampled_from(["trap", "decision", "log"]), value=st.one_of(st.none(), st.integers(0, 10**6)))
    def check(kind: str, value: int | None) -> None:
        conn = sqlite3.connect(":memory:")
        try:
            conn.execute("CREATE TABLE r (kind TEXT, occurrences INTEGER)")
            conn.execute("INSERT INTO r VALUES (?, ?)", (kind, value))
            sql = conn.execute(f"SELECT {occurrences_sql('r')} FROM r").fetchone()[0]
        finally:
            conn.close()
        assert sql == trap_occurrences(kind, value)

    check()


_UNSPACED_WORDS = ["订单", "锁表", "缓存", "キャッシュ", "在庫", "결제", "payment", "retry"]


@pytest.mark.slow
def test_substring_search_agrees_with_the_text_after_any_sequence_of_writes(vault: Vault) -> None:
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    from memosite.store import forget_record

    bodies: dict[str, str] = {}
    step = st.tuples(
        st.sampled_from(["a", "b", "c"]),
        st.one_of(st.none(), st.lists(st.sampled_from(_UNSPACED_WORDS), min_size=1, max_size=4)),
    )

    @settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(st.lists(step, min_size=1, max_size=6), st.sampled_from(["订单", "锁表", "在庫", "결제", "缓"]))
    def check(steps: list[tuple[str, list[str] | None]], needle: str) -> None:
        for slug, words in steps:
            if words is None:
                if slug in bodies:
                    forget_record(vault, P, record_id=slug, purge=True)
                    del bodies[slug]
                continue
            bodies[slug] = "".join(words) + "\n"
            put(vault, "decision", slug, bodies[slug], title=slug)
        expected = sorted(slug for slug, body in bodies.items() if needle in body)
        assert sorted(ids(vault, f'"{needle}"')) == expected

    check()


@pytest.mark.parametrize(
    "query",
    [
        "payment retries",
        "how do payment retries work",
        "payment gateway idempotency",
        "订单表",
        "锁表",
        "zzzz",
        "auth OR",
    ],
)
def test_the_match_a_brief_reports_is_the_match_search_reports(shop: Vault, query: str) -> None:
    from memosite.index import fts
    from memosite.search import find_matches, match_of

    filters = fts.SearchFilters(P, format_iso(NOW))
    index = shop.index()
    assert match_of(index, query, filters) == find_matches(index, query, filters, sort="relevance", limit=20).match


def test_a_path_search_sees_patterns_written_since_by_this_or_another_connection(vault_dir: Path) -> None:
    # The distinct path patterns are remembered between searches: a new one must never be missed.
    one, other = Vault.open(vault_dir), Vault.open(vault_dir)
    upsert_record(one, "demo", kind="trap", slug="old", body="Old trap\n", path="src/old/a.py")
    assert [r.id for r in search_records(one, "demo", path="src/old/a.py").results] == ["old"]
    assert search_records(one, "demo", path="src/новый/b.py").results == []
    upsert_record(other, "demo", kind="trap", slug="fresh", body="Fresh trap\n", path="src/новый/b.py")
    assert [r.id for r in search_records(one, "demo", path="src/новый/b.py").results] == ["fresh"]
    upsert_record(one, "demo", kind="trap", slug="own", body="Own trap\n", path="lib/own.py")
    assert [r.id for r in search_records(one, "demo", path="lib/own.py").results] == ["own"]
    one.close()
    other.close()


@given(st.lists(st.text(), max_size=4))
def test_a_stored_pattern_set_names_paths_exactly_when_it_sorts_before_the_empty_one(patterns: list[str]) -> None:
    # matching_pattern_sets reads the sets that name paths as the range below '[]' of an index.
    stored = json.dumps(patterns)
    assert (stored < "[]") == bool(patterns)


# --- the any-word fallback ranks by relevance --------------------------------------------------

_FILLER_WORDS = ("worker", "queue", "task", "broker", "message", "retry", "result", "process")


def _distractor_body(repeats: int) -> str:
    """A long decision that mentions every common word of the question, page after page."""
    sentence = "The worker takes a task from the queue, the broker keeps the message, a retry repeats the process."
    return "\n\n".join(f"{sentence} Part {n} of the result." for n in range(repeats)) + "\n"


def _distractor_vault(root: Path, repeats: int, *, semantic: bool) -> Vault:
    root.mkdir(parents=True, exist_ok=True)
    (root / "config.local.json").write_text(json.dumps({"search": {"semantic": semantic}}), encoding="utf-8")
    vault = Vault.open(root)
    # The project's everyday records: they make the question's common words common.
    for n in range(30):
        words = " and the ".join(_FILLER_WORDS[(n + k) % len(_FILLER_WORDS)] for k in range(3))
        put(vault, "log", f"log-{n}", f"Checked the {words} after deploy {n}.\n", title=f"Deploy {n}")
    put(
        vault,
        "trap",
        "acks-late",
        "With acks_late a task that crashes the worker is delivered again.\n",
        title="acks_late redelivers",
    )
    put(vault, "decision", "queue-design", _distractor_body(repeats), title="How the work queue is designed")
    return vault


@pytest.mark.parametrize("semantic", [False, True], ids=["words", "hybrid"])
def test_a_long_distractor_never_outranks_a_short_exact_answer(tmp_path: Path, semantic: bool) -> None:
    # 200 repeats: a 20 KB record holding every common word of the question, many times over.
    vault = _distractor_vault(tmp_path / "vault", 200, semantic=semantic)
    try:
        question = "why does the worker retry my task message twice when acks_late is set on the queue"
        found = search_records(vault, P, question, now=NOW)
        assert [hit.id for hit in found.results][:1] == ["acks-late"]
        assert found.match == "any"  # neither holds every word: the fallback decided the order
    finally:
        vault.close()


@pytest.mark.slow
@settings(max_examples=12, deadline=None)
@given(repeats=st.integers(min_value=1, max_value=300), words=st.lists(st.sampled_from(_FILLER_WORDS), max_size=5))
def test_the_record_holding_the_rare_word_ranks_first_whatever_the_distractor_holds(
    repeats: int, words: list[str]
) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        vault = _distractor_vault(Path(tmp) / "vault", repeats, semantic=False)
        try:
            question = " ".join([*words, "acks_late"])
            assert ids(vault, question)[:1] == ["acks-late"]
        finally:
            vault.close()


# --- a record far larger than anyone writes by hand -------------------------------------------------


def test_a_huge_record_full_of_the_searched_word_is_found_with_a_snippet_of_its_start(vault: Vault) -> None:
    # Before: snippet() walked every match of the whole body, at a cost growing with its square: a
    # 1 MB record (a teammate's, or an agent's) made every `search` of a common word take 23 s.
    # Figures: benchmarks/bench_large_records.py.
    line = "Кэш сбрасывается lorem ipsum dolor — ελληνικά 缓存 🦊\n"
    body = line * (300_000 // len(line)) + "The okapi appears only at the very end.\n"
    upsert_record(vault, "demo", kind="trap", slug="huge", body=body, frontmatter={"title": "Huge"})
    upsert_record(vault, "demo", kind="trap", slug="small", body="A short lorem note.", frontmatter={"title": "Small"})
    found = {hit.id: hit for hit in search_records(vault, "demo", "lorem").results}
    assert set(found) == {"huge", "small"}
    assert "**lorem**" in found["huge"].snippet and len(found["huge"].snippet) < 400
    # A word only past the snippet's source still finds the record: ranking reads the whole body.
    assert [hit.id for hit in search_records(vault, "demo", "okapi").results] == ["huge"]


# --- the top-N path (issue 24) -----------------------------------------------------------------

TOPK_WORDS = ("lock", "cache", "retry", "café", "ошибка", "σφάλμα", "webhook", "jitter")
TOPK_UNSPACED = ("数据库迁移", "锁表", "キャッシュ")


@pytest.fixture(scope="module")
def topk_vault(tmp_path_factory: pytest.TempPathFactory) -> Vault:
    import random

    from memosite.refresh import reindex
    from memosite.schema import Record, serialize_record, validate_frontmatter

    rng = random.Random(5)
    vault = Vault.open(tmp_path_factory.mktemp("topk") / "vault")
    for n in range(90):
        kind = ("trap", "decision", "log", "spec")[n % 4]
        words = [rng.choice(TOPK_WORDS) for _ in range(rng.randint(1, 6))]
        if n % 7 == 0:
            words.append(rng.choice(TOPK_UNSPACED))
        fm: dict[str, object] = {
            "id": f"r{n}",
            "kind": kind,
            "project": P,
            "title": " ".join(words[:2]),
            "created": format_iso(NOW - timedelta(days=n)),
            "updated": format_iso(NOW - timedelta(days=n % 9)),
            "hits": n % 5,
        }
        if kind == "trap":
            fm.update(severity=("low", "high", "critical")[n % 3], occurrences=1 + n % 3)
            if n % 10 == 0:
                fm.update(staleCount=3, helpfulCount=0)
        if n % 13 == 0:
            fm["status"] = "archived"
        path = vault.record_path(P, kind, f"r{n}")
        path.parent.mkdir(parents=True, exist_ok=True)
        record = Record(validate_frontmatter(fm), " ".join(words) + ".\n")
        path.write_text(serialize_record(record), encoding="utf-8")
    reindex(vault, [P])
    return vault


def _materialised(index, terms, filters, *, sort: str, limit: int, require_all: bool):  # type: ignore[no-untyped-def]
    """What a search returned before it went through the top-N sort: every match materialised,
    counted and sorted (the reference the top-N path must agree with)."""
    from memosite.index import fts

    found = fts.relation(terms, fts.search_scope(index, filters), require_all=require_all)
    found.cte("m", found.select, *found.params)
    rows = index.conn.execute(
        f"{found.prefix()}SELECT *, (SELECT count(*) FROM m) AS total FROM m ORDER BY {fts.ORDERS[sort]} LIMIT ?",
        [*found.cte_params, limit],
    ).fetchall()
    total = int(rows[0]["total"]) if rows else 0
    return [(int(r["rid"]), float(r["rank"]), int(r["matched"])) for r in rows], total


@settings(max_examples=80, deadline=None)
@given(
    words=st.lists(st.sampled_from(TOPK_WORDS + TOPK_UNSPACED), min_size=1, max_size=4, unique=True),
    sort=st.sampled_from(("relevance", "occurrences", "hits", "updated")),
    limit=st.integers(min_value=1, max_value=30),
    require_all=st.booleans(),
    kinds=st.sampled_from(((), ("trap",), ("trap", "decision"))),
)
def test_the_top_n_search_returns_what_sorting_every_match_returns(
    topk_vault: Vault, words: list[str], sort: str, limit: int, require_all: bool, kinds: tuple[str, ...]
) -> None:
    from memosite.index import fts
    from memosite.query import parse_query

    index = topk_vault.index()
    parsed = parse_query(" ".join(words))
    terms = parsed.all_terms() if require_all else parsed.any_terms()
    filters = fts.SearchFilters(P, format_iso(NOW), kinds=kinds, hidden_kinds=("scratch",))
    ranking = fts.find_ranked(index, terms, filters, sort=sort, limit=limit, require_all=require_all)
    expected, total = _materialised(index, terms, filters, sort=sort, limit=limit, require_all=require_all)
    assert ranking.total == total
    assert [(rowid, rank) for rowid, rank, _ in ranking.rows] == [(rowid, rank) for rowid, rank, _ in expected]
    loaded = fts.load_ranked(index, ranking)
    assert [match.matched for match in loaded] == [matched for _, _, matched in expected]


def test_search_total_counts_every_match_when_the_page_is_full(topk_vault: Vault) -> None:
    result = search_records(topk_vault, P, "lock", limit=1, now=NOW)
    everything = search_records(topk_vault, P, "lock", limit=1000, now=NOW)
    assert len(result.results) == 1 and result.total == everything.total == len(everything.results) > 1


@settings(max_examples=60, deadline=None)
@given(
    words=st.lists(
        st.sampled_from((*TOPK_WORDS, "loc", "cach", "ret", "web", "jit", "ошиб", "caf")), min_size=1, max_size=3
    ),
    require_all=st.booleans(),
)
def test_whether_a_match_exists_is_what_finding_the_matches_says(
    topk_vault: Vault, words: list[str], require_all: bool
) -> None:
    """``exists`` asks whole words before prefixes: its answer is still whether the search finds any."""
    from memosite.index import fts
    from memosite.query import parse_query

    index = topk_vault.index()
    parsed = parse_query(" ".join(words))
    terms = parsed.all_terms() if require_all else parsed.any_terms()
    filters = fts.SearchFilters(P, format_iso(NOW), kinds=("trap", "decision"), hidden_kinds=("scratch",))
    found = fts.find_ranked(index, terms, filters, sort="relevance", limit=1, require_all=require_all)
    assert fts.exists(index, terms, filters, require_all=require_all) == bool(found.rows)


# --- British and American spellings -----------------------------------------------------------------


def _words_only_vault(root: Path) -> Vault:
    root.mkdir(parents=True, exist_ok=True)
    (root / "config.local.json").write_text(json.dumps({"search": {"semantic": False}}), encoding="utf-8")
    vault = Vault.open(root)
    put(vault, "decision", "licence", "Dual license: MIT and CC0.\n", title="How the template is licensed")
    put(vault, "trap", "pickle", "Deserializing pickled messages runs their code.\n", title="Pickle is unsafe")
    put(vault, "trap", "colours", "The theme's colors are set in one stylesheet.\n", title="Theme palette")
    put(vault, "decision", "centre", "Backups go to the second data center.\n", title="Where backups go")
    put(vault, "trap", "optimiser", "The query optimizer skips the partial index.\n", title="Planner surprise")
    put(vault, "decision", "analyse", "We analyse slow requests from the access log.\n", title="Slow requests")
    put(vault, "trap", "ru", "Сериализация сообщений: pickle небезопасен.\n", title="Сериализация")
    put(vault, "trap", "el", "Η σειριοποίηση με pickle δεν είναι ασφαλής.\n", title="Σειριοποίηση")
    put(vault, "trap", "zh", "序列化消息时不要使用 pickle。\n", title="序列化")
    return vault


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("which licences may people reuse the template under", "licence"),
        ("is deserialising messages dangerous", "pickle"),
        ("where are the colours defined", "colours"),
        ("which data centre holds backups", "centre"),
        ("query optimiser ignores my index", "optimiser"),
        ("analyzing slow requests", "analyse"),
    ],
)
def test_a_word_finds_its_other_english_spelling_with_hybrid_off(tmp_path: Path, query: str, expected: str) -> None:
    # Before: porter stems "licences" to "licenc" and "license" to "licens", "deserialising" to
    # "deserialis" and "deserializing" to "deseri": the record said it in the other spelling and
    # words alone never found it.
    vault = _words_only_vault(tmp_path / "vault")
    try:
        found = search_records(vault, P, query, now=NOW)
        assert found.ranking == "words"
        assert [hit.id for hit in found.results][:1] == [expected]
    finally:
        vault.close()


@pytest.mark.parametrize(
    ("query", "expected"),
    [("сериализация", ["ru"]), ("σειριοποίηση", ["el"]), ("序列化", ["zh"]), ("Сериализация pickle", ["ru"])],
)
def test_other_scripts_are_searched_as_written_beside_the_english_spellings(
    tmp_path: Path, query: str, expected: list[str]
) -> None:
    vault = _words_only_vault(tmp_path / "vault")
    try:
        assert [hit.id for hit in search_records(vault, P, query, now=NOW).results][: len(expected)] == expected
    finally:
        vault.close()


@pytest.mark.parametrize(
    ("word", "spellings"),
    [
        ("organise", ["organize"]),
        ("organization", ["organisation"]),
        ("Licences", ["licenses"]),
        ("license", ["licence"]),
        ("analysed", ["analyzed"]),
        ("behaviours", ["behaviors"]),
        ("centre", ["center"]),
        ("catalogue", ["catalog"]),
        ("four", []),
        ("hour", []),
        ("size", []),
        ("sequence", []),
        ("café", []),
        ("Straße", []),
        ("организация", []),
        ("οργάνωση", []),
        ("组织", []),
        ("🦊", []),
    ],
)
def test_english_spellings_swap_only_the_endings_british_and_american_english_spell_apart(
    word: str, spellings: list[str]
) -> None:
    from memosite.query import english_spellings

    assert english_spellings(word) == spellings


@settings(max_examples=200, deadline=None)
@given(word=st.text(min_size=1, max_size=30))
def test_an_english_spelling_is_never_the_word_itself_and_spelling_it_back_returns_the_word(word: str) -> None:
    from memosite.query import english_spellings

    for other in english_spellings(word):
        assert other != word.lower()
        assert other.isascii() and other.isalpha()
        if not other.endswith(
            ("or", "ors", "ored", "oring", "orite", "orites", "orable", "er", "ers", "erd", "og", "ogs")
        ):
            assert word.lower() in english_spellings(other)
