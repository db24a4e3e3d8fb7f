"""A synthetic CompaRNA database of years of service, written with PostgreSQL COPY (for ``bench_scale.py``).

``build_scale_data(methods=N, targets=M)`` creates, inside Django on PostgreSQL:

- three static datasets (RNA STRAND-, ArchiveII- and bpRNA-like: 25 %, 20 % and 15 % of the targets) and a
  PDB dataset (the other 40 %) released in 520 weekly batches (ten years), scored on the standard and the
  extended definitions; lengths log-normal (static: median 120 nt; PDB: mostly short chains, a tail of
  ribosomal ones up to 3500 nt); families from the canonical list (a fifth of the targets without one);
  a reference per target and definition (a nested structure with about 0.28 pairs per nucleotide);
- 30 subsets: per dataset all / 20–200 / 201–800 / >800 nt / pseudoknotted, and ten family subsets;
- ``N`` public methods, each with a current version (20 of them also an older version, not current, on the
  static datasets): the newest five still filling (10–90 % done, the rest queued, a few running), the
  others finished: about 88 % ok, 3 % failed, 2 % timeout, 0.5 % unparsable/infrastructure error, and "too
  long" above half the methods' 1000-nt limit; predicted pair texts of realistic size; the last 15 minutes
  hold a few hundred finished predictions (so a throughput exists);
- a score per ok prediction and definition: counts drawn around each method's quality (sensitivity and
  predicted pair number per target), metrics from those counts.

Rows are rendered to COPY text directly (no ORM objects): two million predictions and their scores load in
minutes. Ids are assigned here and the sequences moved past them afterwards.
"""

# The row generators below are consumed inside the loop iteration that defines them (B023 is moot).
# ruff: noqa: B023

from __future__ import annotations

import datetime as dt
import json
import math
from collections.abc import Iterable, Iterator

import numpy as np
from django.db import connection
from django.db.models import fields as djf
from django.utils import timezone

from comparna.models import Dataset, ReferenceStructure, Score, Subset, Target
from comparna.rna.families import FAMILIES, family_slug
from predictors.models import Method, MethodVersion, Prediction

WEEKS = 520
STATIC = (("rnastrand", "RNA STRAND", 0.25), ("archiveii", "ArchiveII", 0.20), ("bprna", "bpRNA-like", 0.15))
FAMILY_LABELS = [f.label for f in FAMILIES]
FAMILY_SUBSETS = {"rnastrand": 4, "archiveii": 3, "bprna": 3}
BINS = (
    ("short", "20–200 nt", 0, 200),
    ("medium", "201–800 nt", 201, 800),
    ("long", "over 800 nt", 801, 10**6),
)
OLD_VERSIONS = 20
FILLING = 5


def _text(value) -> str:
    """A value in PostgreSQL COPY text form."""
    if value is None:
        return r"\N"
    if isinstance(value, bool):
        return "t" if value else "f"
    if isinstance(value, dict | list):
        value = json.dumps(value)
    elif isinstance(value, dt.datetime | dt.date):
        value = value.isoformat()
    return str(value).replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n")


class Copier:
    """COPY rows of one model: ``given`` columns per row, every other concrete field its default once."""

    def __init__(self, model, given: list[str]):
        now = timezone.now()
        self.table = model._meta.db_table
        fields = {f.attname: f for f in model._meta.concrete_fields}
        unknown = set(given) - set(fields)
        if unknown:
            raise ValueError(f"{model.__name__}: no fields {sorted(unknown)}")
        self.given = given
        # an id not given comes from its sequence
        rest = [
            name for name, f in fields.items() if name not in given and not isinstance(f, djf.AutoFieldMixin)
        ]
        tail = []
        for name in rest:
            f = fields[name]
            value = f.get_default() if f.has_default() else None
            if value is None and not f.null:
                if isinstance(f, djf.DateTimeField):
                    value = now
                elif isinstance(f, djf.CharField | djf.TextField):
                    value = ""
                elif isinstance(f, djf.BooleanField):
                    value = False
            tail.append(_text(value))
        self.columns = [fields[n].column for n in given] + [fields[n].column for n in rest]
        self.tail = ("\t" + "\t".join(tail)) if tail else ""

    def copy(self, rows: Iterable[Iterable]) -> int:
        """Write the rows (values in ``given`` order); returns how many."""
        n = 0
        sql = f"COPY {self.table} ({', '.join(chr(34) + c + chr(34) for c in self.columns)}) FROM STDIN"
        with connection.cursor() as cursor, cursor.cursor.copy(sql) as cp:
            buf: list[str] = []
            for row in rows:
                buf.append("\t".join(_text(v) for v in row) + self.tail + "\n")
                n += 1
                if len(buf) >= 20000:
                    cp.write("".join(buf))
                    buf = []
            if buf:
                cp.write("".join(buf))
        return n


def _reset_sequences(*models) -> None:
    with connection.cursor() as cursor:
        for model in models:
            table = model._meta.db_table
            cursor.execute(
                f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), "
                f"COALESCE((SELECT MAX(id) FROM {table}), 0) + 1, false)"
            )


def _lengths(rng: np.random.Generator, n: int, pdb: bool) -> np.ndarray:
    if pdb:
        short = rng.lognormal(math.log(60), 0.6, n)
        long_ = rng.lognormal(math.log(400), 1.0, n)
        x = np.where(rng.random(n) < 0.7, short, long_)
        return np.clip(x, 10, 3500).astype(int)
    return np.clip(rng.lognormal(math.log(120), 0.8, n), 20, 3000).astype(int)


def _pairs_text(n_pairs: int, length: int) -> str:
    return " ".join(f"{i}-{length + 1 - i}" for i in range(1, n_pairs + 1))


def _datasets(rng: np.random.Generator, targets: int) -> list[dict]:
    """Datasets, subsets, targets and references; returns per dataset its rows for the predictions."""
    plan = [
        *((slug, name, share, False) for slug, name, share in STATIC),
        ("pdb", "PDB (weekly)", 0.40, True),
    ]
    sizes = [max(4, int(targets * share)) for *_, share, _ in plan]
    sizes[-1] = max(4, targets - sum(sizes[:-1]))
    target_copy = Copier(
        Target,
        [
            "id",
            "dataset_id",
            "source_id",
            "sequence",
            "length",
            "source_database",
            "rna_class",
            "family",
            "family_source",
            "pdb_id",
            "chain_id",
            "release_date",
            "created_at",
        ],
    )
    ref_copy = Copier(
        ReferenceStructure,
        ["target_id", "definition", "pairs", "n_pairs", "pseudoknotted", "has_multiplets", "classes"],
    )
    link_copy = Copier(Subset.targets.through, ["subset_id", "target_id"])
    now = timezone.now()
    out = []
    next_id = 1
    for (slug, name, _, pdb), size in zip(plan, sizes, strict=True):
        definitions = ["standard", "extended"] if pdb else ["extended"]
        ds = Dataset.objects.create(
            slug=slug,
            name=name,
            kind=Dataset.Kind.PDB if pdb else Dataset.Kind.STATIC,
            definitions=definitions,
            version=1,
            description=f"Synthetic {name}.",
        )
        subsets = {"all": Subset.objects.create(dataset=ds, slug="all", name="All RNAs", order=0)}
        for k, (s, label, _, _) in enumerate(BINS):
            subsets[s] = Subset.objects.create(dataset=ds, slug=s, name=label, order=k + 1)
        subsets["pseudoknotted"] = Subset.objects.create(
            dataset=ds, slug="pseudoknotted", name="Pseudoknotted", order=4
        )
        for k, label in enumerate(FAMILY_LABELS[: FAMILY_SUBSETS.get(slug, 0)]):
            subsets[label] = Subset.objects.create(
                dataset=ds, slug=f"family-{family_slug(label)}", name=label, order=5 + k
            )
        lengths = _lengths(rng, size, pdb)
        families = np.where(rng.random(size) < 0.2, -1, rng.integers(0, len(FAMILY_LABELS), size))
        pk = rng.random(size) < 0.08
        n_pairs = np.minimum((lengths * rng.uniform(0.18, 0.36, size)).astype(int), lengths // 2 - 1).clip(0)
        ids = np.arange(next_id, next_id + size)
        next_id += size
        week = np.sort(rng.integers(0, WEEKS, size)) if pdb else None
        start = now.date() - dt.timedelta(weeks=WEEKS)
        bases = np.array(list("ACGU"))

        def target_rows() -> Iterator[tuple]:
            for k in range(size):
                fam = FAMILY_LABELS[families[k]] if families[k] >= 0 else ""
                seq = "".join(bases[rng.integers(0, 4, lengths[k])])
                code = f"{k % 9 + 1}{chr(65 + k // 9 % 26)}{chr(65 + k // 234 % 26)}{k // 6084 % 10}"
                yield (
                    ids[k],
                    ds.pk,
                    f"{code}_{k // 60840 + 1}" if pdb else f"{slug.upper()}_{k + 1:06d}",
                    seq,
                    int(lengths[k]),
                    "PDB" if pdb else name,
                    fam,
                    fam,
                    "dataset" if fam else "",
                    code if pdb else "",
                    "A" if pdb else "",
                    start + dt.timedelta(weeks=int(week[k])) if pdb else None,
                    now - dt.timedelta(weeks=WEEKS - int(week[k])) if pdb else now - dt.timedelta(days=3650),
                )

        target_copy.copy(target_rows())
        ref_copy.copy(
            (
                int(ids[k]),
                d,
                _pairs_text(int(n_pairs[k]) - (d == "standard") * int(n_pairs[k] // 10), int(lengths[k])),
                int(n_pairs[k]) - (d == "standard") * int(n_pairs[k] // 10),
                bool(pk[k]),
                False,
                [],
            )
            for k in range(size)
            for d in definitions
        )

        def links() -> Iterator[tuple]:
            for k in range(size):
                yield subsets["all"].pk, int(ids[k])
                for s, _, low, high in BINS:
                    if low <= lengths[k] <= high:
                        yield subsets[s].pk, int(ids[k])
                if pk[k]:
                    yield subsets["pseudoknotted"].pk, int(ids[k])
                fam = FAMILY_LABELS[families[k]] if families[k] >= 0 else ""
                if fam in subsets:
                    yield subsets[fam].pk, int(ids[k])

        link_copy.copy(links())
        out.append(
            {
                "dataset": ds,
                "ids": ids,
                "lengths": lengths,
                "n_pairs": n_pairs,
                "definitions": definitions,
                "static": not pdb,
            }
        )
    _reset_sequences(Target, ReferenceStructure)
    return out


def _methods(rng: np.random.Generator, n: int) -> list[dict]:
    """Methods with their versions: ``[{"version", "quality", "limit", "done", "old"}]``."""
    rows = []
    for k in range(n):
        limit = 1000 if k % 2 else 0
        method = Method.objects.create(
            name=f"ScaleFold{k + 1:03d}",
            description="A synthetic method.",
            citation=f"Doe J. ScaleFold{k + 1:03d} (20{10 + k % 16}).",
        )
        quality = float(rng.uniform(0.35, 0.85))
        spec = {
            "name": method.name,
            "program": method.name.lower(),
            "version": "2.0",
            "argv": [method.name.lower(), "{input}"],
            "input_kind": "single",
            "max_length": limit,
            "time_limit_s": 600.0,
            "memory_limit_mb": 2048,
        }
        done = 1.0 if k < n - FILLING else float(rng.uniform(0.1, 0.9))
        if k < OLD_VERSIONS:
            old = MethodVersion.objects.create(
                method=method,
                version="1.0",
                program=spec["program"],
                spec={**spec, "version": "1.0"},
                fingerprint=f"old-{k}",
                is_current=False,
                approved_at=timezone.now(),
            )
            rows.append({"version": old, "quality": quality * 0.9, "limit": limit, "done": 1.0, "old": True})
        current = MethodVersion.objects.create(
            method=method,
            version="2.0",
            program=spec["program"],
            spec=spec,
            fingerprint=f"cur-{k}",
            is_current=True,
            approved_at=timezone.now(),
        )
        rows.append({"version": current, "quality": quality, "limit": limit, "done": done, "old": False})
    return rows


FAIL_STATES = (("failed", 0.03), ("timeout", 0.02), ("unparsable", 0.003), ("infrastructure_error", 0.002))


def build_scale_data(*, methods: int, targets: int, seed: int = 28, progress=None) -> dict:
    """Write the whole database (see the module docstring); returns the row counts."""
    rng = np.random.default_rng(seed)
    datasets = _datasets(rng, targets)
    versions = _methods(rng, methods)
    pred_copy = Copier(
        Prediction,
        [
            "id",
            "method_version_id",
            "target_id",
            "status",
            "pairs",
            "runtime_s",
            "queued_at",
            "started_at",
            "finished_at",
            "schedule_rank",
        ],
    )
    metric_fields = [
        f.attname
        for f in Score._meta.concrete_fields
        if isinstance(f, djf.FloatField) and f.attname not in {"mcc", "sensitivity", "ppv", "f1"}
    ]
    score_copy = Copier(
        Score,
        [
            "prediction_id",
            "definition",
            "tp",
            "fn",
            "fp",
            "fp_inconsistent",
            "fp_contradicting",
            "fp_compatible",
            "tn",
            "mcc",
            "sensitivity",
            "ppv",
            "f1",
            *metric_fields,
        ],
    )
    now = timezone.now()
    next_id = 1
    n_pred = n_score = 0
    rank = 0
    for v, plan in enumerate(versions):
        version = plan["version"]
        for ds in datasets:
            if plan["old"] and not ds["static"]:
                continue
            size = len(ds["ids"])
            lengths, n_pairs = ds["lengths"], ds["n_pairs"]
            u = rng.random(size)
            status = np.full(size, "ok", dtype=object)
            edge = 0.0
            for name, share in FAIL_STATES:
                status[(u >= edge) & (u < edge + share)] = name
                edge += share
            if plan["limit"]:
                status[lengths > plan["limit"]] = "too_long"
            if plan["done"] < 1.0:
                waiting = rng.random(size) >= plan["done"]
                status[waiting] = "queued"
                status[waiting & (rng.random(size) < 0.002)] = "running"
            sens = np.clip(rng.beta(plan["quality"] * 6, (1 - plan["quality"]) * 6, size), 0, 1)
            tp = np.round(sens * n_pairs).astype(int)
            predicted = np.maximum(tp, np.round(n_pairs * rng.uniform(0.7, 1.3, size)).astype(int))
            # finished over ten years, a few hundred in the last quarter hour (the measured throughput)
            age_s = rng.uniform(0, 3650 * 86400, size) * (rng.random(size) > 0.0005)
            age_s = np.where(age_s == 0, rng.uniform(1, 900, size), age_s)
            ids = np.arange(next_id, next_id + size)
            next_id += size

            def rows() -> Iterator[tuple]:
                nonlocal rank
                for k in range(size):
                    st = status[k]
                    finished = now - dt.timedelta(seconds=float(age_s[k]))
                    unfinished = st in ("queued", "running")
                    if unfinished:
                        rank += 1
                    yield (
                        int(ids[k]),
                        version.pk,
                        int(ds["ids"][k]),
                        st,
                        _pairs_text(int(predicted[k]), int(lengths[k])) if st == "ok" else "",
                        None if unfinished else round(float(lengths[k]) / 200.0, 2),
                        finished - dt.timedelta(seconds=5),
                        finished if st != "queued" else None,
                        None if unfinished else finished,
                        rank if unfinished else 0,
                    )

            n_pred += pred_copy.copy(rows())
            ok = np.flatnonzero(status == "ok")
            length = lengths[ok].astype(np.int64)
            candidates = length * (length - 1) // 2

            def scores() -> Iterator[tuple]:
                for d in ds["definitions"]:
                    ref = n_pairs[ok] - (d == "standard") * (n_pairs[ok] // 10)
                    t = np.minimum(tp[ok], ref)
                    fp = predicted[ok] - t
                    fn = ref - t
                    sn = np.where(ref > 0, t / np.maximum(ref, 1), 0.0)
                    ppv = np.where(predicted[ok] > 0, t / np.maximum(predicted[ok], 1), 0.0)
                    mcc = np.sqrt(sn * ppv)
                    f1 = np.where(sn + ppv > 0, 2 * sn * ppv / np.maximum(sn + ppv, 1e-12), 0.0)
                    tn = candidates - t - fn - fp
                    extra = [round(float(x), 4) for x in mcc]
                    for j, k in enumerate(ok):
                        fpk = int(fp[j])
                        yield (
                            int(ids[k]),
                            d,
                            int(t[j]),
                            int(fn[j]),
                            fpk,
                            fpk // 3,
                            fpk // 4,
                            fpk - fpk // 3 - fpk // 4,
                            int(max(tn[j], 0)),
                            extra[j],
                            round(float(sn[j]), 4),
                            round(float(ppv[j]), 4),
                            round(float(f1[j]), 4),
                            *([extra[j]] * len(metric_fields)),
                        )

            n_score += score_copy.copy(scores())
        if progress is not None:
            progress(v + 1, len(versions))
    _reset_sequences(Prediction, Score)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    return {
        "targets": sum(len(d["ids"]) for d in datasets),
        "predictions": n_pred,
        "scores": n_score,
        "versions": len(versions),
        "subsets": Subset.objects.count(),
    }
