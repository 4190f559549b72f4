"""What ``config.json`` says about the files compiled for agents.

``agents.maxBytes`` is the budget of the marked block (these files are read into every session of
every agent, so the block stays small: 6 KB by default); ``agents.rules`` names the agents whose
path-scoped rule files are written; ``site.url`` is where the vault's site is published, so each
record in the block links to its page. They are team policy: every clone compiles the same files.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from memosite.config import VaultConfig
from memosite.errors import InvalidArguments

DEFAULT_MAX_BYTES = 6 * 1024
MIN_MAX_BYTES = 1024
# Every session of every agent reads the block: beyond this it is no longer a brief (and the
# brief it is chosen from is read no further).
MAX_MAX_BYTES = 64 * 1024
RULE_AGENTS = ("cursor", "claude", "copilot")
# A site address is written into Markdown links and frontmatter-free text: plain http(s), no
# spaces, quotes, angle brackets or parentheses that could end the link early.
_SITE_URL = re.compile(r"^https?://[^\s\"'<>()\[\]\\`]+$")


def check_max_bytes(value: Any, name: str) -> int:
    """``value`` as a block budget, or INVALID_ARGUMENTS naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, int) or not MIN_MAX_BYTES <= value <= MAX_MAX_BYTES:
        raise InvalidArguments(f"invalid {name} {value!r}: expected an integer from {MIN_MAX_BYTES} to {MAX_MAX_BYTES}")
    return value


def check_site_url(value: Any, name: str) -> str:
    """``value`` as a site address ending in ``/``, or INVALID_ARGUMENTS naming ``name``."""
    if not isinstance(value, str) or not _SITE_URL.match(value.strip()):
        raise InvalidArguments(
            f"invalid {name} {value!r}: expected an http(s) address such as https://team.example/memory/"
        )
    return value.strip().rstrip("/") + "/"


@dataclass(frozen=True)
class AgentFilesSettings:
    max_bytes: int = DEFAULT_MAX_BYTES
    site_url: str | None = None
    rule_agents: tuple[str, ...] = RULE_AGENTS

    @classmethod
    def from_config(cls, config: VaultConfig) -> AgentFilesSettings:
        """The settings ``config.json`` holds; a bad value fails here with its key named."""
        agents = _section(config.raw, "agents")
        site = _section(config.raw, "site")
        max_bytes = check_max_bytes(agents.get("maxBytes", DEFAULT_MAX_BYTES), "agents.maxBytes")
        url = site.get("url")
        site_url = check_site_url(url, "site.url") if url is not None else None
        rules = agents.get("rules", list(RULE_AGENTS))
        if not isinstance(rules, list) or any(agent not in RULE_AGENTS for agent in rules):
            raise InvalidArguments(f"invalid agents.rules {rules!r}: expected a list of {', '.join(RULE_AGENTS)}")
        return cls(max_bytes, site_url, tuple(agent for agent in RULE_AGENTS if agent in rules))


def _section(raw: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = raw.get(key, {})
    if not isinstance(value, Mapping):
        raise InvalidArguments(f"config.json: {key} must be an object")
    return value
