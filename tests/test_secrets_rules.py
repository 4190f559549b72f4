"""gitleaks' rule set beside memosite's rules; the families the security pass found passing; code
assignments; and the unit of work's own scan, which no write path can skip.

Every token here is drawn at run time from its provider's documented shape, so this file holds
no secret for any scanner to find.
"""

from __future__ import annotations

import json
import random
import re
import string
import subprocess
import sys
import tomllib
import uuid
import warnings
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memosite.errors import BuildError, SafetyViolation
from memosite.mutation import mutation
from memosite.schema import Record
from memosite.secrets import assert_no_secrets, gitleaks, scan_record, scan_text
from memosite.secrets.goregex import UnsupportedPattern, translate
from memosite.store import append_event, upsert_record
from memosite.vault import Vault

ALNUM = string.ascii_letters + string.digits
HEX = "0123456789abcdef"
B64URL = ALNUM + "-_"
_rng = random.Random(21)


def _draw(size: int, alphabet: str = ALNUM) -> str:
    return "".join(_rng.choice(alphabet) for _ in range(size))


# The nine families the security pass found passing every write path, each as a person pastes it.
NINE_FAMILIES: dict[str, str] = {
    "Google OAuth access token": "ya29.a0" + _draw(150, B64URL),
    "Google OAuth refresh token": "1//0g" + _draw(98, B64URL),
    "GitLab runner registration token": "GR1348941" + _draw(20, B64URL),
    "curl -u user:pass": f"curl -u deploy:{_draw(14)} https://ci.acme.io/api",
    "X bearer token": "A" * 22 + _draw(10, string.digits) + "%2B" + _draw(30) + "%3D" + _draw(50),
    "Dynatrace token": "dt0c01." + _draw(24, string.ascii_uppercase + string.digits) + "." + _draw(64, HEX.upper()),
    "Netlify token": "nfp_" + _draw(36),
    "Sourcegraph token": "sgp_" + _draw(16, HEX) + "_" + _draw(40, HEX),
    "Artifactory API key": "AKCp" + _draw(69),
}
FAMILY_IDS = list(NINE_FAMILIES)


def _text_of(family: str) -> str:
    token = NINE_FAMILIES[family]
    return token if token.startswith("curl") else f"the CI job used {token} yesterday"


# --- gitleaks' rule set ------------------------------------------------------------------------


def _upstream() -> dict[str, Any]:
    text = resources.files("memosite.secrets").joinpath(gitleaks.RULE_FILE).read_text(encoding="utf-8")
    return tomllib.loads(text)


def test_every_upstream_rule_regex_compiles_in_python() -> None:
    config = _upstream()
    patterns = [rule["regex"] for rule in config["rules"] if "regex" in rule]
    patterns += [
        regex
        for rule in config["rules"]
        for allowlist in rule.get("allowlists", ())
        for regex in allowlist.get("regexes", ())
    ]
    patterns += config["allowlist"]["regexes"]
    assert len(patterns) > 200
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # Python's "possible nested set" warning counts as a failure
        for pattern in patterns:
            re.compile(translate(pattern), re.ASCII)


def test_only_rules_scoped_to_other_file_types_and_the_generic_rule_are_left_out() -> None:
    rules = gitleaks.rule_set()
    skipped = dict(rules.skipped)
    assert set(skipped) == {
        "generic-api-key",
        "pkcs12-file",
        "freemius-secret-key",
        "hashicorp-tf-password",
        "kubernetes-secret-yaml",
        "nuget-config-password",
    }
    assert not [why for why in skipped.values() if "no Python equivalent" in why]
    assert len(rules.rules) + len(rules.skipped) == len(_upstream()["rules"])
    for rule in rules.rules:
        assert rule.pattern.pattern  # every loaded rule compiles


def test_vendored_file_is_the_upstream_file_named_in_gitleaks_json() -> None:
    import hashlib

    info = gitleaks.source_info()
    folder = resources.files("memosite.secrets")
    data = folder.joinpath(gitleaks.RULE_FILE).read_bytes()
    assert hashlib.sha256(data).hexdigest() == info["sha256"]
    assert re.fullmatch(r"v\d+\.\d+\.\d+", info["version"]) and re.fullmatch(r"[0-9a-f]{40}", info["commit"])
    assert "MIT License" in folder.joinpath("gitleaks.LICENSE").read_text(encoding="utf-8")
    assert gitleaks.rule_set().version == info["version"]


def test_the_stored_run_gate_agrees_with_the_analysis_of_every_rule() -> None:
    """``gitleaks.json`` lists the rules tried only on text with a run of token characters; a stale
    list would make the scanner skip a rule on text it could match."""
    computed = gitleaks.parse_rules(
        resources.files("memosite.secrets").joinpath(gitleaks.RULE_FILE).read_text(encoding="utf-8")
    )
    assert (
        sorted(rule.rule_id for rule in computed.rules if rule.needs_run) == gitleaks.source_info()["rulesNeedingRun"]
    )


@pytest.mark.parametrize(
    ("go", "python"),
    [
        (r"\b(p8e-(?i)[a-z0-9]{32})", r"\b(p8e-(?i:[a-z0-9]{32}))"),
        (r"a(?i)b|c", r"a(?i:b)|(?i:c)"),
        (r"\b(pat[[:alnum:]]{14})\b", r"\b(pat[A-Za-z0-9]{14})\b"),
        (r"x(?:\s|\z)", r"x(?:\s|\Z)"),
        (r"[[a]", r"[\[a]"),
    ],
)
def test_go_syntax_python_refuses_is_rewritten_to_match_the_same(go: str, python: str) -> None:
    assert translate(go) == python


@pytest.mark.parametrize("pattern", [r"\pL+", r"(?U)a+", r"[[:^alpha:]]", r"(a", r"a)"])
def test_go_syntax_without_a_python_equivalent_is_reported_not_guessed(pattern: str) -> None:
    with pytest.raises(UnsupportedPattern):
        translate(pattern)


def test_a_rule_is_tried_only_when_its_keyword_is_in_the_text() -> None:
    rules = gitleaks.rule_set()
    token = NINE_FAMILIES["Dynatrace token"]
    assert [r.rule_id for r in rules.candidates(token.lower(), has_run=True)] == ["dynatrace-api-token"]
    assert rules.candidates("plain words about a build", has_run=False) == []


def test_gitleaks_entropy_threshold_drops_a_low_entropy_match() -> None:
    # artifactory-api-key wants entropy above 4.5: a run of two characters has 1.
    assert scan_text("AKCp" + "ab" * 34 + "a") == []


def test_gitleaks_allowlist_lets_a_curl_placeholder_password_go() -> None:
    assert scan_text("curl -u admin:changeme https://ci.acme.io/api") == []


@pytest.mark.parametrize("family", FAMILY_IDS)
def test_each_family_the_security_pass_found_passing_is_found(family: str) -> None:
    assert scan_text(_text_of(family)), family


# --- every write path refuses them --------------------------------------------------------------


def _records(vault_dir: Path) -> list[str]:
    projects = vault_dir / "projects"
    return [p.read_text(encoding="utf-8") for p in projects.rglob("*.md")] if projects.exists() else []


def _secret_part(family: str) -> str:
    token = NINE_FAMILIES[family]
    return token.split(":")[1].split()[0] if token.startswith("curl") else token


@pytest.mark.parametrize("family", FAMILY_IDS)
@pytest.mark.parametrize("where", ["body", "title", "tag"])
def test_cli_upsert_refuses_each_family_and_writes_nothing(
    family: str, where: str, run_cli: Callable[..., object], vault_dir: Path
) -> None:
    text = _text_of(family)
    fields = {"body": ["--title", "deploy", "--body", text], "title": ["--title", text, "--body", "deploy"]}
    args = fields.get(where, ["--title", "deploy", "--body", "deploy", "--tag", text])
    result = run_cli("upsert", "--kind", "trap", *args, "--json")
    assert result.exit_code == 1, result  # type: ignore[attr-defined]
    assert json.loads(result.stdout)["error"]["code"] == "SAFETY_VIOLATION"  # type: ignore[attr-defined]
    assert _secret_part(family) not in result.stdout  # type: ignore[attr-defined]
    assert not any(_secret_part(family) in text for text in _records(vault_dir))


@pytest.mark.parametrize("family", FAMILY_IDS)
def test_store_upsert_and_append_refuse_each_family(family: str, vault: Vault, vault_dir: Path) -> None:
    with pytest.raises(SafetyViolation):
        upsert_record(vault, "demo", kind="decision", body=_text_of(family), frontmatter={"title": "ci"})
    with pytest.raises(SafetyViolation):
        upsert_record(vault, "demo", kind="decision", body="ci", frontmatter={"title": "ci", "notes": _text_of(family)})
    with pytest.raises(SafetyViolation):
        append_event(vault, "demo", event=_text_of(family))
    with pytest.raises(SafetyViolation):
        append_event(vault, "demo", event="deployed", details={"log": _text_of(family)})
    assert not any(_secret_part(family) in text for text in _records(vault_dir))


@pytest.mark.parametrize("family", FAMILY_IDS)
def test_session_append_refuses_each_family(family: str, run_cli: Callable[..., object], vault_dir: Path) -> None:
    session_id = "s-" + uuid.uuid4().hex[:8]
    assert run_cli("session", "start", "--id", session_id).exit_code == 0  # type: ignore[attr-defined]
    result = run_cli("session", "append", "--session", session_id, "--type", "fact", "--text", _text_of(family))
    assert result.exit_code == 1  # type: ignore[attr-defined]
    log = vault_dir / "projects" / "demo" / "sessions" / session_id / "events.jsonl"
    assert _secret_part(family).encode() not in log.read_bytes()


@pytest.mark.slow
@pytest.mark.parametrize("family", FAMILY_IDS)
def test_site_build_refuses_each_family_planted_by_hand(family: str, tmp_path: Path) -> None:
    from memosite.site import build_site

    vault = Vault.open(tmp_path / "vault")
    result = upsert_record(vault, "shop", kind="trap", body="Deploy with the CI role.", frontmatter={"title": "Deploy"})
    path = vault.root / result.path
    # A person edits the record by hand, past every write path's scan.
    path.write_text(path.read_text(encoding="utf-8") + f"\n{_text_of(family)}\n", encoding="utf-8")
    with pytest.raises(BuildError) as failure:
        build_site(vault, out_dir=tmp_path / "site")
    assert "memory/shop/traps/deploy/index.html" in failure.value.message
    assert _secret_part(family) not in failure.value.message
    assert not (tmp_path / "site").exists()
    vault.close()


# --- the unit of work scans what it writes -------------------------------------------------------


def test_mutation_write_refuses_a_record_that_bypassed_the_entry_checks(vault: Vault, vault_dir: Path) -> None:
    """A future write path that forgets the entry check still cannot write a secret: the unit of
    work's own write refuses it before the file, the index or git change."""
    token = NINE_FAMILIES["Netlify token"]
    path = vault.record_path("demo", "trap", "bypass")
    record = Record(
        frontmatter={"id": "bypass", "kind": "trap", "project": "demo", "title": "ci", "summary": token},
        body="deploy\n",
        path=path,
    )
    with pytest.raises(SafetyViolation) as refused, mutation(vault, "upsert trap:bypass") as unit:
        unit.write(record, path)
    assert "bypass.md" in refused.value.message and token not in refused.value.message
    assert not path.exists()
    assert vault.index().kind_at(vault.relative(path)) is None
    record_in_body = Record(frontmatter={**record.frontmatter, "summary": "ok"}, body=f"{token}\n", path=path)
    with pytest.raises(SafetyViolation), mutation(vault, "upsert trap:bypass") as unit:
        unit.write(record_in_body, path, text="---\nid: bypass\n---\nclean text, a different file\n")
    assert not path.exists()


def test_mutation_write_of_a_clean_record_still_writes(vault: Vault) -> None:
    path = vault.record_path("demo", "trap", "clean")
    record = Record(
        frontmatter={"id": "clean", "kind": "trap", "project": "demo", "title": "ci"}, body="ok\n", path=path
    )
    with mutation(vault, "upsert trap:clean") as unit:
        unit.write(record, path)
    assert path.is_file()


def test_a_long_body_checked_at_the_entry_is_not_scanned_again_by_the_unit(vault: Vault) -> None:
    """The verdict on a text is kept: the unit's scan of the body the entry point just cleared is a
    look-up, so upsert does not pay for the scan twice (and a changed text is scanned afresh)."""
    from memosite import secrets

    body = "Deploy notes: the CI role deploys from main.\n" * 40
    assert scan_record(body) == []
    assert secrets._known_clean(body)
    assert not secrets._known_clean(body + "x")
    assert scan_text(body + NINE_FAMILIES["Netlify token"]) != []


# --- code and placeholders are not secrets; real passwords are -----------------------------------

CODE_ASSIGNMENTS = [
    "pwd = os.getcwd()",
    "password = get_password()",
    'token = request.headers["X-Token"]',
    'secret = os.environ["SECRET"]',
    "api_key = settings.API_KEY",
    'token = f"Bearer {token}"',
    'api_key = f"{prefix}{suffix}"',
    'passwd = cfg.get("db", "password")',
    "secret = base64.b64encode(os.urandom(32)).decode()",
    "password = hashlib.sha256(raw).hexdigest()",
    "token = obj?.auth?.token()",
    "apiKey: process.env.STRIPE_KEY,",
    'password := r.FormValue("password")',
    "secret_key = secrets.token_urlsafe(32)",
    'let secret = crypto.randomBytes(32).toString("hex");',
    "auth = HTTPBasicAuth(user, pw)",
]


@pytest.mark.parametrize("code", CODE_ASSIGNMENTS)
def test_an_assignment_of_a_call_an_attribute_or_an_expression_is_code_not_a_password(code: str) -> None:
    assert scan_text(code) == []
    assert scan_text(f"```python\n{code}\n```") == []


@pytest.mark.parametrize(
    "text", ['password = "hunter2-Correct-Horse"', "DB_PASSWORD=s3cr3t!xyz", "DB_PASSWORD=Xk9(2mQz"]
)
def test_a_real_password_in_an_assignment_is_still_refused(text: str) -> None:
    assert scan_text(text)


@pytest.mark.parametrize("key", ["api_key", "apiKey", "API_KEY", "x-api-key"])
@pytest.mark.parametrize(
    "value", ["secret_8fJ2kQ9xLm4Pz7Rt3Vb", "Secret.X35DLrOz5jbghGzU", "4yAXk-secret-jXDSEDU9", "TIZ1syoAPogsecret7"]
)
def test_an_api_key_with_a_random_value_is_a_secret_even_when_the_value_says_secret(key: str, value: str) -> None:
    assert scan_text(f'{key}: "{value}"'), value
    assert scan_text(f"{key}={value}"), value


@pytest.mark.parametrize(
    "value",
    ["<your-api-key>", "xxxx", "xxxxxxxxxxxxxxxx", "changeme", "${API_KEY}", 'os.environ["API_KEY"]', "my-secret-key"],
)
def test_an_api_key_placeholder_stays_allowed(value: str) -> None:
    assert scan_text(f"api_key = {value}") == []
    assert scan_text(f'API_KEY: "{value}"') == []


def test_sourcegraph_named_beside_a_commit_sha_is_not_a_token() -> None:
    sha = _draw(40, HEX)
    assert scan_text(f"Sourcegraph search showed the bug came in {sha}.") == []
    assert scan_text(f"sourcegraph_token: sgp_{_draw(40, HEX)}")


_PROPERTY = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
_SHA = st.binary(min_size=20, max_size=20).map(bytes.hex)
_UUID = st.uuids().map(str)
_DIGEST = st.binary(min_size=32, max_size=64).map(bytes.hex)
_IMAGE = st.binary(min_size=24, max_size=300).map(
    lambda raw: "data:image/png;base64," + __import__("base64").b64encode(b"\x89PNG\r\n\x1a\n" + raw).decode()
)
_CONTEXTS = st.sampled_from(
    [
        "{}",
        "fixed in {} on Sourcegraph",
        "commit {}",
        "id: {}",
        '{{"id": "{}"}}',
        "sha256:{}",
        "see ![diagram]({})",
        "Тест прошёл на {} — ✅",
        "コミット {} で修正",
        "التزام {} ثابت",
        "Η διόρθωση {} λειτουργεί",
        "image@sha256:{}",
    ]
)


@_PROPERTY
@given(value=st.one_of(_SHA, _UUID, _DIGEST, _IMAGE), template=_CONTEXTS)
def test_no_sha_uuid_digest_or_inline_image_is_ever_refused(value: str, template: str) -> None:
    assert scan_text(template.format(value)) == []


@_PROPERTY
@given(
    st.text(
        alphabet=st.characters(whitelist_categories=("Ll", "Lu", "Lo", "Zs", "Po", "So"), max_codepoint=0x1FAFF),
        max_size=200,
    )
)
def test_prose_in_any_script_is_never_refused(text: str) -> None:
    assert scan_text(text) == []


def test_assert_no_secrets_names_the_subject_and_hides_the_secret() -> None:
    token = NINE_FAMILIES["Google OAuth access token"]
    with pytest.raises(SafetyViolation) as refused:
        assert_no_secrets(f"use {token}", {"title": "ci"}, subject="projects/demo/traps/x.md")
    assert refused.value.message.startswith("refusing to write projects/demo/traps/x.md: ")
    assert token not in json.dumps(refused.value.details)


def test_an_agent_reading_a_record_with_a_hand_planted_secret_still_gets_it_and_no_hit_is_written(
    vault: Vault,
) -> None:
    """The unit's scan refuses the hit's rewrite of a record someone edited by hand to hold a
    secret; the read itself answers (a read never fails because a hit could not be counted)."""
    from memosite.hits import get_record_counting_hit

    result = upsert_record(vault, "demo", kind="trap", body="Deploy with care.", frontmatter={"title": "Deploy"})
    path = vault.root / result.path
    planted = path.read_text(encoding="utf-8") + f"\n{NINE_FAMILIES['Netlify token']}\n"
    path.write_text(planted, encoding="utf-8")
    found = get_record_counting_hit(vault, "demo", record_id=result.id, session_id="agent-session-1")
    assert found.id == result.id
    assert path.read_text(encoding="utf-8") == planted  # no hit was written into the file


# --- the update script ----------------------------------------------------------------------------

UPDATE_SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "update_gitleaks_rules.py"


def _update(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(UPDATE_SCRIPT), *args], capture_output=True, text=True, encoding="utf-8", check=False
    )


def _upstream_copy(folder: Path, extra: str = "") -> Path:
    source = folder / "gitleaks-v9.9.9" / "config" / "gitleaks.toml"
    source.parent.mkdir(parents=True)
    text = resources.files("memosite.secrets").joinpath(gitleaks.RULE_FILE).read_text(encoding="utf-8")
    source.write_text(text + extra, encoding="utf-8", newline="")
    return source


def test_update_script_vendors_the_file_unmodified_and_prints_its_version(tmp_path: Path) -> None:
    import hashlib

    source = _upstream_copy(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    result = _update(str(source), "--commit", "0" * 40, "--into", str(out))
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("gitleaks v9.9.9: 216 rules loaded, 6 left out")
    assert (out / gitleaks.RULE_FILE).read_bytes() == source.read_bytes()
    info = json.loads((out / gitleaks.SOURCE_FILE).read_text(encoding="utf-8"))
    assert info["version"] == "v9.9.9" and info["commit"] == "0" * 40
    assert info["sha256"] == hashlib.sha256(source.read_bytes()).hexdigest()
    assert info["rulesNeedingRun"] == gitleaks.source_info()["rulesNeedingRun"]


@pytest.mark.parametrize("bad", ["missing.toml", "not-toml"])
def test_update_script_refuses_what_it_cannot_read_in_one_line_and_writes_nothing(bad: str, tmp_path: Path) -> None:
    source = tmp_path / "gitleaks-v1.0.0.toml"
    if bad == "not-toml":
        source.write_text("rules = [[[ ünïcödé 🚫", encoding="utf-8")
    out = tmp_path / "out"
    out.mkdir()
    result = _update(str(source), "--into", str(out))
    assert result.returncode == 1
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr
    assert list(out.iterdir()) == []


def test_update_script_refuses_a_rule_python_cannot_run_unless_told_to_leave_it_out(tmp_path: Path) -> None:
    rule = "\n[[rules]]\nid = \"letters-only\"\nregex = '''\\pL{40}'''\nkeywords = [\"letters\"]\n"
    source = _upstream_copy(tmp_path, rule)
    out = tmp_path / "out"
    out.mkdir()
    refused = _update(str(source), "--into", str(out))
    assert refused.returncode == 1 and "letters-only" in refused.stderr and list(out.iterdir()) == []
    accepted = _update(str(source), "--into", str(out), "--allow-skips")
    assert accepted.returncode == 0 and "left out letters-only" in accepted.stdout


@pytest.mark.parametrize("args", [[], ["a.toml", "b.toml"], ["a.toml", "--no-such-option"]])
def test_update_script_wrong_or_extra_arguments_exit_with_usage(args: list[str]) -> None:
    result = _update(*args)
    assert result.returncode == 2 and "usage:" in result.stderr and "Traceback" not in result.stderr
