"""Scoring: base-pair counts and scores of predictions against their reference (SCIENCE.md §2).

Workload: for each size ``LxN``, N random references of L nt (nested helices and multiloops, ~0.3 L
pairs; a crossing helix on every third, a base triple on every fifth: the extended definition has
multiplets) and ``--predictions`` predictions each (reference pairs kept, dropped or slipped by one or two
positions, helices added in unpaired regions and anywhere), so every kind of false positive occurs.
One *comparison* = the counts (TP, FN, FP split into inconsistent/contradicting/compatible, TN) and the
four scores of one prediction.

- system:   ``comparna.rna.metrics.count_pairs`` + ``score_counts``, one comparison per call; and the batch
  scorer ``comparna.rna.metrics_batch`` over all comparisons of the size, from ``Structure`` objects
  (``score_structures``) and from the stored canonical pair texts (``score_texts``, the re-scoring path);
- baseline: a plain-Python set implementation of the same definitions (each contradicting-candidate false
  positive is checked against every reference pair);
- limit:    every comparison of the size in one vectorised numpy pass (matches and inconsistency read off
  per-position partner arrays, crossings by range-min/max sparse tables built once per reference, scores
  on whole arrays), with pairs already in arrays (that encoding is reported apart, in ``details``).

Times are this process's CPU time, the fastest of ``--repeat`` runs with all ways taken in turns: on a
shared machine that leaves out the time other processes held the core. Every way must give the counts of
``count_pairs`` (the batch scorer also bit-identical scores): checks. Issue 19 asks for >= 100 000
comparisons/s at 300 nt on one core and >= 5x the plain-set implementation; ``details`` says whether the
fastest system path meets that.
"""

from __future__ import annotations

import random
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.harness import Bench, best_of, interleaved  # noqa: E402
from comparna.rna.canonical import structure_to_text  # noqa: E402
from comparna.rna.metrics import count_pairs, score_counts  # noqa: E402
from comparna.rna.metrics_batch import score_structures, score_texts  # noqa: E402
from comparna.rna.structure import Structure  # noqa: E402

TARGET_RATE, TARGET_SPEEDUP = 100_000, 5.0


# ---------------------------------------------------------------------------------------------- workload
def _fill(rng: random.Random, lo: int, hi: int, out: list[tuple[int, int]]) -> None:
    """Nested helices of 3-8 pairs in [lo, hi] with unpaired stretches and loops >= 3 nt (multiloops arise
    when a helix's interior is filled in turn)."""
    pos = lo
    while hi - pos + 1 >= 9:
        if rng.random() < 0.3:
            pos += rng.randint(1, 6)
            continue
        h = rng.randint(3, 8)
        room = hi - pos + 1
        if room < 2 * h + 3:
            break
        span = rng.randint(2 * h + 3, max(2 * h + 3, min(room, int(0.6 * (hi - lo + 1)) + 2 * h + 3)))
        i, j = pos, pos + span - 1
        out.extend((i + k, j - k) for k in range(h))
        _fill(rng, i + h, j - h, out)
        pos = j + 1 + rng.randint(0, 4)


def _free_helix(rng: random.Random, length: int, free: set[int], tries: int = 200, span: int | None = None):
    """A helix of 3-8 pairs on positions in ``free`` (loop >= 1), at most ``span`` nt long; or None."""
    ordered = sorted(free)
    for _ in range(tries):
        if len(ordered) < 6:
            return None
        h = rng.randint(3, 8)
        if span is None:
            i, j = sorted(rng.sample(ordered, 2))
        else:
            i = rng.choice(ordered)
            j = i + rng.randint(2 * h, span)
        pairs = [(i + k, j - k) for k in range(h)]
        if j - i - 2 * h >= 1 and all(a in free and b in free for a, b in pairs):
            return pairs
    return None


def random_reference(rng: random.Random, length: int, *, pseudoknot: bool, triple: bool) -> Structure:
    """Nested helices (~0.3 L pairs), optionally a helix crossing them and a base triple (a multiplet)."""
    pairs: list[tuple[int, int]] = []
    _fill(rng, 1, length, pairs)
    free = set(range(1, length + 1)) - {x for p in pairs for x in p}
    if pseudoknot:
        for _ in range(50):
            helix = _free_helix(rng, length, free)
            if helix and any(i < k < j < l or k < i < l < j for i, j in helix[:1] for k, l in pairs):
                pairs += helix
                free -= {x for p in helix for x in p}
                break
    if triple and pairs and free:
        i, j = pairs[len(pairs) // 2]
        third = rng.choice(sorted(free))
        pairs.append((min(i, third), max(i, third)))
    return Structure.from_pairs(length, pairs)


def random_prediction(rng: random.Random, reference: Structure) -> Structure:
    """Reference pairs kept (p ~ 0.3-0.9) or slipped by 1-2 positions; helices added in the reference's
    unpaired regions (compatible or contradicting false positives) and anywhere (mostly inconsistent)."""
    L = reference.length
    keep = rng.uniform(0.3, 0.9)
    pairs = set()
    for i, j in reference.pairs:
        r = rng.random()
        if r < keep:
            pairs.add((i, j))
        elif r < keep + 0.1:
            d = rng.choice((-2, -1, 1, 2))
            if 1 <= i + d < j:
                pairs.add((i + d, j))
    used = {x for p in pairs for x in p}
    unpaired = set(range(1, L + 1)) - {x for p in reference.pairs for x in p} - used
    everywhere = set(range(1, L + 1))
    for pool, span in ((unpaired, 40), (unpaired, None), (everywhere, None)):
        for _ in range(rng.randint(0, 1 + L // 150)):
            helix = _free_helix(rng, L, pool - used, tries=20, span=span)
            if helix:
                pairs.update(helix)
                used |= {x for p in helix for x in p}
    return Structure.from_pairs(L, pairs)


@dataclass
class Workload:
    references: list[Structure]
    cases: list[tuple[int, Structure]]  # (reference index, prediction)


def make_workload(length: int, targets: int, predictions: int, seed: int) -> Workload:
    rng = random.Random(seed)
    refs = [random_reference(rng, length, pseudoknot=t % 3 == 0, triple=t % 5 == 0) for t in range(targets)]
    cases = [(t, random_prediction(rng, ref)) for t, ref in enumerate(refs) for _ in range(predictions)]
    return Workload(refs, cases)


# ---------------------------------------------------------------------------------------------- system
def system_scores(w: Workload) -> list[tuple[tuple[int, ...], dict]]:
    out = []
    for t, pred in w.cases:
        c = count_pairs(w.references[t], pred)
        out.append(((c.tp, c.fn, c.fp, c.fp_inconsistent, c.fp_contradicting, c.fp_compatible, c.tn),
                    score_counts(c)))
    return out


# --------------------------------------------------------------------------------------------- baseline
def plain_scores(w: Workload) -> list[tuple[tuple[int, ...], dict]]:
    """The definitions read literally, with Python sets; no shared work between predictions."""
    out = []
    for t, pred in w.cases:
        ref = w.references[t]
        R, P, L = ref.pairs, pred.pairs, ref.length
        paired = {x for p in R for x in p}
        tp = len(R & P)
        fn = len(R) - tp
        inc = con = comp = 0
        for i, j in P - R:
            if i in paired or j in paired:
                inc += 1
            elif any(i < k < j < l or k < i < l < j for k, l in R):
                con += 1
            else:
                comp += 1
        fp = inc + con + comp
        tn = L * (L - 1) // 2 - tp - fp - fn
        sens = tp / (tp + fn) if tp + fn else 0.0
        ppv = tp / (tp + fp - comp) if tp + fp - comp else 0.0
        fpx = fp - comp
        den = (tp + fpx) * (tp + fn) * (tn + fpx) * (tn + fn)
        mcc = (tp * tn - fpx * fn) / den**0.5 if den > 0 else 0.0
        f1 = 2 * sens * ppv / (sens + ppv) if sens + ppv else 0.0
        scores = {"sensitivity": sens, "ppv": ppv, "mcc": mcc, "f1": f1}
        out.append(((tp, fn, fp, inc, con, comp, tn), scores))
    return out


# ------------------------------------------------------------------------------------------------ limit
@dataclass
class Encoded:
    """Every pair of the workload in flat arrays (the layout a batch scorer would keep in memory)."""

    length: np.ndarray  # per target
    ref_t: np.ndarray
    ref_i: np.ndarray
    ref_j: np.ndarray
    case_t: np.ndarray  # per comparison
    pred_c: np.ndarray  # per predicted pair: comparison index
    pred_i: np.ndarray
    pred_j: np.ndarray


def encode(w: Workload) -> Encoded:
    # sorted within each structure, as stored (canonical text is sorted): keeps the binary searches local
    ref = [(t, i, j) for t, r in enumerate(w.references) for i, j in sorted(r.pairs)]
    pred = [(c, i, j) for c, (_, p) in enumerate(w.cases) for i, j in sorted(p.pairs)]
    ref_a = np.array(ref, dtype=np.int64).reshape(-1, 3)
    pred_a = np.array(pred, dtype=np.int64).reshape(-1, 3)
    return Encoded(
        np.array([r.length for r in w.references], dtype=np.int64),
        ref_a[:, 0], ref_a[:, 1], ref_a[:, 2],
        np.array([t for t, _ in w.cases], dtype=np.int64),
        pred_a[:, 0], pred_a[:, 1], pred_a[:, 2],
    )


def _sparse_tables(values: np.ndarray, op, levels: int) -> np.ndarray:
    """``table[k, x] = op(values[x : x + 2**k])`` (within bounds), for O(1) range queries
    (sparse tables; Bender & Farach-Colton, LATIN 2000)."""
    table = np.empty((levels, values.size), dtype=values.dtype)
    table[0] = values
    for k in range(1, levels):
        w = 1 << (k - 1)
        table[k, -w:] = table[k - 1, -w:]
        op(table[k - 1, :-w], table[k - 1, w:], out=table[k, :-w])
    return table


def limit_counts(e: Encoded) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Counts (n, 7) and scores of every comparison in whole-array numpy operations."""
    n, T = len(e.case_t), len(e.length)
    S = int(e.length.max()) + 2  # positions 0..L+1 of target t live at t*S + p
    small = np.int16 if S < 2**15 else np.int32  # narrow tables: less memory traffic
    # farthest reference partner to the left / right of every position (multiplets: several partners)
    ends = np.concatenate([e.ref_t * S + e.ref_i, e.ref_t * S + e.ref_j])
    partner = np.concatenate([e.ref_j, e.ref_i]).astype(small)
    far_left = np.full(T * S, S, dtype=small)
    far_right = np.full(T * S, -1, dtype=small)
    np.minimum.at(far_left, ends, partner)
    np.maximum.at(far_right, ends, partner)
    pred_t = e.case_t[e.pred_c]
    base = pred_t * S
    at_i = base + e.pred_i
    if len(ends) == 0 or np.bincount(ends).max() <= 2:
        # every position has at most two partners (base triples), all of them in far_left/far_right
        match = (far_right[at_i] == e.pred_j) | (far_left[at_i] == e.pred_j)
    else:  # base quadruples or more: look the pair keys up
        ref_key = np.sort((e.ref_t * S + e.ref_i) * S + e.ref_j)
        pred_key = at_i * S + e.pred_j
        match = ref_key[np.minimum(np.searchsorted(ref_key, pred_key), len(ref_key) - 1)] == pred_key
    tp = np.bincount(e.pred_c[match], minlength=n)
    fn = np.bincount(e.ref_t, minlength=T)[e.case_t] - tp
    fp = np.bincount(e.pred_c, minlength=n) - tp
    paired = far_right >= 0
    false = ~match
    inconsistent = false & (paired[at_i] | paired[base + e.pred_j])
    rest = np.flatnonzero(false & ~inconsistent & (e.pred_j - e.pred_i > 1))
    lo = at_i[rest] + 1
    hi = base[rest] + e.pred_j[rest] - 1
    k = np.log2(hi - lo + 1).astype(np.int64)  # exact floor for these small integers
    levels = max(1, int(S).bit_length())
    left = _sparse_tables(far_left, np.minimum, levels)
    right = _sparse_tables(far_right, np.maximum, levels)
    hi2 = hi - (1 << k) + 1
    crossing = (np.minimum(left[k, lo], left[k, hi2]) < e.pred_i[rest]) | (
        np.maximum(right[k, lo], right[k, hi2]) > e.pred_j[rest])
    inc = np.bincount(e.pred_c[inconsistent], minlength=n)
    con = np.bincount(e.pred_c[rest[crossing]], minlength=n)
    comp = fp - inc - con
    L = e.length[e.case_t]
    tn = L * (L - 1) // 2 - tp - fp - fn
    counts = np.stack([tp, fn, fp, inc, con, comp, tn], axis=1)
    tpf, fnf, fpx, tnf = (x.astype(np.float64) for x in (tp, fn, fp - comp, tn))
    with np.errstate(divide="ignore", invalid="ignore"):
        sens = np.where(tp + fn > 0, tpf / (tpf + fnf), 0.0)
        ppv = np.where(tpf + fpx > 0, tpf / (tpf + fpx), 0.0)
        den = (tpf + fpx) * (tpf + fnf) * (tnf + fpx) * (tnf + fnf)
        mcc = np.where(den > 0, (tpf * tnf - fpx * fnf) / np.sqrt(den), 0.0)
        f1 = np.where(sens + ppv > 0, 2 * sens * ppv / (sens + ppv), 0.0)
    return counts, {"sensitivity": sens, "ppv": ppv, "mcc": mcc, "f1": f1}


# ------------------------------------------------------------------------------------------------- main
def _size(text: str) -> tuple[int, int]:
    try:
        length, targets = (int(x) for x in text.lower().split("x"))
    except ValueError:
        raise ValueError(f"size {text!r} is not LENGTHxTARGETS, e.g. 300x200") from None
    if length < 10 or targets < 1:
        raise ValueError(f"size {text!r}: length must be >= 10 and targets >= 1")
    return length, targets


def measure_size(bench: Bench, args, length: int, targets: int) -> None:
    """Time and check every way of scoring one workload size; record comparisons and details."""
    w = make_workload(length, targets, args.predictions, args.seed + length)
    n = len(w.cases)
    refs, preds = w.references, [p for _, p in w.cases]
    case = np.array([t for t, _ in w.cases], dtype=np.int64)
    ref_lengths = [r.length for r in refs]
    ref_texts, pred_texts = [structure_to_text(r) for r in refs], [structure_to_text(p) for p in preds]
    t_enc, enc = best_of(lambda: encode(w), args.repeat, clock="cpu")
    timed = interleaved(
        {
            "system": lambda: system_scores(w),
            "batch": lambda: score_structures(refs, preds, case),
            "texts": lambda: score_texts(ref_lengths, ref_texts, pred_texts, case),
            "baseline": lambda: plain_scores(w),
            "limit": lambda: limit_counts(enc),
        },
        # the plain implementation is O(FP x reference pairs): long structures get one run
        {"system": args.repeat, "batch": args.repeat, "texts": args.repeat, "limit": args.repeat,
         "baseline": 1 if length > 1000 else args.repeat},
        clock="cpu",
    )
    sys_out, (t_base, base_out) = timed["system"][1], timed["baseline"]
    sys_counts = np.array([c for c, _ in sys_out])
    sys_scores = {k: np.array([s[k] for _, s in sys_out]) for k in sys_out[0][1]}
    label = f"{length} nt"
    same = [c for c, _ in base_out] == [c for c, _ in sys_out]
    bench.check(f"{label}: baseline counts == count_pairs", same)
    for key, what in (("batch", "batch from Structures"), ("texts", "batch from texts"), ("limit", "limit")):
        counts, scores = timed[key][1]
        counts = getattr(counts, "counts", counts)  # metrics_batch returns BatchCounts
        bench.check(f"{label}: {what} counts == count_pairs", np.array_equal(counts, sys_counts))
        exact = key != "limit"  # metrics_batch promises bit-identical scores; the limit is only close
        bench.check(f"{label}: {what} scores {'==' if exact else '~='} score_counts", all(
            np.array_equal(scores[k], sys_scores[k]) if exact
            else np.allclose(scores[k], sys_scores[k], rtol=1e-12, atol=1e-15) for k in sys_scores))
    baseline = (t_base / n, "plain-Python sets, the definitions read literally")
    limit = (timed["limit"][0] / n, "one numpy pass over all comparisons (pairs already in arrays)")
    for key, name, what in (
        ("system", "one call each", "count_pairs + score_counts, one call per comparison"),
        ("batch", "batch", "metrics_batch.score_structures: all comparisons from Structure objects"),
        ("texts", "batch from texts", "metrics_batch.score_texts: all comparisons from stored pair texts"),
    ):
        bench.compare(f"counts + scores, {label}, {name}", unit="CPU s per comparison",
                      system=(timed[key][0] / n, what), baseline=baseline, limit=limit)
    rates = {key: n / timed[key][0] for key in timed}
    best = max(("system", "batch", "texts"), key=rates.get)
    detail = {
        "comparisons": n,
        "mean_reference_pairs": float(np.mean([len(r.pairs) for r in refs])),
        "mean_predicted_pairs": float(np.mean([len(p.pairs) for p in preds])),
        "fp_kinds_total": dict(zip(("inconsistent", "contradicting", "compatible"),
                                   sys_counts[:, 3:6].sum(axis=0).tolist(), strict=True)),
        "comparisons_per_cpu_s": rates,
        "limit_encoding_s_per_comparison": t_enc / n,
    }
    if length == 300:
        detail["issue19_target"] = {
            "comparisons_per_s": TARGET_RATE, "speedup": TARGET_SPEEDUP, "best_system_path": best,
            "met": rates[best] >= TARGET_RATE and rates[best] / rates["baseline"] >= TARGET_SPEEDUP,
        }
    bench.details[label] = detail


def main(argv: list[str] | None = None) -> int:
    bench = Bench("metrics", __doc__, smoke={"sizes": ["300x10", "3000x1"], "predictions": 3, "repeat": 1})
    p = bench.parser
    p.add_argument("--sizes", nargs="+", default=["300x200", "3000x20"], metavar="LxN",
                   help="sequence length x number of references (default: 300x200 3000x20)")
    p.add_argument("--predictions", type=int, default=10, help="predictions per reference (default 10)")
    p.add_argument("--repeat", type=int, default=5, help="timed runs of each; the fastest counts (default 5)")
    p.add_argument("--seed", type=int, default=19)
    args = bench.parse(argv)
    try:
        sizes = [_size(s) for s in args.sizes]
    except ValueError as exc:
        p.error(str(exc))
    if args.predictions < 1:
        p.error("--predictions must be >= 1")

    with bench.measuring():
        for length, targets in sizes:
            measure_size(bench, args, length, targets)
    return bench.finish()


if __name__ == "__main__":
    raise SystemExit(main())
