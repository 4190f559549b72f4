"""Secret scanning: what the store checks before any write and the site build checks in its output.

One scan, four kinds of rule, tried in this order (a span found once is not reported again):

* **private key blocks** (``-----BEGIN … PRIVATE KEY-----`` with a body);
* **provider tokens** (:mod:`memosite.secrets.providers`): the text is cut into runs of token
  characters, and a provider's pattern is tried only where a token can begin (the start of a run,
  or right after ``=``, ``:``, ``/``, ``@``) and only if the first two characters match one of
  its prefixes, so a hundred families cost one dictionary look-up per run;
* **credentials in URLs** (``scheme://user:password@host``);
* **secret-named assignments** (``DB_PASSWORD=…``, ``"client_secret": "…"``, ``--token …``, YAML,
  JSON, JSON inside a JSON string) and high-entropy base64 standing alone, judged by
  :mod:`memosite.secrets.values`: random, and not a placeholder, a word, a path or a reference.

Text without a run of 16 token characters, ``://``, ``-----BEGIN`` or a secret word holds nothing
to report and costs a regex pass and a few substring tests (about 2 µs for a session event).

A finding never carries the secret itself: ``preview`` keeps at most the first four characters.
"""

from __future__ import annotations

import base64
import binascii
import html
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from memosite.errors import SafetyViolation
from memosite.secrets import gitleaks
from memosite.secrets.providers import INNER_RULES, RULES_BY_HEAD
from memosite.secrets.values import (
    AUTHORIZATION,
    PASSWORD,
    is_placeholder,
    is_secret_value,
    looks_wordy,
    secret_key_kind,
    shannon_entropy,
)

__all__ = ["SecretFinding", "assert_no_secrets", "mask_secret", "scan_frontmatter", "scan_record", "scan_text"]


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


Found = tuple[int, int, str, str]  # start, end, kind, secret


class _Findings:
    """Findings of one text, each span reported once (the first rule to claim it wins)."""

    def __init__(self) -> None:
        self.items: list[Found] = []
        self.taken: list[tuple[int, int]] = []
        self.later: list[Found] = []  # weaker findings, kept only where no named rule claims the span

    def free(self, start: int, end: int) -> bool:
        return not any(start < t_end and t_start < end for t_start, t_end in self.taken)

    def add(self, start: int, end: int, kind: str, secret: str) -> None:
        if self.free(start, end):
            self.taken.append((start, end))
            self.items.append((start, end, kind, secret))


# --- Private key blocks ---------------------------------------------------------------------------

# The header alone is often quoted in docs; a real block has base64 (or an encrypted-PEM header)
# right after it, possibly behind escaped newlines (JSON) or highlighting tags.
_PRIVATE_KEY = re.compile(
    r"-----BEGIN[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----"
    r"(?:\s|\\[rn]|<[^<>\n]{0,300}>)*"
    r"(?:Proc-Type:|Comment:|Version:|[A-Za-z0-9+/=]{16})"
)
_PEM_BLOCK = re.compile(r"-----BEGIN ([A-Z0-9 ]+)-----.*?-----END \1-----", re.DOTALL)


def _scan_private_keys(text: str, out: _Findings) -> None:
    for match in _PRIVATE_KEY.finditer(text):
        header_end = text.index("-----", match.start() + 5) + 5
        out.add(match.start(), match.end(), "private key block", text[match.start() : header_end])
    for block in _PEM_BLOCK.finditer(text):
        out.taken.append(block.span())  # certificates and public keys: their base64 is no secret


# --- Provider tokens and bare base64 --------------------------------------------------------------

# Characters a token is made of. A colon is not one: "https://", "2026-01-02T03:04" and "token:"
# split there, so a token may begin right after it.
_RUN_CHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-.+/=~$%@&!^#"
_RUN_TABLE = bytes(ord("a") if chr(code) in _RUN_CHARS else ord(" ") for code in range(256))
_RUN_MIN = b"a" * 16  # the shortest token worth a look; provider tokens are 20+ characters
_TOKEN_START = re.compile(r"[=/@]")
_BASE64_VALUE = re.compile(r"[A-Za-z0-9+/]{32,}={0,2}")
_DIGEST_CONTEXT = re.compile(r"(?:sha\d*|md5|blake\w*|h\d|hash|digest|checksum|integrity|etag|fingerprint|sum)\W*$")
_BINARY_FORMATS = (
    b"\x89PNG",
    b"\xff\xd8\xff",
    b"GIF8",
    b"%PDF",
    b"\x1f\x8b",
    b"PK\x03\x04",
    b"RIFF",
    b"\x00\x00\x00",
    b"0\x82",
)


def _base64_of_ordinary_data(value: str) -> bool:
    """Base64 that decodes to text, a known file format or an SSH/DER key structure."""
    try:
        raw = base64.b64decode(value + "=" * (-len(value) % 4), validate=True)
    except (binascii.Error, ValueError):
        return False
    if raw.startswith(_BINARY_FORMATS):
        return True
    try:
        decoded = raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return sum(ch.isprintable() or ch in "\n\r\t" for ch in decoded) >= 0.95 * len(decoded)


def _is_random_base64(text: str, start: int, value: str) -> bool:
    if not ("+" in value or "/" in value or value.endswith("=")):
        return False  # plain alphanumerics this long are ids, slugs and addresses as often as keys
    if not (any(c.isupper() for c in value) and any(c.islower() for c in value) and any(c.isdigit() for c in value)):
        return False
    if shannon_entropy(value) < 4.0 or looks_wordy(value) or _base64_of_ordinary_data(value):
        return False
    return _DIGEST_CONTEXT.search(text[max(0, start - 24) : start].lower()) is None


def _runs(marks: bytes) -> list[tuple[int, int]]:
    """Spans of 16+ token characters, found by substring search in the translated text."""
    spans = []
    begin = marks.find(_RUN_MIN)
    while begin != -1:
        end = marks.find(b" ", begin)
        if end == -1:
            end = len(marks)
        spans.append((begin, end))
        begin = marks.find(_RUN_MIN, end)
    return spans


def _scan_tokens(text: str, runs: list[tuple[int, int]], out: _Findings) -> None:
    for begin, end in runs:
        chunk = text[begin:end]
        starts = [begin]
        if begin and text[begin - 1] == "\\" and chunk[0] in "nrt":
            starts.append(begin + 1)  # a token right after an escaped newline in JSON
        if _TOKEN_START.search(chunk):
            starts.extend(m.end() for m in _TOKEN_START.finditer(text, begin, end) if m.end() < end)
        for start in starts:
            for rule in RULES_BY_HEAD.get(text[start : start + 2], ()):
                match = rule.pattern.match(text, start, end)
                if match is not None:
                    if rule.accepts(match.group()):
                        out.add(start, match.end(), rule.kind, match.group())
                    break
        for inner in INNER_RULES:
            if inner.needle in chunk:
                for match in inner.pattern.finditer(text, begin, end):
                    if inner.accepts(match.group()):
                        out.add(match.start(), match.end(), inner.kind, match.group())
        if chunk.startswith("//"):
            continue  # a URL: its path carries random ids; its secrets have named rules
        for start in starts:
            if start != begin and text[start - 1] != "=":
                continue
            match = _BASE64_VALUE.match(text, start, end)
            if match is not None and match.end() == end and _is_random_base64(text, start, match.group()):
                out.later.append((start, end, "high-entropy base64 string", match.group()))


_TELEGRAM = re.compile(r"(?<![0-9])[0-9]{8,10}:AA[A-Za-z0-9_\-]{33}(?![A-Za-z0-9_\-])")


def _scan_telegram(text: str, out: _Findings) -> None:
    for match in _TELEGRAM.finditer(text):
        if not is_placeholder(match.group()[match.group().index(":") + 3 :]):
            out.add(match.start(), match.end(), "Telegram bot token", match.group())


# --- gitleaks' rules ------------------------------------------------------------------------------

# An identifier standing alone (a commit, a UUID, a digest) is what notes are full of; a gitleaks
# rule that would take one with no key in front of it (Sourcegraph's bare 40-hex alternative,
# tried whenever a note names Sourcegraph) is overruled here.
_BARE_IDENTIFIER = re.compile(
    r"[0-9a-f]{7,40}|[0-9a-f]{64}|[0-9a-f]{96}|[0-9a-f]{128}|[0-9A-F]{40}|[0-9A-F]{64}"
    r"|[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
)
_KEY_BEFORE = re.compile(r"[=:>,]\s*[\"'`]?\s*$")


def _scan_gitleaks(text: str, lowered: str, has_run: bool, out: _Findings) -> None:
    for start, end, kind, secret in gitleaks.find(gitleaks.rule_set(), text, lowered, has_run):
        if not out.free(start, end) or is_placeholder(secret) or looks_wordy(secret):
            continue  # "ASIAPACIFICSOUTHEAST" is a region's name in capitals, not a key id
        if _BARE_IDENTIFIER.fullmatch(secret) and not _KEY_BEFORE.search(text, max(0, start - 8), start):
            continue
        out.add(start, end, kind, secret)


# --- Credentials in URLs --------------------------------------------------------------------------

_WHITESPACE = re.compile(r"\s")
_URL_USER = re.compile(r"[^\s:/?#@\[\]\"'<>]*")
_URL_HOST = re.compile(r"[A-Za-z0-9\[]")
_MULTI_HOST = re.compile(r"[^:,]*:\d+,")
# Hosts reserved for documentation (RFC 2606/6761): credentials there authenticate nowhere.
_DOCUMENTATION_HOST = re.compile(r"(?:.*\.)?example\.(?:com|org|net)|.*\.(?:example|test|invalid)")


def _scan_urls(text: str, out: _Findings) -> None:
    """``scheme://user:password@host``: the password may hold any character but space and ``@``."""
    position = text.find("://")
    while position != -1:
        begin = position + 3
        space = _WHITESPACE.search(text, begin)
        token = text[begin : space.start() if space else len(text)]
        position = text.find("://", begin)
        at = token.rfind("@")
        if at <= 0:
            continue
        userinfo, offset = token[:at], 0
        multi = _MULTI_HOST.match(userinfo)
        while multi is not None:  # "h1:123,u:p@h2": the credentials are the last host's
            offset += multi.end()
            multi = _MULTI_HOST.match(userinfo, offset)
        user = _URL_USER.match(userinfo, offset)
        if user is None or user.end() >= len(userinfo) or userinfo[user.end()] != ":":
            continue
        password = userinfo[user.end() + 1 :]
        host = token[at + 1 :]
        if "://" in password or not _URL_HOST.match(host):
            continue
        host_name = re.split(r"[:/?#]", host, maxsplit=1)[0].lower()
        if len(password) >= 4 and not is_placeholder(password) and not _DOCUMENTATION_HOST.fullmatch(host_name):
            start = begin + user.end() + 1
            out.add(start, start + len(password), "credentials in URL", password)


# curl's -u/--user USER:PASSWORD (gitleaks' rule wants a password of word characters only).
_CURL_USER = re.compile(
    r"""\bcurl\b[^\n]*?[ \t](?:-u|--user)(?:=|[ \t]+)"""
    r"""(?P<q>['"]?)(?P<user>[^\s:'"]*):(?P<password>[^\s'"]+)(?P=q)(?=\s|$)"""
)


def _scan_curl(text: str, out: _Findings) -> None:
    for match in _CURL_USER.finditer(text):
        password = match.group("password")
        if len(password) >= 4 and not is_placeholder(password) and not password.startswith("$"):
            out.add(match.start("password"), match.end("password"), "curl user credentials", password)


# --- Secret-named assignments ---------------------------------------------------------------------

_KEY_NEEDLES = ("pass", "pwd", "secret", "token", "key", "cred", "auth", "sig")
_KEY_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")

# Operator between a key and its value, allowing quotes (JSON, escaped JSON) and Markdown bold. A
# colon needs a space or a quote beside it (YAML, JSON): "secret:prod" in an ARN assigns nothing.
_OPERATOR = (
    r"""(?:\\?["'][*]{0,2}[ \t]*:|[*]{0,2}[ \t]*:(?=[ \t*]|\\?["'`])|\\?["']?[*]{0,2}[ \t]*(?::=|=>|=))"""
    r"""[ \t]*(?:[*]{1,2}[ \t]*)?"""
)
_QUOTED = (
    r'\\"(?P<eq>(?:[^"\\\n]|\\[^"\n]){1,2048}?)\\"'
    r'|"(?P<dq>(?:[^"\\\n]|\\.){1,2048}?)"'
    r"|'(?P<sq>[^'\n]{1,2048})'"
    r"|`(?P<bq>[^`\n]{1,2048})`"
)
_BARE = r"""(?P<bare>[^\s"'`,;]{1,2048})"""
_VALUE = re.compile(rf"{_OPERATOR}(?:{_QUOTED}|{_BARE})")
# A value after a secret-named flag; one starting with "-" only when it is long (``--token -fBjK9…``),
# so that ``--password --verbose`` never takes the next flag for the password.
_FLAG_VALUE = re.compile(
    rf"""[ \t]+(?:{_QUOTED}|(?P<flagged>(?:[^\s"'`,;\-]|-(?=[^\s"'`,;\-]{{11}}))[^\s"'`,;]{{0,2047}}))"""
)
_AUTH_VALUE = re.compile(
    r"""\\?["']?[ \t]*[:=][ \t]*\\?["']?(?:bearer|basic|token|bot)[ \t]+(?P<secret>[A-Za-z0-9._~+/=\-]{8,})""",
    re.IGNORECASE,
)


# An unquoted value that calls or subscripts a (dotted) name, closed on the same line: code. A
# ``.env`` password holding a bracket (``Xk9(2mQ``) does not close it and is still judged.
_CODE_EXPRESSION = re.compile(
    r"(?:(?:await|new|yield)[ \t]+)?[A-Za-z_$][\w$]*(?:(?:\.|::|->|\?\.)[A-Za-z_$][\w$]*)*"
    r"[ \t]*(?:\([^\n]*\)|\[[^\n]*\])"
)


def _assignment_value(match: re.Match[str]) -> tuple[str, int, bool]:
    for group in ("eq", "dq", "sq", "bq", "bare", "flagged"):
        value = match.groupdict().get(group)
        if value is not None:
            start = match.start(group)
            if group in ("bare", "flagged"):
                value = value.rstrip(")]}>")
            return value, start, group not in ("bare", "flagged")
    raise AssertionError("the value patterns always capture a value")


def _lowered(text: str) -> str:
    lowered = text.lower()
    if len(lowered) == len(text):
        return lowered
    # Some characters lower to two ("İ"): keep offsets aligned with the original text.
    return "".join(ch.lower() if len(ch.lower()) == 1 else ch for ch in text)


def _scan_assignments(text: str, lowered: str, out: _Findings) -> None:
    """``lowered`` is ``text`` in lower case, character for character."""
    seen: set[int] = set()
    size = len(text)
    for needle in _KEY_NEEDLES:
        hit = lowered.find(needle)
        while hit != -1:
            left, right = hit, hit + len(needle)
            while left and text[left - 1] in _KEY_CHARS:
                left -= 1
            while right < size and text[right] in _KEY_CHARS:
                right += 1
            hit = lowered.find(needle, right)
            if left in seen:
                continue
            seen.add(left)
            raw_key = text[left:right]
            match = _VALUE.match(text, right)
            if match is None and raw_key.startswith("-"):
                match = _FLAG_VALUE.match(text, right)  # --password VALUE
            header = _AUTH_VALUE.match(text, right) if match is not None else None
            if match is None:
                continue
            kind = secret_key_kind(raw_key.strip("-."))
            if kind is None:
                continue
            if kind == AUTHORIZATION:
                if header is not None:
                    value = header.group("secret")
                    if not is_placeholder(value) and any(c.isdigit() for c in value):
                        out.add(header.start("secret"), header.end("secret"), kind, value)
                continue
            value, start, quoted = _assignment_value(match)
            if not quoted and _CODE_EXPRESSION.match(text, start):
                continue  # pwd = os.getcwd(), token = request.headers["X"]: code, not a credential
            if is_secret_value(value, password=kind == PASSWORD):
                out.add(start, start + len(value), kind, value)


# --- Putting it together --------------------------------------------------------------------------

# Base64 payloads of data URIs (inline images) are opaque; nothing inside them is reported.
_DATA_URI = re.compile(r"data:[\w.+/-]*(?:;[\w.+-]+=?[\w.+-]*)*;base64,[A-Za-z0-9+/=]+")
_HTML_HINT = re.compile(r"</[A-Za-z]|&(?:quot|#\d+|#x[0-9a-fA-F]+|lt|gt|amp|apos);")
_HTML_TAG = re.compile(r"<[^<>\n]*>")
_HTML_TAG_MULTILINE = re.compile(r"<[^<>]*\n[^<>]*>")


def _scan_one(text: str) -> list[Found]:
    out = _Findings()
    if "base64," in text:
        out.taken.extend(m.span() for m in _DATA_URI.finditer(text))
    if "-----BEGIN" in text:
        _scan_private_keys(text, out)
    # One byte a character, so offsets agree with ``text`` (non-ASCII becomes "?", no token's).
    runs = _runs(text.encode("ascii", "replace").translate(_RUN_TABLE))
    _scan_tokens(text, runs, out)
    lowered = _lowered(text)
    _scan_gitleaks(text, lowered, bool(runs), out)
    if "curl" in lowered:
        _scan_curl(text, out)
    if ":AA" in text:
        _scan_telegram(text, out)
    if "://" in text:
        _scan_urls(text, out)
    # Unrolled rather than any(...) over _KEY_NEEDLES: this line runs for every session event.
    if (
        "pass" in lowered or "pwd" in lowered or "secret" in lowered or "token" in lowered
        or "key" in lowered or "cred" in lowered or "auth" in lowered or "sig" in lowered
    ):  # fmt: skip
        _scan_assignments(text, lowered, out)
    for found in out.later:
        out.add(*found)
    return out.items


def _strip_markup(text: str) -> str:
    """Text of HTML output as a reader sees it; tags keep their newlines so lines still line up."""
    no_tags = _HTML_TAG.sub("", text)
    if "\n" in no_tags and "<" in no_tags:
        no_tags = _HTML_TAG_MULTILINE.sub(lambda m: "\n" * m.group().count("\n"), no_tags)
    return html.unescape(no_tags)


# No rule finds anything in fewer characters: an assignment is a key, an operator and a value of
# 8 or more; every token and gitleaks secret is longer. Frontmatter keys and enum values stop here.
_SHORTEST_FINDING = 10

# Texts a scan found clean, so the unit of work's own scan of a record an entry point has just
# checked costs a dictionary look-up. Only long texts are kept (a short one scans in microseconds)
# and only a few (oldest dropped first).
_CLEAN_MIN = 256
_CLEAN_MAX = 256 << 10
_CLEAN_KEEP = 64
_clean: dict[str, None] = {}


def _known_clean(text: str) -> bool:
    if len(text) < _CLEAN_MIN:
        return False
    # A body written with a final newline added (append) is the text the entry point checked.
    return text in _clean or (text.endswith("\n") and text[:-1] in _clean)


def _remember_clean(text: str) -> None:
    if _CLEAN_MIN <= len(text) <= _CLEAN_MAX:
        _clean[text] = None
        while len(_clean) > _CLEAN_KEEP:
            try:
                del _clean[next(iter(_clean))]
            except (KeyError, RuntimeError, StopIteration):  # another thread trimmed it first
                break


def scan_text(text: str, where: str = "text") -> list[SecretFinding]:
    """Suspected secrets in ``text``, in order of position; ``where`` labels every finding.

    HTML (the built site) is also scanned as its visible text, so a credential split across
    syntax-highlighting spans or written with ``&quot;`` entities is still found. This is also
    the call for a record file's whole text (frontmatter included: ``password: …`` in YAML is
    an assignment like any other), with ``where`` naming the file.
    """
    if len(text) < _SHORTEST_FINDING or _known_clean(text):
        return []
    variants = [text]
    if ("<" in text or "&" in text) and _HTML_HINT.search(text):
        variants.append(_strip_markup(text))
    findings: list[SecretFinding] = []
    seen: set[tuple[str, int, str]] = set()
    for variant in variants:
        for start, _end, kind, secret in sorted(_scan_one(variant)):
            line = variant.count("\n", 0, start) + 1
            if (kind, line, secret) in seen:
                continue
            seen.add((kind, line, secret))
            findings.append(SecretFinding(kind, where, line, mask_secret(secret)))
    findings.sort(key=lambda f: f.line)
    if not findings:
        _remember_clean(text)
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
        kind = secret_key_kind(key) if key is not None else None
        named = not found and kind is not None and kind != AUTHORIZATION
        if named and is_secret_value(node, password=kind == PASSWORD):
            found = [SecretFinding(str(kind), path, 0, mask_secret(node))]
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


def scan_record(body: str, frontmatter: Mapping[str, Any] | None = None) -> list[SecretFinding]:
    """Suspected secrets in a record's body (``where`` "body") and frontmatter."""
    findings = scan_text(body, where="body")
    if frontmatter:
        findings.extend(scan_frontmatter(frontmatter))
    return findings


def assert_no_secrets(body: str, frontmatter: Mapping[str, Any] | None = None, *, subject: str = "") -> None:
    """Raise :class:`SafetyViolation` naming the first finding if body or frontmatter holds one.

    ``subject`` (a record's path) is named in the message when given."""
    findings = scan_record(body, frontmatter)
    if not findings:
        return
    more = len(findings) - 1
    suffix = f" and {more} more" if more else ""
    target = f" {subject}" if subject else ""
    raise SafetyViolation(
        f"refusing to write{target}: {findings[0].describe()}{suffix}",
        details={"findings": [finding.to_dict() for finding in findings]},
    )
