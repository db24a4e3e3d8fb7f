"""Output parsers: real program output, real files and malformed output."""

from __future__ import annotations

import json
import tarfile

import pytest
import RNA

from comparna.rna.structure import StructureFormatError
from predictors.core.parsers import PARSERS, parse_output, parse_probabilities

TRNA = "GCGGAUUUAGCUCAGUUGGGAGAGCGCCAGACUGAAGAUCUGGAGGUCCUGUGUUCGAUCCACAGAAUUCGCACCA"


def vienna_pairs(structure: str) -> set[tuple[int, int]]:
    # Independent of our parser: ViennaRNA's own pair table.
    pt = RNA.ptable(structure)
    return {(i, pt[i]) for i in range(1, pt[0] + 1) if pt[i] > i}


def test_registry_has_one_parser_per_format():
    assert set(PARSERS) == {"dot-bracket", "bpseq", "ct", "pairs-json"}


@pytest.mark.parametrize(
    "layout", ["full", "no-header", "structure-only", "bare-energy", "lowercase-dna-echo"]
)
def test_dot_bracket_tolerates_header_sequence_and_energy(layout):
    structure, mfe = RNA.fold(TRNA)
    text = {
        "full": f">tRNA-Phe\n{TRNA}\n{structure} ({mfe:6.2f})\n",
        "no-header": f"{TRNA}\n{structure} ({mfe:.2f})\n",
        "structure-only": f"{structure}\n",
        "bare-energy": f"# comment\n{structure}  {mfe:.1f}\n",
        "lowercase-dna-echo": f">x\n{TRNA.lower().replace('u', 't')}\n{structure}\n",
    }[layout]
    parsed = parse_output("dot-bracket", text, TRNA)
    assert parsed.structure.length == len(TRNA)
    assert set(parsed.structure.pairs) == vienna_pairs(structure)
    assert parsed.probabilities is None


def test_dot_bracket_pseudoknot_brackets():
    parsed = parse_output("dot-bracket", "((..[[..))..]]\n", "GGAACCAACCAAGG")
    assert parsed.structure.is_pseudoknotted
    assert set(parsed.structure.pairs) == {(1, 10), (2, 9), (5, 14), (6, 13)}


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("", "no dot-bracket structure line"),
        (f">x\n{TRNA}\n", "no dot-bracket structure line"),
        ("((((....))))\n", "length 12, the sequence has length 76"),
        ("*** fatal: out of memory ***\n", "unexpected character"),
        ("Segmentation fault\n", "no matching opening bracket"),
        ("(((" + "." * 73 + "\n", "never closed"),
    ],
)
def test_dot_bracket_garbage_is_unparsable(text, fragment):
    with pytest.raises(StructureFormatError, match=fragment.replace("(", r"\(")):
        parse_output("dot-bracket", text, TRNA)


def test_bpseq_real_rna_strand_file(rnastrand_archive):
    with tarfile.open(rnastrand_archive) as tar:
        member = next(m for m in tar if m.isfile() and m.name.endswith("PDB_00001.bpseq"))
        text = tar.extractfile(member).read().decode()
    rows = [line.split() for line in text.splitlines() if line.strip() and not line.startswith("#")]
    sequence = "".join(r[1] for r in rows)
    expected = {(int(r[0]), int(r[2])) for r in rows if int(r[2]) > int(r[0])}
    parsed = parse_output("bpseq", text, sequence)
    assert set(parsed.structure.pairs) == expected and parsed.structure.length == len(rows)
    with pytest.raises(StructureFormatError, match="has 1 nucleotides|nucleotides, the input sequence"):
        parse_output("bpseq", text, sequence + "A")


def test_ct_hand_written():
    # 8 nt hairpin: 1-8, 2-7 paired (written by hand, columns: i base i-1 i+1 partner i).
    ct = "8 hairpin\n" + "\n".join(
        f"{i} {b} {i - 1} {i + 1} {p} {i}"
        for i, b, p in zip(range(1, 9), "GGAAAACC", [8, 7, 0, 0, 0, 0, 2, 1], strict=True)
    )
    parsed = parse_output("ct", ct, "GGAAAACC")
    assert set(parsed.structure.pairs) == {(1, 8), (2, 7)}
    with pytest.raises(StructureFormatError):
        parse_output("ct", ct, "GGAAAACCA")


def test_pairs_json_with_probabilities():
    text = json.dumps({"pairs": [[8, 1], [2, 7]], "probabilities": [[1, 8, 0.9], [7, 2, 0.8], [3, 6, 0.01]]})
    parsed = parse_output("pairs-json", text, "GGAAAACC")
    assert set(parsed.structure.pairs) == {(1, 8), (2, 7)}
    assert parsed.probabilities == ((1, 8, 0.9), (2, 7, 0.8), (3, 6, 0.01))


@pytest.mark.parametrize(
    "payload, fragment",
    [
        ("{not json", "JSON"),
        ('{"pairs": [[1, 9]]}', "outside 1..8"),
        ('{"pairs": [], "length": 9}', "length"),
        ('{"pairs": [], "probabilities": [[1, 8, 1.5]]}', "not in \\(0, 1\\]"),
        ('{"pairs": [], "probabilities": [[1, 8]]}', "not \\[i, j, p\\]"),
        ('{"pairs": [], "probabilities": [[1, 8, 0.5], [8, 1, 0.4]]}', "given twice"),
        ('{"pairs": [], "probabilities": [[2, 2, 0.5]]}', "not within"),
    ],
)
def test_pairs_json_errors(payload, fragment):
    with pytest.raises(StructureFormatError, match=fragment):
        parse_output("pairs-json", payload, "GGAAAACC")


def test_parse_probabilities_clamps_rounding_above_one():
    assert parse_probabilities([[1, 2, 1.0000004]], 2) == ((1, 2, 1.0),)
