"""Base-pair annotation (ingest.pdb.annotate) validated against reference annotations by other tools.

Measured agreement (RNApolis 0.11.5 through the adapter), printed by each validation test with ``-s``:

=============  =========  ==========================  ====================================
reference      tool       standard pairs              extended pairs
=============  =========  ==========================  ====================================
1EHZ.dbn       (dbn)      recall 18/18, prec. 18/21   - (dot-bracket has no classes)
1A1T_1_B       RNAView    recall 8/9, prec. 8/8       pairs 8/9 | 8/8, same class 8/8
1A4D_1_A-B     DSSR       recall 12/12, prec. 12/12   pairs 18/18 | 18/18, same class 16/18
184D           FR3D       recall 4/4, prec. 4/4       pairs 5/5 | 5/5, same class 4/5
=============  =========  ==========================  ====================================

The 3 extra 1EHZ pairs (G10-C25, G30-C40, C49-G65) all involve modified residues (2MG, 5MC) that the
reference dot-bracket leaves unpaired; the missed 1A1T pair is RNAView's second cWW of a bifurcated
U-G/U-A triple; the class disagreements are tWH/tWW, tHS/cHS (1A4D) and tHH/cHH (184D).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import gemmi
import pytest

from comparna.rna.formats import parse_dot_bracket
from ingest.pdb.annotate import (
    REASON_DNA_PARTNER,
    REASON_OTHER_STRANDS,
    annotate_entry,
    annotate_file,
    annotate_pairs,
    is_standard,
    normalize_lw,
    reverse_lw,
)
from ingest.pdb.extract import extract


@pytest.fixture(scope="module")
def annotated(mmcif_dir):
    cache = {}

    def get(name):
        if name not in cache:
            cache[name] = annotate_file(mmcif_dir / name)
        return cache[name]

    return get


def agreement(reference: set, ours: set) -> tuple[float, float]:
    """(fraction of reference pairs we find, fraction of our pairs in the reference)."""
    common = len(reference & ours)
    return common / len(reference), common / len(ours)


def keyed(entry) -> set[tuple]:
    """Our structure-level pairs as (chain, number, chain, number, class), first < second."""
    return {(p.first.chain, p.first.author.number, p.second.chain, p.second.author.number, p.lw)
            for p in entry.pairs.pairs}


def canonical(entry, reference: list[tuple]) -> set[tuple]:
    """Reference pairs put in our orientation (reversing the class when the reference lists j before i)."""
    order = {(c.chain, a.number): (k, i) for k, c in enumerate(entry.chains)
             for i, a in enumerate(c.author_numbers)}
    out = set()
    for c1, n1, c2, n2, lw in reference:
        lw = normalize_lw(lw)
        if lw is None:
            continue
        if order[(c1, n1)] > order[(c2, n2)]:
            c1, n1, c2, n2, lw = c2, n2, c1, n1, reverse_lw(lw)
        out.add((c1, n1, c2, n2, lw))
    return out


def standard_only(entry, pairs: set[tuple]) -> set[tuple]:
    parent = {(c.chain, a.number): s for c in entry.chains
              for a, s in zip(c.author_numbers, c.sequence, strict=True)}
    return {p[:4] for p in pairs if is_standard(p[4], parent[p[0], p[1]], parent[p[2], p[3]])}


def report(name, entry, reference):
    ours = keyed(entry)
    std = agreement(standard_only(entry, reference), standard_only(entry, ours))
    pairs = agreement({p[:4] for p in reference}, {p[:4] for p in ours})
    classes = agreement(reference, ours)
    print(f"\n{name}: standard recall/precision {std[0]:.3f}/{std[1]:.3f}; extended pairs {pairs[0]:.3f}/"
          f"{pairs[1]:.3f}; with class {classes[0]:.3f}/{classes[1]:.3f}")
    return std, pairs, classes


# -- notation ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, expected",
    [("cWW", "cWW"), ("tHS", "tHS"), ("cW-W", "cWW"), ("tM-m", "tHS"), ("tW-M", "tWH"), ("cSs", "cSS"),
     ("csS", "cSS"), ("CWW", "cWW"), ("ncWW", None), ("ncsS", None), ("c.W", None), ("c.-W", None),
     ("--", None), ("s35", None), ("", None)],
)
def test_normalize_lw(text, expected):
    assert normalize_lw(text) == expected


def test_reverse_and_standard():
    assert reverse_lw("cWH") == "cHW" and reverse_lw(reverse_lw("tSH")) == "tSH"
    assert is_standard("cWW", "G", "U") and is_standard("cWW", "u", "a")
    assert not is_standard("cWW", "G", "A") and not is_standard("tWW", "G", "C")


# -- validation against other tools --------------------------------------------------------------------


def test_1ehz_against_reference_dot_bracket(mmcif_dir, annotated):
    _, ref_sequence, ref_dbn = (mmcif_dir / "1EHZ.dbn").read_text().split("\n")[:3]
    reference = set(parse_dot_bracket(ref_dbn).pairs)
    chain = annotated("1ehz-assembly-1.cif").chain("A")
    ours = {(i, j) for i, j, _ in chain.standard_pairs}
    recall, precision = agreement(reference, ours)
    print(f"\n1EHZ.dbn: standard recall {recall:.3f} precision {precision:.3f}")
    assert recall >= 0.95 and precision >= 0.8
    modified = {i for i, _ in chain.modified}
    # every pair the reference lacks involves a modified residue judged by its parent
    assert all(i in modified or j in modified for i, j in ours - reference)
    assert (19, 56) in ours  # the tertiary G19-C56 pair, a pseudoknot in the reference too
    assert chain.standard_structure().is_pseudoknotted and not chain.standard_structure().has_multiplets


def test_1a1t_against_rnaview(mmcif_dir, annotated):
    data = json.loads((mmcif_dir / "1A1T_1_B-rnaview.json").read_text())
    reference = [(p["nt1"]["auth"]["chain"], p["nt1"]["auth"]["number"], p["nt2"]["auth"]["chain"],
                  p["nt2"]["auth"]["number"], p["lw"]) for p in data["base_pairs"]]
    entry = annotated("1A1T_1_B.cif")
    std, pairs, classes = report("1A1T RNAView", entry, canonical(entry, reference))
    assert std[0] >= 0.85 and std[1] >= 0.95
    assert pairs[0] >= 0.85 and classes[1] >= 0.95


def _dssr_nt(text: str) -> tuple[str, int]:
    chain, rest = text.split(".", 1)
    return chain, int(re.search(r"(-?\d+)\^?[A-Za-z]?$", rest).group(1))


def test_1a4d_against_dssr(mmcif_dir, annotated):
    data = json.loads((mmcif_dir / "1A4D_1_A-B-dssr.json").read_text())
    reference = [_dssr_nt(p["nt1"]) + _dssr_nt(p["nt2"]) + (p["LW"],) for p in data["pairs"]]
    entry = annotated("1A4D_1_A-B.cif")
    std, pairs, classes = report("1A4D DSSR", entry, canonical(entry, reference))
    assert std == (1.0, 1.0)
    assert min(pairs) >= 0.9 and min(classes) >= 0.8


def test_184d_against_fr3d(mmcif_dir, annotated):
    reference = []
    for line in (mmcif_dir / "184D-fr3d.txt").read_text().splitlines():
        unit1, lw, unit2, _ = line.split("\t")
        a, b = unit1.split("|"), unit2.split("|")
        reference.append((a[2], int(a[4]), b[2], int(b[4]), lw))
    entry = annotated("184D.cif")
    ref = canonical(entry, reference)
    assert len(ref) == 5  # both orientations and near pairs / stacks collapse to five pairs
    std, pairs, classes = report("184D FR3D", entry, ref)
    assert std == (1.0, 1.0) and pairs == (1.0, 1.0) and min(classes) >= 0.75


ANNOTATOR_SCRIPT = shutil.which("annotator", path=str(Path(sys.executable).parent))


@pytest.mark.slow
@pytest.mark.skipif(ANNOTATOR_SCRIPT is None, reason="RNApolis console script not next to the interpreter")
def test_adapter_reproduces_rnapolis_cli(mmcif_dir, annotated, tmp_path):
    """The gemmi-fed adapter finds exactly what RNApolis' own reader + annotator find."""
    out = tmp_path / "1ehz.json"
    subprocess.run([ANNOTATOR_SCRIPT, "-j", str(out), str(mmcif_dir / "1ehz-assembly-1.cif")], check=True,
                   capture_output=True, timeout=120)
    cli = {(p["nt1"]["auth"]["chain"], p["nt1"]["auth"]["number"], p["nt2"]["auth"]["chain"],
            p["nt2"]["auth"]["number"], p["lw"]) for p in json.loads(out.read_text())["base_pairs"]}
    assert len(cli) > 30 and keyed(annotated("1ehz-assembly-1.cif")) == cli


# -- chains, strands, models ---------------------------------------------------------------------------


def test_two_strand_duplex_pairs_only_with_other_strands(annotated):
    entry = annotated("1A4D_1_A-B.cif")
    a, b = entry.chain("A"), entry.chain("B")
    assert a.standard_pairs == () and REASON_OTHER_STRANDS in a.excluded
    assert REASON_OTHER_STRANDS in b.excluded
    assert len(a.inter_chain_pairs) == len(b.inter_chain_pairs) == 18
    # the same pair seen from each side carries the reversed class
    from_a = {(str(a.author_numbers[i - 1]), str(other), lw) for i, _, other, lw in a.inter_chain_pairs}
    from_b = {(str(other), str(b.author_numbers[i - 1]), reverse_lw(lw))
              for i, _, other, lw in b.inter_chain_pairs}
    assert from_a == from_b


def test_target_chain_has_no_exclusion_and_consistent_sets(annotated):
    chain = annotated("1ehz-assembly-1.cif").chain("A")
    assert chain.excluded is None
    assert set(chain.standard_pairs) <= set(chain.extended_pairs)
    assert all(i < j for i, j, _ in chain.extended_pairs)
    assert chain.extended_structure().has_multiplets  # tertiary triples of tRNA
    seq = chain.sequence
    canonical_bases = ({"A", "U"}, {"G", "C"}, {"G", "U"})
    assert all({seq[i - 1], seq[j - 1]} in canonical_bases for i, j, _ in chain.standard_pairs)


def test_missing_base_atoms_remove_watson_crick_pairs(annotated):
    full = annotated("1E7K_1_C.cif").chain("C")
    stripped = annotated("1E7K_1_C_modified.cif").chain("C")  # the same chain without its N1 atoms
    assert full.standard_pairs and not stripped.standard_pairs
    assert full.sequence == stripped.sequence


def test_multi_model_keeps_pairs_present_in_all_models(mmcif_dir):
    entry = extract(mmcif_dir / "2HY9.cif")
    consensus = annotate_pairs(entry)
    per_model = [set(annotate_pairs(entry, models=[k]).pairs) for k in range(entry.model_count)]
    assert consensus.models == tuple(range(10))
    assert set(consensus.pairs) == set.intersection(*per_model)
    assert len(per_model[0]) > len(consensus.pairs) > 0 or len(set.union(*per_model)) > len(consensus.pairs)


def test_synthetic_second_model_drops_a_pair(mmcif_dir, tmp_path):
    structure = gemmi.read_structure(str(mmcif_dir / "1A1T_1_B.cif"))
    structure.setup_entities()
    structure.add_model(structure[0].clone())
    structure.renumber_models()
    residue = structure[1]["B"][0]  # strip the base of residue 1 (paired with 20) in model 2 only
    for name in ["N1", "C2", "N2", "N3", "C4", "C5", "C6", "O6", "N7", "C8", "N9"]:
        residue.remove_atom(name, "*")
    path = tmp_path / "two_models.cif"
    structure.make_mmcif_document().write_file(str(path))
    entry = extract(path)
    assert entry.model_count == 2
    first_only = annotate_entry(entry, models=[0]).chain("B")
    both = annotate_entry(entry).chain("B")
    assert (1, 20, "cWW") in first_only.standard_pairs and (1, 20, "cWW") not in both.standard_pairs
    assert set(both.standard_pairs) == set(first_only.standard_pairs) - {(1, 20, "cWW")}


def test_rna_paired_with_dna_is_excluded(mmcif_dir, tmp_path):
    structure = gemmi.read_structure(str(mmcif_dir / "1A4D_1_A-B.cif"))
    structure.setup_entities()
    for residue in structure[0]["B"]:
        residue.name = "D" + residue.name
    path = tmp_path / "rna_dna.cif"
    structure.make_mmcif_document().write_file(str(path))
    entry = annotate_file(path)
    assert REASON_DNA_PARTNER in entry.chain("A").excluded
    assert "DNA chain" in entry.chain("B").excluded


# -- pairs with other strands and bases that cannot be annotated -----------------------------------------


def test_kept_chain_records_its_pairs_with_the_other_strand(annotated):
    # P4-P6 crystal dimer: both chains are targets, each with intra-chain pairs and 5 pairs with the other
    entry = annotated("1gid.cif.gz")
    a, b = entry.chain("A"), entry.chain("B")
    assert a.excluded is None and b.excluded is None and len(a.standard_pairs) > 40
    assert len(a.inter_chain_details) == len(b.inter_chain_details) == 5
    for p in a.inter_chain_details:
        assert p.chain == "A" and p.partner_chain == "B" and p.partner_kind == "RNA"
        assert b.author_numbers[p.partner_i - 1] == p.partner_author  # partner position renumbered in B
        assert a.author_numbers[p.i - 1] == p.author
    # seen from B: the same pairs with the class reversed
    from_a = {(p.i, p.partner_i, p.lw) for p in a.inter_chain_details}
    from_b = {(p.partner_i, p.i, reverse_lw(p.lw)) for p in b.inter_chain_details}
    assert from_a == from_b
    data = entry.to_json()
    assert len(data["inter_chain_pairs"]) == 5  # each pair once, both chains named
    assert {(x["chain1"], x["chain2"]) for x in data["inter_chain_pairs"]} == {("A", "B")}
    assert "only the pairs between two residues of that chain" in data["single_chain_rule"]
    (chain_a,) = [c for c in data["chains"] if c["chain"] == "A"]
    assert {(x["i"], x["partner_chain"], x["partner_i"], x["lw"]) for x in chain_a["inter_chain_pairs"]} == {
        (p.i, "B", p.partner_i, p.lw) for p in a.inter_chain_details}


def test_bases_without_ring_atoms_are_reported_not_silently_unpaired(annotated):
    stripped = annotated("1E7K_1_C_modified.cif").chain("C")  # N1 removed from all 17 residues
    assert len(stripped.incomplete_bases) == 17
    assert all(missing == ("N1",) and models == (1,) for *_, missing, models in stripped.incomplete_bases)
    rows = stripped.incomplete_json()
    assert rows[0] == {"i": 1, "author": "26", "comp_id": "G", "parent": "G", "missing_atoms": ["N1"],
                       "models": [1]}
    assert "17 of 17 bases lack ring atoms" in stripped.excluded and "without N1" in stripped.excluded
    assert annotated("1E7K_1_C.cif").chain("C").incomplete_bases == ()


def test_base_missing_in_a_later_model_is_reported(mmcif_dir, tmp_path):
    structure = gemmi.read_structure(str(mmcif_dir / "1A1T_1_B.cif"))
    structure.setup_entities()
    structure.add_model(structure[0].clone())
    structure.renumber_models()
    for name in ["N1", "C2", "N3"]:
        structure[1]["B"][0].remove_atom(name, "*")
    path = tmp_path / "two_models.cif"
    structure.make_mmcif_document().write_file(str(path))
    chain = annotate_file(path).chain("B")
    assert [(row[0], row[4], row[5]) for row in chain.incomplete_bases] == [(1, ("N1", "C2", "N3"), (2,))]
