"""Deterministic benchmark data for the web pages, the API, the browser tests and the load benchmark.

``build_site_data()`` creates an RNA STRAND-like static dataset (extended pairs, length and pseudoknot
subsets) and a PDB-like dataset (standard and extended references with Leontis-Westhof classes, one with a
multiplet), single-sequence and comparative methods with specs, predictions of varying quality (some failed,
one method with base-pair probabilities), scores computed by the real scoring service, and three dated
ranking snapshots per subset so rank history exists. Run it inside Django (tests, or
``manage.py shell -c "from tests.web_data import build_site_data; build_site_data()"``).
"""

from __future__ import annotations

import datetime as dt
import random
from dataclasses import dataclass

from django.db import transaction
from django.utils import timezone

from comparna.models import Dataset, RankingSnapshot, ReferenceStructure, Subset, Target
from comparna.rna.canonical import structure_to_text
from comparna.rna.structure import Structure
from comparna.services.pages.rankings import store_ranking_rows
from comparna.services.rankings import rank_subset
from comparna.services.scoring import score_prediction
from predictors.models import Method, MethodVersion, Prediction

COMPLEMENT = {"A": "U", "U": "A", "G": "C", "C": "G"}
FAMILIES = ("tRNA", "5S rRNA", "SRP RNA", "RNase P RNA", "")


@dataclass(frozen=True)
class MethodPlan:
    name: str
    input_kind: str
    keep: float  # probability of keeping each reference stem
    noise: int  # random stems added
    fail_every: int = 0  # every n-th target fails
    probabilities: bool = False
    late: bool = False  # registered only before the newest snapshot


METHODS = (
    MethodPlan("GoodFold", "single", 0.9, 1, probabilities=True),
    MethodPlan("MidFold", "single", 0.6, 2, fail_every=7),
    MethodPlan("WeakFold", "single", 0.3, 3),
    MethodPlan("AliFold(seed)", "alignment", 0.8, 1),
    MethodPlan("NewFold", "single", 0.7, 2, late=True),
)


def random_stems(
    rng: random.Random,
    n: int,
    *,
    occupied: set[int],
    count: int,
    allow_pk: bool = False,
    existing: list[tuple[int, int]] | None = None,
) -> list[tuple[int, int]]:
    """Up to ``count`` helices of 3-7 pairs on free positions, nested with each other (and ``existing``)."""
    pairs: list[tuple[int, int]] = []
    placed = list(existing or [])
    for _ in range(count * 20):
        if len(pairs) >= count * 7 or count == 0:
            break
        s = rng.randint(3, 7)
        if n < 2 * s + 5:
            continue
        i = rng.randint(1, n - 2 * s - 3)
        j = rng.randint(i + 2 * s + 3, n)
        new = [(i + k, j - k) for k in range(s)]
        if any(a in occupied or b in occupied for a, b in new):
            continue
        crossing = any(c < a < d < b or a < c < b < d for a, b in new[:1] for c, d in placed)
        if crossing and not allow_pk:
            continue
        pairs += new
        placed += new
        occupied.update(x for p in new for x in p)
        if len(pairs) >= count * 5:
            break
    return pairs


def make_reference(rng: random.Random, n: int, *, pseudoknot: bool) -> tuple[str, list[tuple[int, int]]]:
    seq = [rng.choice("ACGU") for _ in range(n)]
    occupied: set[int] = set()
    pairs = random_stems(rng, n, occupied=occupied, count=max(2, n // 25))
    if pseudoknot:
        pairs += random_stems(rng, n, occupied=occupied, count=1, allow_pk=True, existing=[])
        # make sure it really crosses: add a small crossing helix if none did
        if not Structure.from_pairs(n, pairs).is_pseudoknotted:
            free = [p for p in range(1, n + 1) if p not in occupied]
            a, b = pairs[0]
            inside = [p for p in free if a < p < b]
            outside = [p for p in free if p > b]
            if inside and outside:
                pairs.append((inside[0], outside[-1]))
    for i, j in pairs:
        if rng.random() < 0.15:
            seq[i - 1], seq[j - 1] = "G", "U"
        else:
            seq[j - 1] = COMPLEMENT[seq[i - 1]]
    return "".join(seq), sorted(pairs)


def predicted_pairs(
    rng: random.Random, n: int, ref: list[tuple[int, int]], plan: MethodPlan
) -> list[tuple[int, int]]:
    """Keep reference stems (runs of stacked pairs) with probability ``keep``; add ``noise`` random stems."""
    stems: list[list[tuple[int, int]]] = []
    for p in sorted(ref):
        if stems and stems[-1][-1][0] + 1 == p[0] and stems[-1][-1][1] - 1 == p[1]:
            stems[-1].append(p)
        else:
            stems.append([p])
    kept = [p for stem in stems if rng.random() < plan.keep for p in stem]
    used = {x for p in kept for x in p}
    kept_nested = [p for p in kept if not any(c < p[0] < d < p[1] or p[0] < c < p[1] < d for c, d in kept)]
    used = {x for p in kept_nested for x in p}
    noise = random_stems(rng, n, occupied=used, count=plan.noise, existing=kept_nested)
    return sorted(kept_nested + noise)


def _version(method: Method, plan: MethodPlan) -> MethodVersion:
    spec = {
        "name": plan.name,
        "program": plan.name.lower(),
        "version": "1.0",
        "argv": [plan.name.lower().replace("(seed)", ""), "--input", "{input}", "--out", "{output}"],
        "input_kind": plan.input_kind,
        "max_length": 400,
        "time_limit_s": 60.0,
        "memory_limit_mb": 2048,
        "produces_probabilities": plan.probabilities,
    }
    version, _ = MethodVersion.objects.get_or_create(
        method=method,
        fingerprint=f"web-{plan.name}",
        defaults={"version": "1.0", "program": plan.name.lower(), "spec": spec, "is_current": True,
                  "approved_at": timezone.now()},
    )
    return version


def _predict(rng: random.Random, version: MethodVersion, target: Target, ref_pairs, plan: MethodPlan, k: int):
    if plan.fail_every and k % plan.fail_every == plan.fail_every - 1:
        status = Prediction.Status.TIMEOUT if k % 2 else Prediction.Status.FAILED
        return Prediction.objects.create(
            method_version=version,
            target=target,
            status=status,
            runtime_s=60.0 if k % 2 else 0.4,
            error="time limit 60 s exceeded" if k % 2 else "exit code 1: segmentation fault",
            finished_at=timezone.now(),
        )
    pairs = predicted_pairs(rng, target.length, ref_pairs, plan)
    probabilities = None
    if plan.probabilities:
        probabilities = [[i, j, round(rng.uniform(0.55, 0.99), 3)] for i, j in pairs]
        extra = [p for p in ref_pairs if p not in set(pairs)]
        probabilities += [[i, j, round(rng.uniform(0.05, 0.5), 3)] for i, j in extra]
        for _ in range(target.length // 4):
            i = rng.randint(1, target.length - 4)
            j = rng.randint(i + 4, target.length)
            if (i, j) not in set(pairs) and (i, j) not in set(ref_pairs):
                probabilities.append([i, j, round(rng.uniform(0.01, 0.3), 3)])
        seen: dict[tuple[int, int], list] = {}
        for item in probabilities:
            seen.setdefault((item[0], item[1]), item)
        probabilities = list(seen.values())
    prediction = Prediction.objects.create(
        method_version=version,
        target=target,
        status=Prediction.Status.OK,
        pairs=structure_to_text(Structure.from_pairs(target.length, pairs)),
        probabilities=probabilities,
        runtime_s=round(rng.uniform(0.05, 3.0), 2),
        finished_at=timezone.now(),
    )
    score_prediction(prediction=prediction)
    return prediction


def _subset(dataset: Dataset, slug: str, name: str, order: int, description: str = "") -> Subset:
    subset, _ = Subset.objects.get_or_create(
        dataset=dataset, slug=slug, defaults={"name": name, "order": order, "description": description}
    )
    return subset


@transaction.atomic
def build_site_data(
    *, n_strand: int = 24, n_pdb: int = 14, seed: int = 5, ranking_seed: int = 11, max_length: int = 320
) -> dict:
    """Create both datasets, methods, scored predictions and three dated snapshots per subset × definition."""
    rng = random.Random(seed)
    strand = Dataset.objects.create(
        slug="rnastrand",
        name="RNA STRAND",
        kind=Dataset.Kind.STATIC,
        definitions=["extended"],
        description="Static benchmark from RNA STRAND v2.0.",
    )
    pdb = Dataset.objects.create(
        slug="pdb",
        name="PDB (weekly)",
        kind=Dataset.Kind.PDB,
        definitions=["standard", "extended"],
        description="New RNA chains from the PDB.",
    )
    s_all = _subset(strand, "all", "All RNAs", 0, "Every non-redundant entry.")
    s_short = _subset(strand, "short", "20–200 nt", 1)
    s_medium = _subset(strand, "medium", "201–800 nt", 2)
    s_pk = _subset(strand, "pseudoknotted", "Pseudoknotted", 3)
    p_all = _subset(pdb, "all", "All RNAs", 0)
    p_pk = _subset(pdb, "pseudoknotted", "Pseudoknotted", 1)

    methods = {}
    for plan in METHODS:
        method = Method.objects.create(
            name=plan.name,
            input_kind=plan.input_kind,
            description=f"{plan.name}: a test predictor.",
            citation=f"Doe J. et al. {plan.name}. Journal of Tests 1:1 (2024).",
            url="https://example.org/" + plan.name,
        )
        methods[plan.name] = (plan, _version(method, plan))

    targets: list[tuple[Target, list[tuple[int, int]]]] = []
    for k in range(n_strand):
        n = rng.randint(40, max_length)
        pk = k % 5 == 0
        seq, pairs = make_reference(rng, n, pseudoknot=pk)
        t = Target.objects.create(
            dataset=strand,
            source_id=f"ASE_{k + 1:05d}",
            sequence=seq,
            length=n,
            source_database="RNase P database" if k % 3 == 0 else "CRW",
            rna_class=FAMILIES[k % len(FAMILIES)],
            organism="Escherichia coli",
        )
        s = Structure.from_pairs(n, pairs)
        ReferenceStructure.objects.create(
            target=t,
            definition="extended",
            pairs=structure_to_text(s),
            n_pairs=len(s.pairs),
            pseudoknotted=s.is_pseudoknotted,
            has_multiplets=s.has_multiplets,
        )
        t.subsets.add(s_all, s_short if n <= 200 else s_medium)
        if s.is_pseudoknotted:
            t.subsets.add(s_pk)
        targets.append((t, pairs))
    for k in range(n_pdb):
        n = rng.randint(40, 160)
        seq, pairs = make_reference(rng, n, pseudoknot=k % 4 == 0)
        standard = [
            (i, j) for i, j in pairs if {seq[i - 1], seq[j - 1]} in ({"A", "U"}, {"G", "C"}, {"G", "U"})
        ]
        occupied = {x for p in pairs for x in p}
        free = [p for p in range(1, n + 1) if p not in occupied]
        extra = []
        while len(free) >= 2 and len(extra) < 3:
            a, b = sorted(rng.sample(free, 2))
            if b - a > 3:
                extra.append((a, b))
                free = [p for p in free if p not in (a, b)]
        if k == 1 and pairs:  # a base triple: one base with two partners (a multiplet, extended only)
            i, j = pairs[0]
            third = next(p for p in range(1, n + 1) if p not in (i, j))
            extra.append(tuple(sorted((i, third))))
        extended = sorted(set(pairs) | set(extra))
        pdb_id = f"{9 - k % 9}X{k:02d}"[:4].upper()
        t = Target.objects.create(
            dataset=pdb,
            source_id=f"{pdb_id}_A",
            sequence=seq,
            length=n,
            source_database="PDB",
            rna_class=FAMILIES[(k + 1) % len(FAMILIES)],
            pdb_id=pdb_id,
            chain_id="A",
            release_date=dt.date(2025, 1, 1) + dt.timedelta(days=7 * k),
        )
        classes = [
            [i, j, "cWW" if (i, j) in set(standard) else rng.choice(["tSH", "cWH", "tWS"])]
            for i, j in extended
        ]
        for definition, ps in (("standard", standard), ("extended", extended)):
            s = Structure.from_pairs(n, ps)
            ReferenceStructure.objects.create(
                target=t,
                definition=definition,
                pairs=structure_to_text(s),
                n_pairs=len(s.pairs),
                pseudoknotted=s.is_pseudoknotted,
                has_multiplets=s.has_multiplets,
                classes=[c for c in classes if (c[0], c[1]) in set(ps)],
            )
        t.subsets.add(p_all)
        if Structure.from_pairs(n, extended).is_pseudoknotted:
            t.subsets.add(p_pk)
        targets.append((t, [p for p in pairs]))

    # Three rounds of predictions and snapshots, dated two weeks, one week and zero days ago.
    now = timezone.now()
    subsets = [s_all, s_short, s_medium, s_pk, p_all, p_pk]
    rounds = [(0.6, False, 14), (1.0, False, 7), (1.0, True, 0)]
    done: set[tuple[str, int]] = set()
    for fraction, late, days_ago in rounds:
        for name, (plan, version) in methods.items():
            if plan.late and not late:
                continue
            for k, (target, ref_pairs) in enumerate(targets):
                if (name, target.pk) in done or k >= int(len(targets) * fraction) + (
                    0 if fraction == 1.0 else 0
                ):
                    continue
                _predict(rng, version, target, ref_pairs, plan, k)
                done.add((name, target.pk))
        for subset in subsets:
            for definition in subset.definitions():
                snap, new = rank_subset(subset=subset, definition=definition, seed=ranking_seed)
                if new and days_ago:
                    RankingSnapshot.objects.filter(pk=snap.pk).update(
                        computed_at=now - dt.timedelta(days=days_ago)
                    )
    Target.objects.filter(dataset=strand).update(created_at=now - dt.timedelta(days=30))
    store_ranking_rows()  # as the rankings task does right after the rankings (pages never compute them)
    return {"datasets": [strand, pdb], "methods": {n: m[1].method for n, m in methods.items()}}


PROVISIONAL_SLUG = "growing"


@transaction.atomic
def build_provisional_dataset(*, n_targets: int = 40, n_done: int = 30, seed: int = 9) -> dict:
    """A dataset still filling in (needs :func:`build_site_data` first): GoodFold, MidFold and WeakFold have
    scored predictions on the first ``n_done`` targets, finished over the last ten minutes, and queued ones
    on the rest; NewFold has every prediction queued; AliFold(seed) has none. One ranking snapshot.

    30 done targets (12 before issue 27): with the target-level verdicts, 12 targets could rank nobody (the
    smallest exact p of 12 signs, Holm-adjusted over 3 pairs, is above 0.001, and 12 targets cannot
    detect a 0.05 MCC difference), so the three methods would all be listed as not ranked.

    Returns the snapshot's pk, the number of finished and unfinished predictions and when the first one
    started (what the ETA is measured from).
    """
    rng = random.Random(seed)
    dataset = Dataset.objects.create(
        slug=PROVISIONAL_SLUG,
        name="Growing set",
        kind=Dataset.Kind.STATIC,
        definitions=["extended"],
        description="A dataset whose predictions are still running.",
    )
    subset = _subset(dataset, "all", "All RNAs", 0)
    plans = {plan.name: plan for plan in METHODS}
    versions = {
        name: MethodVersion.objects.get(method__name=name, is_current=True)
        for name in ("GoodFold", "MidFold", "WeakFold", "NewFold")
    }
    now = timezone.now()
    first_start = None
    finished = pending = 0
    for k in range(n_targets):
        n = rng.randint(40, 160)
        seq, pairs = make_reference(rng, n, pseudoknot=False)
        t = Target.objects.create(dataset=dataset, source_id=f"GRW_{k + 1:03d}", sequence=seq, length=n)
        s = Structure.from_pairs(n, pairs)
        ReferenceStructure.objects.create(
            target=t,
            definition="extended",
            pairs=structure_to_text(s),
            n_pairs=len(s.pairs),
            pseudoknotted=s.is_pseudoknotted,
            has_multiplets=s.has_multiplets,
        )
        t.subsets.add(subset)
        for name, version in versions.items():
            if k >= n_done or name == "NewFold":
                Prediction.objects.create(method_version=version, target=t, status=Prediction.Status.QUEUED)
                pending += 1
                continue
            plan = plans[name]
            prediction = Prediction.objects.create(
                method_version=version,
                target=t,
                status=Prediction.Status.OK,
                pairs=structure_to_text(Structure.from_pairs(n, predicted_pairs(rng, n, pairs, plan))),
                started_at=now - dt.timedelta(minutes=10 - k * 9 / n_done, seconds=2),
                finished_at=now - dt.timedelta(minutes=10 - k * 9 / n_done),
                runtime_s=2.0,
            )
            first_start = min(first_start or prediction.started_at, prediction.started_at)
            score_prediction(prediction=prediction)
            finished += 1
    snap, _ = rank_subset(subset=subset, definition="extended", seed=11)
    store_ranking_rows()  # as the rankings task does right after the rankings
    return {"snapshot": snap.pk, "finished": finished, "pending": pending, "first_start": first_start}


def remove_provisional_dataset() -> None:
    """Delete what :func:`build_provisional_dataset` made (targets, predictions, scores, snapshots)."""
    Target.objects.filter(dataset__slug=PROVISIONAL_SLUG).delete()
    Dataset.objects.filter(slug=PROVISIONAL_SLUG).delete()


try:  # a module-scoped pytest fixture for the page and API tests; import it into a test module to use it
    import pytest
except ImportError:  # pragma: no cover - outside the test environment
    pytest = None

if pytest is not None:

    @pytest.fixture(scope="module", name="site")
    def site_fixture(django_db_setup, django_db_blocker):
        """The site data, built once per test module and rolled back after it; the page cache is cleared."""
        from django.core.cache import cache

        with django_db_blocker.unblock():
            cache.clear()
            with transaction.atomic():
                data = build_site_data()
                yield data
                transaction.set_rollback(True)
            cache.clear()
