"""An owner's methods: register (a new version when edited), deactivate, ask for publication, progress,
scores and the comparison with a public method on the same targets — everything the owner's pages and
API show, and nothing of anyone else's development methods."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import Avg, Count, Q
from django.urls import reverse
from django.utils import timezone

from comparna.models import Dataset, Score, Subset, Target
from comparna.owners.accounts import _mail, absolute, quoted
from comparna.owners.models import OwnerProfile
from comparna.owners.names import NAME_UNAVAILABLE, conflicts, name_problem, normalise_name
from comparna.rna import statistics, thresholds
from comparna.rna.ranking import COUNT_FIELDS as ENGINE_COUNTS
from comparna.rna.ranking import MIN_COMMON, CountsTable, target_level_ranking
from comparna.services.uncertainty import cluster_labels
from predictors.models import Method, MethodVersion, Prediction, public_prediction_q
from predictors.publication import propose_version
from predictors.services import queue_predictions, register_spec

PENDING = (Prediction.Status.QUEUED, Prediction.Status.RUNNING, Prediction.Status.AWAITING)


class NotAllowed(Exception):
    """The owner may not do this (not approved, not their method, name taken)."""


def is_approved_owner(user) -> bool:
    profile = OwnerProfile.objects.filter(user=user).first() if user.is_authenticated else None
    return profile is not None and profile.approved


def owned(user, pk) -> Method:
    """The user's method ``pk``; :class:`Method.DoesNotExist` for anyone else's (a 404, never a 403:
    a development method's existence is private too)."""
    if not user.is_authenticated:  # an anonymous user's pk is None, which would match ownerless methods
        raise Method.DoesNotExist
    return Method.objects.get(pk=pk, owner=user)


@transaction.atomic
def register_owner_method(*, user, spec, method: Method | None = None) -> MethodVersion:
    """Register ``spec`` as the owner's new development method (``method`` None) or as a new version of
    their ``method``, and queue it on every target (static sets and the weekly PDB set).

    A version of a *public* method that changes what runs is only proposed (issue 26,
    :func:`predictors.publication.propose_version`): it runs and its owner sees it, but the version staff
    approved stays public and ranked until staff approve the new one (staff are asked by e-mail).
    """
    if not is_approved_owner(user):
        raise NotAllowed("your account is not approved yet")
    if method is None:
        problem = name_problem(spec.name) if spec.name == normalise_name(spec.name) else "name not NFKC"
        if problem:
            raise NotAllowed(problem)
        if name_conflicts(spec.name, user=user):  # a public method's, or one of the owner's own
            raise NotAllowed(NAME_UNAVAILABLE)
    elif method.owner_id != user.pk or spec.name != method.name:
        raise NotAllowed("not your method")
    if method is not None and method.is_public:
        version = propose_version(method=method, spec=spec)
        if version.pending_review or version.proposed_training_data is not None:
            _ask_staff_to_review(method=method, version=version)
    else:  # a development method: nothing of it is public until staff make it public (approving it)
        if method is None:
            method = Method.objects.create(
                name=spec.name, owner=user, visibility=Method.Visibility.DEVELOPMENT, from_catalogue=False
            )
        version = register_spec(spec=spec, from_catalogue=False, active=True, approved=False, method=method)
    queue_predictions(versions=[version], targets=None)
    return version


def _staff_addresses() -> list[str]:
    return list(
        get_user_model()
        .objects.filter(is_staff=True, is_active=True)
        .exclude(email="")
        .values_list("email", flat=True)
    )


def _ask_staff_to_review(*, method: Method, version: MethodVersion) -> None:
    """E-mail staff (after commit) that a public method's owner proposed a version that changes what runs."""
    staff = _staff_addresses()
    what = (
        f"a new version of the public method {method.name} (program {quoted(version.program, 100)}, version "
        f"{quoted(version.version, 100)}, fingerprint {version.fingerprint[:12]}). It runs but stays "
        "private; the approved version stays ranked"
        if version.pending_review
        else f"new declared training data for the public method {method.name}. The unseen ranking keeps the "
        "approved declaration"
    )
    body = (
        f"{method.owner} saved {what} until you approve the change with the action 'Make public' at\n\n  "
        f"{absolute(reverse('admin:predictors_method_changelist'))}?visibility__exact=public"
    )
    subject = f"{'New version' if version.pending_review else 'Training data'} to review: {method.name}"
    transaction.on_commit(lambda: _mail(staff, subject, body))


def name_conflicts(name: str, *, user) -> bool:
    """Whether ``name`` is, or looks like (:func:`comparna.owners.names.skeleton`), the name of a public
    method, of a catalogue or staff-registered one, or of one of ``user``'s own methods.

    Never of another owner's development method (issue 36): the answer would tell that a private method of
    that name exists, so such names may be shared; the first made public keeps it
    (:func:`predictors.publication.publish` refuses the other, whose owner registers it under another name).
    Reads those methods' names: a few hundred at most, and a look-alike cannot be found by an index on the
    exact name.
    """
    mine = Q(owner=user) if user is not None and user.is_authenticated else Q(pk__in=[])
    names = Method.objects.filter(
        Q(visibility=Method.Visibility.PUBLIC) | Q(owner__isnull=True) | mine
    ).values_list("name", flat=True)
    return conflicts(name, names.iterator())


def set_active(*, method: Method, active: bool) -> int:
    """Deactivate (nothing more is sent or run: workers leave its queued predictions queued; results stay)
    or reactivate (its queued predictions are sent again, missing ones queued); returns how many were
    created."""
    with transaction.atomic():
        Method.objects.filter(pk=method.pk).update(active=active)
        method.active = active
        versions = list(MethodVersion.objects.to_run().filter(method=method)) if active else []
        if versions:  # the current version and one awaiting approval
            # Those sent before the deactivation were left queued by the workers: send them again.
            Prediction.objects.filter(
                method_version__in=versions, status=Prediction.Status.QUEUED
            ).update(dispatched_at=None)
            return queue_predictions(versions=versions, targets=None)
    return 0


@transaction.atomic
def request_publication(*, method: Method) -> None:
    """Ask staff to make a development method public (an e-mail to every staff member)."""
    if method.is_public or method.publication_requested_at is not None:
        return
    method.publication_requested_at = timezone.now()
    method.save(update_fields=["publication_requested_at"])
    staff = _staff_addresses()
    body = (
        f"{method.owner} asks for {method.name} to be made public. Review it and use the action "
        f"'Make public' at\n\n  {absolute(reverse('admin:predictors_method_changelist'))}"
        "?visibility__exact=development"
    )
    transaction.on_commit(lambda: _mail(staff, f"Publication requested: {method.name}", body))


# -- what the owner sees -----------------------------------------------------------------------------------
def progress(version: MethodVersion | None) -> dict:
    """Counts of the version's predictions per state, with pending/finished totals."""
    counts = {s.value: 0 for s in Prediction.Status}
    if version is not None:
        for status, n in version.predictions.values_list("status").annotate(n=Count("id")).order_by():
            counts[status] = n
    total = sum(counts.values())
    pending = sum(counts[s] for s in PENDING)
    return {
        "counts": counts,
        "total": total,
        "pending": pending,
        "finished": total - pending,
        "percent": int(100 * (total - pending) / total) if total else 0,
    }


def dataset_summaries(method: Method) -> list[dict]:
    """Per dataset: targets, predictions by outcome, and the mean scores of the version the owner last
    saved (:attr:`Method.working_version`; self-reported uploads included: this is the owner's view)."""
    version = method.working_version
    out = []
    for ds in Dataset.objects.order_by("slug"):
        preds = Prediction.objects.filter(method_version=version, target__dataset=ds)
        by = dict(preds.values_list("status").annotate(n=Count("id")).order_by())
        row = {
            "dataset": ds,
            "targets": Target.objects.filter(dataset=ds).count(),
            "predictions": sum(by.values()),
            "ok": by.get("ok", 0),
            "self_reported": preds.filter(self_reported=True).count(),
            "pending": sum(by.get(s, 0) for s in PENDING),
            "failed": sum(n for s, n in by.items() if s not in PENDING and s != "ok"),
            "scores": [],
        }
        for definition in ds.definitions:
            agg = Score.objects.filter(
                prediction__method_version=version, prediction__target__dataset=ds, definition=definition
            ).aggregate(
                n=Count("id"), mcc=Avg("mcc"), f1=Avg("f1"), ppv=Avg("ppv"), sensitivity=Avg("sensitivity")
            )
            if agg["n"]:
                row["scores"].append({"definition": definition, **agg})
        out.append(row)
    return out


def recent_outcomes(method: Method, *, limit: int = 50, status: str | None = None):
    qs = Prediction.objects.filter(method_version=method.working_version)
    if status:
        qs = qs.filter(status=status)
    return qs.select_related("target", "target__dataset").order_by("-finished_at", "-pk")[:limit]


def comparable_methods(method: Method):
    """Public active methods to compare with (not the method itself)."""
    return Method.objects.public().filter(active=True).exclude(pk=method.pk).order_by("name")


@dataclass
class OwnerComparison:
    """The owner's method against a public one on their common targets of a subset × definition."""

    subset: Subset
    definition: str
    n_common: int
    mean_mcc: tuple[float | None, float | None]
    wins: int
    losses: int
    ties: int
    verdict: str
    pvalue: float | None
    paired: statistics.PairedComparison | None
    rows: list[dict]


def compare_with_public(
    *, method: Method, other: Method, subset: Subset, definition: str, seed: int
) -> OwnerComparison:
    """The rankings' target-level test (clustered Wilcoxon signed-rank on per-target MCC differences, families
    as units, α of :mod:`comparna.rna.thresholds`; one pair, so no multiplicity adjustment) and the paired
    statistics of two methods' scores on the targets both have scored; ``other`` must be public (and only
    its publicly counted scores are used: not its owner's self-reported uploads)."""
    if not other.is_public:
        raise NotAllowed("compare with a public method")
    versions = {method.working_version.pk: 0, other.current_version.pk: 1}
    rows = Score.objects.filter(
        Q(prediction__method_version=method.working_version)
        | (Q(prediction__method_version=other.current_version) & public_prediction_q("prediction__")),
        definition=definition,
        prediction__target__subsets=subset,
    ).values_list(
        "prediction__method_version_id", "prediction__target__source_id", "prediction__target_id", "mcc",
        *ENGINE_COUNTS,
    )
    by_target: dict[str, dict[int, tuple]] = {}
    target_pk: dict[str, int] = {}
    for vid, sid, tid, mcc, *counts in rows:
        by_target.setdefault(sid, {})[versions[vid]] = (mcc, counts)
        target_pk[sid] = tid
    common = sorted(sid for sid, d in by_target.items() if len(d) == 2)
    n = len(common)
    a = np.array([by_target[s][0][0] for s in common])
    b = np.array([by_target[s][1][0] for s in common])
    table = CountsTable(
        ("a", "b"),
        tuple(common),
        np.array([[by_target[s][k][1] for s in common] for k in (0, 1)], dtype=np.int64).reshape(
            2, n, len(ENGINE_COUNTS)
        ),
        np.ones((2, n), dtype=bool),
    )
    verdict, pvalue = "?", None
    if n >= MIN_COMMON:
        labels = cluster_labels((target_pk[sid], sid) for sid in common)
        result = target_level_ranking(table, clusters=[labels[target_pk[sid]] for sid in common], seed=seed)
        p = float(result.p_values[0, 1])
        pvalue = None if np.isnan(p) else p
        verdict = {
            "+": "better",
            "-": "worse",
            "=": f"equivalent (within ±{thresholds.EQUIVALENCE_DELTA:g} MCC)",
            "?": "not decided: too few targets or families, or the test and the mean disagree",
        }[str(result.verdicts[0, 1])]
    paired = statistics.compare_paired(a, b, seed=seed) if n >= 3 else None
    return OwnerComparison(
        subset=subset,
        definition=definition,
        n_common=n,
        mean_mcc=(float(a.mean()) if n else None, float(b.mean()) if n else None),
        wins=int((a > b).sum()),
        losses=int((a < b).sum()),
        ties=int((a == b).sum()),
        verdict=verdict,
        pvalue=pvalue,
        paired=paired,
        rows=[{"target": s, "a": float(x), "b": float(y)} for s, x, y in zip(common, a, b, strict=True)][
            :500
        ],
    )


def owner_query(user) -> Q:
    """Scores of the user's own methods (for the API)."""
    return Q(prediction__method_version__method__owner=user)
