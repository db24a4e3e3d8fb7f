"""The data of tests/e2e/test_browser_issue37_story.py (issue 37, items 2-7): two datasets still filling in
with planned finished and queued predictions (every ETA known in advance), a development method of an
approved owner, families for some targets, a provisional dataset snapshot and three real RNA STRAND entries
through the real import; built and removed inside the live site's ``manage.py shell``."""

from __future__ import annotations

import datetime as dt

OWNER, PASSWORD = "storyowner", "a long story passphrase 37"
DEV = "StoryDev"
MOLECULES = "strand-molecules"
#: The story datasets: slug -> (name, targets).
DATASETS = {"story-a": ("Story A", 50), "story-b": ("Story B", 30)}
#: Story A's subset "part": its first PART targets.
PART = 40
#: The measuring time of every rate (minutes): the first prediction finished in the window started then.
SPAN = 10.0
#: (dataset, public method) -> (finished in the last SPAN minutes, queued): on the dataset's first targets,
#: in that order. The queued ones are in the workers' order after everything else queued on the site: each
#: method's k-th queued prediction at rank RANK0 + k // 4 on Story A, RANK0 + 10 + k // 4 on Story B (so Story
#: B is reached last, and Story A's subset "part" before Story A's last prediction).
PLAN = {
    ("story-a", "GoodFold"): (40, 9),  # 2.25 min
    ("story-a", "MidFold"): (32, 10),  # 3.1 min
    ("story-a", "NewFold"): (32, 7),  # 2.2 min
    ("story-a", "WeakFold"): (20, 30),  # 15 min: Story A's slowest
    ("story-b", "GoodFold"): (25, 5),  # 2 min
    ("story-b", "MidFold"): (10, 20),  # 20 min: Story B's and the site's slowest
    ("story-b", "NewFold"): (20, 10),  # 5 min
    ("story-b", "WeakFold"): (30, 0),  # done
}
#: The development method: dataset -> (scored an hour ago, finished in the window, queued), in that order.
#: Its own ETA: max(28 × 10 / 2, 29 × 10 / 1) = 290 min at (2 + 1) / 10 = 0.3 predictions a minute.
DEV_PLAN = {"story-a": (20, 2, 28), "story-b": (0, 1, 29)}
#: The first schedule rank of the story's queued predictions.
RANK0 = 100_000
#: The story's scopes whose ETA sentence the pages must show.
SCOPES = ("story-a/all", "story-a/part", "story-b/all")
#: (keep, noise) of each method's predictions (tests.web_data.predicted_pairs); NewFold: see TIE_BETTER.
QUALITY = {"GoodFold": (0.95, 0), "MidFold": (0.6, 2), "WeakFold": (0.2, 3), DEV: (0.3, 3)}
#: NewFold gives MidFold's structure, except on these targets, where it gives the reference.
TIE_BETTER = (3, 11, 17)
#: Story A's targets with an Rfam family assignment (cmscan done, nothing found).
FAMILIES_DONE = 7
#: Real RNA STRAND entries: one molecule, and two of several molecules written as one sequence.
STRAND_ENTRIES = ("PDB_00004", "PDB_00036", "PDB_00447")


# --- inside Django (manage.py shell) ---------------------------------------------------------------------


def _marks() -> dict:
    """The newest row of each background table before the story: what :func:`remove_story` keeps."""
    from comparna.tallies.models import MethodStanding, RankingFreshness, RankingRows, RankingStatus, TallyRun

    def top(model) -> int:
        return model.objects.order_by("-pk").values_list("pk", flat=True).first() or 0

    models = (MethodStanding, RankingFreshness, RankingRows, RankingStatus, TallyRun)
    return {model.__name__: top(model) for model in models}


def remove_story(marks: dict) -> None:
    """Delete everything :func:`build_story` made, and the background rows stored since ``marks``."""
    from django.contrib.auth import get_user_model

    from comparna.models import Dataset, ImportRun, Target
    from comparna.services.pages.common import bump_data_version
    from comparna.snapshots.models import DatasetSnapshot
    from comparna.tallies import models as tally_models
    from predictors.models import Method, MethodVersion, Prediction

    Prediction.objects.filter(method_version__method__name=DEV).delete()
    DatasetSnapshot.objects.filter(dataset__slug__in=[*DATASETS, MOLECULES]).delete()
    Target.objects.filter(dataset__slug__in=[*DATASETS, MOLECULES]).delete()
    Dataset.objects.filter(slug__in=[*DATASETS, MOLECULES]).delete()
    ImportRun.objects.filter(kind=MOLECULES).delete()
    MethodVersion.objects.filter(method__name=DEV).delete()
    Method.objects.filter(name=DEV).delete()
    get_user_model().objects.filter(username=OWNER).delete()
    for name, pk in marks.items():
        getattr(tally_models, name).objects.filter(pk__gt=pk).delete()
    bump_data_version()


def _import_strand_entries() -> None:
    """The three RNA STRAND entries, read from the shipped archive, through the real import under a copy of
    the RNA STRAND declaration named MOLECULES (the shared "rnastrand" dataset is left alone)."""
    import dataclasses
    import io
    import tarfile
    import tempfile
    from pathlib import Path

    from ingest.datasets import catalogue
    from ingest.services.datasets import import_dataset

    folder = Path(tempfile.mkdtemp(prefix="story-strand-"))
    archive = folder / "entries.tar.gz"
    with tarfile.open(Path(catalogue.__file__).parents[2] / "data" / catalogue.RNASTRAND.source) as src:
        with tarfile.open(archive, "w:gz") as out:
            for member in src:
                if member.isfile() and Path(member.name).stem in STRAND_ENTRIES:
                    data = src.extractfile(member).read()
                    info = tarfile.TarInfo(Path(member.name).name)
                    info.size = len(data)
                    out.addfile(info, io.BytesIO(data))
    catalogue.DECLARATIONS[MOLECULES] = dataclasses.replace(
        catalogue.RNASTRAND, name=MOLECULES, title="RNA STRAND entries (issue 37)", short_title="Entries"
    )
    run = import_dataset(name=MOLECULES, path=archive)
    assert run.status == "done", run.error


def build_story() -> dict:
    """Build the story (the module docstring) and return what the tests compare the pages with."""
    marks = _marks()
    try:
        return _build(marks)
    except BaseException:
        remove_story(marks)
        raise


def _build(marks: dict) -> dict:
    import random

    from django.contrib.auth import get_user_model
    from django.db.models import Avg, Count
    from django.utils import timezone

    from comparna.models import Dataset, ReferenceStructure, Score, Subset, Target
    from comparna.owners.eta import queue_eta
    from comparna.owners.models import OwnerProfile
    from comparna.rna.canonical import structure_to_text
    from comparna.rna.structure import Structure
    from comparna.services import progress, tallies
    from comparna.services.pages.common import bump_data_version
    from comparna.services.pages.methods import store_method_standings
    from comparna.services.pages.ranking_status import store_ranking_status
    from comparna.services.pages.rankings import store_ranking_rows
    from comparna.services.rankings import rank_subset
    from comparna.services.scoring import score_prediction
    from comparna.snapshots.lifecycle import make_snapshot_if_changed
    from ingest.models import FamilyAssignment
    from predictors.core.spec import PredictorSpec
    from predictors.models import Method, MethodVersion, Prediction
    from predictors.services import spec_to_json
    from tests.web_data import MethodPlan, make_reference, predicted_pairs

    _import_strand_entries()
    rng = random.Random(37)
    now = timezone.now()
    user = get_user_model().objects.create_user(OWNER, f"{OWNER}@lab.example", PASSWORD)
    OwnerProfile.objects.create(user=user, email_confirmed_at=now, approved_at=now)
    spec = PredictorSpec(name=DEV, program=DEV.lower(), version="0.1", argv=("/bin/echo", "{sequence}"))
    dev_method = Method.objects.create(name=DEV, owner=user, visibility=Method.Visibility.DEVELOPMENT,
                                       from_catalogue=False, description="An owner's method in development.")
    dev = MethodVersion.objects.create(method=dev_method, fingerprint=spec.fingerprint(), version="0.1",
                                       program=spec.program, spec=spec_to_json(spec), is_current=True)
    names = ("GoodFold", "MidFold", "NewFold", "WeakFold")
    current = MethodVersion.objects.filter(is_current=True, method__name__in=names).select_related("method")
    versions = {v.method.name: v for v in current}
    versions[DEV] = dev
    plans = {name: MethodPlan(name, "single", keep, noise) for name, (keep, noise) in QUALITY.items()}

    targets: dict[str, list[tuple[Target, list]]] = {}
    subsets = {}
    for slug, (name, n_targets) in DATASETS.items():
        dataset = Dataset.objects.create(
            slug=slug, name=name, kind=Dataset.Kind.STATIC, definitions=["extended"],
            description="A dataset whose predictions are still running (issue 37).",
        )
        subsets[(slug, "all")] = Subset.objects.create(dataset=dataset, slug="all", name="All RNAs", order=0)
        if slug == "story-a":
            subsets[(slug, "part")] = Subset.objects.create(dataset=dataset, slug="part", name="First forty",
                                                            order=1)
        targets[slug] = []
        for k in range(n_targets):
            n = rng.randint(50, 150)
            seq, pairs = make_reference(rng, n, pseudoknot=False)
            t = Target.objects.create(dataset=dataset, source_id=f"{slug.upper()}_{k + 1:03d}", sequence=seq,
                                      length=n)
            s = Structure.from_pairs(n, pairs)
            ReferenceStructure.objects.create(target=t, definition="extended", pairs=structure_to_text(s),
                                              n_pairs=len(s.pairs), pseudoknotted=False, has_multiplets=False)
            t.subsets.add(subsets[(slug, "all")])
            if slug == "story-a" and k < PART:
                t.subsets.add(subsets[(slug, "part")])
            targets[slug].append((t, pairs))

    # what each method predicts on each target (NewFold: MidFold's structure, the reference on TIE_BETTER)
    predicted = {}
    for items in targets.values():
        for k, (t, ref) in enumerate(items):
            for name in ("GoodFold", "MidFold", "WeakFold", DEV):
                predicted[(name, t.pk)] = predicted_pairs(rng, t.length, ref, plans[name])
            predicted[("NewFold", t.pk)] = ref if k in TIE_BETTER else predicted[("MidFold", t.pk)]

    in_window, old, queued = [], [], []
    for (slug, name), (done, waiting) in PLAN.items():
        items = [t for t, _ in targets[slug]]
        in_window += [(name, t) for t in items[:done]]
        first_rank = RANK0 + (10 if slug == "story-b" else 0)
        queued += [(name, t, first_rank + k // 4) for k, t in enumerate(items[done:done + waiting])]
    for slug, (scored, done, waiting) in DEV_PLAN.items():
        items = [t for t, _ in targets[slug]]
        old += [(DEV, t) for t in items[:scored]]
        # first in the window: its own first run started SPAN minutes before the count (its own rate's start)
        in_window = [(DEV, t) for t in items[scored:scored + done]] + in_window
        queued += [(DEV, t, RANK0) for t in items[scored + done:scored + done + waiting]]

    def scored(name: str, target: Target, finished: dt.datetime) -> None:
        p = Prediction.objects.create(
            method_version=versions[name], target=target, status=Prediction.Status.OK, runtime_s=2.0,
            pairs=structure_to_text(Structure.from_pairs(target.length, predicted[(name, target.pk)])),
            started_at=finished - dt.timedelta(seconds=2), finished_at=finished,
        )
        score_prediction(prediction=p)

    # the first prediction finished in the window started exactly SPAN minutes before the count
    first = now - dt.timedelta(minutes=SPAN)
    step = (now - first - dt.timedelta(seconds=30)) / len(in_window)
    for i, (name, t) in enumerate(in_window):
        scored(name, t, first + dt.timedelta(seconds=2) + step * i)
    for name, t in old:
        scored(name, t, now - dt.timedelta(minutes=60))
    Prediction.objects.bulk_create(
        [Prediction(method_version=versions[name], target=t, status=Prediction.Status.QUEUED,
                    schedule_rank=rank) for name, t, rank in queued]
    )

    snapshots = {
        key: rank_subset(subset=s, definition="extended", seed=11)[0].pk for key, s in subsets.items()
    }
    FamilyAssignment.objects.bulk_create([
        FamilyAssignment(target=t, rfam_version="14.10", accession="")
        for t, _ in targets["story-a"][:FAMILIES_DONE]
    ])
    archive = make_snapshot_if_changed(Dataset.objects.get(slug="story-a"), background=False)
    # the background's work, once, as comparna.tasks.refresh_tallies_task does it (counted at `now`)
    tallies.refresh_tallies(now=now)
    store_ranking_status()
    store_ranking_rows()
    store_method_standings()
    bump_data_version()

    good = versions["GoodFold"]
    common = Score.objects.filter(
        prediction__method_version=dev, prediction__target__subsets=subsets[("story-a", "all")],
        prediction__target__in=Score.objects.filter(prediction__method_version=good).values("prediction__target"),
    )
    common_targets = common.values_list("prediction__target", flat=True)
    mean_good = Score.objects.filter(prediction__method_version=good, prediction__target__in=common_targets,
                                     definition="extended").aggregate(m=Avg("mcc"))["m"]
    public = Prediction.objects.public()
    by_target = Target.objects.values("dataset__slug").annotate(n=Count("id"))
    return {
        "marks": marks,
        "dev": dev_method.pk,
        # the owner's estimate when counted (its rate since its first run, SPAN minutes before `now`)
        "dev_eta": queue_eta(dev, now=now)["minutes"],
        "now": now.timestamp(),
        "good": good.method_id,
        "subsets": {f"{slug}/{sub}": s.pk for (slug, sub), s in subsets.items()},
        "snapshots": {f"{slug}/{sub}": pk for (slug, sub), pk in snapshots.items()},
        "archive": {"number": archive.number, "date": f"{archive.created_at:%Y-%m-%d}"},
        # the ETA sentence of every story scope, of each dataset and of the site, from the stored counts
        "eta": {
            **{f"{slug}/{sub}": progress.prediction_progress(subset=s)["eta_sentence"]
               for (slug, sub), s in subsets.items()},
            **{slug: progress.prediction_progress(dataset=Dataset.objects.get(slug=slug))["eta_sentence"]
               for slug in DATASETS},
            "site": progress.prediction_progress()["eta_sentence"],
        },
        "eta_minutes": {
            **{f"{slug}/{sub}": progress.prediction_progress(subset=s)["eta"]["minutes"]
               for (slug, sub), s in subsets.items()},
            **{slug: progress.prediction_progress(dataset=Dataset.objects.get(slug=slug))["eta"]["minutes"]
               for slug in DATASETS},
        },
        "unfinished": {f"{slug}/{sub}": progress.unfinished_of_active(subset=s, live=True)
                       for (slug, sub), s in subsets.items()},
        "public": {"total": public.count(), "pending": public.filter(status__in=progress.UNFINISHED).count()},
        "dev_predictions": Prediction.objects.filter(method_version=dev).count(),
        "compare": {"n": common.count(), "dev": common.aggregate(m=Avg("mcc"))["m"], "good": mean_good},
        "targets": {row["dataset__slug"]: row["n"] for row in by_target},
        "comparative_ready": Target.objects.filter(comparative_inputs__isnull=False).distinct().count(),
        "strand": dict(Target.objects.filter(dataset__slug=MOLECULES).values_list("source_id", "pk")),
    }


# --- in the browser -------------------------------------------------------------------------------------
