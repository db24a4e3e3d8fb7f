"""The subset ranking page and the verdict matrix read a snapshot's report in parts, never whole (about 10 MB
at 100 methods, issue 28): they show what reading the whole report showed, and no query selects the
report column itself."""

from __future__ import annotations

import re

import pytest
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from comparna.models import RankingSnapshot
from comparna.services.pages import rankings as pages
from comparna.services.pages.rankings import (
    pair_equivalences,
    pairwise_matrix,
    snapshot_protocol,
    snapshot_view,
    store_ranking_rows,
)
from comparna.services.rankings import rank_subset
from comparna.views import rankings as views
from tests.django.test_ranking_honesty import world  # noqa: F401 - the fixture

pytestmark = pytest.mark.django_db

#: The report (or inputs) column selected as itself (not inside JSON_EXTRACT(...), -> or json_each(...)).
WHOLE_REPORT = re.compile(r'(?<!\()"comparna_rankingsnapshot"\."(report|inputs)"(?!\s*->)')


def _dig(report: dict, path) -> object:
    value = report
    for key in path:
        value = value.get(key) if isinstance(value, dict) else None
    return value


def _old_matrix(snapshot: RankingSnapshot) -> dict:
    """The matrix as it was computed from the whole report."""
    from comparna.services.pages.common import method_directory

    report = snapshot.report
    directory = method_directory()
    names = [r["method"] for r in report.get("methods", [])]
    pair_stats = report.get("pair_statistics", {}).get("pairs", {})
    rows = []
    for i, a in enumerate(names):
        cells = []
        for j, b in enumerate(names):
            pks = {"a": a, "b": b, "a_pk": directory.get(a, {}).get("pk"),
                   "b_pk": directory.get(b, {}).get("pk")}
            if i == j:
                cells.append({"kind": "self"})
            elif j > i:
                first, second = sorted((a, b))
                eq = pair_stats.get(first, {}).get(second, {}).get("equivalence")
                cells.append({"kind": "verdict", "value": report.get("verdicts", {}).get(a, {}).get(b, "?"),
                              "equivalence": eq["verdict"] if eq else None, **pks})
            else:
                common = report.get("common_targets", {}).get(a, {}).get(b, 0)
                cells.append({"kind": "common", "value": common, **pks})
        rows.append({"method": a, "pk": directory.get(a, {}).get("pk"), "cells": cells})
    return {"methods": names, "rows": rows, "has_equivalence": bool(pair_stats)}


def _report_variants(snapshot: RankingSnapshot) -> list[RankingSnapshot]:
    """The snapshot, one without its 2013 view and one stored before issue 27 (2013 verdicts at top level)."""
    report = snapshot.report
    no_2013 = {k: v for k, v in report.items() if k != "protocol_2013"}
    old = {k: v for k, v in report.items() if k not in ("protocol", "protocol_label", "protocol_2013")}
    out = [snapshot]
    for n, variant in enumerate((no_2013, old)):
        snapshot.pk = None
        snapshot.report = variant
        snapshot.inputs_hash = f"variant-{n}"
        snapshot.save()
        out.append(RankingSnapshot.objects.get(pk=snapshot.pk))
    return out


def test_protocol_and_matrix_are_what_the_whole_report_said(world):  # noqa: F811
    first, _ = rank_subset(subset=world["all"], definition="extended")
    for snapshot in _report_variants(first):
        deferred = RankingSnapshot.objects.defer("report").get(pk=snapshot.pk)
        for protocol in ("target", "2013", "bogus"):
            view, shown = snapshot_view(snapshot, protocol)
            parts, shown_parts = snapshot_protocol(deferred, protocol)
            assert shown_parts == shown
            assert parts == {"protocol_label": view.get("protocol_label"),
                             "conventions": view.get("conventions", {})}
        assert pairwise_matrix(deferred) == _old_matrix(snapshot)
    has, equivalences = pair_equivalences(first)
    pairs = first.report["pair_statistics"]["pairs"]
    assert has and equivalences == {(a, b): s["equivalence"]["verdict"] for a, seconds in pairs.items()
                                    for b, s in seconds.items() if s.get("equivalence")}
    assert equivalences  # the fixture has pairs with an equivalence verdict


def _pages(client, snapshot) -> dict[str, str]:
    args = [snapshot.dataset.slug, snapshot.subset.slug, snapshot.definition]
    out = {}
    for name, path in (
        ("ranking", reverse("subset-rankings", args=args)),
        ("ranking-2013", reverse("subset-rankings", args=args) + "?protocol=2013"),
        ("ranking-sorted", reverse("subset-rankings", args=args) + "?sort=mcc&dir=desc"),
        ("matrix", reverse("ranking-matrix", args=args)),
    ):
        response = client.get(path)
        assert response.status_code == 200
        out[name] = response.content.decode()
    return out


def test_ranking_and_matrix_pages_never_read_the_whole_report(client, world, monkeypatch):  # noqa: F811
    snapshot, _ = rank_subset(subset=world["all"], definition="extended")
    store_ranking_rows()
    cache.clear()
    with CaptureQueriesContext(connection) as queries:
        shown = _pages(client, snapshot)
    whole = [q["sql"] for q in queries if WHOLE_REPORT.search(q["sql"])]
    assert not whole, whole
    assert f'(of {snapshot.inputs["targets"]})' in shown["ranking"]
    note = f'on dataset version {snapshot.inputs["dataset_version"]} ({snapshot.inputs["targets"]} targets)'
    assert note in shown["ranking"] and note in shown["matrix"]
    assert f'on the {snapshot.report["robustness_targets"]} targets' in shown["ranking"]
    # the same pages as from the whole report
    cache.clear()
    monkeypatch.setattr(views, "snapshot_protocol", lambda snap, protocol="target": snapshot_view(
        RankingSnapshot.objects.get(pk=snap.pk), protocol))
    monkeypatch.setattr(views, "report_values", lambda snap, *paths: [
        _dig(RankingSnapshot.objects.get(pk=snap.pk).report, p) for p in paths])
    monkeypatch.setattr(views, "pairwise_matrix",
                        lambda snap: _old_matrix(RankingSnapshot.objects.get(pk=snap.pk)))
    monkeypatch.setattr(pages, "report_values", lambda *a: pytest.fail("not in the reference"))
    before = _pages(client, snapshot)
    for name, html in shown.items():
        assert _timeless(html) == _timeless(before[name]), name


def _timeless(html: str) -> str:
    """The page without its clock-dependent words (the progress ETA: "4 min", "≈ 18:30 UTC")."""
    html = re.sub(r"\d+(\.\d+)? (min|h|s|minutes?|hours?|seconds?|days?)\b", "N", html)
    return re.sub(r"\d\d:\d\d", "HH:MM", html)


def test_pages_never_compute_a_rankings_rows_in_a_request(client, world):  # noqa: F811
    """Between a new snapshot and the background task that stores its rows, the home page and the ranking
    page used to compute the rows in the request (every score of the subset read, bootstrap intervals of
    every method's mean MCC: 7–11 s for the home page in make run, stop 43). Now they show the snapshot's
    ranks and verdicts with the intervals marked "being computed", read no score, and cache nothing of
    that; once the rows are stored, the same pages show the intervals."""
    from comparna.tallies.models import RankingRows

    snapshot, _ = rank_subset(subset=world["all"], definition="extended")
    assert not RankingRows.objects.filter(snapshot=snapshot).exists()
    cache.clear()
    path = reverse("subset-rankings", args=[snapshot.dataset.slug, snapshot.subset.slug, "extended"])
    with CaptureQueriesContext(connection) as queries:
        ranking = client.get(path).content.decode()
        home = client.get("/").content.decode()
    read = [q["sql"] for q in queries if '"comparna_score"' in q["sql"]]
    assert not read, read[:2]
    assert "being computed" in ranking and "being computed" in home
    top = snapshot.report["methods"][0]["method"]
    assert top in ranking and top in home  # the ranks and verdicts are the snapshot's, at once
    store_ranking_rows()
    ranking = client.get(path).content.decode()  # the pending page was not cached
    assert "being computed" not in ranking and "families: [" in ranking
    assert "being computed" not in client.get("/").content.decode()
