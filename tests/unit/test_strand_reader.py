"""RNA STRAND reader: real headers of every source, malformed files, tarball streaming."""

from __future__ import annotations

import io
import tarfile

import pytest

from ingest.strand.reader import StrandEntry, StrandError, iter_entries, parse_entry

# One entry per ID prefix; expected values read off the files with `head` (see the headers quoted).
SAMPLES = ["ASE_00001", "CRW_00001", "TMR_00007", "SPR_00001", "SRP_00001", "RFA_00388", "PDB_00001",
           "NDB_00001", "ASE_00353"]


@pytest.fixture(scope="module")
def real(rnastrand_archive) -> dict[str, StrandEntry | StrandError]:
    wanted = {f"rna_strand_v2.0_bpseq/{i}.bpseq": i for i in SAMPLES}
    out = {}
    with tarfile.open(rnastrand_archive, "r:gz") as tf:
        for m in tf:
            if m.name in wanted:
                text = tf.extractfile(m).read().decode("utf-8")
                out[wanted[m.name]] = parse_entry(wanted[m.name], text)
    assert set(out) == set(SAMPLES)
    return out


def test_rnase_p_header_gives_class_organism_strain(real):
    # "# RNA SSTRAND database, RNase P RNA, Acidianus ambivalens, strain DSM 3772"
    # "# External source: RNase P Database, file name: A.ambivalens.ct2"
    e = real["ASE_00001"]
    assert isinstance(e, StrandEntry)
    assert e.source_db == "RNase P Database"
    assert (e.rna_class, e.organism, e.strain) == ("RNase P RNA", "Acidianus ambivalens", "DSM 3772")
    assert e.external_file == "A.ambivalens.ct2"
    assert e.sequence.startswith("gagga")  # lower case kept as written
    assert e.pdb_id is None


def test_crw_class_from_file_name(real):
    # "# External source: Gutell Lab CRW, file name: a.I2.m.S.cerevisiae.A.OX1.i1.bpseq, ID: V00694"
    e = real["CRW_00001"]
    assert e.source_db == "Gutell Lab CRW"
    assert e.rna_class == "group II intron"
    assert e.external_file == "a.I2.m.S.cerevisiae.A.OX1.i1.bpseq"
    assert e.external_id == "V00694"
    assert e.organism is None


def test_single_class_databases(real):
    tmr, spr, srp = real["TMR_00007"], real["SPR_00001"], real["SRP_00001"]
    assert (tmr.source_db, tmr.rna_class, tmr.external_id) == (
        "tmRNA database", "tmRNA", "Acid.caps._TRW-240015_1-352")
    assert (spr.source_db, spr.rna_class, spr.external_id) == ("Sprinzl tRNA database", "tRNA", "RA0380")
    assert (srp.source_db, srp.rna_class, srp.external_file) == ("SRP database", "SRP RNA", "ACI.SPE..ct")
    # "1 G 348" / "1 G 71" / "1 G 110": first base paired to those positions.
    assert (1, 348) in tmr.structure.pairs
    assert (1, 71) in spr.structure.pairs
    assert (1, 110) in srp.structure.pairs


def test_rfam_pdb_ndb(real):
    rfa, pdb, ndb = real["RFA_00388"], real["PDB_00001"], real["NDB_00001"]
    assert (rfa.source_db, rfa.rna_class) == ("Rfam", None)
    assert (2, 53) in rfa.structure.pairs and 1 not in rfa.structure.partners()
    # "# External source: RCSB Protein Data Bank 157D, number of molecules: 2"
    assert (pdb.source_db, pdb.pdb_id, pdb.molecules, pdb.ndb_id) == ("PDB", "157D", 2, None)
    assert (1, 24) in pdb.structure.pairs
    # "# External source: Nucleic Acid Database adh012, number of molecules: 2"
    assert (ndb.source_db, ndb.ndb_id, ndb.pdb_id, ndb.molecules) == ("NDB", "adh012", None, 2)


def test_strain_parsed_when_present(real):
    assert real["ASE_00353"].organism == "Saccharomonospora viridis"
    assert real["ASE_00353"].strain == "K185"


GOOD = "# File X.ct\n# RNA SSTRAND database\n# External source: Rfam database\n1 G 4\n2 A 0\n3 A 0\n4 C 1\n"


@pytest.mark.parametrize(
    ("body", "line", "position", "text"),
    [
        ("1 G 9\n2 A 0\n3 A 0\n4 C 0\n", 4, 1, "outside"),  # pair to a nonexistent position
        ("1 G 4\n2 A 0\n3 A 0\n4 C 0\n", 4, 1, "unpaired"),  # asymmetric pairing
        ("1 G 0\n2 A 0\n%%garbage%%\n4 C 0\n", 6, None, "3 fields"),  # garbage line
        ("1 G 0\n2 A x\n", 5, None, "not an integer"),
    ],
)
def test_malformed_files_yield_errors_with_location(tmp_path, body, line, position, text):
    header = "# File RFA_00001.ct\n# RNA SSTRAND database\n# External source: Rfam database\n"
    (tmp_path / "RFA_00001.bpseq").write_text(header + body)
    (tmp_path / "RFA_00002.bpseq").write_text(GOOD)
    items = list(iter_entries(tmp_path))
    assert [type(i) for i in items] == [StrandError, StrandEntry]
    err = items[0]
    assert err.entry_id == "RFA_00001" and err.line == line and err.position == position
    assert text in err.message


def test_non_utf8_file_is_an_error_not_an_exception(tmp_path):
    (tmp_path / "PDB_00001.bpseq").write_bytes(b"# x\n1 \xff 0\n")
    (err,) = list(iter_entries(tmp_path))
    assert isinstance(err, StrandError) and "UTF-8" in err.message


def _add(tf: tarfile.TarFile, name: str, text: str) -> None:
    data = text.encode()
    info = tarfile.TarInfo(name)
    info.size = len(data)
    tf.addfile(info, io.BytesIO(data))


def test_tarball_streamed_hidden_and_foreign_members_skipped(tmp_path):
    path = tmp_path / "mini.tar.gz"
    with tarfile.open(path, "w:gz") as tf:
        _add(tf, "d/RFA_00002.bpseq", GOOD)
        _add(tf, "d/.ipynb_checkpoints/RFA_00002-checkpoint.bpseq", GOOD)
        _add(tf, "d/README.txt", "not an entry")
        _add(tf, "d/RFA_00001.bpseq", GOOD.replace("4 C 1", "4 C 2"))
    items = list(iter_entries(path))
    assert [i.entry_id for i in items] == ["RFA_00002", "RFA_00001"]  # archive order
    assert isinstance(items[0], StrandEntry) and isinstance(items[1], StrandError)
    assert items[1].member == "d/RFA_00001.bpseq"
