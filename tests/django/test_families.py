"""Rfam family assignment, stored comparative inputs and comparative predictions on real tRNAs."""

from __future__ import annotations

import random

import pytest
from django.core.management import call_command

from comparna.models import Target
from comparna.rna.stockholm import read_stockholm, ungap
from ingest.models import ComparativeInput, FamilyAssignment
from ingest.rfam.inputs import sequence_identity
from ingest.services.rfam import assign_families, rfam_library
from predictors.models import Prediction
from predictors.services import execute_prediction, queue_predictions, sync_predictors
from tests.support.strand_slice import make_strand_slice

pytestmark = pytest.mark.django_db


@pytest.fixture
def targets(tmp_path, rnastrand_archive, django_capture_on_commit_callbacks):
    make_strand_slice(rnastrand_archive, tmp_path / "s", prefixes={"SPR": 6, "CRW": 2}, max_length=200,
                      acgu_only=True)
    with django_capture_on_commit_callbacks(execute=False):  # no broker here: tasks are called directly
        call_command("import_rnastrand", str(tmp_path / "s"), "--no-progress")
    rng = random.Random(3)
    shuffled = "".join(rng.choice("ACGU") for _ in range(90))
    dataset = Target.objects.first().dataset
    Target.objects.create(dataset=dataset, source_id="RANDOM", sequence=shuffled, length=90)
    return list(Target.objects.all())


def test_trnas_get_rf00005_inputs_and_comparative_predictions(targets):
    library = rfam_library()
    rows = assign_families(targets=targets)
    assert set(rows) == {t.pk for t in targets}
    trnas = [t for t in targets if t.source_id.startswith("SPR")]
    assert trnas and all(rows[t.pk].accession == "RF00005" for t in trnas)
    assert rows[Target.objects.get(source_id="RANDOM").pk].accession == ""
    assert all(r.rfam_version == library.version for r in rows.values())
    # Re-running under the same Rfam version assigns nothing new.
    assert assign_families(targets=targets) == {}
    assert FamilyAssignment.objects.count() == len(targets)

    for comparative in ComparativeInput.objects.all():
        (aln,) = read_stockholm(comparative.alignment)
        query = ungap(aln.row(comparative.query_name)).upper()
        assert query == comparative.target.sequence
        names = [line[1:].split()[0] for line in comparative.sequences.splitlines() if line.startswith(">")]
        if comparative.kind == "20":
            assert len(names) == 20 and comparative.random_seed is not None
            seqs = dict(zip(names, comparative.sequences.splitlines()[1::2], strict=True))
            for name, seq in seqs.items():
                if name != comparative.query_name:
                    assert 0.65 <= sequence_identity(seq, comparative.target.sequence) <= 0.95
    assert ComparativeInput.objects.filter(kind="seed").count() == len(trnas)

    versions = sync_predictors(only=["RNAfold-MFE", "RNAalifold(seed)", "CM-projection(20)"])
    queue_predictions(versions=versions, targets=targets)
    by_method = {v.method.name: v.predictions.count() for v in versions}
    assert by_method["RNAfold-MFE"] == len(targets)
    assert by_method["RNAalifold(seed)"] == len(trnas)
    assert by_method["CM-projection(20)"] == ComparativeInput.objects.filter(kind="20").count()

    prediction = Prediction.objects.filter(method_version__method__name="RNAalifold(seed)").first()
    done = execute_prediction(prediction_id=prediction.pk)
    assert done.status == "ok", done.error
    score = done.scores.get()
    assert score.tp >= 15  # a consensus cloverleaf recovers most of the tRNA's 20-21 pairs
