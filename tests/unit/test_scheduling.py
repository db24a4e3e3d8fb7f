"""predictors.scheduling: the order queued predictions are sent in (pure: no database, no broker)."""

from __future__ import annotations

import random

from predictors.scheduling import (
    BLOCK_TARGETS,
    Candidate,
    MethodCost,
    assign_ranks,
    dispatch_key,
    job_cost,
    stratified_order,
)

CUBIC = MethodCost(max_length=4000)
LINEAR = MethodCost(max_length=10000, exponent=1)
SHORT_ONLY = MethodCost(max_length=200)


def lengths_like_a_benchmark(n: int, seed: int = 1) -> dict[int, int]:
    """Target id -> length: many short RNAs, fewer long ones (the shape of RNA STRAND)."""
    rng = random.Random(seed)
    out = {}
    for t in range(1, n + 1):
        u = rng.random()
        out[t] = int(20 + 180 * u) if u < 0.5 else int(200 + 2800 * (u - 0.5) ** 2 * 4)
    return out


def strata_of(lengths: dict[int, int], k: int = 8) -> list[set[int]]:
    ordered = sorted(lengths, key=lambda t: (lengths[t], t))
    bounds = [round(i * len(ordered) / k) for i in range(k + 1)]
    return [set(ordered[bounds[i] : bounds[i + 1]]) for i in range(k)]


def test_order_is_a_deterministic_permutation_covering_every_length_stratum_first():
    lengths = lengths_like_a_benchmark(400)
    methods = [CUBIC, LINEAR, SHORT_ONLY]
    order = stratified_order(lengths, methods, common_first=0)
    assert sorted(order) == sorted(lengths)
    assert order == stratified_order(dict(reversed(list(lengths.items()))), methods, common_first=0)
    # Most length strata have a target within the first 5 % of the order (every length bin has results
    # early), the shortest first; the longest stratum's first target only after many short ones (it waits
    # until the others have had as much compute as it costs).
    strata = strata_of(lengths)
    first = [min(order.index(t) for t in s) for s in strata]
    assert first[0] == 0 and sum(i < len(order) // 20 for i in first) >= 6
    assert first[-1] == max(first) > 50
    # Within a stratum, shortest first.
    for s in strata_of(lengths):
        mine = [t for t in order if t in s]
        assert mine == sorted(mine, key=lambda t: (lengths[t], t))


def test_strata_take_turns_by_compute_so_short_targets_run_many_times_more_often():
    lengths = lengths_like_a_benchmark(400)
    methods = [CUBIC, LINEAR, SHORT_ONLY]
    order = stratified_order(lengths, methods, common_first=0)
    strata = strata_of(lengths)
    head = order[:100]
    shortest = sum(1 for t in head if t in strata[0])
    longest = sum(1 for t in head if t in strata[-1])
    assert shortest >= 10 and shortest >= 10 * longest, (shortest, longest)
    # Strata every method can run (<= 200 nt here) get more compute than the others of similar cost:
    # with the common weight at 1 the short strata advance more slowly.
    flat = stratified_order(lengths, methods, common_weight=1.0, common_first=0)
    short = set().union(*[s for s in strata if max(lengths[t] for t in s) <= 200])
    assert sum(t in short for t in order[:100]) > sum(t in short for t in flat[:100])


def test_targets_every_method_can_run_come_first_then_every_length():
    lengths = lengths_like_a_benchmark(600, seed=3)
    methods = [CUBIC, LINEAR, SHORT_ONLY]  # SHORT_ONLY cannot run targets over 200 nt
    common = {t for t, n in lengths.items() if n <= 200}
    assert len(common) > 250
    order = stratified_order(lengths, methods, common_first=200)
    assert sorted(order) == sorted(lengths) and order == stratified_order(lengths, methods, common_first=200)
    head, rest = order[:200], order[200:]
    assert set(head) <= common  # the first 200 can become common targets of every method
    # ... spread over the lengths every method shares, not only the shortest
    assert max(lengths[t] for t in head) > 100 and min(lengths[t] for t in head) < 30
    # the same fair order among them as without the head
    assert head == stratified_order({t: lengths[t] for t in common}, methods, common_first=0)[:200]
    # then every length stratum has its turn early, the leftover common targets among them
    assert rest == stratified_order({t: lengths[t] for t in rest}, methods, common_first=0)
    assert max(lengths[t] for t in rest[:40]) > 800
    # without it, the first 200 include targets some method cannot run
    assert not set(stratified_order(lengths, methods, common_first=0)[:200]) <= common
    # fewer common targets than the head: they all go first
    few = {1: 50, 2: 3000, 3: 120, 4: 2500}
    assert stratified_order(few, methods)[:2] == [1, 3]


def test_a_too_long_job_costs_nothing_and_cost_grows_with_length():
    assert job_cost(300, SHORT_ONLY) == 0.0
    assert 1.0 < job_cost(100, CUBIC) < job_cost(1000, CUBIC)
    assert job_cost(1000, LINEAR) < job_cost(1000, CUBIC)
    assert MethodCost.from_spec({"max_length": 800, "complexity": "n"}) == MethodCost(800, 1)
    assert MethodCost.from_spec({"max_length": 800}) == MethodCost(800, 3)


def test_ranks_are_blocks_of_the_order_per_dataset_and_existing_targets_keep_theirs():
    lengths = lengths_like_a_benchmark(40)
    candidates = [Candidate(t, 2 if t > 20 else 1, lengths[t]) for t in lengths]
    ranks = assign_ranks(candidates, [CUBIC], existing={5: 0, 30: 3}, next_rank=10)
    assert ranks[5] == 0 and ranks[30] == 3
    first = [t for t in lengths if t <= 20 and t != 5]
    second = [t for t in lengths if t > 20 and t != 30]
    # the datasets take turns: each in blocks of BLOCK_TARGETS from next_rank on, block k of both at one rank
    assert min(ranks[t] for t in first) == min(ranks[t] for t in second) == 10
    for part in (first, second):
        by_rank = {}
        for t in part:
            by_rank.setdefault(ranks[t], []).append(t)
        assert sorted(by_rank) == list(range(10, 10 + len(by_rank)))
        assert all(len(ts) == BLOCK_TARGETS for r, ts in by_rank.items() if r < max(by_rank))
        order = stratified_order({t: lengths[t] for t in part}, [CUBIC])
        assert [ranks[t] for t in order] == sorted(ranks[t] for t in order)


def simulate(jobs: dict[tuple[int, int], int], pids: dict[tuple[int, int], int]) -> list[tuple[int, int]]:
    """(method, target) jobs in the order they are sent."""
    def key(j):
        return dispatch_key(rank=jobs[j], method_version_id=j[0], prediction_id=pids[j])

    return sorted(jobs, key=key)


def test_every_method_runs_in_each_block_and_a_late_method_catches_up_on_scored_targets_first():
    lengths = lengths_like_a_benchmark(64, seed=7)
    methods = {1: CUBIC, 2: LINEAR, 3: SHORT_ONLY}
    ranks = assign_ranks(
        [Candidate(t, 1, n) for t, n in lengths.items()], list(methods.values()), existing={}, next_rank=0
    )
    pid = iter(range(1, 10**6))
    jobs = {(m, t): ranks[t] for m in methods for t in lengths if lengths[t] <= methods[m].max_length}
    pids = {j: next(pid) for j in jobs}
    sent = simulate(jobs, pids)
    # Within the first block every method has its jobs, one method's together (a batch).
    first_block = [j for j in sent if jobs[j] == 0]
    assert sent[: len(first_block)] == first_block
    runnable = {m for m, _ in first_block}
    targets = {t for _, t in first_block}
    assert runnable == {m for m in methods if any(lengths[t] <= methods[m].max_length for t in targets)}
    assert [m for m, _ in first_block] == sorted(m for m, _ in first_block)

    # The first 100 jobs ran; then method 4 is registered and queued on every target.
    done = set(sent[:100])
    scored = {t for _, t in done}
    existing = {t: ranks[t] for t in lengths}
    late = assign_ranks([Candidate(t, 1, n) for t, n in lengths.items()], [CUBIC], existing=existing,
                        next_rank=max(ranks.values()) + 1)
    assert late == ranks  # every target keeps its rank
    remaining = {j: r for j, r in jobs.items() if j not in done}
    for t in lengths:
        remaining[(4, t)] = late[t]
        pids[(4, t)] = next(pid)
    order = simulate(remaining, pids)
    fully_scored = {t for t in scored if all((m, t) in done for m in methods if (m, t) in jobs)}
    head = order[: len(fully_scored)]
    # The late method's first jobs are the targets the others have already scored, before anything else.
    assert {m for m, _ in head} == {4} and {t for _, t in head} == fully_scored, (head, fully_scored)
