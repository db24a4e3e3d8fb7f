"""The RNA STRAND import on a real slice: filters, provenance, subsets, idempotency, malformed files."""

from __future__ import annotations

import pytest
from django.core.management import call_command

from comparna.models import Dataset, ImportRun, ReferenceStructure, Target
from comparna.rna.canonical import structure_from_text
from comparna.rna.formats import read_bpseq
from tests.support.broker import recording_broker
from tests.support.strand_slice import make_strand_slice

pytestmark = pytest.mark.django_db


@pytest.fixture
def strand_slice(tmp_path, rnastrand_archive):
    ids = make_strand_slice(
        rnastrand_archive, tmp_path / "slice",
        prefixes={"SPR": 12, "PDB": 8, "CRW": 4, "TMR": 2, "RFA": 4}, max_length=600,
    )
    # A malformed file: position 3 pairs with 99 in a 5-nt sequence.
    (tmp_path / "slice" / "BAD_00001.bpseq").write_text("# File BAD\n1 G 0\n2 G 0\n3 A 99\n4 C 0\n5 C 0\n")
    return tmp_path / "slice", ids


def snapshot():
    return (
        sorted(Target.objects.values_list("source_id", "sequence", "length")),
        sorted(ReferenceStructure.objects.values_list("target__source_id", "definition", "pairs")),
        sorted(Target.subsets.through.objects.values_list("target__source_id", "subset__slug")),
        list(Dataset.objects.values_list("slug", "version")),
    )


def test_import_filters_stores_references_and_is_idempotent(
    strand_slice, tmp_path, django_capture_on_commit_callbacks
):
    path, ids = strand_slice
    with recording_broker(tmp_path / "broker") as broker, django_capture_on_commit_callbacks(execute=True):
        call_command("import_rnastrand", str(path), "--no-progress")
    sent = broker.sent()
    run = ImportRun.objects.get()
    assert run.status == ImportRun.Status.DONE
    targets = Target.objects.filter(dataset__slug="rnastrand")
    assert 0 < targets.count() <= len(ids)
    assert not targets.filter(source_id="BAD_00001").exists()
    assert "BAD_00001" in str(run.summary)
    for target in targets:
        # Filters of SCIENCE.md §3, checked on what was stored.
        assert target.length >= 20 and set(target.sequence) <= set("ACGU")
        raw_seq, raw_structure = read_bpseq((path / f"{target.source_id}.bpseq").read_text())
        assert raw_seq.upper().replace("T", "U") == target.sequence
        ref = target.references.get(definition="extended")
        assert structure_from_text(target.length, ref.pairs) == raw_structure
        assert ref.pseudoknotted == raw_structure.is_pseudoknotted
        slugs = set(target.subsets.values_list("slug", flat=True))
        assert "all" in slugs
        bin_ = "short" if target.length <= 200 else "medium" if target.length <= 800 else "long"
        assert bin_ in slugs
        assert ("pk" in slugs) == raw_structure.is_pseudoknotted
        assert target.source_database
    # tRNAs from the Sprinzl database are highly similar: CD-HIT-EST must have removed some of them.
    assert targets.filter(source_id__startswith="SPR").count() < 12

    # New targets enter the pipeline exactly as the PDB poll's do: every method queued, families assigned.
    new_ids = sorted(targets.values_list("pk", flat=True))
    assert sorted((m.task, m.args, m.queue) for m in sent) == [
        ("ingest.tasks.assign_families_task", [new_ids], "families"),
        ("predictors.tasks.queue_predictions_task", [new_ids, False], "default"),
    ]

    before = snapshot()
    with recording_broker(tmp_path / "again") as broker, django_capture_on_commit_callbacks(execute=True):
        call_command("import_rnastrand", str(path), "--no-progress")
    assert broker.sent() == []  # nothing new, nothing to do
    assert snapshot() == before
    assert ImportRun.objects.count() == 2
    assert ImportRun.objects.first().summary["created"] == 0
