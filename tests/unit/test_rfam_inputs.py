"""Stockholm/WUSS reading, (seed) and (20) inputs, cmalign alignment and projection onto the query."""

from __future__ import annotations

import pytest

from comparna.rna.projection import project_consensus, project_pairs, project_probabilities
from comparna.rna.stockholm import StockholmError, parse_wuss, read_stockholm, write_stockholm
from comparna.rna.structure import Structure
from ingest.rfam.inputs import (
    align_to_family,
    identity_candidates,
    seed_input,
    sequence_identity,
    twenty_input,
)
from ingest.rfam.library import TESTSUITE_DIR, build_library

# Yeast tRNA-Phe (PDB 1EHZ) and its textbook cloverleaf (Kim et al., Science 1974; Sprinzl numbering):
# acceptor 1-72..7-66, D stem 10-25..13-22, anticodon stem 27-43..31-39, T stem 49-65..53-61.
TRNA_PHE = "GCGGAUUUAGCUCAGUUGGGAGAGCGCCAGACUGAAGAUCUGGAGGUCCUGUGUUCGAUCCACAGAAUUCGCACCA"
CLOVERLEAF = (
    {(1 + k, 72 - k) for k in range(7)}
    | {(10 + k, 25 - k) for k in range(4)}
    | {(27 + k, 43 - k) for k in range(5)}
    | {(49 + k, 65 - k) for k in range(5)}
)

needs_infernal = pytest.mark.skipif(not TESTSUITE_DIR.is_dir(), reason="infernal-doc is not installed")


@pytest.fixture(scope="module")
def library(tmp_path_factory):
    if not TESTSUITE_DIR.is_dir():
        pytest.skip("infernal-doc is not installed")
    return build_library(TESTSUITE_DIR, tmp_path_factory.mktemp("rfam") / "lib")


def levenshtein(a: str, b: str) -> int:
    """Plain dynamic-programming edit distance (Wagner & Fischer 1974), independent of Biopython."""
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, start=1):
        cur = [i]
        for j, cb in enumerate(b, start=1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return prev[-1]


def independent_identity(a: str, b: str) -> float:
    a, b = a.upper().replace("T", "U"), b.upper().replace("T", "U")
    return 1 - levenshtein(a, b) / max(len(a), len(b))


# --- Stockholm and WUSS -----------------------------------------------------------------------------------


def test_read_interleaved_stockholm_and_round_trip():
    text = """# STOCKHOLM 1.0
#=GF ID   toy
#=GF AC   XX00001
#=GS s1 DE ignored

s1          GGG-AA
s2          GG.CAA
#=GC SS_cons <<<___
#=GR s1 PP  ******

s1          ACCC
s2          A-CC
#=GC SS_cons _>>>
//
"""
    (ali,) = read_stockholm(text)
    assert ali.names == ("s1", "s2")
    assert ali.rows == ("GGG-AAACCC", "GG.CAAA-CC")
    assert ali.identifier == "toy" and ali.accession == "XX00001"
    assert ali.ss_cons == "<<<____>>>"
    assert ali.ungapped("s2") == "GGCAAACC"
    (again,) = read_stockholm(write_stockholm(ali))
    assert (again.names, again.rows, again.gc, again.gf) == (ali.names, ali.rows, ali.gc, ali.gf)


@pytest.mark.parametrize(
    "text",
    [
        "# STOCKHOLM 1.0\ns1 ACGU\n",  # no terminator
        "# STOCKHOLM 1.0\ns1 ACGU\ns2 ACG\n//\n",  # unequal widths
        "s1 ACGU\n//\n",  # no header
    ],
)
def test_malformed_stockholm_is_refused(text):
    with pytest.raises(StockholmError):
        read_stockholm(text)


def test_parse_wuss_with_pseudoknot_letters():
    assert parse_wuss("<<..AA.>>..aa") == [(1, 9), (2, 8), (5, 13), (6, 12)]
    assert parse_wuss("((..[[..))..]]") == [(1, 10), (2, 9), (5, 14), (6, 13)]
    assert parse_wuss(":,_-~.") == []
    for bad in ("<<..>", "..>>", "A..", "(]"):
        with pytest.raises(StockholmError):
            parse_wuss(bad)


# --- projection ------------------------------------------------------------------------------------------


def test_projection_with_gaps_on_a_hand_made_alignment():
    # columns:     123456789012
    consensus = "<<<.<..>.>>>"
    query_row = "GC-AG-aCU-GC"  # residues at columns 1,2,4,5,7,8,9,11,12 -> positions 1..9
    # consensus pairs: (1,12) (2,11) (3,10) (5,8); column 3 and 10 are gaps -> (3,10) dropped
    s = project_consensus(consensus, query_row)
    assert s == Structure(9, frozenset({(1, 9), (2, 8), (4, 6)}))
    # gap characters of every kind count as gaps
    for row in ("A~_C", "A.-C", "A-~C", "A__C"):
        assert project_pairs([(1, 4), (2, 3)], row) == Structure(2, frozenset({(1, 2)}))
        assert project_pairs([(2, 3), (1, 2)], row) == Structure(2, frozenset())
    probs = project_probabilities(
        [(1, 12, 0.9), (3, 10, 0.8), (5, 8, 0.0005)], query_row, min_probability=1e-3
    )
    assert probs == [(1, 9, 0.9)]
    with pytest.raises(ValueError):
        project_consensus("<>", "ACG")


# --- identity and inputs ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b"),
    [("ACGUACGU", "ACGUACGU"), ("ACGUACGU", "ACGAACGU"), ("GGGAAACCC", "GGAAACCCU"), ("ACGU", "AC"),
     ("ACGUNNAC", "ACGTAAAC"), (TRNA_PHE, TRNA_PHE[::-1])],
)  # fmt: skip
def test_identity_is_normalised_edit_distance(a, b):
    assert sequence_identity(a, b) == pytest.approx(independent_identity(a, b))


def test_seed_input_adds_the_query_only_when_absent(library):
    seed = library.read_seed("RF00006")
    member = seed.names[4]
    absent = seed_input(TRNA_PHE, seed, accession="RF00006", rfam_version=library.version)
    assert absent.kind == "seed" and absent.random_seed is None
    assert len(absent.sequences) == len(seed.names) + 1
    assert absent.sequences[0] == (absent.query_name, TRNA_PHE)
    assert absent.query_name not in seed.names
    # the same sequence in lower case with T is still "already present"
    present_seq = seed.ungapped(member).lower().replace("u", "t")
    present = seed_input(present_seq, seed, accession="RF00006", rfam_version=library.version)
    assert len(present.sequences) == len(seed.names)
    assert present.query_name == member
    assert sorted(n for n, _ in present.sequences) == sorted(seed.names)


def test_twenty_input_window_size_and_determinism(library):
    seed = library.read_seed("RF00005")
    made = twenty_input(TRNA_PHE, seed, accession="RF00005", rfam_version=library.version, random_seed=11)
    assert made is not None and made.kind == "20" and made.random_seed == 11
    assert len(made.sequences) == 20
    assert made.sequences[0] == (made.query_name, TRNA_PHE)
    others = made.sequences[1:]
    assert len({n for n, _ in others}) == 19 and all(n in seed.names for n, _ in others)
    for name, seq in others:
        assert seq == seed.ungapped(name).upper()
        assert 0.65 <= independent_identity(TRNA_PHE, seq) <= 0.95, name
    # the same seed gives the same input; another seed another draw from the same candidates
    again = twenty_input(TRNA_PHE, seed, accession="RF00005", rfam_version=library.version, random_seed=11)
    assert again == made
    other = twenty_input(TRNA_PHE, seed, accession="RF00005", rfam_version=library.version, random_seed=12)
    assert other is not None and other.sequences != made.sequences
    # candidates are exactly the in-window sequences (checked on a sample of the seed)
    candidates = {n for n, _, _ in identity_candidates(TRNA_PHE, seed)}
    assert len(candidates) > 19
    for name in seed.names[::25]:
        inside = 0.65 <= independent_identity(TRNA_PHE, seed.ungapped(name)) <= 0.95
        assert (name in candidates) == inside, name


def test_twenty_input_needs_19_candidates(library):
    seed = library.read_seed("RF00005")
    vault = library.read_seed("RF00006")
    query = vault.ungapped(vault.names[0])  # a Vault RNA has no 65-95 % identical tRNA
    assert twenty_input(query, seed, accession="RF00005", rfam_version="v", random_seed=1) is None
    narrow = twenty_input(
        TRNA_PHE, seed, accession="RF00005", rfam_version="v", random_seed=1, min_identity=0.94
    )
    assert narrow is None or all(independent_identity(TRNA_PHE, s) >= 0.94 for _, s in narrow.sequences[1:])


# --- cmalign ---------------------------------------------------------------------------------------------


def test_align_twenty_input_and_project_the_model_consensus(library):
    seed = library.read_seed("RF00005")
    made = twenty_input(TRNA_PHE, seed, accession="RF00005", rfam_version=library.version, random_seed=3)
    aligned = align_to_family(made, "RF00005", library)
    ali = aligned.alignment
    assert set(ali.names) == {n for n, _ in made.sequences}
    assert aligned.query_name == made.query_name
    assert ali.ungapped(aligned.query_name).upper() == TRNA_PHE
    assert len(aligned.query_columns) == len(TRNA_PHE)
    assert ali.ss_cons is not None and len(ali.ss_cons) == ali.width
    structure = project_consensus(ali.ss_cons, aligned.query_row)
    assert structure.length == len(TRNA_PHE)
    assert set(structure.pairs) == CLOVERLEAF


def test_align_seed_input_keeps_the_seed_and_handles_a_member_query(library):
    seed = library.read_seed("RF00005")
    made = seed_input(TRNA_PHE, seed, accession="RF00005", rfam_version=library.version)
    aligned = align_to_family(made, "RF00005", library)
    assert len(aligned.alignment.names) == len(seed.names) + 1
    assert set(project_consensus(aligned.alignment.ss_cons, aligned.query_row).pairs) == CLOVERLEAF
    member = seed.names[10]
    as_member = seed_input(seed.ungapped(member), seed, accession="RF00005", rfam_version=library.version)
    aligned = align_to_family(as_member, "RF00005", library)
    assert aligned.query_name == member
    assert sorted(aligned.alignment.names) == sorted(seed.names)
    assert aligned.alignment.ungapped(member).upper() == seed.ungapped(member).upper()


def test_rename_sequence_keeps_rows_and_columns():
    from comparna.rna.stockholm import read_stockholm, rename_sequence

    text = "# STOCKHOLM 1.0\nq1 ACGU-A\nquery AC-UUA\n#=GC SS_cons <<..>>\n//\n"
    (aln,) = read_stockholm(rename_sequence(text, "q1", "query"))
    assert aln.names == ("query", "query_seed")
    assert aln.rows == ("ACGU-A", "AC-UUA") and aln.gc["SS_cons"] == "<<..>>"
    with pytest.raises(ValueError):
        rename_sequence(text, "absent", "query")
