"""The catalogue as data: factory-built variants, declared training data and the method-venv mechanism."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

import pytest

from predictors.catalogue import CATALOGUE, get_spec, load_catalogue
from predictors.catalogue.training import COLLECTIONS, KINDS, SOURCES
from predictors.core.runners import REPO_ROOT, SandboxRunner, format_argv, run_prediction
from predictors.core.spec import InvalidSpec, PredictorSpec
from predictors.core.venvs import venv_python, venvs_dir


def test_every_entry_declares_licence_and_known_training_sources():
    for spec in load_catalogue():
        assert spec.licence.strip(), spec.name
        assert spec.training_data, f"{spec.name} declares no training data / parameter source"
        assert all(key in SOURCES for key in spec.training_data), spec.training_data
    for source in SOURCES.values():
        assert source.kind in KINDS and source.citation and source.description
        assert set(source.overlaps) <= set(COLLECTIONS)
        # Melting experiments cannot contain a benchmark RNA; a source fitted to RNAs names the collections
        # it overlaps, unless its declaration is marked incomplete (then nothing may be assumed of it).
        if source.kind == "thermodynamic":
            assert not source.overlaps, source.key
        else:
            assert source.overlaps or not source.complete, source.key


def test_unknown_training_source_is_refused():
    bad = replace(get_spec("RNAfold-MFE"), name="x", training_data=("no-such-source",))
    with pytest.raises(InvalidSpec, match="unknown training-data source 'no-such-source'"):
        load_catalogue((bad,))


def test_variants_of_one_program_share_what_the_program_declares():
    by_program: dict[str, list[PredictorSpec]] = {}
    for spec in CATALOGUE:
        by_program.setdefault(spec.program, []).append(spec)
    shared = [specs for specs in by_program.values() if len(specs) > 1]
    assert shared, "no program has several variants"
    for specs in shared:
        assert len({(s.version, s.url, s.licence) for s in specs}) == 1, [s.name for s in specs]
        # Same program, different variants: they must differ in what they run.
        assert len({s.fingerprint() for s in specs}) == len(specs)


def test_venvs_dir_follows_the_setting(monkeypatch, tmp_path):
    monkeypatch.delenv("COMPARNA_VENVS_DIR", raising=False)
    assert venvs_dir() == REPO_ROOT / ".venvs"
    monkeypatch.setenv("COMPARNA_VENVS_DIR", str(tmp_path))
    assert venvs_dir() == tmp_path.resolve()
    assert venv_python("x", placeholder=True) == "{venvs}/x/bin/python"
    spec = PredictorSpec(name="v", program="p", version="1", argv=("{venvs}/x/bin/python", "{fasta}"))
    assert spec.problems() == []
    argv = format_argv(spec, sequence="ACGU", workdir="/job", fasta="/job/in.fa", alignment=None, python="py")
    assert argv == [f"{tmp_path.resolve()}/x/bin/python", "/job/in.fa"]


def test_venv_methods_are_listed_only_where_their_venv_exists(tmp_path):
    code = "from predictors.catalogue import CATALOGUE; print(sorted(s.name for s in CATALOGUE))"
    env = {**os.environ, "COMPARNA_VENVS_DIR": str(tmp_path)}
    names = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO_ROOT, env=env, capture_output=True, text=True, check=True
    ).stdout
    assert "RNAfold-MFE" in names and "MXfold2" not in names


@pytest.mark.skipif(not SandboxRunner.available(), reason="bubblewrap (bwrap) is not installed")
def test_a_venvs_dir_outside_the_repository_is_visible_read_only_in_the_sandbox(monkeypatch):
    # A stand-in "venv" whose interpreter is Debian's python: the program reads its own file and tries to
    # write beside it; the sandbox must show the directory (bound read-only) at the same path. The
    # unprivileged sandbox uid must be able to reach it, hence a world-searchable directory; not under /tmp,
    # which the sandbox replaces by a private tmpfs.
    tmp_path = Path(tempfile.mkdtemp(prefix="comparna-venvs-test-", dir="/var/tmp"))
    request_cleanup = tmp_path
    venvs = tmp_path / "venvs"
    (venvs / "demo" / "bin").mkdir(parents=True)
    (venvs / "demo" / "bin" / "python").symlink_to("/usr/bin/python3")
    script = venvs / "demo" / "fold.py"
    script.write_text(
        "import sys\n"
        "seq = open(sys.argv[1]).read().split()[1]\n"
        "try:\n    open(__file__ + '.w', 'w').write('x'); mode = 'rw'\n"
        "except OSError:\n    mode = 'ro'\n"
        "print('>q'); print(seq); print('.' * len(seq)); print(mode, file=sys.stderr)\n"
    )
    for p in (tmp_path, venvs, venvs / "demo", venvs / "demo" / "bin"):
        p.chmod(0o755)
    script.chmod(0o644)
    monkeypatch.setenv("COMPARNA_VENVS_DIR", str(venvs))
    spec = PredictorSpec(
        name="venv-demo",
        program="demo",
        version="1",
        argv=("{venvs}/demo/bin/python", str(script), "{fasta}"),
    )
    try:
        result = run_prediction(spec, "GGGAAACCC", runner=SandboxRunner())
        assert result.status == "ok", (result.message, result.stderr_tail)
        assert result.stderr_tail.strip() == "ro"
        assert not (venvs / "demo" / "fold.py.w").exists()
    finally:
        shutil.rmtree(request_cleanup, ignore_errors=True)
