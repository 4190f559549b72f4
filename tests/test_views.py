"""Compiled views (seed 000, "Compiled views"): what each view shows and how it is ordered."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memosite.recompile import compile_project
from memosite.store import forget_record, upsert_record
from memosite.vault import Vault
from memosite.views import render_view, write_views

NOW = datetime(2026, 11, 30, tzinfo=UTC)


def _view(vault: Vault, name: str) -> str:
    return (vault.project_dir("demo") / name).read_text(encoding="utf-8")


def test_traps_sorted_by_severity_then_updated_desc(vault: Vault) -> None:
    for n, (severity, days) in enumerate([("low", 1), ("critical", 5), ("high", 3), ("critical", 1)]):
        upsert_record(
            vault,
            "demo",
            kind="trap",
            body=f"trap body number {n} unique{n}",
            slug=f"t{n}",
            frontmatter={"title": f"T{n}", "severity": severity},
            now=NOW - timedelta(days=days),
            allow_duplicate=True,
        )
    text = _view(vault, "TRAPS.md")
    order = [text.index(f"] T{n}\n") for n in (3, 1, 2, 0)]
    assert order == sorted(order)
    assert "### [CRITICAL] T3" in text
    assert "Layer: other · Occurrences: 1 · Hits: 0" in text


def test_inactive_traps_are_listed_apart(vault: Vault) -> None:
    upsert_record(vault, "demo", kind="trap", body="alive", slug="alive", frontmatter={"title": "Alive"})
    upsert_record(vault, "demo", kind="trap", body="gone", slug="gone", frontmatter={"title": "Gone"})
    upsert_record(
        vault, "demo", kind="trap", body="old", slug="old", frontmatter={"title": "Old", "expires_at": "2020-01-01"}
    )
    forget_record(vault, "demo", record_id="gone")
    text = _view(vault, "TRAPS.md")
    active, inactive = text.split("## Inactive traps")
    assert "Alive" in active and "Gone" not in active and "Old" not in active
    assert "[Gone](traps/gone.md)" in inactive and "archived" in inactive
    assert "[Old](traps/old.md)" in inactive and "expired" in inactive


def test_flagged_stale_trap_is_marked_and_ranked_after_others(vault: Vault) -> None:
    upsert_record(
        vault,
        "demo",
        kind="trap",
        body="stale one",
        slug="s",
        allow_duplicate=True,
        frontmatter={"title": "Stale", "severity": "critical", "staleCount": 3, "helpfulCount": 1},
    )
    upsert_record(
        vault,
        "demo",
        kind="trap",
        body="fresh one",
        slug="f",
        allow_duplicate=True,
        frontmatter={"title": "Fresh", "severity": "low"},
    )
    text = _view(vault, "TRAPS.md")
    assert text.index("Fresh") < text.index("Stale") and "Flagged stale" in text


def test_decisions_summary_accepted_proposed_and_superseded_sections(vault: Vault) -> None:
    upsert_record(vault, "demo", kind="decision", body="a", slug="a", frontmatter={"title": "A"})
    upsert_record(vault, "demo", kind="decision", body="p", slug="p", frontmatter={"title": "P", "status": "paused"})
    upsert_record(vault, "demo", kind="decision", body="s", slug="s", frontmatter={"title": "S", "status": "shipped"})
    upsert_record(vault, "demo", kind="decision", body="b", slug="b", frontmatter={"title": "B", "supersedes": "a"})
    text = _view(vault, "DECISIONS.md")
    assert "| 2 | 1 | 0 | 1 | 0 | 4 |" in text
    accepted = text.split("## Accepted")[1].split("## Proposed")[0]
    assert "### S" in accepted and "### B" in accepted and "### A" not in accepted
    assert "### P" in text.split("## Proposed")[1]
    assert "- [A](decisions/a.md) → superseded by [B](decisions/b.md)\n" in text


def test_each_superseded_decision_is_its_own_list_item(vault: Vault) -> None:
    for name in ("a", "b", "c"):
        upsert_record(vault, "demo", kind="decision", body=name, slug=name, frontmatter={"title": name.upper()})
    upsert_record(vault, "demo", kind="decision", body="d", slug="d", frontmatter={"title": "D", "supersedes": "a"})
    upsert_record(vault, "demo", kind="decision", body="e", slug="e", frontmatter={"title": "E", "supersedes": "b"})
    upsert_record(
        vault,
        "demo",
        kind="decision",
        body="f",
        slug="f",
        frontmatter={"title": "F", "supersedes": "ghost"},
        supersedes_missing_ok=True,
    )
    section = _view(vault, "DECISIONS.md").split("## Superseded")[1].split("##")[0]
    items = [line for line in section.splitlines() if line.startswith("- ")]
    assert items == [
        "- [B](decisions/b.md) → superseded by [E](decisions/e.md)",
        "- [A](decisions/a.md) → superseded by [D](decisions/d.md)",
    ]


def test_index_counts_and_tables_for_durable_kinds_only(vault: Vault) -> None:
    for kind in ("trap", "decision", "spec", "plan", "log", "review", "prompt", "session", "state", "scratch"):
        upsert_record(
            vault, "demo", kind=kind, body=f"{kind} body", slug=f"{kind}-1", frontmatter={"title": f"{kind} title"}
        )
    text = _view(vault, "INDEX.md")
    for kind in ("trap", "decision", "spec", "plan", "log", "review", "prompt", "session"):
        assert f"| {kind} | 1 | " in text and f"{kind} title" in text
    assert "state title" not in text and "scratch title" not in text
    assert "| **total** | **8** |" in text


def test_prompts_and_sessions_inventories(vault: Vault) -> None:
    upsert_record(
        vault, "demo", kind="prompt", body="do x", frontmatter={"title": "Do X", "sessionId": "s1", "turn": 2}
    )
    upsert_record(
        vault,
        "demo",
        kind="session",
        body="worked",
        frontmatter={"title": "Work", "sessionId": "s1", "turns": 5, "startTime": "2026-11-29T10:00:00Z"},
    )
    assert "| [prompt-s1-t2](prompts/prompt-s1-t2.md) | Do X | s1 | 2 |" in _view(vault, "PROMPTS.md")
    assert "| [session-s1](sessions/session-s1.md) | Work | active | 2026-11-29 |  | 5 |" in _view(vault, "SESSIONS.md")


def test_views_carry_a_last_compiled_stamp(vault: Vault) -> None:
    upsert_record(vault, "demo", kind="trap", body="x", slug="x")
    text = render_view(vault, "demo", "INDEX.md", now=NOW)
    assert "Last compiled: 2026-11-30T00:00:00.000Z" in text


def test_table_cells_escape_pipes(vault: Vault) -> None:
    upsert_record(vault, "demo", kind="spec", body="x", slug="pipe", frontmatter={"title": "a | b"})
    assert "a \\| b" in _view(vault, "INDEX.md")


def test_only_affected_views_are_rewritten(vault: Vault) -> None:
    upsert_record(vault, "demo", kind="trap", body="x", slug="x")
    write_views(vault, "demo")
    before = {name: (vault.project_dir("demo") / name).stat().st_mtime_ns for name in ("DECISIONS.md", "PROMPTS.md")}
    upsert_record(vault, "demo", kind="trap", body="y", slug="y", allow_duplicate=True)
    after = {name: (vault.project_dir("demo") / name).stat().st_mtime_ns for name in ("DECISIONS.md", "PROMPTS.md")}
    assert before == after


def test_vault_templates_override_the_shipped_ones(vault: Vault) -> None:
    custom = vault.root / "templates" / "views"
    custom.mkdir(parents=True)
    (custom / "PROMPTS.md.j2").write_text("custom prompts for {{ project }}\n", encoding="utf-8")
    upsert_record(vault, "demo", kind="prompt", body="x", slug="p")
    assert _view(vault, "PROMPTS.md") == "custom prompts for demo\n"


def test_row_template_override_is_seen_without_reindex_in_one_process(vault: Vault) -> None:
    """Rows are cached in the index as rendered text: a new, edited or removed override of the row
    template re-renders them at the next command of the same (long-running) process."""
    upsert_record(vault, "demo", kind="trap", body="Beware the lock.", slug="t", frontmatter={"title": "Lock"})
    assert "### [UNRATED] Lock" in _view(vault, "TRAPS.md")
    rows = vault.root / "templates" / "rows.md.j2"
    rows.parent.mkdir(parents=True)
    delegated = "".join(
        f"{{% macro {name}(e) %}}{{{{ base.{name}(e) }}}}{{% endmacro %}}"
        for name in ("decision", "prompt", "session", "index_row", "line")
    )
    rows.write_text(
        '{% import "default:rows.md.j2" as base %}{% macro trap(e) %}CUSTOM {{ e.title }}\n{% endmacro %}' + delegated,
        encoding="utf-8",
    )
    upsert_record(vault, "demo", kind="spec", body="unrelated", slug="s")
    assert "CUSTOM Lock" in _view(vault, "TRAPS.md")
    rows.write_text(rows.read_text(encoding="utf-8").replace("CUSTOM", "EDITED"), encoding="utf-8")
    compile_project(vault, "demo")
    assert "EDITED Lock" in _view(vault, "TRAPS.md")
    rows.unlink()
    compile_project(vault, "demo")
    assert "### [UNRATED] Lock" in _view(vault, "TRAPS.md")


def test_default_prefix_names_the_shipped_template(vault: Vault) -> None:
    custom = vault.root / "templates" / "views"
    custom.mkdir(parents=True)
    (custom / "PROMPTS.md.j2").write_text('Team header\n{% include "default:views/PROMPTS.md.j2" %}', encoding="utf-8")
    upsert_record(vault, "demo", kind="prompt", body="x", slug="p")
    text = _view(vault, "PROMPTS.md")
    assert text.startswith("Team header\n") and "# Prompts" in text


def test_vault_git_commits_each_mutation_when_enabled(vault_dir: Path) -> None:
    import subprocess

    vault_dir.mkdir(parents=True, exist_ok=True)
    (vault_dir / "config.json").write_text(
        json.dumps({"vaultGit": {"enabled": True, "atomic": True}}), encoding="utf-8"
    )
    vault = Vault.open(vault_dir)
    upsert_record(vault, "demo", kind="trap", body="x", slug="x")
    forget_record(vault, "demo", record_id="x")
    log = subprocess.run(
        ["git", "-C", str(vault_dir), "log", "--format=%s"],
        capture_output=True,
        text=True,
        encoding="utf-8",
        check=True,
    )
    assert log.stdout.splitlines() == ["forget trap:x", "upsert trap:x"]
    tracked = subprocess.run(
        ["git", "-C", str(vault_dir), "ls-files"], capture_output=True, text=True, encoding="utf-8", check=True
    ).stdout
    assert "projects/demo/traps/x.md" in tracked and "index.sqlite" not in tracked
    vault.close()


def test_vault_git_batched_mode_commits_on_flush(vault_dir: Path) -> None:
    import subprocess

    from memosite.commitpolicy import flush_pending

    vault_dir.mkdir(parents=True, exist_ok=True)
    (vault_dir / "config.json").write_text(
        json.dumps({"vaultGit": {"enabled": True, "atomic": False}}), encoding="utf-8"
    )
    vault = Vault.open(vault_dir)
    upsert_record(vault, "demo", kind="trap", body="x", slug="x")
    upsert_record(vault, "demo", kind="spec", body="y", slug="y")
    assert not (vault_dir / ".git").exists()
    assert flush_pending(vault) is True
    log = subprocess.run(
        ["git", "-C", str(vault_dir), "log", "--format=%B"],
        capture_output=True,
        text=True,
        encoding="utf-8",
        check=True,
    )
    assert "upsert trap:x" in log.stdout and "upsert spec:y" in log.stdout
    vault.close()


def test_long_trap_bodies_are_cut_at_a_paragraph_and_linked(vault: Vault) -> None:
    long_body = "\n\n".join(f"Paragraph {n} " + "word " * 60 for n in range(6))
    upsert_record(vault, "demo", kind="trap", body=long_body, slug="long", frontmatter={"title": "Long"})
    text = _view(vault, "TRAPS.md")
    assert "Paragraph 0" in text and "Paragraph 5" not in text
    assert "[Read the whole record](traps/long.md)" in text


def test_digest_shows_short_bodies_whole_and_sums_up_long_ones() -> None:
    from memosite.views import digest

    assert digest("short body\n") == ("short body", False)
    long_body = "# Heading\n\nFirst paragraph explains it.\n\n" + "More detail. " * 60
    assert digest(long_body) == ("First paragraph explains it.", True)


@pytest.mark.parametrize(
    "opening",
    [
        "Date: 2021-08-10\n\n## Status\n\nAccepted\n\n## Context",  # adr-tools (Nygard)
        # MADR 2
        "* Status: accepted\n* Deciders: Ана, Zoë, 王芳\n* Date: 2024-03-01\n\n## Context and Problem Statement",
        "<!-- vale RedHat.Headings = NO -->\n\n## Context",  # an editor's comment
        "## Statut\n\nAccepté\n\n## Status\n\nAccepted\n\n## Контекст",
    ],
)
def test_a_decisions_digest_is_what_it_says_not_its_metadata(opening: str) -> None:
    from memosite.views import digest

    said = "Платежи повторяются: we need one queue for retries, 決済 included."
    body = f"{opening}\n\n{said}\n\n## Decision\n\n" + "We use the job queue. " * 30
    assert digest(body) == (said, True)


def test_digest_never_ends_inside_a_code_fence() -> None:
    from memosite.views import digest

    body = "Run this:\n```sh\nmake clean\n" + "echo x\n" * 80 + "```\n\nafter the code"
    text, more = digest(body)
    assert text == "Run this:" and more


def test_digest_cuts_a_long_paragraph_at_a_word() -> None:
    from memosite.views import digest

    text, more = digest("word " * 200)
    assert more and text.endswith(" …") and len(text) <= 330 and "wor …" not in text


HOSTILE = "[Login](https://evil.example/x) **bold** # heading <b>x</b> `tick` _em_ {#id .cls} | pipe &amp;"


def _rendered(markdown_text: str) -> str:
    import markdown

    return markdown.Markdown(extensions=["tables", "attr_list", "toc", "admonition"]).convert(markdown_text)


def test_frontmatter_text_in_every_view_shows_as_the_characters_it_is(vault: Vault) -> None:
    fields = {
        "title": HOSTILE,
        "tags": [HOSTILE, "ok"],
        "module": "src/[x](https://evil.example)`",
        "pathPatterns": ["src/**/*.py", "[y](https://evil.example)"],
        "severity": "high",
    }
    upsert_record(vault, "demo", kind="trap", body="Body text.", slug="hostile-trap", frontmatter=fields)
    upsert_record(vault, "demo", kind="decision", body="d", slug="hostile-decision", frontmatter={"title": HOSTILE})
    upsert_record(
        vault,
        "demo",
        kind="prompt",
        body="p",
        slug="hostile-prompt",
        frontmatter={"title": HOSTILE, "sessionId": "[s](https://evil.example)", "turn": 1},
    )
    upsert_record(
        vault,
        "demo",
        kind="session",
        body="s",
        slug="hostile-session",
        frontmatter={"title": HOSTILE, "sessionId": "s9", "goal": HOSTILE, "turns": 2},
    )
    for name in ("TRAPS.md", "DECISIONS.md", "INDEX.md", "PROMPTS.md", "SESSIONS.md"):
        html = _rendered(_view(vault, name))
        assert 'href="https://evil.example' not in html, name
        assert "<strong>bold</strong>" not in html and "<b>x</b>" not in html and "<em>em</em>" not in html, name
        assert "**bold**" in html and "[Login](https://evil.example/x)" in html, name
        assert 'class="cls"' not in html and 'id="id"' not in html, name


def test_expired_records_read_as_expired_in_index_and_decisions_and_counts_agree(vault: Vault) -> None:
    past = {"expires_at": "2021-01-01"}
    upsert_record(vault, "demo", kind="decision", body="live", slug="live", frontmatter={"title": "Live one"})
    upsert_record(vault, "demo", kind="decision", body="old", slug="old", frontmatter={"title": "Old one", **past})
    upsert_record(vault, "demo", kind="spec", body="spec", slug="gone-spec", frontmatter={"title": "Gone spec", **past})
    upsert_record(vault, "demo", kind="trap", body="trap", slug="gone-trap", frontmatter={"title": "Gone trap", **past})
    index = _view(vault, "INDEX.md")
    assert "| [old](decisions/old.md) | Old one | expired |" in index
    assert "| [gone-spec](specs/gone-spec.md) | Gone spec | expired |" in index
    assert "| [live](decisions/live.md) | Live one | active |" in index
    assert "| decision | 2 | 1 |" in index and "| spec | 1 | 0 |" in index and "| trap | 1 | 0 |" in index
    decisions = _view(vault, "DECISIONS.md")
    assert "| 1 | 0 | 1 | 0 | 0 | 2 |" in decisions
    expired_section = decisions.split("## Expired", 1)[1]
    assert "- [Old one](decisions/old.md) · decision · expired" in expired_section
    assert "## Archived" not in decisions
    traps = _view(vault, "TRAPS.md")
    assert "- [Gone trap](traps/gone-trap.md) · trap · expired" in traps and "· active" not in traps


def test_a_record_that_expires_later_turns_expired_when_the_view_is_compiled_then(vault: Vault) -> None:
    # Dated from the real clock: the row is made when the record is written, at today's date.
    today = datetime.now(UTC)
    soon = (today + timedelta(days=1)).date().isoformat()
    upsert_record(vault, "demo", kind="spec", body="s", slug="soon", frontmatter={"title": "Soon", "expires_at": soon})
    before = render_view(vault, "demo", "INDEX.md", now=today)
    after = render_view(vault, "demo", "INDEX.md", now=today + timedelta(days=3))
    assert "| Soon | active |" in before and "| spec | 1 | 1 |" in before
    assert "| Soon | expired |" in after and "| spec | 1 | 0 |" in after
