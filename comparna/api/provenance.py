"""The provenance fields of the API's predictions and scores (issue 36, :mod:`predictors.provenance`)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from predictors import provenance
from predictors.provenance import Provenance

PROVENANCE_HELP = (
    "Where the structure came from (issue 36): catalogue = run by CompaRNA from reviewed code; program = the "
    "owner's program run by CompaRNA; service = the owner's web service; uploaded = sent by its owner."
)
NOT_BLIND_HELP = (
    "An owner-controlled result (program, service, uploaded) on a target whose reference was public before "
    "the method version was registered: the owner could have known the answer."
)


class ProvenanceFields(serializers.Serializer):
    """``provenance`` and ``not_blind`` of a prediction (:meth:`prediction_of` reaches it from the row)."""

    provenance = serializers.SerializerMethodField(help_text=PROVENANCE_HELP)
    not_blind = serializers.SerializerMethodField(help_text=NOT_BLIND_HELP)

    def prediction_of(self, obj):
        return obj

    @extend_schema_field(serializers.ChoiceField(choices=Provenance.choices))
    def get_provenance(self, obj) -> str:
        return provenance.of_prediction(self.prediction_of(obj)).value

    def get_not_blind(self, obj) -> bool:
        return provenance.describe(self.prediction_of(obj))["not_blind"]


class ScoreProvenanceFields(ProvenanceFields):
    def prediction_of(self, obj):
        return obj.prediction
