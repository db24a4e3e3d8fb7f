"""Throughput: RNA STRAND targets x single-sequence catalogue methods, real stack vs bare in-process compute.

N real RNA STRAND entries spread over all lengths in --min-length..--max-length (evenly spaced ranks of the
length order) are imported into a fresh PostgreSQL (the import's filters apply); then every method is
queued on every imported target at once (in the scheduler's order) and run by real Celery workers
(--workers, concurrency 1 each, queue ``predict``) in the bubblewrap sandbox, with batches
(predictors.execution) as configured. System wall time = first prediction queued to last one finished
(database timestamps). A method's system seconds = the wall time of its launches (a batch: from its claim to
its last result stored; one worker each) summed and divided by the number of workers, i.e. its share of the
workers' time; what is not in any launch (messages, idle workers) shows in the overall wall time only.

In the same run, the limit: the same predictions done in-process by each program's library function
(``main`` of its wrapper, module imported and warmed up before the clock), in --workers Python processes
(one per core), method by method, no Celery, sandbox or database; timed just before the workers start and
again after the stack stops (the mean is the limit: a long run sees the machine's load change). Targets
over a method's length limit are ``too long`` in the system and skipped by the limit. With --baseline also
the naive way: one bare subprocess per prediction, --workers at a time.

Reported: per method the bare and system seconds and their ratio; overall_ratio = system wall time / sum
of the bare walls. Checks: every prediction ends in its expected state (ok, or too long over the limit)
and every stored structure equals the in-process one. Wrappers run by a method's own virtualenv (MXfold2,
eFold) are measured the same way in one warm process of that interpreter per core (``bench/venv_worker.py``);
methods with no in-process wrapper at all are left out (listed in the notes).
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import psycopg  # noqa: E402

from bench.harness import Bench, Timer  # noqa: E402
from bench.workloads import inprocess_predictor, run_pool, strand_entries, strand_slice_dir  # noqa: E402
from predictors.catalogue import CATALOGUE, get_spec  # noqa: E402
from predictors.core.runners import SandboxRunner, run_prediction  # noqa: E402
from tests.e2e.stack import production_stack, wait_for  # noqa: E402

#: The fast methods of issue 13's target (each at most 1.5 x its bare time).
FAST = ("RNAfold-MFE", "LinearFold-V", "LinearPartition-V-MEA")


def default_methods() -> list[str]:
    """Every single-sequence catalogue method whose wrapper can run warm here (in this interpreter, or in
    its virtualenv's through ``bench/venv_worker.py``)."""
    out = []
    for spec in CATALOGUE:
        if spec.input_kind != "single":
            continue
        try:
            inprocess_predictor(spec)
        except (ValueError, ImportError):
            continue
        out.append(spec.name)
    return out


def _rows(db: str, sql: str, *args) -> list[tuple]:
    with psycopg.connect(db) as conn:
        return conn.execute(sql, args).fetchall()


def run_all(stack, db: str, methods: list[str], timeout: float) -> tuple[float, dict, dict]:
    """Queue every method on every target and wait: (wall seconds, (method, sequence) -> (status, pairs,
    batch size), method -> summed launch seconds)."""
    stack.manage("queue_predictions", *[a for m in methods for a in ("--method", m)])
    pending = "select count(*) from predictors_prediction where status in ('queued', 'running')"
    retried = "select error from predictors_prediction where status = 'queued' and attempts > 1 limit 1"
    deadline = time.monotonic() + timeout
    while _rows(db, pending)[0][0]:
        if again := _rows(db, retried):
            raise RuntimeError(f"a prediction is retried after an infrastructure error: {again[0]}")
        if time.monotonic() > deadline:
            raise TimeoutError(f"the predictions did not finish in {timeout:.0f} s")
        time.sleep(0.5)
    span = "select extract(epoch from max(finished_at) - min(queued_at)) from predictors_prediction"
    (wall,) = _rows(db, span)[0]
    rows = _rows(db, """
        select m.name, t.sequence, p.status, p.pairs, coalesce((p.limits->>'batch_size')::int, 1)
        from predictors_prediction p join comparna_target t on t.id = p.target_id
        join predictors_methodversion v on v.id = p.method_version_id
        join predictors_method m on m.id = v.method_id""")
    # one launch (or batch) = the predictions one worker claimed together: same worker, same start
    launches = _rows(db, """
        select m.name, sum(l.seconds) from (
            select p.method_version_id, extract(epoch from max(p.finished_at) - p.started_at) as seconds
            from predictors_prediction p where p.started_at is not null
            group by p.method_version_id, p.worker, p.started_at) l
        join predictors_methodversion v on v.id = l.method_version_id
        join predictors_method m on m.id = v.method_id group by m.name""")
    stored = {(m, seq): (status, pairs, size) for m, seq, status, pairs, size in rows}
    return float(wall), stored, {m: float(s) for m, s in launches}


def bare_runs(specs: dict, sequences: list[str], workers: int) -> dict:
    """The limit, method by method: method -> PoolRun (None when no target is within its length limit)."""
    out = {}
    for name, spec in specs.items():
        jobs = [(name, s) for s in sequences if len(s) <= spec.max_length]
        out[name] = run_pool(jobs, processes=workers) if jobs else None
    return out


def main(argv: list[str] | None = None) -> int:
    bench = Bench("throughput", __doc__, smoke={
        "targets": 5, "methods": ["RNAfold-MFE", "LinearFold-V"], "max_length": 150, "baseline": True,
    })
    p = bench.parser
    p.add_argument("--targets", type=int, default=300, help="RNA STRAND entries before filters (default 300)")
    p.add_argument("--methods", nargs="+", help="catalogue methods (default: every single-sequence method "
                   "that runs in this interpreter)")
    p.add_argument("--min-length", type=int, default=10, help="shortest sequence (default 10)")
    p.add_argument("--max-length", type=int, default=400, help="longest sequence (default 400)")
    p.add_argument("--workers", type=int, default=2, choices=range(1, 9), metavar="K",
                   help="Celery workers and in-process processes (default 2)")
    p.add_argument("--baseline", action="store_true", help="also time one bare subprocess per prediction")
    p.add_argument("--timeout", type=float, default=3600, help="seconds allowed per method (default 3600)")
    args = bench.parse(argv)
    if args.targets < 2:
        p.error("--targets must be >= 2")
    methods = args.methods or default_methods()
    try:
        specs = {m: get_spec(m) for m in methods}
    except KeyError as exc:
        p.error(f"unknown method {exc}")
    with bench.measuring(), tempfile.TemporaryDirectory(prefix="bench-throughput-") as work:
        measure(bench, args, specs, Path(work))
    return bench.finish()


def measure(bench: Bench, args, specs: dict, work: Path) -> None:
    entries = strand_entries(args.targets, lo=args.min_length, hi=args.max_length)
    left_out = [s.name for s in CATALOGUE if s.input_kind == "single" and s.name not in specs]
    if left_out:
        bench.notes.append(f"not measured (no in-process limit here, or not asked): {', '.join(left_out)}")
    probe_seq = min((e.sequence for e in entries), key=len)
    for name, spec in specs.items():
        probe = run_prediction(spec, probe_seq, runner=SandboxRunner())
        if not bench.check(f"{name} runs in the sandbox here", probe.status in ("ok", "too_long")):
            bench.notes.append(f"{name}: {probe.status}: {probe.message}")
    if not all(bench.checks.values()):
        return
    slice_dir = strand_slice_dir(entries, work / "slice")
    with production_stack() as stack:
        db = stack.env["DATABASE_URL"]
        stack.manage("sync_predictors", *[a for m in specs for a in ("--only", m)])
        with Timer() as t_import:
            stack.manage("import_rnastrand", str(slice_dir), "--no-progress", timeout=args.timeout)
        sequences = [s for (s,) in _rows(db, "select sequence from comparna_target order by length, id")]
        # The import's own messages (queue every method, families) are not part of what is timed.
        import redis

        redis.Redis(port=stack.redis_port).delete("default", "predict")
        with psycopg.connect(db) as conn:
            conn.execute("delete from comparna_score")
            conn.execute("delete from predictors_prediction")
        # The limit before the system runs, and again after: the machine's load changes over a long run.
        before = bare_runs(specs, sequences, args.workers)
        for k in range(args.workers):
            w = stack.start_worker("predict", name=f"w{k + 1}", concurrency=1)
            wait_for(lambda w=w: " ready." in w.tail(20000), timeout=180, what=f"worker {w.name}")
        wall, stored, launch_s = run_all(stack, db, list(specs), args.timeout)
        logs = stack.logs()

    table: dict[str, dict] = {}
    mismatched: dict[str, list[str]] = {}
    after = bare_runs(specs, sequences, args.workers)
    for name, spec in specs.items():
        runnable = [s for s in sequences if len(s) <= spec.max_length]
        jobs = [(name, s) for s in runnable]
        bare = after[name]
        bare_s = (before[name].wall_s + bare.wall_s) / 2 if bare else 0.0
        base = run_pool(jobs, processes=args.workers, how="subprocess") if jobs and args.baseline else None
        expected = {s: ("ok", " ".join(f"{i}-{j}" for i, j in pairs))
                    for s, (_, pairs, _) in zip(runnable, bare.results if bare else [], strict=True)}
        expected.update({s: ("too_long", "") for s in sequences if len(s) > spec.max_length})
        got = {s: stored.get((name, s), ("missing", "", 0)) for s in sequences}
        bad = [s for s in sequences if got[s][:2] != expected[s]]
        if bad:
            mismatched[name] = [f"{len(s)} nt: stored {got[s][:2]}" for s in bad[:3]]
        sizes = [v[2] for v in got.values() if v[0] == "ok"]
        share = launch_s.get(name, 0.0) / args.workers
        table[name] = {
            "targets": len(sequences),
            "run": len(runnable),
            "bare_s": round(bare_s, 3),
            "bare_before_s": round(before[name].wall_s, 3) if bare else 0.0,
            "bare_after_s": round(bare.wall_s, 3) if bare else 0.0,
            "system_s": round(share, 3),
            "ratio": round(share / bare_s, 3) if bare_s > 0 else None,
            "baseline_s": round(base.wall_s, 3) if base else None,
            "bare_cpu_s": round(bare.cpu_s, 3) if bare else 0.0,
            "mean_batch_size": round(sum(sizes) / len(sizes), 2) if sizes else None,
        }
    bench.check("every prediction in its expected state with the in-process structure", not mismatched)
    for name, examples in mismatched.items():
        bench.notes.append(f"{name}: {len(examples)}+ differ from in-process, e.g. {examples}")
    if mismatched:
        bench.notes.append(logs[-3000:])
    measured = {n: r for n, r in table.items() if r["bare_s"] > 0}
    bare_total = sum(r["bare_s"] for r in measured.values())
    system_total = wall
    n_pred = sum(r["run"] for r in measured.values())
    k = args.workers
    baseline_total = sum(r["baseline_s"] for r in measured.values()) if args.baseline else None
    if n_pred:
        bench.compare(
            "all methods at once",
            unit="s per prediction (wall)",
            system=(system_total / n_pred,
                    f"Celery ({k} workers, concurrency 1) + batched SandboxRunner + PostgreSQL/Redis"),
            limit=(bare_total / n_pred,
                   f"programs in-process, {k} warm processes (one per core), method by method"),
            baseline=(baseline_total / n_pred, f"bare subprocess per prediction, {k} at a time")
            if baseline_total else None,
            predictions_per_minute={"system": 60 * n_pred / system_total, "limit": 60 * n_pred / bare_total},
        )
    for name in FAST:
        if name in measured:
            r = measured[name]
            bench.compare(name, unit="s per prediction (wall)",
                          system=(r["system_s"] / r["run"], "its launches' wall time / workers"),
                          limit=(r["bare_s"] / r["run"], "as above"),
                          baseline=(r["baseline_s"] / r["run"], "as above") if r["baseline_s"] else None)
    bench.details.update({
        "overall_ratio": round(system_total / bare_total, 3) if bare_total else None,
        "methods": table,
        "fast_methods_ratio": {n: measured[n]["ratio"] for n in FAST if n in measured},
        "entries_offered": len(entries),
        "targets_imported": len(sequences),
        "lengths": {"min": len(sequences[0]), "median": len(sequences[len(sequences) // 2]),
                    "max": len(sequences[-1])} if sequences else {},
        "import_s": t_import.seconds,
        "workers": k,
        "system_wall_s": round(wall, 3),
        "launch_s_over_workers": round(sum(launch_s.values()) / k, 3),
    })
    if not bench.args.json:
        print(f"{'method':36} {'run':>4} {'bare s':>9} {'system s':>9} {'ratio':>6} {'batch':>6}",
              file=sys.stderr)
        for name, r in table.items():
            print(f"{name:36} {r['run']:>4} {r['bare_s']:>9.2f} {r['system_s']:>9.2f} "
                  f"{r['ratio'] if r['ratio'] is not None else '-':>6} {r['mean_batch_size'] or '-':>6}",
                  file=sys.stderr)


if __name__ == "__main__":
    raise SystemExit(main())
