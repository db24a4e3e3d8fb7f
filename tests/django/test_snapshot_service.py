"""Dataset snapshots from the database: contents, numbering, immutability, the task, import + rankings."""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import random
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from comparna.models import Dataset, RankingSnapshot, ReferenceStructure, Score, Subset, Target
from comparna.rna.canonical import structure_from_text, structure_to_text
from comparna.rna.formats import parse_dot_bracket, read_bpseq, read_ct, read_fasta, read_pair_json
from comparna.rna.structure import Structure
from comparna.services.rankings import recompute_rankings
from comparna.services.scoring import score_prediction
from comparna.snapshots.archive import iter_members, verify_archive
from comparna.snapshots.common import SnapshotError
from comparna.snapshots.lifecycle import make_snapshot_if_changed, snapshot_path
from comparna.snapshots.models import DatasetSnapshot
from comparna.snapshots.restore import database_is_empty, import_snapshot
from comparna.snapshots.tasks import build_snapshot_task
from predictors.models import Method, MethodVersion, Prediction
from tests.factories import make_dataset, make_method_version, make_prediction, make_target

SEED = 11
LENGTH = 40


def random_db(rng: random.Random, n: int) -> str:
    chars = ["."] * n
    for _ in range(n // 5):
        i = rng.randrange(0, n - 4)
        j = rng.randrange(i + 4, n)
        if all(c == "." for c in chars[i : j + 1]):
            chars[i], chars[j] = "(", ")"
    return "".join(chars)


def build_scored_dataset() -> Dataset:
    """Two definitions, three subsets (one ranked under one definition only), three current methods (one
    predicting few targets, one failure), a retired method, an old method version, a multiplet reference."""
    rng = random.Random(7)
    ds = make_dataset("snapset", definitions=("standard", "extended"))
    ds.description = "A test dataset."
    ds.version = 3
    ds.save()
    first = Subset.objects.create(dataset=ds, slug="first", name="First twelve", order=1)
    ext_only = Subset.objects.create(
        dataset=ds, slug="ext", name="Extended only", order=2, definition="extended"
    )
    methods = [make_method_version(name) for name in ("Alpha", "Beta", "Gamma(seed)")]
    retired = make_method_version("Retired")
    Method.objects.filter(pk=retired.method_id).update(active=False)
    old_alpha = MethodVersion.objects.create(
        method=methods[0].method,
        version="0.9",
        program="alpha",
        spec={},
        fingerprint="fp-old",
        is_current=False,
    )
    seq = "GCAU" * (LENGTH // 4)
    targets = []
    for n in range(14):
        target = make_target(seq, random_db(rng, LENGTH), dataset=ds, definition="extended")
        target.rna_class = "tRNA" if n % 2 else "rRNA"
        target.release_date = dt.date(2024, 1, 1) + dt.timedelta(days=n)
        target.provenance = {"note": f"target {n}"}
        target.save()
        ext = target.references.get()
        structure = structure_from_text(LENGTH, ext.pairs)
        if n == 3:  # a base in two pairs: only the JSON pair list can carry it
            i, j = structure.sorted_pairs()[0]
            free = next(k for k in range(1, LENGTH + 1) if k not in structure.partners() and abs(k - i) > 3)
            structure = Structure.from_pairs(LENGTH, [*structure.pairs, (min(i, free), max(i, free))])
            ext.pairs, ext.n_pairs, ext.has_multiplets = (
                structure_to_text(structure),
                len(structure.pairs),
                True,
            )
            ext.classes = [[a, b, "cWW"] for a, b in structure.sorted_pairs()]
            ext.save()
        standard = Structure.from_pairs(
            LENGTH, [p for k, p in enumerate(sorted(structure.pairs)) if k % 2 == 0]
        )
        ReferenceStructure.objects.create(
            target=target,
            definition="standard",
            pairs=structure_to_text(standard),
            n_pairs=len(standard.pairs),
            pseudoknotted=standard.is_pseudoknotted,
            has_multiplets=standard.has_multiplets,
        )
        if n < 12:
            first.targets.add(target)
        if n >= 2:
            ext_only.targets.add(target)
        targets.append(target)
    for n, target in enumerate(targets):
        ref = target.references.get(definition="extended").pairs
        for k, version in enumerate([*methods, retired, old_alpha]):
            if k == 2 and n >= 9:
                if n == 9:
                    Prediction.objects.create(
                        method_version=version,
                        target=target,
                        status=Prediction.Status.FAILED,
                        error="segfault",
                    )
                continue
            prediction = make_prediction(version, target, random_db(rng, LENGTH))
            if k == 0 and n % 2 == 0:
                prediction.pairs = ref  # Alpha copies the reference half the time
                prediction.save()
            score_prediction(prediction=prediction)
    recompute_rankings(dataset=ds, seed=SEED)
    return ds


@pytest.fixture
def store(settings, tmp_path):
    settings.SNAPSHOT_DIR = tmp_path / "snapshots"
    return settings.SNAPSHOT_DIR


@pytest.fixture
def scored(db, store) -> Dataset:
    return build_scored_dataset()


def read_archive(path: Path) -> dict[str, bytes]:
    return {name: fh.read() for name, fh in iter_members(path)}


def test_snapshot_contents_match_the_database(scored):
    snap = make_snapshot_if_changed(scored, background=False)
    assert snap.number == 1 and snap.status == DatasetSnapshot.Status.DONE
    path = snapshot_path(snap)
    assert path.stat().st_size == snap.size
    report = verify_archive(path, expected_sha256=snap.sha256)
    assert report.ok, report.problems
    files = read_archive(path)
    assert files["README.md"].startswith(b"# CompaRNA dataset snapshot") and b"Django" in files["README.md"]
    meta = json.loads(files["snapshot.json"])
    assert meta["dataset"]["version"] == 3 and meta["number"] == 1

    targets = {t.source_id: t for t in Target.objects.filter(dataset=scored)}
    assert dict(read_fasta(files["targets.fasta"].decode())) == {k: t.sequence for k, t in targets.items()}
    rows = list(csv.DictReader(io.StringIO(files["metadata/targets.csv"].decode())))
    assert {r["source_id"] for r in rows} == set(targets)
    for r in rows:
        t = targets[r["source_id"]]
        assert r["release_date"] == t.release_date.isoformat() and r["rna_class"] == t.rna_class
        assert set(r["subsets"].split(";")) == set(t.subsets.values_list("slug", flat=True))
        ext = t.references.get(definition="extended")
        assert (
            int(r["extended_pairs"]) == ext.n_pairs
            and (r["extended_multiplets"] == "True") == ext.has_multiplets
        )

    # Every reference: lossless in pairs.jsonl; BPSEQ, CT and dot-bracket agree, or JSON for multiplets.
    for ref in ReferenceStructure.objects.filter(target__dataset=scored).select_related("target"):
        t, definition = ref.target, ref.definition
        expected = structure_from_text(t.length, ref.pairs)
        line = next(
            json.loads(x)
            for x in files[f"references/{definition}/pairs.jsonl"].splitlines()
            if json.loads(x)["target"] == t.source_id
        )
        assert Structure.from_pairs(t.length, map(tuple, line["pairs"])) == expected
        base = f"references/{definition}"
        if expected.has_multiplets:
            assert f"{base}/bpseq/{t.source_id}.bpseq" not in files
            assert (
                read_pair_json(files[f"{base}/json/{t.source_id}.json"].decode(), length=t.length) == expected
            )
            assert line["classes"] == ref.classes
        else:
            assert read_bpseq(files[f"{base}/bpseq/{t.source_id}.bpseq"].decode()) == (t.sequence, expected)
            assert read_ct(files[f"{base}/ct/{t.source_id}.ct"].decode()) == (t.sequence, expected)
            dbn = files[f"{base}/{definition}.dbn"].decode().splitlines()
            k = dbn.index(f">{t.source_id}")
            assert parse_dot_bracket(dbn[k + 2], length=t.length) == expected
    assert snap.contents["multiplet_references"] == {"standard": 0, "extended": 1}

    # Predictions: current versions only (the old Alpha version is left out), failures with their status.
    preds = list(csv.DictReader(io.StringIO(files["predictions/predictions.csv"].decode())))
    current = Prediction.objects.filter(target__dataset=scored, method_version__is_current=True)
    assert len(preds) == current.count() == 14 * 3 + 9 + 1
    assert "fp-old" not in files["predictions/predictions.csv"].decode()
    assert [p["status"] for p in preds if p["method"] == "Gamma(seed)" and p["status"] != "ok"] == ["failed"]
    counts = list(csv.DictReader(io.StringIO(files["scores/counts.csv"].decode())))
    assert len(counts) == Score.objects.filter(prediction__in=current).count() == 2 * (14 * 3 + 9)
    one = counts[0]
    stored = Score.objects.get(
        prediction__method_version__method__name=one["method"],
        prediction__method_version__is_current=True,
        prediction__target__source_id=one["target"],
        definition=one["definition"],
    )
    assert [int(one[f]) for f in ("tp", "fn", "fp", "fp_compatible", "tn")] == [
        stored.tp,
        stored.fn,
        stored.fp,
        stored.fp_compatible,
        stored.tn,
    ]
    assert float(one["mcc"]) == stored.mcc
    # Rankings: the latest of every subset x definition, all computed on exactly this data.
    ranking_files = sorted(n for n in files if n.startswith("rankings/"))
    assert len(ranking_files) == 5 == RankingSnapshot.objects.filter(dataset=scored).count()
    assert all(r["matches_snapshot_data"] for r in snap.contents["rankings"])


def test_numbered_immutable_and_only_when_changed(scored):
    first = make_snapshot_if_changed(scored, background=False)
    first_bytes = snapshot_path(first).read_bytes()
    assert make_snapshot_if_changed(scored, background=False) is None  # nothing changed
    # A new prediction (no dataset version change) makes snapshot 2; snapshot 1 stays as it was.
    target = Target.objects.filter(dataset=scored).order_by("source_id").last()
    prediction = make_prediction(make_method_version("Delta"), target, "." * LENGTH)
    score_prediction(prediction=prediction)
    second = make_snapshot_if_changed(scored, background=False)
    assert second.number == 2 and second.sha256 != first.sha256
    assert snapshot_path(first).read_bytes() == first_bytes
    first.refresh_from_db()
    assert first.status == "done" and first.sha256 and snapshot_path(first) != snapshot_path(second)
    # The rankings archived in 2 were computed before Delta's prediction: flagged as not matching.
    assert not any(r["matches_snapshot_data"] for r in second.contents["rankings"] if r["subset"] != "first")
    # A dataset version bump alone also counts as a change.
    Dataset.objects.filter(pk=scored.pk).update(version=4)
    third = make_snapshot_if_changed(scored, background=False)
    assert third.number == 3 and third.dataset_version == 4


def test_task_builds_with_progress_and_is_idempotent(scored):
    snap = DatasetSnapshot.objects.create(dataset=scored, number=1)
    assert build_snapshot_task(snap.pk) == "done"  # the task body, run here (no eager Celery)
    snap.refresh_from_db()
    assert snap.total > 0 and snap.done == snap.total and snap.stage == "done" and snap.heartbeat_at
    sha = snap.sha256
    assert build_snapshot_task(snap.pk) == "done"  # re-delivered: nothing rebuilt
    snap.refresh_from_db()
    assert snap.sha256 == sha and verify_archive(snapshot_path(snap), expected_sha256=sha).ok
    assert build_snapshot_task(10**9) == "missing"


def _empty_database() -> None:
    for model in (
        Score,
        Prediction,
        MethodVersion,
        Method,
        RankingSnapshot,
        ReferenceStructure,
        Subset.targets.through,
        Subset,
        Target,
        DatasetSnapshot,
        Dataset,
    ):
        model.objects.all().delete()


def test_import_into_empty_database_reproduces_rankings_exactly(scored, tmp_path):
    out = tmp_path / "export.tar.gz"
    call_command("make_snapshot", "snapset", "--output", str(out), stdout=io.StringIO())
    assert verify_archive(out).ok
    original = {
        (r.subset.slug, r.definition): r.report for r in RankingSnapshot.objects.filter(dataset=scored)
    }
    original_inputs = {(r.subset.slug, r.definition): r.inputs_hash for r in RankingSnapshot.objects.all()}
    assert len(original) == 5

    with pytest.raises(CommandError, match="not empty"):
        call_command("import_snapshot", str(out))

    _empty_database()
    assert database_is_empty()
    stdout = io.StringIO()
    call_command("import_snapshot", str(out), "--no-rank", stdout=stdout)
    assert "imported dataset snapset (version 3)" in stdout.getvalue()
    assert RankingSnapshot.objects.count() == 0
    assert Prediction.objects.count() == 14 * 3 + 9 + 1 and Score.objects.count() == 2 * (14 * 3 + 9)
    assert not Method.objects.get(name="Retired").active
    recompute_rankings(seed=SEED)
    again = {(r.subset.slug, r.definition): r for r in RankingSnapshot.objects.all()}
    assert set(again) == set(original)
    for key, report in original.items():
        assert again[key].inputs_hash == original_inputs[key]
        assert json.dumps(again[key].report, sort_keys=True) == json.dumps(report, sort_keys=True), key
    # not a degenerate ranking: the 2013 view (stored beside, reproduced too) has wins; the target-level
    # verdict cannot have any here (two families, tRNA and rRNA: the smallest sign-flip p is 0.5)
    report = original[("all", "extended")]
    assert any(v == "+" for row in report["protocol_2013"]["verdicts"].values() for v in row.values())
    assert report["verdicts"] and all(v != "+" for row in report["verdicts"].values() for v in row.values())


def test_import_command_reports_reproduced_rankings(scored, tmp_path):
    out = tmp_path / "ondemand.tar.gz"
    call_command("make_snapshot", "snapset", "--output", str(out), "--no-record", stdout=io.StringIO())
    assert not DatasetSnapshot.objects.exists()
    _empty_database()
    stdout = io.StringIO()
    call_command("import_snapshot", str(out), stdout=stdout)
    assert stdout.getvalue().count("reproduced exactly") == 5


def test_import_refuses_a_damaged_archive(scored, tmp_path):
    snap = make_snapshot_if_changed(scored, background=False)
    cut = tmp_path / "cut.tar.gz"
    cut.write_bytes(snapshot_path(snap).read_bytes()[:-1000])
    _empty_database()
    with pytest.raises(SnapshotError, match="failed verification"):
        import_snapshot(path=cut)
    assert database_is_empty()


def test_make_snapshot_command_errors(scored, tmp_path):
    with pytest.raises(CommandError, match="unknown dataset"):
        call_command("make_snapshot", "nope")
    existing = tmp_path / "x.tar.gz"
    existing.write_bytes(b"x")
    with pytest.raises(CommandError, match="never overwritten"):
        call_command("make_snapshot", "snapset", "--output", str(existing))
    stdout = io.StringIO()
    call_command("make_snapshot", "snapset", "--if-changed", stdout=stdout)
    call_command("make_snapshot", "snapset", "--if-changed", stdout=stdout)
    assert "snapshot 1" in stdout.getvalue() and "unchanged" in stdout.getvalue()


def test_first_snapshot_as_soon_as_a_ranking_exists_then_only_when_settled(scored, monkeypatch):
    """Issue 28: a dataset whose backlog takes hours gets a downloadable snapshot with its first ranking
    (marked provisional with what is still to come); later ones wait until it is settled."""
    from comparna import pipeline
    from comparna.snapshots.lifecycle import build_snapshot
    from comparna.tasks import recompute_rankings_task

    monkeypatch.setattr(
        pipeline, "snapshot_reserved",
        lambda *, snapshot_id: build_snapshot(snapshot=DatasetSnapshot.objects.get(pk=snapshot_id)),
    )
    gamma = MethodVersion.objects.get(method__name="Gamma(seed)", is_current=True)
    targets = list(Target.objects.filter(dataset=scored).order_by("pk"))
    # an import-time snapshot exists from before any ranking: it does not count as the first one
    import_time = DatasetSnapshot.objects.create(dataset=scored, number=1, status=DatasetSnapshot.Status.DONE)
    old = dt.datetime(2020, 1, 1, tzinfo=dt.UTC)
    DatasetSnapshot.objects.filter(pk=import_time.pk).update(created_at=old)
    queued = [Prediction.objects.create(method_version=gamma, target=t) for t in targets[10:]]
    assert all(p.status == Prediction.Status.QUEUED for p in queued)

    assert recompute_rankings_task() > 0  # the default seed: new rankings
    first = DatasetSnapshot.objects.filter(dataset=scored).exclude(pk=import_time.pk).get()
    assert first.status == DatasetSnapshot.Status.DONE and first.contents["unfinished_predictions"] == 4
    assert verify_archive(snapshot_path(first), expected_sha256=first.sha256).ok

    # more results while the backlog still runs: rankings change, no new dataset snapshot
    done = queued.pop()
    done.status, done.pairs = Prediction.Status.OK, targets[-1].references.get(definition="extended").pairs
    done.save()
    score_prediction(prediction=done)
    assert recompute_rankings_task() > 0
    assert DatasetSnapshot.objects.filter(dataset=scored).count() == 2

    # settled: the next ranking brings the settled snapshot
    for p in queued:
        p.status, p.error = Prediction.Status.FAILED, "crashed"
        p.save()
    Prediction.objects.filter(pk=queued[0].pk).update(status=Prediction.Status.OK, pairs="")
    score_prediction(prediction=Prediction.objects.get(pk=queued[0].pk))
    assert recompute_rankings_task() > 0
    settled = DatasetSnapshot.objects.filter(dataset=scored).order_by("-number").first()
    assert settled.number == first.number + 1 and settled.contents["unfinished_predictions"] == 0


def test_a_ranking_stored_before_any_result_does_not_count_as_the_first(scored, monkeypatch):
    """make run ranks every subset the moment a dataset is imported (no method has a result yet) and the
    import's snapshot follows seconds later: that snapshot must not count as the one "since the first
    ranking", else the first downloadable snapshot with results waits for the whole backlog (issue 38)."""
    from comparna import pipeline
    from comparna.models import RankingSnapshot
    from comparna.snapshots.lifecycle import build_snapshot
    from comparna.tasks import has_snapshot_since_first_ranking, recompute_rankings_task

    monkeypatch.setattr(
        pipeline, "snapshot_reserved",
        lambda *, snapshot_id: build_snapshot(snapshot=DatasetSnapshot.objects.get(pk=snapshot_id)),
    )
    subset = scored.subsets.first()
    old = dt.datetime(2020, 1, 1, tzinfo=dt.UTC)
    empty = RankingSnapshot.objects.create(
        dataset=scored, subset=subset, definition="extended", seed=1, inputs_hash="e" * 64, inputs={},
        report={"protocol": "target", "methods": [], "verdicts": {}},
    )
    RankingSnapshot.objects.filter(pk=empty.pk).update(computed_at=old)
    import_time = DatasetSnapshot.objects.create(dataset=scored, number=1, status=DatasetSnapshot.Status.DONE)
    DatasetSnapshot.objects.filter(pk=import_time.pk).update(created_at=old + dt.timedelta(seconds=4))
    assert not has_snapshot_since_first_ranking(scored)  # the empty ranking is not a first ranking
    from comparna.models import RankingSnapshotSummary

    RankingSnapshotSummary.objects.create(snapshot=empty, protocol="target", clusters=0, methods=[])
    assert not has_snapshot_since_first_ranking(scored)  # nor once its (empty) summary is stored
    gamma = MethodVersion.objects.get(method__name="Gamma(seed)", is_current=True)
    for t in list(Target.objects.filter(dataset=scored).order_by("pk"))[10:]:
        Prediction.objects.create(method_version=gamma, target=t)  # a backlog still running
    assert recompute_rankings_task() > 0
    early = DatasetSnapshot.objects.filter(dataset=scored).exclude(pk=import_time.pk).get()
    assert early.status == DatasetSnapshot.Status.DONE and early.contents["unfinished_predictions"] == 4
    assert has_snapshot_since_first_ranking(scored)


def test_the_rankings_task_refreshes_the_counts_the_pages_read(scored, monkeypatch):
    """Stop 43: in make run the one default worker ran rankings back to back (a tick every 3 min, each run
    6–8 min) and the periodic tallies refresh queued behind them expired, so the progress and ETA on every
    page stood still for 20 minutes. The rankings task now counts the predictions itself before it stores
    the new snapshots' live state, and a rankings tick older than its interval is dropped."""
    import importlib

    from comparna import pipeline, scheduled
    from comparna.tallies.models import PredictionTally, TallyRun
    from comparna.tasks import recompute_rankings_task

    monkeypatch.setattr(pipeline, "snapshot_reserved", lambda *, snapshot_id: None)
    before = TallyRun.objects.count()
    assert recompute_rankings_task() > 0
    assert TallyRun.objects.count() == before + 1
    newest = TallyRun.objects.order_by("-computed_at").first()
    counted = sum(PredictionTally.objects.filter(run=newest, subset__isnull=True).values_list("n", flat=True))
    assert counted == Prediction.objects.count() > 0  # this database's predictions, counted now

    monkeypatch.setenv("COMPARNA_RANKING_INTERVAL_S", "180")
    entry = importlib.reload(scheduled).SCHEDULE["nightly-rankings"]
    assert entry["options"]["expires"] == 180.0 and entry["schedule"] == 180.0
    monkeypatch.delenv("COMPARNA_RANKING_INTERVAL_S")
    assert importlib.reload(scheduled).SCHEDULE["nightly-rankings"]["options"]["expires"] == 6 * 3600
