"""Secret scanning: what the store checks before any write and the site build checks in its output.

Provider tokens (GitHub, Slack, AWS, ...) are recognised by their fixed prefixes. Free-form
credentials (``password = "..."``) are flagged only when the value looks random: not a word, a
placeholder, a path, a reference to another variable, or a hash.

Each rule is one compiled pattern that begins with a literal (``ghp_``, ``AKIA``, ``://``), so
the regex engine's prefix search makes a miss about as cheap as ``str.find``; case-insensitive
rules start from needles found in the lowered text. A 10 KB note costs a fraction of a millisecond.

A finding never carries the secret itself: ``preview`` keeps at most the first four characters.
"""

from __future__ import annotations

import html
import math
import re
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

from memosite.errors import SafetyViolation

__all__ = ["SecretFinding", "assert_no_secrets", "mask_secret", "scan_frontmatter", "scan_text"]


@dataclass(frozen=True)
class SecretFinding:
    """One suspected secret; ``preview`` is masked and never holds the whole secret."""

    kind: str
    where: str
    line: int
    preview: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def describe(self) -> str:
        place = f"{self.where} (line {self.line})" if self.line else self.where
        return f"{self.kind} in {place}"


def mask_secret(secret: str) -> str:
    """The first few characters of ``secret`` and an ellipsis; at most a quarter of it shows."""
    return secret[: min(4, len(secret) // 4)] + "…"


# --- What a real secret value looks like -------------------------------------------------------

_FAKE_TOKEN_WORDS = (
    "xxxx", "****", "....", "…", "example", "your", "placeholder", "redacted", "dummy", "fake",
    "sample",
)  # fmt: skip

_PLACEHOLDER_WORDS = (
    *_FAKE_TOKEN_WORDS, "...", "changeme", "change_me", "change-me", "replace", "password",
    "passwd", "secret", "token", "todo", "tbd",
)  # fmt: skip

# Well-known defaults and literal non-values: writing "postgres:postgres@localhost" in a setup
# note is not a leak, and refusing it would block the most common kind of memory.
_PLACEHOLDER_VALUES = frozenset(
    {
        "null", "none", "nil", "undefined", "true", "false", "empty", "pass", "pwd", "test",
        "testing", "admin", "root", "guest", "user", "username", "postgres", "mysql", "default",
        "hunter2", "letmein", "qwerty", "foo", "bar", "foobar", "baz", "abc123", "p@ssw0rd",
        "passw0rd",
    }
)  # fmt: skip

_PLACEHOLDER_SHAPE = re.compile(
    r"""
      <[^<>]*>                      # <your-token>
    | \$\{[^}]*\}?                  # ${VAR}, ${VAR:-fallback}
    | \$\(?[A-Za-z_][A-Za-z0-9_]*\)?  # $VAR, $(VAR)
    | \{\{.*\}\} | \{%.*%\}         # {{ jinja }}, {% tag %}
    | %\(\w*\)s | %s | %\w+%        # %(name)s, %s, %WINDOWS_VAR%
    | \{\w*\}                       # {password}
    | [xX*•.#_-]+                   # xxxx, ****, ----
    """,
    re.VERBOSE,
)

_NOT_SECRET_SHAPE = re.compile(
    r"""
      \d{4}-\d{2}-\d{2}([T\ ].*)?                      # ISO date or timestamp
    | (sha1|sha224|sha256|sha384|sha512|md5|blake2b|blake3):[0-9a-fA-F]+  # content hash
    | v?\d+(\.\d+)+([-+.][0-9A-Za-z.]+)?               # version number
    | [A-Za-z]:\\.* | \.{0,2}/.* | ~/.*                 # file path
    | [A-Za-z][A-Za-z0-9+.-]*://.*                      # URL (credentials have their own rule)
    """,
    re.VERBOSE,
)

# Unquoted values that are code, not data: calls, subscripts, attribute chains.
_CODE_SHAPE = re.compile(r"[(\[{]|^[A-Za-z_$][\w$]*(?:(?:\.|::|->)[A-Za-z_$][\w$]*)+$")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_WORD_SEGMENTS = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])")
_SLUG = re.compile(r"[a-z0-9]+(?:[-_.][a-z0-9]+)+")


def _shannon_entropy(value: str) -> float:
    size = len(value)
    return -sum(n / size * math.log2(n / size) for n in Counter(value).values())


_PLACEHOLDER_WORD = re.compile("|".join(map(re.escape, _PLACEHOLDER_WORDS)))
_FAKE_TOKEN_WORD = re.compile("|".join(map(re.escape, _FAKE_TOKEN_WORDS)))
_WHITESPACE = re.compile(r"\s")


def _is_placeholder(value: str) -> bool:
    low = value.lower()
    return (
        low in _PLACEHOLDER_VALUES
        or value.startswith(("$", "{{", "<", "%"))
        or _PLACEHOLDER_WORD.search(low) is not None
        or _PLACEHOLDER_SHAPE.fullmatch(value) is not None
    )


def _is_fake_token(body: str) -> bool:
    """A provider prefix followed by filler: ``ghp_xxxx...``, ``sk-your-key-here``."""
    return len(set(body)) < 3 or _FAKE_TOKEN_WORD.search(body.lower()) is not None


def _looks_wordy(value: str) -> bool:
    """Made of dictionary-like words (``ProdDatabaseCreds``, ``rotated-by-ops``), not random."""
    words = _WORD_SEGMENTS.findall(value)
    return bool(words) and sum(map(len, words)) / len(words) >= 2.5


def _looks_like_secret(value: str, *, quoted: bool = True) -> bool:
    """Whether a value assigned to a secret-named key is plausibly a real credential.

    ``quoted`` says the value was a string literal; an unquoted value that reads as code
    (``os.environ["X"]``, ``settings.DB_PASSWORD``, ``get_password()``) is a reference, not data.
    """
    if not 8 <= len(value) <= 512 or _WHITESPACE.search(value):
        return False
    if _is_placeholder(value) or _NOT_SECRET_SHAPE.fullmatch(value):
        return False
    if not quoted and _CODE_SHAPE.search(value):
        return False
    if not quoted and _IDENTIFIER.fullmatch(value) and _looks_wordy(value):
        return False  # a type or variable name: "private_key: Ed25519PrivateKey"
    has_lower = any(ch.islower() for ch in value)
    has_upper = any(ch.isupper() for ch in value)
    has_digit = any(ch.isdigit() for ch in value)
    has_symbol = any(not ch.isalnum() and ch not in "-_." for ch in value)
    if not (has_lower or has_upper):
        return False  # numbers, ports, phone numbers, ids
    if not (has_digit or has_symbol or (has_lower and has_upper)):
        return False  # one-case words: "configurable", "AWS_SECRET_ACCESS_KEY"
    if not has_symbol and (not has_digit or _SLUG.fullmatch(value)) and _looks_wordy(value):
        return False
    # Random text of length n has close to log2(n) bits per char; words and repeats far less.
    return _shannon_entropy(value) >= min(3.0, math.log2(len(value)) - 0.5)


def _mixed_case_and_digit(body: str) -> bool:
    return any(c.islower() for c in body) and any(c.isupper() for c in body) and any(c.isdigit() for c in body)


def _has_digit(body: str) -> bool:
    return any(c.isdigit() for c in body)


# Hosts reserved for documentation (RFC 2606/6761): credentials there authenticate nowhere.
_DOCUMENTATION_HOST = re.compile(r"(?:.*\.)?example\.(?:com|org|net)|.*\.(?:example|test|invalid)")


def _url_credentials_are_real(match: re.Match[str]) -> bool:
    password = match.group("secret")
    return (
        len(password) >= 4  # "https://a:b@host" is how URL parsers are documented
        and not _is_placeholder(password)
        and not _DOCUMENTATION_HOST.fullmatch(match.group("host").lower())
    )


# --- Rules -------------------------------------------------------------------------------------

_TOKEN_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")


def _fake_check(match: re.Match[str]) -> bool:
    return not _is_fake_token(match.group("secret"))


@dataclass(frozen=True)
class _Rule:
    """One family of secrets.

    A rule without ``anchors`` is a case-sensitive pattern that starts with a literal prefix, so
    ``finditer`` is itself a fast substring scan. A rule with anchors is case-insensitive: each
    anchor (needle, reach) is found in the lowered text and the pattern is tried only from up to
    ``reach`` characters before it, instead of running an IGNORECASE search over everything.
    """

    kind: str
    pattern: re.Pattern[str]
    check: Callable[[re.Match[str]], bool] = _fake_check
    anchors: tuple[tuple[str, int], ...] = ()
    # An anchored rule needs ":" or "=" this soon after the needle; prose ("rotate the token
    # monthly") is dismissed without running the pattern.
    operator_within: int = 0
    # Characters that must not precede the match: a token inside a longer identifier or base64
    # run is a coincidence. Checked by hand because a leading lookbehind would disable the
    # regex engine's literal-prefix search and make every rule ~30x slower.
    left_guard: frozenset[str] = frozenset()
    kind_of: Callable[[re.Match[str]], str] | None = None


def _token(pattern: str) -> re.Pattern[str]:
    return re.compile(rf"(?P<secret>{pattern})(?![A-Za-z0-9_\-])")


def _body_after(prefix_len: int, extra: Callable[[str], bool]) -> Callable[[re.Match[str]], bool]:
    def check(match: re.Match[str]) -> bool:
        body = match.group("secret")[prefix_len:]
        return not _is_fake_token(body) and extra(body)

    return check


# Operator between a key and its value, allowing quotes (JSON) and Markdown bold (**Password:**).
_ASSIGN = r"""[*]{0,2}["']?[*]{0,2}[ \t]*(?::=|=>|=(?!=)|:(?!:))[ \t]*(?:[*]{1,2}[ \t]*)?"""

_SECRET_KEYWORDS = r"""
    (?P<kw>
        passw(?:or)?d | pwd
      | secret(?:[ _-]?(?:access[ _-]?)?key)?
      | api[ _-]?key
      | (?:access|auth|refresh|bearer|session)[ _-]?token
      | private[ _-]?key
    )
"""

_SECRET_KEY_NAME = re.compile(rf"{_SECRET_KEYWORDS}$", re.IGNORECASE | re.VERBOSE)

_ASSIGNMENT = re.compile(
    rf"""
    {_SECRET_KEYWORDS}
    {_ASSIGN}
    (?:
        \\?"(?P<dq>[^"\\\n]{{1,512}})\\?"
      | '(?P<sq>[^'\n]{{1,512}})'
      | `(?P<bq>[^`\n]{{1,512}})`
      | (?P<bare><[^<>\s]{{0,100}}>|[^\s"'`,;)}}\]<>]{{1,512}})
    )
    """,
    re.IGNORECASE | re.VERBOSE,
)


def _assignment_value(match: re.Match[str]) -> tuple[str, int, int, bool]:
    for group in ("dq", "sq", "bq", "bare"):
        value = match.group(group)
        if value is not None:
            return value, match.start(group), match.end(group), group != "bare"
    raise AssertionError("the assignment pattern always captures a value")


def _assignment_kind(keyword: str) -> str:
    low = keyword.lower()
    if low.startswith(("passw", "pwd")):
        return "password assignment"
    if low.startswith("api"):
        return "API key assignment"
    if low.startswith("private"):
        return "private key assignment"
    if low.endswith("token"):
        return "token assignment"
    return "secret assignment"


_RULES: tuple[_Rule, ...] = (
    _Rule(
        "private key block",
        # The header alone is often quoted in docs; a real block has base64 (or an encrypted-PEM
        # header) right after it, possibly behind escaped newlines (JSON) or highlighting tags.
        re.compile(
            r"(?P<secret>-----BEGIN[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----)"
            r"(?:\s|\\[rn]|<[^<>\n]{0,300}>)*"
            r"(?:Proc-Type:|Comment:|Version:|[A-Za-z0-9+/=]{16})"
        ),
        check=lambda m: True,
    ),
    _Rule(
        "AWS access key id",
        re.compile(r"(?P<secret>A(?:KIA|SIA)[A-Z0-9]{16})(?![A-Za-z0-9])"),
        # Temporary ids (ASIA) share a prefix with all-caps words; real ids nearly always hold
        # a digit. AWS's documented example ends in EXAMPLE.
        check=lambda m: (
            "EXAMPLE" not in m.group("secret")
            and (m.group("secret").startswith("AKIA") or _has_digit(m.group("secret")[4:]))
        ),
        left_guard=frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"),
    ),
    _Rule(
        "AWS secret access key",
        re.compile(
            r"(?:aws[ _-]?secret(?:[ _-]?access)?[ _-]?key|secret[ _-]?access[ _-]?key)"
            + _ASSIGN
            + r"""\\?["'`]?(?P<secret>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])""",
            re.IGNORECASE,
        ),
        check=_body_after(0, _mixed_case_and_digit),
        anchors=(("secret", 4),),
        operator_within=32,
    ),
    _Rule(
        "GitHub token",
        _token(r"gh[pousr]_[A-Za-z0-9]{36,251}|github_pat_[A-Za-z0-9_]{22,251}"),
        check=_body_after(4, lambda body: True),
        left_guard=_TOKEN_CHARS,
    ),
    _Rule(
        "GitLab token",
        _token(r"gl(?:pat|dt|rt|ptt|cbt|soat)-[A-Za-z0-9_\-]{20,}"),
        check=_body_after(5, _has_digit),
        left_guard=_TOKEN_CHARS,
    ),
    _Rule(
        "Slack token",
        _token(r"x(?:ox[abposr]-|app-\d-)[A-Za-z0-9\-]{10,}"),
        check=_body_after(5, _has_digit),
        left_guard=_TOKEN_CHARS,
    ),
    _Rule(
        "Slack webhook",
        re.compile(
            r"hooks\.slack\.com/(?:services|workflows|triggers)/"
            r"(?P<secret>T[A-Z0-9]{6,}/[A-Za-z0-9_/\-]{16,})"
        ),
    ),
    _Rule(
        "Anthropic API key",
        _token(r"sk-ant-[A-Za-z0-9_\-]{20,}"),
        check=_body_after(7, _has_digit),
        left_guard=_TOKEN_CHARS,
    ),
    _Rule(
        "OpenAI API key",
        # "sk-" starts ordinary words too (sk-learn); real keys are random mixed case with digits.
        _token(r"sk-(?!ant-)(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}"),
        check=_body_after(3, _mixed_case_and_digit),
        left_guard=_TOKEN_CHARS,
    ),
    _Rule("Google API key", _token(r"AIza[A-Za-z0-9_\-]{35}"), left_guard=_TOKEN_CHARS),
    # Two rules rather than "[sr]k_": a leading character class defeats the prefix search.
    _Rule(
        "Stripe secret key",
        _token(r"sk_(?:live|test)_[A-Za-z0-9]{16,}"),
        check=_body_after(8, _has_digit),
        left_guard=_TOKEN_CHARS,
    ),
    _Rule(
        "Stripe secret key",
        _token(r"rk_(?:live|test)_[A-Za-z0-9]{16,}"),
        check=_body_after(8, _has_digit),
        left_guard=_TOKEN_CHARS,
    ),
    _Rule(
        "npm token",
        _token(r"npm_[A-Za-z0-9]{36}"),
        check=_body_after(4, _mixed_case_and_digit),
        left_guard=_TOKEN_CHARS,
    ),
    _Rule("PyPI token", _token(r"pypi-AgE[A-Za-z0-9_\-]{50,}"), left_guard=_TOKEN_CHARS),
    _Rule(
        "JSON Web Token",
        _token(r"eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{2,}\.[A-Za-z0-9_\-]{8,}"),
        left_guard=_TOKEN_CHARS,
    ),
    _Rule(
        "credentials in URL",
        # Anchored on "://"; "user@host" has no password part and "host:port/" no "@" after
        # the port, so neither matches. Commas end the userinfo so multi-host URLs
        # ("h1:123,u:p@h2") are not misread. The scheme must end right before "://".
        re.compile(
            r"://[^\s:/?#@\"'<>\[\]{}|\\^`,]*"
            r":(?P<secret>[^\s:/?#@\"'<>\[\]{}|\\^`,]+)@(?P<host>[A-Za-z0-9\[][A-Za-z0-9.\-\]]*)"
        ),
        check=_url_credentials_are_real,
        left_guard=frozenset(" \t\r\n\"'<>()[]{}:/"),
    ),
    _Rule(
        "authorization header",
        re.compile(
            r"""authorization["']?[ \t]*[:=][ \t]*\\?["']?(?:bearer|basic|token)[ \t]+"""
            r"(?P<secret>[A-Za-z0-9._~+/=\-]{16,})",
            re.IGNORECASE,
        ),
        check=lambda m: not _is_placeholder(m.group("secret")) and _has_digit(m.group("secret")),
        anchors=(("authorization", 0),),
        operator_within=24,
    ),
    _Rule(
        "secret assignment",
        _ASSIGNMENT,
        anchors=(
            ("passw", 0),
            ("pwd", 0),
            ("secret", 0),
            ("api", 0),
            ("private", 0),
            ("token", len("refresh_")),
        ),
        operator_within=32,
        kind_of=lambda m: _assignment_kind(m.group("kw")),
    ),
)

# Base64 payloads of data URIs (inline images) are opaque; nothing inside them is reported.
# Every rule above needs one of these substrings (in lowered text) to match: text without any of
# them, and without markup that could hide one (tags, entities), holds no secret. Keep it a
# superset when adding a rule. Plain substring tests, not one big regex: an alternation of this
# size costs ~30 µs per short text in Python's re, the tests below ~1 µs.
_SECRET_NEEDLES = (
    "-----begin",
    "akia",
    "asia",
    "ghp_",
    "gho_",
    "ghu_",
    "ghs_",
    "ghr_",
    "github_pat_",
    "glpat-",
    "gldt-",
    "glrt-",
    "glptt-",
    "glcbt-",
    "glsoat-",
    "xox",
    "xapp-",
    "hooks.slack.com",
    "sk-",
    "sk_",
    "rk_",
    "aiza",
    "npm_",
    "pypi-",
    "eyj",
    "://",
    "authorization",
    "passw",
    "pwd",
    "secret",
    "api",
    "private",
    "token",
)


def _might_hold_secret(text: str) -> bool:
    if "<" in text or "&" in text:
        return True  # markup can split or encode a secret: scan it properly
    lowered = text.lower()
    return any(needle in lowered for needle in _SECRET_NEEDLES)


_DATA_URI = re.compile(r"data:[\w.+/-]*(?:;[\w.+-]+=?[\w.+-]*)*;base64,[A-Za-z0-9+/=]+")
_HTML_HINT = re.compile(r"</[A-Za-z]|&(?:quot|#\d+|#x[0-9a-fA-F]+|lt|gt|amp|apos);")
_HTML_TAG = re.compile(r"<[^<>\n]*>")
_HTML_TAG_MULTILINE = re.compile(r"<[^<>]*\n[^<>]*>")


def _anchored_matches(rule: _Rule, text: str, lowered: str) -> list[re.Match[str]]:
    if len(lowered) != len(text):  # lowering changed offsets (rare Unicode); search everything
        return list(rule.pattern.finditer(text))
    matches: dict[int, re.Match[str]] = {}
    for needle, reach in rule.anchors:
        hit = lowered.find(needle)
        while hit != -1:
            window = lowered[hit : hit + rule.operator_within]
            if rule.operator_within and ":" not in window and "=" not in window:
                hit = lowered.find(needle, hit + 1)
                continue
            for start in range(max(0, hit - reach), hit + 1):
                match = rule.pattern.match(text, start)
                if match is not None:
                    matches.setdefault(match.start(), match)
                    break
            hit = lowered.find(needle, hit + 1)
    return [matches[start] for start in sorted(matches)]


def _scan_one(text: str) -> list[tuple[int, str, str]]:
    """(offset, kind, secret) for every finding in ``text``; overlapping matches count once."""
    lowered: str | None = None
    taken: list[tuple[int, int]] = []
    if "base64," in text:
        taken.extend(m.span() for m in _DATA_URI.finditer(text))
    found: list[tuple[int, str, str]] = []
    for rule in _RULES:
        if rule.anchors:
            if lowered is None:
                lowered = text.lower()
            matches = _anchored_matches(rule, text, lowered)
        else:
            matches = list(rule.pattern.finditer(text))
        for match in matches:
            begin = match.start()
            if begin and text[begin - 1] in rule.left_guard:
                continue
            if rule.pattern is _ASSIGNMENT:
                secret, start, end, quoted = _assignment_value(match)
                if not _looks_like_secret(secret, quoted=quoted):
                    continue
            else:
                if not rule.check(match):
                    continue
                secret, (start, end) = match.group("secret"), match.span("secret")
            if any(start < t_end and t_start < end for t_start, t_end in taken):
                continue
            taken.append((start, end))
            kind = rule.kind_of(match) if rule.kind_of else rule.kind
            found.append((start, kind, secret))
    return found


def _strip_markup(text: str) -> str:
    """Text of HTML output as a reader sees it; tags keep their newlines so lines still line up."""
    no_tags = _HTML_TAG.sub("", text)
    if "\n" in no_tags and "<" in no_tags:
        no_tags = _HTML_TAG_MULTILINE.sub(lambda m: "\n" * m.group().count("\n"), no_tags)
    return html.unescape(no_tags)


def scan_text(text: str, where: str = "text") -> list[SecretFinding]:
    """Suspected secrets in ``text``, in order of position; ``where`` labels every finding.

    HTML (the built site) is also scanned as its visible text, so a credential split across
    syntax-highlighting spans or written with ``&quot;`` entities is still found.
    """
    if not text or not _might_hold_secret(text):
        return []
    variants = [text]
    if ("<" in text or "&" in text) and _HTML_HINT.search(text):
        variants.append(_strip_markup(text))
    findings: list[SecretFinding] = []
    seen: set[tuple[str, int, str]] = set()
    for variant in variants:
        for start, kind, secret in sorted(_scan_one(variant)):
            line = variant.count("\n", 0, start) + 1
            if (kind, line, secret) in seen:
                continue
            seen.add((kind, line, secret))
            findings.append(SecretFinding(kind, where, line, mask_secret(secret)))
    findings.sort(key=lambda f: f.line)
    return findings


def scan_frontmatter(frontmatter: Mapping[str, Any]) -> list[SecretFinding]:
    """Suspected secrets anywhere in frontmatter: string values and keys, nested at any depth.

    A string under a secret-named key (``password``, ``db.api_key``) is judged on its own, since
    YAML has no ``=`` for the text scan to see. ``where`` is ``frontmatter.<key path>``.
    """
    findings: list[SecretFinding] = []
    _scan_node(frontmatter, "frontmatter", None, findings, set())
    return findings


def _scan_node(node: Any, path: str, key: str | None, out: list[SecretFinding], active: set[int]) -> None:
    if isinstance(node, str):
        found = scan_text(node, where=path)
        named_secret = key is not None and _SECRET_KEY_NAME.search(key) is not None
        if not found and named_secret and _looks_like_secret(node):
            found = [SecretFinding(_assignment_kind(str(key)), path, 0, mask_secret(node))]
        out.extend(found)
        return
    if not isinstance(node, Mapping | list | tuple):
        return
    if id(node) in active:  # YAML aliases can make a structure contain itself
        return
    active.add(id(node))
    if isinstance(node, Mapping):
        for child_key, value in node.items():
            name = str(child_key)
            child_path = f"{path}.{name}"
            if isinstance(child_key, str):
                out.extend(scan_text(child_key, where=child_path))
            _scan_node(value, child_path, name, out, active)
    else:
        for index, value in enumerate(node):
            _scan_node(value, f"{path}[{index}]", key, out, active)
    active.discard(id(node))


def assert_no_secrets(body: str, frontmatter: Mapping[str, Any] | None = None) -> None:
    """Raise :class:`SafetyViolation` naming the first finding if body or frontmatter holds one."""
    findings = scan_text(body, where="body")
    if frontmatter:
        findings.extend(scan_frontmatter(frontmatter))
    if not findings:
        return
    more = len(findings) - 1
    suffix = f" and {more} more" if more else ""
    raise SafetyViolation(
        f"refusing to write: {findings[0].describe()}{suffix}",
        details={"findings": [finding.to_dict() for finding in findings]},
    )
