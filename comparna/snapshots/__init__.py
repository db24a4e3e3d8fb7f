"""Dataset snapshots: numbered, dated, immutable archives of a dataset with its predictions and counts.

``models`` (the row; its table stays in the ``comparna`` app), ``archive`` (PURE: writing and verifying the
tar.gz), ``columns`` (the columns of every archived table, for export and import alike), ``contents`` (what a
snapshot holds, and its identity), ``export``, ``restore``, ``lifecycle`` (numbering, building, snapshot
when changed), ``pairs`` (the pair download), ``views``, ``urls``, ``tasks``, ``templates/``,
``templatetags/`` and ``management/commands/`` (make_snapshot, import_snapshot, verify_snapshot).

Call chain: ``make_snapshot_if_changed`` (after an import, or when rankings changed) → ``build_snapshot_task``
→ ``build_snapshot`` → ``write_snapshot_archive`` → the pure :mod:`comparna.snapshots.archive`.
"""
