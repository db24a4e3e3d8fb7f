#!/usr/bin/env python3
"""Verdicts: type-I error, power and false "=" of the clustered signed-rank verdict (issue 35, SCIENCE.md §5).

Simulated pairs of methods with per-target MCC differences d = Δ + u_family + e_target (intra-family
correlation ρ = var u / (var u + var e), total SD 0.2), 10 % exact zeros (identical predictions), rounded to
0.001 (ties), heavy-tailed family sizes (1 + ⌊2.5·Lomax(1.5)⌋, at most N/4) for N = 100, 400, 1700 targets,
and ArchiveII's nine declared families (401, 392, 343, 288, 239, 66, 62, 29, 14). Per cell:

- type-I error at α = 0.001 over ``--null`` data sets with Δ = 0, with its 95 % Clopper–Pearson interval,
  for the exact sign-flip null (``comparna.rna.signflip``) and for the former normal form
  2Φ(−|T|/√ΣS_c²) (the baseline); also at α/780, Holm's first step over 40 methods;
- power at Δ = 0.02 and 0.05 MCC over ``--power`` data sets (exact null and normal form, at α and α/780);
- the TOST "=" rate (δ = 0.02: the family-clustered 90 % interval of the mean, CR2 with Bell–McCaffrey
  degrees of freedom, ``signflip.clustered_mean_interval``, inside ±δ) at Δ = 0.05 (must be ≤ 5 %) and at
  Δ = δ (the TOST's size, 5 % nominal), and that interval's coverage of Δ at Δ = 0, 0.02 and 0.05.

The verdict at a threshold comes from ``sign_flip_test`` with the band (α/780, α): cells settled outside the
widened band by a rigorous bound or the saddlepoint (``resampled_pvalues`` with one draw of every family),
every cell near the band by ``sign_flip_test`` itself (exact, bracket or "undecided": counted apart).

Timing (seconds per data set, CPU time): system = ranks, family sums and the exact-null verdict; baseline =
the same with the normal form; limit = ranks and family sums alone (work any form of the test must do).
"""

from __future__ import annotations

import math
import sys
import time
from pathlib import Path

import numpy as np
from scipy import special, stats

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.harness import Bench  # noqa: E402
from comparna.rna.signflip import clustered_mean_interval, resampled_pvalues, sign_flip_test  # noqa: E402

ALPHA = 0.001
HOLM_FIRST = ALPHA / 780
DELTA = 0.02
ARCHIVEII = (401, 392, 343, 288, 239, 66, 62, 29, 14)


def family_sizes(rng: np.random.Generator, n: int) -> np.ndarray:
    """Heavy-tailed family sizes summing to n (ArchiveII's own when n is 0)."""
    if n == 0:
        return np.array(ARCHIVEII)
    sizes, total = [], 0
    while total < n:
        s = min(1 + int(2.5 * rng.pareto(1.5)), max(1, n // 4), n - total)
        sizes.append(s)
        total += s
    return np.array(sizes)


def simulate(rng, codes, families, count, delta, rho, sd=0.2, zeros=0.1) -> np.ndarray:
    """(count, N) per-target differences: Δ + family effect + target noise, zeros and ties."""
    u = rng.normal(0, math.sqrt(rho) * sd, (count, families))[:, codes]
    e = rng.normal(0, math.sqrt(1 - rho) * sd, (count, codes.size))
    d = np.round(delta + u + e, 3)
    d[rng.random(d.shape) < zeros] = 0.0
    return d


def family_rank_sums(d: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """(count, C) per-family sums of doubled signed average ranks (zeros dropped), families contiguous."""
    a = np.abs(d)
    z = (a == 0).sum(axis=1, keepdims=True)
    ranks2 = np.rint(2 * (stats.rankdata(a, axis=1) - z)).astype(np.int64)  # ranks among the non-zero
    signed = np.where(d > 0, ranks2, np.where(d < 0, -ranks2, 0))
    return np.add.reduceat(signed, starts, axis=1)


def exact_pvalues(sums: np.ndarray, band: tuple[float, float]) -> tuple[np.ndarray, int]:
    """p per data set as the verdict uses it, and how many stayed "undecided" (counted as not rejected)."""
    p = resampled_pvalues(sums.T / 2, np.ones((1, sums.shape[1])), band=band, cell_budget=0)[0]
    undecided = 0
    for k in np.flatnonzero((p >= band[0] / 10) & (p <= band[1] * 10)):
        out = sign_flip_test(sums[k], band=band, thresholds=(HOLM_FIRST, ALPHA))
        p[k] = out.p if out.method != "undecided" else 1.0
        undecided += out.method == "undecided"
    return p, undecided


def normal_pvalues(sums: np.ndarray) -> np.ndarray:
    s = sums.astype(np.float64)
    var = (s * s).sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(var > 0, s.sum(axis=1) / np.sqrt(var), 0.0)
    return special.erfc(np.abs(z) / math.sqrt(2))


def clopper_pearson(k: int, n: int) -> tuple[float, float]:
    low = 0.0 if k == 0 else float(stats.beta.ppf(0.025, k, n - k + 1))
    high = 1.0 if k == n else float(stats.beta.ppf(0.975, k + 1, n - k))
    return low, high


def run_cell(rng, n: int, rho: float, args, timing: dict) -> dict:
    sizes = family_sizes(rng, n)
    codes = np.repeat(np.arange(sizes.size), sizes)
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    band = (HOLM_FIRST, ALPHA)
    row: dict = {"targets": int(codes.size), "families": int(sizes.size), "rho": rho,
                 "largest_family": int(sizes.max()), "floor": 2.0 / 2.0 ** sizes.size}
    for delta, count in ((0.0, args.null), (0.02, args.power), (0.05, args.power)):
        new_hits = np.zeros(2, dtype=np.int64)
        old_hits = np.zeros(2, dtype=np.int64)
        undecided = equal = covered = done = 0
        while done < count:
            block = min(args.block, count - done)
            d = simulate(rng, codes, sizes.size, block, delta, rho)
            t0 = time.process_time()
            sums = family_rank_sums(d, starts)
            t1 = time.process_time()
            p, und = exact_pvalues(sums, band)
            t2 = time.process_time()
            q = normal_pvalues(sums)
            t3 = time.process_time()
            timing["limit"] += t1 - t0
            timing["system"] += t2 - t0
            timing["baseline"] += (t1 - t0) + (t3 - t2)
            timing["datasets"] += block
            undecided += und
            for j, level in enumerate((ALPHA, HOLM_FIRST)):
                new_hits[j] += int((p < level).sum())
                old_hits[j] += int((q < level).sum())
            # the TOST rate and coverage at every Δ (at 0.02 = δ: the TOST's size)
            if args.tost > done:
                for x in d[: max(0, min(block, args.tost - done))]:
                    low, high = clustered_mean_interval(x, codes, confidence=0.90)
                    equal += -DELTA < low and high < DELTA
                    covered += low <= delta <= high
            done += block
        tost_n = min(count, args.tost)
        key = {0.0: "null", 0.02: "d002", 0.05: "d005"}[delta]
        row[key] = {
            "datasets": count,
            "exact_alpha": new_hits[0] / count,
            "exact_holm780": new_hits[1] / count,
            "normal_alpha": old_hits[0] / count,
            "normal_holm780": old_hits[1] / count,
            "undecided": undecided,
        }
        if delta == 0.0:
            row[key]["exact_alpha_ci"] = clopper_pearson(int(new_hits[0]), count)
            row[key]["normal_alpha_ci"] = clopper_pearson(int(old_hits[0]), count)
        if tost_n:
            row[key]["tost_equal"] = equal / tost_n
            row[key]["coverage90"] = covered / tost_n
            row[key]["tost_datasets"] = tost_n
    return row


def agreement_check(rng, n: int) -> bool:
    """The bench's settlement (bounds, saddlepoint far out, brackets near) and the exact count of every
    data set give the same verdicts at both thresholds."""
    sizes = family_sizes(rng, n)
    codes = np.repeat(np.arange(sizes.size), sizes)
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    sums = family_rank_sums(simulate(rng, codes, sizes.size, 60, 0.03, 0.4), starts)
    p, _ = exact_pvalues(sums, (HOLM_FIRST, ALPHA))
    single = np.array([sign_flip_test(s).p for s in sums])  # exact everywhere (no band)
    return all(((p < x) == (single < x)).all() for x in (ALPHA, HOLM_FIRST))


def main(argv: list[str] | None = None) -> int:
    bench = Bench("verdicts", __doc__, smoke={"null": 300, "power": 100, "tost": 100, "sizes": "100,400,0",
                                               "rhos": "0.4"})
    bench.parser.add_argument("--null", type=int, default=20_000, help="null data sets per cell")
    bench.parser.add_argument("--power", type=int, default=2000, help="data sets per cell at Δ = 0.02, 0.05")
    bench.parser.add_argument("--tost", type=int, default=2000, help="data sets for the TOST rate/coverage")
    bench.parser.add_argument("--sizes", default="100,400,1700,0", help="targets per cell (0: ArchiveII)")
    bench.parser.add_argument("--rhos", default="0.2,0.6", help="intra-family correlations")
    bench.parser.add_argument("--block", type=int, default=500, help="data sets simulated at once")
    bench.parser.add_argument("--seed", type=int, default=35)
    args = bench.parse(argv)
    rng = np.random.default_rng(args.seed)
    timing = {"system": 0.0, "baseline": 0.0, "limit": 0.0, "datasets": 0}
    with bench.measuring():
        cells = []
        for n in (int(x) for x in args.sizes.split(",")):
            for rho in (float(x) for x in args.rhos.split(",")):
                cells.append(run_cell(rng, n, rho, args, timing))
                print(f"cell N={cells[-1]['targets']} C={cells[-1]['families']} rho={rho}: "
                      f"{cells[-1]['null']} {cells[-1]['d005']}", file=sys.stderr, flush=True)
        per = max(1, timing["datasets"])
        bench.compare("verdict per simulated data set", unit="s per data set (CPU)",
                      system=(max(timing["system"], 1e-9) / per, "exact sign-flip null (signflip)"),
                      baseline=(max(timing["baseline"], 1e-9) / per, "normal form 2Φ(−|T|/√ΣS²)"),
                      limit=(max(timing["limit"], 1e-9) / per, "ranks and family sums only"))
        bench.details["cells"] = cells
        bench.check("verdicts = the exact count's", agreement_check(rng, 400))
        for cell in cells:
            null = cell["null"]
            # type-I error at most α: the interval of the observed rate reaches down to α or below
            bench.check(f"type-I <= alpha (N={cell['targets']}, rho={cell['rho']})",
                        null["exact_alpha_ci"][0] <= ALPHA)
            bench.check(f"false '=' at 0.05 <= 5% (N={cell['targets']}, rho={cell['rho']})",
                        cell["d005"]["tost_equal"] <= 0.05)
            if cell["floor"] >= ALPHA:
                bench.check(f"no win below the floor (N={cell['targets']})",
                            null["exact_alpha"] == 0 and cell["d005"]["exact_alpha"] == 0)
        bench.notes.append("type-I, power: share of data sets with p below the level; 'undecided' cells "
                           "count as not rejected")
    return bench.finish()


if __name__ == "__main__":
    sys.exit(main())
