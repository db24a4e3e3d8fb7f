"""The pages ``bench_scale.py`` measures and how: every public page and API list endpoint of the data
(:func:`urls`), cold (the whole cache cleared before each request) and warm through Django's test client
(:func:`measure_pages`), and the comparison page over a computed comparison."""

from __future__ import annotations

import time

import numpy as np


def urls() -> dict[str, str]:
    """Every public page and API list endpoint, with the biggest dataset/method/target of the data."""
    from comparna.models import Dataset, RankingSnapshot, Target
    from comparna.snapshots.models import DatasetSnapshot
    from predictors.models import Method

    biggest = max(Dataset.objects.all(), key=lambda d: d.targets.count())
    pdb = Dataset.objects.get(slug="pdb")
    method = Method.objects.order_by("name").first()
    busiest = most_predicted_method() or method
    a, b = Method.objects.order_by("name").values_list("pk", flat=True)[:2]
    target = Target.objects.filter(dataset=biggest).order_by("-length").first()
    snap = RankingSnapshot.objects.filter(subset__dataset=biggest, subset__slug="all").first()
    rank = f"/rankings/{biggest.slug}/all/{snap.definition}/" if snap else f"/rankings/{biggest.slug}/"
    out = {
        "home": "/",
        "about": "/about/",
        "datasets": "/datasets/",
        "dataset targets": f"/datasets/{biggest.slug}/targets/",
        "targets": "/targets/",
        "target": f"/targets/{target.pk}/",
        "methods": "/methods/",
        "method": f"/methods/{method.pk}/",
        "method predictions": f"/methods/{method.pk}/predictions/",
        "method (most predictions)": f"/methods/{busiest.pk}/",
        "method status": f"/methods/{method.name}/status/",
        "families": f"/families/{biggest.slug}/",
        "families pdb": f"/families/{pdb.slug}/",
        "unseen": f"/unseen/{biggest.slug}/",
        "rankings index": "/rankings/",
        "dataset rankings": f"/rankings/{biggest.slug}/",
        "dataset rankings pdb": f"/rankings/{pdb.slug}/",
        "subset ranking": rank,
        "ranking matrix": rank + "matrix/",
        "compare": rank + f"compare/{a}/{b}/",
        "snapshots": "/snapshots/",
        "snapshot list": f"/snapshots/{biggest.slug}/",
        "polls": "/pdb/polls/",
        "blind": "/blind/",
        # the feeds (issue 37: the rankings feed read 300 reports whole, 7.7 s median in make run)
        "feed rankings": "/feeds/rankings.atom",
        "feed dataset rankings": f"/feeds/rankings/{biggest.slug}.atom",
        "feed method (most predictions)": f"/feeds/methods/{busiest.pk}.atom",
    }
    day = Target.objects.filter(dataset=pdb, release_date__isnull=False).order_by("-release_date").first()
    if day is not None:  # the weekly pages (issue 29), where this tree has them
        out["weeks"] = f"/weeks/{pdb.slug}/"
        out["week"] = f"/weeks/{pdb.slug}/{day.release_date.isoformat()}/"
    done = DatasetSnapshot.objects.filter(dataset=biggest, status="done").order_by("-number").first()
    if done is not None:
        out["snapshot"] = f"/snapshots/{biggest.slug}/{done.number}/"
    for name in ("datasets", "targets", "methods", "predictions", "scores", "rankings"):
        out[f"api {name}"] = f"/api/{name}/"
    return out


def most_predicted_method():
    """The public method with the most successful (scored) predictions: its page shows the most (failures,
    counts); from the tallies when they were counted, else counted here."""
    from django.db.models import Count, Sum

    from comparna.tallies.models import PredictionTally
    from predictors.models import Method, Prediction

    ok = PredictionTally.objects.filter(subset__isnull=True, status="ok", self_reported=False)
    top = (ok.values("method_version__method").annotate(n=Sum("n")).order_by("-n").first()
           or Prediction.objects.public().ok().values("method_version__method")
           .annotate(n=Count("id")).order_by("-n").first())
    return Method.objects.public().filter(pk=top["method_version__method"]).first() if top else None


def percentiles(cold: list[float], warm: list[float]) -> dict:
    """``cold_p50_s``, ``cold_p95_s``, ``warm_p50_s``, ``warm_p95_s`` of the request times."""
    return {
        f"{k}_p{q}_s": float(np.percentile(v, q))
        for k, v in (("cold", cold), ("warm", warm))
        for q in (50, 95)
    }


def measure_pages(paths: dict[str, str], repeats: int) -> tuple[dict, dict]:
    """Cold (cache cleared before each request) and warm p50/p95 of every path; and the bytes of each.

    One untimed request of each path comes first: what a server process does once in its life (importing the
    views, compiling the templates) is not the page's cost, and was the first page's p95 (the home page's).
    """
    from django.core.cache import cache
    from django.test import Client

    client = Client(HTTP_ACCEPT="text/html,application/json")
    pages, sizes = {}, {}
    for name, path in paths.items():
        cold, warm = [], []
        client.get(path)  # the process's first time: imports and templates (see above)
        for _ in range(repeats):
            cache.clear()
            t = time.perf_counter()
            r = client.get(path)
            cold.append(time.perf_counter() - t)
            if r.status_code == 404 and name.startswith("week"):
                break  # a tree without the weekly pages
            if r.status_code != 200:
                raise RuntimeError(f"{name} {path}: HTTP {r.status_code}")
        if r.status_code == 404:
            continue
        for _ in range(repeats):
            t = time.perf_counter()
            r = client.get(path)
            warm.append(time.perf_counter() - t)
        sizes[name] = len(r.content)
        pages[name] = {
            "path": path,
            "bytes": len(r.content),
            **percentiles(cold, warm),
        }
    return pages, sizes


def measure_computed_comparison(path: str, repeats: int, env: dict, run) -> tuple[float, dict] | None:
    """The comparison page over a computed comparison: a pair with many common targets is computed by a
    background task on the page's first request (issue 28), so the cold figures of :func:`measure_pages`
    (whole cache cleared, the computed comparison too) time its "being computed" answer. Here the task runs
    first (timed, in a child), then each cold request gets a new page-cache version (the page is built
    again; the computed comparison is kept) and each warm one the cached page. None for a tree without it."""
    from django.core.cache import cache
    from django.test import Client

    try:
        from comparna.services.pages.common import bump_data_version
        from comparna.tasks import compare_methods_task  # noqa: F401
    except ImportError:
        return None
    from comparna.models import RankingSnapshot

    parts = path.strip("/").split("/")  # rankings/<ds>/<subset>/<def>/compare/<a>/<b>
    snap = RankingSnapshot.objects.filter(
        subset__dataset__slug=parts[1], subset__slug=parts[2], definition=parts[3]
    ).first()
    if snap is None:
        return None
    cache.clear()
    seconds, _, _ = run(
        "from comparna.tasks import compare_methods_task\n"
        f"compare_methods_task({snap.pk}, {parts[5]}, {parts[6]})",
        env,
    )
    client = Client(HTTP_ACCEPT="text/html,application/json")
    cold, warm = [], []
    for _ in range(repeats):
        bump_data_version()
        t = time.perf_counter()
        r = client.get(path)
        cold.append(time.perf_counter() - t)
    for _ in range(repeats):
        t = time.perf_counter()
        r = client.get(path)
        warm.append(time.perf_counter() - t)
    if r.status_code != 200 or b"being computed" in r.content.lower():
        raise RuntimeError(f"computed comparison {path}: HTTP {r.status_code}, still being computed")
    row = {"path": path, "bytes": len(r.content), **percentiles(cold, warm)}
    return seconds, row
