"""Runner: wall time of one prediction job through the sandbox, against the bare compute and a subprocess.

For N real RNA STRAND sequences spread over 40-400 nt (ACGU only) each method runs every sequence four
ways, interleaved so that machine load hits them alike:

- system:   ``run_prediction`` with :class:`SandboxRunner` (bubblewrap, unprivileged uid, rlimits, cgroups,
  timeout, capped output, parsing), as a worker runs it; also :class:`LocalRunner` (all but isolation);
- baseline: ``subprocess.run`` of the catalogue command (no limits, no isolation) and parsing;
- limit:    the same program inside this process (module imported and warmed up once, ``main`` called with
  stdout captured, same parser): the bare compute with no start-up cost at all.

The four must give the same structure (a check). A trivial program (``/bin/echo``) measures each runner's
fixed cost apart from any folding (``details``).
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.harness import Bench, summary  # noqa: E402
from bench.workloads import inprocess_predictor, strand_sequences, subprocess_predictor  # noqa: E402
from predictors.catalogue import get_spec  # noqa: E402
from predictors.core.runners import LocalRunner, SandboxRunner, run_prediction  # noqa: E402
from predictors.core.spec import PredictorSpec  # noqa: E402

WAYS = ("limit", "baseline", "local", "sandbox")


def _timed(fn, *args, **kw):
    start = time.perf_counter()
    result = fn(*args, **kw)
    return time.perf_counter() - start, result


def main(argv: list[str] | None = None) -> int:
    bench = Bench("runner", __doc__, smoke={"n": 2, "methods": ["RNAfold-MFE"], "trivial": 2})
    p = bench.parser
    p.add_argument("--n", type=int, default=40, help="RNA STRAND sequences, spread over 40-400 nt (40)")
    p.add_argument("--methods", nargs="+", default=["RNAfold-MFE", "LinearFold-V"],
                   help="catalogue methods (in-process wrappers; default RNAfold-MFE LinearFold-V)")
    p.add_argument("--trivial", type=int, default=20, help="runs of the trivial program (20)")
    args = bench.parse(argv)
    if args.n < 1 or args.trivial < 1:
        p.error("--n and --trivial must be >= 1")
    try:
        specs = [get_spec(m) for m in args.methods]
    except KeyError as exc:
        p.error(f"unknown method {exc}")
    if not SandboxRunner.available():
        p.error("bubblewrap is not available here (scripts/install.sh installs it)")

    with bench.measuring():
        seqs = strand_sequences(args.n)
        runners = {"local": LocalRunner(), "sandbox": SandboxRunner()}
        bench.details["sequences"] = {"n": len(seqs), "lengths": [len(s) for _, s in seqs]}
        for spec in specs:
            limit, baseline = inprocess_predictor(spec), subprocess_predictor(spec)
            limit(seqs[0][1])  # warm: imports and first-call set-up happen before any timing
            times: dict[str, list[float]] = {w: [] for w in WAYS}
            failures, same = [], True
            for name, seq in seqs:
                t, lim = _timed(limit, seq)
                times["limit"].append(t)
                t, base = _timed(baseline, seq)
                times["baseline"].append(t)
                structures = {lim.structure.pairs, base.structure.pairs}
                for key, runner in runners.items():
                    t, result = _timed(run_prediction, spec, seq, runner=runner)
                    times[key].append(t)
                    if result.status != "ok":
                        failures.append(f"{key} {name}: {result.status} {result.message}")
                    else:
                        structures.add(result.structure.pairs)
                same &= len(structures) == 1
            bench.check(f"{spec.name}: every runner job ok", not failures)
            bench.check(f"{spec.name}: same structure all four ways", same)
            if failures:
                bench.notes.extend(failures[:5])
            mean = {w: statistics.fmean(v) for w, v in times.items()}
            for key, label in (("sandbox", "SandboxRunner (bubblewrap)"),
                               ("local", "LocalRunner (no isolation)")):
                bench.compare(
                    f"{spec.name} job, {key}",
                    unit="s per job (mean)",
                    system=(mean[key], f"run_prediction with {label}"),
                    baseline=(mean["baseline"], "bare subprocess.run of the catalogue command + parse"),
                    limit=(mean["limit"], "the program's main() in this warm process + parse"),
                )
            bench.details[spec.name] = {w: summary(v) for w, v in times.items()}
            bench.details[spec.name]["sandbox_overhead_s"] = mean["sandbox"] - mean["limit"]

        trivial = PredictorSpec(name="echo", program="echo", version="0", argv=("/bin/echo", "{sequence}"))
        echo = subprocess_predictor(trivial, parse=False)
        fixed: dict[str, list[float]] = {"baseline": [], "local": [], "sandbox": []}
        for _, seq in seqs[: args.trivial] * (1 + args.trivial // len(seqs)):
            if len(fixed["baseline"]) >= args.trivial:
                break
            fixed["baseline"].append(_timed(echo, seq)[0])
            for key, runner in runners.items():
                fixed[key].append(_timed(run_prediction, trivial, seq, runner=runner)[0])
        bench.details["fixed_cost_trivial_program"] = {k: summary(v) for k, v in fixed.items()}
    return bench.finish()


if __name__ == "__main__":
    raise SystemExit(main())
