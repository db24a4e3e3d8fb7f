"""Batched launches through the real sandbox: one launch, one exact outcome per target.

A misbehaving target (endless loop, memory bomb, fork bomb, crash, flood, uncaught exception, silent exit)
gets the status a single run of it gets; every other target of the batch gets the result it gets alone.
"""

from __future__ import annotations

import pytest

from predictors.catalogue import CATALOGUE, get_spec
from predictors.core.batch import BatchItem, can_batch, parse_progress, run_batch
from predictors.core.runners import LocalRunner, SandboxRunner, run_prediction
from predictors.core.spec import InvalidSpec, PredictorSpec

pytestmark = pytest.mark.skipif(not SandboxRunner.available(), reason="bubblewrap (bwrap) is not installed")

SEQS = ["GGGGAAACCCC", "GGGAAAUCCC", "GCGCAAAAGCGU", "GGGGGAAAAUCCCC", "ACGUACGU", "GGCGAAAGCC"]
BAD = 2  # the index of the target that misbehaves


def selftest(fault: str | None = None, **kw) -> PredictorSpec:
    args = ("--fault", fault, "--on", SEQS[BAD]) if fault else ()
    fields = dict(time_limit_s=2.0, memory_limit_mb=256, batch=True)
    fields.update(kw)
    return PredictorSpec(
        name="selftest", program="selftest", version="1",
        argv=("{python}", "-m", "predictors.programs.selftest_fold", *args, "{fasta}"), **fields,
    )


@pytest.fixture(scope="module")
def sandbox() -> SandboxRunner:
    return SandboxRunner()


@pytest.fixture(scope="module")
def alone(sandbox) -> list:
    """Each target run alone (one launch each): what a batch must reproduce."""
    return [run_prediction(selftest(), s, runner=sandbox) for s in SEQS]


def test_a_batch_is_one_launch_with_the_results_of_single_runs(sandbox, alone):
    out = run_batch(selftest(), [BatchItem(s) for s in SEQS], runner=sandbox)
    assert out.launches == 1 and out.unstarted == []
    assert sorted(out.results) == list(range(len(SEQS)))
    for i, single in enumerate(alone):
        got = out.results[i]
        assert single.status == got.status == "ok"
        assert got.structure == single.structure and got.structure.pairs
        assert got.limits["batch_size"] == len(SEQS) and got.limits["wall_s"] == 2.0
        assert got.limits["network"] == "none" and got.runner == "sandbox-bwrap"
        # measured around the target's own work inside the batch, not the launch
        assert 0 < got.runtime_s < single.runtime_s


# Wrappers whose main keeps state between calls (ViennaRNA's parameter set, Numba's cache directory).
@pytest.mark.parametrize("name", ["RNAfold-MFE", "RNAfold-Turner1999-MEA", "CONTRAfold-MFE"])
def test_catalogue_wrapper_batch_equals_single_runs(sandbox, name):
    spec = get_spec(name)
    assert spec.batch and can_batch(spec, sandbox)
    seqs = ["GGGAAAUCCCGCGCAAAGCGC" * 2, "ACGUUCGAAGCUAGCUAGGCUAGCUAGCCGAUCGAUCGG", "GCGCUUCGGCGC"]
    out = run_batch(spec, [BatchItem(s) for s in seqs], runner=sandbox)
    assert out.launches == 1
    for i, s in enumerate(seqs):
        single = run_prediction(spec, s, runner=sandbox)
        assert out.results[i].status == single.status == "ok"
        assert out.results[i].structure == single.structure


@pytest.mark.parametrize(
    ("fault", "status", "message"),
    [
        ("loop", "timeout", "wall-clock limit of 2 s exceeded"),
        ("sleep", "timeout", "wall-clock limit of 2 s exceeded"),
        ("fork", "timeout", "wall-clock limit of 2 s exceeded"),
        ("memory", "failed", ""),
        ("crash", "failed", "killed by SIGSEGV"),
        ("abort", "failed", "killed by SIGABRT"),
        ("flood", "failed", "output exceeded the 16 MB limit"),
        ("raise", "failed", "exit status 1"),
        ("fail", "failed", "exit status 1"),
        ("exit", "unparsable", "no dot-bracket structure line"),
        ("garbage", "unparsable", "no matching opening bracket"),
    ],
)
def test_one_misbehaving_target_fails_alone(sandbox, alone, fault, status, message):
    spec = selftest(fault)
    out = run_batch(spec, [BatchItem(s) for s in SEQS], runner=sandbox)
    assert sorted(out.results) == list(range(len(SEQS))) and out.unstarted == []
    bad = out.results[BAD]
    assert bad.status == status and message in bad.message, (bad.status, bad.message, bad.stderr_tail)
    assert bad.structure is None
    # the same as a single run of that target
    single = run_prediction(spec, SEQS[BAD], runner=sandbox)
    assert single.status == status
    for i, s in enumerate(SEQS):
        if i != BAD:
            assert out.results[i].status == "ok", (s, out.results[i])
            assert out.results[i].structure == alone[i].structure
    # a fault that ends the process or leaves its state suspect costs one more launch for the rest
    assert out.launches == (1 if fault in ("fail", "garbage") else 2)
    if status == "timeout":
        assert 2.0 <= bad.runtime_s < 4.0


def test_memory_bomb_is_stopped_by_the_limit(sandbox):
    out = run_batch(selftest("memory"), [BatchItem(s) for s in SEQS], runner=sandbox)
    bad = out.results[BAD]
    assert "MemoryError" in bad.stderr_tail or "memory limit" in bad.message, bad


def test_time_budget_leaves_the_rest_unstarted(sandbox):
    out = run_batch(selftest(), [BatchItem(s) for s in SEQS], runner=sandbox, stop_after_s=0)
    assert sorted(out.results) == [0] and out.unstarted == list(range(1, len(SEQS)))
    assert out.results[0].status == "ok"


def test_too_long_targets_are_not_run(sandbox):
    spec = selftest(max_length=10)
    seen: list[dict] = []
    out = run_batch(spec, [BatchItem(s) for s in SEQS], runner=sandbox, on_results=seen.append)
    for i, s in enumerate(SEQS):
        assert out.results[i].status == ("too_long" if len(s) > 10 else "ok")
    # every result reported exactly once through the callback
    reported = [i for chunk in seen for i in chunk]
    assert sorted(reported) == list(range(len(SEQS)))


def test_spec_that_cannot_batch_runs_one_launch_per_target(sandbox):
    spec = selftest(batch=False)
    assert not can_batch(spec, sandbox)
    out = run_batch(spec, [BatchItem(s) for s in SEQS[:3]], runner=sandbox)
    assert out.launches == 3 and all(r.status == "ok" for r in out.results.values())
    assert all("batch_size" not in r.limits for r in out.results.values())


def test_only_wrappers_can_declare_batch():
    ok = selftest()
    assert ok.problems() == []
    for argv in (
        ("/bin/echo", "{sequence}"),
        ("{python}", "-c", "print(1)", "{fasta}"),
        ("{python}", "-m", "mxfold2", "predict", "{fasta}"),
        ("{python}", "-m", "predictors.programs.vienna_fold", "--x", "{sequence}", "{fasta}"),
        ("{python}", "-m", "predictors.programs._common", "{fasta}"),
        ("{python}", "-m", "predictors.programs.vienna_fold", "{fasta}", "{fasta}"),
    ):
        with pytest.raises(InvalidSpec, match="batch"):
            PredictorSpec(name="x", program="x", version="1", argv=argv, batch=True).validate()
    with pytest.raises(InvalidSpec, match="batch"):
        PredictorSpec(name="x", program="x", version="1", argv=ok.argv, batch=True, image="img").validate()
    with pytest.raises(InvalidSpec, match="complexity"):
        PredictorSpec(name="x", program="x", version="1", argv=ok.argv, complexity="n9").validate()
    # batch and complexity change no prediction: same fingerprint
    assert selftest(batch=False, complexity="n").fingerprint() == ok.fingerprint()


def test_catalogue_batches_its_single_sequence_wrappers_only():
    for spec in CATALOGUE:
        argv = spec.argv
        wrapper = len(argv) > 2 and argv[1] == "-m" and argv[2].startswith("predictors.programs.")
        if spec.input_kind != "single" or not wrapper:
            assert not spec.batch, spec.name
        else:
            assert spec.batch, spec.name
    assert get_spec("LinearFold-V").complexity == "n" and get_spec("RNAfold-MFE").complexity == "n3"


def test_progress_file_is_read_strictly():
    text = "start 0\nend 0 0 0.5\nstart 1\nend 9 0 1\nend 1 x 2\nstart -1\nend 1 0 nan\ngarbage\nstart 2\n"
    p = parse_progress(text, 3)
    assert p.started == [0, 1, 2] and p.ended == {0: (0, 0.5)} and p.current == 2 and not p.stopped
    assert parse_progress("start 0\nend 0 0 0.1\nstop\n", 2).stopped


def test_local_runner_batches_too():
    out = run_batch(selftest(), [BatchItem(s) for s in SEQS[:3]], runner=LocalRunner())
    assert out.launches == 1 and all(r.status == "ok" for r in out.results.values())
