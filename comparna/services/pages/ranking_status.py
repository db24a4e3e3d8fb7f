"""The live part of a ranking page: settled or provisional, progress with an ETA, and the active methods
that the snapshot does not rank, each with the reason; with the snapshot's size (methods, targets, common
targets ranked, dataset version).

Computed in the background (issue 28): :func:`store_ranking_status`, run by the tallies refresh
(``comparna.tasks.refresh_tallies_task``) right after the counts, stores it for the newest snapshot of every
subset × definition in :class:`comparna.tallies.models.RankingStatus`; a page reads one small row per snapshot
(:func:`ranking_live`, :func:`ranking_lives`), cached for :data:`LIVE_TTL_S` seconds. Whether a newer
snapshot exists is asked at read time, so a row stored before the nightly ranking still says the right thing.
Without a row (a fresh instance, an older snapshot asked for, a snapshot newer than the last refresh) or with
one counted more than :data:`STALE` before the current tallies (its refresh failing), it is computed in the
request as before.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json

from django.db.models import Count, OuterRef, Subquery
from django.db.models.fields.json import KeyTransform
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from comparna.models import RankingSnapshot, Subset
from comparna.rna.thresholds import ALPHA, EQUIVALENCE_DELTA, MIN_COMMON
from comparna.services import progress, tallies
from comparna.services.pages.common import cache_get, cache_set, report_value, report_values
from comparna.services.ranking_scope import EMPTY_OUTCOMES, is_ranked
from comparna.tallies.models import RankingStatus
from predictors.models import Method, Prediction

LIVE_TTL_S = 30
#: A stored status counted this much before the current tallies is not shown (the store keeps failing): the
#: page computes it. Within it, the row of the previous count is shown while the new one is being stored.
STALE = dt.timedelta(minutes=10)


def not_ranked(snapshot: RankingSnapshot) -> list[dict]:
    """Active public methods without a rank in ``snapshot``: ``[{"method", "pk", "reason", "scored"}]``.

    In the snapshot but with only "?" verdicts: too few common targets. Not in it: no predictions on the
    subset, none finished yet, none successful, or scored after the snapshot was computed.
    """
    # the report's parts it needs, not the whole report (about 10 MB at 100 methods)
    rows = {r["method"]: r for r in report_value(snapshot, "methods") or []}
    out = []
    active = Method.objects.public().filter(active=True).order_by("name").values_list("name", "pk")
    comparative = set(
        Method.objects.public().filter(active=True).exclude(input_kind=Method.InputKind.SINGLE)
        .values_list("name", flat=True)
    )
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
    # the pair counts of the methods in it without a rank: both parts at once (the report read once, not
    # twice per method; the matrix page reads the same "common_targets")
    common, clusters = {}, {}
    if any(name in rows and not is_ranked(rows[name]) for name, _ in active):
        common, clusters = (part or {} for part in report_values(
            snapshot, ("common_targets",), ("pair_clusters",)))
    for name, pk in active:
        row = rows.get(name)
        if row is not None and is_ranked(row):
            continue
        counts = statuses.get(name, {})
        pending = sum(counts.get(s, 0) for s in progress.UNFINISHED)
        failed = sum(counts.get(s, 0) for s in EMPTY_OUTCOMES)
        ok = counts.get(Prediction.Status.OK, 0)
        if row is not None:
            most = max((common.get(name) or {}).values(), default=0)
            if len(rows) < 2:
                reason = "no other method to compare with yet"
            elif most < MIN_COMMON:
                reason = (
                    f"too few common targets: at most {most} with another method, "
                    f"{MIN_COMMON} needed for a verdict"
                )
            else:  # the target-level "?" of an under-powered pair (issue 27)
                families = max((clusters.get(name) or {}).values(), default=0)
                reason = (
                    f"no verdict yet: at most {most} common targets"
                    + (f" in {families} famil{'y' if families == 1 else 'ies'}" if families else "")
                    + f" with another method — not enough to show a difference at p < {ALPHA:g} "
                    f"or to show the two within ±{EQUIVALENCE_DELTA:g} MCC"
                )
        elif not counts and name in comparative:
            # run on a target once its Rfam family and homologue alignment exist (issue 37)
            reason = "waiting for its inputs: the Rfam family and homologue alignment of each target"
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


def _stamp(state: dict, prog: dict, missing: list[dict]) -> str:
    """Changes whenever what the pages show of the live state changes (part of their cache keys)."""
    shown = {
        "state": [state["label"], state["reasons"]],
        "progress": [prog["finished"], prog["pending"], (prog["eta"] or {}).get("text")],
        "methods": [[m["method"], m["finished"], (m["eta"] or {}).get("text")] for m in prog["methods"]],
        "not_ranked": [[m["method"], m["reason"]] for m in missing],
    }
    return hashlib.sha256(json.dumps(shown, sort_keys=True).encode()).hexdigest()[:16]


def _live(state: dict, prog: dict, missing: list[dict], sizes: dict) -> dict:
    return {"state": state, "progress": prog, "not_ranked": missing, "stamp": _stamp(state, prog, missing),
            **sizes}


def _sizes(snapshot: RankingSnapshot) -> dict:
    """``n_methods``, ``n_targets``, ``common_targets_ranked``, ``dataset_version`` of a snapshot, read from
    its report and inputs in parts."""
    methods, common = report_values(snapshot, ("methods",), ("common_targets_ranked",))
    targets, version = (
        RankingSnapshot.objects.filter(pk=snapshot.pk)
        .values_list(KeyTransform("targets", "inputs"), KeyTransform("dataset_version", "inputs"))
        .first()
        or (None, None)
    )
    return {"n_methods": len(methods or []), "n_targets": int(targets or 0), "common_targets_ranked": common,
            "dataset_version": version}


def compute_live(snapshot: RankingSnapshot) -> dict:
    """:func:`ranking_live` computed from the tallies and the report (what :func:`store_ranking_status`
    stores; a page's fallback without a stored row)."""
    state = progress.ranking_state(snapshot)
    prog = progress.prediction_progress(subset=snapshot.subset)
    return _live(state, prog, not_ranked(snapshot), _sizes(snapshot))


def _encode(prog: dict) -> dict:
    """The progress as JSON: its datetimes as ISO text (exactly), its counts by state as pairs (a jsonb
    object does not keep the order the page lists them in)."""
    prog = {**prog, "by_status": list(prog["by_status"].items())}
    return json.loads(json.dumps(prog, default=lambda o: o.isoformat() if isinstance(o, dt.datetime) else o))


def _decode(prog: dict) -> dict:
    """:func:`_encode`'s progress with its datetimes and counts by state again."""
    out = {**prog, "now": parse_datetime(prog["now"]) if prog.get("now") else prog.get("now"),
           "by_status": dict(prog["by_status"])}
    if out.get("eta"):
        out["eta"] = {**out["eta"], "at": parse_datetime(out["eta"]["at"])}
    out["methods"] = [
        {**m, "eta": {**m["eta"], "at": parse_datetime(m["eta"]["at"])} if m.get("eta") else m.get("eta")}
        for m in prog.get("methods", [])
    ]
    if "eta_sentence" not in out:  # stored before the sentence was (issue 37): worded here, the same way
        out["eta_sentence"] = progress.eta_sentence(out)
    return out


def store_ranking_status() -> int:
    """Store :func:`compute_live` of the newest snapshot of every subset × definition (a periodic task's
    work, after each tallies refresh) and drop the rows of snapshots no longer the newest; returns how many
    were stored (none before the first tallies refresh: the pages compute live then anyway)."""
    run = tallies.current_run()
    if run is None:
        return 0
    kept = []
    for subset in Subset.objects.select_related("dataset"):
        for definition in subset.definitions():
            snapshot = (
                subset.rankings.filter(definition=definition)
                .select_related("subset")
                .defer("report", "inputs")
                .first()
            )
            if snapshot is None:
                continue
            live = compute_live(snapshot)
            state = live["state"]
            RankingStatus.objects.update_or_create(
                snapshot=snapshot,
                defaults={
                    "n_methods": live["n_methods"],
                    "n_targets": live["n_targets"],
                    "common_targets_ranked": live["common_targets_ranked"],
                    "dataset_version": live["dataset_version"],
                    "pending": state["pending"],
                    "inputs_current": state["inputs_current"],
                    "progress": _encode(live["progress"]),
                    "not_ranked": live["not_ranked"],
                    "tally_at": run.computed_at,
                    "computed_at": timezone.now(),
                },
            )
            kept.append(snapshot.pk)
    RankingStatus.objects.exclude(snapshot__in=kept).delete()
    return len(kept)


def newest_snapshots(*, dataset) -> dict[tuple[int, str], RankingSnapshot]:
    """The newest snapshot of each subset × definition of ``dataset`` (of the definitions its subset has),
    without its report and inputs, by ``(subset pk, definition)``: one query, not one per ranking."""
    from django.db.models import F, Window
    from django.db.models.functions import RowNumber

    order = Window(RowNumber(), partition_by=[F("subset_id"), F("definition")],
                   order_by=[F("computed_at").desc(), F("pk").desc()])
    found = {
        (snap.subset_id, snap.definition): snap
        for snap in RankingSnapshot.objects.filter(dataset=dataset).defer("report", "inputs")
        .annotate(newest=order).filter(newest=1)
    }
    out = {}
    for subset in dataset.subsets.all():  # in the subsets' order, with the subset they show
        for definition in subset.definitions():
            if (snap := found.get((subset.pk, definition))) is not None:
                snap.subset = subset
                out[(subset.pk, definition)] = snap
    return out


def _usable(tally_at, pending: int, inputs_current: bool | None, *, run, newest: bool) -> bool:
    """Whether a stored row's state can be shown: counted within :data:`STALE` of the current tallies, and
    for the newest snapshot, either something is unfinished or its inputs were checked (a row stored while
    its snapshot was not the newest was never checked)."""
    if run is None or run.computed_at - tally_at > STALE:
        return False
    return not (newest and not pending and inputs_current is None)


def _newest_of(pks) -> dict[int, int]:
    """For each snapshot pk, the pk of the newest snapshot of its subset × definition (one query)."""
    newest_pk = (
        RankingSnapshot.objects.filter(subset=OuterRef("subset"), definition=OuterRef("definition"))
        .order_by("-computed_at", "-pk")
        .values("pk")[:1]
    )
    return dict(
        RankingSnapshot.objects.filter(pk__in=list(pks))
        .annotate(newest=Subquery(newest_pk))
        .values_list("pk", "newest")
    )


def _from_row(row: RankingStatus | None, *, newest: bool, run) -> dict | None:
    """The live state of a stored row, or None when it cannot be used (missing, stale, or stored while its
    snapshot was not the newest and so never checked)."""
    if row is None or not _usable(row.tally_at, row.pending, row.inputs_current, run=run, newest=newest):
        return None
    state = progress.state_of(pending=row.pending, newest=newest, inputs_current=row.inputs_current)
    sizes = {"n_methods": row.n_methods, "n_targets": row.n_targets,
             "common_targets_ranked": row.common_targets_ranked, "dataset_version": row.dataset_version}
    return _live(state, _decode(row.progress), row.not_ranked, sizes)


def ranking_lives(snapshots) -> dict[int, dict]:
    """:func:`ranking_live` of several snapshots (a dataset's page, the home page): each cached one, and
    the others from their stored rows in one query (computed only where none can be used)."""
    out: dict[int, dict] = {}
    missing = []
    for snapshot in snapshots:
        found = cache_get(f"ranking-live:{snapshot.pk}")
        if found is not None:
            out[snapshot.pk] = found
        else:
            missing.append(snapshot)
    if not missing:
        return out
    pks = [s.pk for s in missing]
    rows = {row.snapshot_id: row for row in RankingStatus.objects.filter(snapshot__in=pks)}
    newest = _newest_of(pks)
    run = tallies.current_run() if rows else None
    for snapshot in missing:
        live = _from_row(rows.get(snapshot.pk), newest=newest.get(snapshot.pk) == snapshot.pk, run=run)
        if live is None:
            live = compute_live(snapshot)
        cache_set(f"ranking-live:{snapshot.pk}", live, LIVE_TTL_S)
        out[snapshot.pk] = live
    return out


def ranking_live(snapshot: RankingSnapshot) -> dict:
    """``{"state", "progress", "not_ranked", "stamp", "n_methods", "n_targets", "common_targets_ranked",
    "dataset_version"}`` of a snapshot's page; ``stamp`` changes whenever what the page shows of the live
    state changes (part of the page's cache key). Read from the row :func:`store_ranking_status` stored,
    computed without one."""
    return ranking_lives([snapshot])[snapshot.pk]


def snapshot_states(snapshots) -> dict[int, dict]:
    """Each snapshot's :func:`comparna.services.progress.ranking_state`, from the state columns of the live
    state stored for the newest snapshot of its subset × definition (:class:`comparna.tallies.models.
    RankingStatus`, :func:`store_ranking_status`): a few queries for a whole list (the API's list of
    snapshots, a method's page), not the rows' progress and reasons. An older snapshot is provisional ("a
    newer snapshot exists") with the unfinished predictions of its subset, which are its newest snapshot's.
    A ranking without a row that can be used (missing, or stale: :func:`ranking_lives`'s rules) is asked of
    ``ranking_lives``, which computes it."""
    if not snapshots:
        return {}
    newest_of = _newest_of(snap.pk for snap in snapshots)
    rows = list(
        RankingStatus.objects.filter(snapshot__in=set(newest_of.values())).values_list(
            "snapshot_id", "pending", "inputs_current", "tally_at"
        )
    )
    run = tallies.current_run() if rows else None
    facts = {  # newest pk -> (pending, inputs_current) of the rows that can be used
        pk: (pending, current)
        for pk, pending, current, tally_at in rows
        if _usable(tally_at, pending, current, run=run, newest=True)
    }
    if unknown := set(newest_of.values()) - set(facts):
        lives = ranking_lives(
            RankingSnapshot.objects.filter(pk__in=unknown).select_related("dataset", "subset")
            .defer("report", "inputs")
        )
        facts |= {pk: (live["state"]["pending"], live["state"].get("inputs_current"))
                  for pk, live in lives.items()}
    out = {}
    for snap in snapshots:
        newest = newest_of[snap.pk]
        pending, current = facts[newest]
        out[snap.pk] = progress.state_of(
            pending=pending, newest=newest == snap.pk, inputs_current=current if newest == snap.pk else None
        )
    return out
