"""Template tags for texts that depend on this instance (:mod:`comparna.services.instance_text`) and for the
thresholds of the verdicts (:mod:`comparna.rna.thresholds`), so that no template hard-codes either."""

from __future__ import annotations

from django import template

from comparna.rna import thresholds as _thresholds
from comparna.services import instance_text

register = template.Library()


@register.simple_tag
def ranking_schedule() -> str:
    """``{% ranking_schedule %}`` → "every 5 minutes" / "nightly at 02:30 UTC"."""
    return instance_text.ranking_schedule_text()


@register.simple_tag
def has_growing_dataset() -> bool:
    """``{% has_growing_dataset as growing %}``: whether a PDB (weekly-growing) dataset exists."""
    return instance_text.has_growing_dataset()


@register.simple_tag
def threshold(name: str):
    """``{% threshold "ALPHA" %}`` → 0.001: a constant of :mod:`comparna.rna.thresholds`."""
    return getattr(_thresholds, name)
