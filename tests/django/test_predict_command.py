"""``manage.py predict --method NAME --sequence SEQ --json`` in a subprocess, for catalogue methods.

The command runs in its own process on its own SQLite database (migrated and synced here), through the
same runner the workers use. RNAfold-MFE and LinearFold-V run by default; one variant of every other
single-sequence program runs under ``-m slow`` (every variant of every program already runs in the sandbox
in ``tests/unit/test_predictor_catalogue.py``; this file tests the command, not the catalogue).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import RNA

from comparna.rna.formats import parse_dot_bracket
from predictors.catalogue import CATALOGUE
from predictors.forms import TEST_SEQUENCE
from tests.e2e.stack import REPO

FAST = ("RNAfold-MFE", "LinearFold-V")
KEYS = {"method", "status", "structure", "pairs", "runtime_s", "runner"}


@pytest.fixture(scope="module")
def manage(tmp_path_factory):
    data = tmp_path_factory.mktemp("predict-cmd")
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "CELERY_BROKER_URL"}}
    env.update(COMPARNA_DATA_DIR=str(data), DJANGO_SETTINGS_MODULE="comparna.settings")

    def run(*args: str) -> subprocess.CompletedProcess:
        proc = subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=REPO, env=env, capture_output=True, text=True, timeout=600,
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        return proc

    run("migrate", "--noinput", "-v", "0")
    run("sync_predictors")
    return run


def single_specs() -> list:
    one_per_program: dict[str, object] = {}
    for spec in CATALOGUE:
        if spec.input_kind == "single" and (spec.program not in one_per_program or spec.name in FAST):
            one_per_program[spec.program] = spec
    return [
        pytest.param(spec, id=spec.name, marks=[] if spec.name in FAST else [pytest.mark.slow])
        for spec in one_per_program.values()
    ]


def test_list_json_names_the_catalogue(manage):
    names = json.loads(manage("predict", "--list", "--json").stdout)
    assert set(FAST) <= set(names)
    assert names == sorted(names)


@pytest.mark.parametrize("spec", single_specs())
def test_predict_json(manage, spec):
    out = json.loads(manage("predict", "--method", spec.name, "--sequence", TEST_SEQUENCE, "--json").stdout)
    assert KEYS <= set(out)
    assert out["method"] == spec.name
    assert out["status"] == "ok", out
    assert out["runner"].startswith(("sandbox", "container"))
    assert out["runtime_s"] > 0
    # The dot-bracket and the pair list describe the same structure.
    structure = parse_dot_bracket(out["structure"], length=len(TEST_SEQUENCE))
    assert sorted(list(p) for p in structure.pairs) == out["pairs"]
    assert all(1 <= i < j <= len(TEST_SEQUENCE) for i, j in out["pairs"])
    if spec.name == "RNAfold-MFE":
        assert out["structure"] == RNA.fold(TEST_SEQUENCE)[0]  # ViennaRNA directly, outside the runner
    if spec.name == "LinearFold-V":
        assert len(out["pairs"]) >= 15  # a tRNA cloverleaf has about 20 pairs
