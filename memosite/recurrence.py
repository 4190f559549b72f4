"""Trap classification (layer, module, tags) and recurrence: the same trap seen again is counted, not copied.

Classification fills what a trap does not say. It reads the labels people write in trap bodies
first — ``**Layer**: Web``, ``**Module**: Checkout / Payments``, ``Category: Security`` (in English
and the other languages agents write in) — and only then guesses from the path patterns and the
words. Layer names people use (``frontend``, ``ui``, ``infra``, ``ops``, ``qa``, ``フロントエンド``,
``infraestrutura`` …) map into the seven layers; ``security`` and its translations (``segurança``,
``sécurité``, ``セキュリティ`` …) are not a layer and are promoted into ``tags``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from memosite.codelayers import clean_label, is_security_label, normalize_layer
from memosite.text import fold, jaccard, tokens

JACCARD_THRESHOLD = 0.7

# Labels people put at the start of a line of a trap body, in the languages agents write in.
_LABELS = {
    "layer": "layer camada capa couche schicht ebene livello laag слой レイヤー レイヤ 層 层 层级",
    "module": "module modulo modul component componente komponente area bereich モジュール 模块 модуль",
    "category": "category categoria categorie kategorie label type tipo typ topic カテゴリ カテゴリー 类别 分类 "
    "категория тип",
}
_LABEL_NAMES = {fold(name): label for label, text in _LABELS.items() for name in text.split()}
_LABEL_RE = re.compile(
    r"^[ \t]*(?:[-*+][ \t]+)?(?:\*\*|__)?[ \t]*(?P<name>[^\W\d_][^\W\d_ ]{0,24})[ \t]*(?:\*\*|__)?[ \t]*[:：]"
    r"[ \t]*(?:\*\*|__)?[ \t]*(?P<value>\S.*?)[ \t]*$",
    re.MULTILINE,
)
_FENCE_RE = re.compile(r"^[ \t]*(```|~~~).*?^[ \t]*\1[ \t]*$", re.MULTILINE | re.DOTALL)


# First matching rule wins; each is (layer, path fragments, body keywords).
_LAYER_RULES: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...] = (
    (
        "tests",
        ("tests/", "test/", "__tests__", "spec/", "_test.", ".test.", ".spec.", "test_", "conftest"),
        ("pytest", "flaky test", "unit test", "test suite", "fixture"),
    ),
    (
        "devops",
        (
            ".github/",
            ".gitlab",
            ".ci/",
            "dockerfile",
            "docker-compose",
            "k8s/",
            "helm/",
            "deploy",
            "ci.yml",
            "jenkinsfile",
            "makefile",
        ),
        ("ci pipeline", "deploy", "docker", "kubernetes", "github actions", "release pipeline"),
    ),
    (
        "infrastructure",
        ("infra/", "terraform", "migrations/", "db/", "database/", ".sql", "redis", "queue/"),
        ("database", "migration", "postgres", "sqlite", "redis", "terraform", "connection pool"),
    ),
    (
        "web",
        ("web/", "frontend/", "components/", "pages/", "public/", ".tsx", ".jsx", ".css", ".html", ".vue", ".svelte"),
        ("css", "browser", "frontend", "react", "dom ", "html"),
    ),
    (
        "domain",
        ("domain/", "models/", "entities/", "core/"),
        ("invariant", "business rule", "domain model", "aggregate"),
    ),
    ("application", ("src/", "lib/", "app/", "services/", "api/", "cmd/"), ()),
)
# Whole words only: "tokens" in a lexer or "author" in a changelog are not security topics. Matched
# on folded text, so the translations are spelled without their accents.
_SECURITY_RE = re.compile(
    r"\b(?:security|auth[nz]?|authenticat\w*|authori[sz]\w*|xss|csrf|sql injection|injection|secrets?"
    r"|credentials?|passwords?|(?:access|auth|api|bearer|csrf|refresh|session) tokens?|jwt|permissions?"
    r"|vulnerab\w*|cve-\d+|sanitiz\w*|sanitis\w*|privilege\w*"
    r"|seguranca|seguridad|securite|sicherheit\w*|sicurezza|beveiliging|безопасност\w*|уязвимост\w*)\b"
)
_TAG_RES = {
    "performance": re.compile(r"\b(?:slow\w*|latency|performance|n\+1|timeouts?|memory leaks?)"),
    "concurrency": re.compile(r"\b(?:race conditions?|races?|deadlocks?|locks?|locking|concurren\w*|threads?|async)\b"),
    "data-loss": re.compile(r"\b(?:data loss|corrupt\w*|lost writes?|truncat\w*)"),
}
_GENERIC_SEGMENTS = {"src", "lib", "app", "apps", "packages", "pkg", "internal", "tests", "test", "**", "*"}


__all__ = ["jaccard", "normalize_layer", "tokens"]  # re-exported: the rules are stated in their terms


def trap_occurrences(kind: str, value: Any) -> int:
    """How often a record was seen: a trap at least once (one without ``occurrences`` was seen
    once, as the views say), any other kind as recorded. :func:`occurrences_sql` is the same rule."""
    count = int(value or 0)
    return max(count, 1) if kind == "trap" else count


def trap_recurrence(
    frontmatter: Mapping[str, Any], *, seen_at: str, again: bool = False, succeeds: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The recurrence fields a trap is written with (``occurrences``, ``lastSeen``), as the changes
    to ``frontmatter`` they make: the one rule upsert and backfill apply.

    Seen ``again`` (an upsert found the same trap), it counts one more occurrence and was last seen
    at ``seen_at``. A new trap that rewords an older one (``succeeds``: that one's front matter)
    carries its count on, plus one. Any other trap counts at least once (:func:`trap_occurrences`)
    and, without a ``lastSeen``, was last seen at ``seen_at`` (the caller's best instant)."""
    if again:
        return {"occurrences": trap_occurrences("trap", frontmatter.get("occurrences")) + 1, "lastSeen": seen_at}
    changes: dict[str, Any] = {}
    if succeeds is not None:
        changes["occurrences"] = trap_occurrences("trap", succeeds.get("occurrences")) + 1
    elif frontmatter.get("occurrences") is None:
        changes["occurrences"] = 1
    if not frontmatter.get("lastSeen"):
        changes["lastSeen"] = seen_at
    return changes


def occurrences_sql(table: str = "") -> str:
    """:func:`trap_occurrences` over the index's ``kind``/``occurrences`` columns (of ``table``)."""
    prefix = f"{table}." if table else ""
    count = f"coalesce({prefix}occurrences, 0)"
    return f"(CASE WHEN {prefix}kind = 'trap' THEN max({count}, 1) ELSE {count} END)"


def pattern_key(patterns: Iterable[str]) -> str:
    """Identity of a trap's path patterns: sorted, so order does not matter."""
    return "\n".join(sorted(set(patterns)))


def body_labels(body: str) -> dict[str, list[str]]:
    """The labelled lines of a trap body (``**Layer**: Web``) by label (``layer``, ``module``,
    ``category``), in order; lines inside fenced code blocks are not labels."""
    found: dict[str, list[str]] = {}
    for match in _LABEL_RE.finditer(_FENCE_RE.sub("", body)):
        label = _LABEL_NAMES.get(fold(match.group("name")))
        value = clean_label(match.group("value"))
        if label is not None and value:
            found.setdefault(label, []).append(value)
    return found


def classify_layer(patterns: Iterable[str], body: str) -> str:
    paths = [pattern.lower() for pattern in patterns]
    text = body.lower()
    for layer, fragments, _ in _LAYER_RULES:
        if any(fragment in path for path in paths for fragment in fragments):
            return layer
    for layer, _, words in _LAYER_RULES:
        if any(word in text for word in words):
            return layer
    return "other"


def classify_module(patterns: Iterable[str]) -> str | None:
    for pattern in patterns:
        segments = [s for s in re.split(r"[\\/]", pattern) if s and s not in (".", "..")]
        meaningful = [s for s in segments[:-1] if s.lower() not in _GENERIC_SEGMENTS and "*" not in s]
        if meaningful:
            return meaningful[0]
        if segments and "*" not in segments[-1]:
            return re.sub(r"\.[^.]*$", "", segments[-1]) or None
    return None


def classify_tags(frontmatter: Mapping[str, Any], body: str) -> list[str]:
    """Existing tags plus inferred ones; a security label anywhere (frontmatter ``label``,
    ``category``, ``type`` or ``layer``, or a labelled line of the body, in any language) is
    promoted into tags."""
    tags = [str(tag) for tag in frontmatter.get("tags") or []]
    haystack = fold(f"{frontmatter.get('title', '')} {body}")
    written = body_labels(body)
    labels = [frontmatter.get(key) for key in ("label", "category", "type", "layer")]
    labels += [value for key in ("category", "layer") for value in written.get(key, [])]
    if (
        frontmatter.get("security") is True
        or any(is_security_label(label) for label in labels)
        or _SECURITY_RE.search(haystack)
    ):
        tags.append("security")
    for tag, pattern in _TAG_RES.items():
        if pattern.search(haystack):
            tags.append(tag)
    return list(dict.fromkeys(tags))


def trap_layer(frontmatter: Mapping[str, Any], body: str) -> str:
    """The layer of a trap: its own (a layer's other name normalised), else the body's ``Layer``
    label, else a guess from its path patterns and words."""
    own = normalize_layer(frontmatter.get("layer"))
    if own is not None:
        return own
    for value in body_labels(body).get("layer", []):
        layer = normalize_layer(value)
        if layer is not None:
            return layer
    return classify_layer(frontmatter.get("pathPatterns") or [], body)


def trap_module(frontmatter: Mapping[str, Any], body: str) -> str | None:
    """The module of a trap: its own, else the body's ``Module`` label, else its first meaningful
    path directory."""
    own = frontmatter.get("module")
    if isinstance(own, str) and own.strip():
        return own
    written = body_labels(body).get("module", [])
    return written[0] if written else classify_module(frontmatter.get("pathPatterns") or [])


def classify_trap(frontmatter: dict[str, Any], body: str) -> None:
    """Fill a trap's missing layer, module and tags in place (a layer written under another
    name is normalised)."""
    tags = classify_tags(frontmatter, body)  # before the layer is settled: a security "layer" is a tag
    frontmatter["layer"] = trap_layer(frontmatter, body)
    module = trap_module(frontmatter, body)
    if module:
        frontmatter["module"] = module
    frontmatter["tags"] = tags


def is_recurrence(new_body: str, existing_body: str) -> bool:
    return jaccard(new_body, existing_body) >= JACCARD_THRESHOLD
