"""Trap classification (layer, module, tags) and recurrence: the same trap seen again is counted, not copied."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from memosite.text import jaccard, tokens

JACCARD_THRESHOLD = 0.7


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
# Whole words only: "tokens" in a lexer or "author" in a changelog are not security topics.
_SECURITY_RE = re.compile(
    r"\b(?:security|auth[nz]?|authenticat\w*|authori[sz]\w*|xss|csrf|sql injection|injection|secrets?"
    r"|credentials?|passwords?|(?:access|auth|api|bearer|csrf|refresh|session) tokens?|jwt|permissions?"
    r"|vulnerab\w*|cve-\d+|sanitiz\w*|sanitis\w*|privilege\w*)\b"
)
_TAG_RES = {
    "performance": re.compile(r"\b(?:slow\w*|latency|performance|n\+1|timeouts?|memory leaks?)"),
    "concurrency": re.compile(r"\b(?:race conditions?|races?|deadlocks?|locks?|locking|concurren\w*|threads?|async)\b"),
    "data-loss": re.compile(r"\b(?:data loss|corrupt\w*|lost writes?|truncat\w*)"),
}
_GENERIC_SEGMENTS = {"src", "lib", "app", "apps", "packages", "pkg", "internal", "tests", "test", "**", "*"}


__all__ = ["jaccard", "tokens"]  # re-exported: the recurrence rule is stated in their terms


def pattern_key(patterns: Iterable[str]) -> str:
    """Identity of a trap's path patterns: sorted, so order does not matter."""
    return "\n".join(sorted(set(patterns)))


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
    """Existing tags plus inferred ones; a security label anywhere is promoted into tags."""
    tags = [str(tag) for tag in frontmatter.get("tags") or []]
    haystack = f"{frontmatter.get('title', '')} {body}".lower()
    labels = {str(frontmatter.get(key, "")).strip().lower() for key in ("label", "category", "type")}
    if frontmatter.get("security") is True or "security" in labels or _SECURITY_RE.search(haystack):
        tags.append("security")
    for tag, pattern in _TAG_RES.items():
        if pattern.search(haystack):
            tags.append(tag)
    return list(dict.fromkeys(tags))


def classify_trap(frontmatter: dict[str, Any], body: str) -> None:
    """Fill a trap's missing layer, module and tags in place."""
    patterns = frontmatter.get("pathPatterns") or []
    if not frontmatter.get("layer"):
        frontmatter["layer"] = classify_layer(patterns, body)
    if not frontmatter.get("module"):
        module = classify_module(patterns)
        if module:
            frontmatter["module"] = module
    frontmatter["tags"] = classify_tags(frontmatter, body)


def is_recurrence(new_body: str, existing_body: str) -> bool:
    return jaccard(new_body, existing_body) >= JACCARD_THRESHOLD
