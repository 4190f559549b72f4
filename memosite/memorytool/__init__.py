"""Claude's memory tool on the vault: ``/memories`` paths onto records, and its six commands.

:mod:`.paths` checks and reads paths, :mod:`.tree` lists what the model may read, :mod:`.reading`
shows it, :mod:`.edits` turns a file's text into record fields, :mod:`.backend` runs the commands
through the store and :mod:`.texts` holds what the tool answers. The SDK classes
(:mod:`memosite.integrations.anthropic`) and the MCP ``memory`` tool are thin adapters over
:class:`~.backend.MemoryBackend`.
"""

from __future__ import annotations

from memosite.memorytool.backend import COMMANDS, DEFAULT_IDLE_TTL, MAX_FILE_BYTES, MemoryBackend

__all__ = ["COMMANDS", "DEFAULT_IDLE_TTL", "MAX_FILE_BYTES", "MemoryBackend"]
