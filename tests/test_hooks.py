"""Hooks (issue 26), tested without the agents: each hook command driven with the JSON payloads the
agents' documentation specifies (tests/corpus/agents, with their sources), its answer validated
against the documented output shape; the brief at session start, clearly matching records on a
prompt (never twice in a session, nothing for an unrelated prompt), the session recorded at its
end; a hook that never blocks the agent; `hooks install|uninstall|status` keeping a person's
settings."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memosite.agentsession import session_slug
from memosite.hooks import runner
from memosite.recall import named_paths, terms_needed
from memosite.recordfile import read_record

CORPUS = Path(__file__).parent / "corpus" / "agents"
SESSION = "0d6f3c1e-5b7a-4c2e-9a41-3f0e2b8c7d15"

# The answers' documented shapes. Claude Code: SyncHookJSONOutput with a hookSpecificOutput
# (claude_agent_sdk/types.py: SessionStart/UserPromptSubmitHookSpecificOutput); Gemini CLI: the
# common output fields and hookSpecificOutput.additionalContext (docs/hooks/reference.md);
# Cursor: sessionStart's additional_context (cursor.com/docs/agent/hooks).
_CONTEXT = {
    "type": "object",
    "properties": {
        "hookSpecificOutput": {
            "type": "object",
            "properties": {
                "hookEventName": {"type": "string"},
                "additionalContext": {"type": "string", "minLength": 1},
            },
            "required": ["hookEventName", "additionalContext"],
            "additionalProperties": False,
        }
    },
    "required": ["hookSpecificOutput"],
    "additionalProperties": False,
}
_NOTICE = {
    "type": "object",
    "properties": {"systemMessage": {"type": "string", "minLength": 1}},
    "additionalProperties": False,
}
_CURSOR_CONTEXT = {
    "type": "object",
    "properties": {"additional_context": {"type": "string", "minLength": 1}, "continue": {"const": True}},
    "required": ["additional_context"],
    "additionalProperties": False,
}


@pytest.fixture(autouse=True)
def not_an_agents_shell(monkeypatch: pytest.MonkeyPatch) -> None:
    for marker in ("CLAUDECODE", "GEMINI_CLI"):
        monkeypatch.delenv(marker, raising=False)


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "shop"
    (root / "src" / "payments").mkdir(parents=True)
    (root / "src" / "payments" / "client.py").write_text("def charge(order, key):\n    return key\n", encoding="utf-8")
    (root / ".git").mkdir()
    monkeypatch.chdir(root)
    return root


@pytest.fixture
def memory(repo: Path, run_cli: Any) -> Path:
    """A vault with traps and decisions in several scripts, one of them about a file of the repo."""
    records = [
        (
            "trap",
            "idempotency",
            "Payment retries need an idempotency key",
            "critical",
            "src/payments/client.py",
            "Retrying a charge without an idempotency key double-charges customers.",
        ),
        (
            "trap",
            "migrations",
            "NOT NULL migrations lock the orders table",
            "high",
            "migrations/versions",
            "Add the column nullable, backfill in batches, then add the constraint.",
        ),
        (
            "trap",
            "migratsiya",
            "Миграция блокирует таблицу заказов",
            "medium",
            None,
            "Миграция с NOT NULL блокирует таблицу заказов на минуты.",
        ),
        (
            "decision",
            "fts",
            "Product search uses full-text indexes",
            None,
            None,
            "Search moves to PostgreSQL full-text search; LIKE scans took 800 ms.",
        ),
    ]
    for kind, slug, title, severity, path, body in records:
        args = ["upsert", "--kind", kind, "--slug", slug, "--title", title, "--body", body]
        args += ["--severity", severity] if severity else []
        args += ["--path", path] if path else []
        assert run_cli(*args).exit_code == 0
    return repo


def payload(agent: str, event: str, cwd: Path, *, prompt: str = "", transcript: str = "", outside: str = "") -> str:
    text = (CORPUS / agent / f"{event}.json").read_text(encoding="utf-8")
    data = json.loads(text)
    replacements = {"{cwd}": str(cwd), "{transcript}": transcript, "{prompt}": prompt, "{outside}": outside}

    def fill(value: Any) -> Any:
        if isinstance(value, str):
            for key, new in replacements.items():
                value = value.replace(key, new)
            return value
        if isinstance(value, list):
            return [fill(item) for item in value]
        if isinstance(value, dict):
            return {key: fill(item) for key, item in value.items()}
        return value

    return json.dumps(fill(data))


def transcript(agent: str, tmp_path: Path, cwd: Path, *extra: str) -> Path:
    name = "transcript.jsonl" if agent == "claude-code" else "transcript.json"
    text = (CORPUS / agent / name).read_text(encoding="utf-8")
    text = text.replace("{cwd}", str(cwd)).replace("{outside}", str(tmp_path / "home"))
    path = tmp_path / f"{agent}-{name}"
    path.write_text(text + "".join(f"{line}\n" for line in extra), encoding="utf-8")
    return path


def hook(*argv: str, stdin: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    """The hook in process, through its real entry point (stdin and stdout as bytes and text)."""
    out = io.StringIO()
    # In process a hook that runs out of time would end the test run: no limit a loaded machine meets.
    code = runner.main(list(argv), stdin=io.BytesIO(stdin.encode("utf-8")), stdout=out, env=env, time_limit=120)
    return code, out.getvalue()


def run_exe(memosite_exe: Path, *argv: str, stdin: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(memosite_exe), *argv],
        input=stdin,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=120,
        check=False,
    )


# --- the documented payloads, answered in the documented shapes ------------------------------------


@pytest.mark.parametrize(
    ("agent", "event", "handler"),
    [
        ("claude-code", "SessionStart", "session-start"),
        ("claude-code", "UserPromptSubmit", "prompt"),
        ("gemini-cli", "SessionStart", "session-start"),
        ("gemini-cli", "BeforeAgent", "prompt"),
        ("cursor", "sessionStart", "session-start"),
    ],
)
def test_each_agents_documented_payload_gets_context_in_its_documented_shape(
    memory: Path, memosite_exe: Path, agent: str, event: str, handler: str
) -> None:
    stdin = payload(agent, event, memory, prompt="Why do payment retries double-charge? See src/payments/client.py")
    # A limit a loaded machine meets: the documented shape is checked here, not the timing.
    done = run_exe(memosite_exe, "hook", handler, "--agent", agent, "--time-limit", "120", stdin=stdin)
    assert done.returncode == 0 and done.stderr == ""
    answer = json.loads(done.stdout)
    if agent == "cursor":
        jsonschema.validate(answer, _CURSOR_CONTEXT)
        context = answer["additional_context"]
    else:
        jsonschema.validate(answer, _CONTEXT)
        assert answer["hookSpecificOutput"]["hookEventName"] == event
        context = answer["hookSpecificOutput"]["additionalContext"]
    assert "Payment retries need an idempotency key" in context


@pytest.mark.parametrize(
    ("agent", "events"),
    [
        ("claude-code", ("PreCompact", "SessionEnd")),
        ("gemini-cli", ("PreCompress", "SessionEnd")),
        ("cursor", ("sessionEnd",)),
    ],
)
def test_each_agents_session_end_payload_records_the_session(
    memory: Path, vault_dir: Path, tmp_path: Path, memosite_exe: Path, agent: str, events: tuple[str, ...]
) -> None:
    log = transcript(agent, tmp_path, memory) if agent != "cursor" else None
    for event in events:
        stdin = payload(agent, event, memory, transcript=str(log or ""))
        done = run_exe(memosite_exe, "hook", "session-end", "--agent", agent, "--time-limit", "120", stdin=stdin)
        assert done.returncode == 0 and done.stderr == ""
        if done.stdout.strip():
            jsonschema.validate(json.loads(done.stdout), _NOTICE)
    session_id = json.loads(payload(agent, events[-1], memory))["session_id"]
    record = read_record(vault_dir / "projects/demo/sessions" / f"{session_slug(agent, session_id)}.md")
    assert record.frontmatter["status"] == "completed" and record.frontmatter["agent"] == agent
    assert record.frontmatter["source"] == "agent"


# --- session start -----------------------------------------------------------------------------------


def test_session_start_adds_the_brief_and_how_to_save_a_trap(memory: Path) -> None:
    code, out = hook("session-start", stdin=payload("claude-code", "SessionStart", memory))
    context = json.loads(out)["hookSpecificOutput"]["additionalContext"]
    assert code == 0 and context.startswith("# Session brief: demo")
    assert "Миграция блокирует таблицу заказов" in context and "memosite upsert --kind trap" in context


def test_session_start_on_an_empty_project_adds_nothing(repo: Path, vault_dir: Path, run_cli: Any) -> None:
    assert run_cli("init").exit_code == 0
    assert hook("session-start", stdin=payload("claude-code", "SessionStart", repo)) == (0, "")
    assert hook("session-start", "--agent", "gemini-cli", stdin=payload("gemini-cli", "SessionStart", repo)) == (
        0,
        "{}\n",
    )


# --- prompts -----------------------------------------------------------------------------------------


def _recalled(out: str) -> str:
    return json.loads(out)["hookSpecificOutput"]["additionalContext"] if out else ""


def test_a_prompt_gets_the_records_that_clearly_match_it(memory: Path) -> None:
    prompt = "Our NOT NULL migration on the orders table hangs for minutes, what should I do?"
    code, out = hook("prompt", stdin=payload("claude-code", "UserPromptSubmit", memory, prompt=prompt))
    context = _recalled(out)
    assert code == 0 and "NOT NULL migrations lock the orders table" in context
    assert "idempotency" not in context  # shares no words that matter with the prompt


def test_a_prompt_naming_a_file_gets_the_traps_about_it(memory: Path) -> None:
    prompt = "Please refactor src/payments/client.py"
    context = _recalled(hook("prompt", stdin=payload("claude-code", "UserPromptSubmit", memory, prompt=prompt))[1])
    assert "Payment retries need an idempotency key" in context


@pytest.mark.parametrize(
    "prompt",
    [
        "What is the capital of Australia?",
        "Écris un poème sur la mer et les mouettes",
        "Как приготовить борщ дома?",
        "Πώς φτιάχνω καφέ φίλτρου;",
        "今天天气怎么样",
        "ما هي عاصمة المغرب؟",
        "🎉🎂 happy birthday 🎈",
        "",
        "   ",
    ],
)
def test_an_unrelated_prompt_gets_nothing(memory: Path, prompt: str) -> None:
    assert hook("prompt", stdin=payload("claude-code", "UserPromptSubmit", memory, prompt=prompt)) == (0, "")


def test_a_prompt_in_another_script_finds_memory_in_that_script(memory: Path) -> None:
    prompt = "Почему миграция блокирует таблицу заказов?"
    context = _recalled(hook("prompt", stdin=payload("claude-code", "UserPromptSubmit", memory, prompt=prompt))[1])
    assert "Миграция блокирует таблицу заказов" in context


def test_a_record_is_never_given_twice_in_one_session(memory: Path) -> None:
    prompt = "The NOT NULL migration locks the orders table again"
    first = _recalled(hook("prompt", stdin=payload("claude-code", "UserPromptSubmit", memory, prompt=prompt))[1])
    assert "NOT NULL migrations lock the orders table" in first
    assert hook("prompt", stdin=payload("claude-code", "UserPromptSubmit", memory, prompt=prompt)) == (0, "")
    # The brief of another session counts as given too: its prompt brings nothing the brief had.
    other = payload("claude-code", "SessionStart", memory).replace(SESSION, "another-session")
    assert hook("session-start", stdin=other)[1]
    again = payload("claude-code", "UserPromptSubmit", memory, prompt=prompt).replace(SESSION, "another-session")
    assert hook("prompt", stdin=again) == (0, "")
    # A third session has seen nothing yet.
    third = payload("claude-code", "UserPromptSubmit", memory, prompt=prompt).replace(SESSION, "third")
    assert "NOT NULL migrations" in _recalled(hook("prompt", stdin=third)[1])


def test_memory_waiting_for_review_expired_or_drifted_is_never_recalled(
    repo: Path, vault_dir: Path, run_cli: Any
) -> None:
    vault_dir.mkdir(parents=True, exist_ok=True)
    (vault_dir / "config.json").write_text(json.dumps({"review": {"required": ["trap"]}}), encoding="utf-8")
    body = "Webhook signatures must be checked on the raw request body."
    for slug, extra in (
        ("pending", ("--source", "agent")),
        ("expired", ("--expires-at", "2001-01-01")),
        ("drifted", ("--cite", "src/payments/client.py:1-2")),
    ):
        assert (
            run_cli(
                "upsert", "--kind", "trap", "--slug", slug, "--title", f"Webhook {slug}", "--body", body, *extra
            ).exit_code
            == 0
        )
    (repo / "src/payments/client.py").write_text("def charge(order):\n    return None\n", encoding="utf-8")
    assert run_cli("verify").exit_code == 0
    prompt = "Webhook signatures fail on the raw request body"
    assert hook("prompt", stdin=payload("claude-code", "UserPromptSubmit", repo, prompt=prompt)) == (0, "")


@pytest.mark.parametrize(("count", "needed"), [(0, 0), (1, 1), (2, 2), (6, 2), (7, 3), (12, 3), (13, 4), (60, 4)])
def test_the_longer_the_prompt_the_more_terms_a_clear_match_holds(count: int, needed: int) -> None:
    assert terms_needed(count) == needed


def test_paths_named_in_a_prompt_are_found_and_urls_are_not_paths() -> None:
    prompt = "Compare src/pay/client.py with ./tests/conftest.py, see https://example.org/a/b.html and ../x.py"
    assert named_paths(prompt) == ["src/pay/client.py", "tests/conftest.py"]


# --- session end -------------------------------------------------------------------------------------


def test_session_end_records_what_the_agent_touched_inside_the_repository_only(
    memory: Path, vault_dir: Path, tmp_path: Path
) -> None:
    log = transcript("claude-code", tmp_path, memory)
    code, out = hook("session-end", stdin=payload("claude-code", "SessionEnd", memory, transcript=str(log)))
    assert code == 0
    record = read_record(vault_dir / f"projects/demo/sessions/{session_slug('claude-code', SESSION)}.md")
    assert record.frontmatter["touchedFiles"] == ["src/payments/client.py", "tests/test_retries.py"]
    assert record.frontmatter["startTime"] == "2026-11-30T09:00:02.114Z"
    assert "1 file outside the repository" in record.body and str(tmp_path) not in record.body
    logs = sorted((vault_dir / "projects/demo/logs").glob("log-*.md"))
    event = read_record(logs[-1])
    assert event.frontmatter["details"]["touched"] == ["src/payments/client.py", "tests/test_retries.py"]
    assert "changed 2 files" in event.frontmatter["title"]
    # Files changed and no trap saved: the person is reminded.
    assert "saved no trap" in json.loads(out)["systemMessage"]


def test_session_end_does_not_remind_when_the_agent_saved_a_trap(memory: Path, tmp_path: Path) -> None:
    saved = json.dumps(
        {
            "type": "assistant",
            "message": {
                "content": [
                    {"type": "tool_use", "name": "mcp__memosite__upsert", "input": {"kind": "trap", "body": "x"}}
                ]
            },
        }
    )
    log = transcript("claude-code", tmp_path, memory, saved)
    assert hook("session-end", stdin=payload("claude-code", "SessionEnd", memory, transcript=str(log))) == (0, "")
    gemini = transcript("gemini-cli", tmp_path, memory)  # it ran `memosite upsert --kind trap` in its shell
    end = payload("gemini-cli", "SessionEnd", memory, transcript=str(gemini))
    assert hook("session-end", "--agent", "gemini-cli", stdin=end) == (0, "{}\n")


def test_a_checkpoint_before_compaction_is_completed_by_the_end(memory: Path, vault_dir: Path, tmp_path: Path) -> None:
    log = transcript("claude-code", tmp_path, memory)
    hook("session-end", stdin=payload("claude-code", "PreCompact", memory, transcript=str(log)))
    path = vault_dir / f"projects/demo/sessions/{session_slug('claude-code', SESSION)}.md"
    assert read_record(path).frontmatter["status"] == "active"
    hook("session-end", stdin=payload("claude-code", "SessionEnd", memory, transcript=str(log)))
    record = read_record(path)
    assert record.frontmatter["status"] == "completed" and record.frontmatter["endReason"] == "prompt_input_exit"
    assert len(list(path.parent.glob("session-claude-code-*.md"))) == 1


@pytest.mark.parametrize("session_id", ["../../etc/passwd", "a/b", "ünïcødé", "x" * 300, ".."])
def test_a_session_id_that_is_no_file_name_is_recorded_under_its_digest(
    memory: Path, vault_dir: Path, session_id: str
) -> None:
    stdin = json.dumps({"session_id": session_id, "hook_event_name": "SessionEnd", "cwd": str(memory)})
    assert hook("session-end", stdin=stdin)[0] == 0
    slug = session_slug("claude-code", session_id)
    assert "/" not in slug and ".." not in slug
    record = read_record(vault_dir / f"projects/demo/sessions/{slug}.md")
    assert record.frontmatter["sessionId"] == session_id


def test_a_transcript_path_that_is_no_transcript_yields_nothing(memory: Path, vault_dir: Path, tmp_path: Path) -> None:
    for bogus in ("/dev/null", str(tmp_path), str(tmp_path / "missing.jsonl"), str(CORPUS / "README.md")):
        stdin = payload("claude-code", "SessionEnd", memory, transcript=bogus)
        assert hook("session-end", stdin=stdin) == (0, "")
    record = read_record(vault_dir / f"projects/demo/sessions/{session_slug('claude-code', SESSION)}.md")
    assert record.frontmatter["touchedFiles"] == []


# --- a hook never blocks the agent --------------------------------------------------------------------


def test_a_failing_hook_answers_nothing_exits_0_and_logs_why(memory: Path, vault_dir: Path) -> None:
    assert hook("prompt", stdin="this is not JSON") == (0, "")
    assert hook("prompt", "--agent", "gemini-cli", stdin="[1, 2]") == (0, "{}\n")
    log = (vault_dir / ".memosite" / "hooks.log").read_text(encoding="utf-8").splitlines()
    assert "prompt (claude-code): INVALID_ARGUMENTS: the hook payload is not JSON" in log[0]
    assert "prompt (gemini-cli): INVALID_ARGUMENTS: the hook payload is not a JSON object" in log[1]


def test_without_a_vault_a_hook_adds_nothing(repo: Path, tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path / "home"), "MEMOSITE_VAULT": str(tmp_path / "no-vault")}
    assert hook("session-start", stdin=payload("claude-code", "SessionStart", repo), env=env) == (0, "")
    assert not (tmp_path / "no-vault").exists()
    env["XDG_STATE_HOME"] = str(tmp_path / "state")
    assert hook("prompt", stdin="{", env=env) == (0, "")
    assert "not JSON" in (tmp_path / "state" / "memosite" / "hooks.log").read_text(encoding="utf-8")


def test_a_hook_reads_the_payload_even_when_the_agent_keeps_stdin_open(memory: Path, memosite_exe: Path) -> None:
    # Claude Code has been seen to leave a hook's stdin open: waiting for its end would hang.
    stdin = payload("claude-code", "UserPromptSubmit", memory, prompt="NOT NULL migration locks the orders table")
    with subprocess.Popen(
        [str(memosite_exe), "hook", "prompt", "--time-limit", "120"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    ) as proc:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(stdin.encode("utf-8"))
        proc.stdin.flush()
        out = proc.stdout.read()  # ends when the hook exits, stdin still open
        assert proc.wait(timeout=120) == 0
    assert "NOT NULL migrations lock the orders table" in json.loads(out)["hookSpecificOutput"]["additionalContext"]


def test_a_hook_that_gets_no_answer_in_time_answers_nothing(memory: Path, vault_dir: Path, memosite_exe: Path) -> None:
    # Half a payload and stdin left open: the hook cannot finish; its time limit ends it, exit 0.
    with subprocess.Popen(
        [str(memosite_exe), "hook", "prompt"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    ) as proc:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(b'{"session_id": "s", "prompt": "half a pay')
        proc.stdin.flush()
        out = proc.stdout.read()
        assert proc.wait(timeout=120) == 0 and out == b""
    log = (vault_dir / ".memosite" / "hooks.log").read_text(encoding="utf-8")
    assert "prompt (claude-code): no answer within 1 s: answered with nothing" in log


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["stop"], "unknown hook 'stop'"),
        (["prompt", "--bogus"], "unknown argument '--bogus'"),
        (["prompt", "--agent"], "--agent needs a value"),
        (["prompt", "--agent", "copilot"], "no hooks for copilot: Copilot's hooks ignore"),
        (["prompt", "--agent", "codex"], "no hooks for codex: Codex's hooks are experimental"),
        (["prompt", "--agent", "cursor"], "Cursor has no prompt hook"),
        (["prompt", "--vault", "a", "--vault", "b"], "--vault given twice"),
        (["prompt", "--time-limit", "0"], "invalid --time-limit '0'"),
        (["prompt", "--time-limit", "soon"], "invalid --time-limit 'soon'"),
    ],
)
def test_a_wrong_command_line_is_one_line_and_exit_1_never_the_blocking_2(
    memosite_exe: Path, argv: list[str], message: str
) -> None:
    done = run_exe(memosite_exe, "hook", *argv, stdin="{}")
    assert done.returncode == 1 and done.stdout == ""
    assert message in done.stderr and done.stderr.count("\n") == 1


@settings(max_examples=150, deadline=None)
@given(argv=st.lists(st.text(max_size=20), max_size=5))
def test_no_command_line_makes_a_hook_raise_or_exit_2(argv: list[str]) -> None:
    env = {"HOME": "/nonexistent-home", "MEMOSITE_VAULT": "/nonexistent-vault", "XDG_STATE_HOME": "/nonexistent-state"}
    code = runner.main(argv, stdin=io.BytesIO(b"{}"), stdout=io.StringIO(), env=env, time_limit=120)
    assert code in (0, 1)


def test_the_hook_through_the_cli_takes_the_global_options(memory: Path, vault_dir: Path, run_cli: Any) -> None:
    stdin = payload("claude-code", "SessionStart", memory)
    outcome = run_cli("--vault", str(vault_dir), "hook", "session-start", "--time-limit", "120", input=stdin)
    assert outcome.exit_code == 0 and "Session brief" in outcome.stdout


@pytest.mark.slow
def test_a_prompt_hook_loads_neither_click_nor_templates(memory: Path) -> None:
    # A fresh process at every prompt: what it imports is the person's wait.
    script = (
        "import sys; from memosite.console import main\n"
        "try:\n    main(['hook', 'prompt', '--time-limit', '120'])\nexcept SystemExit:\n    pass\n"
        "heavy = ('click', 'jinja2', 'mkdocs', 'mcp', 'memosite.mutation')\n"
        "print(sorted(m for m in heavy if m in sys.modules), file=sys.stderr)\n"
    )
    stdin = payload("claude-code", "UserPromptSubmit", memory, prompt="NOT NULL migration locks the orders table")
    done = subprocess.run(
        [sys.executable, "-c", script],
        input=stdin,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=120,
        check=False,
    )
    assert done.returncode == 0 and "NOT NULL migrations" in done.stdout
    assert done.stderr.strip().splitlines()[-1] == "[]"


# --- hooks install, uninstall, status ------------------------------------------------------------------


def _settings(path: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return loaded


def test_install_writes_the_documented_settings_and_keeps_the_persons_own(repo: Path, run_cli: Any) -> None:
    settings_file = repo / ".claude" / "settings.json"
    settings_file.parent.mkdir()
    mine = {
        "permissions": {"allow": ["Bash(npm test)"]},
        "hooks": {
            "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "./lint.sh"}]}],
            "SessionStart": [{"matcher": "startup", "hooks": [{"type": "command", "command": "echo hi"}]}],
        },
    }
    settings_file.write_text(json.dumps(mine), encoding="utf-8")
    outcome = run_cli("hooks", "install", "claude-code", "--json")
    assert outcome.exit_code == 0 and outcome.json()["changed"] is True
    written = _settings(settings_file)
    assert written["permissions"] == mine["permissions"]
    assert written["hooks"]["PreToolUse"] == mine["hooks"]["PreToolUse"]
    assert written["hooks"]["SessionStart"][0] == mine["hooks"]["SessionStart"][0]
    commands = {
        event: [h["command"] for group in groups for h in group["hooks"]] for event, groups in written["hooks"].items()
    }
    assert commands["SessionStart"] == ["echo hi", "memosite hook session-start --agent claude-code"]
    assert commands["UserPromptSubmit"] == ["memosite hook prompt --agent claude-code"]
    assert commands["PreCompact"] == commands["SessionEnd"] == ["memosite hook session-end --agent claude-code"]
    prompt_hook = written["hooks"]["UserPromptSubmit"][0]["hooks"][0]
    assert prompt_hook == {"type": "command", "command": "memosite hook prompt --agent claude-code", "timeout": 3}
    before = settings_file.read_bytes()
    again = run_cli("hooks", "install", "claude-code", "--json")
    assert again.json()["changed"] is False and settings_file.read_bytes() == before
    status = run_cli("hooks", "status", "claude-code", "--json").json()["hooks"]
    assert status[0]["installed"] == {
        "session-start": ["SessionStart"],
        "prompt": ["UserPromptSubmit"],
        "session-end": ["PreCompact", "SessionEnd"],
    }
    assert status[0]["missing"] == [] and status[0]["otherHooks"] == 2
    assert run_cli("hooks", "uninstall", "claude-code").exit_code == 0
    assert _settings(settings_file) == mine


def test_install_for_gemini_cli_and_cursor_uses_their_layouts(repo: Path, run_cli: Any) -> None:
    assert run_cli("hooks", "install", "gemini-cli").exit_code == 0
    gemini = _settings(repo / ".gemini" / "settings.json")["hooks"]
    assert set(gemini) == {"SessionStart", "BeforeAgent", "PreCompress", "SessionEnd"}
    entry = gemini["BeforeAgent"][0]["hooks"][0]
    assert entry["name"] == "memosite-prompt" and entry["timeout"] == 3000 and entry["type"] == "command"
    outcome = run_cli("hooks", "install", "cursor")
    assert outcome.exit_code == 0 and "no prompt hook" in outcome.stdout
    cursor = _settings(repo / ".cursor" / "hooks.json")
    assert cursor == {
        "version": 1,
        "hooks": {
            "sessionStart": [{"command": "memosite hook session-start --agent cursor"}],
            "sessionEnd": [{"command": "memosite hook session-end --agent cursor"}],
        },
    }


def test_a_local_install_names_this_machines_memosite_and_vault(repo: Path, vault_dir: Path, run_cli: Any) -> None:
    assert run_cli("init").exit_code == 0
    assert run_cli("hooks", "install", "claude-code", "--scope", "local").exit_code == 0
    command = _settings(repo / ".claude" / "settings.local.json")["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"]
    words = command.split()
    assert os.path.isabs(words[0]) and words[1:5] == ["hook", "prompt", "--agent", "claude-code"]
    assert words[5:] == ["--vault", str(vault_dir)]
    assert not (repo / ".claude" / "settings.json").exists()
    assert run_cli("hooks", "install", "gemini-cli", "--scope", "local").exit_code == 1  # Claude Code only


@pytest.mark.parametrize("marker", ["CLAUDECODE", "GEMINI_CLI"])
def test_an_agent_cannot_install_or_remove_hooks_from_its_shell(
    repo: Path, run_cli: Any, monkeypatch: pytest.MonkeyPatch, marker: str
) -> None:
    monkeypatch.setenv(marker, "1")
    for action in ("install", "uninstall"):
        outcome = run_cli("hooks", action, "claude-code")
        assert outcome.exit_code == 1 and "only a person does this" in outcome.stderr
    assert not (repo / ".claude").exists()
    assert run_cli("hooks", "status").exit_code == 0  # reading is anyone's


def test_a_settings_file_that_is_not_a_json_object_is_refused_and_kept(repo: Path, run_cli: Any) -> None:
    settings_file = repo / ".claude" / "settings.json"
    settings_file.parent.mkdir()
    for text in ('{"hooks": [', "[]", '{"hooks": {"SessionStart": "echo"}}'):
        settings_file.write_text(text, encoding="utf-8")
        outcome = run_cli("hooks", "install", "claude-code")
        assert outcome.exit_code == 1 and "nothing was changed" in outcome.stderr
        assert settings_file.read_text(encoding="utf-8") == text


def test_hooks_for_agents_without_a_usable_protocol_are_refused_with_the_reason(repo: Path, run_cli: Any) -> None:
    outcome = run_cli("hooks", "install", "copilot")
    assert outcome.exit_code == 1 and "copilot-instructions.md" in outcome.stderr
    assert not (repo / ".github").exists()
    assert run_cli("hooks", "install", "windsurf").exit_code == 1


def test_the_json_of_hooks_status_keeps_its_shape_and_naming_rule(repo: Path, run_cli: Any) -> None:
    from test_contracts import CAMEL, keys, shape

    assert run_cli("hooks", "install", "claude-code").exit_code == 0
    data = run_cli("hooks", "status", "--json").json()
    assert all(CAMEL.match(key) for key in keys(data) if key not in ("session-start", "session-end"))
    assert shape(data)["hooks"][0] == {
        "agent": "str",
        "changed": "bool",
        "exists": "bool",
        "installed": {"prompt": ["str"], "session-end": ["str"], "session-start": ["str"]},
        "missing": [],
        "note": "str",
        "otherHooks": "int",
        "path": "str",
        "scope": "str",
    }


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    prompt=st.one_of(
        st.text(max_size=400),
        st.lists(
            st.sampled_from(["NOT", "title:", '"', "src/../etc/passwd", "/etc/shadow", "миграция", "锁表", "🚀"])
        ).map(" ".join),
    )
)
def test_any_prompt_gets_at_most_a_few_records_within_the_budget(memory: Path, vault_dir: Path, prompt: str) -> None:
    from memosite.recall import MAX_BYTES, MAX_RECORDS, recall_for_prompt
    from memosite.vault import Vault

    vault = Vault.open(vault_dir, create=False)
    try:
        recall = recall_for_prompt(vault, "demo", prompt)
    finally:
        vault.close()
    assert len(recall.records) <= MAX_RECORDS
    assert len(recall.markdown().encode("utf-8")) <= MAX_BYTES
    assert all(".." not in path.split("/") and not path.startswith("/") for path in named_paths(prompt))


# --- a new user's steps and an attacker's (review of issue 26) -----------------------------------------


@pytest.mark.parametrize("claimed", ["Stop", "PreToolUse", "</additionalContext>", None])
def test_an_answer_names_the_event_the_hook_runs_at_whatever_the_payload_claims(
    memory: Path, claimed: str | None
) -> None:
    # Claude Code checks hookEventName against the event that ran the hook: an answer that named
    # the payload's word would fail its schema and bring nothing.
    data = json.loads(payload("claude-code", "SessionStart", memory))
    data["hook_event_name"] = claimed
    code, out = hook("session-start", stdin=json.dumps(data))
    answer = json.loads(out)
    jsonschema.validate(answer, _CONTEXT)
    assert code == 0 and answer["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    prompt = json.loads(payload("claude-code", "UserPromptSubmit", memory, prompt="NOT NULL migration orders table"))
    prompt["hook_event_name"] = claimed
    answer = json.loads(hook("prompt", stdin=json.dumps(prompt).replace(SESSION, "other"))[1])
    assert answer["hookSpecificOutput"]["hookEventName"] == "UserPromptSubmit"


class _StdinKeptOpen(io.RawIOBase):
    """An agent's stdin: the payload in pieces, then nothing more ever comes (a read would hang)."""

    def __init__(self, pieces: list[bytes]) -> None:
        self.pieces = pieces

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        assert self.pieces, "read past the payload: with stdin kept open this read would hang"
        return self.pieces.pop(0)


def test_a_payload_in_pieces_is_read_to_its_end_and_not_one_read_further() -> None:
    whole = json.dumps({"session_id": "s", "prompt": "why does {config} break? see {x}", "cwd": "/"}).encode()
    cut = whole.index(b"}") + 1  # the first piece ends on a brace inside the prompt
    pieces = [whole[:cut], whole[cut : cut + 7], whole[cut + 7 :]]
    assert runner.read_payload(_StdinKeptOpen(pieces)) == whole


def test_a_file_name_from_a_transcript_cannot_write_markdown_into_the_session_record(
    memory: Path, vault_dir: Path, tmp_path: Path
) -> None:
    name = "notes`\n\n## Injected heading\n<script>alert(1)</script>.md"
    edit = json.dumps(
        {
            "type": "assistant",
            "message": {"content": [{"type": "tool_use", "name": "Write", "input": {"file_path": f"{memory}/{name}"}}]},
        }
    )
    log = transcript("claude-code", tmp_path, memory, edit)
    assert hook("session-end", stdin=payload("claude-code", "SessionEnd", memory, transcript=str(log)))[0] == 0
    record = read_record(vault_dir / f"projects/demo/sessions/{session_slug('claude-code', SESSION)}.md")
    assert name in record.frontmatter["touchedFiles"]  # kept as it was, as data
    listed = [line for line in record.body.splitlines() if line.startswith("- ")]
    assert len(listed) == 3 and "Injected heading" in listed[-1] and listed[-1].startswith("- ``")
    assert not any(line.startswith(("#", "<")) for line in record.body.splitlines())


def test_installing_in_a_second_scope_is_refused_so_the_agent_never_runs_memosite_twice(
    repo: Path, vault_dir: Path, run_cli: Any
) -> None:
    assert run_cli("init").exit_code == 0
    assert run_cli("hooks", "install", "claude-code", "--scope", "user").exit_code == 0
    user_file = Path(os.environ["HOME"]) / ".claude" / "settings.json"
    before = user_file.read_bytes()
    for scope in ("project", "local"):
        outcome = run_cli("hooks", "install", "claude-code", "--scope", scope)
        assert outcome.exit_code == 1 and outcome.stderr.count("\n") == 1
        assert "already in ~/.claude/settings.json (user scope)" in outcome.stderr
        assert "memosite hooks uninstall claude-code --scope user" in outcome.stderr
    assert not (repo / ".claude").exists() and user_file.read_bytes() == before
    assert run_cli("hooks", "install", "claude-code", "--scope", "user").exit_code == 0  # the same scope again
    # A teammate commits the project scope's hooks: status says the agent runs both.
    shared = repo / ".claude" / "settings.json"
    shared.parent.mkdir()
    command = {"type": "command", "command": "memosite hook prompt --agent claude-code"}
    shared.write_text(json.dumps({"hooks": {"UserPromptSubmit": [{"hooks": [command]}]}}), encoding="utf-8")
    statuses = run_cli("hooks", "status", "claude-code", "--json").json()["hooks"]
    assert [s["scope"] for s in statuses] == ["project", "user"]
    assert all("set in 2 scopes: Claude Code runs each, keep one" in s["note"] for s in statuses)


def test_a_prompt_with_a_pasted_log_is_matched_on_what_the_person_wrote_around_it(memory: Path) -> None:
    # A megabyte of log: matching each of its words would run past the time limit and, needing
    # four words of thousands, would match anything. The person's words are at its start or end.
    log = "\n".join(f"INFO worker-{n} heartbeat ok, queue депth {n % 7} 🚀" for n in range(25000))
    # A long prompt needs four of its words in a record (terms_needed): the person names enough.
    question = "The NOT NULL migration locks the orders table again: should we backfill in batches?"
    for number, prompt in enumerate((f"{question}\n{log}", f"{log}\n{question}")):
        stdin = payload("claude-code", "UserPromptSubmit", memory, prompt=prompt).replace(SESSION, f"paste-{number}")
        assert "NOT NULL migrations lock the orders table" in _recalled(hook("prompt", stdin=stdin)[1])
    middle = f"{log[: len(log) // 2]}\n{question}\n{log[len(log) // 2 :]}"
    stdin = payload("claude-code", "UserPromptSubmit", memory, prompt=middle).replace(SESSION, "paste-middle")
    assert hook("prompt", stdin=stdin) == (0, "")


_prose = st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters="⟦`~"), max_size=300)
_not_prose = st.sampled_from(["# Heading", "```py\n⟦code⟧\n\n⟦more⟧\n```", "~~~\n⟦x⟧\n~~~", "### ⟦h3⟧"])


@settings(max_examples=200, deadline=None)
@given(paragraphs=st.lists(st.one_of(_prose, _not_prose)))
def test_a_rule_line_is_one_line_of_prose_within_its_limit(paragraphs: list[str]) -> None:
    from memosite.mdtext import rule_line

    line = rule_line("\n\n".join(paragraphs), 120)
    assert "\n" not in line and "⟦" not in line and len(line) <= 122
    assert line == " ".join(line.split())


def test_the_files_agents_read_and_the_prompt_hook_give_a_record_the_same_rule(
    memory: Path, vault_dir: Path, run_cli: Any
) -> None:
    # One rule, spelled once: a body that opens with a heading and holds code is summed up by its
    # prose in AGENTS.md as in what a prompt adds (no "## Symptom" inlined into either).
    body = "## Symptom\n\nВебхук теряет подпись: проверяй сырое тело запроса 🚀.\n\n```py\nverify(raw_body)\n```\n"
    args = ["upsert", "--kind", "trap", "--slug", "webhook", "--title", "Webhook signatures", "--body", body]
    assert run_cli(*args, "--path", "src/payments/webhook.py").exit_code == 0
    assert run_cli("agents", "compile").exit_code == 0
    rule = "Вебхук теряет подпись: проверяй сырое тело запроса 🚀."
    agents_md = (memory / "AGENTS.md").read_text(encoding="utf-8")
    block_line = next(line for line in agents_md.splitlines() if "Webhook" in line)
    assert f"— {rule} Paths:" in block_line and "Symptom" not in block_line
    prompt = payload("claude-code", "UserPromptSubmit", memory, prompt="Fix src/payments/webhook.py please")
    context = _recalled(hook("prompt", stdin=prompt.replace(SESSION, "rule-line"))[1])
    assert f"— {rule} (paths:" in context and "Symptom" not in context


@pytest.mark.slow
def test_the_brief_at_session_start_stays_within_what_claude_code_shows_as_it_is(
    repo: Path, vault_dir: Path, run_cli: Any
) -> None:
    # Claude Code caps context from a hook at 10,000 characters: longer, the model gets a 2 KB
    # preview. A team's bootstrap.maxBytes of 64 KB must not turn the brief into that preview.
    for n in range(40):
        kind = "trap" if n < 10 else "decision"
        title = f"Запись {n}: миграция блокирует таблицу заказов 🚀 {'ü' * 20}"
        body = f"Правило {n}. " + "Добавь колонку без NOT NULL, заполни партиями, затем ограничение. " * 4
        args = ["upsert", "--kind", kind, "--slug", f"r{n}", "--title", title, "--body", body, "--allow-duplicate"]
        assert run_cli(*args).exit_code == 0
    config = json.loads((vault_dir / "config.json").read_text(encoding="utf-8"))
    config["bootstrap"] = {"maxBytes": 65536}
    (vault_dir / "config.json").write_text(json.dumps(config), encoding="utf-8")
    code, out = hook("session-start", stdin=payload("claude-code", "SessionStart", repo))
    context = json.loads(out)["hookSpecificOutput"]["additionalContext"]
    assert code == 0 and 6000 < len(context) <= 10_000 and "memosite upsert --kind trap" in context
    # Agents that document no such cap get the brief the team configured.
    gemini = hook("session-start", "--agent", "gemini-cli", stdin=payload("gemini-cli", "SessionStart", repo))[1]
    assert len(json.loads(gemini)["hookSpecificOutput"]["additionalContext"]) > 10_000


@pytest.mark.parametrize("action", ["install", "uninstall"])
def test_a_cloned_repositorys_settings_link_cannot_make_install_write_outside_it(
    repo: Path, tmp_path: Path, run_cli: Any, action: str
) -> None:
    # A repository ships .claude/settings.json as a link to the person's own user settings (or
    # any JSON of another tool): installing "for the project" must not rewrite what it points at.
    user_settings = tmp_path / "home" / ".claude" / "settings.json"
    user_settings.parent.mkdir(parents=True)
    command = {"type": "command", "command": "memosite hook prompt"}
    mine = json.dumps({"theme": "dark", "hooks": {"UserPromptSubmit": [{"hooks": [command]}]}})
    user_settings.write_text(mine, encoding="utf-8")
    (repo / ".claude").mkdir()
    (repo / ".claude" / "settings.json").symlink_to(user_settings)
    outcome = run_cli("hooks", action, "claude-code")
    assert outcome.exit_code == 1 and outcome.stderr.count("\n") == 1
    assert ".claude/settings.json leads out of the repository" in outcome.stderr
    assert user_settings.read_text(encoding="utf-8") == mine
