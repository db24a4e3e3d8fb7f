"""Blind predictions stay hidden until their week's release.

Before Wednesday's release nobody but the stored rows sees a blind prediction: not the target page, not the
API (an external predictor could otherwise copy another method's structure and submit it). Only the
commitment (hashes, with a nonce that stops guessing) is published. After the release everything is shown.
"""

from __future__ import annotations

from django.db.models import Q

from comparna import clock


def embargoed(prefix: str = "target") -> Q:
    """Rows (predictions by default: ``prefix`` is the path to their target) of blind targets whose week is
    not released yet, by the configured clock."""
    return Q(**{f"{prefix}__blind__week__release_at__gt": clock.now()})


def embargo_of(target) -> dict | None:
    """For a blind target: its week and whether its predictions are hidden now; None for other targets."""
    try:
        blind = target.blind
    except Exception:  # noqa: BLE001 - RelatedObjectDoesNotExist: not a blind target
        return None
    week = blind.week
    return {"blind": blind, "week": week, "hidden": week.release_at > clock.now()}
