"""The live part of a ranking page: settled or provisional, progress with an ETA, and the active methods
that the snapshot does not rank, each with the reason. Cached for :data:`LIVE_TTL_S` seconds."""

from __future__ import annotations

import hashlib
import json

from django.db.models import Count

from comparna.models import RankingSnapshot
from comparna.rna.thresholds import ALPHA, MIN_COMMON, VERDICT_MARGIN
from comparna.services import progress, tallies
from comparna.services.pages.common import cached, report_value
from comparna.services.ranking_scope import EMPTY_OUTCOMES, is_ranked
from predictors.models import Method, Prediction

LIVE_TTL_S = 30


def not_ranked(snapshot: RankingSnapshot) -> list[dict]:
    """Active public methods without a rank in ``snapshot``: ``[{"method", "pk", "reason", "scored"}]``.

    In the snapshot but with only "?" verdicts: too few common targets. Not in it: no predictions on the
    subset, none finished yet, none successful, or scored after the snapshot was computed.
    """
    # the report's parts it needs, not the whole report (about 10 MB at 100 methods)
    rows = {r["method"]: r for r in report_value(snapshot, "methods") or []}
    out = []
    active = Method.objects.public().filter(active=True).order_by("name").values_list("name", "pk")
    # counted in the background (issue 28); live only before the first count
    statuses = tallies.subset_status_counts(subset=snapshot.subset)
    if statuses is None:
        statuses = {}
        for name, status, n in (
            Prediction.objects.public()
            .filter(
                method_version__is_current=True,
                method_version__method__active=True,
                target__subsets=snapshot.subset,
            )
            .values_list("method_version__method__name", "status")
            .annotate(n=Count("id"))
            .order_by()
        ):
            statuses.setdefault(name, {})[status] = n
    for name, pk in active:
        row = rows.get(name)
        if row is not None and is_ranked(row):
            continue
        counts = statuses.get(name, {})
        pending = sum(counts.get(s, 0) for s in progress.UNFINISHED)
        failed = sum(counts.get(s, 0) for s in EMPTY_OUTCOMES)
        ok = counts.get(Prediction.Status.OK, 0)
        if row is not None:
            most = max((report_value(snapshot, "common_targets", name) or {}).values(), default=0)
            if len(rows) < 2:
                reason = "no other method to compare with yet"
            elif most < MIN_COMMON:
                reason = (
                    f"too few common targets: at most {most} with another method, "
                    f"{MIN_COMMON} needed for a verdict"
                )
            else:  # the target-level "?" of an under-powered pair (issue 27)
                families = max((report_value(snapshot, "pair_clusters", name) or {}).values(), default=0)
                reason = (
                    f"no verdict yet: at most {most} common targets"
                    + (f" in {families} famil{'y' if families == 1 else 'ies'}" if families else "")
                    + f" with another method — not enough to show a difference at p < {ALPHA:g} "
                    f"or to rule out one of {VERDICT_MARGIN:g} MCC"
                )
        elif not counts:
            reason = "no predictions queued on these targets"
        elif ok and not pending:
            reason = (
                f"{ok} prediction{'s' if ok != 1 else ''} scored after this snapshot; "
                "ranked at the next recomputation"
            )
        elif ok:
            reason = (
                f"{ok} scored after this snapshot, {pending} still queued or running; "
                "ranked at the next recomputation"
            )
        elif pending:
            reason = f"no prediction finished yet ({pending} queued or running)"
        elif failed:
            reason = f"no successful prediction ({failed} failed, timed out or too long)"
        else:
            reason = "no scored prediction (infrastructure errors only)"
        out.append(
            {
                "method": name,
                "pk": pk,
                "reason": reason,
                "scored": row["targets"] if row else 0,
                "pending": pending,
            }
        )
    return out


def ranking_live(snapshot: RankingSnapshot) -> dict:
    """``{"state", "progress", "not_ranked", "stamp"}`` of a snapshot's page; ``stamp`` changes whenever
    what the page shows of them changes (part of the page's cache key)."""

    def compute() -> dict:
        state = progress.ranking_state(snapshot)
        prog = progress.prediction_progress(subset=snapshot.subset)
        missing = not_ranked(snapshot)
        shown = {
            "state": [state["label"], state["reasons"]],
            "progress": [prog["finished"], prog["pending"], (prog["eta"] or {}).get("text")],
            "methods": [[m["method"], m["finished"], (m["eta"] or {}).get("text")] for m in prog["methods"]],
            "not_ranked": [[m["method"], m["reason"]] for m in missing],
        }
        stamp = hashlib.sha256(json.dumps(shown, sort_keys=True).encode()).hexdigest()[:16]
        return {"state": state, "progress": prog, "not_ranked": missing, "stamp": stamp}

    return cached(f"ranking-live:{snapshot.pk}", compute, timeout=LIVE_TTL_S)
