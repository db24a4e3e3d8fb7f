"""predictors.scheduling with dataset priorities (issue 38): RNA STRAND and ArchiveII reach their first
rankings first, the small PDB-derived test sets then run alone until complete, the larger sets after them."""

from __future__ import annotations

from predictors.scheduling import (
    BLOCK_TARGETS,
    LEAD_BLOCKS,
    Candidate,
    MethodCost,
    assign_ranks,
    assign_tiered_ranks,
)

CUBIC = MethodCost(max_length=4000)
STRAND, ARCHIVE, SPOT, HIRES, RNA3DB = 1, 2, 3, 4, 5
PRIORITY = {SPOT: 1, HIRES: 1, RNA3DB: 2}


def candidates(sizes: dict[int, int], start: int = 1) -> list[Candidate]:
    out, t = [], start
    for group, n in sizes.items():
        for k in range(n):
            out.append(Candidate(t, group, 30 + (k * 37) % 400))
            t += 1
    return out


def by_group(cands, ranks):
    out: dict[int, list[int]] = {}
    for c in cands:
        out.setdefault(c.group, []).append(ranks[c.target_id])
    return out


def test_one_queueing_of_every_dataset_orders_them_by_priority():
    cands = candidates({STRAND: 400, ARCHIVE: 300, SPOT: 121, HIRES: 6, RNA3DB: 200})
    plan = assign_tiered_ranks(cands, [CUBIC], existing={}, next_rank=0, priorities=PRIORITY)
    ranks = by_group(cands, plan.ranks)
    spot_blocks = -(-121 // BLOCK_TARGETS)
    # the first LEAD_BLOCKS blocks of RNA STRAND and ArchiveII are exactly what they had without priorities
    first = [c for c in cands if c.group in (STRAND, ARCHIVE)]
    plain = assign_ranks(first, [CUBIC], existing={}, next_rank=0)
    for c in cands:
        if c.group in (STRAND, ARCHIVE) and plain[c.target_id] < LEAD_BLOCKS:
            assert plan.ranks[c.target_id] == plain[c.target_id]
    # then the small PDB sets alone: no other dataset has a job at their ranks
    small = set(ranks[SPOT]) | set(ranks[HIRES])
    assert min(small) == LEAD_BLOCKS and max(small) == LEAD_BLOCKS + spot_blocks - 1
    assert not small & (set(ranks[STRAND]) | set(ranks[ARCHIVE]) | set(ranks[RNA3DB]))
    # then the rest, the larger PDB-derived set taking turns with the first benchmarks' remainder
    assert min(ranks[RNA3DB]) == LEAD_BLOCKS + spot_blocks
    assert min(r for r in ranks[STRAND] if r >= LEAD_BLOCKS) == LEAD_BLOCKS + spot_blocks
    assert plan.shift_from == LEAD_BLOCKS and plan.shift_by == spot_blocks


def test_a_later_import_moves_the_queued_backlog_back_not_the_first_blocks():
    # RNA STRAND and ArchiveII were queued from rank 0 (first_primary_rank); the PDB-derived sets come later
    cands = candidates({SPOT: 20, RNA3DB: 30}, start=1000)
    plan = assign_tiered_ranks(
        cands, [CUBIC], existing={}, next_rank=2, priorities=PRIORITY, first_primary_rank=0
    )
    ranks = by_group(cands, plan.ranks)
    assert sorted(set(ranks[SPOT])) == [LEAD_BLOCKS, LEAD_BLOCKS + 1, LEAD_BLOCKS + 2]
    assert min(ranks[RNA3DB]) == LEAD_BLOCKS + 3
    assert (plan.shift_from, plan.shift_by) == (LEAD_BLOCKS, 3)
    # far into the backlog, the small set starts at the front of the queue
    late = assign_tiered_ranks(
        cands, [CUBIC], existing={}, next_rank=500, priorities=PRIORITY, first_primary_rank=0
    )
    assert min(late.ranks[c.target_id] for c in cands if c.group == SPOT) == late.shift_from == 500


def test_targets_already_queued_keep_their_rank_and_nothing_moves():
    cands = candidates({SPOT: 10, RNA3DB: 10})
    existing = {c.target_id: 40 + i for i, c in enumerate(cands)}
    plan = assign_tiered_ranks(cands, [CUBIC], existing=existing, next_rank=3, priorities=PRIORITY,
                               first_primary_rank=0)
    assert plan.ranks == existing and plan.shift_by == 0 and plan.shift_from is None


def test_without_priorities_the_ranks_are_the_plain_ones():
    cands = candidates({STRAND: 50, ARCHIVE: 40})
    plan = assign_tiered_ranks(cands, [CUBIC], existing={}, next_rank=7, priorities={})
    assert plan.ranks == assign_ranks(cands, [CUBIC], existing={}, next_rank=7) and plan.shift_by == 0


def test_a_larger_set_queued_separately_starts_after_the_small_sets_already_queued():
    cands = candidates({RNA3DB: 30}, start=2000)
    plan = assign_tiered_ranks(cands, [CUBIC], existing={}, next_rank=3, priorities=PRIORITY,
                               first_primary_rank=0, small_sets_until=LEAD_BLOCKS + 15)
    assert min(plan.ranks.values()) == LEAD_BLOCKS + 16 and plan.shift_by == 0
