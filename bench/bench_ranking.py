"""Ranking: the pairwise ranking engine (SCIENCE.md §5) against a per-pair scipy loop and a numpy floor.

Workload: synthetic counts for ``--methods`` methods x ``--targets`` targets with missing predictions, in
``--subsets`` subsets; each subset is the full target set with its own missing-prediction pattern (real
subsets are smaller), so the figure is an upper bound for a nightly run.

- system:   ``comparna.rna.ranking.rank_subsets`` (pairwise + robustness rankings), one process;
- baseline: the straightforward implementation, per pair a Python loop over the same random draws calling
  ``scipy.stats.wilcoxon``; run on ``--baseline-subsets`` subsets and scaled to all (``--full-baseline``
  runs it on every subset);
- limit:    the work no implementation of the method can skip, in whole-array numpy calls: at least
  ``replicates x excluded`` random indices per pair, the gather-sum of both methods' counts over them, the
  MCCs and the batched Wilcoxon test of every pair (one random stream, no per-pair seeding, no
  without-replacement reduction).

Times are this process's CPU time (engine and floor: the fastest of ``--repeat`` runs, taken in turns), which
leaves out time other processes held the cores; ``details`` adds the engine's wall time with 2 processes.
Check: the engine's verdicts equal the baseline's on the subsets the baseline ran.
"""

from __future__ import annotations

import argparse
import resource
import sys
from pathlib import Path

import numpy as np
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.harness import Bench, best_of, interleaved  # noqa: E402
from comparna.rna.ranking import (  # noqa: E402
    CountsTable,
    draw_exclusions,
    mcc_from_arrays,
    pair_rng,
    pairwise_ranking,
    rank_subsets,
    robustness_ranking,
    subsample_size,
    wilcoxon_pvalues,
)


def synthetic_table(n_methods: int, n_targets: int, seed: int) -> CountsTable:
    """Counts that look like CompaRNA's: lengths 20-3000 nt, ~0.28 L reference pairs, methods of varied
    accuracy, length limits for some methods and ~3 % random failures."""
    rng = np.random.default_rng(seed)
    length = np.clip(np.exp(rng.normal(np.log(150), 1.0, n_targets)), 20, 3000).astype(np.int64)
    reference = np.maximum(1, rng.binomial(length // 2, 0.55))
    candidates = length * (length - 1) // 2
    sensitivity = rng.uniform(0.35, 0.85, n_methods)
    target_ease = rng.normal(0, 0.8, n_targets)
    logit = np.log(sensitivity / (1 - sensitivity))[:, None] + target_ease[None, :] + rng.normal(
        0, 0.7, (n_methods, n_targets))
    tp = rng.binomial(np.broadcast_to(reference, logit.shape), 1 / (1 + np.exp(-logit)))
    fn = reference[None, :] - tp
    fp = rng.binomial(np.broadcast_to(reference, logit.shape), rng.uniform(0.1, 0.5, n_methods)[:, None])
    compatible = rng.binomial(fp, 0.4)
    tn = candidates[None, :] - tp - fn - fp
    max_length = np.where(rng.random(n_methods) < 0.3, rng.choice([500, 1000, 1500], n_methods), 10**9)
    present = (length[None, :] <= max_length[:, None]) & (rng.random((n_methods, n_targets)) > 0.03)
    counts = np.stack([tp, fn, fp, compatible, tn], axis=-1).astype(np.int64) * present[..., None]
    return CountsTable(tuple(f"method{i:02d}" for i in range(n_methods)),
                       tuple(f"target{j:04d}" for j in range(n_targets)), counts, present)


def baseline_verdicts(table: CountsTable, seed: int, *, replicates: int = 40, alpha: float = 0.001,
                      min_common: int = 10) -> dict[tuple[str, str], str]:
    """The straightforward implementation: per pair, per replicate Python pooling, scipy.stats.wilcoxon."""
    out = {}
    m = len(table.methods)
    for a in range(m):
        for b in range(a + 1, m):
            common = [t for t in range(len(table.targets)) if table.present[a, t] and table.present[b, t]]
            n = len(common)
            name_a, name_b = table.methods[a], table.methods[b]
            if n < min_common:
                out[name_a, name_b] = "?"
                continue
            excluded = draw_exclusions(pair_rng(seed, name_a, name_b), n, n - subsample_size(n), replicates)
            mcc_a, mcc_b = [], []
            for row in excluded:
                drop = set(row.tolist())
                kept = [common[i] for i in range(n) if i not in drop]
                pa = table.counts[a, kept].sum(axis=0)
                pb = table.counts[b, kept].sum(axis=0)
                mcc_a.append(float(mcc_from_arrays(*pa)))
                mcc_b.append(float(mcc_from_arrays(*pb)))
            diff = np.subtract(mcc_a, mcc_b)
            if not diff.any():
                out[name_a, name_b] = "="
                continue
            p = stats.wilcoxon(mcc_a, mcc_b).pvalue
            out[name_a, name_b] = ("+" if diff.mean() > 0 else "-") if p < alpha else "="
    return out


def floor_rankings(tables: list[CountsTable], *, replicates: int = 40, min_common: int = 10,
                   chunk: int = 512) -> int:
    """The unavoidable numpy work of all rankings (see the module docstring); returns the pairs tested.

    Per pair and replicate: ``excluded`` random target indices, the gather-sum of four count fields of
    both methods over them (from a flat, cache-resident int32 table), totals from one matrix product, the
    MCCs and the batched Wilcoxon test. Pairs are processed in large chunks so that Python overhead is
    negligible.
    """
    rng = np.random.default_rng(0)
    tested = 0
    for table in tables:
        robustness_ranking(table)
        m, n_targets = table.present.shape
        present = table.present.astype(np.float64)
        common = np.rint(present @ present.T).astype(np.int64)
        a_all, b_all = np.nonzero(np.triu(common >= min_common, k=1))
        counts = table.counts[..., [0, 1, 2, 4]].copy()
        counts[..., 2] -= table.counts[..., 3]
        # totals[b, a, f] = sum of a's field f over the targets common to a and b
        totals = np.rint(present @ counts.transpose(1, 0, 2).reshape(n_targets, -1)).reshape(m, m, 4)
        fields = np.ascontiguousarray(np.moveaxis(counts, -1, 0).reshape(4, -1), dtype=np.int32)  # (4, M*T)
        for s in range(0, len(a_all), chunk):
            a, b = a_all[s:s + chunk], b_all[s:s + chunk]
            n = common[a, b]
            excluded = n - np.floor(0.9 * n).astype(np.int64)
            sizes = np.repeat(excluded, replicates)  # one row per (pair, replicate)
            starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
            draws = rng.integers(0, n_targets, size=int(sizes.sum()))
            pooled = []
            for side, other in ((a, b), (b, a)):
                flat = np.repeat(side * n_targets, excluded * replicates) + draws
                sums = np.stack([np.add.reduceat(np.take(f, flat), starts) for f in fields], axis=-1)
                pooled.append(totals[other, side][:, None, :] - sums.reshape(len(a), replicates, 4))
            mcc = [mcc_from_arrays(x[..., 0], x[..., 1], x[..., 2], 0, x[..., 3]) for x in pooled]
            wilcoxon_pvalues(mcc[0], mcc[1])
            tested += len(a)
    return tested


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def time_engine(tables: list[CountsTable], seed: int, workers: int = 1) -> None:
    """All rankings of ``tables`` (what the nightly job computes); timed by the caller."""
    rank_subsets({str(i): table for i, table in enumerate(tables)}, seed=seed, workers=workers)


def main(argv: list[str] | None = None) -> int:
    bench = Bench("ranking", __doc__, smoke={"methods": 8, "targets": 200, "subsets": 2, "scaling": False,
                                            "repeat": 1})
    p = bench.parser
    p.add_argument("--methods", type=int, default=54, help="methods (54)")
    p.add_argument("--targets", type=int, default=2000, help="targets per subset (2000)")
    p.add_argument("--subsets", type=int, default=12, help="subsets (12)")
    p.add_argument("--baseline-subsets", type=int, default=1, help="subsets the baseline runs on (1)")
    p.add_argument("--full-baseline", action="store_true", help="run the baseline on every subset")
    p.add_argument("--repeat", type=int, default=3, help="timed runs of engine and floor; fastest counts (3)")
    p.add_argument("--seed", type=int, default=2013)
    p.add_argument("--scaling", action=argparse.BooleanOptionalAction, default=True,
                   help="also time one subset at 10/27/54 methods x 500/1000/2000 targets")
    args = bench.parse(argv)
    if args.methods < 2 or args.targets < 10 or args.subsets < 1 or args.baseline_subsets < 1:
        p.error("need >= 2 methods, >= 10 targets, >= 1 subset and >= 1 baseline subset")

    with bench.measuring():
        tables = [synthetic_table(args.methods, args.targets, seed=s) for s in range(args.subsets)]
        rss_before = peak_rss_mb()
        timed = interleaved({"engine": lambda: time_engine(tables, args.seed),
                             "floor": lambda: floor_rankings(tables)}, args.repeat, clock="cpu")
        (engine, _), (floor, tested) = timed["engine"], timed["floor"]
        rss_after = peak_rss_mb()
        engine2, _ = best_of(lambda: time_engine(tables, args.seed, workers=2), args.repeat)
        n_base = args.subsets if args.full_baseline else min(args.baseline_subsets, args.subsets)
        baseline, references = best_of(
            lambda: [baseline_verdicts(table, args.seed) for table in tables[:n_base]], 1, clock="cpu")
        baseline *= args.subsets / n_base
        agree = True
        for table, reference in zip(tables[:n_base], references, strict=True):
            result = pairwise_ranking(table, seed=args.seed)
            agree &= all(result.verdicts[result.methods.index(a), result.methods.index(b)] == v
                         for (a, b), v in reference.items())
        bench.check(f"engine verdicts == baseline verdicts ({n_base} subset(s))", agree)
        pairs = args.subsets * args.methods * (args.methods - 1) // 2
        scaled = "" if n_base == args.subsets else f", measured on {n_base} subset(s) and scaled"
        bench.compare(
            f"{args.subsets} subsets x {args.methods} methods x {args.targets} targets",
            unit="CPU s per ranking run",
            system=(engine, "rank_subsets (pairwise + robustness), 1 process"),
            baseline=(baseline, "per-pair Python loop + scipy.stats.wilcoxon" + scaled),
            limit=(floor, "random indices + gather-sums + MCC + batched Wilcoxon, whole-array numpy"),
        )
        bench.details.update({
            "pairs": pairs,
            "pairs_tested_by_floor": tested,
            "engine_2_processes_wall_s": engine2,
            "baseline_pair_per_s": pairs / baseline,
            "peak_rss_mb": {"before_engine": rss_before, "after_engine": rss_after},
        })
        if args.scaling:
            grid = {}
            for m in (10, 27, 54):
                for t in (500, 1000, 2000):
                    table = synthetic_table(m, t, seed=99)
                    grid[f"{m}x{t}"] = best_of(lambda table=table: time_engine([table], args.seed), 1)[0]
            bench.details["scaling_one_subset_s"] = grid
    return bench.finish()


if __name__ == "__main__":
    raise SystemExit(main())
