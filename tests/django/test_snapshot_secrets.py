"""A snapshot archive never carries a web service's secrets (issue 26): the endpoint's path, query string
(``api_key=...``) and any user info are stripped from the exported spec, the archive says which fields were
reduced, and it still imports into an empty database (the version, never run from an archive, keeps its
stored fingerprint)."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command
from django.test import Client

from comparna.models import Dataset, RankingSnapshot, ReferenceStructure, Score, Subset, Target
from comparna.services.rankings import recompute_rankings
from comparna.services.scoring import score_prediction
from comparna.snapshots.archive import iter_members
from comparna.snapshots.lifecycle import make_snapshot_if_changed, snapshot_path
from comparna.snapshots.models import DatasetSnapshot
from predictors.core.spec import PredictorSpec
from predictors.models import Method, MethodVersion, Prediction
from predictors.services import register_spec
from tests.factories import make_dataset, make_prediction, make_target

pytestmark = pytest.mark.django_db

ENDPOINT = "https://fold.example.org:8443/v1/SECRETPATHTOKEN/fold?api_key=SECRETKEY123&mode=mfe"


def test_endpoint_origin_keeps_only_scheme_host_and_port():
    from comparna.snapshots.columns import endpoint_origin

    assert endpoint_origin(ENDPOINT) == "https://fold.example.org:8443/"
    assert endpoint_origin("https://user:pw@[2001:db8::1]/x?token=t") == "https://[2001:db8::1]/"
    assert endpoint_origin("https://h.example.org:99999/x") == "https://h.example.org/"


def test_a_snapshot_strips_a_web_services_secrets_and_still_imports(settings, tmp_path):
    settings.SNAPSHOT_DIR = tmp_path / "snapshots"
    ds = make_dataset("strand")
    targets = [
        make_target("GGGGAAAACCCC", "((((....))))", dataset=ds),
        make_target("GGGAAAUCCCGCGAAAGCG", "(((....)))((....)).", dataset=ds),
    ]
    spec = PredictorSpec(name="KeyedWeb", program="keyedweb", version="1", argv=(), kind="web",
                         endpoint=ENDPOINT)
    version = register_spec(spec=spec, from_catalogue=False, active=True)  # public (staff registered it)
    for t in targets:  # answers of the service to jobs CompaRNA sent
        score_prediction(prediction=make_prediction(version, t, "." * t.length))
    # the API shows the endpoint to the method's owner only (a method without owner: to nobody)
    assert "SECRETKEY123" not in Client().get("/api/methods/").content.decode()
    recompute_rankings(dataset=ds)

    snap = make_snapshot_if_changed(ds, background=False)
    path = snapshot_path(snap)
    files = {name: fh.read() for name, fh in iter_members(path)}
    for name, data in files.items():
        for secret in (b"SECRETKEY123", b"SECRETPATHTOKEN", b"api_key"):
            assert secret not in data, (name, secret)
    [record] = json.loads(files[next(n for n in files if n.endswith("methods.json"))])
    assert record["spec"]["endpoint"] == "https://fold.example.org:8443/"
    assert record["spec_redacted"] == ["endpoint"] and record["fingerprint"] == version.fingerprint

    # the archive still imports: the redacted version keeps its fingerprint and links its predictions
    for model in (Score, Prediction, MethodVersion, Method, RankingSnapshot, ReferenceStructure,
                  Subset.targets.through, Subset, Target, DatasetSnapshot, Dataset):
        model.objects.all().delete()
    call_command("import_snapshot", str(path), "--no-rank", stdout=io.StringIO())
    restored = MethodVersion.objects.get(method__name="KeyedWeb")
    assert restored.fingerprint == version.fingerprint and not restored.runnable
    assert restored.spec["endpoint"] == "https://fold.example.org:8443/"
    assert Prediction.objects.filter(method_version=restored).count() == 2
