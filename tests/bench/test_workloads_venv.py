"""The benchmarks' in-process limit for a wrapper run by a method's own virtualenv (bench/venv_worker.py):
one warm process of that interpreter answers every call, with what the sandboxed catalogue run gives."""

from __future__ import annotations

import pytest

from bench.workloads import inprocess_predictor
from predictors.catalogue import CATALOGUE
from predictors.core.runners import SandboxRunner, run_prediction

TRNA = "GCGGAUUUAGCUCAGUUGGGAGAGCGCCAGACUGAAGAUCUGGAGGUCCUGUGUUCGAUCCACAGAAUUCGCACCA"


@pytest.mark.slow
@pytest.mark.skipif(not SandboxRunner.available(), reason="bubblewrap (bwrap) is not installed")
def test_venv_wrapper_in_process_equals_the_sandboxed_run():
    spec = next((s for s in CATALOGUE if s.name == "MXfold2"), None)
    if spec is None:
        pytest.skip("MXfold2's virtualenv is not built here")
    predict = inprocess_predictor(spec)
    first, hairpin, again = predict(TRNA), predict("GGGGAAAACCCC"), predict(TRNA)
    assert first.structure == again.structure and len(first.structure.pairs) >= 15
    assert hairpin.structure.length == 12
    sandboxed = run_prediction(spec, TRNA, runner=SandboxRunner())
    assert sandboxed.status == "ok" and sandboxed.structure == first.structure


def test_a_command_that_is_not_a_wrapper_has_no_in_process_limit():
    from predictors.core.spec import PredictorSpec

    spec = PredictorSpec(name="x", program="x", version="1", argv=("/usr/bin/RNAfold", "{fasta}"))
    with pytest.raises(ValueError, match="not an in-process wrapper"):
        inprocess_predictor(spec)
