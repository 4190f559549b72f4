"""Memory compiled into the files coding agents read in the product repository.

* :mod:`~memosite.agentfiles.compile` — ``memosite agents compile``: the marked block in
  ``AGENTS.md`` (and ``CLAUDE.md``, ``.github/copilot-instructions.md``) and the path-scoped rule
  files of Cursor, Claude Code and Copilot, with a manifest of what memosite wrote
  (:mod:`~memosite.agentfiles.repofiles`: where each file really lies, and that manifest).
* :mod:`~memosite.agentfiles.hooksettings` — ``memosite hooks install|uninstall|status``: the
  hook configuration of the agents that publish a hook protocol.

Nothing here runs from ``gc``, ``upsert`` or ``sync``: the product repository is written only when
a person asks.
"""

from __future__ import annotations
