"""The API's names of a ranking row's numbers: those of the ranking's CSV and JSON downloads (issue 37: one
name per definition, :mod:`comparna.services.pages.export_fields`). ``decided_mcc``, ``decided_targets`` and
``mcc`` are the deprecated names of the first three."""

from __future__ import annotations

from rest_framework import serializers

__all__ = ["DEPRECATED_ROW_FIELDS", "named_mcc_fields", "pooled_mcc_common_field"]

DEPRECATED_ROW_FIELDS = ["decided_mcc", "decided_targets", "mcc"]


def named_mcc_fields() -> dict:
    """Fresh serializer fields ``mean_mcc``, ``mean_mcc_n`` and ``pooled_mcc_own_targets``."""
    return {
        "mean_mcc": serializers.FloatField(
            required=False,
            allow_null=True,
            help_text="Mean MCC: the mean per-target MCC on exactly the targets that decided the method's "
            "place (its pairwise sets with a win, loss or draw); the pages' “mean MCC (n)”. Replaces "
            "decided_mcc.",
        ),
        "mean_mcc_n": serializers.IntegerField(
            required=False,
            allow_null=True,
            help_text="n of the mean MCC: the targets that decided the place. Replaces decided_targets.",
        ),
        "pooled_mcc_own_targets": serializers.FloatField(
            help_text="Pooled MCC: the MCC of the counts pooled over the method's own scored targets. "
            "Replaces mcc."
        ),
    }


def pooled_mcc_common_field() -> serializers.FloatField:
    return serializers.FloatField(
        required=False,
        allow_null=True,
        help_text="Pooled MCC: the MCC of the counts pooled over the common targets (every ranked method "
        "scored them); the ranking CSV's column of the same name. Null in reports without common targets.",
    )
