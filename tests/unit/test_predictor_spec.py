"""PredictorSpec validation, fingerprints and the catalogue's invariants."""

from __future__ import annotations

from dataclasses import replace

import pytest

from predictors.catalogue import CATALOGUE, get_spec, load_catalogue
from predictors.core.parsers import PARSERS
from predictors.core.spec import InvalidSpec, PredictorSpec, argv_placeholders


def make(**kw) -> PredictorSpec:
    base = dict(name="demo", program="demo-fold", version="1.0", argv=("demo-fold", "{fasta}"))
    base.update(kw)
    return PredictorSpec(**base)


def test_valid_spec_has_no_problems_and_list_argv_becomes_tuple():
    spec = make(argv=["demo-fold", "--in", "{fasta}", "--out", "{workdir}/out.ct"])
    assert spec.problems() == []
    assert spec.validate() is spec
    assert isinstance(spec.argv, tuple)
    hash(spec)  # frozen and hashable, so specs can be set members


@pytest.mark.parametrize(
    "kw, fragment",
    [
        (dict(argv=()), "argv is empty"),
        (dict(argv=("prog", "{fasta}", "{outfile}")), "unknown placeholder {outfile}"),
        (dict(argv=("prog", "{}")), "positional placeholder"),
        (dict(argv=("prog", "{fasta!r}")), "format spec or conversion"),
        (dict(argv=("prog", "{fasta")), "argv[1]"),
        (dict(argv=("prog", "--quiet")), "passes no input"),
        (dict(input_kind="alignment"), "must use {alignment}"),
        (dict(input_kind="tree"), "input kind 'tree'"),
        (dict(output_format="stockholm"), "unknown output format 'stockholm'"),
        (dict(max_length=0), "max length"),
        (dict(time_limit_s=-1), "time limit"),
        (dict(time_limit_s=10**9), "time limit"),
        (dict(memory_limit_mb=1), "memory limit"),
        (dict(version=" "), "version is empty"),
        (dict(name="a/b"), "slashes"),
        (dict(output_file="../x.ct"), "relative path inside the work dir"),
        (dict(image=""), "image is an empty string"),
    ],
)
def test_invalid_specs_name_the_problem(kw, fragment):
    spec = make(**kw)
    with pytest.raises(InvalidSpec) as info:
        spec.validate()
    assert any(fragment in p for p in info.value.problems), info.value.problems


def test_all_problems_reported_at_once():
    spec = make(argv=("prog", "{nope}"), output_format="xml", max_length=-5)
    problems = spec.problems()
    assert len(problems) >= 3


def test_literal_braces_are_not_placeholders():
    assert argv_placeholders("{{literal}}") == []
    assert make(argv=("prog", "--json={{}}", "{fasta}")).problems() == []


def test_fingerprint_tracks_what_changes_results_only():
    spec = make()
    fp = spec.fingerprint()
    assert len(fp) == 64 and fp == make().fingerprint()
    # A new command or version is a new method version ...
    assert replace(spec, argv=("demo-fold", "--fast", "{fasta}")).fingerprint() != fp
    assert replace(spec, version="1.1").fingerprint() != fp
    assert replace(spec, output_format="bpseq").fingerprint() != fp
    # ... a new time limit, description, length limit, licence or declared training data is not.
    assert replace(spec, time_limit_s=5, description="x", max_length=10, citation="c").fingerprint() == fp
    assert replace(spec, licence="MIT", training_data=("rfam-seed-model",)).fingerprint() == fp


def test_dict_round_trip_and_unknown_fields():
    spec = make(image="comparna/demo:1", produces_probabilities=True, training_data=["a", "b"], licence="MIT")
    assert spec.training_data == ("a", "b")  # stored as a tuple: the spec stays hashable
    assert PredictorSpec.from_dict(spec.as_dict()) == spec
    # Specs stored before these fields existed still load.
    old = {k: v for k, v in spec.as_dict().items() if k not in ("licence", "training_data")}
    assert PredictorSpec.from_dict(old).training_data == ()
    assert "training-data entry" in " ".join(make(training_data=("ok", " ")).problems())
    with pytest.raises(ValueError, match="unknown predictor spec fields: colour"):
        PredictorSpec.from_dict({**spec.as_dict(), "colour": "red"})


def test_catalogue_is_valid_unique_and_covers_the_required_methods():
    specs = load_catalogue()
    names = {s.name for s in specs}
    assert len(names) == len(specs)
    for required in (
        "RNAfold-MFE",
        "RNAfold-MEA",
        "RNAfold-centroid",
        "LinearFold-V",
        "LinearPartition-V-MEA",
        "LinearPartition-E-MEA",
        "LinearPartition-V-ThreshKnot",
        "seqfold",
        "SQUARNA",
        "HotKnots",
    ):
        assert required in names
    for s in specs:
        assert s.output_format in PARSERS
        assert s.version not in ("", "not-installed")
        assert s.citation and s.url.startswith("http")
    assert get_spec("HotKnots").max_length <= 200 and get_spec("HotKnots").pseudoknots


def test_duplicate_names_are_an_error():
    with pytest.raises(ValueError, match="duplicate predictor names: RNAfold-MFE"):
        load_catalogue(CATALOGUE + (replace(get_spec("RNAfold-MFE"), version="9"),))
