"""Formats: round trips, independent parsers (ViennaRNA, RNApolis), real files and malformed inputs."""

from __future__ import annotations

import json
import random
import tarfile

import pytest
import RNA
from rnapolis.common import BpSeq

from comparna.rna.formats import (
    parse_dot_bracket,
    read_bpseq,
    read_ct,
    read_ct_all,
    read_fasta,
    read_pair_json,
    read_structure,
    write_bpseq,
    write_ct,
    write_dot_bracket,
    write_fasta,
    write_pair_json,
)
from comparna.rna.structure import Structure, StructureFormatError
from tests.unit.test_rna_structure import random_any, random_nested, random_pseudoknotted


def random_sequence(rng: random.Random, L: int) -> str:
    return "".join(rng.choice("ACGUacgu") for _ in range(L))


def pairs_from_ptable(pt) -> set:
    return {(i, j) for i, j in enumerate(list(pt)[1:], start=1) if j > i}


# ------------------------------------------------------------------------------------------------------
# round trips


def test_round_trip_every_format_on_random_structures():
    rng = random.Random(21)
    for n in range(1500):
        L = rng.randint(0, 60)
        s = random_pseudoknotted(rng, L, layers=rng.randint(1, 5)) if n % 2 else random_nested(rng, L)
        seq = random_sequence(rng, L)
        db = write_dot_bracket(s)
        assert len(db) == L
        assert parse_dot_bracket(db) == s
        assert parse_dot_bracket(db, length=L) == s
        assert read_pair_json(write_pair_json(s, seq), length=L) == s
        if L:
            assert read_bpseq(write_bpseq(seq, s)) == (seq, s)
            assert read_ct(write_ct(seq, s, name=f"s{n}")) == (seq, s)


def test_pair_json_carries_multiplets():
    rng = random.Random(22)
    multi = 0
    for _ in range(500):
        s = random_any(rng, rng.randint(2, 40))
        multi += s.has_multiplets
        assert read_pair_json(write_pair_json(s), length=s.length) == s
        obj = json.loads(write_pair_json(s))
        assert read_pair_json(json.dumps(obj["pairs"]), length=s.length) == s  # plain list form
    assert multi > 100


def test_writers_refuse_multiplets():
    s = Structure.from_pairs(8, [(1, 5), (5, 8)])
    for write in (write_dot_bracket, lambda s: write_bpseq("A" * 8, s), lambda s: write_ct("A" * 8, s)):
        with pytest.raises(StructureFormatError) as e:
            write(s)
        assert e.value.position == 5
        assert "position 5" in str(e.value)


def test_dot_bracket_levels_and_limit():
    assert write_dot_bracket(parse_dot_bracket("[[[[..((((..]]]]..))))")) == "((((..[[[[..))))..]]]]"
    all_kinds = "((([[[{{{<<<AAABBB)))]]]}}}>>>aaabbb"
    s = parse_dot_bracket(all_kinds)
    assert len(s.bracket_levels()) == 6
    assert parse_dot_bracket(write_dot_bracket(s)) == s
    # 30 mutually crossing pairs use every bracket kind; 31 cannot be written
    thirty = Structure.from_pairs(60, [(k, 30 + k) for k in range(1, 31)])
    text = write_dot_bracket(thirty)
    assert text[:5] == "([{<A" and text.endswith("z") and parse_dot_bracket(text) == thirty
    with pytest.raises(StructureFormatError, match="31 bracket levels"):
        write_dot_bracket(Structure.from_pairs(62, [(k, 31 + k) for k in range(1, 32)]))


# ------------------------------------------------------------------------------------------------------
# against independent parsers


def test_dot_bracket_matches_viennarna_pair_tables():
    rng = random.Random(23)
    for _ in range(500):
        L = rng.randint(1, 80)
        s = random_nested(rng, L)
        db = write_dot_bracket(s)
        assert pairs_from_ptable(RNA.ptable(db)) == set(s.pairs)
        # ViennaRNA's pseudoknot-aware table reads () and []
        pk = random_pseudoknotted(rng, L, layers=2)
        db = write_dot_bracket(pk)
        if pk.pseudoknot_order <= 1:
            assert pairs_from_ptable(RNA.ptable_pk(db)) == set(pk.pairs)


def test_viennarna_mfe_line_with_energy():
    seq = "GGGGAAAACCCCAUAUGCGCAAAAGCGCAUAU"
    structure, energy = RNA.fold_compound(seq).mfe()
    for line in (f"{structure} ({energy:6.2f})", f"{structure} ({energy:.2f})", f"  {structure}\t(-0.00)  "):
        s = parse_dot_bracket(line, length=len(seq))
        assert pairs_from_ptable(RNA.ptable(structure)) == set(s.pairs)
    with pytest.raises(StructureFormatError):
        parse_dot_bracket(f"{structure}(-3.40)")  # the energy must be separated by whitespace


def test_real_dot_bracket_file(mmcif_dir):
    _, seq, db = (mmcif_dir / "1EHZ.dbn").read_text().split("\n")[:3]
    s = parse_dot_bracket(db, length=len(seq))
    assert s.is_pseudoknotted and (19, 56) in s.pairs
    assert pairs_from_ptable(RNA.ptable_pk(db)) == set(s.pairs)
    assert write_dot_bracket(s) == db


@pytest.fixture(scope="module")
def strand_sample(rnastrand_archive):
    """A sample of RNA STRAND (every 15th archive member; all of them would take too long here)."""
    out = {}
    with tarfile.open(rnastrand_archive) as tf:
        for n, m in enumerate(tf):
            if m.isfile() and m.name.endswith(".bpseq") and n % 15 == 0:
                out[m.name] = tf.extractfile(m).read().decode()
    return out


def test_rna_strand_bpseq_agrees_with_rnapolis(strand_sample):
    assert len(strand_sample) > 300
    lowercase = pk = 0
    for name, text in strand_sample.items():
        seq, s = read_bpseq(text)
        theirs = BpSeq.from_string("\n".join(x for x in text.splitlines() if not x.startswith("#")))
        assert seq == "".join(e.sequence for e in theirs.entries), name
        assert set(s.pairs) == {(e.index_, e.pair) for e in theirs.entries if e.pair > e.index_}, name
        lowercase += seq != seq.upper()
        pk += s.is_pseudoknotted
        # every real structure survives the text formats
        assert read_bpseq(write_bpseq(seq, s)) == (seq, s)
        assert parse_dot_bracket(write_dot_bracket(s)) == s
    assert lowercase > 0 and pk > 50


# ------------------------------------------------------------------------------------------------------
# CT and FASTA specifics


def test_ct_header_variants_and_multiple_structures():
    body = "1 G 0 2 4 1\n2 A 1 3 0 2\n3 A 2 4 0 3\n4 c 3 0 1 4\n"
    for header in ("4  ENERGY = -3.4  hairpin", "4\tdG = -1.20\tx", "4", "    4 name with spaces"):
        seq, s = read_ct(f"{header}\n{body}")
        assert seq == "GAAc" and s.pairs == {(1, 4)}
    both = read_ct_all(
        f"4 ENERGY = -3.4 a\n{body}\n4 ENERGY = -1.0 a\n"
        + body.replace("4 1\n", "0 1\n").replace(" 1 4\n", " 0 4\n")
    )
    assert [s.pairs for _, s in both] == [{(1, 4)}, set()]


def test_fasta_round_trip_and_names():
    rng = random.Random(24)
    records = [(f"seq{k}", random_sequence(rng, rng.randint(1, 200))) for k in range(50)]
    assert read_fasta(write_fasta(records)) == records
    assert read_fasta(write_fasta(records, width=7)) == records
    text = ";comment\n>AB001721.1/2734-2801 tRNA\nacgu\nAC GU\n\n>x\nN-.\n"
    assert read_fasta(text) == [("AB001721.1/2734-2801", "acguACGU"), ("x", "N-.")]


# ------------------------------------------------------------------------------------------------------
# malformed inputs: each names its line and/or position


MALFORMED = [
    # (reader, text, line, position)
    (lambda t: parse_dot_bracket(t), "((..)", None, 1),
    (lambda t: parse_dot_bracket(t), "(..))", None, 5),
    (lambda t: parse_dot_bracket(t), "(..]", None, 4),
    (lambda t: parse_dot_bracket(t), "(.-.)", None, 3),
    (lambda t: parse_dot_bracket(t), "(.A)", None, 3),
    (lambda t: parse_dot_bracket(t), "(..)\n(..)", 2, None),
    (lambda t: parse_dot_bracket(t, length=6), "(..)", None, 5),
    (read_bpseq, "# c\n1 G 3\n2 A 0\n3 C 1\n4 U 9\n", 5, 4),  # partner out of range
    (read_bpseq, "1 G 3\n2 A 3\n3 C 1\n", 2, 2),  # base 3 claimed twice (asymmetric)
    (read_bpseq, "1 G 3\n2 A 0\n3 C 0\n", 1, 1),  # asymmetric
    (read_bpseq, "1 G 1\n", 1, 1),  # self pair
    (read_bpseq, "1 G 0\n3 A 0\n", 2, 3),  # index gap
    (read_bpseq, "1 G 0\n2 A\n", 2, None),  # missing field
    (read_bpseq, "1 G 0\n2 A x\n", 2, None),  # not an integer
    (read_bpseq, "1 G -2\n", 1, 1),
    (read_ct, "3 x\n1 G 0 2 3 1\n2 A 1 3 0 2\n", 1, 3),  # fewer base lines than the header says
    (read_ct, "x\n1 G 0 2 0 1\n", 1, None),  # header not an integer
    (read_ct, "2 x\n1 G 0 2 2 1\n2 A 1 0 0 2\n", 2, 1),  # asymmetric
    (read_ct, "2 x\n1 G 0 2 5 1\n2 A 1 0 0 2\n", 2, 1),  # out of range
    (read_ct, "2 x\n1 G 0 2 0 1\n3 A 1 0 0 2\n", 3, 3),  # index gap
    (read_ct, "2 x\n1 G 0 2 0 1\n2 A 1 0\n", 3, None),  # too few fields
    (read_ct, "1 x\n1 G 0 2 0 1\n2 A 1 0 0 2\n", 3, None),  # more base lines than announced
    (read_fasta, "ACGU\n>x\nACGU\n", 1, None),
    (read_fasta, ">x\nAC1U\n", 2, 3),
    (read_fasta, ">x\n>y\nACGU\n", 1, None),
    (lambda t: read_pair_json(t, length=5), '{"pairs": [[1, 5], [2, 4]', 1, 26),
    (lambda t: read_pair_json(t, length=5), "[[1, 6]]", None, 6),
    (lambda t: read_pair_json(t, length=5), "[[3, 3]]", None, 3),
    (lambda t: read_pair_json(t, length=5), "[[1, 4], [4, 1]]", None, 1),
]


@pytest.mark.parametrize("reader,text,line,position", MALFORMED)
def test_malformed_input_names_line_or_position(reader, text, line, position):
    with pytest.raises(StructureFormatError) as e:
        reader(text)
    assert (e.value.line, e.value.position) == (line, position)
    if line is not None:
        assert f"line {line}" in str(e.value)
    if position is not None:
        assert f"position {position}" in str(e.value)


@pytest.mark.parametrize(
    "text",
    ['{"pair": []}', '"x"', "[[1, 2, 3]]", "[[true, 2]]", '[["1", 2]]', '{"length": 4, "pairs": []}', ""],
)
def test_malformed_pair_json(text):
    with pytest.raises(StructureFormatError):
        read_pair_json(text, length=5)


def test_read_structure_dispatch_and_length_checks():
    assert read_structure("((..))", "dot-bracket", length=6) == (None, parse_dot_bracket("((..))"))
    assert read_structure("1 G 2\n2 C 1\n", "bpseq", length=2)[1].pairs == {(1, 2)}
    with pytest.raises(StructureFormatError, match="length 3"):
        read_structure("1 G 2\n2 C 1\n", "bpseq", length=3)
    with pytest.raises(StructureFormatError):
        read_structure("[]", "json")
    with pytest.raises(StructureFormatError):
        read_structure("((..))", "stockholm")
    with pytest.raises(StructureFormatError):
        write_bpseq("ACG", Structure(4))
