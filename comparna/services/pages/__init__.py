"""The numbers and pictures behind the web pages, one module per page (``rankings``, ``comparison``,
``methods``, ``targets``, ``site``), with what they share in ``common`` and the drawing in ``figures``.

Everything that depends only on an immutable :class:`~comparna.models.RankingSnapshot` is cached under a key
containing the snapshot's primary key, so it never needs invalidation. Per-target numbers (comparisons, CIs)
come from the stored scores of each method's current version; the engine itself is never re-run here except
for the one pair on a comparison page, with the snapshot's seed, to show the test's p-value.
"""
