"""The layers of a product's code a record belongs to (``web``, ``domain`` …), and their other names.

``LAYERS`` is the closed set the ``layer`` field takes; :data:`LAYER_ALIASES` maps what people call
each layer, in English and the other languages agents write in (``frontend``, ``infra``, ``qa``,
``フロントエンド`` …), onto it; the front matter and the index hold the normalised name, so no query
needs the aliases. A record without a layer shows as ``other`` (:func:`shown_layer`).
"""

from __future__ import annotations

import re
from typing import Any

from memosite.text import fold

LAYERS = ("application", "domain", "web", "infrastructure", "tests", "devops", "other")
UNLAYERED = "other"

# What people call each layer, in English and the other languages agents write in.
_LAYER_ALIAS_TEXT = {
    "web": "web, front, frontend, front-end, front end, ui, ux, gui, client, browser, interface, interfaz, "
    "oberfläche, 前端, フロントエンド, フロント, 画面, фронтенд, веб",
    "infrastructure": "infrastructure, infra, ops, database, db, storage, persistence, platform, network, "
    "infraestrutura, infraestructura, infrastruktur, インフラ, 基础设施, инфраструктура",
    "tests": "tests, test, testing, qa, e2e, unit tests, integration tests, testes, teste, pruebas, テスト, 测试, "
    "тесты, тестирование",
    "devops": "devops, ci, cd, ci/cd, cicd, deploy, deployment, release, pipeline, build, デプロイ, 部署, 运维, деплой",
    "domain": "domain, business, business logic, core, model, domain model, domínio, dominio, domaine, domäne, "
    "ドメイン, 领域, 业务, домен",
    "application": "application, app, backend, back-end, back end, server, api, service, services, aplicação, "
    "aplicación, anwendung, アプリケーション, アプリ, バックエンド, 后端, 应用, бэкенд, приложение",
    "other": "other, misc, miscellaneous, general",
}
LAYER_ALIASES: dict[str, str] = {
    fold(alias.strip()): layer for layer, text in _LAYER_ALIAS_TEXT.items() for alias in text.split(",")
}
# "security" and its translations: a topic, promoted into tags, never a layer.
_SECURITY_TEXT = """
security sec appsec infosec segurança seguridad sécurité sicherheit sicurezza beveiliging bezpieczeństwo güvenlik
セキュリティ 安全 安全性 безопасность
"""
SECURITY_ALIASES = frozenset(fold(word) for word in _SECURITY_TEXT.split())
# A label's value may name several things ("Web / Payments", "infra and ops").
_VALUE_PARTS_RE = re.compile(r"\s*(?:[/,;|&+]|\band\b|\be\b|\by\b|\bund\b|\bet\b)\s*")


def clean_label(value: str) -> str:
    """A label's value without the Markdown around it (``**Web**`` → ``Web``) or doubled spaces."""
    return " ".join(value.strip().strip("*_`'\".").split())


def label_parts(folded: str) -> list[str]:
    """The names a folded label value holds (``web / payments`` → ``web``, ``payments``)."""
    return _VALUE_PARTS_RE.split(folded)


def normalize_layer(value: Any) -> str | None:
    """The layer a name stands for (``Frontend`` → ``web``, ``infra`` → ``infrastructure``,
    ``segurança`` → None: a topic, not a layer); None for anything that is not a layer's name."""
    if not isinstance(value, str):
        return None
    folded = fold(clean_label(value))
    if folded in LAYERS:
        return folded
    if folded in LAYER_ALIASES:
        return LAYER_ALIASES[folded]
    for part in label_parts(folded):
        if part in LAYERS or part in LAYER_ALIASES:
            return part if part in LAYERS else LAYER_ALIASES[part]
    return None


def shown_layer(layer: str | None) -> str:
    """The layer a record is shown and counted under: its own, ``other`` when it has none."""
    return layer or UNLAYERED


def is_security_label(value: Any) -> bool:
    """True when a label value names security (in any of the languages of ``SECURITY_ALIASES``)."""
    if not isinstance(value, str):
        return False
    folded = fold(clean_label(value))
    return folded in SECURITY_ALIASES or any(part in SECURITY_ALIASES for part in label_parts(folded))
