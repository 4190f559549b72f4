"""gitleaks' maintained rule set, loaded from the vendored ``gitleaks.toml`` and run as gitleaks does.

The file beside this module is upstream's ``config/gitleaks.toml``, unmodified (its version,
commit and checksum in ``gitleaks.json``, its MIT licence in ``gitleaks.LICENSE``;
``scripts/update_gitleaks_rules.py`` replaces all three). It is read once, on the first scan.

Each rule is applied as gitleaks applies it: only when one of its ``keywords`` occurs in the
lower-cased text (the prefilter that keeps a hundred rules cheap), the secret is the rule's
``secretGroup`` or its first non-empty group, a secret whose Shannon entropy is at or below the
rule's ``entropy`` is dropped, and the global and per-rule allowlists (regexes on the secret,
the match or the line; stopwords) let a finding go. Two more gates keep session logging fast and
change nothing found: a rule whose every match holds a run of 16 token characters is only tried on
text that has one, and all keywords are found by one pass of one regex.

Rules not loaded (:data:`SKIPPED`): rules scoped to file paths a record never has (``*.tf``,
``*.yaml``, ``nuget.config``, ``*.php``, ``*.p12``), and ``generic-api-key``, whose job, a random
value behind a secret-named key, is done by memosite's own assignment rule, which knows code
(``pwd = os.getcwd()``) from a password.
"""

from __future__ import annotations

import json
import math
import re
import tomllib
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import cache, cached_property
from importlib import resources
from re import _parser as _sre  # type: ignore[attr-defined]
from typing import Any

from memosite.secrets.goregex import FLAGS, UnsupportedPattern, translate

RULE_FILE = "gitleaks.toml"
SOURCE_FILE = "gitleaks.json"
# memosite's assignment rule covers what this rule is for, and knows code from a credential.
REPLACED_RULES = frozenset({"generic-api-key"})
RUN_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-.+/=~$%@&!^#")
RUN_MIN = 16


@dataclass(frozen=True)
class Allowlist:
    """One allowlist: a finding matching any regex (on ``target``) or holding a stopword goes."""

    target: str  # "secret", "match" or "line"
    sources: tuple[str, ...]  # regexes in Python syntax
    stopwords: tuple[str, ...]

    @cached_property
    def regexes(self) -> tuple[re.Pattern[str], ...]:
        return tuple(re.compile(source, FLAGS) for source in self.sources)

    def allows(self, secret: str, match: str, line: str) -> bool:
        subject = match if self.target == "match" else line if self.target == "line" else secret
        if any(regex.search(subject) for regex in self.regexes):
            return True
        lowered = secret.lower()
        return any(word in lowered for word in self.stopwords)


@dataclass(frozen=True)
class Rule:
    """One gitleaks rule as memosite runs it."""

    rule_id: str
    description: str
    source: str  # the regex in Python syntax
    keywords: tuple[str, ...]
    entropy: float
    secret_group: int
    allowlists: tuple[Allowlist, ...]
    needs_run: bool  # every match holds a run of RUN_MIN token characters

    @cached_property
    def pattern(self) -> re.Pattern[str]:
        """Compiled on first use: a process meets the keywords of a few rules, not of all of them."""
        return re.compile(self.source, FLAGS)

    @property
    def kind(self) -> str:
        return f"{self.rule_id} (gitleaks)"

    def secret_span(self, match: re.Match[str]) -> tuple[int, int]:
        if self.secret_group and self.secret_group <= (self.pattern.groups or 0):
            return match.span(self.secret_group)
        for group in range(1, (self.pattern.groups or 0) + 1):
            start, end = match.span(group)
            if end > start:
                return start, end
        return match.span()


@dataclass(frozen=True)
class RuleSet:
    """The loaded rules, the global allowlist, and what was skipped and why."""

    version: str
    rules: tuple[Rule, ...]
    allowlists: tuple[Allowlist, ...]
    skipped: tuple[tuple[str, str], ...]  # (rule id, reason)
    keyword_source: str  # one regex of every keyword, in lower case (see :func:`_keyword_regex`)
    short_keywords: tuple[tuple[str, tuple[str, ...]], ...]  # (shared prefix, keywords) of rules needing no run
    by_keyword: dict[str, tuple[int, ...]]  # keyword → indexes into ``rules``

    @cached_property
    def keyword_pattern(self) -> re.Pattern[str]:
        """Compiled on first use (a text with a run of token characters): most texts a process
        scans, prose, never need it, and compiling it costs as much as reading the rules."""
        return re.compile(self.keyword_source, re.DOTALL)

    def candidates(self, lowered: str, has_run: bool) -> list[Rule]:
        """The rules whose keywords occur in ``lowered``, in file order."""
        if has_run:
            found = {match.group() for match in self.keyword_pattern.finditer(lowered)}
        else:
            # Ten substring tests (keywords grouped by a shared prefix: "xox" for xoxa, xoxo, …)
            # beat one regex pass over text that is mostly the letters these keywords start with.
            found = set()
            for prefix, keywords in self.short_keywords:
                if prefix in lowered:
                    found.update(keyword for keyword in keywords if keyword in lowered)
        if not found:
            return []
        chosen: set[int] = set()
        for keyword in found:
            chosen.update(self.by_keyword.get(keyword, ()))
        rules = [self.rules[index] for index in sorted(chosen)]
        return rules if has_run else [rule for rule in rules if not rule.needs_run]


def shannon_entropy(value: str) -> float:
    size = len(value)
    return -sum(n / size * math.log2(n / size) for n in Counter(value).values()) if size else 0.0


def compile_go(pattern: str) -> re.Pattern[str]:
    """A gitleaks (Go RE2) regex compiled for Python; raises ``UnsupportedPattern`` or ``re.error``."""
    return re.compile(translate(pattern), FLAGS)


def _allowlists(entries: Iterable[dict[str, Any]]) -> tuple[Allowlist, ...]:
    lists = []
    for entry in entries:
        if entry.get("paths") and entry.get("condition", "OR").upper() == "AND":
            continue  # tied to file paths: a record's path never matches them
        sources = tuple(translate(pattern) for pattern in entry.get("regexes", ()))
        stopwords = tuple(word.lower() for word in entry.get("stopwords", ()))
        if sources or stopwords:
            lists.append(Allowlist(entry.get("regexTarget", "secret"), sources, stopwords))
    return tuple(lists)


def parse_rules(text: str, version: str = "", needing_run: frozenset[str] | None = None) -> RuleSet:
    """Build the rule set from the text of a gitleaks configuration file.

    ``needing_run`` names the rules whose every match holds a run of token characters, as
    :func:`needs_run` finds (``gitleaks.json`` keeps the list, so a process need not parse every
    regex to know it); None works it out here. A rule missing from the list is tried on every text.
    """
    config = tomllib.loads(text)
    rules: list[Rule] = []
    skipped: list[tuple[str, str]] = []
    for entry in config.get("rules", ()):
        rule_id = str(entry.get("id", ""))
        reason = _skip_reason(entry)
        if reason is None:
            try:
                source = translate(entry["regex"])
                allowlists = _allowlists(entry.get("allowlists", ()))
            except UnsupportedPattern as exc:
                reason = f"its regex has no Python equivalent: {exc}"
        if reason is not None:
            skipped.append((rule_id, reason))
            continue
        rules.append(
            Rule(
                rule_id=rule_id,
                description=str(entry.get("description", "")),
                source=source,
                keywords=tuple(keyword.lower() for keyword in entry.get("keywords", ())),
                entropy=float(entry.get("entropy", 0.0)),
                secret_group=int(entry.get("secretGroup", 0)),
                allowlists=allowlists,
                needs_run=rule_id in needing_run if needing_run is not None else needs_run(source),
            )
        )
    keywordless = [rule.rule_id for rule in rules if not rule.keywords]
    if keywordless:
        # Every upstream rule has keywords; one without would have to run on every text.
        raise ValueError(f"gitleaks rules without keywords are not supported: {', '.join(keywordless)}")
    by_keyword: dict[str, set[int]] = {}
    for index, rule in enumerate(rules):
        for keyword in rule.keywords:
            by_keyword.setdefault(keyword, set()).add(index)
    # The keyword regex reports the longest keyword at a place; the shorter keywords it starts
    # with ("sk" in "sk_live") are there too.
    for keyword in by_keyword:
        for size in range(1, len(keyword)):
            if keyword[:size] in by_keyword:
                by_keyword[keyword] |= by_keyword[keyword[:size]]
    short = {keyword for rule in rules if not rule.needs_run for keyword in rule.keywords}
    global_list = config.get("allowlist")
    return RuleSet(
        version=version,
        rules=tuple(rules),
        allowlists=_allowlists([global_list] if isinstance(global_list, dict) else config.get("allowlists", ())),
        skipped=tuple(skipped),
        keyword_source=_keyword_regex(by_keyword),
        short_keywords=_grouped_by_prefix(short),
        by_keyword={keyword: tuple(sorted(indexes)) for keyword, indexes in by_keyword.items()},
    )


def _skip_reason(entry: dict[str, Any]) -> str | None:
    if entry.get("id") in REPLACED_RULES:
        return "memosite's assignment rule does its job and knows code from a secret"
    if "regex" not in entry:
        return "matches file names only"
    if "path" in entry:
        return f"applies only to files matching {entry['path']}, never a Markdown record"
    if entry.get("required") or entry.get("skipReport"):
        return "a composite rule (required parts)"
    return None


@cache
def rule_set() -> RuleSet:
    """The vendored rule set (read on first use, each regex compiled when first needed)."""
    info = source_info()
    text = resources.files("memosite.secrets").joinpath(RULE_FILE).read_text(encoding="utf-8")
    listed = info.get("rulesNeedingRun")
    needing_run = frozenset(str(rule) for rule in listed) if isinstance(listed, list) else None
    return parse_rules(text, str(info.get("version", "")), needing_run)


def source_info() -> dict[str, Any]:
    """``gitleaks.json``: the vendored file's version, commit, checksum, and the rules needing a run."""
    text = resources.files("memosite.secrets").joinpath(SOURCE_FILE).read_text(encoding="utf-8")
    info = json.loads(text)
    return info if isinstance(info, dict) else {}


def find(rules: RuleSet, text: str, lowered: str, has_run: bool) -> list[tuple[int, int, str, str]]:
    """(start, end, kind, secret) of every gitleaks finding in ``text``; ``lowered`` is its lower case."""
    candidates = rules.candidates(lowered, has_run)
    return list(_matches(rules, candidates, text)) if candidates else []


def _matches(rules: RuleSet, candidates: list[Rule], text: str) -> Iterator[tuple[int, int, str, str]]:
    for rule in candidates:
        try:
            pattern = rule.pattern
        except re.error:
            continue  # a hand-edited rule file's broken rule; the update script reports these
        for match in pattern.finditer(text):
            start, end = rule.secret_span(match)
            secret = text[start:end]
            if not secret or (rule.entropy and shannon_entropy(secret) <= rule.entropy):
                continue
            line_start = text.rfind("\n", 0, match.start()) + 1
            line_end = text.find("\n", match.end())
            line = text[line_start : line_end if line_end != -1 else len(text)]
            whole = match.group().strip("\n")
            if any(a.allows(secret, whole, line) for a in rules.allowlists) or any(
                a.allows(secret, whole, line) for a in rule.allowlists
            ):
                continue
            yield start, end, rule.kind, secret


# --- Building the gates ---------------------------------------------------------------------------


def _grouped_by_prefix(keywords: Iterable[str]) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """Keywords grouped by their first three characters, each group under its longest shared prefix."""
    groups: dict[str, list[str]] = {}
    for keyword in sorted(keywords):
        groups.setdefault(keyword[:3], []).append(keyword)
    return tuple((_shared_prefix(group), tuple(group)) for group in groups.values())


def _shared_prefix(words: list[str]) -> str:
    first, last = min(words), max(words)
    size = 0
    while size < len(first) and first[size] == last[size]:
        size += 1
    return first[:size]


def _keyword_regex(keywords: Iterable[str]) -> str:
    """One regex finding any of ``keywords``, as a trie so each position costs one branch."""
    trie: dict[str, Any] = {}
    for keyword in keywords:
        if keyword:
            node = trie
            for char in keyword:
                node = node.setdefault(char, {})
            node[""] = {}

    def emit(node: dict[str, Any]) -> str:
        branches = [re.escape(char) + emit(child) for char, child in sorted(node.items()) if char]
        if not branches:
            return ""
        body = branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"
        # Longest first: "sk_live" is reported rather than a shorter keyword it starts with.
        return f"(?:{body})?" if "" in node else body

    pattern = emit(trie)
    return pattern if pattern else r"(?!)"


def needs_run(source: str) -> bool:
    """Whether every match of ``source`` (Python syntax) holds a run of RUN_MIN token characters.

    Such a rule needs no look at a text without one. Anything the analysis does not understand
    counts as breaking a run, so it errs towards "no" (the rule is then tried on more texts)."""
    try:
        parsed = _sre.parse(source, FLAGS)
    except re.error:
        return False
    return _run_of_sequence(list(parsed))[1] >= RUN_MIN


# A run summary: (length of the run every match starts with, longest run inside, run it ends
# with, whether every character is a token character, minimum length).
_Run = tuple[int, int, int, bool, int]
_ZERO: _Run = (0, 0, 0, True, 0)
_BREAK: _Run = (0, 0, 0, False, 0)


def _run_of_sequence(items: list[Any]) -> _Run:
    total = _ZERO
    for op, av in items:
        total = _concat(total, _run_of_item(op, av))
    return total


def _concat(left: _Run, right: _Run) -> _Run:
    l_pre, l_in, l_suf, l_all, l_len = left
    r_pre, r_in, r_suf, r_all, r_len = right
    middle = l_suf + r_pre
    return (
        l_len + r_pre if l_all else l_pre,
        max(l_in, r_in, middle),
        r_len + l_suf if r_all else r_suf,
        l_all and r_all,
        l_len + r_len,
    )


def _run_of_item(op: Any, av: Any) -> _Run:
    name = str(op)
    if name == "LITERAL":
        return (1, 1, 1, True, 1) if chr(av) in RUN_CHARS else _BREAK
    if name == "IN":
        return (1, 1, 1, True, 1) if _set_is_token(av) else _BREAK
    if name in ("AT", "ASSERT", "ASSERT_NOT"):
        return _ZERO
    if name == "SUBPATTERN":
        return _run_of_sequence(list(av[-1]))
    if name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
        low, _high, sub = av
        inner = _run_of_sequence(list(sub))
        if low == 0:
            return _ZERO if inner[3] else _BREAK
        total = inner
        for _ in range(min(low, RUN_MIN + 1) - 1):
            total = _concat(total, inner)
        return total
    if name == "BRANCH":
        options = [_run_of_sequence(list(branch)) for branch in av[1]]
        return (
            min(o[0] for o in options),
            min(o[1] for o in options),
            min(o[2] for o in options),
            all(o[3] for o in options),
            min(o[4] for o in options),
        )
    return _BREAK


def _set_is_token(items: Any) -> bool:
    for op, av in items:
        name = str(op)
        if name == "LITERAL":
            if chr(av) not in RUN_CHARS:
                return False
        elif name == "RANGE":
            if not all(chr(code) in RUN_CHARS for code in range(av[0], av[1] + 1)):
                return False
        elif name == "CATEGORY":
            if str(av) not in ("CATEGORY_DIGIT", "CATEGORY_WORD"):
                return False
        else:
            return False  # NEGATE and anything else
    return True
