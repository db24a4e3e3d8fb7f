"""Contract test: every catalogue predictor really runs in the sandbox on a real tRNA and parses.

The tRNA is yeast tRNA-Phe (PDB 1EHZ, 76 nt), whose reference dot-bracket ships with the mmCIF fixtures
(tests/data/).
"""

from __future__ import annotations

import subprocess
import sys
from collections import defaultdict

import pytest
import RNA

from comparna.rna.formats import parse_dot_bracket
from comparna.rna.stockholm import rename_sequence
from predictors.catalogue import load_catalogue
from predictors.core.batch import BatchItem, can_batch, run_batch
from predictors.core.runners import REPO_ROOT, SandboxRunner, run_prediction
from predictors.programs.squarna_fold import top_structure
from predictors.programs.threshknot import threshknot

pytestmark = pytest.mark.skipif(not SandboxRunner.available(), reason="bubblewrap (bwrap) is not installed")


@pytest.fixture(scope="module")
def trna(mmcif_dir) -> tuple[str, set[tuple[int, int]]]:
    lines = [x.strip() for x in (mmcif_dir / "1EHZ.dbn").read_text().splitlines() if x.strip()]
    seq = next(x for x in lines if x[0].isalpha())
    db = next(x for x in lines if x[0] in ".([{<")
    return seq, set(parse_dot_bracket(db).pairs)


@pytest.fixture(scope="module")
def trna_alignments(trna) -> dict[str, str]:
    """Real (seed) and (20) inputs of tRNA-Phe: RF00005 from the Rfam library, aligned by cmalign."""
    from ingest.rfam.cmscan import assign_family
    from ingest.rfam.inputs import align_to_family, seed_input, twenty_input
    from ingest.rfam.library import resolve_library

    seq, _ = trna
    library = resolve_library(None)
    family = assign_family(seq, library)
    assert family is not None and family.family_id == "tRNA"
    seed = library.read_seed(family.accession)
    inputs = {
        "seed": seed_input(seq, seed, accession=family.accession, rfam_version=library.version),
        "20": twenty_input(
            seq, seed, accession=family.accession, rfam_version=library.version, random_seed=7
        ),
    }
    out = {}
    for kind, comparative in inputs.items():
        aligned = align_to_family(comparative, family.accession, library)
        out[kind] = (aligned.to_stockholm(), aligned.query_name)
    return out


@pytest.mark.parametrize(
    "spec", [s for s in load_catalogue() if can_batch(s, SandboxRunner())], ids=lambda s: s.name
)
def test_every_batching_predictor_gives_the_same_answer_twice_in_one_launch(spec, trna):
    """A batch calls the wrapper once per target in one process: state left by one target (a loaded
    parameter set, a compiled engine, a cache directory) must not change the next one's answer."""
    seq, reference = trna
    hairpin = "GGGGAAACCCCAUAUGGGGAAAACCCCA"
    out = run_batch(
        spec, [BatchItem(seq, "a"), BatchItem(hairpin, "b"), BatchItem(seq, "c")], runner=SandboxRunner()
    )
    assert out.launches == 1 and not out.unstarted
    first, _, again = (out.results[k] for k in range(3))
    assert all(out.results[k].status == "ok" for k in range(3)), [
        (r.status, r.message) for r in out.results.values()
    ]
    assert first.structure.pairs == again.structure.pairs  # samplers too: their seed is set per target
    assert first.probabilities == again.probabilities
    assert len(set(first.structure.pairs) & reference) >= 4, sorted(first.structure.pairs)


@pytest.mark.parametrize("spec", load_catalogue(), ids=lambda s: s.name)
def test_every_catalogue_predictor_runs_in_the_sandbox(spec, trna, request):
    seq, reference = trna
    if spec.comparative_input:
        alignment, query_name = request.getfixturevalue("trna_alignments")[spec.comparative_input]
        # The stored alignment names the query row; comparative specs read it as "query".
        alignment = rename_sequence(alignment, query_name, "query")
        result = run_prediction(spec, seq, runner=SandboxRunner(), alignment=alignment)
    else:
        result = run_prediction(spec, seq, runner=SandboxRunner())
    assert result.status == "ok", (result.message, result.stderr_tail)
    assert result.runner == "sandbox-bwrap" and result.limits["network"] == "none"
    assert 0 < result.runtime_s < spec.time_limit_s
    s = result.structure
    assert s is not None and s.length == len(seq) and not s.has_multiplets
    assert s.is_pseudoknotted <= spec.pseudoknots
    # Every method finds at least the acceptor stem region of a cloverleaf: some true pairs.
    assert len(set(s.pairs) & reference) >= 4, sorted(s.pairs)
    if spec.produces_probabilities:
        probs = result.probabilities
        assert probs, "a probabilistic method must store probabilities"
        per_base = defaultdict(float)
        for i, j, p in probs:
            assert 1 <= i < j <= len(seq) and 0 < p <= 1
            per_base[i] += p
            per_base[j] += p
        # A base is paired with probability at most 1 (small rounding slack).
        assert max(per_base.values()) <= 1.0 + 1e-3
        if "ThreshKnot" in spec.name:  # the decoder's rule holds on what was stored
            assert set(s.pairs) == set(threshknot(probs, 0.3))
    else:
        assert result.probabilities is None


def test_rnafold_mfe_matches_viennarna_in_process(trna):
    seq, _ = trna
    spec = next(s for s in load_catalogue() if s.name == "RNAfold-MFE")
    result = run_prediction(spec, seq, runner=SandboxRunner())
    structure, _mfe = RNA.fold(seq)
    assert set(result.structure.pairs) == set(parse_dot_bracket(structure).pairs)


def test_wrappers_report_versions():
    for module, dist in (
        ("vienna_fold", "ViennaRNA"),
        ("hotknots_fold", "hotknots"),
        ("seqfold_fold", "seqfold"),
        ("contrafold_fold", "gpu-contrafold"),
    ):
        out = subprocess.run(
            [sys.executable, "-m", f"predictors.programs.{module}", "--version"],
            capture_output=True,
            text=True,
            cwd=REPO_ROOT,
            check=True,
        ).stdout
        spec_version = next(s.version for s in load_catalogue() if dist.lower() in s.program.lower())
        assert dist in out and spec_version in out


def test_threshknot_keeps_mutual_best_pairs_above_threshold():
    probs = [(1, 10, 0.6), (1, 9, 0.2), (2, 9, 0.5), (3, 8, 0.25), (4, 12, 0.4), (5, 12, 0.45)]
    # (2, 9): 9's best is 0.5 -> kept; (3, 8) below 0.3; 12's best partner is 5, so (4, 12) is dropped.
    assert threshknot(probs, 0.3) == [(1, 10), (2, 9), (5, 12)]


def test_squarna_top_structure_picks_rank_one():
    out = "\n".join(["_____", "((.))\ttop-1_consensus", "=====", "(...)\t#2\t1\t1", "((.))\t#1\t2\t2"])
    assert top_structure(out, 5) == "((.))"
    with pytest.raises(ValueError):
        top_structure("garbage", 5)
