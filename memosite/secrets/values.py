"""What a secret value looks like: random, not a placeholder, not a word, not a reference.

Every rule that judges a value (an assignment's right-hand side, a frontmatter value under a
secret-named key, a provider token's body, a URL's password) asks these functions, so a
placeholder is a placeholder everywhere and nowhere because it merely *contains* a word.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from functools import lru_cache

# The 300 most frequent letter pairs in the words of Python's standard library (identifiers,
# comments, docstrings, split at case changes): 98 % of the pairs in English-like code text, 44 %
# of the pairs in uniformly random letters.
COMMON_BIGRAMS = frozenset(
    """ab ac ad af ag ai ak al am an ap ar as at au av aw ax ay ba bc be bi bj bl bo br bs bu by ca
    cc ce ch ci ck cl cm co cr cs ct cu cy da dd de dg di dl do dr ds dt du dy ea eb ec ed ee ef
    eg ei ek el em en eo ep eq er es et ev ew ex ey fa fd fe ff fi fl fo fr fs ft fu ga ge gg gh
    gi gl gn go gr gs gu ha he hi ho hr ht hu ia ib ic id ie if ig il im in io ip ir is it iv ix
    iz je jo ka ke ki ks kw la lb ld le lf li ll lo lp ls lt lu ly ma mb me mi ml mm mo mp ms mt
    mu na nc nd ne nf ng ni nk nl nn no np ns nt nu nv ny oa ob oc od oe of og oi ok ol om on oo
    op or os ot ou ov ow ox pa pd pe pi pl po pp pr ps pt pu py qu ra rc rd re rf rg ri rk rl rm
    rn ro rp rr rs rt ru rv ry sa sc se sg sh si sk sl sm so sp ss st su sy ta tc td te tf th ti
    tk tl tm to tp tr ts tt tu tw ty ua ub uc ud ue uf ug ui ul um un uo up ur us ut va ve vi wa
    we wh wi wn wo wr ws xa xc xe xi xp xt ye yn yp yr ys yt ze zi""".split()  # noqa: SIM905 (a word list reads better as text)
)
_VOWELS = frozenset("aeiouy")

_WORD_RUN = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])")
_DIGIT_RUN = re.compile(r"[0-9]+")
_LETTER_DIGIT_SEAM = re.compile(r"(?<=[A-Za-z])(?=[0-9])|(?<=[0-9])(?=[A-Za-z])")
_SEPARATOR = re.compile(r"[_\-./:]")
_HEX = re.compile(r"[0-9a-f-]+|[0-9A-F-]+")
_WORD_SPLIT = re.compile(r"[^A-Za-z0-9]+|(?<=[a-z])(?=[A-Z])|(?<=[A-Za-z])(?=[0-9])|(?<=[0-9])(?=[A-Za-z])")


def shannon_entropy(value: str) -> float:
    size = len(value)
    return -sum(n / size * math.log2(n / size) for n in Counter(value).values())


def _is_word(run: str) -> bool:
    """A run of letters that reads as a word: vowels, short consonant clusters, common pairs."""
    low = run.lower()
    cluster = 0
    has_vowel = False
    for ch in low:
        if ch in _VOWELS:
            cluster, has_vowel = 0, True
        else:
            cluster += 1
            if cluster > 4:
                return False
    if not has_vowel:
        return False
    pairs = len(low) - 1
    common = sum(1 for i in range(pairs) if low[i : i + 2] in COMMON_BIGRAMS)
    return common >= pairs - pairs // 4  # compounds hold a rare pair at the seam ("getpass": "tp")


def word_share(value: str) -> float:
    """The share of ``value``'s letters (a run of digits counting as one) in word-like runs.

    Calibrated on the standard library: 94 % of its identifiers of 8+ characters reach 0.6,
    0.12 % of random 16-40 character values do.
    """
    letters = covered = 0
    for run in _WORD_RUN.findall(value):
        letters += len(run)
        if len(run) >= 3 and _is_word(run):
            covered += len(run)
    if not letters:
        return 0.0
    return covered / (letters + len(_DIGIT_RUN.findall(value)))


def looks_wordy(value: str) -> bool:
    """Made of words (``ProdDatabaseCreds``, ``rotated-by-ops``, ``os.environ``), not drawn at random."""
    if _HEX.fullmatch(value) and any(ch.isdigit() for ch in value):
        return False  # hex digits spell "bead" or "cafe" by chance; hex is never prose
    if len(_LETTER_DIGIT_SEAM.findall(value)) >= 4 and not _SEPARATOR.search(value):
        return False  # "MVIAP8IZI5FOS8NZ": names put digits at word ends (Ed25519PrivateKey, sha256sum)
    return word_share(value) >= 0.6


def _alphabet_size(value: str) -> int:
    """How many characters a generator of ``value`` drew from, judged by the classes it shows."""
    if _HEX.fullmatch(value):
        return 16
    lower = any(ch.islower() for ch in value)
    upper = any(ch.isupper() for ch in value)
    digit = any(ch.isdigit() for ch in value)
    symbol = any(not ch.isalnum() for ch in value)
    return 26 * lower + 26 * upper + 10 * digit + 32 * symbol


def looks_random(value: str) -> bool:
    """Whether ``value`` reads as machine-generated: letters that are no words, enough entropy."""
    size = len(value)
    alphabet = _alphabet_size(value)
    if value.isdigit() and size < 16:
        return False  # numbers, ports, phone numbers, timestamps
    if not value.isdigit() and not any(ch.isalpha() for ch in value):
        return False  # "12.50", "+1-555-0100": amounts and phone numbers
    # n random draws from k characters give close to min(log2 n, log2 k) bits per character
    # (99.9 % of 16-40 character draws reach 0.74 of it, hex 0.62); repeats far less.
    share = 0.55 if alphabet == 16 else 0.65
    if shannon_entropy(value) < share * min(math.log2(size), math.log2(max(alphabet, 2))):
        return False
    return not looks_wordy(value)


# --- Placeholders ---------------------------------------------------------------------------------

# Words a placeholder is made of ("your-api-key-here", "REPLACE_WITH_YOUR_TOKEN"). A value is a
# placeholder only when it consists of such words *entirely*: "secret_7Gk2pQ9..." is not.
_PLACEHOLDER_WORDS = frozenset(
    """your my our the a an api key keys token tokens secret secrets password passwd pass pwd
    passphrase here goes placeholder example examples sample dummy fake test testing changeme
    change me it this redacted removed hidden masked omitted elided snip insert replace with put
    enter set fill in todo tbd fixme value string default foo bar baz qux not real none null nil
    empty private access auth client app db database user admin some random long generated new
    actual of for to and or bot webhook service account prod production dev development staging
    local secure super strong very id abc xyz do use only demo mock stub sk pk ghp xoxb live""".split()  # noqa: SIM905 (a word list reads better as text)
)

# Well-known defaults and literal non-values: writing "postgres:postgres@localhost" in a setup
# note is not a leak, and refusing it would block the most common kind of memory.
_PLACEHOLDER_VALUES = frozenset(
    """null none nil undefined true false empty pass pwd test testing admin root guest user
    username postgres mysql default hunter2 letmein qwerty foo bar foobar baz abc123 p@ssw0rd
    passw0rd password1 secret123 changeit""".split()  # noqa: SIM905 (a word list reads better as text)
)

_TEMPLATE = re.compile(
    r"""
      <[^<>]*>                          # <your-token>
    | \[[^\[\]]*\]                      # [REDACTED]
    | \$\{[^}]*\}? | \$\{\{.*\}\}        # ${VAR}, ${VAR:-fallback}, ${{ secrets.X }}
    | \$\(?[A-Z_][A-Z0-9_]*\)? | \$\(?[a-z_][a-z0-9_]*\)?  # $VAR, $(cmd), $var: one case, not random
    | \$\(.*\)                          # $(pass show aws)
    | \{\{.*\}\} | \{%.*%\}             # {{ jinja }}, {% tag %}
    | %\(\w*\)s | %s | %\w+%            # %(name)s, %s, %WINDOWS_VAR%
    | \{\w*\}                           # {password}
    """,
    re.VERBOSE | re.DOTALL,
)
# Filler and masks: "xxxx", "****", "••••", "0000", "sk-...abcd", "ghp_abcd****wxyz".
_FILLER = re.compile(r"[xX*•.#_\-0…]+")
_MASK = re.compile(r"x{4,}|X{4,}|\*{3,}|•{3,}|…|\.\.\.")


def is_placeholder(value: str) -> bool:
    """``value`` itself stands in for a secret: a template, filler, a mask or placeholder words only."""
    low = value.lower()
    if low in _PLACEHOLDER_VALUES or _FILLER.fullmatch(value) or _TEMPLATE.fullmatch(value):
        return True
    if len(set(low)) <= 2 or _MASK.search(value):
        return True
    words = [word for word in _WORD_SPLIT.split(low) if word]
    return bool(words) and all(word in _PLACEHOLDER_WORDS or _FILLER.fullmatch(word) for word in words)


def is_fake_token_body(body: str) -> bool:
    """A provider prefix followed by filler: ``ghp_xxxx...``, ``sk-your-key-here``, ``npm_0000...``."""
    return len(set(body)) < 3 or is_placeholder(body)


# --- Values that are something else ---------------------------------------------------------------

_NOT_SECRET_SHAPE = re.compile(
    r"""
      \d{4}-\d{2}-\d{2}([T\ ].*)?                      # ISO date or timestamp
    | v?\d+(\.\d+)+([-+.][0-9A-Za-z.]+)?               # version number
    | [A-Za-z][A-Za-z0-9+.-]*://.*                      # URL (credentials have their own rule)
    """,
    re.VERBOSE,
)
_PATH_START = ("/", "./", "../", "~/", "$HOME/")
_WINDOWS_PATH = re.compile(r"[A-Za-z]:\\")
_CODE_PUNCTUATION = re.compile(r"[()\[\]{}]")
# settings.DB_PASSWORD, os.environ, cls.ssl_context, process.env.X: an attribute chain whose
# head is a word or a short lower-case name.
_ATTRIBUTE_CHAIN = re.compile(r"(?P<head>[A-Za-z_$][\w$]*)(?:(?:\.|::|->)[A-Za-z_$][\w$]*)+")


# Words a key's value repeats from its name ("api_key: secret-7Gk2…"): they make a random value
# read as words, so randomness is judged on what is left without them.
_SECRET_WORDS = re.compile(r"secret|token|api[_-]?key|password|passwd|apikey", re.IGNORECASE)


def _random_besides_secret_words(value: str) -> bool:
    if _SECRET_WORDS.search(value) is None:
        return False
    rest = "".join(part.strip("_-.:/") for part in _SECRET_WORDS.split(value))
    return len(rest) >= 10 and looks_random(rest)


def is_secret_value(value: str, *, password: bool = False) -> bool:
    """Whether a value assigned to a secret-named key is plausibly a real credential.

    ``password`` relaxes randomness for password-named keys: a person's password (``Summer2024!``,
    ``hunter22``) has words in it but still letters with digits or symbols.
    """
    if not 8 <= len(value) <= 2048 or any(ch.isspace() for ch in value):
        return False
    if is_placeholder(value) or _NOT_SECRET_SHAPE.fullmatch(value):
        return False
    if _random_besides_secret_words(value):
        return True  # "secret_8fJ2kQ9xLm4Pz", "Secret.X35DLrOz5jbghGzU": the name's word, then a key
    if (value.startswith(_PATH_START) or _WINDOWS_PATH.match(value)) and looks_wordy(value):
        return False
    if _CODE_PUNCTUATION.search(value) and looks_wordy(value):
        return False  # a call, a subscript: os.environ["X"], getpass.getpass()
    chain = _ATTRIBUTE_CHAIN.fullmatch(value)
    if chain is not None and (looks_wordy(chain["head"]) or re.fullmatch(r"_*[a-z]{1,5}", chain["head"])):
        return False
    if looks_random(value):
        return True
    if len(value) > 40 or any(ch in value for ch in "./:"):
        return False  # settings.DB_PASSWORD, vault:secret/db#password: a reference, not a password
    has_letter = any(ch.isalpha() for ch in value)
    has_digit = any(ch.isdigit() for ch in value)
    has_symbol = any(not ch.isalnum() and ch not in "-_" for ch in value)
    if not password:
        # A long value of letters and digits under a secret's name is a credential even when a
        # run of its letters happens to read like a word ("8XN9aiXldrianWSY", "2woouwserc63rffn").
        # Names stay names: "Ed25519PrivateKey" and "build2026release" are mostly whole words.
        return len(value) >= 16 and has_digit and not _SEPARATOR.search(value) and word_share(value) < 0.7
    return has_letter and (has_digit or has_symbol)


# --- Secret-named keys ------------------------------------------------------------------------------

_KEY_WORDS = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|[0-9]+")
# Words that may follow the secret word in a key name without changing what it names.
_KEY_SUFFIXES = frozenset({"value", "val", "str", "string", "b64", "base64", "hex", "raw", "text", "plain", "base"})
_KEY_MODIFIERS = frozenset(
    """api secret private access auth signing sign encryption enc master client app license account
    service admin bot webhook session hmac jwt aes root deploy write consumer shared storage
    subscription x cookie crypto integration personal""".split()  # noqa: SIM905 (a word list reads better as text)
)
_NOT_SECRET_TOKENS = frozenset(
    """next page continuation pagination cursor sync max num total input output prompt completion
    count limit csrf xsrf""".split()  # noqa: SIM905 (a word list reads better as text)
)

PASSWORD = "password assignment"
API_KEY = "API key assignment"
PRIVATE_KEY = "private key assignment"
TOKEN = "token assignment"
SECRET = "secret assignment"
AUTHORIZATION = "authorization header"
AWS_SECRET_KEY = "AWS secret access key"


@lru_cache(maxsize=4096)  # frontmatter and config keys repeat from record to record
def secret_key_kind(key: str) -> str | None:
    """The kind of secret a key names (``DB_PASSWORD`` → password), or None for other keys.

    Only the key's last word counts (``password_policy`` names a policy); a few suffixes such as
    ``_value`` or ``_base`` (Rails' ``secret_key_base``) are looked through.
    """
    words = [word.lower() for word in _KEY_WORDS.findall(key)]
    while len(words) > 1 and words[-1] in _KEY_SUFFIXES:
        words.pop()
    if not words:
        return None
    last = words[-1]
    before = words[-2] if len(words) > 1 else ""
    if last in ("pass", "pwd", "passphrase") or last.endswith(("password", "passwd")):
        return PASSWORD
    if last == "authorization":
        return AUTHORIZATION
    if last.endswith("secret") or last in ("credential", "credentials", "creds", "sig", "auth"):
        return SECRET
    if last.endswith("token") or last == "bearer":
        return None if before in _NOT_SECRET_TOKENS or last in ("csrftoken", "xsrftoken") else TOKEN
    if last.endswith("apikey") or (last == "key" and before == "api"):
        return API_KEY
    if last.endswith("privatekey") or (last == "key" and before == "private"):
        return PRIVATE_KEY
    if last == "key" and {"secret", "access"} <= set(words):
        return AWS_SECRET_KEY  # aws_secret_access_key, SecretAccessKey
    if last.endswith(("secretkey", "accesskey", "accountkey", "masterkey")) or (
        last == "key" and before in _KEY_MODIFIERS
    ):
        return SECRET
    return None
