"""Workers: predictions per minute through the real stack (Celery + sandbox) with 1 and 2 workers.

N real RNA STRAND entries spread over 40-300 nt are imported into a fresh PostgreSQL (filters, CD-HIT-EST);
the methods are queued on every imported target through Redis and run by real Celery workers (queue
``predict``, concurrency 1 each) in the sandbox; wall time = first job queued to last prediction finished
(database timestamps). The same batch runs again from scratch with 2 workers. On exactly the same
(method, sequence) jobs, in the same run:

- baseline: one bare subprocess per prediction (interpreter start-up and imports every time, no sandbox,
  no Celery), 1 and 2 at a time;
- limit:    the programs called in-process, one warm Python process per worker (1, then 2 = one per core),
  no Celery, no sandbox, no database: the bare compute.

Checks: every prediction ends ``ok`` and the stored structures equal the in-process ones.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import psycopg  # noqa: E402

from bench.harness import Bench, Timer  # noqa: E402
from bench.workloads import run_pool, strand_entries, strand_slice_dir  # noqa: E402
from predictors.catalogue import get_spec  # noqa: E402
from predictors.core.runners import SandboxRunner, run_prediction  # noqa: E402
from tests.e2e.stack import production_stack, wait_for  # noqa: E402


def _rows(db: str, sql: str) -> list[tuple]:
    with psycopg.connect(db) as conn:
        return conn.execute(sql).fetchall()


def run_batch(stack, db: str, methods: list[str], timeout: float) -> tuple[int, float]:
    """Queue every method on every target; (predictions, wall seconds first queued -> last finished)."""
    out = stack.manage("queue_predictions", *[a for m in methods for a in ("--method", m)]).stdout
    n = int(out.split()[0])
    pending = "select count(*) from predictors_prediction where status in ('queued', 'running')"
    retried = "select error from predictors_prediction where status = 'queued' and attempts > 1 limit 1"
    deadline = time.monotonic() + timeout
    while _rows(db, pending)[0][0]:
        # an infrastructure error sends a prediction back to the queue with backoff: report, do not wait
        if again := _rows(db, retried):
            raise RuntimeError(f"a prediction is being retried after an infrastructure error: {again[0][0]}")
        if time.monotonic() > deadline:
            raise TimeoutError(f"the batch did not finish in {timeout:.0f} s")
        time.sleep(0.2)
    span = "select extract(epoch from max(finished_at) - min(queued_at)) from predictors_prediction"
    (wall,) = _rows(db, span)[0]
    return n, float(wall)


def stored(db: str) -> dict[tuple[str, str], tuple[str, str]]:
    """(method, sequence) -> (status, canonical pairs) of every stored prediction."""
    rows = _rows(db, """
        select m.name, t.sequence, p.status, p.pairs from predictors_prediction p
        join predictors_methodversion v on v.id = p.method_version_id
        join predictors_method m on m.id = v.method_id join comparna_target t on t.id = p.target_id""")
    return {(name, seq): (status, pairs) for name, seq, status, pairs in rows}


def main(argv: list[str] | None = None) -> int:
    bench = Bench("workers", __doc__, smoke={"n": 3, "methods": ["RNAfold-MFE"], "workers": [1]})
    p = bench.parser
    p.add_argument("--n", type=int, default=60, help="RNA STRAND entries before filters (default 60)")
    p.add_argument("--methods", nargs="+", default=["RNAfold-MFE", "LinearFold-V"],
                   help="catalogue methods (default RNAfold-MFE LinearFold-V)")
    p.add_argument("--max-length", type=int, default=300, help="longest sequence (default 300)")
    p.add_argument("--workers", type=int, nargs="+", default=[1, 2], choices=range(1, 9), metavar="K",
                   help="worker counts, each batch run from scratch with K workers (default 1 2)")
    p.add_argument("--timeout", type=float, default=1800, help="seconds allowed per batch (default 1800)")
    args = bench.parse(argv)
    if args.n < 1:
        p.error("--n must be >= 1")
    try:
        specs = {m: get_spec(m) for m in args.methods}
    except KeyError as exc:
        p.error(f"unknown method {exc}")
    with bench.measuring(), tempfile.TemporaryDirectory(prefix="bench-workers-") as work:
        measure(bench, args, specs, Path(work))
    return bench.finish()


def measure(bench: Bench, args, specs: dict, work: Path) -> None:
    """The measured part of :func:`main`; records comparisons and checks on ``bench``."""
    counts = sorted(set(args.workers))
    entries = strand_entries(args.n, lo=40, hi=args.max_length)
    # the workers' sandbox must work here at all, or every job would be retried until the timeout
    for method in args.methods:
        probe = run_prediction(specs[method], entries[0].sequence, runner=SandboxRunner())
        if not bench.check(f"{method} runs in the sandbox here", probe.status == "ok"):
            bench.notes.append(f"{method}: {probe.status}: {probe.message}")
    if not all(bench.checks.values()):
        return
    slice_dir = strand_slice_dir(entries, work / "slice")
    system: dict[int, tuple[int, float]] = {}
    with production_stack() as stack:
        db = stack.env["DATABASE_URL"]
        stack.manage("sync_predictors", *[a for m in args.methods for a in ("--only", m)])
        with Timer() as t_import:
            stack.manage("import_rnastrand", str(slice_dir), "--no-progress", timeout=args.timeout)
        sequences = [s for (s,) in _rows(db, "select sequence from comparna_target order by id")]
        started: list = []
        for workers in counts:
            while len(started) < workers:  # earlier workers stay up (and were seen ready before)
                w = stack.start_worker("predict", name=f"w{len(started) + 1}", concurrency=1)
                wait_for(lambda w=w: " ready." in w.tail(20000), timeout=120, what=f"worker {w.name}")
                started.append(w)
            with psycopg.connect(db) as conn:  # every batch from scratch
                conn.execute("delete from comparna_score")
                conn.execute("delete from predictors_prediction")
            system[workers] = run_batch(stack, db, args.methods, args.timeout)
            results = stored(db)
        logs = stack.logs()

    jobs = [(m, s) for s in sequences for m in args.methods]
    limit = {k: run_pool(jobs, processes=k) for k in counts}
    baseline = {k: run_pool(jobs, processes=k, how="subprocess") for k in counts}
    expected = {job: " ".join(f"{i}-{j}" for i, j in pairs)
                for job, (_, pairs, _) in zip(jobs, limit[counts[-1]].results, strict=True)}
    if not bench.check("every prediction ok",
                       bool(results) and all(st == "ok" for st, _ in results.values())):
        bench.notes.append(logs[-3000:])
    bench.check("stored structures == in-process structures",
                results.keys() == expected.keys()
                and all(results[k][1] == expected[k] for k in expected))
    bench.check("one prediction per job", all(n == len(jobs) for n, _ in system.values()))
    for k in counts:
        n, wall = system[k]
        label = "1 worker" if k == 1 else f"{k} workers"
        bench.compare(
            f"{label} vs {k} process{'es' if k > 1 else ''}",
            unit="s per prediction (wall)",
            system=(wall / n, f"Celery (concurrency 1) + SandboxRunner + PostgreSQL/Redis, {label}"),
            baseline=(baseline[k].wall_s / n, f"bare subprocess per prediction, {k} at a time"),
            limit=(limit[k].wall_s / n, f"programs in-process, {k} warm process(es), one per core"),
            predictions_per_minute={"system": 60 * n / wall, "baseline": 60 * n / baseline[k].wall_s,
                                    "limit": 60 * n / limit[k].wall_s},
        )
    bench.details.update({
        "entries_offered": len(entries),
        "targets_imported": len(sequences),
        "lengths": sorted(len(s) for s in sequences),
        "methods": args.methods,
        "import_s": t_import.seconds,
        "limit_cpu_s_per_prediction": {k: limit[k].cpu_s / len(jobs) for k in limit},
    })


if __name__ == "__main__":
    raise SystemExit(main())
