"""A generated corpus of secrets and of look-alikes that are not secrets.

Shared by ``bench_secrets.py`` (recall, false positives, speed for every candidate scanner) and the
secret-scanning tests. Nothing here is a real credential: every token is drawn at random from the
documented shape of its provider's format, so the file holds no secret and no scanner flags it.

Families are provider formats (self-identifying prefixes, or the context a provider's key always
comes with); assignments put random 16-40 character values behind secret-named keys in every
syntax a note may use; look-alikes are what a note is full of and must never be refused.
"""

from __future__ import annotations

import base64
import hashlib
import json
import random
import string
import uuid
import zlib
from collections.abc import Callable
from dataclasses import dataclass

LOWER = string.ascii_lowercase
UPPER = string.ascii_uppercase
DIGITS = string.digits
LETTERS = LOWER + UPPER
ALNUM = LETTERS + DIGITS
HEX = DIGITS + "abcdef"
B64 = ALNUM + "+/"
B64URL = ALNUM + "-_"
BASE32 = UPPER + "234567"
# Printable punctuation a password generator uses; quotes, backslash and whitespace stay out so a
# value needs no escaping in the syntaxes below (JSON contexts escape what they must themselves).
SYMBOLS = "!#$%&()*+,-./:;<=>?@[]^_{|}~"


def rnd(rng: random.Random, size: int, alphabet: str = ALNUM) -> str:
    return "".join(rng.choice(alphabet) for _ in range(size))


def b64(rng: random.Random, nbytes: int, *, urlsafe: bool = False, pad: bool = True) -> str:
    raw = rng.randbytes(nbytes)
    text = (base64.urlsafe_b64encode(raw) if urlsafe else base64.b64encode(raw)).decode()
    return text if pad else text.rstrip("=")


BASE62 = DIGITS + UPPER + LOWER


def _base62(number: int, width: int) -> str:
    digits = []
    for _ in range(width):
        number, rest = divmod(number, 62)
        digits.append(BASE62[rest])
    return "".join(reversed(digits))


def _checksummed(prefix: str, size: int = 30) -> Callable[[random.Random], str]:
    """GitHub's format (also npm's): 30 random base62 characters and the CRC32 of them, in 6 base62
    digits (GitHub blog, "Behind GitHub's new authentication token formats", 2021-04-05)."""

    def make(rng: random.Random) -> str:
        body = rnd(rng, size, BASE62)
        return prefix + body + _base62(zlib.crc32(body.encode()), 6)

    return make


def _jwt(rng: random.Random) -> str:
    def part(data: dict[str, object]) -> str:
        return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()

    claims = {"sub": str(rng.randint(1, 10**9)), "iat": rng.randint(1_600_000_000, 1_800_000_000), "scope": "repo"}
    return f"{part({'alg': 'HS256', 'typ': 'JWT'})}.{part(claims)}.{b64(rng, 32, urlsafe=True, pad=False)}"


def _pem(label: str) -> Callable[[random.Random], str]:
    def make(rng: random.Random) -> str:
        body = b64(rng, 600)
        lines = [body[i : i + 64] for i in range(0, len(body), 64)]
        return "\n".join([f"-----BEGIN {label}-----", *lines, f"-----END {label}-----"])

    return make


def _url_password(rng: random.Random) -> str:
    # Raw (not percent-encoded) passwords as people paste them, with the characters that end a
    # URL's userinfo for a strict parser: ^ # ` and friends.
    size = rng.randint(12, 24)
    chars = [rng.choice(ALNUM) for _ in range(size)]
    for _ in range(rng.randint(1, 3)):
        chars[rng.randrange(size)] = rng.choice("^#`!$&*()-_=+~.%;,[]{}|")
    return "".join(chars)


def _url_credentials(rng: random.Random) -> str:
    scheme, port = rng.choice(
        [("postgres", 5432), ("postgresql", 5432), ("mysql", 3306), ("mongodb+srv", 0), ("redis", 6379),
         ("rediss", 6380), ("amqp", 5672), ("https", 443), ("ftp", 21), ("smtp", 587)]
    )  # fmt: skip
    user = rng.choice(["app", "svc", "deploy", "admin", "ci-bot", "AzureDiamond"])
    host = rng.choice(["db.internal", "cache-1.prod.acme.io", "cluster0.ab1cd.mongodb.net", "10.0.3.7"])
    hostport = f"{host}:{port}" if port else host
    return f"{scheme}://{user}:{_url_password(rng)}@{hostport}/{rng.choice(['app', 'main', '0', ''])}"


@dataclass(frozen=True)
class Family:
    """One provider format: ``make`` draws a token, ``contexts`` are where it appears in a note."""

    name: str
    make: Callable[[random.Random], str]
    # ``{}`` is the token. A family without contexts of its own appears in NEUTRAL_CONTEXTS, which
    # name no secret, so only the provider rule (not a keyword assignment) can catch it.
    contexts: tuple[str, ...] = ()


NEUTRAL_CONTEXTS = (
    "{}",
    "the one CI uses is {} (rotated monthly)",
    "value={}",
    "ci:\n  value: {}\n",
    '{{"value": "{}"}}',
    "`{}`",
    "curl -H 'X-Value: {}' https://api.example.net/v1",
    "- {}",
)


def _f(name: str, make: Callable[[random.Random], str], *contexts: str) -> Family:
    return Family(name, make, contexts)


# A random key written down on its own, as in detect-secrets' fixtures ("mimi=gX69YO4C...").
BARE_BASE64 = "random base64 secret"

FAMILIES: tuple[Family, ...] = (
    _f("AWS access key id", lambda r: "AKIA" + rnd(r, 16, BASE32)),
    _f("AWS temporary access key id", lambda r: "ASIA" + rnd(r, 16, BASE32)),
    _f(
        "AWS secret access key",
        lambda r: rnd(r, 40, B64),
        "aws_secret_access_key = {}",
        "AWS_SECRET_ACCESS_KEY={}",
        'export AWS_SECRET_ACCESS_KEY="{}"',
        '{{"SecretAccessKey": "{}"}}',
        "[default]\naws_access_key_id = AKIA" + "Z" * 4 + "EXAMPLE0000\naws_secret_access_key={}\n",
    ),
    _f(
        "AWS session token",
        lambda r: "IQoJb3JpZ2luX2Vj" + b64(r, 240),
        "aws_session_token = {}",
        "AWS_SESSION_TOKEN={}",
    ),
    _f("GitHub classic token", _checksummed("ghp_")),
    _f("GitHub OAuth token", _checksummed("gho_")),
    _f("GitHub user-to-server token", _checksummed("ghu_")),
    _f("GitHub app installation token", _checksummed("ghs_")),
    _f("GitHub refresh token", lambda r: "ghr_" + rnd(r, 76)),
    _f("GitHub fine-grained token", lambda r: "github_pat_" + rnd(r, 22) + "_" + rnd(r, 59)),
    _f("GitLab personal token", lambda r: "glpat-" + rnd(r, 20, B64URL)),
    _f("GitLab deploy token", lambda r: "gldt-" + rnd(r, 20, B64URL)),
    _f("GitLab runner token", lambda r: "glrt-" + rnd(r, 20, B64URL)),
    _f("GitLab pipeline trigger token", lambda r: "glptt-" + rnd(r, 40, HEX)),
    _f("GitLab OAuth app secret", lambda r: "gloas-" + rnd(r, 64, HEX)),
    _f(
        "Slack bot token",
        lambda r: f"xoxb-{rnd(r, 12, DIGITS)}-{rnd(r, 13, DIGITS)}-{rnd(r, 24)}",
    ),
    _f(
        "Slack user token",
        lambda r: f"xoxp-{rnd(r, 12, DIGITS)}-{rnd(r, 12, DIGITS)}-{rnd(r, 13, DIGITS)}-{rnd(r, 32, HEX)}",
    ),
    _f("Slack app token", lambda r: f"xapp-1-A{rnd(r, 10, UPPER + DIGITS)}-{rnd(r, 13, DIGITS)}-{rnd(r, 64, HEX)}"),
    _f(
        "Slack webhook",
        lambda r: (
            f"https://hooks.slack.com/services/T{rnd(r, 8, UPPER + DIGITS)}/B{rnd(r, 10, UPPER + DIGITS)}/" + rnd(r, 24)
        ),
    ),
    _f("Stripe live secret key", lambda r: "sk_live_" + rnd(r, r.choice([24, 99]))),
    _f("Stripe restricted key", lambda r: "rk_live_" + rnd(r, r.choice([24, 99]))),
    _f("Stripe test secret key", lambda r: "sk_test_" + rnd(r, r.choice([24, 99]))),
    _f("Stripe webhook secret", lambda r: "whsec_" + rnd(r, 32)),
    _f("Google API key", lambda r: "AIza" + rnd(r, 35, B64URL)),
    _f("Google OAuth client secret", lambda r: "GOCSPX-" + rnd(r, 28, B64URL)),
    _f("OpenAI legacy key", lambda r: "sk-" + rnd(r, 20) + "T3BlbkFJ" + rnd(r, 20)),
    _f("OpenAI project key", lambda r: "sk-proj-" + rnd(r, 74, B64URL) + "T3BlbkFJ" + rnd(r, 74, B64URL)),
    _f("OpenAI service account key", lambda r: "sk-svcacct-" + rnd(r, 74, B64URL) + "T3BlbkFJ" + rnd(r, 74, B64URL)),
    _f("OpenAI admin key", lambda r: "sk-admin-" + rnd(r, 74, B64URL) + "T3BlbkFJ" + rnd(r, 74, B64URL)),
    _f("Anthropic API key", lambda r: "sk-ant-api03-" + rnd(r, 93, B64URL) + "AA"),
    _f("Anthropic admin key", lambda r: "sk-ant-admin01-" + rnd(r, 93, B64URL) + "AA"),
    _f("Hugging Face token", lambda r: "hf_" + rnd(r, 34, LETTERS)),
    _f("Hugging Face org token", lambda r: "api_org_" + rnd(r, 34, LETTERS)),
    _f("SendGrid API key", lambda r: "SG." + rnd(r, 22, B64URL) + "." + rnd(r, 43, B64URL)),
    _f("Twilio API key", lambda r: "SK" + rnd(r, 32, HEX)),
    _f(
        "Twilio auth token",
        lambda r: rnd(r, 32, HEX),
        "TWILIO_AUTH_TOKEN={}",
        "twilio:\n  auth_token: {}\n",
        'TWILIO_AUTH_TOKEN: "{}"',
    ),
    _f("Shopify access token", lambda r: "shpat_" + rnd(r, 32, HEX)),
    _f("Shopify custom app token", lambda r: "shpca_" + rnd(r, 32, HEX)),
    _f("Shopify private app token", lambda r: "shppa_" + rnd(r, 32, HEX)),
    _f("Shopify shared secret", lambda r: "shpss_" + rnd(r, 32, HEX)),
    _f("DigitalOcean token", lambda r: "dop_v1_" + rnd(r, 64, HEX)),
    _f("DigitalOcean OAuth token", lambda r: "doo_v1_" + rnd(r, 64, HEX)),
    _f("DigitalOcean refresh token", lambda r: "dor_v1_" + rnd(r, 64, HEX)),
    _f("Mailgun API key", lambda r: "key-" + rnd(r, 32, HEX)),
    _f("Mailchimp API key", lambda r: rnd(r, 32, HEX) + "-us" + str(r.randint(1, 21))),
    _f("Telegram bot token", lambda r: f"{r.randint(10**7, 10**10 - 1)}:AA{rnd(r, 33, B64URL)}"),
    _f(
        "Azure storage connection string",
        lambda r: (
            f"DefaultEndpointsProtocol=https;AccountName=acme{rnd(r, 6, LOWER)};AccountKey={b64(r, 64)};"
            "EndpointSuffix=core.windows.net"
        ),
    ),
    _f("Azure storage account key", lambda r: b64(r, 64), "AccountKey={}", "account_key: {}", "AZURE_STORAGE_KEY={}"),
    _f(
        "Azure SAS token",
        lambda r: (
            "https://acme.blob.core.windows.net/c/f.txt?sv=2022-11-02&ss=b&srt=o&sp=r&se=2030-01-01T00:00:00Z"
            "&sig=" + b64(r, 32).replace("+", "%2B").replace("/", "%2F").replace("=", "%3D")
        ),
    ),
    _f("Azure AD client secret", lambda r: rnd(r, 3, ALNUM) + str(r.randint(0, 9)) + "Q~" + rnd(r, 34, B64URL + "~.")),
    _f("npm token", _checksummed("npm_")),
    _f("PyPI token", lambda r: "pypi-AgEIcHlwaS5vcmc" + rnd(r, 120, B64URL)),
    _f("JSON Web Token", _jwt),
    _f("RSA private key", _pem("RSA PRIVATE KEY")),
    _f("EC private key", _pem("EC PRIVATE KEY")),
    _f("OpenSSH private key", _pem("OPENSSH PRIVATE KEY")),
    _f("PKCS#8 private key", _pem("PRIVATE KEY")),
    _f("encrypted private key", _pem("ENCRYPTED PRIVATE KEY")),
    _f("DSA private key", _pem("DSA PRIVATE KEY")),
    _f("PGP private key block", _pem("PGP PRIVATE KEY BLOCK")),
    _f(
        "service account JSON private key",
        lambda r: _pem("PRIVATE KEY")(r),
        "{}",
        '{{"type": "service_account", "private_key": {}}}',
    ),
    _f("credentials in URL", _url_credentials),
    _f(
        "Discord bot token",
        lambda r: r.choice("MN") + rnd(r, 25) + "." + rnd(r, 6, B64URL) + "." + rnd(r, 38, B64URL),
    ),
    _f("Discord webhook", lambda r: f"https://discord.com/api/webhooks/{rnd(r, 18, DIGITS)}/{rnd(r, 68, B64URL)}"),
    _f("Square access token", lambda r: "EAAA" + rnd(r, 60, B64URL)),
    _f("Square OAuth secret", lambda r: "sq0csp-" + rnd(r, 43, B64URL)),
    _f("Braintree access token", lambda r: f"access_token$production${rnd(r, 16, LOWER + DIGITS)}${rnd(r, 32, HEX)}"),
    _f("Heroku API key", lambda r: "HRKU-AA" + rnd(r, 58, B64URL)),
    _f("Heroku legacy API key", lambda r: str(uuid.UUID(int=r.getrandbits(128))), "HEROKU_API_KEY={}"),
    _f("Atlassian API token", lambda r: "ATATT3xFfGF0" + rnd(r, 170, B64URL) + "=" + rnd(r, 8, HEX.upper())),
    _f("Linear API key", lambda r: "lin_api_" + rnd(r, 40)),
    _f("Notion integration token", lambda r: "ntn_" + rnd(r, 11, DIGITS) + rnd(r, 35)),
    _f("Notion legacy token", lambda r: "secret_" + rnd(r, 43)),
    _f("Postman API key", lambda r: "PMAK-" + rnd(r, 24, HEX) + "-" + rnd(r, 34, HEX)),
    _f("Databricks token", lambda r: "dapi" + rnd(r, 32, HEX)),
    _f("Doppler token", lambda r: "dp.pt." + rnd(r, 43)),
    _f("Dropbox token", lambda r: "sl." + rnd(r, 135, B64URL)),
    _f("Grafana cloud token", lambda r: "glc_" + b64(r, 90, pad=False)),
    _f("Grafana service account token", lambda r: "glsa_" + rnd(r, 32) + "_" + rnd(r, 8, HEX)),
    _f("New Relic user key", lambda r: "NRAK-" + rnd(r, 27, UPPER + DIGITS)),
    _f("Sentry user token", lambda r: "sntryu_" + rnd(r, 64, HEX)),
    _f("HashiCorp Vault token", lambda r: "hvs." + rnd(r, 90, B64URL)),
    _f("Pulumi token", lambda r: "pul-" + rnd(r, 40, HEX)),
    _f("Terraform Cloud token", lambda r: rnd(r, 14, LOWER + DIGITS) + ".atlasv1." + rnd(r, 67, LOWER + DIGITS)),
    _f("age secret key", lambda r: "AGE-SECRET-KEY-1" + rnd(r, 58, "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L")),
    _f("Supabase token", lambda r: "sbp_" + rnd(r, 40, HEX)),
    _f("Groq API key", lambda r: "gsk_" + rnd(r, 52)),
    _f("Replicate token", lambda r: "r8_" + rnd(r, 37)),
    _f("Perplexity API key", lambda r: "pplx-" + rnd(r, 48)),
    _f("xAI API key", lambda r: "xai-" + rnd(r, 80)),
    _f("Facebook access token", lambda r: "EAACEdEose0cBA" + rnd(r, 120)),
    _f("Firebase FCM server key", lambda r: "AAAA" + rnd(r, 7, B64URL) + ":APA91b" + rnd(r, 134, B64URL)),
    _f("Mapbox secret token", lambda r: "sk.eyJ1IjoiYWNtZSIsImEiOiJ" + rnd(r, 20) + "." + rnd(r, 22, B64URL)),
    _f("Alibaba access key id", lambda r: "LTAI" + rnd(r, 20)),
    _f("Tencent secret id", lambda r: "AKID" + rnd(r, 32)),
    _f("PlanetScale token", lambda r: "pscale_tkn_" + rnd(r, 43, B64URL)),
    _f("Prefect API key", lambda r: "pnu_" + rnd(r, 36)),
    _f("RubyGems API key", lambda r: "rubygems_" + rnd(r, 48, HEX)),
    _f("Bitbucket app password", lambda r: "ATBB" + rnd(r, 32)),
    _f("Figma token", lambda r: "figd_" + rnd(r, 40, B64URL)),
    _f("CircleCI token", lambda r: "CCIPAT_" + rnd(r, 22) + "_" + rnd(r, 40, HEX)),
    _f("1Password service account token", lambda r: "ops_eyJ" + rnd(r, 250, B64URL)),
    _f(
        "authorization header (bearer)",
        lambda r: rnd(r, r.randint(32, 64), B64URL + "."),
        "Authorization: Bearer {}",
        "curl -H 'Authorization: Bearer {}' https://api.acme.io/v1/me",
        '{{"headers": {{"Authorization": "Bearer {}"}}}}',
    ),
    _f(
        "authorization header (basic)",
        lambda r: base64.b64encode(f"svc:{rnd(r, 18)}".encode()).decode(),
        "Authorization: Basic {}",
        "curl -H 'Authorization: Basic {}' https://api.acme.io",
    ),
    _f(
        "Docker registry auth",
        lambda r: base64.b64encode(f"ci:{rnd(r, 24)}".encode()).decode(),
        '{{"auths": {{"registry.acme.io": {{"auth": "{}"}}}}}}',
    ),
    _f(
        "npmrc auth token",
        lambda r: str(uuid.UUID(int=r.getrandbits(128))),
        "//registry.npmjs.org/:_authToken={}",
    ),
    _f(
        "Rails secret key base",
        lambda r: rnd(r, 128, HEX),
        "secret_key_base: {}",
        "SECRET_KEY_BASE={}",
    ),
    _f("Datadog API key", lambda r: rnd(r, 32, HEX), "DD_API_KEY={}", "datadog:\n  api_key: {}\n"),
    _f("Cloudflare API token", lambda r: rnd(r, 40, B64URL), "CLOUDFLARE_API_TOKEN={}", 'cf_api_token = "{}"'),
    # The nine families issue 21's security pass found passing every write path.
    _f("Google OAuth access token", lambda r: "ya29.a0" + rnd(r, r.randint(140, 220), B64URL)),
    _f("Google OAuth refresh token", lambda r: "1//0" + rnd(r, 1, "4g") + rnd(r, r.randint(95, 100), B64URL)),
    _f("GitLab runner registration token", lambda r: "GR1348941" + rnd(r, 20, B64URL)),
    _f(
        "curl basic credentials",
        lambda r: rnd(r, r.randint(12, 24), ALNUM + "!#%+=~"),
        "curl -u deploy:{} https://ci.acme.io/api/v4/jobs",
        "curl --user 'svc-bot:{}' -X POST https://hooks.acme.io/x",
        'curl -sS -u "ci:{}" https://artifacts.acme.io/repo/',
    ),
    _f(
        "X (Twitter) app bearer token",
        lambda r: "A" * 22 + rnd(r, 19, DIGITS) + "%2F" + rnd(r, 30) + "%3D" + rnd(r, 50),
    ),
    _f(
        "Dynatrace API token",
        lambda r: "dt0c01." + rnd(r, 24, UPPER + DIGITS) + "." + rnd(r, 64, UPPER + DIGITS),
    ),
    _f("Netlify access token", lambda r: "nfp_" + rnd(r, 36)),
    _f("Sourcegraph access token", lambda r: "sgp_" + rnd(r, 16, HEX) + "_" + rnd(r, 40, HEX)),
    _f("Artifactory API key", lambda r: "AKCp" + rnd(r, 69)),
    _f(BARE_BASE64, lambda r: b64(r, r.choice([30, 32, 48, 64])), *NEUTRAL_CONTEXTS[:4]),
)

# Where each family's format is documented: the provider's own page (title as published) or, for
# generic shapes, the standard. The generators above follow these documents, not any scanner's
# rule: prefix, alphabet and length as documented, the checksum where one is documented (GitHub,
# npm), the structure where one is (JWT, PEM, URLs, connection strings).
DOCUMENTED_AT: dict[str, str] = {
    "AWS access key id": "AWS IAM User Guide, 'Understanding unique ID prefixes' (AKIA: access key, 20 chars)",
    "AWS temporary access key id": "AWS IAM User Guide, 'Understanding unique ID prefixes' (ASIA: temporary key)",
    "AWS secret access key": "AWS IAM User Guide, 'Managing access keys' (40-character secret access key)",
    "AWS session token": "AWS STS API Reference, 'Credentials' (SessionToken)",
    "GitHub classic token": "GitHub blog 2021-04-05 'Behind GitHub's new authentication token formats' (ghp_, CRC32)",
    "GitHub OAuth token": "GitHub blog 2021-04-05 'Behind GitHub's new authentication token formats' (gho_)",
    "GitHub user-to-server token": "GitHub blog 2021-04-05 'Behind GitHub's new authentication token formats' (ghu_)",
    "GitHub app installation token": "GitHub blog 2021-04-05 'Behind GitHub's new authentication token formats' (ghs_)",
    "GitHub refresh token": "GitHub Docs, 'Refreshing user access tokens' (ghr_)",
    "GitHub fine-grained token": "GitHub Docs, 'Managing your personal access tokens' (github_pat_)",
    "GitLab personal token": "GitLab Docs, 'Token overview: GitLab token prefixes' (glpat-)",
    "GitLab deploy token": "GitLab Docs, 'Token overview: GitLab token prefixes' (gldt-)",
    "GitLab runner token": "GitLab Docs, 'Token overview: GitLab token prefixes' (glrt-)",
    "GitLab pipeline trigger token": "GitLab Docs, 'Token overview: GitLab token prefixes' (glptt-)",
    "GitLab OAuth app secret": "GitLab Docs, 'Token overview: GitLab token prefixes' (gloas-)",
    "GitLab runner registration token": "GitLab Docs, 'Token overview: GitLab token prefixes' (GR1348941)",
    "Slack bot token": "Slack API docs, 'Token types' (xoxb-)",
    "Slack user token": "Slack API docs, 'Token types' (xoxp-)",
    "Slack app token": "Slack API docs, 'Token types' (xapp-, app-level token)",
    "Slack webhook": "Slack API docs, 'Sending messages using incoming webhooks'",
    "Stripe live secret key": "Stripe Docs, 'API keys' (sk_live_)",
    "Stripe restricted key": "Stripe Docs, 'API keys: restricted API keys' (rk_live_)",
    "Stripe test secret key": "Stripe Docs, 'API keys' (sk_test_)",
    "Stripe webhook secret": "Stripe Docs, 'Check the webhook signatures' (whsec_)",
    "Google API key": "Google Cloud Docs, 'Manage API keys' (AIza, 39 chars)",
    "Google OAuth client secret": "Google Cloud Docs, 'Client secret format change' (GOCSPX-)",
    "Google OAuth access token": "Google Identity docs, 'Using OAuth 2.0 to access Google APIs' (ya29. access tokens)",
    "Google OAuth refresh token": "Google Identity docs, 'OAuth 2.0 for web server apps': token responses (1//0…)",
    "OpenAI legacy key": "OpenAI API reference, 'Authentication' (sk-, with the T3BlbkFJ marker)",
    "OpenAI project key": "OpenAI Help Center, 'Project API keys' (sk-proj-)",
    "OpenAI service account key": "OpenAI Help Center, 'Service accounts' (sk-svcacct-)",
    "OpenAI admin key": "OpenAI API reference, 'Administration: admin API keys' (sk-admin-)",
    "Anthropic API key": "Anthropic API docs, 'Getting started: authentication' (sk-ant-api03-)",
    "Anthropic admin key": "Anthropic API docs, 'Admin API' (sk-ant-admin01-)",
    "Hugging Face token": "Hugging Face Hub docs, 'User access tokens' (hf_)",
    "Hugging Face org token": "Hugging Face Hub docs, 'Organization API tokens' (api_org_)",
    "SendGrid API key": "Twilio SendGrid docs, 'API keys' (SG.<22>.<43>)",
    "Twilio API key": "Twilio docs, 'API keys' (SK + 32 hex SID)",
    "Twilio auth token": "Twilio docs, 'Auth tokens and how to change them' (32 hex)",
    "Shopify access token": "Shopify dev docs, 'Access tokens' (shpat_)",
    "Shopify custom app token": "Shopify dev docs, 'Custom apps' (shpca_)",
    "Shopify private app token": "Shopify dev docs, 'Private apps' (shppa_)",
    "Shopify shared secret": "Shopify dev docs, 'App credentials' (shpss_)",
    "DigitalOcean token": "DigitalOcean docs, 'How to create a personal access token' (dop_v1_)",
    "DigitalOcean OAuth token": "DigitalOcean API docs, 'OAuth' (doo_v1_)",
    "DigitalOcean refresh token": "DigitalOcean API docs, 'OAuth' (dor_v1_)",
    "Mailgun API key": "Mailgun docs, 'API keys' (key- + 32 hex)",
    "Mailchimp API key": "Mailchimp Marketing API, 'Quick start' (32 hex + -usN data centre)",
    "Telegram bot token": "Telegram Bot API, 'Authorizing your bot' (<bot id>:<35 chars>)",
    "Azure storage connection string": "Azure Storage docs, 'Configure a connection string'",
    "Azure storage account key": "Azure Storage docs, 'Manage storage account access keys' (64-byte base64)",
    "Azure SAS token": "Azure Storage docs, 'Create a service SAS' (sv, sig parameters)",
    "Azure AD client secret": "Microsoft identity platform docs, 'Add a client secret' (…Q~… format)",
    "npm token": "GitHub blog 2021-09 'npm access tokens' / npm Docs, 'About access tokens' (npm_, CRC32)",
    "PyPI token": "PyPI help, 'API tokens' (pypi- macaroon)",
    "JSON Web Token": "RFC 7519, JSON Web Token",
    "RSA private key": "RFC 7468, textual encodings of PKIX structures (PEM)",
    "EC private key": "RFC 5915, Elliptic Curve Private Key Structure; RFC 7468",
    "OpenSSH private key": "OpenSSH PROTOCOL.key, 'openssh-key-v1' format",
    "PKCS#8 private key": "RFC 5208 (PKCS #8); RFC 7468",
    "encrypted private key": "RFC 5958 EncryptedPrivateKeyInfo; RFC 7468",
    "DSA private key": "RFC 7468; OpenSSL 'DSA PRIVATE KEY' PEM",
    "PGP private key block": "RFC 4880 section 6.2, ASCII armor (PGP PRIVATE KEY BLOCK)",
    "service account JSON private key": "Google Cloud IAM docs, 'Create and delete service account keys' (JSON)",
    "credentials in URL": "RFC 3986 section 3.2.1, user information in a URI",
    "curl basic credentials": "curl manual, '-u, --user <user:password>'",
    "Discord bot token": "Discord developer docs, 'Reference: authentication' (bot token: id.timestamp.hmac)",
    "Discord webhook": "Discord developer docs, 'Webhook resource: execute webhook'",
    "Square access token": "Square developer docs, 'Access tokens' (EAAA)",
    "Square OAuth secret": "Square developer docs, 'OAuth API' (sq0csp-)",
    "Braintree access token": "Braintree docs, 'Access tokens' (access_token$production$…)",
    "Heroku API key": "Heroku Dev Center, 'Heroku CLI authentication' (HRKU- tokens)",
    "Heroku legacy API key": "Heroku Dev Center, 'Heroku CLI authentication' (UUID API key)",
    "Atlassian API token": "Atlassian support, 'Manage API tokens for your Atlassian account' (ATATT3)",
    "Linear API key": "Linear developers, 'Authentication: personal API keys' (lin_api_)",
    "Notion integration token": "Notion developers, 'Authorization' (ntn_ tokens since 2024)",
    "Notion legacy token": "Notion developers, 'Authorization' (secret_ tokens before 2024)",
    "Postman API key": "Postman docs, 'Generate a Postman API key' (PMAK-)",
    "Databricks token": "Databricks docs, 'Personal access token authentication' (dapi)",
    "Doppler token": "Doppler docs, 'Token formats' (dp.pt., dp.st., …)",
    "Dropbox token": "Dropbox developers, 'OAuth guide' (sl. short-lived tokens)",
    "Grafana cloud token": "Grafana Cloud docs, 'Access policies: tokens' (glc_)",
    "Grafana service account token": "Grafana docs, 'Service account tokens' (glsa_)",
    "New Relic user key": "New Relic docs, 'API keys: user key' (NRAK-)",
    "Sentry user token": "Sentry docs, 'Auth tokens' (sntryu_)",
    "HashiCorp Vault token": "Vault docs, 'Tokens: token prefixes' (hvs.)",
    "Pulumi token": "Pulumi docs, 'Access tokens' (pul-)",
    "Terraform Cloud token": "HCP Terraform docs, 'API tokens' (<id>.atlasv1.<secret>)",
    "age secret key": "age specification (C2SP), 'X25519 recipient type' (AGE-SECRET-KEY-1, Bech32)",
    "Supabase token": "Supabase docs, 'Management API: access tokens' (sbp_)",
    "Groq API key": "GroqCloud docs, 'API keys' (gsk_)",
    "Replicate token": "Replicate docs, 'API tokens' (r8_)",
    "Perplexity API key": "Perplexity API docs, 'Getting started' (pplx-)",
    "xAI API key": "xAI docs, 'API keys' (xai-)",
    "Facebook access token": "Meta for Developers, 'Access tokens' (EAA…)",
    "Firebase FCM server key": "Firebase docs, 'Legacy server key' (AAAA…:APA91b…)",
    "Mapbox secret token": "Mapbox docs, 'Access tokens: token format' (sk.eyJ…)",
    "Alibaba access key id": "Alibaba Cloud docs, 'Create an AccessKey pair' (LTAI)",
    "Tencent secret id": "Tencent Cloud docs, 'API key management' (AKID)",
    "PlanetScale token": "PlanetScale docs, 'Service tokens' (pscale_tkn_)",
    "Prefect API key": "Prefect docs, 'Manage API keys' (pnu_)",
    "RubyGems API key": "RubyGems guides, 'API key scopes' (rubygems_)",
    "Bitbucket app password": "Bitbucket Cloud docs, 'App passwords' (ATBB)",
    "Figma token": "Figma developers, 'Personal access tokens' (figd_)",
    "CircleCI token": "CircleCI docs, 'Managing API tokens' (CCIPAT_)",
    "1Password service account token": "1Password developer docs, 'Service accounts' (ops_eyJ…)",
    "X (Twitter) app bearer token": "X developer platform, 'OAuth 2.0 Bearer Token (app-only)' (AAAA… URL-encoded)",
    "Dynatrace API token": "Dynatrace docs, 'Access tokens: token format' (dt0c01.<public>.<secret>)",
    "Netlify access token": "Netlify docs, 'Personal access tokens' (nfp_)",
    "Sourcegraph access token": "Sourcegraph docs, 'Access tokens: token format' (sgp_<instance>_<40 hex>)",
    "Artifactory API key": "JFrog docs, 'API key' (AKCp, 73 characters)",
    "authorization header (bearer)": "RFC 6750 section 2.1, the Authorization request header field",
    "authorization header (basic)": "RFC 7617, the Basic HTTP authentication scheme",
    "Docker registry auth": "Docker docs, 'docker login: credentials store' (config.json auths.auth)",
    "npmrc auth token": "npm Docs, '.npmrc: auth-related configuration' (_authToken)",
    "Rails secret key base": "Rails guides, 'Securing Rails applications: custom credentials' (secret_key_base)",
    "Datadog API key": "Datadog docs, 'API and application keys' (32 hex)",
    "Cloudflare API token": "Cloudflare docs, 'Create API token' (40 characters)",
    BARE_BASE64: "detect-secrets' high-entropy base64 fixtures: a random key written down alone",
}


# --- Assignments: random values behind secret-named keys -----------------------------------------

SECRET_KEYS = (
    "password", "PASSWORD", "DB_PASSWORD", "db_password", "PGPASSWORD", "passwd", "pwd", "DB_PASS",
    "smtp_pass", "passphrase", "secret", "SECRET", "client_secret", "clientSecret", "SECRET_KEY",
    "secret_key", "webhook_secret", "JWT_SECRET", "api_key", "API_KEY", "apiKey", "apikey", "x-api-key",
    "token", "TOKEN", "access_token", "accessToken", "auth_token", "GITHUB_TOKEN", "SLACK_TOKEN",
    "refresh_token", "bearer_token", "private_key", "PRIVATE_KEY", "encryption_key", "signing_key",
    "master_key", "credentials", "SUPER_SECRET_VALUE", "app_secret", "ACCOUNT_KEY", "session_token",
)  # fmt: skip

# ``{k}`` is the key, ``{v}`` the value. Each syntax brings its own escaping needs: quoted forms
# never hold their own quote, JSON forms are built with json.dumps, unquoted forms hold no space.
ASSIGNMENT_SYNTAXES: tuple[tuple[str, str], ...] = (
    ("dotenv", "{k}={v}"),
    ("export", "export {k}={v}"),
    ("export quoted", 'export {k}="{v}"'),
    ("python", '{k} = "{v}"'),
    ("python single", "{k} = '{v}'"),
    ("yaml", "{k}: {v}"),
    ("yaml nested", "service:\n  {k}: {v}\n"),
    ("yaml quoted", '{k}: "{v}"'),
    ("json", "json"),
    ("json compact", "json-compact"),
    ("json in a string", "json-escaped"),
    ("toml", '{k} = "{v}"'),
    ("cli flag", "--{k}={v}"),
    ("cli flag space", "mytool --{k} {v}"),
    ("kwarg", 'connect(user="svc", {k}="{v}")'),
    ("go", '{k} := "{v}"'),
    ("php", "'{k}' => '{v}',"),
    ("markdown", "**{k}:** `{v}`"),
    ("ini", "[db]\n{k} = {v}\n"),
    ("header", "{k}: {v}"),
)

VALUE_ALPHABETS: tuple[tuple[str, str], ...] = (
    ("alnum", ALNUM),
    ("alnum+symbols", ALNUM + SYMBOLS),
    ("hex", HEX),
    ("base64", B64),
    ("base64url", B64URL),
    ("letters", LETTERS),
    ("lower+digits", LOWER + DIGITS),
    ("upper+digits", UPPER + DIGITS),
)

# Characters that end an unquoted value in some syntax, or start a comment, a variable or markup:
# an unquoted value never holds them (a person writing such a value would quote it).
_UNQUOTED_UNSAFE = set(" \t\"'`\\#$;,<>(){}[]|&")


def random_value(rng: random.Random, alphabet: str, size: int, *, unquoted: bool) -> str:
    pool = "".join(ch for ch in alphabet if not (unquoted and ch in _UNQUOTED_UNSAFE))
    # A real generator's output; a draw that is accidentally a single repeated class of one
    # character type is as likely as for any password, so it stays in.
    return rnd(rng, size, pool)


def render_assignment(syntax: str, key: str, value: str) -> str:
    if syntax == "json":
        return json.dumps({"user": "svc", key: value}, indent=2)
    if syntax == "json-compact":
        return json.dumps({key: value}, separators=(",", ":"))
    if syntax == "json-escaped":  # a session event whose text is itself JSON
        return json.dumps({"type": "tool", "payload": {"text": json.dumps({"user": "svc", key: value})}})
    return syntax.replace("{k}", key).replace("{v}", value)


def _is_quoted(syntax: str) -> bool:
    return syntax.startswith("json") or '"{v}"' in syntax or "'{v}'" in syntax or "`{v}`" in syntax


@dataclass(frozen=True)
class Sample:
    group: str
    label: str
    text: str


def env_name(family: Family) -> str:
    """The variable a person would keep this family's token in: "Mailgun API key" → MAILGUN_API_KEY."""
    words = [w for w in family.name.replace("-", " ").split() if w.isalnum()]
    return "_".join(words).upper()


def named_contexts(family: Family) -> tuple[str, ...]:
    name = env_name(family)
    return (f"{name}={{}}", f"{name.lower()}: {{}}", f'{{{{"{name}": "{{}}"}}}}', f"export {name}='{{}}'")


def _fill(context: str, token: str) -> str:
    return context.replace("{}", token).replace("{{", "{").replace("}}", "}")


def family_samples(rng: random.Random, per_family: int) -> list[Sample]:
    """Each family's tokens: families with contexts of their own in those; the others alternate
    between neutral contexts (group "provider": only a format rule can catch them) and a variable
    named after the provider (group "provider named": what keyword-scoped rules need)."""
    samples = []
    for family in FAMILIES:
        for index in range(per_family):
            token = family.make(rng)
            if family.name == BARE_BASE64:
                group, contexts = "bare base64", family.contexts
            elif family.contexts:
                group, contexts = "provider", family.contexts
            elif index % 2:
                group, contexts = "provider named", named_contexts(family)
            else:
                group, contexts = "provider", NEUTRAL_CONTEXTS
            samples.append(Sample(group, family.name, _fill(contexts[(index // 2) % len(contexts)], token)))
    return samples


def assignment_samples(rng: random.Random, count: int) -> list[Sample]:
    samples = []
    for index in range(count):
        syntax_name, syntax = ASSIGNMENT_SYNTAXES[index % len(ASSIGNMENT_SYNTAXES)]
        alphabet_name, alphabet = VALUE_ALPHABETS[(index // len(ASSIGNMENT_SYNTAXES)) % len(VALUE_ALPHABETS)]
        key = rng.choice(SECRET_KEYS)
        value = random_value(rng, alphabet, rng.randint(16, 40), unquoted=not _is_quoted(syntax))
        samples.append(Sample("assignment", f"{syntax_name} / {alphabet_name}", render_assignment(syntax, key, value)))
    return samples


# --- Look-alikes: what notes are full of ---------------------------------------------------------


def _git_sha(rng: random.Random) -> str:
    return hashlib.sha1(rng.randbytes(16)).hexdigest()


def _digest(rng: random.Random) -> str:
    data = rng.randbytes(24)
    algorithm = rng.choice(["sha256", "sha512", "sha1", "md5", "blake2b", "sha3_256"])
    return hashlib.new(algorithm, data).hexdigest()


def _blake3_like(rng: random.Random) -> str:
    return rnd(rng, 64, HEX)  # blake3's default output is 32 bytes, written as 64 hex digits


def _uuid(rng: random.Random) -> str:
    value = str(uuid.UUID(int=rng.getrandbits(128), version=4))
    return value.upper() if rng.random() < 0.2 else value


LOOKALIKE_CONTEXTS: dict[str, tuple[Callable[[random.Random], str], tuple[str, ...]]] = {
    "git SHA": (
        _git_sha,
        (
            "{}",
            "fixed in {}",
            "commit {}",
            "git revert {} && git push",
            "sha: {}",
            "revision = {}",
            "see {} (short: {:.7})",
            "https://github.com/org/repo/commit/{}",
            "id: {}",
        ),
    ),
    "UUID": (
        _uuid,
        (
            "{}",
            "id: {}",
            "request_id={}",
            '{{"id": "{}"}}',
            "run {} failed",
            "/v1/jobs/{}/logs",
            "correlation-id: {}",
            "trace {}",
            "session_id: {}",
        ),
    ),
    "sha256/blake3 digest": (
        lambda r: r.choice([_digest, _blake3_like])(r),
        (
            "{}",
            "sha256 {}",
            "content_hash: sha256:{}",
            "digest: blake3:{}",
            "checksum={}",
            "{}  dist/app.tar.gz",
            "image@sha256:{}",
            '"hash": "{}"',
            "etag: {}",
            'ETag: W/"{}"',
        ),
    ),
    "base64 of ordinary data": (
        lambda r: base64.b64encode(
            r.choice(
                [
                    b"hello world, this is a note about the build",
                    json.dumps({"user": "svc", "role": "reader", "n": r.randint(1, 999)}).encode(),
                    b"\x89PNG\r\n\x1a\n" + r.randbytes(40),
                    "Привет, мир: заметка о сборке".encode(),
                ]
            )
        ).decode(),
        ("{}", "payload: {}", '{{"data": "{}"}}', "echo {} | base64 -d"),
    ),
    "prefixed digest": (
        lambda r: r.choice(["sha256-", "sha384-", "sha512-", "h1:"]) + b64(r, r.choice([32, 48, 64])),
        ('integrity="{}"', '"integrity": "{}"', "github.com/x/y v1.2.3 {}", "{}"),
    ),
    "base64 image (data URI)": (
        lambda r: (
            "data:image/"
            + r.choice(["png", "jpeg", "gif", "webp"])
            + ";base64,"
            + base64.b64encode(
                r.choice([b"\x89PNG\r\n\x1a\n", b"\xff\xd8\xff\xe0", b"GIF89a", b"RIFF"])
                + r.randbytes(r.randint(40, 600))
            ).decode()
        ),
        ("![diagram]({})", '<img src="{}" alt="chart">', "{}", "background: url({});"),
    ),
    "public key": (
        lambda r: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI" + b64(r, 32, pad=False)[:43] + " dev@laptop",
        ("{}", "authorized_keys:\n  - {}\n"),
    ),
}


PROSE = (
    "Rotate the token every 90 days; the secret lives in Vault.",
    "The password reset flow emails a one-time token. Access tokens expire after an hour.",
    "Never log the secret or the API key; use the redaction helper in logging.py.",
    "password: must be rotated quarterly by ops",
    "API key: see the 1Password entry 'deploy'",
    "secret: ProdDatabaseCreds",
    "token: configurable via settings",
    "Set `api_key` in config.toml, then run `make deploy`.",
    "We use scikit-learn (sk-learn-compatible-estimator-0-24) pipelines.",
    "Le mot de passe est stocké dans le coffre ; le jeton expire après une heure.",
    "Das Passwort liegt im Tresor, das Token läuft nach einer Stunde ab.",
    "La contraseña se guarda en el almacén; el token caduca en una hora.",
    "Пароль хранится в хранилище, токен истекает через час.",
    "パスワードは金庫に保存され、トークンは1時間で失効します。",
    "密码保存在保险库中，令牌一小时后过期。",
    "비밀번호는 금고에 저장되고 토큰은 한 시간 후에 만료됩니다.",
    "كلمة المرور محفوظة في الخزنة والرمز ينتهي بعد ساعة.",
    "הסיסמה שמורה בכספת והאסימון פג לאחר שעה.",
    "पासवर्ड तिजोरी में रखा है और टोकन एक घंटे में समाप्त होता है।",
    "Mật khẩu được lưu trong kho; mã thông báo hết hạn sau một giờ.",
    "Ο κωδικός φυλάσσεται στο θησαυροφυλάκιο· το διακριτικό λήγει σε μία ώρα.",
    "Hasło jest w sejfie, a token wygasa po godzinie.",
    "Şifre kasada saklanıyor; belirteç bir saat sonra sona eriyor.",
    "Created 2024-05-01T12:34:56.789Z, updated 2024-05-01T12:34:56+02:00, v1.2.3-rc.1.",
    "See https://github.com/org/repo/pull/123 and https://docs.python.org/3/library/secrets.html#secrets.token_hex",
    "Docs: https://docs.google.com/document/d/1BxiMVs0XRA5nFMdKvBdBZjgmUUqptlbs74OgvE2upms/edit",
    "/home/dev/.ssh/id_ed25519 and C:\\Users\\dev\\secrets\\token.txt and ~/.config/gh/hosts.yml",
    "src/auth/password_reset.py, tests/test_secret_store.py, memosite/secrets.py",
    "postgres://user:password@localhost/db and redis://localhost:6379/0",
    "postgres://postgres:postgres@localhost:5432/app",
    "mysql://root:<password>@localhost/app and amqp://guest:guest@localhost:5672/",
    "https://user@host.example.com/x and ssh://git@github.com/org/repo.git",
)

CODE = (
    "password = getpass.getpass()",
    "password = os.environ['DB_PASSWORD']",
    'password := os.Getenv("DB_PASS")',
    "api_key = process.env.OPENAI_API_KEY",
    "def login(user: str, password: str) -> None:",
    "if not password:\n    raise ValueError('password required')",
    "connect(password=password, user=user)",
    "secret = secrets.token_hex(32)",
    "password: Optional[str] = None",
    "api_key = settings.OPENAI_API_KEY",
    "def sign(private_key: Ed25519PrivateKey | Ed448PrivateKey) -> bytes:",
    "token = request.headers.get('Authorization', '').removeprefix('Bearer ')",
    "SECRET_KEY = env('DJANGO_SECRET_KEY')",
    "client_secret: ${{ secrets.CLIENT_SECRET }}",
    "password: {{ vault_db_password }}",
    "PASSWORD=${DB_PASSWORD}",
    "export AWS_SECRET_ACCESS_KEY=$(pass show aws)",
    "api_key = config['providers']['openai']['api_key']",
    "token = jwt.encode(payload, key, algorithm='HS256')",
    "private_key = load_pem_private_key(data, password=None)",
    "secret_arn: arn:aws:secretsmanager:us-east-1:123456789012:secret:prod/db-AbCdEf",
    "password: vault:secret/data/prod/db#password",
    "api_key: op://Engineering/OpenAI/credential",
    "token_file: /var/run/secrets/kubernetes.io/serviceaccount/token",
    "password_file = /run/secrets/db_password",
    "next_token: null\npage_token: ''",
    "max_tokens: 4096\ntoken_type: bearer\ntoken_url: https://auth.acme.io/oauth/token",
    "secret_name: prod-database-credentials",
    "password_policy: min-length-12-with-symbols",
    "api_key_header: X-Api-Key",
    "const apiKey = useApiKey();",
    "self.secret = secret",
    "password = hash_password(raw_password, salt)",
    # Issue 21: an assignment of a call, an attribute or an expression is code, not a password.
    "pwd = os.getcwd()",
    "password = get_password()",
    'token = request.headers["X-Request-Token"]',
    'secret = os.environ["SECRET"]',
    "api_key = settings.API_KEY",
    'token = f"Bearer {token}"',
    'url = f"{base}/v1/items?api_key={api_key}"',
    'passwd = cfg.get("db", "password")',
    "secret = base64.b64encode(os.urandom(32)).decode()",
    "token = obj?.auth?.accessToken()",
    'let secret = crypto.randomBytes(32).toString("hex");',
    "PASSWORD = os.getenv('PGPASSWORD') or prompt()",
    "key = Fernet.generate_key()",
)

PLACEHOLDER_VALUES = (
    "xxxxxxxxxxxxxxxx", "XXXXXXXXXXXXXXXXXXXX", "********", "••••••••", "<your-api-key>", "<YOUR_TOKEN_HERE>",
    "changeme", "change-me", "CHANGEME", "${DB_PASSWORD}", "${{ secrets.TOKEN }}", "$API_KEY", "{{ token }}",
    "your-api-key-here", "your_secret_here", "REDACTED", "[REDACTED]", "<redacted>", "null", "None", "TODO",
    "placeholder", "dummy", "example", "sample-token", "insert-token-here", "...", "…", "%(password)s",
    "%DB_PASSWORD%", "replace_me", "REPLACE_WITH_YOUR_KEY", "my-secret-password", "secret", "password",
)  # fmt: skip

PROVIDER_LOOKALIKES = (
    "AKIA" + "X" * 16, "AKIA" + "IOSFODNN7" + "EXAMPLE", "ghp_" + "x" * 36, "ghp_" + "X" * 36,
    "sk-" + "x" * 48, "sk_live_" + "x" * 24, "sk-proj-" + "*" * 20, "xoxb-" + "x" * 24, "hf_" + "x" * 34,
    "https://hooks.slack.com/services/T00000000/B00000000/" + "X" * 24, "glpat-" + "x" * 20,
    "AIza" + "X" * 35, "npm_" + "0" * 36, "ghp_" + "abcd" + "*" * 28 + "wxyz", "sk-...abcd",
    "ASIAPACIFICSOUTHEAST", "AKIAIOSFODNN7EXAMPLE",
)  # fmt: skip


def lookalike_samples(rng: random.Random, per_kind: int) -> list[Sample]:
    samples = []
    for kind, (make, contexts) in LOOKALIKE_CONTEXTS.items():
        for index in range(per_kind):
            context = contexts[index % len(contexts)]
            values = [make(rng) for _ in range(context.count("{"))]
            text = context.format(*values) if "{:" not in context else context.format(values[0], values[0])
            samples.append(Sample("lookalike", kind, text))
    samples.extend(Sample("lookalike", "prose", text) for text in PROSE)
    samples.extend(Sample("lookalike", "code", text) for text in CODE)
    for value in PLACEHOLDER_VALUES:
        for syntax_name, syntax in (("dotenv", "{k}={v}"), ("yaml", "{k}: {v}"), ("json", "json")):
            key = rng.choice(SECRET_KEYS)
            samples.append(Sample("placeholder", syntax_name, render_assignment(syntax, key, value)))
    samples.extend(Sample("placeholder", "provider look-alike", text) for text in PROVIDER_LOOKALIKES)
    return samples
