"""Template tags linking ranking snapshots to the dataset snapshot that holds their data."""

from __future__ import annotations

from django import template

register = template.Library()


@register.simple_tag
def dataset_snapshot_of(ranking):
    """The dataset snapshot whose archive holds exactly the data ``ranking`` was computed on, or None."""
    from comparna.snapshots.service import snapshot_for_ranking

    return snapshot_for_ranking(ranking) if ranking is not None else None
