"""The data migrations of issue 36 on rows as they were before it: ``predictors 0009`` approves what was
public (ownerless methods' versions, public owners' current versions) and leaves an owner's other versions
private (a withdrawn proposal among them); ``0010`` marks web services' answers for public references
self-reported, not those on a blind target before its week's release."""

from __future__ import annotations

import datetime as dt

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

BEFORE = [("predictors", "0008_selfreported_pending_review"), ("blind", "0001_initial"),
          ("owners", "0001_initial"), ("comparna", "0006_ranking_snapshot_summary")]
AFTER = [("predictors", "0010_web_answers_self_reported")]


@pytest.mark.django_db(transaction=True)
def test_0009_approves_what_was_public_and_0010_marks_web_answers():
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    try:
        check_rows(executor)
    finally:  # back to the newest state whatever happened, for the tests after this one
        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes())


def check_rows(executor: MigrationExecutor) -> None:
    apps = executor.loader.project_state(BEFORE).apps
    User = apps.get_model("auth", "User")
    Dataset = apps.get_model("comparna", "Dataset")
    Target = apps.get_model("comparna", "Target")
    Method = apps.get_model("predictors", "Method")
    Version = apps.get_model("predictors", "MethodVersion")
    Prediction = apps.get_model("predictors", "Prediction")
    BlindWeek = apps.get_model("blind", "BlindWeek")
    BlindTarget = apps.get_model("blind", "BlindTarget")

    bob = User.objects.create(username="bob")
    ds = Dataset.objects.create(slug="s", name="s", kind="static", definitions=["extended"])
    static = Target.objects.create(dataset=ds, source_id="T1", sequence="GGGAAACCC", length=9)
    blind = Target.objects.create(dataset=ds, source_id="T2", sequence="GGGAAACCC", length=9)
    now = timezone.now()
    week = BlindWeek.objects.create(release_date=dt.date(2030, 1, 2), opens_at=now, deadline=now,
                                    release_at=now + dt.timedelta(days=3))
    BlindTarget.objects.create(week=week, target=blind, pdb_id="9XX1", entity_id="1", announced="GGGAAACCC")

    def version(method, fp, **kw):
        return Version.objects.create(method=method, version=fp, program="p", spec=kw.pop("spec", {}),
                                      fingerprint=fp, **kw)

    catalogue = Method.objects.create(name="Cat")
    cat_old, cat_now = version(catalogue, "c0", is_current=False), version(catalogue, "c1")
    owned = Method.objects.create(name="Bob", owner=bob, visibility="public", from_catalogue=False)
    withdrawn = version(owned, "b0", is_current=False)  # a proposal withdrawn before approval
    approved = version(owned, "b1")
    pending = version(owned, "b2", is_current=False, pending_review=True)
    private = Method.objects.create(name="Dev", owner=bob, visibility="development", from_catalogue=False)
    dev = version(private, "d1")
    web = Method.objects.create(name="Web", owner=bob, visibility="public", from_catalogue=False)
    web_version = version(web, "w1", spec={"kind": "web"})
    on_static = Prediction.objects.create(method_version=web_version, target=static, status="ok",
                                          finished_at=now)
    before_release = Prediction.objects.create(method_version=web_version, target=blind, status="ok",
                                               finished_at=now)
    computed = Prediction.objects.create(method_version=approved, target=static, status="ok", finished_at=now)

    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(AFTER)
    apps = executor.loader.project_state(AFTER).apps
    Version = apps.get_model("predictors", "MethodVersion")
    Prediction = apps.get_model("predictors", "Prediction")
    approved_ids = set(Version.objects.filter(approved_at__isnull=False).values_list("pk", flat=True))
    assert approved_ids == {cat_old.pk, cat_now.pk, approved.pk, web_version.pk}
    assert not {withdrawn.pk, pending.pk, dev.pk} & approved_ids
    reported = dict(Prediction.objects.values_list("pk", "self_reported"))
    assert reported == {on_static.pk: True, before_release.pk: False, computed.pk: False}
