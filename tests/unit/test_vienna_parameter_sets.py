"""ViennaRNA parameter sets: each catalogued set is the one a run really uses.

ViennaRNA keeps the parameters of a process's first folding and silently ignores later loads, so a
method that names a set must prove it folded with it. The proof: energies a run reports equal the energies
computed by an evaluator of our own (tests/support/vienna_par.py) from that set's parameter file as
published in the ViennaRNA source distribution — and differ from what the other sets' files give.
"""

from __future__ import annotations

import json
import random
import re
import subprocess
import sys

import pytest
import RNA

from comparna.rna.formats import parse_dot_bracket
from predictors.catalogue import get_spec
from predictors.catalogue.vienna import PARAMETER_SETS, VIENNA_VERSION
from predictors.core.runners import REPO_ROOT, SandboxRunner, run_prediction
from predictors.core.venvs import venvs_dir
from tests.support.vienna_par import Parameters, evaluate

SETS = [p.key for p in PARAMETER_SETS]
CANONICAL = {("A", "U"), ("U", "A"), ("G", "C"), ("C", "G"), ("G", "U"), ("U", "G")}


@pytest.fixture(scope="module")
def par_files() -> dict[str, Parameters]:
    folder = venvs_dir() / "_data" / f"viennarna-{VIENNA_VERSION}"
    missing = [k for k in SETS if not (folder / f"rna_{k}.par").is_file()]
    if missing:
        pytest.fail(f"parameter files {missing} not in {folder}; run scripts/install_predictors.sh")
    return {k: Parameters.parse((folder / f"rna_{k}.par").read_text(encoding="latin-1")) for k in SETS}


@pytest.fixture(scope="module")
def cloverleaf(mmcif_dir) -> tuple[str, str]:
    """tRNA-Phe (1EHZ) with its reference structure reduced to canonical nested pairs."""
    lines = [x.strip() for x in (mmcif_dir / "1EHZ.dbn").read_text().splitlines() if x.strip()]
    seq = next(x for x in lines if x[0].isalpha()).upper()
    reference = next(x for x in lines if x[0] in ".([{<")
    nested = parse_dot_bracket(re.sub(r"[\[\]{}<>]", ".", reference))  # drop the pseudoknot
    pairs = [(i, j) for i, j in nested.pairs if (seq[i - 1], seq[j - 1]) in CANONICAL]
    structure = ["."] * len(seq)
    for i, j in pairs:
        structure[i - 1], structure[j - 1] = "(", ")"
    assert len(pairs) >= 15  # the four stems of the cloverleaf
    return seq, "".join(structure)


def _in_fresh_process(code: str) -> str:
    return subprocess.run(
        [sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, check=True, timeout=120
    ).stdout


def test_our_evaluator_reproduces_viennarna_energies(par_files):
    # Turner 2004 is ViennaRNA's default, so this process may evaluate without loading anything.
    rng = random.Random(2011)
    for _ in range(40):
        seq = "".join(rng.choice("ACGU") for _ in range(rng.randint(30, 300)))
        fc = RNA.fold_compound(seq)
        structures = [fc.mfe()[0]] + [s.structure for s in fc.subopt(100)[:3]]
        for structure in structures:
            assert evaluate(par_files["turner2004"], seq, structure) == pytest.approx(
                fc.eval_structure(structure), abs=0.005
            ), (seq, structure)


def test_viennarna_ignores_a_second_parameter_set_in_one_process(cloverleaf):
    """The behaviour the wrapper guards against (and the reason each set runs in its own process)."""
    seq, _ = cloverleaf
    out = _in_fresh_process(
        "import RNA\n"
        f"seq = {seq!r}\n"
        "first = RNA.fold(seq)[1]\n"
        "RNA.params_load_RNA_Andronescu2007()\n"
        "print(first, RNA.fold(seq)[1])\n"
    )
    first, after = map(float, out.split())
    assert first == after  # the load reported success and changed nothing
    guard = _in_fresh_process(
        "from predictors.programs.vienna_fold import use_parameter_set\n"
        "use_parameter_set('andronescu2007')\n"
        "try:\n    use_parameter_set('turner1999')\nexcept RuntimeError as e:\n    print('refused:', e)\n"
    )
    assert guard.startswith("refused:")


@pytest.mark.parametrize("key", SETS)
def test_fixed_structure_energy_is_the_sets_own(key, par_files, cloverleaf):
    seq, structure = cloverleaf
    out = _in_fresh_process(
        "from predictors.programs.vienna_fold import energy_of\n"
        f"print(energy_of({seq!r}, {structure!r}, params={key!r}))\n"
    )
    reported = float(out)
    expected = {k: evaluate(p, seq, structure) for k, p in par_files.items()}
    assert reported == pytest.approx(expected[key], abs=0.005), expected
    # The check has teeth: every other set's file gives another energy for this structure.
    assert all(abs(expected[k] - reported) > 0.05 for k in SETS if k != key), expected


@pytest.mark.skipif(not SandboxRunner.available(), reason="bubblewrap (bwrap) is not installed")
@pytest.mark.parametrize("pset", PARAMETER_SETS, ids=lambda p: p.key)
def test_sandboxed_mfe_run_uses_the_named_set(pset, par_files, cloverleaf):
    seq, _ = cloverleaf
    key = pset.key
    spec = get_spec("-".join(x for x in ("RNAfold", pset.label, "MFE") if x))
    result = run_prediction(spec, seq, runner=SandboxRunner())
    assert result.status == "ok", (result.message, result.stderr_tail)
    structure, energy = result.stdout.strip().splitlines()[-1].split(" ", 1)
    reported = float(energy.strip(" ()"))
    assert reported == pytest.approx(evaluate(par_files[key], seq, structure), abs=0.005)
    # Another set could not have produced this energy for this structure.
    others = [evaluate(par_files[k], seq, structure) for k in SETS if k != key]
    assert all(abs(e - reported) > 0.05 for e in others), (reported, others)


@pytest.mark.skipif(not SandboxRunner.available(), reason="bubblewrap (bwrap) is not installed")
def test_sfold_style_sampling_is_repeatable_and_reports_its_clustering(cloverleaf):
    seq, _ = cloverleaf
    spec = get_spec("Sfold-style-sampling-Turner1999")
    first = run_prediction(spec, seq, runner=SandboxRunner())
    again = run_prediction(spec, seq, runner=SandboxRunner())
    assert first.status == again.status == "ok"
    assert first.structure.pairs == again.structure.pairs and first.probabilities == again.probabilities
    out = json.loads(first.stdout)
    assert out["samples"] == 1000 and sum(out["cluster_sizes"]) == 1000 and 1 <= out["clusters"] <= 20
    # The probabilities are sample frequencies: multiples of 1/1000.
    assert all(abs(p * 1000 - round(p * 1000)) < 1e-6 for _i, _j, p in first.probabilities)


def test_a_warm_process_gives_each_sequence_what_a_fresh_one_gives(cloverleaf):
    """Batching (issue 13) folds many sequences in one process: no state may leak between them."""
    from predictors.programs.vienna_fold import predict

    seq, _ = cloverleaf
    other = "GGGAAAUCCCAGCUAGCUAGGCAUCGAUCGAUGCUAGCUAGCUAGCGGAUCGAU"
    fresh = json.loads(
        _in_fresh_process(
            "import json\nfrom predictors.programs.vienna_fold import predict\n"
            f"print(json.dumps(predict({seq!r}, mode='sfold')['pairs']))\n"
        )
    )
    predict(other, mode="sfold")
    predict(other, mode="mea")
    assert [list(p) for p in predict(seq, mode="sfold")["pairs"]] == fresh


@pytest.fixture(scope="module")
def rnapkplex():
    try:
        return get_spec("RNAPKplex")
    except KeyError:
        pytest.skip("RNAPKplex is not installed (Debian vienna-rna, non-free; see install_predictors.sh)")


@pytest.mark.skipif(not SandboxRunner.available(), reason="bubblewrap (bwrap) is not installed")
def test_rnapkplex_energy_without_pseudoknot_is_turner2004s(rnapkplex, par_files, cloverleaf):
    seq, _ = cloverleaf
    result = run_prediction(rnapkplex, seq, runner=SandboxRunner())
    assert result.status == "ok", (result.message, result.stderr_tail)
    structure, energy = result.stdout.strip().splitlines()[-1].split(" ", 1)
    assert set(structure) <= set("().")  # no pseudoknot gains 8.1 kcal/mol in this tRNA
    assert float(energy.strip(" ()")) == pytest.approx(
        evaluate(par_files["turner2004"], seq, structure), abs=0.005
    )


@pytest.mark.skipif(not SandboxRunner.available(), reason="bubblewrap (bwrap) is not installed")
def test_rnapkplex_pseudoknot_reaches_the_stored_structure(rnapkplex, rnastrand_archive):
    from tests.support.strand_sequences import strand_sequences

    seq = strand_sequences(rnastrand_archive)["RFA_00748"]  # 43 nt; RNAPKplex predicts a pseudoknot in it
    result = run_prediction(rnapkplex, seq, runner=SandboxRunner())
    assert result.status == "ok", (result.message, result.stderr_tail)
    assert result.structure.is_pseudoknotted and not result.structure.has_multiplets
