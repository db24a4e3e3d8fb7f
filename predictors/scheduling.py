"""Which queued prediction runs next: an order that gives every ranking common targets early.

A ranking compares methods on the targets they have all scored (its common targets), so what matters is
how soon *every* method has a result on the same targets, across all lengths. Sending predictions in
creation order (method by method) gives the first method hundreds of targets before the last one has any;
sending them shortest target first leaves the long-RNA rankings empty for hours. This module decides the
order instead; it is pure (no Django), so the order can be tested on its own.

- **Targets in length strata.** The targets of one queueing (per dataset, in dataset order: the first
  imported benchmark fills first) are sorted by length and cut into :data:`STRATA` strata of equal count.
  The strata take turns by *estimated compute*, not by count (weighted fair queueing): each stratum has a
  clock of the compute it was given (:func:`target_cost`: the methods that can run a target at their
  declared complexity, plus a fixed cost per job), and the stratum whose next target would finish earliest
  on its share goes next. So every length range has results early, many short targets run in the time of
  one long one, and a long target waits until the short strata have had as much compute as it costs.
  Strata that every method can run (no target over any method's length limit) weigh
  :data:`COMMON_WEIGHT` times more: only they can become common targets of every method.
- **Common targets first.** Before that order starts, the first :data:`COMMON_FIRST` targets of a queueing
  are taken from those every method can run (no method's length limit below them), in the same stratified
  order among themselves: a pairwise ranking needs targets both methods have scored, so the all-RNAs ranking
  compares every method on a few hundred targets of every length they share within minutes of a queueing,
  instead of after the long strata (which some methods cannot run at all, and which cost most) have had
  their share. Measured on ``make run``: with the long strata taking turns from the start, 90 % of the first
  ten minutes' compute went to targets that could not (yet) be common.
- **Blocks, every method in each.** Consecutive targets of that order form blocks of
  :data:`BLOCK_TARGETS`; a block's number is the *rank* stored on each of its predictions. Jobs are sent
  by rank, then method, so within a block every method has its turn (a cheap method is never starved behind
  a slow one for longer than one block, and one method's jobs in a block are consecutive: a batch).
- **Late methods catch up first.** A target keeps the rank it got when it was first queued. A method
  registered later (or a comparative method whose inputs arrived later) gets, on each target, the rank the
  other methods had there, so its first jobs are the targets the others have already scored, oldest first.
- **Small test sets after the first rankings.** A dataset may declare a priority (the PDB-derived sets,
  issue 38): priority 1 (the small PDB test sets) runs alone after the first :data:`LEAD_BLOCKS` blocks of
  the priority-0 datasets, so it is complete soon after their first rankings without delaying them;
  priority 2 (the larger sets) then takes turns with the rest (:func:`assign_tiered_ranks`).
- **Datasets take turns.** New targets are ranked from the *front* of the queue (the lowest rank not yet
  sent), each dataset's order from the same rank on: block k of every dataset shares one rank, so a dataset
  imported (or a weekly PDB batch polled) while another's backlog of hours is queued gets its first common
  targets as soon as that one does, instead of after it. Measured on ``make run`` before this: 35 minutes in,
  RNA STRAND had ~20 000 finished predictions and ArchiveII, imported a minute later, none.

The services (:mod:`predictors.services`) store the ranks and send the jobs in this order through a bounded
window (at most ``PREDICTION_DISPATCH_WINDOW`` messages in the broker), topped up as workers drain it; a
broker never holds the whole backlog, so the order holds with any broker (Kombu's filesystem transport and
Redis both deliver a queue in send order) and a late method is not stuck behind it.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

#: Length strata of one queueing's targets (equal counts).
STRATA = 8
#: How much more compute a stratum every method can run gets than one some method cannot run.
COMMON_WEIGHT = 3.0
#: Targets per block (one rank): every method's jobs on a block are sent together.
BLOCK_TARGETS = 8
#: Targets of a queueing taken first from those every method can run (32 blocks).
COMMON_FIRST = 256
#: One job's fixed cost (its share of a batch's launch, parsing, storing) in units of the compute of a
#: sequence of this length: a job of length L costs ``1 + (L / JOB_OVERHEAD_NT) ** exponent``. A rough
#: model (a cubic method on a 1000-nt target costs ~16 short ones, on a 2000-nt one ~126); it only has to rank
#: targets, not predict runtimes.
JOB_OVERHEAD_NT = 400
#: Exponent of a spec's declared complexity (``PredictorSpec.complexity``), cubic when not declared.
EXPONENTS = {"n": 1, "n2": 2, "n3": 3, "n4": 4, "n6": 6}


@dataclass(frozen=True)
class MethodCost:
    """What the order needs to know of a method version: its length limit and its time complexity."""

    max_length: int
    exponent: int = 3

    @classmethod
    def from_spec(cls, spec: Mapping) -> MethodCost:
        """From a stored spec (``MethodVersion.spec``): ``max_length`` and ``complexity`` when declared."""
        return cls(
            max_length=int(spec.get("max_length") or 1000),
            exponent=EXPONENTS.get(str(spec.get("complexity") or "n3"), 3),
        )


@dataclass(frozen=True)
class Candidate:
    """A target to be ranked: its id, its group (dataset; lower groups go first) and its length."""

    target_id: int
    group: int
    length: int


def job_cost(length: int, method: MethodCost) -> float:
    """Estimated cost of one job, in units of one job's fixed cost; 0 when the target is too long (the
    prediction is recorded at queue time and never runs)."""
    if length > method.max_length:
        return 0.0
    return 1.0 + (length / JOB_OVERHEAD_NT) ** method.exponent


def target_cost(length: int, methods: Sequence[MethodCost]) -> float:
    """Estimated cost of running every method that can run a target of this length."""
    return sum(job_cost(length, m) for m in methods)


def stratified_order(
    lengths: Mapping[int, int],
    methods: Sequence[MethodCost],
    *,
    strata: int = STRATA,
    common_weight: float = COMMON_WEIGHT,
    common_first: int = COMMON_FIRST,
) -> list[int]:
    """The targets (``{target_id: length}``) in the order they are run: first up to ``common_first`` of
    those every method can run, then the rest; each part in length strata taking turns by estimated
    compute (weighted fair queueing), shortest first within a stratum. Deterministic."""
    limit = min((m.max_length for m in methods), default=math.inf)
    if common_first > 0:
        common = {t: n for t, n in lengths.items() if n <= limit}
        head = _fair_order(common, methods, strata, common_weight, limit)[:common_first]
        taken = set(head)
        rest = {t: n for t, n in lengths.items() if t not in taken}
        return head + _fair_order(rest, methods, strata, common_weight, limit)
    return _fair_order(lengths, methods, strata, common_weight, limit)


def _fair_order(
    lengths: Mapping[int, int], methods: Sequence[MethodCost], strata: int, common_weight: float, limit: float
) -> list[int]:
    """Length strata taking turns by estimated compute (the order :func:`stratified_order` describes)."""
    ordered = sorted(lengths, key=lambda t: (lengths[t], t))
    if not ordered:
        return []
    k = max(1, min(strata, len(ordered)))
    bounds = [round(i * len(ordered) / k) for i in range(k + 1)]
    groups = [ordered[bounds[i] : bounds[i + 1]] for i in range(k)]
    weights = [common_weight if lengths[g[-1]] <= limit else 1.0 for g in groups]

    def finish(clock: float, i: int, pos: int) -> tuple[float, int, int]:
        # when this stratum's next target would be done on its share: the earliest goes next
        return (clock + target_cost(lengths[groups[i][pos]], methods) / weights[i], i, pos)

    heap = [finish(0.0, i, 0) for i in range(k)]
    out = []
    while heap:
        done, i, pos = heapq.heappop(heap)
        out.append(groups[i][pos])
        if pos + 1 < len(groups[i]):
            heapq.heappush(heap, finish(done, i, pos + 1))
    return out


def assign_ranks(
    candidates: Iterable[Candidate],
    methods: Sequence[MethodCost],
    *,
    existing: Mapping[int, int],
    next_rank: int,
    block: int = BLOCK_TARGETS,
) -> dict[int, int]:
    """The rank (block number) of every candidate target.

    A target in ``existing`` (``{target_id: rank}`` of its earlier predictions) keeps its rank, so a late
    method's jobs sit where the other methods' jobs on it were. The others are ordered per group (dataset)
    by :func:`stratified_order` and numbered in blocks of ``block`` from ``next_rank`` on, every group from
    the same ``next_rank``: block k of each group shares rank ``next_rank + k`` (the groups take turns).
    """
    ranks: dict[int, int] = {}
    fresh: dict[int, dict[int, int]] = {}
    for c in candidates:
        if c.target_id in existing:
            ranks[c.target_id] = existing[c.target_id]
        else:
            fresh.setdefault(c.group, {})[c.target_id] = c.length
    for group in sorted(fresh):
        order = stratified_order(fresh[group], methods)
        for n, target in enumerate(order):
            ranks[target] = next_rank + n // block
    return ranks


#: Blocks of the priority-0 datasets (RNA STRAND, ArchiveII, the weekly PDB set) run before a priority-1
#: dataset (a small PDB-derived test set) starts: their first rankings need about 100 common targets each
#: (13 blocks; measured at 18-19 min of ``make run``), so the small sets wait until then, not longer.
LEAD_BLOCKS = 16


@dataclass(frozen=True)
class TierPlan:
    """Ranks of a queueing with dataset priorities (:func:`assign_tiered_ranks`).

    ``ranks`` as :func:`assign_ranks`'; the queued, not yet sent jobs of priority-0 datasets at or after
    rank ``shift_from`` move ``shift_by`` ranks back, so that the priority-1 sets run alone in between.
    """

    ranks: dict[int, int]
    shift_from: int | None = None
    shift_by: int = 0


def assign_tiered_ranks(
    candidates: Iterable[Candidate],
    methods: Sequence[MethodCost],
    *,
    existing: Mapping[int, int],
    next_rank: int,
    priorities: Mapping[int, int],
    first_primary_rank: int | None = None,
    small_sets_until: int | None = None,
    block: int = BLOCK_TARGETS,
    lead: int = LEAD_BLOCKS,
) -> TierPlan:
    """The ranks of every candidate when datasets (groups) have priorities (``{group: 0, 1 or 2}``,
    missing: 0): the first benchmarks first, then the small test sets complete, then the rest.

    * priority 0 groups are ranked as :func:`assign_ranks` ranks them (datasets take turns);
    * priority 1 groups start ``lead`` blocks after the first rank of the priority-0 datasets (the
      smallest of ``first_primary_rank``, the rank of their earliest queued job, and this queueing's own
      first priority-0 rank), or at ``next_rank`` if later, and run **alone** there: every priority-0 job
      from that rank on (queued now or before) moves back by their length in blocks;
    * priority 2 groups start after the priority-1 groups (those of this queueing, and the last rank
      ``small_sets_until`` held by priority-1 jobs queued before) and take turns with the priority-0 rest.

    Targets already queued keep their rank, as in :func:`assign_ranks`. Deterministic.
    """
    candidates = list(candidates)
    level = {c.target_id: int(priorities.get(c.group, 0)) for c in candidates}
    ranks = assign_ranks(
        [c for c in candidates if level[c.target_id] == 0], methods, existing=existing, next_rank=next_rank,
        block=block,
    )
    tiered: dict[int, dict[int, dict[int, int]]] = {}
    for c in candidates:
        if level[c.target_id] == 0:
            continue
        if c.target_id in existing:
            ranks[c.target_id] = existing[c.target_id]
        else:
            tiered.setdefault(min(level[c.target_id], 2), {}).setdefault(c.group, {})[c.target_id] = c.length
    if not tiered:
        return TierPlan(ranks)
    fresh_primary = [ranks[c.target_id] for c in candidates
                     if level[c.target_id] == 0 and c.target_id not in existing]
    firsts = [r for r in (first_primary_rank, min(fresh_primary, default=None)) if r is not None]
    start = max(next_rank, min(firsts) + lead) if firsts else next_rank
    orders = {tier: {g: stratified_order(t, methods) for g, t in sorted(groups.items())}
              for tier, groups in tiered.items()}
    alone = max((math.ceil(len(o) / block) for o in orders.get(1, {}).values()), default=0)
    for tier, groups in sorted(orders.items()):
        first = start if tier == 1 else max(start + alone, (small_sets_until or -1) + 1)
        for order in groups.values():
            for n, target in enumerate(order):
                ranks[target] = first + n // block
    if alone:
        for c in candidates:
            if level[c.target_id] == 0 and c.target_id not in existing and ranks[c.target_id] >= start:
                ranks[c.target_id] += alone
    return TierPlan(ranks, start if alone else None, alone)


def dispatch_key(*, rank: int, method_version_id: int, prediction_id: int) -> tuple[int, int, int]:
    """The order jobs are sent in: by rank, then method (a method's jobs of a block together), then age.
    ``predictors.services`` sorts the stored queue the same way (``DISPATCH_ORDER``)."""
    return (rank, method_version_id, prediction_id)


#: :func:`dispatch_key` as model fields of ``Prediction``.
DISPATCH_ORDER = ("schedule_rank", "method_version_id", "pk")


# ------------------------------------------------------------------------------------------------ lanes
@dataclass(frozen=True)
class Lane:
    """A share of the workers: its own broker queue and its own part of the dispatch window.

    Workers take the queues they consume in turn (Kombu's fair cycle over a worker's queues, for the
    filesystem and Redis transports alike), so a lane with work waiting gets a launch at least every
    ``len(lanes)``-th time a worker takes a message, however long another lane's backlog is. A lane's part of
    the window (``window_share`` of ``PREDICTION_DISPATCH_WINDOW``) bounds its messages in the broker, and is
    counted apart: one lane's full window never stops another's from being topped up.
    """

    name: str
    queue: str
    window_share: float
    why: str


#: The lanes of the prediction queue (issue 37): public methods' predictions, and development methods' (an
#: owner's private method, or an owner's new version awaiting approval) with their own share, so that a
#: method author sees a first ranking within minutes of registering, whatever the public backlog. Test runs
#: have their own queue too (``testrun``, and a worker reserved for it in ``scripts/run.sh``). Another lane
#: (an advisor's queue, say) is one more row here and one more queue for the workers.
LANES: tuple[Lane, ...] = (
    Lane("public", "predict", 1.0, "public methods: the benchmark's backlog"),
    Lane("development", "develop", 0.25, "development methods and versions awaiting approval"),
)


def lane_named(name: str) -> Lane:
    """The lane of :data:`LANES` called ``name``."""
    return next(lane for lane in LANES if lane.name == name)


def lane_window(lane: Lane, window: int) -> int:
    """The most messages ``lane`` may have sent and not yet started, of a dispatch window of ``window``."""
    return max(1, int(round(window * lane.window_share)))
