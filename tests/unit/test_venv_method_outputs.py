"""Methods in virtualenvs of their own: the sandboxed run returns what the package itself predicts."""

from __future__ import annotations

import json
import subprocess

import pytest

from predictors.catalogue import CATALOGUE
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
