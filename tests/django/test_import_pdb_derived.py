"""``import_dataset`` on the PDB-derived sets (issue 38), from real rows (tests/data/pdb_derived/): both pair
definitions stored per target, pseudoknot subsets ranked under their own definition, every entry's outcome
with its reason, the RNA3DB component as the cluster of the clustered statistics, idempotency."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.core.management import call_command

from comparna.models import Dataset, DatasetEntry, ImportRun, Target
from comparna.rna.canonical import structure_from_text
from comparna.services.uncertainty import cluster_labels
from tests.support.broker import recording_broker

pytestmark = pytest.mark.django_db

FIXTURES = Path(__file__).resolve().parents[1] / "data" / "pdb_derived"


def _import(name: str, file: str, tmp_path, capture) -> None:
    with recording_broker(tmp_path / name), capture(execute=True):
        call_command("import_dataset", name, str(FIXTURES / file), "--no-progress")


def test_spot_rna_sets_are_stored_under_both_definitions(tmp_path, django_capture_on_commit_callbacks):
    _import("spot-rna-pdb", "spot_rna_rows.csv", tmp_path, django_capture_on_commit_callbacks)
    dataset = Dataset.objects.get(slug="spot-rna-pdb")
    assert dataset.definitions == ["standard", "extended"]
    assert dataset.provenance["group"] == "PDB-derived" and dataset.provenance["schedule_priority"] == 1
    subsets = {s.slug: s for s in dataset.subsets.all()}
    assert subsets["pk-standard"].definitions() == ["standard"]
    assert subsets["ts1"].definitions() == ["standard", "extended"]
    entries = dict(DatasetEntry.objects.filter(dataset=dataset).values_list("source_id", "outcome"))
    assert entries.pop("TS1_1ehz-1-A") == "non_acgu" and set(entries.values()) == {"kept"}
    nwq = Target.objects.get(dataset=dataset, source_id="TS1_5nwq-1-A")
    assert set(nwq.subsets.values_list("slug", flat=True)) >= {"all", "ts1", "ts-hard"}
    for target in Target.objects.filter(dataset=dataset):
        refs = {r.definition: r for r in target.references.all()}
        standard = structure_from_text(target.length, refs["standard"].pairs).pairs
        extended = structure_from_text(target.length, refs["extended"].pairs).pairs
        assert standard <= extended and refs["extended"].n_pairs == len(extended)
        assert ("pk-standard" in set(target.subsets.values_list("slug", flat=True))) == \
            refs["standard"].pseudoknotted
    assert Target.objects.get(dataset=dataset, source_id="TS1_5ah5-1-D").references.get(
        definition="extended").has_multiplets

    _import("spot-rna-pdb", "spot_rna_rows.csv", tmp_path / "again", django_capture_on_commit_callbacks)
    run = ImportRun.objects.filter(kind="spot-rna-pdb").order_by("-pk").first()
    assert run.summary["created"] == 0 and DatasetEntry.objects.filter(dataset=dataset).count() == 6


def test_rna3db_components_are_the_clusters_and_exclusions_are_recorded(
    tmp_path, django_capture_on_commit_callbacks
):
    _import("rna3db-2d", "rna3db_rows.csv", tmp_path, django_capture_on_commit_callbacks)
    dataset = Dataset.objects.get(slug="rna3db-2d")
    rows = {e.source_id: e for e in DatasetEntry.objects.filter(dataset=dataset)}
    assert {k: v.outcome for k, v in rows.items()} == {
        "4lx5_A": "kept", "1sj3_R": "kept", "3ds7_B": "malformed", "1duh_A": "no_pairs",
        "1drz_B": "redundant", "1vc5_B": "redundant",
    }
    assert "never closed" in rows["3ds7_B"].detail and rows["1drz_B"].representative == "1sj3_R"
    targets = list(Target.objects.filter(dataset=dataset).values_list("pk", "source_id"))
    labels = cluster_labels(targets)
    by_sid = {sid: labels[pk] for pk, sid in targets}
    assert by_sid == {"4lx5_A": "RNA3DB component_3", "1sj3_R": "RNA3DB component_26"}
    lx5 = Target.objects.get(dataset=dataset, source_id="4lx5_A")
    assert lx5.references.get().pseudoknotted and lx5.provenance["sets"] == ["valid_set"]
    assert lx5.family == ""  # the component is a cluster, not an RNA family: Rfam still names the family


def test_pdb_hires_chains_are_annotated_here(tmp_path, django_capture_on_commit_callbacks):
    _import("pdb-hires", "hires_mmcif.tar.gz", tmp_path, django_capture_on_commit_callbacks)
    target = Target.objects.get(dataset__slug="pdb-hires")
    assert target.source_id == "1L2X_1_A:A" and target.pdb_id == "1L2X"
    refs = {r.definition: r for r in target.references.all()}
    assert (refs["standard"].n_pairs, refs["extended"].n_pairs) == (8, 14)
    assert {lw for _, _, lw in refs["standard"].classes} == {"cWW"}
    excluded = DatasetEntry.objects.get(dataset__slug="pdb-hires", source_id="1J6S_1_A:A")
    assert excluded.outcome == "pdb_rules" and "too short" in excluded.detail
