"""Read-only, paginated API endpoints with simple query-parameter filters.

Ranking snapshots are immutable, so their serialised form is cached under the snapshot's pk.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import re

from django.core.cache import cache
from django.db.models import Count, F, OuterRef, Prefetch, Q, Subquery
from django.http import HttpResponse
from drf_spectacular.openapi import AutoSchema
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.pagination import CursorPagination, PageNumberPagination
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response

from comparna.api import serializers as s
from comparna.api.renderers import PublicBrowsableAPIRenderer
from comparna.api.snapshot_data import (
    CACHE_PREFIX,
    pair_extras,
    snapshot_data,
    snapshot_data_by_pk,
    snapshot_summaries,
)
from comparna.blind.embargo import embargoed
from comparna.models import Dataset, RankingSnapshot, Score, Subset, Target
from comparna.params import ID_PATTERN, ascii_int
from predictors.models import Method, MethodVersion, Prediction

ID_RE = re.compile(r"[0-9]{1,18}")


class Pagination(PageNumberPagination):
    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 500


class KeysetPagination(CursorPagination):
    """Pages of the tables that grow with every prediction (predictions, scores): by id, each page read from
    where the previous one ended, with no total count (counting them, or skipping to a deep page, would read
    every row before it). Follow ``next`` until it is null."""

    ordering = "pk"
    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 500

    def decode_cursor(self, request):
        """DRF's cursor, whose position must be an id (ASCII digits): anything else is a 404, not a 500."""
        cursor = super().decode_cursor(request)
        if cursor is not None and cursor.position is not None and not ID_RE.fullmatch(cursor.position):
            raise NotFound(self.invalid_cursor_message)
        return cursor


def _param(name: str, description: str, type_=str, **kw) -> OpenApiParameter:
    return OpenApiParameter(
        name, type_, OpenApiParameter.QUERY, required=False, description=description, **kw
    )


DATASET = _param("dataset", "Dataset slug, e.g. `rnastrand`.")
METHOD = _param("method", "Method name (exact), e.g. `RNAfold (MFE)`.")
DEFINITION = _param("definition", "Pair definition.", enum=["standard", "extended"])
SUBSET = _param("subset", "Subset slug, e.g. `all`.")
SINCE = _param("since", "Only rows dated on or after this day (YYYY-MM-DD).", dt.date)
UNTIL = _param("until", "Only rows dated on or before this day (YYYY-MM-DD).", dt.date)


def parse_date(value: str | None, name: str) -> dt.date | None:
    if value in (None, ""):
        return None
    try:
        return dt.date.fromisoformat(value)
    except ValueError:
        raise ValidationError({name: "expected a date YYYY-MM-DD"}) from None


def parse_int(value: str | None, name: str) -> int | None:
    if value in (None, ""):
        return None
    number = ascii_int(value)
    if number is None:
        raise ValidationError({name: "expected a non-negative integer (ASCII digits, at most 18)"})
    return number


def day_bounds(day: dt.date) -> tuple[dt.datetime, dt.datetime]:
    start = dt.datetime.combine(day, dt.time.min, tzinfo=dt.UTC)
    return start, start + dt.timedelta(days=1)


#: Query parameters every endpoint accepts: DRF's format override (and its pagination's).
COMMON_PARAMS = frozenset({"format"})
PAGE_PARAMS = frozenset({"page", "page_size"})
CURSOR_PARAMS = frozenset({"cursor", "page_size"})


class ReadOnly(viewsets.ReadOnlyModelViewSet):
    """Shared settings: read-only access (anonymous, or an owner by token or session, who then also sees
    their own development methods), pagination, drf-spectacular schema.

    A query parameter an action does not read is answered with 400 naming the accepted ones: a misspelt
    filter (``?serach=``) silently ignored would return every row as if it had matched.
    """

    permission_classes: list = []
    #: JSON, or the browsable page without a CSRF cookie for anonymous visitors (kept by the page cache)
    renderer_classes = [JSONRenderer, PublicBrowsableAPIRenderer]
    pagination_class = Pagination
    schema = AutoSchema()
    lookup_value_regex = ID_PATTERN  # ASCII digits, at most 18 (comparna.params)
    #: The filters each action reads (besides :data:`COMMON_PARAMS`); keep in step with its schema.
    accepted_params: dict[str, frozenset[str]] = {}
    #: The pagination's parameters.
    page_params = PAGE_PARAMS

    def initial(self, request, *args, **kwargs):
        super().initial(request, *args, **kwargs)
        accepted = COMMON_PARAMS | self.page_params | self.accepted_params.get(self.action, frozenset())
        unknown = sorted(set(request.query_params) - accepted)
        if unknown:
            listed = ", ".join(sorted(accepted))
            message = f"unknown query parameter; this endpoint accepts: {listed}"
            raise ValidationError({name[:40]: message for name in unknown[:10]})

    def q(self, name: str) -> str | None:
        value = self.request.query_params.get(name)
        return value if value not in ("", None) else None


@extend_schema(tags=["datasets"])
class DatasetViewSet(ReadOnly):
    """Benchmark datasets with their subsets and sizes."""

    serializer_class = s.DatasetSerializer
    lookup_field = "slug"
    lookup_value_regex = r"[-a-zA-Z0-9_]+"

    def get_queryset(self):
        subsets = Subset.objects.annotate(size=Count("targets")).select_related("dataset")
        return (
            Dataset.objects.annotate(size=Count("targets", distinct=True))
            .order_by("slug")
            .prefetch_related(Prefetch("subsets", queryset=subsets))
        )


@extend_schema(tags=["targets"])
@extend_schema(
    methods=["GET"],
    parameters=[
        DATASET,
        SUBSET,
        _param("rna_class", "RNA family / class (exact)."),
        _param("family", "Family (exact): the dataset's class as a canonical family, else the Rfam one."),
        _param("pdb_id", "PDB entry id."),
        _param("source_id", "The entry's id in its source (exact), e.g. `ASE_00001` or `1EHZ_A`."),
        _param("search", "Targets whose source id, PDB id, class, family or organism contains this text "
               "(case-insensitive)."),
        _param("released_since", "Released on or after (YYYY-MM-DD).", dt.date),
        _param("released_until", "Released on or before (YYYY-MM-DD).", dt.date),
    ],
)
class TargetViewSet(ReadOnly):
    """Targets with their reference structures (pairs, dot-bracket and BPSEQ)."""

    serializer_class = s.TargetSerializer
    accepted_params = {
        "list": frozenset({"dataset", "subset", "rna_class", "family", "pdb_id", "source_id", "search",
                           "released_since", "released_until"}),
    }

    def get_queryset(self):
        qs = (
            Target.objects.select_related("dataset")
            .prefetch_related("references")
            .order_by("dataset", "source_id")
        )
        if self.action != "list":
            return qs
        if (v := self.q("dataset")) is not None:
            qs = qs.filter(dataset__slug=v)
        if (v := self.q("subset")) is not None:
            qs = qs.filter(subsets__slug=v).distinct()
        if (v := self.q("rna_class")) is not None:
            qs = qs.filter(rna_class=v)
        if (v := self.q("family")) is not None:
            qs = qs.filter(family=v)
        if (v := self.q("pdb_id")) is not None:
            qs = qs.filter(pdb_id__iexact=v)
        if (v := self.q("source_id")) is not None:
            qs = qs.filter(source_id=v)
        if (v := self.q("search")) is not None:
            v = v[:200]
            qs = qs.filter(
                Q(source_id__icontains=v) | Q(pdb_id__icontains=v) | Q(rna_class__icontains=v)
                | Q(family__icontains=v) | Q(organism__icontains=v)
            )
        if (d := parse_date(self.q("released_since"), "released_since")) is not None:
            qs = qs.filter(release_date__gte=d)
        if (d := parse_date(self.q("released_until"), "released_until")) is not None:
            qs = qs.filter(release_date__lte=d)
        return qs


@extend_schema(tags=["methods"])
@extend_schema(
    methods=["GET"],
    parameters=[
        _param("input_kind", "single, collection or alignment.", enum=["single", "collection", "alignment"]),
        _param("active", "Only active (true) or inactive (false) methods.", bool),
    ],
)
class MethodViewSet(ReadOnly):
    """Methods with their version history and runnable specifications."""

    serializer_class = s.MethodSerializer
    accepted_params = {"list": frozenset({"input_kind", "active"})}

    def get_queryset(self):
        user = self.request.user
        qs = Method.objects.visible_to(user).prefetch_related(
            # only approved versions (issue 36), every version for the method's owner
            Prefetch("versions", queryset=MethodVersion.objects.visible_to(user).order_by("-created_at"))
        ).order_by("name")
        if self.action != "list":
            return qs
        if (v := self.q("input_kind")) is not None:
            qs = qs.filter(input_kind=v)
        if (v := self.q("active")) is not None:
            if v.lower() not in ("true", "false"):
                raise ValidationError({"active": "expected true or false"})
            qs = qs.filter(active=v.lower() == "true")
        return qs


@extend_schema(tags=["predictions"])
@extend_schema(
    methods=["GET"],
    parameters=[
        DATASET,
        METHOD,
        _param("target", "Target id.", int),
        _param("status", "Prediction state.", enum=[c for c, _ in Prediction.Status.choices]),
        _param("current", "Only predictions of the current method versions (true/false).", bool),
        SINCE,
        UNTIL,
    ],
)
class PredictionViewSet(ReadOnly):
    """Predictions of every method version on every target, with their outcome (dated by finish time).

    Paged by id with a cursor and no total count: follow ``next`` until it is null."""

    serializer_class = s.PredictionSerializer
    pagination_class = KeysetPagination
    page_params = CURSOR_PARAMS
    accepted_params = {
        "list": frozenset({"dataset", "method", "target", "status", "current", "since", "until"}),
    }

    def get_queryset(self):
        qs = (
            Prediction.objects.visible_to(self.request.user)
            .select_related("method_version__method", "target__dataset", "target__blind__week")
            .exclude(embargoed())  # blind predictions: after their week's release only
            .order_by("pk")
        )
        if self.action != "list":
            return qs
        if (v := self.q("dataset")) is not None:
            qs = qs.filter(target__dataset__slug=v)
        if (v := self.q("method")) is not None:
            qs = qs.filter(method_version__method__name=v)
        if (v := parse_int(self.q("target"), "target")) is not None:
            qs = qs.filter(target_id=v)
        if (v := self.q("status")) is not None:
            qs = qs.filter(status=v)
        if (v := self.q("current")) is not None:
            if v.lower() not in ("true", "false"):
                raise ValidationError({"current": "expected true or false"})
            qs = qs.filter(method_version__is_current=v.lower() == "true")
        if (d := parse_date(self.q("since"), "since")) is not None:
            qs = qs.filter(finished_at__gte=day_bounds(d)[0])
        if (d := parse_date(self.q("until"), "until")) is not None:
            qs = qs.filter(finished_at__lt=day_bounds(d)[1])
        return qs


@extend_schema(tags=["scores"])
@extend_schema(
    methods=["GET"],
    parameters=[
        DATASET,
        SUBSET,
        METHOD,
        DEFINITION,
        _param("target", "Target id.", int),
        _param("current", "Only scores of current method versions (default true).", bool),
    ],
)
class ScoreViewSet(ReadOnly):
    """Counts and scores of each prediction under each pair definition.

    Paged by id with a cursor and no total count: follow ``next`` until it is null."""

    serializer_class = s.ScoreSerializer
    pagination_class = KeysetPagination
    page_params = CURSOR_PARAMS
    accepted_params = {
        "list": frozenset({"dataset", "subset", "method", "definition", "target", "current"}),
    }

    def get_queryset(self):
        qs = (
            Score.objects.visible_to(self.request.user)
            .select_related(
                "prediction__method_version__method", "prediction__target__dataset",
                "prediction__target__blind__week",  # provenance: when the reference became public
            )
            .order_by("pk")
        )
        if self.action != "list":
            return qs
        current = (self.q("current") or "true").lower()
        if current not in ("true", "false"):
            raise ValidationError({"current": "expected true or false"})
        if current == "true":
            qs = qs.current(active_only=False, public_only=False)  # visibility: filtered above
        if (v := self.q("dataset")) is not None:
            qs = qs.filter(prediction__target__dataset__slug=v)
        if (v := self.q("subset")) is not None:
            qs = qs.filter(prediction__target__subsets__slug=v).distinct()
        if (v := self.q("method")) is not None:
            qs = qs.filter(prediction__method_version__method__name=v)
        if (v := self.q("definition")) is not None:
            qs = qs.filter(definition=v)
        if (v := parse_int(self.q("target"), "target")) is not None:
            qs = qs.filter(prediction__target_id=v)
        return qs


LATEST_TTL_S = 30

RANKING_FILTERS = [
    DATASET,
    SUBSET,
    DEFINITION,
    _param("method", "Only snapshots that rank this method (exact name)."),
]


@extend_schema(tags=["rankings"])
class RankingViewSet(ReadOnly):
    """Immutable, dated ranking snapshots; ``latest/`` gives the current ranking (or as it stood on a day)."""

    serializer_class = s.RankingSnapshotSerializer
    accepted_params = {
        "list": frozenset({"dataset", "subset", "definition", "method", "date", "since", "until"}),
        "latest": frozenset({"dataset", "subset", "definition", "method", "as_of"}),
    }

    def base_queryset(self):
        qs = RankingSnapshot.objects.select_related("dataset", "subset")
        if (v := self.q("dataset")) is not None:
            qs = qs.filter(dataset__slug=v)
        if (v := self.q("subset")) is not None:
            qs = qs.filter(subset__slug=v)
        if (v := self.q("definition")) is not None:
            qs = qs.filter(definition=v)
        return qs

    def get_queryset(self):
        if self.action != "list":
            return RankingSnapshot.objects.select_related("dataset", "subset")
        qs = self.base_queryset().order_by("-computed_at", "-pk")
        if (d := parse_date(self.q("date"), "date")) is not None:
            start, end = day_bounds(d)
            qs = qs.filter(computed_at__gte=start, computed_at__lt=end)
        if (d := parse_date(self.q("since"), "since")) is not None:
            qs = qs.filter(computed_at__gte=day_bounds(d)[0])
        if (d := parse_date(self.q("until"), "until")) is not None:
            qs = qs.filter(computed_at__lt=day_bounds(d)[1])
        return qs

    def _method_filter(self, rows: list[dict]) -> list[dict]:
        name = self.q("method")
        if name is None:
            return rows
        return [r for r in rows if any(m["method"] == name for m in r["methods"])]

    @extend_schema(
        parameters=[
            *RANKING_FILTERS,
            _param("date", "Snapshots computed on this day.", dt.date),
            SINCE,
            UNTIL,
        ],
        responses=s.RankingSummarySerializer(many=True),
    )
    def list(self, request, *args, **kwargs):
        """Snapshots newest first, each with its methods' rank, rank interval, MCC and targets (the whole
        report of one: ``/api/rankings/{id}/``)."""
        page = self.paginate_queryset(self.get_queryset().defer("report", "inputs"))
        return self.get_paginated_response(self._method_filter(snapshot_summaries(page)))

    def retrieve(self, request, *args, **kwargs):
        return Response(snapshot_data(self.get_object()))

    @extend_schema(
        parameters=[
            *RANKING_FILTERS,
            _param("as_of", "The ranking as it stood at the end of this day.", dt.date),
        ],
        responses=s.RankingSnapshotSerializer(many=True),
    )
    @action(detail=False, pagination_class=None)
    def latest(self, request, format=None):  # noqa: A002 - DRF passes the ".json" suffix as format
        """The newest snapshot of every subset × definition (matching the filters), optionally as of a day."""
        as_of = parse_date(self.q("as_of"), "as_of")
        filters = repr((tuple(self.q(k) for k in ("dataset", "subset", "definition", "method")), as_of))
        digest = hashlib.sha256(filters.encode()).hexdigest()[:32]  # user input never goes into a key as is
        json_key = f"{CACHE_PREFIX}:latest-json:{digest}"
        if request.accepted_renderer.format == "json" and (body := cache.get(json_key)) is not None:
            return HttpResponse(body, content_type="application/json")
        key = f"{CACHE_PREFIX}:latest:{digest}"
        pks = cache.get(key)
        if pks is None:  # which snapshots are newest: remembered briefly, a new one shows within LATEST_TTL_S
            qs = self.base_queryset()
            newest = RankingSnapshot.objects.filter(
                subset=OuterRef("subset"), definition=OuterRef("definition")
            )
            if as_of is not None:
                end = day_bounds(as_of)[1]
                qs = qs.filter(computed_at__lt=end)
                newest = newest.filter(computed_at__lt=end)
            newest = newest.order_by("-computed_at", "-pk").values("pk")[:1]
            pks = list(
                qs.annotate(newest=Subquery(newest))
                .filter(pk=F("newest"))
                .order_by("dataset__slug", "subset__order", "subset__slug", "definition")
                .values_list("pk", flat=True)
            )
            cache.set(key, pks, LATEST_TTL_S)
        data = self._method_filter([snapshot_data_by_pk(pk) for pk in pks])
        if request.accepted_renderer.format == "json":  # the common case, served from bytes while fresh
            body = JSONRenderer().render(data)
            cache.set(json_key, body, LATEST_TTL_S)
            return HttpResponse(body, content_type="application/json")
        return Response(data)

    @extend_schema(responses=s.VerdictSerializer(many=True))
    @action(detail=True, pagination_class=None)
    def verdicts(self, request, pk=None, format=None):  # noqa: A002 - the ".json" suffix
        """Every ordered pair of methods with its verdict and number of common targets."""
        snap = self.get_object()
        key = f"{CACHE_PREFIX}:verdicts:{snap.pk}"
        rows = cache.get(key)
        if rows is None:
            verdicts = snap.report.get("verdicts", {})
            common = snap.report.get("common_targets", {})
            rows = [
                {
                    "method_a": a,
                    "method_b": b,
                    "verdict": v,
                    "common_targets": common.get(a, {}).get(b, 0),
                    **pair_extras(snap.report, a, b),
                }
                for a, row in verdicts.items()
                for b, v in row.items()
            ]
            cache.set(key, rows, None)
        return Response(rows)
