"""``import_dataset``: ArchiveII from its declaration on a real slice (targets, references, family subsets,
every entry's outcome, pipeline, idempotency) and the refusal of an undeclared or altered source."""

from __future__ import annotations

import csv
import gzip
import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from comparna.models import Dataset, DatasetEntry, ImportRun, Target
from comparna.rna.canonical import structure_from_text
from ingest.datasets.catalogue import ARCHIVEII, ARCHIVEII_CLASSES
from tests.support.broker import recording_broker

pytestmark = pytest.mark.django_db


@pytest.fixture
def archiveii_slice(tmp_path, repo_data):
    """The first 5 rows of each ArchiveII family (tRNAs and 5S rRNAs are close: some are redundant)."""
    with gzip.open(repo_data / ARCHIVEII.source, "rt", newline="") as fh:
        reader = csv.DictReader(fh)
        fields, rows, per = reader.fieldnames, [], {}
        for row in reader:
            prefix = row["id"].split("_")[0]
            if per.get(prefix, 0) < 5:
                per[prefix] = per.get(prefix, 0) + 1
                rows.append(row)
    path = tmp_path / "slice.csv.gz"
    with gzip.open(path, "wt", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)
    return path, {r["id"]: r for r in rows}


def test_archiveii_import(archiveii_slice, tmp_path, django_capture_on_commit_callbacks):
    path, rows = archiveii_slice
    with recording_broker(tmp_path / "broker") as broker, django_capture_on_commit_callbacks(execute=True):
        call_command("import_dataset", "archiveii", str(path), "--no-progress")
    run = ImportRun.objects.get(kind="archiveii")
    assert run.status == ImportRun.Status.DONE and run.summary["declared_source"] is False
    dataset = Dataset.objects.get(slug="archiveii")
    assert dataset.provenance["licence"].startswith("GPL-3.0")
    assert dataset.provenance["sha256"] == ARCHIVEII.sha256
    targets = Target.objects.filter(dataset=dataset)
    entries = {e.source_id: e for e in DatasetEntry.objects.filter(dataset=dataset)}
    assert set(entries) == set(rows)  # every row has a record, kept or not
    kept = {e for e, x in entries.items() if x.outcome == "kept"}
    assert kept == set(targets.values_list("source_id", flat=True)) and 9 <= len(kept) < len(rows)
    for e in entries.values():
        assert e.sequence == rows[e.source_id]["sequence"]
        assert e.family == ARCHIVEII_CLASSES[e.source_id.split("_")[0]]
        if e.outcome == "redundant":
            assert e.representative in kept and e.target is None
        else:
            assert e.outcome == "kept" and e.target.source_id == e.source_id
    for target in targets:
        row = rows[target.source_id]
        ref = target.references.get(definition="extended")
        pairs = {tuple(sorted(p)) for p in json.loads(row["base_pairs"])}
        assert structure_from_text(target.length, ref.pairs).pairs == frozenset(pairs)
        assert target.rna_class == ARCHIVEII_CLASSES[target.source_id.split("_")[0]]
        slugs = set(target.subsets.values_list("slug", flat=True))
        family_subsets = {s for s in slugs if s.startswith("family-")}
        assert len(family_subsets) == 1
        assert dataset.subsets.get(slug=family_subsets.pop()).name == target.rna_class
        assert ("pk" in slugs) == ref.pseudoknotted and ("short" in slugs) == (target.length <= 200)
    # every family subset exists, in the declared order, after the length and pseudoknot subsets
    assert list(dataset.subsets.values_list("slug", flat=True)) == [s.slug for s in ARCHIVEII.subsets()]
    new_ids = sorted(targets.values_list("pk", flat=True))
    assert sorted((m.task, m.args) for m in broker.sent()) == [
        ("ingest.tasks.assign_families_task", [new_ids]),
        ("predictors.tasks.queue_predictions_task", [new_ids, False]),
    ]

    with recording_broker(tmp_path / "again") as broker, django_capture_on_commit_callbacks(execute=True):
        call_command("import_dataset", "archiveii", str(path), "--no-progress")
    assert broker.sent() == [] and ImportRun.objects.first().summary["created"] == 0
    assert DatasetEntry.objects.filter(dataset=dataset).count() == len(rows)


def test_default_source_must_match_its_checksum(tmp_path, monkeypatch, archiveii_slice):
    """A file at the declared place that is not the declared file is refused; nothing is stored."""
    path, _ = archiveii_slice
    (tmp_path / "data" / "archiveii").mkdir(parents=True)
    (tmp_path / "data" / "archiveii" / "ArchiveII.csv.gz").write_bytes(path.read_bytes())
    monkeypatch.setenv("COMPARNA_DATASETS_DIR", str(tmp_path / "data"))
    with pytest.raises(CommandError, match="not the declared"):
        call_command("import_dataset", "archiveii", "--no-progress")
    run = ImportRun.objects.get()
    assert run.status == ImportRun.Status.FAILED and "SourceMismatch" in run.error
    assert not Target.objects.exists() and not DatasetEntry.objects.exists()


def test_unknown_dataset_name_is_an_error():
    with pytest.raises(CommandError, match="declared: archiveii, bprna-ts0, pdb-hires, rna3db-2d, rnastrand"):
        call_command("import_dataset", "bprna-new", "--no-progress")
    assert not ImportRun.objects.exists()
