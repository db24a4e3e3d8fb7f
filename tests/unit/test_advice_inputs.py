"""The advisor's input rules (issue 40): what is taken, and the error that names each problem."""

from __future__ import annotations

import pytest

from comparna.advice.inputs import MAX_LENGTH, AdviceInputError, read_sequences

TRNA_PHE = "GCGGAUUUAGCUCAGUUGGGAGAGCGCCAGACUGAAGAUCUGGAGGUCCUGUGUUCGAUCCACAGAAUUCGCACCA"


def test_one_raw_sequence_over_several_lines_in_lower_case_with_t():
    (only,) = read_sequences("gcggatttag ctcagttggg\nagagcgccag actgaagatc\n")
    assert only.name == "sequence 1"
    assert only.sequence == "GCGGAUUUAGCUCAGUUGGGAGAGCGCCAGACUGAAGAUC"


def test_fasta_of_three_keeps_names_and_order():
    text = f">tRNA-Phe yeast\n{TRNA_PHE}\n\n>second\nACGUACGUACGU\n>third\nGGGGAAAACCCC\n"
    got = read_sequences(text)
    assert [s.name for s in got] == ["tRNA-Phe yeast", "second", "third"]
    assert got[0].sequence == TRNA_PHE
    assert got[0].gc_content == pytest.approx(sum(c in "GC" for c in TRNA_PHE) / 76)


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("", "empty"),
        ("   \n  ", "empty"),
        ("ACGUNACGUACGU", "'N' at position 5 is not a nucleotide"),
        (">a\nACGUACGUAC\n>b\nACGU-ACGUACGU\n", "sequence 2 (b): '-' at position 5"),
        ("A" * (MAX_LENGTH + 1), f"has {MAX_LENGTH + 1} nt; at most {MAX_LENGTH}"),
        ("ACGU" * 262_144, "the input has 1,048,576 characters"),
        ("".join(f">s{k}\nACGUACGUACGU\n" for k in range(11)), "11 sequences; at most 10"),
        ("ACGUAC", "has 6 nt; at least 10"),
        (">a\n>b\nACGUACGUACGU\n", "sequence 1 (a) (line 1) is empty"),
        ("ACGU\n>late\nACGUACGUACGU", "line 1: sequence text before the first '>'"),
        ("ACGUACGUAC\u200bGU", "U+200B"),
    ],
)
def test_each_bad_input_names_its_problem(text, words):
    with pytest.raises(AdviceInputError) as caught:
        read_sequences(text)
    assert words in str(caught.value)
