"""Benchmark: predictions per minute through the real stack with 1 and with 2 Celery workers.

A fixed slice of RNA STRAND (the first ACGU-only entries of a few source databases, ≤ 300 nt) is imported
into a fresh PostgreSQL; RNAfold-MFE and LinearFold-V are queued on every target through Redis; the time
from queueing to the last finished prediction is measured with 1 worker (concurrency 1) and then, on the
same batch run again from scratch, 2 workers (concurrency 1 each). The baseline is the same programs run
in one process without Celery or the sandbox (bare subprocesses, sequentially).

Run: ``.venv/bin/python bench/bench_workers.py`` (a few minutes).
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import psycopg  # noqa: E402

from tests.conftest import SHARED_DATA  # noqa: E402
from tests.e2e.stack import production_stack, wait_for  # noqa: E402
from tests.support.strand_slice import make_strand_slice  # noqa: E402

METHODS = ("RNAfold-MFE", "LinearFold-V")
PREFIXES = {"ASE": 0, "CRW": 15, "PDB": 25, "RFA": 20, "SRP": 10, "TMR": 0}


def pending(db: str) -> int:
    with psycopg.connect(db) as conn:
        return conn.execute(
            "select count(*) from predictors_prediction where status in ('queued', 'running')"
        ).fetchone()[0]


def run_batch(stack, db: str, methods: tuple[str, ...]) -> tuple[int, float]:
    out = stack.manage("queue_predictions", *[a for m in methods for a in ("--method", m)]).stdout
    n = int(out.split()[0])
    t0 = time.perf_counter()
    wait_for(lambda: pending(db) == 0, timeout=1800, interval=0.2, what="the batch")
    return n, time.perf_counter() - t0


def bare_baseline(slice_dir: Path) -> tuple[int, float]:
    from comparna.rna.formats import read_bpseq
    from predictors.catalogue import get_spec

    seqs = []
    for f in sorted(slice_dir.glob("*.bpseq")):
        seq, _ = read_bpseq(f.read_text())
        seqs.append(seq.upper().replace("T", "U"))
    n, t0 = 0, time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        for k, seq in enumerate(seqs):
            fasta = Path(tmp) / f"{k}.fa"
            fasta.write_text(f">q\n{seq}\n")
            for name in METHODS:
                argv = [a.replace("{python}", sys.executable).replace("{fasta}", str(fasta))
                        for a in get_spec(name).argv]
                subprocess.run(argv, cwd=REPO, capture_output=True, check=True)
                n += 1
    return n, time.perf_counter() - t0


def main() -> None:
    work = Path(tempfile.mkdtemp(prefix="bench-workers-"))
    slice_dir = work / "slice"
    ids = make_strand_slice(SHARED_DATA / "rna_strand_v2.0_bpseq.tar.gz", slice_dir, prefixes=PREFIXES,
                            max_length=300, acgu_only=True)
    results = []
    with production_stack() as stack:
        db = stack.env["DATABASE_URL"]
        stack.manage("sync_predictors", *[a for m in METHODS for a in ("--only", m)])
        stack.manage("import_rnastrand", str(slice_dir), "--no-progress")
        stack.start_worker("predict", name="w1", concurrency=1)
        time.sleep(3)
        n1, t1 = run_batch(stack, db, METHODS)
        results.append(("1 worker", n1, t1))
        with psycopg.connect(db) as conn:  # the same batch again, from scratch
            conn.execute("delete from comparna_score")
            conn.execute("delete from predictors_prediction")
        stack.start_worker("predict", name="w2", concurrency=1)
        time.sleep(3)
        n2, t2 = run_batch(stack, db, METHODS)
        results.append(("2 workers", n2, t2))
    bn, bt = bare_baseline(slice_dir)
    print(f"slice: {len(ids)} RNA STRAND files (imported after filters); machine: 2 cores")
    print(f"methods: {', '.join(METHODS)}")
    print(f"{'setup':<14} {'predictions':>11} {'seconds':>8} {'per minute':>10}")
    for setup, n, t in results:
        print(f"{setup:<14} {n:>11} {t:>8.1f} {60 * n / t:>10.1f}")
    print(f"{'bare, 1 proc':<14} {bn:>11} {bt:>8.1f} {60 * bn / bt:>10.1f}  (no Celery, no sandbox)")


if __name__ == "__main__":
    main()
