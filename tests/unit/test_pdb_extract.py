"""Chain extraction (ingest.pdb.extract) on the real PDB entries of the fixtures (tests/data/mmcif.tar.gz)."""

from __future__ import annotations

import gzip
import json

import gemmi
import pytest

from ingest.pdb.extract import (
    DNA,
    MAX_O3P_DISTANCE,
    RNA,
    AuthorNumber,
    StructureFileError,
    extract,
    o3p_distance,
)


def _dbn(mmcif_dir):
    _, sequence, structure = (mmcif_dir / "1EHZ.dbn").read_text().split("\n")[:3]
    return sequence, structure


def test_1ehz_sequence_and_modified_residues_match_reference(mmcif_dir):
    ref_sequence, _ = _dbn(mmcif_dir)
    chain = extract(mmcif_dir / "1ehz-assembly-1.cif").chain("A")
    # the reference writes modified nucleotides in lower case with their parent letter
    assert chain.sequence == ref_sequence.upper()
    assert chain.length == 76 and chain.kind == RNA and chain.excluded is None
    lowercase = {k for k, ch in enumerate(ref_sequence, start=1) if ch.islower()}
    modified = {r.index for r in chain.modified}
    assert len(modified) == 14 and modified <= lowercase
    by_comp = {r.comp_id: r.parent for r in chain.modified}
    assert by_comp["PSU"] == "U" and by_comp["1MA"] == "A" and by_comp["M2G"] == "G"
    # 5MC and wybutosine YYG are not in gemmi's table: their parent must come from the file itself
    assert not gemmi.find_tabulated_residue("5MC").is_nucleic_acid()
    assert by_comp["5MC"] == "C" and by_comp["YYG"] == "G"
    assert chain.author_numbers[0] == AuthorNumber(1) and chain.author_numbers[-1] == AuthorNumber(76)


def test_author_numbering_kept_for_renumbered_chain(mmcif_dir):
    reference = json.loads((mmcif_dir / "1A1T_1_B-rnaview.json").read_text())
    chain = extract(mmcif_dir / "1A1T_1_B.cif").chain("B")
    assert [r.index for r in chain.residues] == list(range(1, 21))
    for pair in reference["base_pairs"]:
        for nt in (pair["nt1"], pair["nt2"]):
            index = chain.index_of(AuthorNumber(nt["auth"]["number"]))
            assert chain.sequence[index - 1] == nt["auth"]["name"]


def test_length_boundary_and_dna_exclusions(mmcif_dir):
    two_strands = extract(mmcif_dir / "1A4D_1_A-B.cif")
    assert two_strands.chain("A").length == 21 and two_strands.chain("A").exclusions == ()
    assert two_strands.chain("B").length == 20 and "too short" in two_strands.chain("B").excluded
    dna = extract(mmcif_dir / "1JJP.cif")
    assert {c.kind for c in dna.chains} == {DNA}
    assert all("DNA chain" in c.excluded for c in dna.chains)
    nmr = extract(mmcif_dir / "2HY9.cif")
    assert nmr.model_count == 10 and nmr.chains[0].excluded == "DNA chain"
    # protein chains are not listed at all
    assert [c.chain for c in extract(mmcif_dir / "1DFU_1_M-N.cif").chains] == ["M", "N"]


def test_gzip_and_plain_give_the_same_chains(mmcif_dir, tmp_path):
    plain = tmp_path / "1gid.cif"
    plain.write_bytes(gzip.decompress((mmcif_dir / "1gid.cif.gz").read_bytes()))
    a, b = extract(mmcif_dir / "1gid.cif.gz"), extract(plain)
    assert a.chains == b.chains
    assert [(c.chain, c.length, c.excluded) for c in a.chains] == [("A", 158, None), ("B", 158, None)]


@pytest.mark.parametrize("name", ["4qln.cif", "6g90_1.cif"])
def test_backbone_breaks_are_where_residues_are_unobserved(mmcif_dir, name):
    structure = gemmi.read_structure(str(mmcif_dir / name))
    structure.setup_entities()
    polymer = list(structure[0][0].get_polymer())
    # independent evidence of a gap: label_seq_id jumps over residues missing from the model
    gaps = {k for k, (a, b) in enumerate(zip(polymer, polymer[1:], strict=False), start=1)
            if b.label_seq != a.label_seq + 1}
    chain = extract(mmcif_dir / name).chains[0]
    found = {b.after for b in chain.breaks}
    # 6G90 also has unassigned "N" residues with consecutive label_seq but no bond between them
    assert gaps and (found == gaps if name == "4qln.cif" else gaps < found)
    assert "backbone break" in chain.excluded
    assert all(b.distance > 5.0 for b in chain.breaks)


def test_cutoff_separates_bonded_links_from_gaps(mmcif_dir):
    """Every bonded O3'-P link in the fixture RNA entries is far below the cut-off."""
    bonded = []
    for name in ["1ehz-assembly-1.cif", "1gid.cif.gz", "8btk_B7.cif", "1A4D_1_A-B.cif"]:
        structure = gemmi.read_structure(str(mmcif_dir / name))
        for chain in structure[0]:
            polymer = list(chain.get_polymer())
            bonded += [o3p_distance(a, b) for a, b in zip(polymer, polymer[1:], strict=False)]
    assert len(bonded) > 350 and max(bonded) < 1.7 < MAX_O3P_DISTANCE


def _edited(mmcif_dir, tmp_path, edit, name="1A1T_1_B.cif", fmt="cif"):
    structure = gemmi.read_structure(str(mmcif_dir / name))
    structure.setup_entities()
    edit(structure)
    out = tmp_path / f"edited.{fmt}"
    if fmt == "cif":
        structure.make_mmcif_document().write_file(str(out))
    else:
        out.write_text(structure.make_pdb_string())
    return extract(out)


def test_synthetic_break_and_missing_atom(mmcif_dir, tmp_path):
    def move(structure):
        for atom in structure[0]["B"][9]:
            atom.pos = gemmi.Position(atom.pos.x + 4.0, atom.pos.y, atom.pos.z)

    chain = _edited(mmcif_dir, tmp_path, move).chain("B")
    assert [b.after for b in chain.breaks] == [9, 10]

    def drop_p(structure):
        structure[0]["B"][4].remove_atom("P", "*")

    chain = _edited(mmcif_dir, tmp_path, drop_p).chain("B")
    assert [(b.after, b.distance) for b in chain.breaks] == [(4, None)]
    assert "missing O3' or P" in chain.excluded


def test_pdb_format_with_insertion_code(mmcif_dir, tmp_path):
    def insertion(structure):
        residue = structure[0]["B"][10]
        residue.seqid = gemmi.SeqId(210, "A")

    chain = _edited(mmcif_dir, tmp_path, insertion, fmt="pdb").chain("B")
    assert chain.author_numbers[10] == AuthorNumber(210, "A")
    assert str(chain.author_numbers[10]) == "210A" and chain.length == 20


def test_hybrid_chain_excluded(mmcif_dir, tmp_path):
    def to_dna(structure):
        for residue in list(structure[0]["B"])[:3]:
            residue.name = "D" + residue.name

    chain = _edited(mmcif_dir, tmp_path, to_dna).chain("B")
    assert chain.kind == "hybrid" and "RNA-DNA hybrid" in chain.excluded


def test_pdb_modres_records_give_the_parent(mmcif_dir, tmp_path):
    structure = gemmi.read_structure(str(mmcif_dir / "1ehz-assembly-1.cif"))
    text = structure.make_pdb_string()
    bare = tmp_path / "bare.pdb"
    bare.write_text(text)
    unresolved = extract(bare).chain("A")
    assert "5MC" in unresolved.excluded and "YYG" in unresolved.excluded
    modres = [f"MODRES 1EHZ {comp:>3} A {num:>4}  {parent:>3}  MODIFIED" for comp, num, parent in
              [("YYG", 37, "G"), ("5MC", 40, "C"), ("5MC", 49, "C")]]
    with_modres = tmp_path / "modres.pdb"
    with_modres.write_text("\n".join(modres) + "\n" + text)
    chain = extract(with_modres).chain("A")
    assert chain.excluded is None
    assert chain.sequence == _dbn(mmcif_dir)[0].upper()


@pytest.mark.parametrize(
    "content, message",
    [
        (b"", "empty"),
        (b"hello, not a structure\n", "no atoms"),
        (b"data_x\nloop_\n_atom_site.id\n_atom_site.Cartn_x\n1\n", "malformed"),
        (gzip.compress(b"data_x\n", mtime=0)[:-6], "corrupt gzip"),
    ],
)
def test_malformed_files_raise_structure_file_error(tmp_path, content, message):
    path = tmp_path / "bad.cif"
    path.write_bytes(content)
    with pytest.raises(StructureFileError, match=message):
        extract(path)


def test_truncated_mmcif_raises(mmcif_dir, tmp_path):
    path = tmp_path / "cut.cif"
    path.write_bytes((mmcif_dir / "1A1T_1_B.cif").read_bytes()[:3000])
    with pytest.raises(StructureFileError, match="malformed"):
        extract(path)
    with pytest.raises(StructureFileError, match="cannot read"):
        extract(tmp_path / "missing.cif")
