"""Benchmark of the pairwise ranking engine against a straightforward baseline (issue 4, item 5).

Workload: synthetic counts for 54 methods x 2000 targets with missing predictions, and 12 subsets. The 12
subsets are taken as the worst case: each is the full 2000-target set with its own missing-prediction
pattern (real subsets — short/medium/long, pseudoknotted, PDB — are smaller), so the figure is an upper
bound. The baseline is a per-pair Python loop over the same random draws calling ``scipy.stats.wilcoxon``;
it is run on a few subsets and extrapolated when ``--full-baseline`` is not given.

Usage::

    .venv/bin/python bench/bench_ranking.py [--subsets 12] [--baseline-subsets 1] [--full-baseline]
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

import numpy as np
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from comparna.rna.ranking import (  # noqa: E402
    CountsTable,
    draw_exclusions,
    mcc_from_arrays,
    pair_rng,
    pairwise_ranking,
    rank_subsets,
    subsample_size,
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


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def time_engine(tables: list[CountsTable], seed: int, workers: int = 1) -> tuple[float, float]:
    """Wall-clock and CPU seconds (this process only, so CPU is meaningful for one worker) of all rankings."""
    start, cpu = time.perf_counter(), time.process_time()
    rank_subsets({str(i): table for i, table in enumerate(tables)}, seed=seed, workers=workers)
    return time.perf_counter() - start, time.process_time() - cpu


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--methods", type=int, default=54)
    parser.add_argument("--targets", type=int, default=2000)
    parser.add_argument("--subsets", type=int, default=12)
    parser.add_argument("--baseline-subsets", type=int, default=1)
    parser.add_argument("--full-baseline", action="store_true")
    parser.add_argument("--seed", type=int, default=2013)
    parser.add_argument("--no-scaling", action="store_true")
    args = parser.parse_args(argv)

    tables = [synthetic_table(args.methods, args.targets, seed=s) for s in range(args.subsets)]
    rss_before = peak_rss_mb()
    engine, engine_cpu = time_engine(tables, args.seed)
    rss_after = peak_rss_mb()
    engine2, _ = time_engine(tables, args.seed, workers=2)

    n_base = args.subsets if args.full_baseline else min(args.baseline_subsets, args.subsets)
    start = time.perf_counter()
    for table in tables[:n_base]:
        reference = baseline_verdicts(table, args.seed)
    baseline_measured = time.perf_counter() - start
    baseline = baseline_measured * args.subsets / n_base
    result = pairwise_ranking(tables[n_base - 1], seed=args.seed)
    agree = all(result.verdicts[result.methods.index(a), result.methods.index(b)] == v
                for (a, b), v in reference.items())

    print(f"workload: {args.methods} methods x {args.targets} targets x {args.subsets} subsets "
          f"({args.subsets * args.methods * (args.methods - 1) // 2} pairs), 40 replicates")
    print(f"{'':28}{'seconds':>10}")
    print(f"{'engine, 1 process':28}{engine:>10.2f}   (CPU {engine_cpu:.2f} s)")
    print(f"{'engine, 2 processes':28}{engine2:>10.2f}")
    scaled = "" if n_base == args.subsets else f" ({n_base} subset(s), x{args.subsets / n_base:g})"
    label = "baseline" + scaled
    print(f"{label:28}{baseline:>10.2f}")
    print(f"speed-up: {baseline / engine:.1f}x (1 process), {baseline / engine2:.1f}x (2 processes); "
          f"verdicts identical on the baseline subset: {agree}")
    print(f"peak RSS, 1 process: {rss_after:.0f} MB (before the engine: {rss_before:.0f} MB, inputs incl.)")

    if not args.no_scaling:
        print("\nscaling (one subset, engine seconds)")
        sizes = (500, 1000, 2000)
        print(f"{'methods / targets':>18}" + "".join(f"{t:>9}" for t in sizes))
        for m in (10, 27, 54):
            cells = []
            for t in sizes:
                table = synthetic_table(m, t, seed=99)
                cells.append(time_engine([table], args.seed)[0])
            print(f"{m:>18}" + "".join(f"{c:>9.3f}" for c in cells))


if __name__ == "__main__":
    main()
