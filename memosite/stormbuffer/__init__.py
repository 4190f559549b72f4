"""Stormbuffer-format stores: TOML ``+++`` records, strict validation, lifecycle, a project store,
and the bridge to memosite vaults.

Modules: :mod:`.model` (the record and its rules), :mod:`.codec` (files), :mod:`.lifecycle`
(transitions), :mod:`.store` (a ``.sbuf`` store on disk), :mod:`.validation` (checking files),
:mod:`.mapping` and :mod:`.bridge` (import into and export from a memosite project).
"""
