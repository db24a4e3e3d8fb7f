"""RNA STRAND entries of several molecules are left out, with the reason recorded (issue 37): PDB_00447 is
four copies of 1HVU's 30-nt pseudoknot written as one 120-nt sequence. Real entries, read from the archive
in data/. A PDB-derived target's page says which chain it is, or that the source does not name it."""

from __future__ import annotations

import tarfile
from pathlib import Path

import pytest
from django.core.management import call_command
from django.urls import reverse

from comparna.models import Dataset, DatasetEntry, ImportRun, Target
from ingest.datasets.catalogue import RNASTRAND
from ingest.datasets.declaration import prepare_dataset
from tests.support.broker import recording_broker

# entry -> (number of molecules in its header, length): one PDB molecule, and two concatenations
ENTRIES = {"PDB_00004": (1, 41), "PDB_00036": (3, 84), "PDB_00447": (4, 120)}


@pytest.fixture(scope="module")
def entries(rnastrand_archive, tmp_path_factory) -> Path:
    dest = tmp_path_factory.mktemp("strand-molecules")
    with tarfile.open(rnastrand_archive, "r:gz") as tar:
        for member in tar:
            if Path(member.name).stem in ENTRIES and member.name.endswith(".bpseq"):
                (dest / Path(member.name).name).write_bytes(tar.extractfile(member).read())
    assert sorted(p.stem for p in dest.iterdir()) == sorted(ENTRIES)
    return dest


def test_the_headers_say_what_the_sequences_are(entries):
    # the fixture is what the issue says: 1HVU's entry is one 30-nt sequence four times over
    text = (entries / "PDB_00447.bpseq").read_text()
    assert "RCSB Protein Data Bank 1HVU, number of molecules: 4" in text
    seq = "".join(line.split()[1] for line in text.splitlines() if line[:1].isdigit())
    assert len(seq) == 120 and seq == seq[:30] * 4


def test_multi_molecule_entries_are_excluded_with_their_reason(entries):
    prep = prepare_dataset(RNASTRAND, entries)
    assert [k.entry_id for k in prep.kept] == ["PDB_00004"]
    excluded = {e.entry_id: e for e in prep.excluded}
    assert set(excluded) == {"PDB_00036", "PDB_00447"}
    for entry_id, e in excluded.items():
        molecules, length = ENTRIES[entry_id]
        assert e.reason == "multi_molecule"
        assert e.detail == f"{molecules} molecules concatenated ({length} nt in all)"
    assert prep.exclusion_counts() == {"multi_molecule": 2}
    assert dict(prep.steps)["ACGU only"] == 3 and dict(prep.steps)["one molecule"] == 1
    assert RNASTRAND.reasons["multi_molecule"] == "several molecules written as one sequence"


@pytest.mark.django_db
def test_the_import_records_them_and_the_target_page_names_the_chain(
    entries, tmp_path, client, django_capture_on_commit_callbacks
):
    with recording_broker(tmp_path / "broker"), django_capture_on_commit_callbacks(execute=True):
        call_command("import_rnastrand", str(entries), "--no-progress")
    run = ImportRun.objects.get()
    assert run.status == ImportRun.Status.DONE
    assert run.summary["excluded"] == {"multi_molecule": 2} and run.summary["steps"]["one molecule"] == 1
    assert list(Target.objects.values_list("source_id", flat=True)) == ["PDB_00004"]
    recorded = dict(DatasetEntry.objects.values_list("source_id", "outcome"))
    assert recorded == {"PDB_00004": "kept", "PDB_00036": "multi_molecule", "PDB_00447": "multi_molecule"}
    assert DatasetEntry.objects.get(source_id="PDB_00447").get_outcome_display() == "several molecules"

    # RNA STRAND names the PDB entry but not the chain: the page says so instead of guessing
    target = Target.objects.get(source_id="PDB_00004")
    page = client.get(reverse("target-detail", args=[target.pk])).content.decode()
    assert "https://www.rcsb.org/structure/1A51" in page and "RNA STRAND entry PDB_00004" in page
    assert 'id="chain-note">(one RNA molecule of the entry; RNA STRAND does not name its chain)' in page
    assert 'id="chain"' not in page
    # a chain the source names is shown as such
    pdb = Dataset.objects.create(slug="pdb-chains", name="PDB chains", definitions=["standard"])
    chained = Target.objects.create(
        dataset=pdb, source_id="1EHZ_A", sequence="GCGGAUUUAGCUCAGUUGGGAGAGCGCCAGACUGAAGAUCUGGAGGUCC",
        length=49, pdb_id="1ehz", chain_id="A",
    )
    page = client.get(reverse("target-detail", args=[chained.pk])).content.decode()
    assert 'PDB entry <a href="https://www.rcsb.org/structure/1EHZ"' in page
    assert ', chain <span id="chain">A</span>' in page and 'id="chain-note"' not in page
