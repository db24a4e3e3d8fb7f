"""The owners API (``/api/owner/``): an owner's methods, their predictions and scores, and uploads.

Authenticated by the owner's token (``Authorization: Token <key>``, made on ``/account/tokens/``) or
session. A method that is not the caller's is a 404 whatever its visibility. Uploads (web-service methods
only) are validated against the target before anything is stored (:mod:`predictors.uploads`); the
callback endpoint takes the one-job token CompaRNA sent with the job instead of an account token.
"""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.pagination import PageNumberPagination
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from comparna.api.serializers import ScoreSerializer
from comparna.models import Score, Target
from comparna.owners import methods as svc
from predictors.models import Method, Prediction
from predictors.uploads import (
    SERVICE_SOURCE,
    UPLOAD_FORMATS,
    UploadRejected,
    owned_by_reference,
    parse_upload,
    prediction_for_upload,
    store_upload,
)
from predictors.webservices import prediction_of_callback


class Pagination(PageNumberPagination):
    page_size = 100
    page_size_query_param = "page_size"
    max_page_size = 1000


class OwnedMethodSerializer(serializers.ModelSerializer):
    kind = serializers.CharField(read_only=True)
    version = serializers.SerializerMethodField()
    progress = serializers.SerializerMethodField()

    class Meta:
        model = Method
        fields = [
            "id",
            "name",
            "kind",
            "visibility",
            "active",
            "publication_requested_at",
            "published_at",
            "input_kind",
            "version",
            "progress",
        ]

    def get_version(self, m: Method) -> dict | None:
        """The version the owner last saved; ``pending_review`` while staff have not approved it, and the
        declared training data awaiting their approval (``proposed_training_data``, else null: issue 36)."""
        v = m.working_version
        if v is None:
            return None
        return {
            "id": v.pk,
            "version": v.version,
            "fingerprint": v.fingerprint,
            "spec": v.spec,
            "pending_review": v.pending_review,
            "proposed_training_data": v.proposed_training_data,
        }

    def get_progress(self, m: Method) -> dict:
        p = svc.progress(m.working_version)
        return {
            "total": p["total"],
            "pending": p["pending"],
            "finished": p["finished"],
            "by_status": p["counts"],
        }


class OwnedPredictionSerializer(serializers.ModelSerializer):
    target_source_id = serializers.CharField(source="target.source_id", read_only=True)
    dataset = serializers.CharField(source="target.dataset.slug", read_only=True)
    sequence = serializers.CharField(source="target.sequence", read_only=True)

    class Meta:
        model = Prediction
        fields = [
            "id",
            "target",
            "target_source_id",
            "dataset",
            "sequence",
            "status",
            "error",
            "uploaded",
            "self_reported",
            "runtime_s",
            "queued_at",
            "started_at",
            "finished_at",
            "awaiting_until",
            "pairs",
        ]


class UploadSerializer(serializers.Serializer):
    method = serializers.CharField(help_text="Method id or exact name (yours, web-service kind).")
    target = serializers.IntegerField(min_value=1, help_text="Target id.")
    format = serializers.ChoiceField(choices=UPLOAD_FORMATS, default="dot-bracket")
    structure = serializers.JSONField(
        help_text="Text in the given format (a [[i, j], ...] list for 'pairs')."
    )
    probabilities = serializers.JSONField(required=False, help_text="[[i, j, p], ...] (optional).")


class UploadResult(serializers.Serializer):
    prediction = serializers.IntegerField()
    status = serializers.CharField()
    pairs = serializers.IntegerField()
    scores = serializers.DictField(help_text="MCC, F1, PPV, sensitivity per pair definition.")
    self_reported = serializers.BooleanField(
        help_text="Uploaded for a target whose reference is public: shown to you only, never ranked."
    )


def _owned(request, pk) -> Method:
    try:
        return svc.owned(request.user, pk)
    except Method.DoesNotExist:
        raise NotFound("no such method of yours") from None


def _rejected(exc: UploadRejected) -> Response:
    return Response({"error": str(exc)}, status=exc.status)


def _store(prediction: Prediction, data: dict, source: str) -> Response:
    try:
        parsed = parse_upload(
            sequence=prediction.target.sequence,
            structure=data.get("structure"),
            fmt=data.get("format") or "dot-bracket",
            probabilities=data.get("probabilities"),
        )
        stored = store_upload(prediction=prediction, parsed=parsed, source=source)
    except UploadRejected as exc:
        return _rejected(exc)
    scores = {
        s.definition: {"mcc": s.mcc, "f1": s.f1, "ppv": s.ppv, "sensitivity": s.sensitivity}
        for s in stored.scores.all()
    }
    return Response(
        {
            "prediction": stored.pk,
            "status": stored.status,
            "pairs": len(parsed.structure.pairs),
            "scores": scores,
            "self_reported": stored.self_reported,
        },
        status=201,
    )


@extend_schema(tags=["owner"])
class OwnerMethodListView(APIView):
    """``GET /api/owner/methods/``: your methods (development and public) with their progress."""

    permission_classes = [IsAuthenticated]

    @extend_schema(responses=OwnedMethodSerializer(many=True))
    def get(self, request):
        methods = Method.objects.filter(owner=request.user).order_by("name")
        return Response(OwnedMethodSerializer(methods, many=True).data)


@extend_schema(tags=["owner"])
class OwnerMethodDetailView(APIView):
    """``GET /api/owner/methods/<id>/``: one of your methods, with per-dataset outcomes and mean scores."""

    permission_classes = [IsAuthenticated]

    @extend_schema(responses=OwnedMethodSerializer)
    def get(self, request, pk):
        method = _owned(request, pk)
        data = OwnedMethodSerializer(method).data
        data["datasets"] = [
            {
                "dataset": row["dataset"].slug,
                "targets": row["targets"],
                "predictions": row["predictions"],
                "ok": row["ok"],
                "self_reported": row["self_reported"],
                "pending": row["pending"],
                "failed": row["failed"],
                "scores": row["scores"],
            }
            for row in svc.dataset_summaries(method)
        ]
        return Response(data)


@extend_schema(tags=["owner"])
class OwnerPredictionListView(APIView):
    """``GET /api/owner/methods/<id>/predictions/?status=awaiting&dataset=...``: your method's predictions
    (current version), with each target's sequence — what to upload for."""

    permission_classes = [IsAuthenticated]

    @extend_schema(
        parameters=[
            OpenApiParameter("status", str, enum=[s.value for s in Prediction.Status]),
            OpenApiParameter("dataset", str),
        ],
        responses=OwnedPredictionSerializer(many=True),
    )
    def get(self, request, pk):
        method = _owned(request, pk)
        qs = (
            Prediction.objects.filter(method_version=method.working_version)
            .select_related("target__dataset")
            .order_by("pk")
        )
        status = request.query_params.get("status")
        if status:
            if status not in {s.value for s in Prediction.Status}:
                raise ValidationError({"status": "unknown state"})
            qs = qs.filter(status=status)
        if request.query_params.get("dataset"):
            qs = qs.filter(target__dataset__slug=request.query_params["dataset"])
        page = Pagination()
        rows = page.paginate_queryset(qs, request, view=self)
        return page.get_paginated_response(OwnedPredictionSerializer(rows, many=True).data)


@extend_schema(tags=["owner"])
class OwnerScoreListView(APIView):
    """``GET /api/owner/methods/<id>/scores/``: scores of your method's current version (any visibility)."""

    permission_classes = [IsAuthenticated]

    @extend_schema(responses=ScoreSerializer(many=True))
    def get(self, request, pk):
        method = _owned(request, pk)
        qs = (
            Score.objects.filter(prediction__method_version=method.working_version)
            .select_related("prediction__method_version__method", "prediction__target__dataset")
            .order_by("pk")
        )
        page = Pagination()
        rows = page.paginate_queryset(qs, request, view=self)
        return page.get_paginated_response(ScoreSerializer(rows, many=True).data)


@extend_schema(tags=["owner"])
class OwnerUploadView(APIView):
    """``POST /api/owner/predictions/``: upload your web-service method's structure for a target.

    Validated before anything is stored (format, sequence length, pair indices); a final prediction is never
    replaced (409). The answer has the stored prediction's id and its scores.
    """

    permission_classes = [IsAuthenticated]

    @extend_schema(
        request=UploadSerializer,
        responses={201: UploadResult, 400: None, 403: None, 404: None, 409: None},
    )
    def post(self, request):
        form = UploadSerializer(data=request.data)
        if not form.is_valid():
            return Response({"error": "invalid upload", "fields": form.errors}, status=400)
        d = form.validated_data
        method = owned_by_reference(request.user, d["method"])
        if method is None:
            raise NotFound("no such method of yours")
        target = Target.objects.filter(pk=d["target"]).first()
        if target is None:
            raise NotFound("no such target")
        try:
            prediction = prediction_for_upload(method=method, target=target)
        except UploadRejected as exc:
            return _rejected(exc)
        return _store(prediction, request.data, source="api")


@extend_schema(tags=["owner"])
class OwnerCallbackView(APIView):
    """``POST /api/owner/callback/``: a web service delivers the structure of a job it accepted (HTTP 202),
    authenticated by the one-job token sent with that job (``Authorization: Token <token>``)."""

    authentication_classes: list = []
    permission_classes: list = []
    serializer_class = UploadSerializer

    @extend_schema(request=UploadSerializer, responses={201: UploadResult, 401: None, 404: None})
    def post(self, request):
        header = request.headers.get("Authorization", "")
        scheme, _, token = header.partition(" ")
        prediction_id = prediction_of_callback(token.strip()) if scheme.lower() == "token" else None
        if prediction_id is None:
            return Response({"error": "missing, forged or expired job token"}, status=401)
        prediction = (
            Prediction.objects.select_related("target", "method_version__method")
            .filter(pk=prediction_id)
            .first()
        )
        if prediction is None or prediction.method_version.spec.get("kind") != "web":
            raise NotFound("no such job")
        return _store(prediction, request.data, source=SERVICE_SOURCE)
