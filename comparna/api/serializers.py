"""Serializers of the read-only API; structures come as pair lists, dot-bracket and BPSEQ."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field, extend_schema_serializer
from rest_framework import serializers

from comparna.api.provenance import ProvenanceFields, ScoreProvenanceFields
from comparna.api.ranking_names import DEPRECATED_ROW_FIELDS, named_mcc_fields, pooled_mcc_common_field
from comparna.models import Dataset, RankingSnapshot, ReferenceStructure, Score, Subset, Target
from comparna.rna.canonical import structure_from_text
from comparna.rna.formats import write_bpseq, write_dot_bracket
from comparna.rna.metric_registry import POOLED, STORED_FIELDS
from comparna.rna.structure import StructureFormatError
from comparna.services.pages.export_fields import api_row
from predictors.models import Method, MethodVersion, Prediction


def pair_list(text: str) -> list[list[int]]:
    out = []
    for token in text.split():
        i, _, j = token.partition("-")
        out.append([int(i), int(j)])
    return out


PAIRS_SCHEMA = {
    "type": "array",
    "items": {"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 2},
}


class SubsetSerializer(serializers.ModelSerializer):
    size = serializers.IntegerField(read_only=True, help_text="Number of targets in the subset.")
    definitions = serializers.SerializerMethodField()

    class Meta:
        model = Subset
        fields = ["slug", "name", "description", "definitions", "size"]

    @extend_schema_field(serializers.ListField(child=serializers.CharField()))
    def get_definitions(self, obj: Subset) -> list[str]:
        return obj.definitions()


class DatasetSerializer(serializers.ModelSerializer):
    subsets = SubsetSerializer(many=True, read_only=True)
    size = serializers.IntegerField(read_only=True, help_text="Number of targets.")

    class Meta:
        model = Dataset
        fields = [
            "slug",
            "name",
            "kind",
            "description",
            "definitions",
            "version",
            "updated_at",
            "size",
            "subsets",
        ]


class ReferenceSerializer(serializers.ModelSerializer):
    pairs = serializers.SerializerMethodField(help_text="1-based base pairs [i, j], i < j.")
    dot_bracket = serializers.SerializerMethodField(help_text="Null when the structure has multiplets.")
    bpseq = serializers.SerializerMethodField(help_text="Null when the structure has multiplets.")

    class Meta:
        model = ReferenceStructure
        fields = [
            "definition",
            "n_pairs",
            "pseudoknotted",
            "has_multiplets",
            "pairs",
            "dot_bracket",
            "bpseq",
            "classes",
        ]

    @extend_schema_field(PAIRS_SCHEMA)
    def get_pairs(self, obj: ReferenceStructure):
        return pair_list(obj.pairs)

    def _structure(self, obj: ReferenceStructure):
        return structure_from_text(obj.target.length, obj.pairs)

    @extend_schema_field(serializers.CharField(allow_null=True))
    def get_dot_bracket(self, obj: ReferenceStructure) -> str | None:
        try:
            return write_dot_bracket(self._structure(obj))
        except StructureFormatError:
            return None

    @extend_schema_field(serializers.CharField(allow_null=True))
    def get_bpseq(self, obj: ReferenceStructure) -> str | None:
        try:
            return write_bpseq(obj.target.sequence, self._structure(obj))
        except StructureFormatError:
            return None


class TargetSerializer(serializers.ModelSerializer):
    dataset = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    references = ReferenceSerializer(many=True, read_only=True)
    inter_chain_pairs = serializers.SerializerMethodField(
        help_text="PDB targets: pairs this chain makes with other strands (not part of the reference; "
        "see single_chain_rule), null when not recorded."
    )
    incomplete_bases = serializers.SerializerMethodField(
        help_text="PDB targets: residues whose base lacks ring atoms, so their pairs could not be annotated."
    )
    single_chain_rule = serializers.SerializerMethodField()

    @extend_schema_field(serializers.ListField(child=serializers.DictField(), allow_null=True))
    def get_inter_chain_pairs(self, obj: Target):
        return (obj.provenance or {}).get("inter_chain_pairs")

    @extend_schema_field(serializers.ListField(child=serializers.DictField(), allow_null=True))
    def get_incomplete_bases(self, obj: Target):
        return (obj.provenance or {}).get("incomplete_bases")

    @extend_schema_field(serializers.CharField(allow_null=True))
    def get_single_chain_rule(self, obj: Target) -> str | None:
        return (obj.provenance or {}).get("single_chain_rule")

    class Meta:
        model = Target
        fields = [
            "id",
            "dataset",
            "source_id",
            "sequence",
            "length",
            "source_database",
            "rna_class",
            "family",
            "organism",
            "pdb_id",
            "chain_id",
            "release_date",
            "created_at",
            "references",
            "inter_chain_pairs",
            "incomplete_bases",
            "single_chain_rule",
        ]


class MethodVersionSerializer(serializers.ModelSerializer):
    class Meta:
        model = MethodVersion
        fields = ["id", "version", "program", "fingerprint", "is_current", "created_at", "spec"]

    def to_representation(self, instance):
        data = super().to_representation(instance)
        # A web service's address is its owner's business (the fingerprint still tells versions apart).
        request = self.context.get("request")
        user = getattr(request, "user", None)
        mine = getattr(user, "is_authenticated", False) and instance.method.owner_id == user.pk
        if (data.get("spec") or {}).get("endpoint") and not mine:  # anonymous pk None == no owner: hidden
            data["spec"] = {**data["spec"], "endpoint": "(private)"}
        return data


class MethodSerializer(serializers.ModelSerializer):
    versions = serializers.SerializerMethodField()

    class Meta:
        model = Method
        fields = [
            "id",
            "name",
            "description",
            "citation",
            "url",
            "input_kind",
            "pseudoknots",
            "active",
            "visibility",
            "created_at",
            "versions",
        ]

    @extend_schema_field(MethodVersionSerializer(many=True))
    def get_versions(self, obj: Method) -> list[dict]:
        """Every approved version; the others (awaiting staff approval, never approved: issues 26, 36) only
        for the method's owner (the view prefetches them with ``MethodVersion.objects.visible_to``)."""
        return MethodVersionSerializer(obj.versions.all(), many=True, context=self.context).data


class PredictionSerializer(ProvenanceFields, serializers.ModelSerializer):
    method = serializers.CharField(source="method_version.method.name", read_only=True)
    method_id = serializers.IntegerField(source="method_version.method_id", read_only=True)
    version = serializers.CharField(source="method_version.version", read_only=True)
    dataset = serializers.CharField(source="target.dataset.slug", read_only=True)
    target_source_id = serializers.CharField(source="target.source_id", read_only=True)
    pairs = serializers.SerializerMethodField()

    class Meta:
        model = Prediction
        fields = [
            "id",
            "method",
            "method_id",
            "version",
            "method_version",
            "target",
            "target_source_id",
            "dataset",
            "status",
            "pairs",
            "runtime_s",
            "error",
            "queued_at",
            "finished_at",
            "self_reported",
            "provenance", "not_blind",  # issue 36
        ]

    @extend_schema_field(PAIRS_SCHEMA)
    def get_pairs(self, obj: Prediction):
        return pair_list(obj.pairs)


class ScoreSerializer(ScoreProvenanceFields, serializers.ModelSerializer):
    method = serializers.CharField(source="prediction.method_version.method.name", read_only=True)
    target = serializers.IntegerField(source="prediction.target_id", read_only=True)
    target_source_id = serializers.CharField(source="prediction.target.source_id", read_only=True)
    dataset = serializers.CharField(source="prediction.target.dataset.slug", read_only=True)
    self_reported = serializers.BooleanField(
        source="prediction.self_reported",
        read_only=True,
        help_text="Uploaded by the method's owner for a target with a public reference: only its owner "
        "sees it; never ranked.",
    )

    class Meta:
        model = Score
        fields = [
            "id",
            "prediction",
            "method",
            "target",
            "target_source_id",
            "dataset",
            "self_reported",
            "provenance", "not_blind",  # issue 36
            "definition",
            *STORED_FIELDS,
        ]


#: One row of a ranking report: the engine's verdict counts, every poolable metric of the registry (the
#: engine's own pooled MCC is always there), and the number of targets.
RankingRowSerializer = type(
    "RankingRowSerializer",
    (serializers.Serializer,),
    {
        "method": serializers.CharField(),
        "rank": serializers.IntegerField(),
        "ranked": serializers.BooleanField(
            required=False,
            help_text="False when every verdict of the method is '?' (fewer than 10 common targets with each "
            "other method): its rank is then not a result. Absent in snapshots older than this field.",
        ),
        "wins": serializers.IntegerField(),
        "losses": serializers.IntegerField(),
        "draws": serializers.IntegerField(),
        "unknown": serializers.IntegerField(),
        "rank_low": serializers.IntegerField(
            required=False, help_text="Lower end of the rank's 95 % interval (bootstrap of families)."
        ),
        "rank_high": serializers.IntegerField(required=False, help_text="Upper end of that interval."),
        "decided_mcc": serializers.FloatField(
            required=False,
            allow_null=True,
            help_text="Mean per-target MCC on exactly the targets that decided the method's place (its "
            "pairwise sets with a win, loss or draw).",
        ),
        "decided_targets": serializers.IntegerField(required=False, help_text="The number of those targets."),
        **named_mcc_fields(),
        "pooled_mcc_common": pooled_mcc_common_field(),
        **{
            m.name: serializers.FloatField(required=m.name == "mcc", help_text=f"{m.label}, pooled counts.")
            for m in POOLED
        },
        "targets": serializers.IntegerField(),
    },
)


RankingRowSerializer = extend_schema_serializer(deprecate_fields=DEPRECATED_ROW_FIELDS)(RankingRowSerializer)


class RobustnessRowSerializer(serializers.Serializer):
    method = serializers.CharField()
    rank = serializers.IntegerField()
    rank_low = serializers.IntegerField(
        required=False, help_text="95 % interval of the rank (bootstrap of families); absent before issue 35."
    )
    rank_high = serializers.IntegerField(required=False)
    mcc = serializers.FloatField()
    targets = serializers.IntegerField()


class DecisionsSerializer(serializers.Serializer):
    """The share of a subset's pairs decided and why the others are not (SCIENCE.md §5)."""

    pairs = serializers.IntegerField(help_text="M(M-1)/2 pairs of methods.")
    tested = serializers.IntegerField(help_text="Pairs with at least the minimum of common targets.")
    won = serializers.IntegerField(help_text="Pairs with a winner.")
    equal = serializers.IntegerField(help_text="Pairs shown equivalent (90 % interval inside ±delta).")
    unknown = serializers.IntegerField(help_text="Pairs without a verdict ('?').")
    share_won = serializers.FloatField(allow_null=True)
    share_equal = serializers.FloatField(allow_null=True)
    share_unknown = serializers.FloatField(allow_null=True)
    reasons = serializers.DictField(
        child=serializers.IntegerField(),
        help_text="Pairs per reason of a '?': few, floor, direction, undecided, open.",
    )
    floor = serializers.DictField(
        allow_null=True,
        help_text="The subset's floor: families, pairs, floor (P*2/2^C), alpha, fires, families_needed.",
    )


class RankingSnapshotSerializer(serializers.ModelSerializer):
    dataset = serializers.CharField(source="dataset.slug", read_only=True)
    subset = serializers.CharField(source="subset.slug", read_only=True)
    methods = serializers.SerializerMethodField()
    robustness = serializers.SerializerMethodField()
    conventions = serializers.SerializerMethodField()
    protocol = serializers.SerializerMethodField()
    clusters = serializers.SerializerMethodField()
    decisions = serializers.SerializerMethodField()
    robustness_n = serializers.SerializerMethodField()
    within_families = serializers.SerializerMethodField()
    protocol_2013 = serializers.SerializerMethodField()

    class Meta:
        model = RankingSnapshot
        fields = [
            "id",
            "dataset",
            "subset",
            "definition",
            "computed_at",
            "seed",
            "inputs_hash",
            "protocol",
            "clusters",
            "decisions",
            "robustness_n",
            "within_families",
            "methods",
            "robustness",
            "conventions",
            "protocol_2013",
            "inputs",
        ]

    @extend_schema_field(OpenApiTypes.STR)
    def get_protocol(self, obj: RankingSnapshot):
        """"target" (the primary, target-level verdict) or "2013" (a snapshot stored before issue 27, whose
        verdicts are the CompaRNA 2013 protocol's)."""
        return obj.report.get("protocol") or "2013"

    @extend_schema_field(serializers.IntegerField(allow_null=True))  # null: a snapshot stored before issue 27
    def get_clusters(self, obj: RankingSnapshot):
        return obj.report.get("clusters")

    @extend_schema_field(DecisionsSerializer(allow_null=True))  # null: a snapshot stored before issue 35
    def get_decisions(self, obj: RankingSnapshot):
        return obj.report.get("decisions")

    @extend_schema_field(serializers.DictField(allow_null=True))
    def get_within_families(self, obj: RankingSnapshot):
        """Only where no family-level verdict is possible (the subset floor): the conditional verdicts "for
        RNAs of these N families; does not generalise to other families" (label, methods, verdicts, p-values,
        mean differences with 90 % intervals); null otherwise."""
        return obj.report.get("within_families")

    @extend_schema_field(serializers.DictField(allow_null=True))  # null: a snapshot stored before issue 35
    def get_robustness_n(self, obj: RankingSnapshot):
        """Targets, families and resamples behind the robustness ranking and its rank intervals."""
        return obj.report.get("robustness_n")

    @extend_schema_field(serializers.DictField(allow_null=True))  # null: a snapshot stored before issue 27
    def get_protocol_2013(self, obj: RankingSnapshot):
        """The CompaRNA 2013 protocol's view (labelled; to reproduce the 2013 tables, not the ranking)."""
        return obj.report.get("protocol_2013")

    @extend_schema_field(RankingRowSerializer(many=True))
    def get_methods(self, obj: RankingSnapshot):
        common = obj.report.get("common_scores") or {}
        return [api_row(r, common) for r in obj.report.get("methods", [])]

    @extend_schema_field(RobustnessRowSerializer(many=True, allow_null=True))
    def get_robustness(self, obj: RankingSnapshot):
        return obj.report.get("robustness")

    @extend_schema_field(OpenApiTypes.OBJECT)
    def get_conventions(self, obj: RankingSnapshot):
        return obj.report.get("conventions", {})


class RankingSummaryRowSerializer(serializers.Serializer):
    method = serializers.CharField()
    rank = serializers.IntegerField()
    ranked = serializers.BooleanField(required=False)
    rank_low = serializers.IntegerField(required=False)
    rank_high = serializers.IntegerField(required=False)
    decided_mcc = serializers.FloatField(required=False, allow_null=True, help_text="Deprecated: mean_mcc.")
    decided_targets = serializers.IntegerField(required=False, help_text="Deprecated: mean_mcc_n.")
    mcc = serializers.FloatField(help_text="Deprecated: pooled_mcc_own_targets.")
    targets = serializers.IntegerField()


RankingSummaryRowSerializer = extend_schema_serializer(deprecate_fields=DEPRECATED_ROW_FIELDS)(
    type("RankingSummaryRowSerializer", (RankingSummaryRowSerializer,), named_mcc_fields())
)


class RankingSummarySerializer(serializers.Serializer):
    """One snapshot in the list: what identifies it, its state and each method's rank, interval, MCC and
    targets; the whole report (every metric, robustness, conventions, the 2013 protocol's view, inputs) is
    at ``/api/rankings/{id}/``."""

    id = serializers.IntegerField()
    url = serializers.CharField(help_text="The snapshot's whole report.")
    dataset = serializers.CharField()
    subset = serializers.CharField()
    definition = serializers.CharField()
    computed_at = serializers.DateTimeField()
    seed = serializers.IntegerField()
    inputs_hash = serializers.CharField()
    protocol = serializers.CharField()
    clusters = serializers.IntegerField(allow_null=True)
    methods = RankingSummaryRowSerializer(many=True)
    settled = serializers.BooleanField()
    state = serializers.CharField()
    settled_reasons = serializers.ListField(child=serializers.CharField())
    settled_definition = serializers.CharField()
    settled_definition_url = serializers.CharField()


class VerdictSerializer(serializers.Serializer):
    method_a = serializers.CharField()
    method_b = serializers.CharField()
    verdict = serializers.ChoiceField(
        choices=["+", "-", "=", "?"],
        help_text="'+' when method_a beats method_b (CompaRNA's verdict, primary).",
    )
    common_targets = serializers.IntegerField()
    equivalence = serializers.ChoiceField(
        choices=["practically equal", "practically different", "undetermined"],
        allow_null=True,
        help_text="Beside the verdict: the 90 % cluster bootstrap interval of the pooled MCC difference "
        "inside (practically equal) or outside (practically different) the margin ±delta; null for older "
        "snapshots.",
    )
    mcc_difference = serializers.DictField(
        child=serializers.FloatField(),
        allow_null=True,
        help_text="Pooled MCC of method_a minus method_b on their common targets: estimate, low, high (90 %, "
        "families / sequence clusters resampled), delta.",
    )
    sequential_verdict = serializers.ChoiceField(
        choices=["different", "not yet", "no difference shown"],
        allow_null=True,
        help_text="Growing datasets (PDB): the group-sequential verdict of the paired t-test (Lan-DeMets "
        "O'Brien-Fleming boundary over the weekly looks); null for static datasets.",
    )
    reason = serializers.CharField(
        allow_null=True,
        help_text="Why the verdict is '?': few (under the minimum of common targets), floor (the subset's "
        "families cannot reach alpha), direction (significant, the mean favours the other method), undecided "
        "or open (neither a win nor an equivalence yet); null otherwise.",
    )
    mean_difference = serializers.FloatField(
        allow_null=True, help_text="Mean per-target MCC of method_a minus method_b on the common targets."
    )
    mean_interval = serializers.DictField(
        child=serializers.FloatField(), allow_null=True,
        help_text="Its family-clustered 90 % interval (low, high): '=' when inside ±delta.",
    )
    hodges_lehmann = serializers.DictField(
        child=serializers.FloatField(), allow_null=True,
        help_text="Hodges-Lehmann shift of the per-target differences with its 95 % family-clustered "
        "interval (estimate, low, high).",
    )
    to_decide = serializers.DictField(
        child=serializers.IntegerField(), allow_null=True,
        help_text="For an open '?': about how many more targets and families would decide it.",
    )
