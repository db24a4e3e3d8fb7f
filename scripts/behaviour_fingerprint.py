"""Fingerprint of CompaRNA's behaviour on a slice of RNA STRAND, to compare two commits byte by byte.

Runs the real pipeline (import with CD-HIT, Rfam assignment with cmscan/cmalign, sandboxed predictors,
scoring, ranking, a numbered and an on-demand dataset snapshot, the snapshot's import into an empty database
with its rankings reproduced) through the management commands, with Celery tasks executed in-process
(``task_always_eager``: this script checks results, not the broker) and the clock fixed, so that two runs of
the same code write identical files. Wall-clock fields that cannot be fixed (run times, queue times) are set
to constants before anything is exported.

    .venv/bin/python scripts/behaviour_fingerprint.py OUT_DIR

writes ``OUT_DIR/{db.json, rank.json, snapshot-numbered.tar.gz, snapshot-ondemand.tar.gz, restored.json,
import.txt}``; compare two output directories with ``diff -r`` (or ``cmp`` per file). Only stable interfaces
are used (management commands, model names), so the script runs unchanged on older commits.
"""

from __future__ import annotations

import datetime as dt
import io
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FIXED_NOW = dt.datetime(2024, 6, 5, 12, 0, 0, tzinfo=dt.UTC)
PREFIXES = {"SPR": 8, "PDB": 8, "CRW": 4, "RFA": 8, "TMR": 2}
MAX_LENGTH = 400
METHODS = (
    "RNAfold-MFE",
    "RNAfold-MEA",
    "LinearFold-V",
    "LinearPartition-V-ThreshKnot",
    "RNAalifold(seed)",
    "CM-projection(seed)",
    "CM-projection(20)",
)


def setup_django(data_dir: Path) -> None:
    os.environ["COMPARNA_DATA_DIR"] = str(data_dir)
    os.environ["DJANGO_SETTINGS_MODULE"] = "comparna.settings"
    os.environ.pop("DATABASE_URL", None)
    os.environ.pop("CELERY_BROKER_URL", None)
    sys.path.insert(0, str(REPO))
    import django
    from django.utils import timezone

    timezone.now = lambda: FIXED_NOW  # auto_now / auto_now_add and every service read the fixed clock
    django.setup()
    from comparna.celery import app

    app.conf.task_always_eager = True
    app.conf.task_eager_propagates = True
    # Register every task as a worker does, so that tasks sent by name run eagerly here too.
    app.loader.import_default_modules()


def call(*args: str) -> str:
    from django.core.management import call_command

    out = io.StringIO()
    call_command(*args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def model(app_label: str, name: str, *fallback: str):
    from django.apps import apps

    for label in (app_label, *fallback):
        try:
            return apps.get_model(label, name)
        except LookupError:
            continue
    raise LookupError(name)


def fix_clocks() -> None:
    """Set the wall-clock fields the fixed clock cannot reach (model defaults, measured run times)."""
    Prediction = model("predictors", "Prediction")
    Prediction.objects.update(
        queued_at=FIXED_NOW, started_at=FIXED_NOW, finished_at=FIXED_NOW, runtime_s=0.25
    )


def canonical_db() -> dict:
    """Every stored row that the benchmark's results depend on, keyed by names (never by primary keys)."""
    Dataset = model("comparna", "Dataset")
    Target = model("comparna", "Target")
    Reference = model("comparna", "ReferenceStructure")
    Score = model("comparna", "Score")
    Ranking = model("comparna", "RankingSnapshot")
    Prediction = model("predictors", "Prediction")
    MethodVersion = model("predictors", "MethodVersion")
    out: dict = {}
    out["datasets"] = [
        {
            "slug": d.slug,
            "name": d.name,
            "kind": d.kind,
            "definitions": d.definitions,
            "version": d.version,
            "description": d.description,
            "subsets": [
                [s.slug, s.name, s.definition, s.order, sorted(s.targets.values_list("source_id", flat=True))]
                for s in d.subsets.order_by("slug")
            ],
        }
        for d in Dataset.objects.order_by("slug")
    ]
    out["targets"] = [
        [t.dataset.slug, t.source_id, t.sequence, t.length, t.source_database, t.rna_class, t.organism,
         t.pdb_id, t.chain_id, str(t.release_date), t.provenance]
        for t in Target.objects.select_related("dataset").order_by("dataset__slug", "source_id")
    ]
    out["references"] = [
        [r.target.source_id, r.definition, r.pairs, r.n_pairs, r.pseudoknotted, r.has_multiplets, r.classes]
        for r in Reference.objects.select_related("target").order_by("target__source_id", "definition")
    ]
    out["methods"] = [
        [v.method.name, v.method.input_kind, v.method.active, v.version, v.program, v.fingerprint,
         v.is_current, v.spec]
        for v in MethodVersion.objects.select_related("method").order_by("method__name", "fingerprint")
    ]
    out["predictions"] = [
        [p.method_version.method.name, p.target.source_id, p.status, p.pairs, p.probabilities, p.exit_code,
         p.error, p.runner, p.limits, p.attempts]
        for p in Prediction.objects.select_related("method_version__method", "target").order_by(
            "method_version__method__name", "target__source_id"
        )
    ]
    fields = [f.name for f in Score._meta.get_fields() if f.concrete and f.name not in ("id", "prediction")]
    out["scores"] = [
        [s.prediction.method_version.method.name, s.prediction.target.source_id,
         *[getattr(s, f) for f in sorted(fields)]]
        for s in Score.objects.select_related("prediction__method_version__method", "prediction__target")
        .order_by("prediction__method_version__method__name", "prediction__target__source_id", "definition")
    ]
    out["rankings"] = [
        [r.subset.slug, r.definition, r.seed, r.inputs_hash, r.inputs, r.report]
        for r in Ranking.objects.select_related("subset").order_by(
            "subset__slug", "definition", "inputs_hash"
        )
    ]
    try:
        Family = model("ingest", "FamilyAssignment")
        Comparative = model("ingest", "ComparativeInput")
    except LookupError:
        return out
    out["families"] = [
        [f.target.source_id, f.rfam_version, f.accession, f.family_id, f.evalue, f.score, f.coverage]
        for f in Family.objects.select_related("target").order_by("target__source_id", "rfam_version")
    ]
    out["comparative_inputs"] = [
        [c.target.source_id, c.kind, c.rfam_version, c.accession, c.query_name, c.random_seed, c.sequences,
         c.alignment]
        for c in Comparative.objects.select_related("target").order_by("target__source_id", "kind")
    ]
    return out


def dump(path: Path, value) -> None:
    path.write_text(json.dumps(value, indent=1, sort_keys=True, default=str) + "\n")


def build(out: Path, work: Path) -> None:
    setup_django(work / "build")
    sys.path.insert(0, str(REPO))
    from django.conf import settings

    from tests.support.strand_slice import make_strand_slice

    slice_dir = work / "slice"
    make_strand_slice(
        settings.RNASTRAND_ARCHIVE, slice_dir, prefixes=PREFIXES, max_length=MAX_LENGTH, acgu_only=True
    )
    call("migrate", "--noinput", "-v", "0")
    call("import_rnastrand", str(slice_dir), "--no-progress")
    call("sync_predictors", *[a for m in METHODS for a in ("--only", m)])
    call("queue_predictions", "--dataset", "rnastrand")
    Prediction = model("predictors", "Prediction")
    unfinished = Prediction.objects.exclude(status="ok")
    if unfinished.exists():  # e.g. the sandbox uid's process limit hit by other jobs on a shared machine
        errors = sorted({p.error[:200] for p in unfinished})
        sys.exit(f"{unfinished.count()} predictions did not end ok, so this is no fingerprint: {errors}")
    fix_clocks()
    (out / "rank.json").write_text(call("rank", "--dataset", "rnastrand", "--json"))
    call("make_snapshot", "rnastrand", "--output", str(out / "snapshot-numbered.tar.gz"))
    call("make_snapshot", "rnastrand", "--no-record", "--output", str(out / "snapshot-ondemand.tar.gz"))
    dump(out / "db.json", canonical_db())


def restore(out: Path, work: Path) -> None:
    setup_django(work / "restore")
    call("migrate", "--noinput", "-v", "0")
    (out / "import.txt").write_text(call("import_snapshot", str(out / "snapshot-numbered.tar.gz")))
    dump(out / "restored.json", canonical_db())


def main() -> None:
    if len(sys.argv) == 4 and sys.argv[1] in ("build", "restore"):
        stage = build if sys.argv[1] == "build" else restore
        stage(Path(sys.argv[2]), Path(sys.argv[3]))
        return
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = Path(sys.argv[1]).resolve()
    out.mkdir(parents=True, exist_ok=False)
    with tempfile.TemporaryDirectory(prefix="comparna-fingerprint-") as work:
        for stage in ("build", "restore"):  # separate processes: each has its own database
            subprocess.run([sys.executable, __file__, stage, str(out), work], check=True, cwd=REPO)
    print(f"fingerprint written to {out}")


if __name__ == "__main__":
    main()
