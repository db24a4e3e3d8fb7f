"""Writing the archive of a dataset: its targets, references, subsets, predictions, counts and rankings.

An archive holds lossless machine-readable files (``metadata/targets.json``, ``references/<def>/pairs.jsonl``,
``predictions/*``, ``scores/counts.csv``) from which :mod:`comparna.snapshots.restore` rebuilds the rows, and
convenience formats (FASTA, BPSEQ, CT, dot-bracket, per-target JSON pair lists) derived from the same rows.
The columns of every table are declared once in :mod:`comparna.snapshots.columns`; the pure
:mod:`comparna.snapshots.archive` writes the tar.gz and its manifest.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass, field
from pathlib import Path
from string import Template

from comparna.csv_cells import safe_writer
from comparna.models import Dataset, RankingSnapshot, ReferenceStructure, Score, Subset, Target
from comparna.rna.canonical import structure_from_text
from comparna.rna.formats import write_bpseq, write_ct, write_dot_bracket, write_fasta, write_pair_json
from comparna.rna.structure import StructureFormatError
from comparna.services.rankings import build_counts_table, inputs_hash, latest_snapshots
from comparna.snapshots import columns as C
from comparna.snapshots.archive import ArchiveInfo, SnapshotWriter
from comparna.snapshots.common import (
    FORMAT_NAME,
    FORMAT_VERSION,
    Progress,
    ProgressCounter,
    SnapshotError,
    safe_name,
    snapshot_root_name,
    software_versions,
)
from comparna.snapshots.contents import (
    current_predictions,
    dataset_state_hash,
    novelty_records,
    rfam_families,
)
from predictors.models import MethodVersion, Prediction

README = Template((Path(__file__).parent / "archive_readme.md").read_text(encoding="utf-8"))


@dataclass
class BuiltArchive:
    info: ArchiveInfo
    contents: dict
    state_hash: str


@dataclass
class _Export:
    """Everything the parts of one archive are written from, read once."""

    dataset: Dataset
    targets: list[Target]
    subsets: list[Subset]
    references: dict[str, list[ReferenceStructure]]
    #: pks of the predictions it exports, in archive order (rows are streamed when written: issue 28, a
    #: list of every prediction object of a large dataset took gigabytes)
    predictions: list[int]
    versions: dict[int, MethodVersion]
    rankings: list[RankingSnapshot]
    include_predictions: bool
    by_pk: dict[int, Target] = field(init=False)
    names: dict[str, str] = field(init=False)
    membership: dict[int, list[str]] = field(default_factory=dict)
    subset_targets: dict[int, list[str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.by_pk = {t.pk: t for t in self.targets}
        self.names = {t.source_id: safe_name(t.source_id) for t in self.targets}
        if len(set(self.names.values())) != len(self.names):
            raise SnapshotError("two targets map to the same file name")
        self.subset_targets = {s.pk: [] for s in self.subsets}
        slug_of = {s.pk: s.slug for s in self.subsets}
        members = Subset.targets.through.objects.filter(subset__dataset=self.dataset)
        for subset_id, target_id in members.values_list("subset_id", "target_id"):
            if target_id in self.by_pk:
                self.membership.setdefault(target_id, []).append(slug_of[subset_id])
                self.subset_targets[subset_id].append(self.by_pk[target_id].source_id)


def _collect(dataset: Dataset, include_predictions: bool) -> tuple[_Export, int]:
    """The rows of the archive, and the number of scores it will hold."""
    references: dict[str, list[ReferenceStructure]] = {d: [] for d in dataset.definitions}
    for ref in ReferenceStructure.objects.filter(target__dataset=dataset).order_by("target__source_id"):
        references.setdefault(ref.definition, []).append(ref)
    predictions, n_scores, version_ids = [], 0, set()
    if include_predictions:
        for pk, version_id in _ordered_predictions(dataset).values_list("pk", "method_version_id"):
            predictions.append(pk)
            version_ids.add(version_id)
        n_scores = Score.objects.filter(prediction__in=current_predictions(dataset)).count()
    export = _Export(
        dataset=dataset,
        targets=list(Target.objects.filter(dataset=dataset).order_by("source_id")),
        subsets=list(dataset.subsets.all()),
        references=references,
        predictions=predictions,
        versions=MethodVersion.objects.select_related("method").in_bulk(version_ids),
        rankings=latest_snapshots(dataset=dataset),
        include_predictions=include_predictions,
    )
    return export, n_scores


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
    ex, n_scores = _collect(dataset, include_predictions)
    n_refs = sum(len(v) for v in ex.references.values())
    counter = ProgressCounter(
        progress, 3 * len(ex.targets) + n_refs + len(ex.predictions) + n_scores + len(ex.rankings)
    )
    root = snapshot_root_name(dataset.slug, number)
    contents: dict = {
        "targets": len(ex.targets),
        "references": {d: len(v) for d, v in ex.references.items()},
        "subsets": {s.slug: len(ex.subset_targets[s.pk]) for s in ex.subsets},
        "methods": len(ex.versions),
        "predictions": len(ex.predictions),
        "scores": n_scores,
        "rankings": [],
        "multiplet_references": {},
        # predictions of public methods still to come when it was taken (0: the dataset was settled)
        "unfinished_predictions": unfinished_predictions(dataset),
    }
    meta = {
        "format": FORMAT_NAME,
        "format_version": FORMAT_VERSION,
        "number": number,
        "created_at": created_at.isoformat(),
        "state_hash": state,
        "dataset": {c.name: _json_value(c.cell(dataset)) for c in C.DATASET},
        "include_predictions": include_predictions,
        "software": software_versions(),
        "contents": contents,
    }
    with SnapshotWriter(path, root=root, mtime=created_at.timestamp()) as writer:
        writer.add_text("README.md", render_readme(dataset, meta, root))
        writer.add_text("snapshot.json", json.dumps(meta, indent=2, sort_keys=True) + "\n")
        _write_targets(writer, ex, counter)
        _write_subsets(writer, ex)
        contents["multiplet_references"] = _write_references(writer, ex, counter)
        if include_predictions:
            _write_methods(writer, ex)
            _write_predictions(writer, ex, counter)
            _write_scores(writer, ex, counter)
        contents["rankings"] = _write_rankings(writer, ex, counter)
        info = writer.close()
    counter.finish()
    contents["files"] = len(info.members) + 1
    contents["uncompressed_bytes"] = sum(m.size for m in info.members)
    return BuiltArchive(info, contents, state)


def _json_value(value):
    return list(value) if isinstance(value, tuple) else value


def _write_targets(writer: SnapshotWriter, ex: _Export, counter: ProgressCounter) -> None:
    """``targets.fasta`` and ``metadata/targets.{csv,json}``."""
    with writer.open_text("targets.fasta") as fh:
        for t in ex.targets:
            fh.write(write_fasta([(t.source_id, t.sequence)]))
            counter.step("targets")
    ref_summary: dict[int, dict[str, ReferenceStructure]] = {}
    for definition, refs in ex.references.items():
        for ref in refs:
            ref_summary.setdefault(ref.target_id, {})[definition] = ref
    families = rfam_families(ex.dataset)
    novelty = novelty_records(ex.dataset)
    with writer.open_text("metadata/targets.csv") as csv_fh, writer.open_text("metadata/targets.json") as js:
        header = C.names(C.TARGET)
        for d in ex.references:
            header += [f"{d}_pairs", f"{d}_pseudoknotted", f"{d}_multiplets"]
        header += ["subsets", "novelty_role", "novelty_similar_to", "novelty_reason"]
        out = safe_writer(csv_fh, lineterminator="\n")
        out.writerow(header)
        js.write("[\n")
        for n, t in enumerate(ex.targets):
            accession, family = families.get(t.pk, ("", ""))
            nov = novelty.get(t.pk, {})
            derived = {"rfam_accession": accession, "rfam_family": family}
            row = {c.name: c.cell(t) if c.field else derived[c.name] for c in C.TARGET}
            cells = list(row.values())
            refs_json = {}
            for d in ex.references:
                ref = ref_summary.get(t.pk, {}).get(d)
                cells += [ref.n_pairs, ref.pseudoknotted, ref.has_multiplets] if ref else ["", "", ""]
                if ref:
                    refs_json[d] = {
                        "n_pairs": ref.n_pairs,
                        "pseudoknotted": ref.pseudoknotted,
                        "has_multiplets": ref.has_multiplets,
                    }
            subsets = ex.membership.get(t.pk, [])
            cells += [";".join(subsets), *(nov.get(k, "") for k in ("role", "similar_to", "reason"))]
            out.writerow(cells)
            record = {
                **row,
                **{c.name: c.cell(t) for c in C.TARGET_JSON_ONLY},
                "references": refs_json,
                "subsets": subsets,
                "novelty": nov or None,
            }
            js.write(("," if n else "") + json.dumps(record, sort_keys=True, default=str) + "\n")
            counter.step("metadata")
        js.write("]\n")


def _write_subsets(writer: SnapshotWriter, ex: _Export) -> None:
    rows = []
    for s in ex.subsets:
        derived = {"ranked_definitions": s.definitions(), "targets": sorted(ex.subset_targets[s.pk])}
        rows.append({c.name: c.cell(s) if c.field else derived[c.name] for c in C.SUBSET})
    writer.add_text("metadata/subsets.json", json.dumps(rows, indent=1) + "\n")


def _write_references(writer: SnapshotWriter, ex: _Export, counter: ProgressCounter) -> dict[str, int]:
    """Per definition: the lossless ``pairs.jsonl`` and the convenience formats; returns multiplet counts."""
    multiplets: dict[str, int] = {}
    for definition, refs in ex.references.items():
        base = f"references/{definition}"
        with (
            writer.open_text(f"{base}/pairs.jsonl") as jl,
            writer.open_text(f"{base}/{definition}.dbn") as dbn,
        ):
            multiplets[definition] = 0
            for ref in refs:
                t = ex.by_pk[ref.target_id]
                structure = structure_from_text(t.length, ref.pairs)
                derived = {
                    "target": t.source_id,
                    "length": t.length,
                    "pairs": [list(p) for p in structure.sorted_pairs()],
                }
                record = {c.name: c.cell(ref) if c.field else derived[c.name] for c in C.REFERENCE}
                jl.write(json.dumps(record) + "\n")
                name = ex.names[t.source_id]
                if structure.has_multiplets:
                    multiplets[definition] += 1
                    writer.add_text(f"{base}/json/{name}.json", write_pair_json(structure, t.sequence) + "\n")
                else:
                    dbn.write(f">{t.source_id}\n{t.sequence}\n{write_dot_bracket(structure)}\n")
                    writer.add_text(f"{base}/bpseq/{name}.bpseq", write_bpseq(t.sequence, structure))
                    writer.add_text(f"{base}/ct/{name}.ct", write_ct(t.sequence, structure, name=t.source_id))
                counter.step(f"references ({definition})")
    return multiplets


def _write_methods(writer: SnapshotWriter, ex: _Export) -> None:
    versions = sorted(ex.versions.values(), key=lambda v: v.method.name)
    rows = []
    for v in versions:
        row = {c.name: c.cell(v.method) for c in C.METHOD}
        row.update({c.name: c.cell(v) for c in C.METHOD_VERSION})
        if redacted := C.redacted_fields(v.spec or {}):  # secrets never leave: the importer is told why
            row[C.SPEC_REDACTED] = redacted
        rows.append(row)
    writer.add_text("predictions/methods.json", json.dumps(rows, indent=1, sort_keys=True) + "\n")


def _dot_bracket_of(prediction: Prediction, target: Target) -> str:
    if not (prediction.pairs or prediction.status == Prediction.Status.OK):
        return ""
    try:
        return write_dot_bracket(structure_from_text(target.length, prediction.pairs))
    except StructureFormatError:
        return ""  # multiplets: only the pair list carries them


def _ordered_predictions(dataset: Dataset):
    return current_predictions(dataset).order_by("method_version__method__name", "target__source_id")


def _chunks(pks: list[int], size: int):
    """The collected primary keys in order, ``size`` at a time."""
    for start in range(0, len(pks), size):
        yield pks[start : start + size]


def _write_predictions(writer: SnapshotWriter, ex: _Export, counter: ProgressCounter) -> None:
    with writer.open_text("predictions/predictions.csv") as fh:
        out = safe_writer(fh, lineterminator="\n")
        out.writerow(C.names(C.PREDICTION))
        # in the collected order, a chunk of rows per query read whole before anything is written: no
        # statement stays open across the progress updates (on SQLite an open read beside a write is
        # "database is locked", and in rollback-journal mode it holds every worker's commit back)
        for chunk in _chunks(ex.predictions, 2000):
            rows = Prediction.objects.select_related("method_version__method").in_bulk(chunk)
            for pk in chunk:
                p = rows.get(pk)
                if p is None:
                    continue  # deleted since it was collected
                t = ex.by_pk[p.target_id]
                derived = {
                    "method": p.method_version.method.name,
                    "fingerprint": p.method_version.fingerprint,
                    "target": t.source_id,
                    "dot_bracket": _dot_bracket_of(p, t),
                }
                out.writerow([c.cell(p) if c.field else derived[c.name] for c in C.PREDICTION])
                counter.step("predictions")


def _write_scores(writer: SnapshotWriter, ex: _Export, counter: ProgressCounter) -> None:
    with writer.open_text("scores/counts.csv") as fh:
        out = safe_writer(fh, lineterminator="\n")
        out.writerow(C.names(C.SCORE))
        # The exported predictions' scores, a chunk of predictions per query (read whole before writing, as
        # the predictions are), in the predictions' order: chunks are runs of the collected order, sorted
        # within by the same keys, so their concatenation is the order of one query over them all.
        for chunk in _chunks(ex.predictions, 2000):
            rows = list(
                Score.objects.filter(prediction_id__in=chunk)
                .order_by(
                    "prediction__method_version__method__name", "prediction__target__source_id", "definition"
                )
                .values_list(
                    "prediction__method_version__method__name",
                    "prediction__method_version__fingerprint",
                    "prediction__target__source_id",
                    "definition",
                    *(c.field for c in C.SCORE_VALUES),
                )
            )
            for row in rows:
                key, values = row[: len(C.SCORE_KEY)], row[len(C.SCORE_KEY) :]
                out.writerow([*key, *(c.encode(v) for c, v in zip(C.SCORE_VALUES, values, strict=True))])
                counter.step("scores")


def _write_rankings(writer: SnapshotWriter, ex: _Export, counter: ProgressCounter) -> list[dict]:
    """The latest ranking of each subset × definition, and whether it was computed on exactly this data."""
    listed = []
    for ranking in ex.rankings:
        _, identity = build_counts_table(subset=ranking.subset, definition=ranking.definition)
        matches = ex.include_predictions and inputs_hash(identity, ranking.seed) == ranking.inputs_hash
        record = {
            "subset": ranking.subset.slug,
            "definition": ranking.definition,
            "computed_at": ranking.computed_at.isoformat(),
            "inputs_hash": ranking.inputs_hash,
            "matches_snapshot_data": matches,
        }
        name = f"rankings/{safe_name(ranking.subset.slug)}__{ranking.definition}.json"
        full = {**record, "seed": ranking.seed, "inputs": ranking.inputs, "report": ranking.report}
        writer.add_text(name, json.dumps(full, indent=1, sort_keys=True) + "\n")
        listed.append({"ranking": ranking.pk, **record})
        counter.step("rankings")
    return listed


def render_readme(dataset: Dataset, meta: dict, root: str) -> str:
    """The archive's README.md (its text is ``archive_readme.md`` beside this module)."""
    number = (
        f"snapshot {meta['number']}" if meta["number"] else "an on-demand export (not a numbered snapshot)"
    )
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
    return README.substitute(
        name=dataset.name,
        slug=dataset.slug,
        number=number,
        created_at=meta["created_at"],
        version=dataset.version,
        description=dataset.description,
        root=root,
        definitions=", ".join(dataset.definitions) or "none",
        filters=filters,
        software="\n".join(f"- {k} {v}" for k, v in meta["software"].items()),
    )


def unfinished_predictions(dataset: Dataset) -> int:
    """Predictions of public methods' current versions on ``dataset`` still queued, running or awaiting an
    upload: a snapshot taken with some is provisional (its page and the archive's contents say how many)."""
    unfinished = (Prediction.Status.QUEUED, Prediction.Status.RUNNING, Prediction.Status.AWAITING)
    return (
        Prediction.objects.public()
        .filter(target__dataset=dataset, method_version__is_current=True, status__in=unfinished)
        .count()
    )
