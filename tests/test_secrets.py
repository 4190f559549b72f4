"""Secret scanning rules. Fake secrets are assembled from pieces so this file holds none whole."""

from __future__ import annotations

import base64
import hashlib
import json
from datetime import UTC, datetime

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memosite.errors import SafetyViolation
from memosite.secrets import (
    SecretFinding,
    assert_no_secrets,
    mask_secret,
    scan_frontmatter,
    scan_text,
)

# --- Fake secrets: random-looking, built by concatenation ----------------------------------------

RANDOM_40 = "Xk9/" + "fJ3q" + "Lm2Z" + "p8Rw" + "T4vN" + "c7Hs" + "B1yQ" + "e6Kd" + "U5gA" + "w0Ej"
GITHUB_CLASSIC = "ghp_" + "A1b2" * 9
GITHUB_FINE_GRAINED = "github_" + "pat_" + "11ABCD3FG0a1b2c3d4e5f6" + "_" + "Zq7W" * 15
AWS_KEY_ID = "AK" + "IA" + "Z7Q2" * 4
AWS_TEMP_KEY_ID = "AS" + "IA" + "QW3R" * 4
SLACK_BOT = "xo" + "xb-" + "1234567890-1234567890123-" + "AbCd" * 6
OPENAI_LEGACY = "sk" + "-" + "Ab3D" * 12
OPENAI_PROJECT = "sk" + "-proj-" + "Ab3D_x9Z" * 10
ANTHROPIC = "sk" + "-ant-api03-" + "Ab3D" * 20 + "-xyzAA"
GOOGLE = "AI" + "za" + ("Sy9X" * 9)[:35]
STRIPE_LIVE = "sk" + "_live_" + "Ab3D" * 6
JWT_HEADER = base64.urlsafe_b64encode(b'{"alg":"HS256","typ":"JWT"}').rstrip(b"=").decode()
JWT_PAYLOAD = base64.urlsafe_b64encode(b'{"sub":"1234567890"}').rstrip(b"=").decode()
JWT = f"{JWT_HEADER}.{JWT_PAYLOAD}." + "Ab3D-x9Z" * 4
PEM_BODY = "MIIEow" + "IBAAKCAQEA" + "Ab3D" * 12
PASSWORD = "Xk9f" + "j3Kd" + "2q"


def pem(label: str) -> str:
    begin = "-----BEGIN " + label + " KEY-----"
    end = "-----END " + label + " KEY-----"
    return f"{begin}\n{PEM_BODY}\n{PEM_BODY}\n{end}"


POSITIVES: list[tuple[str, str]] = [
    ("AWS access key id", "aws_access_key_id = " + AWS_KEY_ID),
    ("AWS access key id", "temporary creds " + AWS_TEMP_KEY_ID + " expire hourly"),
    ("AWS secret access key", "aws_secret_access_key = " + RANDOM_40),
    ("AWS secret access key", 'AWS_SECRET_ACCESS_KEY="' + RANDOM_40 + '"'),
    ("GitHub token", "export GH_TOKEN=" + GITHUB_CLASSIC),
    ("GitHub token", "gh" + "o_" + "A1b2" * 9),
    ("GitHub token", "gh" + "u_" + "A1b2" * 9),
    ("GitHub token", "gh" + "s_" + "A1b2" * 9),
    ("GitHub token", "gh" + "r_" + "A1b2" * 9),
    ("GitHub token", GITHUB_FINE_GRAINED),
    ("GitHub token", f"git clone https://x-access-token:{GITHUB_CLASSIC}@github.com/o/r.git"),
    ("GitLab token", "CI uses gl" + "pat-" + "Ab3d" * 5),
    ("Slack token", "SLACK_BOT_TOKEN=" + SLACK_BOT),
    ("Slack token", "xo" + "xp-" + "2222222222-3333333333-" + "ZyXw" * 8),
    ("Slack webhook", "https://hooks.slack.com/" + "services/T0123ABCD/B0456EFGH/" + "aB3d" * 6),
    ("OpenAI API key", "OPENAI_API_KEY=" + OPENAI_LEGACY),
    ("OpenAI API key", OPENAI_PROJECT),
    ("Anthropic API key", "key: " + ANTHROPIC),
    ("Google API key", "maps key " + GOOGLE),
    ("Stripe secret key", STRIPE_LIVE),
    ("Stripe secret key", "rk" + "_live_" + "Ab3D" * 6),
    ("Stripe secret key", "sk" + "_test_" + "Ab3D" * 6),
    ("npm token", "//registry.npmjs.org/:_authToken=" + "npm" + "_" + "Ab3D" * 9),
    ("PyPI token", "password = " + "pypi-" + "AgEIcHlwaS5vcmc" + "Ab3D_x9Z" * 8),
    ("JSON Web Token", "cookie session=" + JWT),
    ("private key block", pem("RSA PRIVATE")),
    ("private key block", pem("OPENSSH PRIVATE")),
    ("private key block", pem("EC PRIVATE")),
    ("private key block", pem("PRIVATE")),
    ("private key block", pem("ENCRYPTED PRIVATE")),
    ("credentials in URL", "DATABASE_URL=postgres://app:" + PASSWORD + "@db.internal:5432/app"),
    ("credentials in URL", "redis://:" + PASSWORD + "@cache:6379/0"),
    ("credentials in URL", "mongodb+srv://admin:" + PASSWORD + "@cluster0.ab1cd.mongodb.net/db"),
    ("credentials in URL", "[dsn](https://deploy:" + "hun" + "ter22" + "@git.acme-corp.io/repo)"),
    ("password assignment", 'password = "' + PASSWORD + '"'),
    ("password assignment", "DB_PASSWORD=" + PASSWORD),
    ("password assignment", "passwd: '" + PASSWORD + "'"),
    ("password assignment", "--password=" + PASSWORD),
    ("password assignment", "**Password:** `" + PASSWORD + "`"),
    ("password assignment", 'db_password := "' + PASSWORD + '"'),
    ("API key assignment", "api_key: " + PASSWORD),
    ("API key assignment", "const apiKey = '" + PASSWORD + "';"),
    ("API key assignment", "x-api-key: " + PASSWORD),
    ("secret assignment", '"client_secret": "' + PASSWORD + 'Lm"'),
    ("secret assignment", "SECRET_KEY = 'dj4ng0-" + "s3cr3t-k3y-9f8e7d6c'"),
    ("token assignment", "access_token=" + PASSWORD),
    ("token assignment", "auth_token: '" + PASSWORD + "'"),
    ("private key assignment", "private_key = " + PASSWORD),
    ("authorization header", "Authorization: Bearer " + "d41d8cd9" + "8f00b204e9800998"),
]

NEGATIVES: list[str] = [
    # hashes, ids, times
    "Fixed in commit 3f9a2b1, reverted in 9fceb02.",
    "git show 9fceb02d0ae598e95dc970b74767f19372d61af8",
    "sha256 " + hashlib.sha256(b"x").hexdigest(),
    "sha1 " + hashlib.sha1(b"x").hexdigest() + " md5 " + hashlib.md5(b"x").hexdigest(),
    "content_hash: sha256:" + hashlib.sha256(b"x").hexdigest(),
    "digest: blake3:" + hashlib.sha256(b"y").hexdigest(),
    "id: 123e4567-e89b-12d3-a456-426614174000",
    "created: 2024-05-01T12:34:56.789Z, updated 2024-05-01T12:34:56+02:00",
    # paths and URLs without credentials
    "/home/dev/.ssh/id_ed25519 and C:\\Users\\dev\\secrets\\token.txt",
    "see src/auth/password_reset.py and tests/test_secret_store.py",
    "https://github.com/org/repo and git@github.com:org/repo.git",
    "ssh://git@github.com/org/repo.git",
    "https://user@host.example.com/x",
    "https://example.com:8443/path?q=1#frag",
    "http://[::1]:8080/health",
    # credentials that are placeholders or well-known local defaults
    "postgres://user:password@localhost/db",
    "postgres://user:****@db/app",
    "postgres://user:${PASS}@db/app",
    "mysql://root:<password>@localhost/app",
    "amqp://guest:guest@localhost:5672/",
    "postgres://postgres:postgres@localhost:5432/app",
    "const myURL = new URL('https://abc:xyz@example.com');",
    "// Prints https://a:b@xn--g6w251d/?abc#foo",
    "https://deploy:" + PASSWORD + "@git.example.org/repo.git",
    "MultiHostUrl('https://foo.com:123,foo:bar@bar.com/path')",
    # prose
    "Rotate the token every 90 days; the secret lives in Vault.",
    "password: must be rotated",
    "Password: 8+ characters, checked by zxcvbn.",
    "API key: see the 1Password entry 'deploy'",
    "secret: ProdDatabaseCreds",
    "password: rotated-quarterly-by-ops",
    "kind: Secret",
    "Use scikit-learn (sk-learn-compatible-estimator-0-24) pipelines.",
    # code that names a password without a literal
    "password = getpass.getpass()",
    "password = os.environ['DB_PASSWORD']",
    'password := os.Getenv("DB_PASS")',
    "api_key = process.env.OPENAI_API_KEY",
    "def login(user: str, password: str) -> None:",
    "if not password:\n    raise ValueError",
    "connect(password=password, user=user)",
    "secret = secrets.token_hex(32)",
    "password: Optional[str] = None",
    "api_key = settings.OPENAI_API_KEY",
    "def sign(private_key: Ed25519PrivateKey | Ed448PrivateKey) -> bytes:",
    "PWD=/home/user/project",
    # templates and placeholders
    "client_secret: ${{ secrets.CLIENT_SECRET }}",
    "password: {{ vault_db_password }}",
    "password: <your-password>",
    "api_key = 'xxxxxxxxxxxxxxxx'",
    "password: '********'",
    "password = changeme",
    "api_key: your-api-key-here",
    "secret: REDACTED",
    "password: null",
    "password = None",
    "PASSWORD=${DB_PASSWORD}",
    "export AWS_SECRET_ACCESS_KEY=$(pass show aws)",
    "curl -H 'Authorization: Bearer $TOKEN' https://api.example.com",
    "AK" + "IA" + "IOSFODNN7" + "EXAMPLE",
    "gh" + "p_" + "x" * 36,
    "https://hooks.slack.com/services/T00000000/B00000000/" + "X" * 24,
    # key material that is not a private key
    "-----BEGIN OPENSSH PRIVATE KEY-----\n...\n-----END OPENSSH PRIVATE KEY-----",
    "Deploy keys start with -----BEGIN OPENSSH PRIVATE KEY----- and must stay in the agent.",
    "-----BEGIN PUBLIC KEY-----\n" + PEM_BODY + "\n-----END PUBLIC KEY-----",
    "-----BEGIN CERTIFICATE-----\n" + PEM_BODY + "\n-----END CERTIFICATE-----",
    # an inline image
    "![chart](data:image/png;base64," + base64.b64encode(bytes(range(256)) * 8).decode() + ")",
    "ASIAPACIFICSOUTHEAST",
]


def kinds(text: str) -> list[str]:
    return [finding.kind for finding in scan_text(text)]


# --- What is detected ---------------------------------------------------------------------------


POSITIVE_IDS = [f"{kind}-{index}" for index, (kind, _) in enumerate(POSITIVES)]


@pytest.mark.parametrize(("kind", "text"), POSITIVES, ids=POSITIVE_IDS)
def test_known_secret_shapes_are_detected(kind: str, text: str) -> None:
    assert kinds(text) == [kind]


def test_github_token_in_body_is_refused() -> None:
    body = "Deploy notes\n\nthe bot uses\n" + GITHUB_CLASSIC + "\n"
    with pytest.raises(SafetyViolation) as raised:
        assert_no_secrets(body)
    assert raised.value.message == "refusing to write: GitHub token in body (line 4)"
    assert raised.value.code == "SAFETY_VIOLATION"
    assert raised.value.details == {
        "findings": [{"kind": "GitHub token", "where": "body", "line": 4, "preview": "ghp_…"}]
    }


def test_token_inside_a_longer_identifier_is_not_a_token() -> None:
    assert kinds("xghp_" + "A1b2" * 9) == []
    assert kinds("MY" + AWS_KEY_ID) == []


def test_token_at_the_very_start_of_the_text_is_found() -> None:
    assert kinds(GITHUB_CLASSIC) == ["GitHub token"]


def test_assignment_is_found_after_text_whose_lowercase_is_longer() -> None:
    # "İ".lower() is two characters, so offsets in the lowered copy no longer line up.
    text = "İstanbul office notes\n" + 'password = "' + PASSWORD + '"'
    assert [(f.kind, f.line) for f in scan_text(text)] == [("password assignment", 2)]


def test_several_secrets_are_reported_in_line_order() -> None:
    text = "a\n" + STRIPE_LIVE + "\nb\nc\n" + GOOGLE + "\n" + 'password = "' + PASSWORD + '"'
    findings = scan_text(text, where="notes/x.md")
    assert [(f.kind, f.line) for f in findings] == [
        ("Stripe secret key", 2),
        ("Google API key", 5),
        ("password assignment", 6),
    ]
    assert {f.where for f in findings} == {"notes/x.md"}


def test_token_in_an_assignment_is_reported_once_by_its_provider() -> None:
    assert kinds('api_key = "' + OPENAI_LEGACY + '"') == ["OpenAI API key"]
    assert kinds("aws_secret_access_key = " + RANDOM_40) == ["AWS secret access key"]


def test_anthropic_key_is_not_reported_as_openai() -> None:
    assert kinds(ANTHROPIC) == ["Anthropic API key"]


def test_jwt_in_authorization_header_is_one_finding() -> None:
    assert kinds("Authorization: Bearer " + JWT) == ["JSON Web Token"]


# --- The site build's output: HTML and JSON -----------------------------------------------------


def test_password_split_across_highlighting_spans_is_found_in_html() -> None:
    html = (
        '<pre><code><span class="n">password</span> <span class="o">=</span> '
        f'<span class="s2">&quot;{PASSWORD}&quot;</span>\n</code></pre>'
    )
    assert kinds(html) == ["password assignment"]


def test_private_key_in_highlighted_html_is_found() -> None:
    block = pem("RSA PRIVATE").split("\n")
    html = "".join(f'<span id="__span-0-{i}">{line}\n</span>' for i, line in enumerate(block))
    assert kinds(html) == ["private key block"]


def test_secrets_in_json_output_are_found() -> None:
    payload = json.dumps({"docs": [{"text": f'password = "{PASSWORD}"'}, {"text": pem("EC PRIVATE")}]})
    assert kinds(payload) == ["password assignment", "private key block"]


def test_html_entities_and_tags_alone_do_not_flag() -> None:
    html = "<p>Set <code>password</code> &amp; <code>api_key</code> in &lt;config&gt;.</p>"
    assert kinds(html) == []


# --- What is deliberately not detected ----------------------------------------------------------


@pytest.mark.parametrize("text", NEGATIVES)
def test_ordinary_content_is_not_a_secret(text: str) -> None:
    assert scan_text(text) == []


@pytest.mark.parametrize("length", [7, 8, 12, 40])
def test_commit_sha_is_not_a_secret(length: int) -> None:
    sha = hashlib.sha1(b"commit").hexdigest()[:length]
    assert scan_text(f"fixed in {sha}; see commit {sha} on main") == []


def test_prose_about_passwords_and_tokens_is_not_a_secret() -> None:
    note = (
        "## Auth\n\nThe password reset flow emails a one-time token. Access tokens expire after\n"
        "an hour; refresh tokens after 30 days. Never log the secret or the API key.\n"
        "password: must be rotated quarterly by ops.\n"
    )
    assert scan_text(note) == []


def test_image_data_uri_is_not_a_secret() -> None:
    blob = base64.b64encode(b"\x89PNG" + bytes(range(256)) * 64).decode()
    assert scan_text(f'<img src="data:image/png;base64,{blob}">') == []


# --- Masking ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("kind", "text"), POSITIVES, ids=POSITIVE_IDS)
def test_preview_never_contains_the_full_secret(kind: str, text: str) -> None:
    (finding,) = scan_text(text)
    shown = finding.preview.removesuffix("…")
    assert finding.preview == shown + "…"
    assert 1 <= len(shown) <= 4  # every secret here is at least 7 characters long
    assert shown in text


def test_masked_preview_keeps_at_most_a_quarter() -> None:
    assert mask_secret(GITHUB_CLASSIC) == "ghp_…"
    assert mask_secret("hunter22") == "hu…"
    assert mask_secret("abc") == "…"


def test_error_details_hold_no_secret() -> None:
    secrets_used = [GITHUB_CLASSIC, PASSWORD, STRIPE_LIVE]
    body = f"{GITHUB_CLASSIC}\nDB_PASSWORD={PASSWORD}\n"
    with pytest.raises(SafetyViolation) as raised:
        assert_no_secrets(body, {"billing": {"key": STRIPE_LIVE}})
    dumped = json.dumps(raised.value.to_json())
    for secret in secrets_used:
        assert secret not in dumped
    assert raised.value.message == "refusing to write: GitHub token in body (line 1) and 2 more"


# --- Frontmatter --------------------------------------------------------------------------------


def test_secret_nested_in_frontmatter_is_found_with_its_key_path() -> None:
    frontmatter = {
        "title": "Deploy",
        "links": [{"url": "https://example.com"}, {"url": f"postgres://app:{PASSWORD}@db/x"}],
        "ci": {"env": {"GH": GITHUB_CLASSIC}},
    }
    assert scan_frontmatter(frontmatter) == [
        SecretFinding("credentials in URL", "frontmatter.links[1].url", 1, "Xk…"),
        SecretFinding("GitHub token", "frontmatter.ci.env.GH", 1, "ghp_…"),
    ]


def test_secret_named_frontmatter_key_with_a_secret_value_is_found() -> None:
    found = scan_frontmatter({"db": {"password": PASSWORD}, "api_key": PASSWORD + "Zz"})
    assert [(f.kind, f.where, f.line) for f in found] == [
        ("password assignment", "frontmatter.db.password", 0),
        ("API key assignment", "frontmatter.api_key", 0),
    ]


def test_secret_named_frontmatter_key_with_ordinary_value_is_fine() -> None:
    frontmatter = {
        "password": "must be rotated",
        "api_key": "${OPENAI_API_KEY}",
        "secret": None,
        "access_token": 12345678,
        "password_policy": PASSWORD,  # the key does not name a secret, it names a policy
        "tags": ["password", "token"],
        "created": datetime(2024, 5, 1, tzinfo=UTC),
    }
    assert scan_frontmatter(frontmatter) == []


def test_secret_in_frontmatter_key_itself_is_found() -> None:
    (finding,) = scan_frontmatter({"tokens": {GITHUB_CLASSIC: "ci"}})
    assert (finding.kind, finding.preview) == ("GitHub token", "ghp_…")
    assert finding.where.startswith("frontmatter.tokens.")


def test_self_referencing_frontmatter_terminates() -> None:
    node: dict[str, object] = {"name": "loop"}
    node["self"] = node
    assert scan_frontmatter({"a": node}) == []


def test_frontmatter_secret_is_refused_with_its_place() -> None:
    with pytest.raises(SafetyViolation) as raised:
        assert_no_secrets("clean body", {"deploy": {"token_ci": GITHUB_CLASSIC}})
    assert raised.value.message == ("refusing to write: GitHub token in frontmatter.deploy.token_ci (line 1)")


def test_clean_record_passes() -> None:
    assert_no_secrets("Use `make test`; see commit 3f9a2b1.", {"title": "Tests", "tags": ["ci"]})
    assert_no_secrets("")


# --- Properties ---------------------------------------------------------------------------------

_hex_digests = st.binary(max_size=64).flatmap(
    lambda data: st.sampled_from(
        [
            hashlib.md5(data).hexdigest(),
            hashlib.sha1(data).hexdigest(),
            hashlib.sha256(data).hexdigest(),
        ]
    )
)
_uuids = st.uuids().map(str)
_iso_times = st.datetimes(min_value=datetime(1970, 1, 1), max_value=datetime(2100, 1, 1), timezones=st.just(UTC)).map(
    lambda moment: moment.isoformat()
)
_ordinary_values = st.one_of(
    _hex_digests,
    _hex_digests.map(lambda digest: digest[:7]),
    _hex_digests.map(lambda digest: f"sha256:{digest}"),
    _hex_digests.map(lambda digest: f"blake3:{digest}"),
    _uuids,
    _uuids.map(str.upper),
    _iso_times,
    st.dates().map(lambda day: day.isoformat()),
)
_contexts = st.sampled_from(
    [
        "{}",
        "commit {}",
        "id: {}",
        "- [{}](records/{}.md)",
        "content_hash: {}",
        '{{"id": "{}", "created": "{}"}}',
        "https://example.com/runs/{}?at={}",
        "/var/cache/memosite/{}/{}",
    ]
)


# The autouse fixture only sets environment variables; reusing it across examples is harmless.
_PROPERTY_SETTINGS = settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@pytest.mark.slow
@_PROPERTY_SETTINGS
@given(template=_contexts, values=st.lists(_ordinary_values, min_size=2, max_size=2))
def test_hashes_uuids_and_timestamps_never_flag(template: str, values: list[str]) -> None:
    assert scan_text(template.format(*values)) == []


@_PROPERTY_SETTINGS
@given(st.text(max_size=300))
def test_scanning_arbitrary_text_never_fails(text: str) -> None:
    for finding in scan_text(text):
        assert finding.preview.endswith("…")
        assert finding.line >= 1
