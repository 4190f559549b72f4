"""Secret scanning against the generated corpus (benchmarks/_secretcorpus.py) and through real writes.

A test per provider family and per assignment syntax, properties over random values and
look-alikes, placeholders judged by the value alone, and the same refusal on every write path:
upsert body, frontmatter and title, append details, session events.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import random
import string
import sys
import uuid
from pathlib import Path
from types import ModuleType

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memosite.cli import cli
from memosite.errors import SafetyViolation
from memosite.secrets import assert_no_secrets, scan_frontmatter, scan_text
from memosite.secrets.values import is_placeholder, looks_random, looks_wordy, secret_key_kind


def _load_corpus() -> ModuleType:
    path = Path(__file__).resolve().parent.parent / "benchmarks" / "_secretcorpus.py"
    spec = importlib.util.spec_from_file_location("_secretcorpus", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("_secretcorpus", module)
    spec.loader.exec_module(module)
    return module


corpus = _load_corpus()
FAMILIES = [family for family in corpus.FAMILIES if family.name != corpus.BARE_BASE64]


def flagged(text: str) -> bool:
    return bool(scan_text(text))


# --- Provider families ----------------------------------------------------------------------------


@pytest.mark.parametrize("family", FAMILIES, ids=[family.name for family in FAMILIES])
def test_every_provider_family_is_refused_in_every_context(family: object) -> None:
    rng = random.Random(f"family {family.name}")  # type: ignore[attr-defined]
    contexts = family.contexts or (*corpus.NEUTRAL_CONTEXTS, *corpus.named_contexts(family))  # type: ignore[attr-defined]
    for index in range(24):
        text = corpus._fill(contexts[index % len(contexts)], family.make(rng))  # type: ignore[attr-defined]
        assert flagged(text), text


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("hf_" + "kQzVbTnRwXyPlMcDfGhJsAeUoIiKqWzXcV", "Hugging Face token"),
        ("SG." + "aB3dE5fG7hJ9kL1mN3pQ5r" + "." + "sT7uV9wX1yZ3aB5cD7eF9gH1jK3lM5nP7qR9sT1uV3w", "SendGrid API key"),
        ("shpat_" + "0a1b2c3d4e5f60718293a4b5c6d7e8f9", "Shopify token"),
        ("dop_v1_" + "0a1b2c3d4e5f6071" * 4, "DigitalOcean token"),
        ("key-" + "0a1b2c3d4e5f60718293a4b5c6d7e8f9", "Mailgun API key"),
        ("bot" + "123456789:AA" + "Hk3mQ9xZ2pL7vN4bR8tY1wC6jF5sD0gE2", "Telegram bot token"),
        ("https://hooks.slack.com/services/" + "T0123ABCD/B0456EFGH/" + "aB3d" * 6, "Slack webhook"),
        ("https://discord.com/api/webhooks/" + "123456789012345678/" + "aB3d-x9Z_" * 8, "Discord webhook"),
        ("sk-ant-" + "api03-" + "Zx9" * 31 + "AA", "Anthropic API key"),
    ],
)
def test_providers_the_red_team_found_missing_are_refused_by_name(text: str, kind: str) -> None:
    assert [finding.kind for finding in scan_text(f"notes: {text}")] == [kind]


def test_azure_connection_string_and_github_export_without_prefix_are_refused() -> None:
    rng = random.Random(1)
    account_key = corpus.b64(rng, 64)
    assert flagged(
        f"DefaultEndpointsProtocol=https;AccountName=acme;AccountKey={account_key};EndpointSuffix=core.windows.net"
    )
    assert flagged("export GITHUB_TOKEN=" + corpus.rnd(rng, 40))
    assert flagged("TOKEN=" + corpus.rnd(rng, 40, corpus.HEX))


def test_detect_secrets_fixture_base64_is_refused_bare_and_behind_any_key() -> None:
    value = "gX69YO4CvBsVjzAwYxdGyDd30t5" + "+9ez31gKATtj4"
    assert [f.kind for f in scan_text(value)] == ["high-entropy base64 string"]
    assert flagged("mimi=" + value)


@pytest.mark.parametrize("special", ["^", "#", "`", "!", "$", "%", "&", "*", "(", "]", "|"])
def test_url_password_with_any_special_character_is_refused(special: str) -> None:
    text = f"DATABASE_URL=postgres://app:Xk9f{special}j3Kd2qLm@db.internal:5432/app"
    assert [f.kind for f in scan_text(text)] == ["credentials in URL"]


# --- Assignments ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("syntax_name", "syntax"), corpus.ASSIGNMENT_SYNTAXES, ids=[s[0] for s in corpus.ASSIGNMENT_SYNTAXES]
)
def test_random_values_are_refused_in_every_assignment_syntax(syntax_name: str, syntax: str) -> None:
    rng = random.Random(f"syntax {syntax_name}")
    for alphabet_name, alphabet in corpus.VALUE_ALPHABETS:
        for key in ("DB_PASSWORD", "api_key", "client_secret", "GITHUB_TOKEN", "private_key"):
            value = corpus.random_value(rng, alphabet, rng.randint(16, 40), unquoted=not corpus._is_quoted(syntax))
            text = corpus.render_assignment(syntax, key, value)
            assert flagged(text), (alphabet_name, text)


def test_unquoted_env_passwords_from_the_red_team_are_refused() -> None:
    assert flagged("DB_PASSWORD=izwd1iaeOV4qBkdf")
    rng = random.Random(2000)
    missed = [v for v in (corpus.rnd(rng, 16) for _ in range(2000)) if not flagged(f"DB_PASSWORD={v}")]
    assert len(missed) <= 2, missed  # 0.1 %: the issue measured 16.8 %


def test_session_event_refuses_the_json_quoted_assignment_that_upsert_refuses() -> None:
    inner = json.dumps({"user": "svc", "password": "Tfh6eONMXNX9Lpbn2j"})
    event = json.dumps({"type": "tool", "payload": {"text": inner}}, separators=(",", ":"))
    assert [f.kind for f in scan_text(event)] == ["password assignment"]
    spaced = json.dumps({"text": '"client_secret" : "' + "q8Vz2LmT7xKp3NwR" + '"'})
    assert [f.kind for f in scan_text(spaced)] == ["secret assignment"]


@pytest.mark.parametrize(
    ("key", "kind"),
    [
        ("DB_PASSWORD", "password assignment"),
        ("PGPASSWORD", "password assignment"),
        ("smtp_pass", "password assignment"),
        ("client_secret", "secret assignment"),
        ("SECRET_KEY", "secret assignment"),
        ("SUPER_SECRET_VALUE", "secret assignment"),
        ("secret_key_base", "secret assignment"),
        ("AccountKey", "secret assignment"),
        ("sig", "secret assignment"),
        ("x-api-key", "API key assignment"),
        ("apiKey", "API key assignment"),
        ("_authToken", "token assignment"),
        ("GITHUB_TOKEN", "token assignment"),
        ("private_key", "private key assignment"),
        ("aws_secret_access_key", "AWS secret access key"),
        ("Authorization", "authorization header"),
        ("password_policy", None),
        ("token_type", None),
        ("max_tokens", None),
        ("next_token", None),
        ("public_key", None),
        ("primary_key", None),
        ("api_key_header", None),
        ("secret_name", None),
        ("key", None),
    ],
)
def test_key_names_are_judged_by_their_last_word(key: str, kind: str | None) -> None:
    assert secret_key_kind(key) == kind


# --- Placeholders and look-alikes ----------------------------------------------------------------


@pytest.mark.parametrize("value", corpus.PLACEHOLDER_VALUES)
def test_placeholder_values_are_never_refused(value: str) -> None:
    assert is_placeholder(value) or not looks_random(value)
    for text in (f"API_KEY={value}", f"password: {value}", json.dumps({"client_secret": value})):
        assert scan_text(text) == [], text


@pytest.mark.parametrize("text", corpus.PROVIDER_LOOKALIKES)
def test_provider_lookalikes_made_of_filler_are_not_refused(text: str) -> None:
    assert scan_text(text) == []


@pytest.mark.parametrize("word", ["secret", "token", "password", "example", "test", "your", "sample", "key"])
def test_a_word_inside_a_random_value_does_not_make_it_a_placeholder(word: str) -> None:
    value = f"{word}_" + "7Gk2pQ9xZ4wL8vB3"
    assert not is_placeholder(value)
    assert [f.kind for f in scan_text(f"API_KEY={value}")] == ["API key assignment"]


@pytest.mark.parametrize("text", corpus.PROSE + corpus.CODE)
def test_prose_in_many_scripts_and_code_are_not_refused(text: str) -> None:
    assert scan_text(text) == []


@pytest.mark.parametrize("kind", list(corpus.LOOKALIKE_CONTEXTS))
def test_lookalikes_in_their_usual_places_are_not_refused(kind: str) -> None:
    rng = random.Random(kind)
    for sample in corpus.lookalike_samples(rng, 60):
        if sample.label == kind:
            assert scan_text(sample.text) == [], sample.text


@pytest.mark.parametrize(
    "value",
    ["ProdDatabaseCreds", "rotated-quarterly-by-ops", "Ed25519PrivateKey", "os.environ", "AWS_SECRET_ACCESS_KEY"],
)
def test_names_and_phrases_read_as_words(value: str) -> None:
    assert looks_wordy(value) and not looks_random(value)


# --- Properties -----------------------------------------------------------------------------------

_PROPERTY_SETTINGS = settings(
    max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
# The scan catches 99.9 % of random assignments, not all (bench_secrets.py measures the rate on
# 4,000 and more): the "every assignment" property runs on a fixed set of draws, so it checks the
# same 400 every time instead of hunting down the rare miss on some runs and not others.
_RECALL_SETTINGS = settings(
    max_examples=400,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
# Alphabets with digits: a value drawn from letters alone spells word-like runs ~0.1 % of the
# time ("xukaWADKidopeacp"), measured separately below.
_ALPHABETS = st.sampled_from([alphabet for _, alphabet in corpus.VALUE_ALPHABETS if any(c.isdigit() for c in alphabet)])


@st.composite
def random_assignments(draw: st.DrawFn) -> str:
    alphabet = draw(_ALPHABETS)
    _, syntax = draw(st.sampled_from(corpus.ASSIGNMENT_SYNTAXES))
    key = draw(st.sampled_from(corpus.SECRET_KEYS))
    seed = draw(st.integers(min_value=0, max_value=2**32))
    value = corpus.random_value(
        random.Random(seed), alphabet, draw(st.integers(16, 40)), unquoted=not corpus._is_quoted(syntax)
    )
    return str(corpus.render_assignment(syntax, key, value))


@pytest.mark.slow
@_RECALL_SETTINGS
@given(random_assignments())
def test_every_random_16_to_40_character_assignment_is_refused(text: str) -> None:
    assert flagged(text), text


def test_letters_only_random_values_are_refused_at_least_99_5_percent() -> None:
    rng = random.Random(7)
    draws = [corpus.rnd(rng, rng.randint(16, 40), corpus.LETTERS) for _ in range(4000)]
    missed = [value for value in draws if not flagged(f"password={value}")]
    assert len(missed) <= 20, missed  # 0.5 %; word-like draws such as "xukaWADKidopeacp" pass


_digests = st.binary(max_size=64).flatmap(
    lambda data: st.sampled_from(
        [
            hashlib.sha1(data).hexdigest(),
            hashlib.sha256(data).hexdigest(),
            hashlib.blake2b(data, digest_size=32).hexdigest(),
            hashlib.sha512(data).hexdigest(),
            hashlib.md5(data).hexdigest(),
        ]
    )
)
_ids = st.one_of(_digests, _digests.map(lambda d: d[:7]), st.uuids().map(str), st.uuids().map(lambda u: str(u).upper()))


@pytest.mark.slow
@_PROPERTY_SETTINGS
@given(
    value=_ids,
    template=st.sampled_from(
        ["{}", "commit {}", "id: {}", "sha256:{}", "blake3:{}", '{{"id": "{}"}}', "request_id={}", "/v1/runs/{}/logs",
         "https://github.com/o/r/commit/{}", "`{}`", "- [{}](records/{}.md)", "etag: {}"]
    ),
)  # fmt: skip
def test_no_git_sha_uuid_or_digest_is_ever_refused(value: str, template: str) -> None:
    assert scan_text(template.format(value, value)) == []


@_PROPERTY_SETTINGS
@given(st.text(alphabet=string.ascii_letters + " .,;:!?'-\n", max_size=400))
def test_prose_of_letters_and_punctuation_is_never_refused(text: str) -> None:
    assert scan_text(text) == []


# --- Every write path ----------------------------------------------------------------------------

TOKEN = "hf_" + "kQzVbTnRwXyPlMcDfGhJsAeUoIiKqWzXcV"
JSON_PASSWORD = json.dumps({"user": "svc", "password": "Tfh6eONMXNX9Lpbn2j"})


def _refused(result: object) -> dict:
    assert result.exit_code == 1, result.output  # type: ignore[attr-defined]
    error = json.loads(result.stdout)["error"]  # type: ignore[attr-defined]
    assert error["code"] == "SAFETY_VIOLATION"
    assert TOKEN not in result.stdout and "Tfh6eONMXNX9Lpbn2j" not in result.stdout  # type: ignore[attr-defined]
    return error


@pytest.mark.parametrize(
    "args",
    [
        ["upsert", "--kind", "trap", "--title", "t", "--body", f"CI uses {TOKEN}"],
        ["upsert", "--kind", "trap", "--title", f"HF {TOKEN}", "--body", "b"],
        ["upsert", "--kind", "trap", "--title", "t", "--body", JSON_PASSWORD],
        ["upsert", "--kind", "trap", "--title", "t", "--body", "DB_PASSWORD=izwd1iaeOV4qBkdf"],
        ["append", "--event", "deployed", "--details", json.dumps({"env": {"HF": TOKEN}})],
        ["append", "--event", "deployed", "--details", json.dumps({"password": "Tfh6eONMXNX9Lpbn2j"})],
    ],
    ids=["upsert body", "upsert title", "upsert JSON body", "upsert .env body", "append details", "append JSON key"],
)
def test_cli_write_paths_refuse_and_write_nothing(args: list[str], vault_dir: Path) -> None:
    result = CliRunner().invoke(cli, [*args, "--json"])
    _refused(result)
    records = [p for p in (vault_dir / "projects").rglob("*.md")] if (vault_dir / "projects").exists() else []
    assert not any(TOKEN in p.read_text(encoding="utf-8") for p in records)


@pytest.mark.parametrize(
    "args",
    [
        ["--text", f"ci uses {TOKEN}"],
        ["--text", JSON_PASSWORD],
        ["--text", '"client_secret" : "q8Vz2LmT7xKp3NwR"'],
        ["--text", "deploy done", "--data", JSON_PASSWORD],
    ],
    ids=["token in text", "JSON in text", "spaced JSON in text", "JSON data"],
)
def test_session_append_refuses_what_upsert_refuses(args: list[str], vault_dir: Path) -> None:
    runner = CliRunner()
    session_id = "s-" + uuid.uuid4().hex[:8]
    assert runner.invoke(cli, ["session", "start", "--id", session_id]).exit_code == 0
    result = runner.invoke(cli, ["session", "append", "--session", session_id, "--type", "fact", *args, "--json"])
    _refused(result)
    log = vault_dir / "projects" / "demo" / "sessions" / session_id / "events.jsonl"
    assert b"Tfh6eONMXNX9Lpbn2j" not in log.read_bytes() and TOKEN.encode() not in log.read_bytes()
    upsert = runner.invoke(cli, ["upsert", "--kind", "trap", "--title", "t", "--body", args[-1], "--json"])
    _refused(upsert)


def test_frontmatter_value_under_a_secret_key_is_judged_alone() -> None:
    found = scan_frontmatter({"db": {"password": "izwd1iaeOV4qBkdf"}, "api_key": "secret_7Gk2pQ9xZ4wL8vB3"})
    assert [(f.kind, f.where) for f in found] == [
        ("password assignment", "frontmatter.db.password"),
        ("API key assignment", "frontmatter.api_key"),
    ]
    with pytest.raises(SafetyViolation):
        assert_no_secrets("body", {"title": f"token {TOKEN}"})


def test_every_corpus_family_cites_where_its_format_is_documented() -> None:
    """The benchmark's recall is measured on formats taken from providers' documents, not from the
    rules being measured: each family names its source, and there are at least 100 families."""
    assert [family.name for family in corpus.FAMILIES if not corpus.DOCUMENTED_AT.get(family.name)] == []
    assert len(FAMILIES) >= 100


@pytest.mark.parametrize("prefix", ["ghp_", "gho_", "ghu_", "ghs_", "npm_"])
def test_corpus_tokens_carry_the_documented_crc32_checksum(prefix: str) -> None:
    import zlib

    token = corpus._checksummed(prefix)(random.Random(5))
    body, check = token[len(prefix) : len(prefix) + 30], token[len(prefix) + 30 :]
    assert check == corpus._base62(zlib.crc32(body.encode()), 6) and len(token) == len(prefix) + 36
