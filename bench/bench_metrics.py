"""Benchmark: scoring long structures with comparna.rna.metrics.count_pairs vs a naive baseline.

The baseline classifies each false positive by scanning every reference pair (O(P·R) per structure),
the straightforward reading of SCIENCE.md §2. Run: ``.venv/bin/python bench/bench_metrics.py``.
"""

from __future__ import annotations

import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from comparna.rna.metrics import count_pairs  # noqa: E402
from tests.unit.test_rna_structure import perturb, random_pseudoknotted  # noqa: E402


def naive_counts(ref, pred):
    partner = {}
    for i, j in ref.pairs:
        partner.setdefault(i, set()).add(j)
        partner.setdefault(j, set()).add(i)
    tp = len(ref.pairs & pred.pairs)
    inc = con = comp = 0
    for i, j in pred.pairs - ref.pairs:
        if partner.get(i, set()) - {j} or partner.get(j, set()) - {i}:
            inc += 1
        elif any(i < k < j < l or k < i < l < j for k, l in ref.pairs):
            con += 1
        else:
            comp += 1
    return tp, inc, con, comp


def main() -> None:
    rng = random.Random(37)
    cases = []
    for _ in range(30):
        ref = random_pseudoknotted(rng, 3000, layers=2)
        cases += [(ref, perturb(rng, ref)) for _ in range(10)]
    t = time.perf_counter()
    fast = [count_pairs(r, p) for r, p in cases]
    t_fast = time.perf_counter() - t
    t = time.perf_counter()
    slow = [naive_counts(r, p) for r, p in cases[:30]]
    t_slow = (time.perf_counter() - t) * len(cases) / 30
    for c, (tp, inc, con, comp) in zip(fast, slow, strict=False):
        assert (c.tp, c.fp_inconsistent, c.fp_contradicting, c.fp_compatible) == (tp, inc, con, comp)
    print(f"{len(cases)} structures of 3000 nt: count_pairs {t_fast:.2f} s, naive baseline {t_slow:.2f} s "
          f"(extrapolated from 30), speed-up {t_slow / t_fast:.1f}x")


if __name__ == "__main__":
    main()
