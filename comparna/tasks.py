"""Celery tasks of the comparna app (queue ``default``)."""

from __future__ import annotations

import logging

from celery import shared_task

from comparna.models import RankingSnapshot
from comparna.services.leakage import recompute_unseen
from comparna.services.pages.common import bump_data_version
from comparna.services.pages.families import refresh_family_summaries
from comparna.services.pages.methods import refresh_method_summaries, store_method_standings
from comparna.services.pages.ranking_status import store_ranking_status
from comparna.services.pages.rankings import store_ranking_rows
from comparna.services.rankings import recompute_rankings
from comparna.services.summaries import refresh_unranked_summaries, store_snapshot_summaries
from comparna.services.tallies import refresh_tallies
from comparna.snapshots.lifecycle import make_snapshot_if_changed
from comparna.snapshots.models import DatasetSnapshot
from predictors.models import Prediction


@shared_task(acks_late=True, queue="default", soft_time_limit=1700, time_limit=1800)
def recompute_rankings_task() -> int:
    """Nightly: store a new ranking snapshot for every subset whose inputs changed; returns how many.

    Datasets whose rankings changed also get a new dataset snapshot (only if their rows changed), so the
    archived rankings match the archived data: when the dataset is settled, and once as soon as its first
    ranking exists (so a downloader has its predictions hours before the backlog drains; the archive's
    contents count what was still queued).
    """
    results = recompute_rankings()
    try:  # the counts the pages read (progress, ETA) and the new snapshots' live state, at once: a periodic
        # tallies refresh queued behind a long rankings run expires (stop 43: make run's ETA stood still
        # for 20 min while the one default worker ran rankings back to back)
        refresh_tallies()
        store_ranking_status()
    except Exception:  # never lose the rankings stored above; the tallies refresh stores it within a minute
        logging.getLogger(__name__).exception("ranking status failed")
    try:  # their table rows (mean MCC intervals, overview): until stored, pages show them "pending"
        store_ranking_rows()
    except Exception:  # the tallies refresh stores them too
        logging.getLogger(__name__).exception("ranking rows failed")
    bump_data_version()  # the cached public pages show the new rankings
    for dataset in {snap.dataset for snap, new in results if new}:
        pending = Prediction.objects.filter(
            target__dataset=dataset, status__in=[Prediction.Status.QUEUED, Prediction.Status.RUNNING]
        )
        # archive settled data, not every batch of a running backlog; but a first one early
        if not pending.exists() or not has_snapshot_since_first_ranking(dataset):
            make_snapshot_if_changed(dataset)
    try:  # the leakage-aware rankings (a new row only where their inputs changed)
        recompute_unseen()
    except Exception:  # never lose the full rankings and snapshots stored above; retried next run
        logging.getLogger(__name__).exception("unseen rankings failed")
    bump_data_version()
    return sum(1 for _, new in results if new)


def has_snapshot_since_first_ranking(dataset) -> bool:
    """Whether a dataset snapshot with predictions was reserved (and not failed) after the dataset's first
    stored ranking that ranks something: the import's own snapshot, made before any prediction finished,
    does not count — nor does a ranking stored before any result (``make run`` ranks every subset at once,
    seconds before the import's snapshot: SPOT-RNA's PDB set then had no snapshot with a result for 45
    minutes, issue 38)."""
    from django.db.models import Exists, OuterRef

    from comparna.models import RankingSnapshotSummary

    # the small summaries (each snapshot's method rows), never the reports (megabytes each, thousands per
    # dataset over the years); only the few snapshots whose summary the background has not stored yet are
    # read from their reports
    first = (
        RankingSnapshotSummary.objects.filter(snapshot__dataset=dataset)
        .exclude(methods=[])
        .order_by("snapshot__computed_at")
        .values_list("snapshot__computed_at", flat=True)
        .first()
    )
    if first is None:
        unsummarised = list(
            RankingSnapshot.objects.filter(dataset=dataset)
            .filter(~Exists(RankingSnapshotSummary.objects.filter(snapshot=OuterRef("pk"))))
            .values_list("pk", flat=True)
        )  # (their ids first: the reports are read for these rows only)
        first = (
            RankingSnapshot.objects.filter(pk__in=unsummarised)
            .exclude(report__methods=[])
            .order_by("computed_at")
            .values_list("computed_at", flat=True)
            .first()
        )
    if first is None:  # nothing ranked yet: no early snapshot is due (the import's covers the dataset)
        return True
    return (
        DatasetSnapshot.objects.filter(dataset=dataset, include_predictions=True, created_at__gte=first)
        .exclude(status=DatasetSnapshot.Status.FAILED)
        .exists()
    )


@shared_task(acks_late=True, queue="default", soft_time_limit=540, time_limit=600, ignore_result=True)
def refresh_tallies_task() -> float:
    """Periodic: count the predictions per dataset/subset, method version and state into the tallies the
    pages read, check the newest rankings' inputs (:mod:`comparna.services.tallies`), store each newest
    ranking's live state from them (:func:`store_ranking_status`: first, so the pages read the new counts
    within seconds), and the table rows and each method's standing in them (:func:`store_ranking_rows`,
    :func:`store_method_standings`); returns the tallies' seconds."""
    seconds = refresh_tallies().seconds
    store_ranking_status()
    store_ranking_rows()
    store_method_standings()
    store_snapshot_summaries()  # the API's list of snapshots
    bump_data_version()  # the cached public pages show the new counts
    return seconds


@shared_task(acks_late=True, queue="default", soft_time_limit=1700, time_limit=1800, ignore_result=True)
def refresh_family_summaries_task() -> int:
    """Periodic: the families pages' numbers of every dataset whose scores changed (read by the pages,
    never computed in a request); returns how many were recomputed."""
    done = refresh_family_summaries() + refresh_unranked_summaries()
    if done:
        bump_data_version()
    return done


@shared_task(acks_late=True, queue="default", soft_time_limit=1700, time_limit=1800, ignore_result=True)
def refresh_method_summaries_task() -> int:
    """Periodic: the method pages' figures of every method whose scores changed (read by the pages, never
    computed in a request); returns how many were recomputed."""
    done = refresh_method_summaries(budget_s=1200)  # the rest at the next run, well within the time limit
    if done:
        bump_data_version()
    return done


@shared_task(acks_late=True, queue="default", soft_time_limit=540, time_limit=600, ignore_result=True)
def compare_methods_task(snapshot_pk: int, a_pk: int, b_pk: int) -> int:
    """On a comparison page's first request: compute the two methods' comparison (its bootstraps grow with
    their common targets) into the cache the page reads; returns the common targets."""
    from comparna.services.pages.comparison import compare_methods
    from predictors.models import Method

    snapshot = RankingSnapshot.objects.select_related("subset", "dataset").get(pk=snapshot_pk)
    comp = compare_methods(snapshot=snapshot, a=Method.objects.get(pk=a_pk), b=Method.objects.get(pk=b_pk))
    return comp.n_common  # the page's "being computed" answer is never cached: the next request shows it
