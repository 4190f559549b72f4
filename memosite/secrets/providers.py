"""Provider token formats: one row per family, each a literal prefix and the shape after it.

The shapes follow each provider's published token format. gitleaks' maintained rule set
(``gitleaks.py``) runs beside this table; a family is added here only when gitleaks has no rule
for it that fires on the token alone (Google OAuth ``ya29.``, Netlify ``nfp_``, X bearer tokens).

A row is found by its first two characters at the start of a token (see ``scan``), never inside
a longer identifier, so every pattern is tried only where a token of its shape can begin.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from memosite.secrets.values import is_fake_token_body, looks_wordy

_END = r"(?![A-Za-z0-9_\-])"


def _hex_mixed(body: str) -> bool:
    return any(c.isdigit() for c in body) and any(c.isalpha() for c in body)


def _has_digit(body: str) -> bool:
    return any(c.isdigit() for c in body)


def _random(body: str) -> bool:
    """Not made of words: "sk-learn-compatible-estimator" is a package name, not a key."""
    return not looks_wordy(body)


def _aws_key_id(body: str) -> bool:
    # AWS documents its examples with an EXAMPLE suffix; ids share a prefix with all-caps words
    # ("ASIAPACIFICSOUTHEAST").
    return "EXAMPLE" not in body and not looks_wordy(body)


@dataclass(frozen=True)
class ProviderRule:
    kind: str
    prefix: str
    pattern: re.Pattern[str]
    check: Callable[[str], bool] | None = None

    def accepts(self, token: str) -> bool:
        body = token[len(self.prefix) :]
        return not is_fake_token_body(body) and (self.check is None or self.check(body))


def _rule(kind: str, prefix: str, body: str, check: Callable[[str], bool] | None = None) -> ProviderRule:
    return ProviderRule(kind, prefix, re.compile(re.escape(prefix) + body + _END), check)


PREFIX_RULES: tuple[ProviderRule, ...] = (
    _rule("AWS access key id", "AKIA", r"[A-Z0-9]{16}", _aws_key_id),
    _rule("AWS access key id", "ASIA", r"[A-Z0-9]{16}", _aws_key_id),
    *(_rule("GitHub token", f"gh{c}_", r"[A-Za-z0-9]{36,251}") for c in "pousr"),
    _rule("GitHub token", "github_pat_", r"[A-Za-z0-9_]{22,251}"),
    *(
        _rule("GitLab token", f"gl{kind}-", r"[A-Za-z0-9_\-]{20,}", _random)
        for kind in ("pat", "dt", "rt", "ptt", "cbt", "soat", "ft", "imt", "agent", "oas", "wt")
    ),
    *(_rule("Slack token", f"xox{c}-", r"[A-Za-z0-9\-]{10,}", _has_digit) for c in "abposre"),
    _rule("Slack token", "xapp-", r"\d-[A-Za-z0-9\-]{10,}", _has_digit),
    _rule("Slack webhook", "hooks.slack.com/", r"(?:services|workflows|triggers)/T[A-Z0-9]{6,}/[A-Za-z0-9_/\-]{16,}"),
    _rule("Anthropic API key", "sk-ant-", r"[A-Za-z0-9_\-]{20,}", _random),
    # "sk-" starts ordinary words too (sk-learn); real keys are random mixed case with digits.
    _rule("OpenAI API key", "sk-", r"(?!ant-)(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}", _random),
    *(
        _rule("Stripe secret key", f"{c}k_{mode}_", r"[A-Za-z0-9]{10,99}", _random)
        for c in "sr"
        for mode in ("live", "test", "prod")
    ),
    _rule("Stripe webhook secret", "whsec_", r"[A-Za-z0-9+/=]{24,}", _random),
    _rule("Google API key", "AIza", r"[A-Za-z0-9_\-]{35}"),
    _rule("Google OAuth client secret", "GOCSPX-", r"[A-Za-z0-9_\-]{28}"),
    _rule("Hugging Face token", "hf_", r"[A-Za-z]{34}"),
    _rule("Hugging Face token", "api_org_", r"[A-Za-z]{34}"),
    _rule("SendGrid API key", "SG.", r"[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43}"),
    _rule("Twilio API key", "SK", r"[0-9a-f]{32}", _hex_mixed),
    *(_rule("Shopify token", f"shp{kind}_", r"[0-9a-fA-F]{32}", _hex_mixed) for kind in ("at", "ca", "pa", "ss")),
    *(_rule("DigitalOcean token", f"do{c}_v1_", r"[0-9a-f]{64}", _hex_mixed) for c in "opr"),
    _rule("Mailgun API key", "key-", r"[0-9a-f]{32}", _hex_mixed),
    _rule("npm token", "npm_", r"[A-Za-z0-9]{36}", _random),
    _rule("PyPI token", "pypi-AgE", r"[A-Za-z0-9_\-]{50,}"),
    _rule("JSON Web Token", "eyJ", r"[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{2,}\.[A-Za-z0-9_\-]{8,}"),
    _rule("Discord webhook", "discord.com/api/webhooks/", r"\d{17,20}/[A-Za-z0-9_\-]{60,}"),
    _rule("Discord webhook", "discordapp.com/api/webhooks/", r"\d{17,20}/[A-Za-z0-9_\-]{60,}"),
    _rule("Square token", "EAAA", r"[A-Za-z0-9_\-]{60}", _random),
    _rule("Square token", "sq0atp-", r"[A-Za-z0-9_\-]{22}"),
    _rule("Square token", "sq0csp-", r"[A-Za-z0-9_\-]{43}"),
    _rule("Braintree access token", "access_token$", r"(?:production|sandbox)\$[0-9a-z]{16}\$[0-9a-f]{32}"),
    _rule("Heroku API key", "HRKU-AA", r"[A-Za-z0-9_\-]{58}"),
    _rule("Atlassian API token", "ATATT3", r"[A-Za-z0-9_\-=]{150,}"),
    _rule("Linear API key", "lin_api_", r"[A-Za-z0-9]{40}"),
    _rule("Notion token", "ntn_", r"[0-9]{11}[A-Za-z0-9]{32,}"),
    _rule("Notion token", "secret_", r"[A-Za-z0-9]{43}", _random),
    _rule("Postman API key", "PMAK-", r"[0-9a-f]{24}-[0-9a-f]{34}"),
    _rule("Databricks token", "dapi", r"[0-9a-f]{32}(?:-\d)?", _hex_mixed),
    *(_rule("Doppler token", f"dp.{kind}.", r"[A-Za-z0-9]{40,}") for kind in ("pt", "st", "sa", "ct", "scim", "audit")),
    _rule("Dropbox token", "sl.", r"[A-Za-z0-9_\-]{130,}", _random),
    _rule("Grafana token", "glc_", r"[A-Za-z0-9+/]{32,}={0,2}"),
    _rule("Grafana token", "glsa_", r"[A-Za-z0-9]{32}_[0-9a-f]{8}"),
    _rule("New Relic key", "NRAK-", r"[A-Z0-9]{27}"),
    _rule("Sentry token", "sntrys_", r"[A-Za-z0-9+/=_\-]{40,}"),
    _rule("Sentry token", "sntryu_", r"[0-9a-f]{64}"),
    _rule("HashiCorp Vault token", "hvs.", r"[A-Za-z0-9_\-]{24,}", _random),
    _rule("HashiCorp Vault token", "hvb.", r"[A-Za-z0-9_\-]{24,}", _random),
    _rule("Pulumi token", "pul-", r"[0-9a-f]{40}"),
    _rule("age secret key", "AGE-SECRET-KEY-1", r"[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}"),
    _rule("Supabase token", "sbp_", r"[0-9a-f]{40}"),
    _rule("Groq API key", "gsk_", r"[A-Za-z0-9]{52}"),
    _rule("Replicate token", "r8_", r"[A-Za-z0-9]{37}"),
    _rule("Perplexity API key", "pplx-", r"[A-Za-z0-9]{48}"),
    _rule("xAI API key", "xai-", r"[A-Za-z0-9]{80}"),
    _rule("Facebook access token", "EAA", r"[A-Za-z0-9]{100,}", _random),
    _rule("Firebase Cloud Messaging key", "APA91b", r"[A-Za-z0-9_\-]{134}"),  # after "AAAA…:"
    _rule("Mapbox secret token", "sk.eyJ", r"[A-Za-z0-9_\-]{20,}\.[A-Za-z0-9_\-]{20,}"),
    _rule("Alibaba access key id", "LTAI", r"[A-Za-z0-9]{20}", _random),
    _rule("Tencent secret id", "AKID", r"[A-Za-z0-9]{32}", _random),
    _rule("PlanetScale token", "pscale_tkn_", r"[A-Za-z0-9_\-.=]{32,64}"),
    _rule("PlanetScale token", "pscale_pw_", r"[A-Za-z0-9_\-.=]{32,64}"),
    _rule("Prefect API key", "pnu_", r"[A-Za-z0-9]{36}"),
    _rule("RubyGems API key", "rubygems_", r"[0-9a-f]{48}"),
    _rule("Bitbucket app password", "ATBB", r"[A-Za-z0-9_=.\-]{32}", _random),
    _rule("Figma token", "figd_", r"[A-Za-z0-9_\-]{40}"),
    _rule("CircleCI token", "CCIPAT_", r"[A-Za-z0-9]{22}_[0-9a-f]{40}"),
    _rule("1Password service account token", "ops_eyJ", r"[A-Za-z0-9+/=_\-]{100,}"),
    _rule("Clojars token", "CLOJARS_", r"[a-z0-9]{60}"),
    _rule("ReadMe API key", "rdme_", r"[a-z0-9]{70}"),
    # Families gitleaks' rule set (see ``gitleaks.py``) has no rule for, or only next to a name.
    _rule("Google OAuth access token", "ya29.", r"[A-Za-z0-9_\-]{30,}", _random),
    _rule("Google OAuth refresh token", "1//0", r"[A-Za-z0-9_\-]{40,}", _random),
    _rule("Netlify access token", "nfp_", r"[A-Za-z0-9]{36,}", _has_digit),
    _rule("X (Twitter) bearer token", "A" * 20, r"A*[A-Za-z0-9%]{60,}", _has_digit),
)


@dataclass(frozen=True)
class InnerRule:
    """A format without a literal prefix, looked for inside a token that holds ``needle``."""

    kind: str
    needle: str
    pattern: re.Pattern[str]
    check: Callable[[str], bool] | None = None

    def accepts(self, token: str) -> bool:
        return not is_fake_token_body(token) and (self.check is None or self.check(token))


INNER_RULES: tuple[InnerRule, ...] = (
    InnerRule("Mailchimp API key", "-us", re.compile(r"(?<![0-9a-f])[0-9a-f]{32}-us[0-9]{1,2}(?![0-9])"), _hex_mixed),
    InnerRule("Terraform Cloud token", ".atlasv1.", re.compile(r"[a-z0-9]{14}\.atlasv1\.[a-z0-9_=\-]{60,70}")),
    InnerRule(
        "Azure AD client secret",
        "Q~",
        re.compile(r"(?<![A-Za-z0-9_~.])[A-Za-z0-9_~.]{3}[0-9]Q~[A-Za-z0-9_~.\-]{31,34}(?![A-Za-z0-9_~.\-])"),
        _random,
    ),
    InnerRule(
        "Discord bot token",
        ".",
        re.compile(r"(?<![A-Za-z0-9_\-.])[MN][A-Za-z0-9]{23,25}\.[A-Za-z0-9_\-]{6}\.[A-Za-z0-9_\-]{27,38}" + _END),
        _random,
    ),
)


def _index(rules: tuple[ProviderRule, ...]) -> dict[str, tuple[ProviderRule, ...]]:
    index: dict[str, list[ProviderRule]] = {}
    for rule in rules:
        index.setdefault(rule.prefix[:2], []).append(rule)
    # Longer prefixes first, so "sk-ant-" is tried before "sk-" and "sk_live_" before "sk.".
    return {head: tuple(sorted(group, key=lambda r: -len(r.prefix))) for head, group in index.items()}


RULES_BY_HEAD = _index(PREFIX_RULES)
