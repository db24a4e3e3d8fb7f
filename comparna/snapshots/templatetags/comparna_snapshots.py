"""Template tags linking ranking snapshots to the dataset snapshot that holds their data."""

from __future__ import annotations

from django import template

from comparna.services.progress import archive_state
from comparna.snapshots.lifecycle import snapshot_for_ranking

register = template.Library()


@register.simple_tag
def dataset_snapshot_of(ranking):
    """The dataset snapshot whose archive holds exactly the data ``ranking`` was computed on, or None."""
    return snapshot_for_ranking(ranking) if ranking is not None else None


@register.filter
def snapshot_state(snapshot):
    """A dataset snapshot's settled or provisional state (:func:`comparna.services.progress.archive_state`),
    None while it is not built or when its archive did not record it."""
    if snapshot is None or getattr(snapshot, "status", "") != "done":
        return None
    return archive_state(snapshot.contents)
