"""Template tags for what is still pending behind a page's figures (issue 37: say it wherever it matters)."""

from __future__ import annotations

from django import template

from comparna.services import tallies

register = template.Library()


@register.simple_tag
def families_status(subset) -> dict:
    """``{"assigned", "total", "pending"}``: the targets of ``subset`` whose family is known (Rfam assignment
    done, or declared by the dataset), as last counted in the background. While some are not, each of them is
    its own cluster, so "family-clustered" figures do not yet respect their families: pages say so instead of
    claiming it."""
    if subset is None:
        return {"assigned": 0, "total": 0, "pending": False}
    assigned, total = tallies.families_assigned(subset=subset)
    return {"assigned": assigned, "total": total, "pending": assigned < total}
