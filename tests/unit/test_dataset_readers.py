"""Readers and declarations of the generic dataset importer, on real ArchiveII rows and written files."""

from __future__ import annotations

import csv
import gzip
import json
import time

import pytest

from comparna.bounded import TooLarge
from comparna.rna.families import canonical_family, family_of_rfam, family_slug
from comparna.rna.formats import parse_dot_bracket, write_ct
from comparna.rna.structure import Structure
from ingest.datasets import readers
from ingest.datasets.catalogue import ARCHIVEII, ARCHIVEII_CLASSES, DECLARATIONS, RNASTRAND, get_declaration
from ingest.datasets.declaration import DatasetDeclaration, file_sha256, prepare_dataset
from ingest.datasets.readers import EntryError, RawEntry, SourceError, read_source


@pytest.fixture(scope="module")
def archiveii_rows(repo_data):
    with gzip.open(repo_data / "archiveii" / "ArchiveII.csv.gz", "rt", newline="") as fh:
        return list(csv.DictReader(fh))


def write_csv(path, rows, fields=("id", "sequence", "len", "structure", "base_pairs")):
    with gzip.open(path, "wt", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(fields), extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)
    return path


def test_declared_sources_are_the_shipped_files(repo_data):
    # The declaration's checksum is the file's: a default import reads exactly the declared data.
    assert file_sha256(repo_data / ARCHIVEII.source) == ARCHIVEII.sha256
    assert file_sha256(repo_data / RNASTRAND.source) == RNASTRAND.sha256
    assert set(DECLARATIONS) == {
        "rnastrand", "archiveii", "spot-rna-pdb", "pdb-hires", "rna3db-2d", "bprna-ts0"
    }
    with pytest.raises(KeyError, match="declared: archiveii, bprna-ts0, pdb-hires, rna3db-2d, rnastrand, "):
        get_declaration("bprna")


def test_archiveii_rows_read_with_their_family(tmp_path, archiveii_rows):
    by_prefix: dict[str, dict] = {}
    for row in archiveii_rows:
        by_prefix.setdefault(row["id"].split("_")[0], row)
    rows = list(by_prefix.values())
    items = list(read_source(write_csv(tmp_path / "a.csv.gz", rows), ARCHIVEII.fmt, ARCHIVEII.options))
    assert all(isinstance(i, RawEntry) for i in items) and len(items) == 9
    for item, row in zip(items, rows, strict=True):
        pairs = {tuple(sorted(p)) for p in json.loads(row["base_pairs"])}
        assert item.entry_id == row["id"] and item.sequence == row["sequence"]
        assert item.structure.pairs == frozenset(pairs)
        assert item.rna_class == ARCHIVEII_CLASSES[row["id"].split("_")[0]]
        assert ARCHIVEII.family_of(item) == item.rna_class  # the classes are canonical family labels
        assert item.provenance["class_as_written"] == row["id"].split("_")[0]


def test_bad_csv_rows_are_reported_one_by_one(tmp_path, archiveii_rows):
    good = dict(archiveii_rows[0])
    disagree = {**archiveii_rows[1], "structure": "." * int(archiveii_rows[1]["len"])}
    unknown = {**archiveii_rows[2], "id": "riboswitch_" + archiveii_rows[2]["id"]}
    wrong_len = {**archiveii_rows[3], "len": "7"}
    out_of_range = {**archiveii_rows[4], "base_pairs": "[[1, 9999]]"}
    dup = dict(good)
    path = write_csv(tmp_path / "bad.csv.gz", [good, disagree, unknown, wrong_len, out_of_range, dup])
    items = list(read_source(path, ARCHIVEII.fmt, ARCHIVEII.options))
    assert isinstance(items[0], RawEntry)
    errors = [i for i in items if isinstance(i, EntryError)]
    messages = [e.message for e in errors]
    assert len(errors) == 5
    assert "disagree" in messages[0]
    assert "unknown class 'riboswitch'" in messages[1]
    assert "length column '7'" in messages[2]
    assert "outside 1.." in messages[3]
    assert "duplicate entry id" in messages[4] and errors[4].line == 7


def test_csv_without_a_declared_column_is_refused(tmp_path, archiveii_rows):
    path = write_csv(tmp_path / "x.csv.gz", archiveii_rows[:2], fields=("id", "sequence", "len", "structure"))
    with pytest.raises(SourceError, match="no column"):
        list(read_source(path, ARCHIVEII.fmt, ARCHIVEII.options))
    with pytest.raises(SourceError, match="does not exist"):
        list(read_source(tmp_path / "missing.csv.gz", ARCHIVEII.fmt, ARCHIVEII.options))
    with pytest.raises(SourceError, match="unknown dataset format"):
        read_source(path, "stockholm")


def test_csv_decompression_is_capped(tmp_path, archiveii_rows, monkeypatch):
    path = write_csv(tmp_path / "a.csv.gz", archiveii_rows[:50])
    monkeypatch.setattr(readers, "MAX_TEXT_BYTES", 2000)
    with pytest.raises(TooLarge):
        list(read_source(path, ARCHIVEII.fmt, ARCHIVEII.options))


def test_ct_archive_and_dot_bracket_fasta(tmp_path, archiveii_rows):
    rows = archiveii_rows[:3]
    folder = tmp_path / "ct"
    folder.mkdir()
    for row in rows:
        s = parse_dot_bracket(row["structure"])
        (folder / f"{row['id']}.ct").write_text(write_ct(row["sequence"], s, name=row["id"]))
    (folder / "broken.ct").write_text("5 x\n1 G 0 2 0 1\n2 G 1 3 9 2\n")
    items = list(read_source(folder, "ct-archive"))
    ok = {i.entry_id: i for i in items if isinstance(i, RawEntry)}
    bad = [i for i in items if isinstance(i, EntryError)]
    assert set(ok) == {r["id"] for r in rows}
    for row in rows:
        assert ok[row["id"]].structure == parse_dot_bracket(row["structure"])
    assert [b.entry_id for b in bad] == ["broken"]

    text = "".join(f">{r['id']} a comment\n{r['sequence'][:40]}\n{r['sequence'][40:]}\n{r['structure']}\n"
                   for r in rows)
    text += ">short\nACGUACGU\n((....))\n>mismatch\nACGU\n(((...)))\n>short\nGGGG\n....\n>nostructure\nACGU\n"
    fasta = tmp_path / "set.dbn"
    fasta.write_text(text)
    items = list(read_source(fasta, "dot-bracket-fasta"))
    ok = {i.entry_id: i for i in items if isinstance(i, RawEntry)}
    assert set(ok) == {r["id"] for r in rows} | {"short"}
    assert ok["short"].structure == Structure(8, frozenset({(1, 8), (2, 7)}))
    for row in rows:
        assert ok[row["id"]].sequence == row["sequence"]
        assert ok[row["id"]].structure == parse_dot_bracket(row["structure"])
    errors = {i.entry_id: i.message for i in items if isinstance(i, EntryError)}
    assert set(errors) == {"mismatch", "short", "nostructure"}
    assert "duplicate" in errors["short"] and "structure" in errors["nostructure"]


def test_a_new_dataset_is_a_declaration(tmp_path, archiveii_rows):
    """A dot-bracket FASTA set declared in a few lines goes through the same filters and subsets."""
    rows = [r for r in archiveii_rows if r["id"].startswith(("tRNA_", "5s_"))][:30]
    text = "".join(f">{r['id']}\n{r['sequence']}\n{r['structure']}\n" for r in rows)
    text += ">tiny\nACGUACGU\n((....))\n>odd\nACGUNACGUNACGUNACGUNACGU\n" + "." * 25 + "\n"
    (tmp_path / "new.dbn").write_text(text)
    decl = DatasetDeclaration(
        name="newset", title="New set", short_title="New set", description="test", source="new.dbn",
        sha256=file_sha256(tmp_path / "new.dbn"), fmt="dot-bracket-fasta",
        length_bins=ARCHIVEII.length_bins,
    )
    prep = prepare_dataset(decl, tmp_path / "new.dbn")
    reasons = {e.entry_id: e.reason for e in prep.excluded}
    assert reasons["tiny"] == "too_short" and reasons["odd"] == "malformed"  # 24 nt vs 25 brackets
    kept = {k.entry_id for k in prep.kept}
    assert kept | {e.entry_id for e in prep.excluded if e.reason == "redundant"} == {r["id"] for r in rows}
    assert prep.subset_counts["all"] == len(kept) and "family-trna" not in prep.subset_counts


def test_family_vocabulary():
    assert canonical_family("RNase P RNA") == canonical_family("RNaseP") == "RNase P RNA"
    assert canonical_family("Group I intron") == "group I intron" and canonical_family("riboswitch") == ""
    assert family_of_rfam("RF00005", "tRNA") == "tRNA"
    assert family_of_rfam("TS_rnaseP-eubact", "rnaseP-eubact") == "RNase P RNA"  # a local model
    assert family_of_rfam("RF00006", "Vault") == "Rfam:RF00006"
    assert family_of_rfam("", "") == ""
    assert family_slug("RNase P RNA") == "rnase-p-rna" and family_slug("Rfam:RF00006") == "rfam-rf00006"
    assert {canonical_family(c) for c in ARCHIVEII_CLASSES} == set(ARCHIVEII.families)


@pytest.mark.slow
def test_full_archiveii(repo_data, archiveii_rows):
    """Counts per family after the filters, checked against the file read independently."""
    per_family: dict[str, int] = {}
    for row in archiveii_rows:
        label = ARCHIVEII_CLASSES[row["id"].split("_")[0]]
        per_family[label] = per_family.get(label, 0) + 1
    t0 = time.monotonic()
    prep = prepare_dataset(ARCHIVEII, repo_data / ARCHIVEII.source)
    elapsed = time.monotonic() - t0
    assert prep.steps[0] == ("read", 3864) and prep.exclusion_counts().keys() <= {"redundant"}
    assert {f: c["read"] for f, c in prep.family_counts.items()} == per_family
    kept_per_family: dict[str, int] = {}
    for k in prep.kept:
        kept_per_family[k.family] = kept_per_family.get(k.family, 0) + 1
        assert k.entry.rna_class == k.family
    for label, count in kept_per_family.items():
        slug = f"family-{family_slug(label)}"
        assert prep.subset_counts[slug] == count == prep.family_counts[label]["kept"]
    assert len({k.sequence for k in prep.kept}) == len(prep.kept)
    assert prep.subset_counts["all"] == len(prep.kept) == sum(kept_per_family.values())
    assert prep.subset_counts["short"] + prep.subset_counts["medium"] == len(prep.kept)
    assert prep.subset_counts["pk"] == sum(k.entry.structure.is_pseudoknotted for k in prep.kept)
    # every ArchiveII row is either kept or removed as redundant of a kept entry of any family
    assert len(prep.kept) + len(prep.redundant_of) == 3864
    assert elapsed < 120
    print(json.dumps({"kept": len(prep.kept), "families": prep.family_counts, "seconds": round(elapsed, 1)}))

