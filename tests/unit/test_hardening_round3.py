"""Issue 36, part B, without a database: one memory budget per worker host (the per-run share and the
host-wide ledger, through the real sandbox runner), and names checked with Unicode's confusables skeleton
(UTS #39). CSV cells: tests/unit/test_csv_cells.py."""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
import time
from pathlib import Path

import pytest

from comparna.owners.names import conflicts, name_problem, skeleton, uts39_skeleton
from predictors.core import memory_budget
from predictors.core.limits import memory_ceiling_mb, memory_limit_problem, run_share_mb
from predictors.core.runners import SandboxRunner, run_prediction
from predictors.core.spec import PredictorSpec
from predictors.core.workspace import process_token

SEQ = "GGGGAAACCCC"
needs_bwrap = pytest.mark.skipif(not SandboxRunner.available(), reason="bubblewrap (bwrap) is not installed")


def py(code: str, **kw) -> PredictorSpec:
    defaults = {"output_format": "dot-bracket", "time_limit_s": 60, "memory_limit_mb": 512}
    defaults.update(kw)
    return PredictorSpec(
        name="budget", program="budget", version="0", argv=("{python}", "-c", code, "{fasta}"), **defaults
    )


@pytest.fixture
def own_jobs_root(monkeypatch):
    """A jobs root (and so a memory ledger) of this test's own: other processes' runs on this machine
    neither see its reservations nor are held back by them."""
    root = Path(tempfile.mkdtemp(prefix="comparna-budget-", dir="/tmp"))
    os.chmod(root, 0o711)
    monkeypatch.setenv("COMPARNA_JOBS_DIR", str(root / "jobs"))
    yield root
    shutil.rmtree(root, ignore_errors=True)


# -- one memory budget per host -------------------------------------------------------------------------
def test_a_runs_share_is_the_ceiling_divided_by_the_runs_side_by_side(monkeypatch):
    ceiling = memory_ceiling_mb()
    assert ceiling is not None
    monkeypatch.setenv("COMPARNA_PREDICT_CONCURRENCY", "2")
    assert run_share_mb() == ceiling // 2
    assert memory_limit_problem(ceiling // 2) is None
    problem = memory_limit_problem(ceiling // 2 + 1)  # under the ceiling, over the share: refused now
    assert problem is not None and f"at most {ceiling // 2} MB" in problem
    assert "2 runs side by side" in problem
    monkeypatch.setenv("COMPARNA_PREDICT_CONCURRENCY", "3")
    assert run_share_mb() == ceiling // 3 and memory_limit_problem(ceiling // 2) is not None


@needs_bwrap
def test_runs_get_their_share_and_together_never_more_than_the_ceiling(monkeypatch, own_jobs_root):
    monkeypatch.setenv("COMPARNA_PREDICT_CONCURRENCY", "2")
    ceiling, share = memory_ceiling_mb(), run_share_mb()
    # the case: two runs of a method asking for 64 GiB on a smaller host, side by side
    seen: list[int] = []
    peak = {"held": 0}
    results = []

    def watch():
        while len(results) < 2:
            peak["held"] = max(peak["held"], memory_budget.reserved_mb())
            time.sleep(0.05)

    def one():
        spec = py("import time; time.sleep(1.5); print('((((...))))')", memory_limit_mb=65536)
        results.append(run_prediction(spec, SEQ, runner=SandboxRunner()))

    threads = [threading.Thread(target=one) for _ in range(2)] + [threading.Thread(target=watch)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for r in results:
        assert r.status == "ok", r
        seen.append(r.limits["memory_mb"])
    assert seen == [share, share] and sum(seen) <= ceiling
    assert peak["held"] == 2 * share <= ceiling  # both held their share at once, and no more
    assert memory_budget.reserved_mb() == 0  # freed when the runs ended


@needs_bwrap
def test_a_run_that_does_not_fit_beside_the_live_ones_waits_then_is_refused(monkeypatch, own_jobs_root):
    monkeypatch.setenv("COMPARNA_MEMORY_WAIT_S", "0.6")
    ceiling = memory_ceiling_mb()
    spec = py("print('((((...))))')", memory_limit_mb=512)
    with memory_budget.reserve_memory(ceiling - 256):  # e.g. runs of a second worker on the same host
        refused = run_prediction(spec, SEQ, runner=SandboxRunner())
    assert refused.status == "infrastructure_error" and "memory budget" in refused.message, refused
    assert run_prediction(spec, SEQ, runner=SandboxRunner()).status == "ok"  # room again


def test_the_ledger_drops_reservations_of_dead_processes(own_jobs_root):
    ledger = memory_budget.ledger_dir()
    boot, pidns, _, _ = process_token().split(".")
    (ledger / f"{boot}.{pidns}.999999999.1.deadbeef0000").write_text("4096")  # a pid that cannot exist
    (ledger / f"0f0f0f0f.{pidns}.{os.getpid()}.1.deadbeef0001").write_text("4096")  # of an earlier boot
    assert memory_budget.reserved_mb() == 0
    with memory_budget.reserve_memory(100) as held:
        assert held == 100 and memory_budget.reserved_mb() == 100
    assert memory_budget.reserved_mb() == 0


# -- names: UTS #39 skeleton, invisible letters, first character ---------------------------------------
def test_the_skeleton_is_unicodes():
    assert uts39_skeleton("Μ") == "M"  # Greek capital mu (confusables.txt: 039C -> 004D)
    assert uts39_skeleton("օ") == "o"  # Armenian small oh
    assert uts39_skeleton("Ꭰ") == "D"  # Cherokee letter A
    assert uts39_skeleton("m") == "rn"


@pytest.mark.parametrize(
    "existing, look_alike",
    [
        ("MXfold2", "ΜXfold2"),  # Greek capital Μ
        ("NUPACK", "ΝUPACK"),  # Greek capital Ν
        ("RNAfold-MFE", "RNAf\u0585ld-MFE"),  # Armenian օ
        ("Demo", "\u13a0emo"),  # Cherokee Ꭰ
        ("RNAfold", "RNAfoId"),  # capital I for l
        ("SecretFold", "SECRETF0LD"),
    ],
)
def test_look_alikes_share_a_skeleton(existing, look_alike):
    assert skeleton(existing) == skeleton(look_alike)
    assert conflicts(look_alike, [existing])
    assert not conflicts("BobFold", [existing])


@pytest.mark.parametrize("filler", ["\u3164", "\uffa0", "\u115f", "\u200b", "\u00ad", "\u034f"])
def test_default_ignorable_characters_are_refused(filler):
    problem = name_problem(f"Bob{filler}Fold")
    assert problem is not None and f"U+{ord(filler):04X}" in problem


@pytest.mark.parametrize("name", ["=cmd", "-MyFold", "@MyFold", "+MyFold", "(MyFold)", "_MyFold"])
def test_names_begin_with_a_letter_or_digit(name):
    assert name_problem(name) is not None


def test_ordinary_names_pass():
    for name in ("MyFold", "2ndFold-MFE", "Ωfold", "Bob Fold (v2)"):
        assert name_problem(name) is None, name
