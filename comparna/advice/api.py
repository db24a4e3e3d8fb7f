"""``/api/advice/``: the advisor for programs — POST a sequence or FASTA, GET the results by token."""

from __future__ import annotations

from django.urls import reverse
from django.utils.decorators import method_decorator
from django.views.decorators.cache import never_cache
from drf_spectacular.utils import OpenApiResponse, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response
from rest_framework.views import APIView

from comparna.advice import pages, services
from comparna.advice.inputs import AdviceInputError
from comparna.owners.throttle import client_address

_ERROR = inline_serializer("AdviceError", {"error": serializers.CharField()})


class AdviceRequestSerializer(serializers.Serializer):
    sequences = serializers.CharField(
        trim_whitespace=False, allow_blank=True,
        help_text="One sequence, or a FASTA of up to 10 (A/C/G/U/T, at most 1000 nt each).",
    )
    methods = serializers.ListField(
        child=serializers.IntegerField(min_value=1, max_value=2**31 - 1), required=False, max_length=5,
        help_text="Ids of up to 5 methods to run besides the top three of the matching ranking.",
    )


def _first_error(errors, where: str = "") -> str:
    """The first message of a serializer's errors, with where it is ("methods.0: ..."): list fields nest
    their items' errors in dicts keyed by index."""
    if isinstance(errors, dict):
        key, value = next(iter(errors.items()))
        return _first_error(value, f"{where}.{key}" if where else str(key))
    if isinstance(errors, list) and errors:
        return _first_error(errors[0], where)
    return f"{where}: {errors}" if where else str(errors)


def _links(request, token: str) -> dict:
    return {
        "token": token,
        "url": request.build_absolute_uri(reverse("advice-result", args=[token])),
        "api_url": request.build_absolute_uri(reverse("api-advice-detail", args=[token])),
    }


class _ErrorsAsError(APIView):
    """DRF's own refusals (a body that is not JSON, an unsupported media type, a wrong method) answered as
    ``{"error": ...}`` like the advisor's: one error shape for every answer the schema documents."""

    authentication_classes: list = []
    renderer_classes = [JSONRenderer]

    def handle_exception(self, exc):
        response = super().handle_exception(exc)
        if isinstance(response.data, dict) and set(response.data) == {"detail"}:
            response.data = {"error": str(response.data["detail"])}
        return response


@method_decorator(never_cache, name="dispatch")
class AdviceCreateApi(_ErrorsAsError):
    """Take a sequence or a FASTA of up to 10; the evidence and the runs are worked out in the background."""

    @extend_schema(
        tags=["advice"],
        request=AdviceRequestSerializer,
        responses={
            202: inline_serializer("AdviceAccepted", {
                "token": serializers.CharField(), "url": serializers.URLField(),
                "api_url": serializers.URLField(), "status": serializers.CharField(),
            }),
            400: OpenApiResponse(_ERROR, description="The input is refused (the message names the problem)."),
            415: OpenApiResponse(_ERROR, description="The body is neither JSON nor a form."),
            429: OpenApiResponse(_ERROR, description="A rate limit or the queue cap; try again later."),
        },
    )
    def post(self, request):
        body = AdviceRequestSerializer(data=request.data)
        if not body.is_valid():
            return Response({"error": _first_error(body.errors)}, status=400)
        try:
            advice = services.request_advice(
                text=body.validated_data["sequences"], chosen=body.validated_data.get("methods") or [],
                address=client_address(request._request),
            )
        except AdviceInputError as exc:
            return Response({"error": str(exc)}, status=400)
        except services.AdviceRefused as exc:
            return Response({"error": str(exc)}, status=429 if "try again" in str(exc) else 400)
        return Response(_links(request, advice.token) | {"status": advice.status}, status=202)


@method_decorator(never_cache, name="dispatch")
class AdviceDetailApi(_ErrorsAsError):
    """A request's evidence per sequence, its runs (structures as pairs), agreement and consensus."""

    @extend_schema(
        tags=["advice"],
        responses={200: OpenApiResponse(description="The request's results (kept 7 days)."),
                   404: OpenApiResponse(_ERROR, description="Unknown or expired.")},
    )
    def get(self, request, token: str):
        advice = services.live_request(token)
        if advice is None:
            gone = "no such advice request (unknown, or expired after 7 days)"
            return Response({"error": gone}, status=404)
        data = pages.json_ready(pages.request_data(advice))
        data["created_at"] = advice.created_at.isoformat()
        data["expires_at"] = advice.expires_at.isoformat()
        return Response(_links(request, advice.token) | data)
