"""The blind track's API (``/api/blind/...``): what to predict this week; external predictors' submissions.

``GET /api/blind/weeks/`` (anyone): the weeks not released yet, each with its deadline, whether it still takes
blind predictions, and its targets' sequences (exactly as the wwPDB published them, plus the sequence
predicted). A server-only method's owner reads it, predicts, and submits before the deadline:

``POST /api/blind/predictions/`` (an owner's token, ``Authorization: Token <key>``): one structure of one of
the caller's public web-service methods for one blind target. It is validated against the target before
anything is stored (:mod:`predictors.uploads`: format, length, indices, a BPSEQ/CT file's sequence), stored as
the method's prediction, and frozen at once: the answer is the receipt — the SHA-256 that will stand in the
week's commitment, the clock time it was received and whether it is late. A submission after the deadline
is stored, frozen and marked late: shown on the week page, never ranked blind. A prediction is never replaced
(409); a development method takes no part in the blind track (403: its predictions are never published).
"""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.exceptions import NotFound
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from comparna import clock
from comparna.blind.freezing import freeze_prediction
from comparna.blind.models import BlindTarget, BlindWeek, FrozenPrediction
from predictors.uploads import (
    UPLOAD_FORMATS,
    UploadRejected,
    owned_by_reference,
    parse_upload,
    prediction_for_upload,
    store_upload,
)


class BlindTargetOut(serializers.Serializer):
    id = serializers.IntegerField(help_text="Target id (what a submission names).")
    source_id = serializers.CharField(help_text="<PDB id>_<entity id>.")
    pdb_id = serializers.CharField()
    entity_id = serializers.CharField()
    sequence = serializers.CharField(help_text="The sequence to predict (modified residues as their parent).")
    length = serializers.IntegerField()
    announced = serializers.CharField(help_text="The sequence as the pre-release file wrote it.")


class BlindWeekOut(serializers.Serializer):
    release_date = serializers.DateField()
    status = serializers.CharField()
    deadline = serializers.DateTimeField(help_text="Submissions received later are late (not blind).")
    release_at = serializers.DateTimeField()
    accepting = serializers.BooleanField(help_text="A submission now would be blind.")
    commitment_sha256 = serializers.CharField(allow_blank=True)
    targets = BlindTargetOut(many=True)


class BlindWeeksOut(serializers.Serializer):
    now = serializers.DateTimeField(help_text="The server's clock (deadlines are judged by it).")
    weeks = BlindWeekOut(many=True)


class SubmissionIn(serializers.Serializer):
    method = serializers.CharField(help_text="Your method's id or exact name (public, web-service kind).")
    target = serializers.IntegerField(min_value=1, help_text="Blind target id (from /api/blind/weeks/).")
    format = serializers.ChoiceField(choices=UPLOAD_FORMATS, default="dot-bracket")
    structure = serializers.JSONField(help_text="Text in the given format ([[i, j], ...] for 'pairs').")
    probabilities = serializers.JSONField(required=False, help_text="[[i, j, p], ...] (optional).")


class ReceiptOut(serializers.Serializer):
    prediction = serializers.IntegerField()
    target = serializers.CharField()
    week = serializers.DateField()
    deadline = serializers.DateTimeField()
    received_at = serializers.DateTimeField(help_text="When it was stored, by the server's clock.")
    late = serializers.BooleanField(help_text="Received after the deadline: stored, never ranked blind.")
    sha256 = serializers.CharField(
        help_text="The hash that stands in the week's commitment (if not late); empty when not frozen "
        "(self-reported)."
    )
    self_reported = serializers.BooleanField(
        help_text="Received after the release (the reference is public): stored and shown to you, never "
        "frozen, published or ranked."
    )
    pairs = serializers.IntegerField()


def open_weeks(now=None) -> list[BlindWeek]:
    """Weeks whose targets are known and whose release has not come yet."""
    now = now or clock.now()
    return list(
        BlindWeek.objects.filter(
            status__in=[BlindWeek.Status.OPEN, BlindWeek.Status.COMMITTED], release_at__gt=now
        ).order_by("release_date")
    )


@extend_schema(tags=["blind"])
class BlindWeeksView(APIView):
    """``GET /api/blind/weeks/``: the blind weeks not released yet, their deadlines and targets."""

    @extend_schema(responses=BlindWeeksOut)
    def get(self, request):
        now = clock.now()
        weeks = []
        for week in open_weeks(now):
            targets = (
                BlindTarget.objects.filter(week=week).select_related("target").order_by("target__source_id")
            )
            weeks.append(
                {
                    "release_date": week.release_date,
                    "status": week.status,
                    "deadline": week.deadline,
                    "release_at": week.release_at,
                    "accepting": week.status == BlindWeek.Status.OPEN and now < week.deadline,
                    "commitment_sha256": week.commitment_sha256,
                    "targets": [
                        {
                            "id": b.target_id,
                            "source_id": b.target.source_id,
                            "pdb_id": b.pdb_id,
                            "entity_id": b.entity_id,
                            "sequence": b.target.sequence,
                            "length": b.target.length,
                            "announced": b.announced,
                        }
                        for b in targets
                    ],
                }
            )
        return Response(BlindWeeksOut({"now": now, "weeks": weeks}).data)


@extend_schema(tags=["blind"])
class BlindSubmissionView(APIView):
    """``POST /api/blind/predictions/``: submit your public web-service method's structure for a blind target
    (validated, stored, frozen at once; the answer is the receipt with its SHA-256 and lateness)."""

    permission_classes = [IsAuthenticated]

    @extend_schema(
        request=SubmissionIn,
        responses={201: ReceiptOut, 400: None, 403: None, 404: None, 409: None},
    )
    def post(self, request):
        form = SubmissionIn(data=request.data)
        if not form.is_valid():
            return Response({"error": "invalid submission", "fields": form.errors}, status=400)
        d = form.validated_data
        method = owned_by_reference(request.user, d["method"])
        if method is None:
            raise NotFound("no such method of yours")
        blind = BlindTarget.objects.filter(target_id=d["target"]).select_related("target", "week").first()
        if blind is None:
            raise NotFound("no such blind target (see /api/blind/weeks/)")
        if method.visibility != "public":
            return Response(
                {"error": f"{method.name} is a development method: only public methods take part in the "
                          "blind track (their predictions are published after the release); ask for "
                          "publication first"},
                status=403,
            )
        try:
            parsed = parse_upload(  # before any row is made: a rejected submission changes nothing
                sequence=blind.target.sequence,
                structure=d["structure"],
                fmt=d["format"],
                probabilities=d.get("probabilities"),
            )
            prediction = prediction_for_upload(method=method, target=blind.target, approved_only=True)
            stored = store_upload(prediction=prediction, parsed=parsed, source="blind api")
        except UploadRejected as exc:
            return Response({"error": str(exc)}, status=exc.status)
        # a self-reported one (after the release) is never frozen: stored for its owner, not blind
        frozen = freeze_prediction(stored) or FrozenPrediction.objects.filter(prediction=stored).first()
        body = {
            "prediction": stored.pk,
            "target": blind.target.source_id,
            "week": blind.week.release_date,
            "deadline": blind.week.deadline,
            "received_at": frozen.finished_at if frozen else stored.finished_at,
            "late": frozen.late if frozen else True,
            "sha256": frozen.sha256 if frozen else "",
            "self_reported": stored.self_reported,
            "pairs": len(parsed.structure.pairs),
        }
        return Response(ReceiptOut(body).data, status=201)
