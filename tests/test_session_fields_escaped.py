"""Every session field is escaped as a record's fields are (issue 21): a goal, a goal's note or a
fact an agent wrote shows as the characters it is in SESSIONS.md, on the session's record page and
in the handoff, never as a link or as markup."""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import markdown
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memosite.sessions.events import Event
from memosite.sessions.ledger import Fact, GoalLedger, render_handoff

LINK_GOAL = "[Login](https://evil.example/x)"
BOLD_GOAL = "**bold** <b>raw</b> _under_ `code` ![img](https://evil.example/i.png)"
SCRIPTS = "Café ошибка ελληνικά 日本語 عربى 🎉"
# Control characters are no text a person writes (Python-Markdown uses two of them internally).
TEXT = st.text(alphabet=st.characters(exclude_categories=["Cc", "Cs"]), max_size=60)
LIVE = re.compile(r'href="https://evil\.example|src="https://evil\.example|<strong>bold|<b>raw|<em>under|<code>code')


def _session(run_cli: Callable[..., Any]) -> None:
    started = run_cli("session", "start", "--id", "s1", "--goal", LINK_GOAL, "--goal", BOLD_GOAL, "--goal", SCRIPTS)
    assert started.exit_code == 0, started.stderr
    for kind, data, text in (
        ("fact", None, "see [the docs](https://evil.example/docs) **now**"),
        ("goal.progress", '{"goal": "g1"}', "[click](https://evil.example/note)"),
    ):
        args = ["session", "append", "--session", "s1", "--type", kind, "--text", text]
        assert run_cli(*args, *(["--data", data] if data else [])).exit_code == 0
    assert run_cli("session", "end", "--session", "s1").exit_code == 0  # the record takes the facts and notes


def test_session_start_goal_with_a_link_is_text_in_the_view_and_the_record(
    vault_dir: Path, run_cli: Callable[..., Any]
) -> None:
    _session(run_cli)
    view = (vault_dir / "projects/demo/SESSIONS.md").read_text(encoding="utf-8")
    record = (vault_dir / "projects/demo/sessions/session-s1.md").read_text(encoding="utf-8")
    for text in (view, record.split("\n---\n", 1)[1]):
        rendered = markdown.markdown(text, extensions=["tables"])
        assert not LIVE.search(rendered), rendered
        assert "[Login](https://evil.example/x)" in html.unescape(re.sub(r"<[^>]+>", "", rendered))
    assert SCRIPTS in record


@pytest.mark.slow
def test_session_fields_are_inert_text_on_the_built_site(
    vault_dir: Path, tmp_path: Path, run_cli: Callable[..., Any]
) -> None:
    _session(run_cli)
    built = run_cli("build", "--out", str(tmp_path / "site"))
    assert built.exit_code == 0, built.stderr
    page = (tmp_path / "site/memory/demo/sessions/session-s1/index.html").read_text(encoding="utf-8")
    sessions = (tmp_path / "site/memory/demo/SESSIONS/index.html").read_text(encoding="utf-8")
    for text in (page, sessions):
        assert not LIVE.search(text)
    shown = html.unescape(re.sub(r"<[^>]+>", "", page))
    for visible in (LINK_GOAL, "**bold**", "<b>raw</b>", "[click](https://evil.example/note)", SCRIPTS):
        assert visible in shown, visible


def test_session_fields_are_inert_text_in_the_export(tmp_path: Path, run_cli: Callable[..., Any]) -> None:
    _session(run_cli)
    assert run_cli("export-docs", str(tmp_path / "docs")).exit_code == 0
    text = (tmp_path / "docs/memory/demo/sessions/session-s1.md").read_text(encoding="utf-8")
    rendered = markdown.markdown(text.split("\n---\n", 1)[1], extensions=["tables"])
    assert not LIVE.search(rendered)


def _ledger(goal: str, note: str) -> GoalLedger:
    ledger = GoalLedger()
    for seq, kind, text in ((1, "goal.set", goal), (2, "goal.progress", note)):
        ledger.apply(Event(seq, "2026-01-05T10:00:00.000Z", None, kind, {"goal": "g1", "text": text}))
    return ledger


@settings(max_examples=200, deadline=None)
@given(goal=TEXT.filter(str.strip), note=TEXT, fact=TEXT)
def test_every_session_text_renders_as_the_characters_it_is(goal: str, note: str, fact: str) -> None:
    handoff = render_handoff(
        "s1",
        _ledger(goal, note),
        [Fact(3, "2026-01-05T10:02:00.000Z", None, fact)] if fact.strip() else [],
        status="active",
        turns=0,
        events=3,
    )
    rendered = markdown.markdown(handoff, extensions=["tables"])  # as the site renders it
    assert "<a " not in rendered and "<strong>" not in rendered and "<em>" not in rendered and "<img" not in rendered
    visible = html.unescape(re.sub(r"<[^>]+>", "", rendered))
    for written in (goal, note, fact):
        assert " ".join(written.split()) in " ".join(visible.split())
