"""Leakage-aware ("unseen") rankings on a real ArchiveII slice: declared families and training sets exclude
targets per method, pairs are compared on the intersection of their unseen targets, undeclared methods are
named, and the ranking is deterministic. Also: every target's family label (dataset class, else Rfam)."""

from __future__ import annotations

import csv
import gzip
import random

import pytest
from django.core.management import call_command

from comparna.models import Dataset, DatasetEntry, Target, UnseenRanking
from comparna.rna.ranking import CountsTable, ranking_report
from comparna.services.leakage import rank_unseen
from comparna.services.scoring import score_prediction
from ingest.datasets.catalogue import ARCHIVEII
from ingest.models import FamilyAssignment
from ingest.services.rfam import label_family
from predictors.models import TrainingDeclaration
from tests.factories import make_dataset, make_method_version, make_prediction

pytestmark = pytest.mark.django_db

SEED = 5


@pytest.fixture
def archiveii(tmp_path, repo_data, django_capture_on_commit_callbacks):
    """The first 8 rows of each ArchiveII family, imported through import_dataset."""
    with gzip.open(repo_data / ARCHIVEII.source, "rt", newline="") as fh:
        reader = csv.DictReader(fh)
        fields, rows, per = reader.fieldnames, [], {}
        for row in reader:
            prefix = row["id"].split("_")[0]
            if per.get(prefix, 0) < 8:
                per[prefix] = per.get(prefix, 0) + 1
                rows.append(row)
    path = tmp_path / "slice.csv.gz"
    with gzip.open(path, "wt", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)
    with django_capture_on_commit_callbacks(execute=False):
        call_command("import_dataset", "archiveii", str(path), "--no-progress")
    return Dataset.objects.get(slug="archiveii")


def _random_db(rng: random.Random, n: int) -> str:
    chars = ["."] * n
    for _ in range(n // 5):
        i = rng.randrange(0, n - 4)
        j = rng.randrange(i + 4, n)
        if all(c == "." for c in chars[i : j + 1]):
            chars[i], chars[j] = "(", ")"
    return "".join(chars)


def _declare(version, **fields):
    TrainingDeclaration.objects.create(version=version, **fields)


def _with_training(name: str, training: tuple[str, ...]):
    version = make_method_version(name)
    version.spec = {**version.spec, "training_data": list(training)}
    version.save()
    return version


@pytest.fixture
def methods(archiveii):
    """Five methods with random predictions on every target (one in two copies the reference for Good)."""
    rng = random.Random(11)
    versions = {
        "TrainedOnTRNA": make_method_version("TrainedOnTRNA"),
        "TrainedOn5S": make_method_version("TrainedOn5S"),
        "Thermo": _with_training("Thermo", ("turner2004-melting",)),
        "Undeclared": make_method_version("Undeclared"),
        "OnArchiveII": make_method_version("OnArchiveII"),
    }
    _declare(versions["TrainedOnTRNA"], sources="ArchiveII tRNA family", families=["tRNA"])
    _declare(versions["TrainedOn5S"], sources="5S rRNA database", families=["5S rRNA"])
    _declare(versions["OnArchiveII"], sources="ArchiveII", families=[], datasets=["archiveii"])
    for target in Target.objects.filter(dataset=archiveii).order_by("source_id"):
        ref = target.references.get().pairs
        for name, version in versions.items():
            prediction = make_prediction(version, target, _random_db(rng, target.length))
            if name == "TrainedOnTRNA" and rng.random() < 0.5:
                prediction.pairs = ref
                prediction.save()
            score_prediction(prediction=prediction)
    return versions


def _families(dataset) -> dict[str, str]:
    return dict(Target.objects.filter(dataset=dataset).values_list("source_id", "family"))


def test_targets_carry_their_dataset_family(archiveii):
    fams = _families(archiveii)
    assert fams and all(fams[sid] == ARCHIVEII.options["class_names"][sid.split("_")[0]] for sid in fams)
    sources = Target.objects.filter(dataset=archiveii).values_list("family_source", flat=True)
    assert set(sources) == {"dataset"}
    assert Target.objects.in_family("tRNA").count() == sum(1 for f in fams.values() if f == "tRNA")


def test_rfam_assignment_labels_targets_without_a_dataset_class(archiveii):
    other = make_dataset("pdbish")
    bare = Target.objects.create(dataset=other, source_id="X_1", sequence="GCAU" * 8, length=32)
    for target, accession, family_id, expected in (
        (bare, "RF00162", "SAM", "Rfam:RF00162"),
        (Target.objects.filter(dataset=archiveii, family="tRNA").first(), "RF00001", "5S_rRNA", "tRNA"),
    ):
        row = FamilyAssignment.objects.create(target=target, rfam_version="t", accession=accession,
                                              family_id=family_id)
        label_family(target=target, assignment=row)
        assert Target.objects.get(pk=target.pk).family == expected
    tmrna = Target.objects.create(dataset=other, source_id="X_2", sequence="GCAU" * 8, length=32)
    row = FamilyAssignment.objects.create(target=tmrna, rfam_version="t", accession="RF00023",
                                          family_id="tmRNA")
    label_family(target=tmrna, assignment=row)
    assert (Target.objects.get(pk=tmrna.pk).family, Target.objects.get(pk=tmrna.pk).family_source) == (
        "tmRNA", "rfam")


def _independent_verdict(dataset, a: str, b: str, allowed: set[str]) -> tuple[float, int]:
    """The engine on a two-method table built from the scores of the allowed targets only, families as
    clusters: the pair's (unadjusted) target-level p-value and its common targets. (The verdict itself
    also depends on the other pairs of the ranking, through Holm's adjustment.)"""
    rows, families = [], {}
    for target in Target.objects.filter(dataset=dataset, source_id__in=allowed).order_by("source_id"):
        for p in target.predictions.filter(method_version__method__name__in=[a, b]):
            s = p.scores.get(definition="extended")
            name = p.method_version.method.name
            rows.append((name, target.source_id, s.tp, s.fn, s.fp, s.fp_compatible, s.tn))
            families[target.source_id] = target.family or f"seq:{target.source_id}"
    table = CountsTable.from_rows(rows)
    report = ranking_report(table, seed=SEED, clusters=[families[t] for t in table.targets], rank_resamples=0)
    return report["p_values"][a][b], report["common_targets"][a][b]


def test_unseen_ranking_excludes_declared_families_and_uses_the_intersection(archiveii, methods):
    row, new = rank_unseen(dataset=archiveii, definition="extended", seed=SEED)
    assert new
    report = row.report
    fams = _families(archiveii)
    not_trna = {s for s, f in fams.items() if f != "tRNA"}
    not_5s = {s for s, f in fams.items() if f != "5S rRNA"}
    common = report["common_targets"]
    # A method declared as trained on tRNAs is compared on no tRNA target ...
    assert common["TrainedOnTRNA"]["Thermo"] == len(not_trna) < len(fams)
    assert report["per_method"]["TrainedOnTRNA"]["seen_by_family"] == len(fams) - len(not_trna)
    assert _independent_verdict(archiveii, "TrainedOnTRNA", "Thermo", not_trna) == (
        pytest.approx(report["p_values"]["TrainedOnTRNA"]["Thermo"]), len(not_trna))
    # ... and a pair with disjoint declarations on the intersection of their unseen targets.
    both = not_trna & not_5s
    assert common["TrainedOnTRNA"]["TrainedOn5S"] == len(both) < min(len(not_trna), len(not_5s))
    assert _independent_verdict(archiveii, "TrainedOnTRNA", "TrainedOn5S", both) == (
        pytest.approx(report["p_values"]["TrainedOnTRNA"]["TrainedOn5S"]), len(both))
    # Thermo declares melting data only: it is compared with TrainedOn5S on everything but 5S rRNA.
    assert common["Thermo"]["TrainedOn5S"] == len(not_5s)
    # Undeclared and trained-on-this-dataset methods are not ranked, each with its reason.
    assert report["not_ranked"]["Undeclared"] == "training data undeclared"
    assert report["not_ranked"]["OnArchiveII"].startswith("fewer than 10 unseen targets")
    assert report["per_method"]["OnArchiveII"]["unseen_targets"] == 0
    ranked = {m["method"] for m in report["methods"]}
    assert ranked == {"TrainedOnTRNA", "TrainedOn5S", "Thermo"}
    assert set(report["full_ranks"]) == set(methods)


def test_identity_to_a_local_training_set_excludes_a_target(archiveii, methods):
    """A training set holding an 85 %-identical copy of one target's sequence excludes exactly that target."""
    trainset = make_dataset("trainset")
    target = Target.objects.filter(dataset=archiveii, family="tmRNA").order_by("source_id").first()
    seq = list(target.sequence)
    for k in range(0, len(seq), 7):  # ~14 % substitutions
        seq[k] = {"A": "C", "C": "G", "G": "U", "U": "A"}[seq[k]]
    rng = random.Random(3)
    DatasetEntry.objects.create(dataset=trainset, source_id="near", sequence="".join(seq), outcome="kept")
    DatasetEntry.objects.create(dataset=trainset, source_id="noise", outcome="kept",
                                sequence="".join(rng.choice("ACGU") for _ in range(200)))
    thermo = methods["Thermo"]
    _declare(thermo, sources="a local set", families=[], datasets=["trainset"])
    report = rank_unseen(dataset=archiveii, definition="extended", seed=SEED)[0].report
    assert report["per_method"]["Thermo"]["seen_by_identity"] == 1
    n = Target.objects.filter(dataset=archiveii).count()
    assert report["common_targets"]["Thermo"]["TrainedOn5S"] == n - 1 - Target.objects.filter(
        dataset=archiveii, family="5S rRNA").count()
    assert report["screened_against"] == ["archiveii", "trainset"]  # OnArchiveII: its own dataset
    # a training set that grows is screened again (the stored ranking is not reused)
    second = Target.objects.filter(dataset=archiveii, family="SRP RNA").order_by("source_id").first()
    DatasetEntry.objects.create(dataset=trainset, source_id="copy", sequence=second.sequence, outcome="kept")
    row, new = rank_unseen(dataset=archiveii, definition="extended", seed=SEED)
    assert new and row.report["per_method"]["Thermo"]["seen_by_identity"] == 2


def test_unseen_ranking_is_deterministic(archiveii, methods):
    first, new = rank_unseen(dataset=archiveii, definition="extended", seed=SEED)
    again, new_again = rank_unseen(dataset=archiveii, definition="extended", seed=SEED)
    assert new and not new_again and again.pk == first.pk
    report = first.report
    UnseenRanking.objects.all().delete()
    recomputed, _ = rank_unseen(dataset=archiveii, definition="extended", seed=SEED)
    assert recomputed.report == report and recomputed.inputs_hash == first.inputs_hash
    # a changed declaration changes the inputs: a new row
    TrainingDeclaration.objects.filter(version=methods["TrainedOn5S"]).update(families=["5S rRNA", "tmRNA"])
    changed, new_changed = rank_unseen(dataset=archiveii, definition="extended", seed=SEED)
    assert new_changed and changed.report["common_targets"]["TrainedOn5S"]["Thermo"] < (
        report["common_targets"]["TrainedOn5S"]["Thermo"])


def test_rank_unseen_command_prints_full_and_unseen_ranks(archiveii, methods):
    from io import StringIO

    out = StringIO()
    call_command("rank_unseen", "--dataset", "archiveii", "--seed", str(SEED), stdout=out)
    lines = out.getvalue().splitlines()
    row = UnseenRanking.objects.get(dataset=archiveii)
    for m in row.report["methods"]:
        line = next(x for x in lines if x.startswith(m["method"] + " "))
        assert line.split()[1:3] == [str(row.report["full_ranks"][m["method"]]), str(m["rank"])]
    assert "training data undeclared" in next(x for x in lines if x.startswith("Undeclared "))
