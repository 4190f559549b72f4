"""Team memory across machines: the vault's git history is the distributed engine.

``memosite sync`` (:func:`sync_vault`) commits pending local changes, fetches, merges the remote
record by record (never a conflict marker, never a lost version), lets purges travel as
tombstones, re-indexes what changed and pushes. :func:`list_conflicts`/:func:`resolve_conflict`
deal with the versions kept beside records (conflict sidecars); :func:`sync_state` is the sync part of
``memosite status``. The same rules run inside a plain ``git pull`` in the vault, through the merge
drivers :mod:`memosite.vaultgit` registers.

Entry points: :func:`memosite.sync.run.sync_vault`, :func:`memosite.sync.preview.preview_sync`,
:func:`memosite.sync.conflicts.list_conflicts`, :func:`memosite.sync.conflicts.resolve_conflict`,
:func:`memosite.sync.status.sync_state`.
"""
