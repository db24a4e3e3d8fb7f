"""E-mail digests to method owners: what happened to their methods since the last digest.

:func:`collect_notices` turns events into :class:`~comparna.owners.models.Notice` rows, each with a key that
makes recording it idempotent (the periodic task can run any number of times):

- a method's current version **finished a dataset** (every target of it has a final outcome; the key holds
  the version and the dataset's version, so a dataset that grows is finished again later);
- a method was **made public**;
- a public method's **rank changed** between the two newest ranking snapshots of a subset × definition.

:func:`send_digests` mails each owner (who wants digests) one e-mail with all their unsent notices and marks
them sent only once the mail server took it, so a mail server that is down delays the digest, never loses
it. Account approval is mailed at once (:mod:`comparna.owners.accounts`) and also listed here.
"""

from __future__ import annotations

import logging

from django.conf import settings
from django.core.mail import send_mail
from django.db import transaction
from django.db.models import Avg, Count, Q
from django.urls import reverse
from django.utils import timezone

from comparna.models import Dataset, RankingSnapshot, Score, Target
from comparna.owners.accounts import absolute
from comparna.owners.models import Notice, OwnerProfile
from predictors.models import Method, Prediction

log = logging.getLogger(__name__)
PENDING = (Prediction.Status.QUEUED, Prediction.Status.RUNNING, Prediction.Status.AWAITING)


def _notice(method: Method, kind: str, key: str, text: str) -> bool:
    _, created = Notice.objects.get_or_create(
        owner_id=method.owner_id, key=key, defaults={"kind": kind, "method": method, "text": text}
    )
    return created


def _finished(method: Method) -> int:
    version = method.current_version
    if version is None:
        return 0
    made = 0
    stats = (
        Prediction.objects.filter(method_version=version)
        .values("target__dataset")
        .annotate(
            n=Count("id"),
            pending=Count("id", filter=Q(status__in=PENDING)),
            ok=Count("id", filter=Q(status="ok")),
        )
    )
    for row in stats:
        if row["pending"] or not row["n"]:
            continue
        ds = Dataset.objects.get(pk=row["target__dataset"])
        if Target.objects.filter(dataset=ds).count() > row["n"] and not method.is_comparative:
            continue  # not every target queued yet
        means = [
            f"mean MCC {agg['m']:.3f} ({d}, {agg['n']} scored)"
            for d in ds.definitions
            if (
                agg := Score.objects.filter(
                    prediction__method_version=version, prediction__target__dataset=ds, definition=d
                ).aggregate(m=Avg("mcc"), n=Count("id"))
            )["n"]
        ]
        text = (
            f"{method.name} (version {version.version}) finished {ds.name}: {row['n']} targets, "
            f"{row['ok']} predicted, {row['n'] - row['ok']} without a structure; " + "; ".join(means)
        )
        made += _notice(
            method, Notice.Kind.DATASET_FINISHED, f"finished:{version.pk}:{ds.pk}:{ds.version}", text
        )
    return made


def rank_changes(snapshot: RankingSnapshot, previous: RankingSnapshot | None) -> list[dict]:
    """Methods whose rank differs between two snapshots of one subset × definition (new ones included)."""
    before = {r["method"]: r["rank"] for r in (previous.report.get("methods", []) if previous else [])}
    out = []
    for row in snapshot.report.get("methods", []):
        old = before.get(row["method"])
        if old != row["rank"]:
            out.append(
                {
                    "method": row["method"],
                    "from": old,
                    "to": row["rank"],
                    "of": len(snapshot.report["methods"]),
                }
            )
    return out


def previous_snapshot(snapshot: RankingSnapshot) -> RankingSnapshot | None:
    return (
        RankingSnapshot.objects.filter(subset=snapshot.subset_id, definition=snapshot.definition)
        .filter(
            Q(computed_at__lt=snapshot.computed_at) | Q(computed_at=snapshot.computed_at, pk__lt=snapshot.pk)
        )
        .order_by("-computed_at", "-pk")
        .first()
    )


def _rank_notices() -> int:
    owned = {m.name: m for m in Method.objects.public().filter(owner__isnull=False)}
    if not owned:
        return 0
    made = 0
    seen = set()
    for snap in RankingSnapshot.objects.select_related("subset", "dataset").order_by("-computed_at", "-pk")[
        :500
    ]:
        key = (snap.subset_id, snap.definition)
        if key in seen:
            continue  # only the newest snapshot of each subset × definition against the one before it
        seen.add(key)
        for change in rank_changes(snap, previous_snapshot(snap)):
            method = owned.get(change["method"])
            if method is None:
                continue
            where = f"{snap.dataset.name} / {snap.subset.name} / {snap.definition}"
            was = f"rank {change['from']}" if change["from"] is not None else "not ranked"
            text = f"{method.name}: {was} -> rank {change['to']} of {change['of']} in {where}"
            made += _notice(method, Notice.Kind.RANK_CHANGED, f"rank:{method.pk}:{snap.pk}", text)
    return made


def collect_notices() -> int:
    """Record every new event of owners' methods; returns how many notices were made."""
    made = 0
    for method in Method.objects.filter(owner__isnull=False):
        made += _finished(method)
        if method.published_at:
            made += _notice(
                method,
                Notice.Kind.PUBLISHED,
                f"published:{method.pk}",
                f"{method.name} is public: it enters the rankings at their next computation.",
            )
    return made + _rank_notices()


def send_digests() -> int:
    """One e-mail per owner with unsent notices; returns how many e-mails were sent."""
    sent = 0
    owners = (
        Notice.objects.filter(sent_at__isnull=True).values_list("owner_id", flat=True).distinct().order_by()
    )
    for owner_id in list(owners):
        profile = OwnerProfile.objects.select_related("user").filter(user_id=owner_id).first()
        with transaction.atomic():
            notices = list(Notice.objects.select_for_update().filter(owner_id=owner_id, sent_at__isnull=True))
            if not notices:
                continue
            if profile is None or not profile.notify or not profile.user.email or not profile.user.is_active:
                Notice.objects.filter(pk__in=[n.pk for n in notices]).update(sent_at=timezone.now())
                continue  # no digest wanted: marked so that they do not pile up
            lines = [f"- {n.created_at:%Y-%m-%d %H:%M} UTC  {n.text}" for n in notices]
            body = (
                f"Hello {profile.user.username},\n\nwhat happened to your CompaRNA methods:\n\n"
                + "\n".join(lines)
                + f"\n\nYour methods: {absolute(reverse('owner-home'))}\n"
                f"Stop these e-mails: untick 'e-mail digests' on that page.\n"
            )
            try:
                send_mail(
                    f"[CompaRNA] {len(notices)} update{'' if len(notices) == 1 else 's'} on your methods",
                    body,
                    settings.DEFAULT_FROM_EMAIL,
                    [profile.user.email],
                )
            except Exception:  # noqa: BLE001 - any mail error: kept unsent for the next run
                log.exception("digest to %s not sent; kept for the next run", profile.user.email)
                continue
            Notice.objects.filter(pk__in=[n.pk for n in notices]).update(sent_at=timezone.now())
            sent += 1
    return sent
