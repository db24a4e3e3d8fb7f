"""Methods in virtualenvs of their own: the sandboxed run returns what the package itself predicts."""

from __future__ import annotations

import json
import subprocess

import pytest

from comparna.rna.formats import parse_dot_bracket
from predictors.catalogue import CATALOGUE
from predictors.core.batch import BatchItem, run_batch
from predictors.core.runners import REPO_ROOT, SandboxRunner, run_prediction
from predictors.core.venvs import venv_python

TRNA = "GCGGAUUUAGCUCAGUUGGGAGAGCGCCAGACUGAAGAUCUGGAGGUCCUGUGUUCGAUCCACAGAAUUCGCACCA"


@pytest.mark.slow
@pytest.mark.skipif(not SandboxRunner.available(), reason="bubblewrap (bwrap) is not installed")
def test_efold_in_the_sandbox_equals_efold_called_directly():
    spec = next((s for s in CATALOGUE if s.name == "eFold"), None)
    if spec is None:
        pytest.skip("eFold's virtualenv is not built here (no torch CPU wheel; see install_predictors.sh)")
    result = run_prediction(spec, TRNA, runner=SandboxRunner())
    assert result.status == "ok", (result.message, result.stderr_tail)
    # The package's own API in its venv, without our wrapper (its chatter on stdout is skipped).
    code = (
        "import json, efold\n"
        f"pairs = efold.inference({TRNA!r}, fmt='bp')[{TRNA!r}]\n"
        "print('PAIRS', json.dumps(sorted([int(i), int(j)] for i, j in pairs)))\n"
    )
    out = subprocess.run(
        [venv_python("efold"), "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO_ROOT,
        env={"OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin", "MPLCONFIGDIR": "/tmp"},
        timeout=300,
    ).stdout
    direct = json.loads(next(line for line in out.splitlines() if line.startswith("PAIRS "))[6:])
    assert sorted(list(p) for p in result.structure.pairs) == direct
    assert len(direct) >= 15  # a cloverleaf, not an empty prediction


@pytest.mark.slow
@pytest.mark.skipif(not SandboxRunner.available(), reason="bubblewrap (bwrap) is not installed")
def test_mxfold2_batch_in_the_sandbox_equals_the_mxfold2_command(tmp_path):
    """Our wrapper loads MXfold2's model once and folds target after target; each structure must be what
    ``mxfold2 predict`` (the package's own command, default model) prints for that sequence."""
    spec = next((s for s in CATALOGUE if s.name == "MXfold2"), None)
    if spec is None:
        pytest.skip("MXfold2's virtualenv is not built here (no torch CPU wheel; see install_predictors.sh)")
    seqs = [TRNA, "GGGAGCUCAACUCUCCCCCCCUUUUCCGAGGGUCAUCGGAACCAAGAAAUUCC", TRNA[::-1], "GGGGAAAACCCC"]
    out = run_batch(spec, [BatchItem(s, f"t{k}") for k, s in enumerate(seqs)], runner=SandboxRunner())
    assert out.launches == 1 and not out.unstarted
    fasta = tmp_path / "in.fa"
    fasta.write_text("".join(f">t{k}\n{s}\n" for k, s in enumerate(seqs)))
    printed = subprocess.run(
        [venv_python("mxfold2"), "-m", "mxfold2", "predict", str(fasta)],
        capture_output=True, text=True, check=True, timeout=300,
        env={"OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"},
    ).stdout.splitlines()
    for k, s in enumerate(seqs):
        header = printed.index(f">t{k}")
        assert printed[header + 1] == s
        expected = printed[header + 2].split(" ")[0]
        result = out.results[k]
        assert result.status == "ok", (result.message, result.stderr_tail)
        assert result.structure == parse_dot_bracket(expected), k
    assert len(out.results[0].structure.pairs) >= 15  # a cloverleaf, not an empty prediction
