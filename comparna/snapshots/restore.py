"""Loading a snapshot archive into an empty CompaRNA, and checking that its rankings are reproduced exactly.

Each archive member is read by the reader its name matches (:data:`READERS`), with the columns declared in
:mod:`comparna.snapshots.columns`; members are read in archive order, all in one transaction.

An archive is untrusted input: anyone can edit one and write a matching MANIFEST. So every method spec is
validated and its fingerprint recomputed (an edited command with the old fingerprint is refused), and every
imported method version is *not runnable* (``MethodVersion.runnable``): it is never queued or run until the
method is registered again through the admin (with a test run) or the catalogue. Methods keep their archived
``active`` flag, which only decides what is ranked, so the archived rankings are reproduced. Any problem is a
:class:`SnapshotError` naming the member, and nothing is stored.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from django.core.exceptions import ValidationError
from django.db import DatabaseError, transaction
from django.utils import timezone

from comparna.bounded import TooLarge, read_capped
from comparna.models import Dataset, ReferenceStructure, Score, Subset, Target
from comparna.rna.canonical import structure_to_text
from comparna.rna.structure import Structure
from comparna.services.rankings import rank_subset
from comparna.snapshots import columns as C
from comparna.snapshots.archive import ArchiveError, iter_members, verify_archive
from comparna.snapshots.common import FORMAT_NAME, FORMAT_VERSION, Progress, ProgressCounter, SnapshotError
from predictors.models import Method, MethodVersion, Prediction

BATCH = 2000
#: Largest JSON member read whole (targets, subsets, methods, a ranking).
MAX_JSON_BYTES = 256 * 2**20


def database_is_empty() -> bool:
    return not any(m.objects.exists() for m in (Dataset, Target, Method, MethodVersion, Prediction))


@dataclass
class ImportResult:
    dataset: Dataset
    counts: dict[str, int] = field(default_factory=dict)
    rankings: list[dict] = field(default_factory=list)


@dataclass
class _Restore:
    """What the readers have restored so far (rows later members refer to by name)."""

    result: ImportResult | None = None
    targets: dict[str, Target] = field(default_factory=dict)
    versions: dict[str, MethodVersion] = field(default_factory=dict)
    predictions: dict[tuple[str, str], int] = field(default_factory=dict)

    @property
    def dataset(self) -> Dataset:
        assert self.result is not None
        return self.result.dataset

    def count(self, key: str, n: int) -> None:
        self.result.counts[key] = self.result.counts.get(key, 0) + n


def _csv_rows(fh: IO[bytes]) -> Iterator[dict]:
    return csv.DictReader(io.TextIOWrapper(fh, encoding="utf-8", newline=""))


def _json(fh: IO[bytes], name: str, kind: type = list):
    """A JSON member read whole (capped), checked to be a ``kind``."""
    try:
        value = json.loads(read_capped(fh, MAX_JSON_BYTES, name))
    except json.JSONDecodeError as exc:
        raise SnapshotError(f"{name}: not valid JSON ({exc.msg}, line {exc.lineno})") from None
    if not isinstance(value, kind):
        raise SnapshotError(f"{name}: expected a JSON {kind.__name__}, found {type(value).__name__}")
    return value


def _target(state: _Restore, name: str, source_id, what: str) -> Target:
    try:
        return state.targets[source_id]
    except (KeyError, TypeError):
        raise SnapshotError(
            f"{name}: {what} names target {source_id!r}, which metadata/targets.json does not hold"
        ) from None


def _version(state: _Restore, name: str, method, fingerprint=None) -> MethodVersion:
    version = state.versions.get(method) if isinstance(method, str) else None
    if version is None:
        raise SnapshotError(f"{name}: names method {method!r}, which predictions/methods.json does not hold")
    if fingerprint not in (None, "", version.fingerprint):
        raise SnapshotError(
            f"{name}: a row of method {method!r} has fingerprint {fingerprint!r}, not its version's "
            f"{version.fingerprint!r}"
        )
    return version


def _read_meta(state: _Restore, name: str, fh: IO[bytes]) -> None:
    meta = _json(fh, name, dict)
    if meta.get("format") != FORMAT_NAME or meta.get("format_version") != FORMAT_VERSION:
        raise SnapshotError(f"not a {FORMAT_NAME} v{FORMAT_VERSION} archive")
    state.result = ImportResult(Dataset.objects.create(**C.restore(C.DATASET, meta["dataset"])))


def _read_targets(state: _Restore, name: str, fh: IO[bytes]) -> None:
    records = _json(fh, name)
    rows = Target.objects.bulk_create(
        [Target(dataset=state.dataset, **C.restore((*C.TARGET, *C.TARGET_JSON_ONLY), r)) for r in records],
        batch_size=BATCH,
    )
    if any(t.pk is None for t in rows):  # backends without RETURNING
        rows = list(Target.objects.filter(dataset=state.dataset))
    state.targets = {t.source_id: t for t in rows}
    state.count("targets", len(state.targets))


def _read_subsets(state: _Restore, name: str, fh: IO[bytes]) -> None:
    through = Subset.targets.through
    members = []
    for s in _json(fh, name):
        subset = Subset.objects.create(dataset=state.dataset, **C.restore(C.SUBSET, s))
        what = f"subset {s.get('slug')!r}"
        members += [
            through(subset_id=subset.pk, target_id=_target(state, name, sid, what).pk) for sid in s["targets"]
        ]
    through.objects.bulk_create(members, batch_size=BATCH)
    state.count("subset_members", len(members))


def _read_references(state: _Restore, name: str, fh: IO[bytes]) -> None:
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
                target=_target(state, name, r["target"], "a reference"),
                definition=definition,
                pairs=structure_to_text(structure),
                **C.restore(C.REFERENCE, r),
            )
        )
    ReferenceStructure.objects.bulk_create(refs, batch_size=BATCH)
    state.count(f"references_{definition}", len(refs))


def _read_methods(state: _Restore, name: str, fh: IO[bytes]) -> None:
    from predictors.core.spec import PredictorSpec
    from predictors.services import spec_to_json

    for m in _json(fh, name):
        if not isinstance(m, dict):
            raise SnapshotError(f"{name}: a method record is not an object")
        label = f"{name}: method {m.get('name')!r}"
        fields, version_fields = C.restore(C.METHOD, m), C.restore(C.METHOD_VERSION, m)
        try:
            spec = PredictorSpec.from_dict(version_fields["spec"])
            problems = spec.problems()
        except (TypeError, ValueError, AttributeError) as exc:
            raise SnapshotError(f"{label}: its spec is not a predictor spec ({exc})") from None
        if problems:
            raise SnapshotError(f"{label}: invalid spec: " + "; ".join(problems))
        if spec.name != fields["name"] or spec.program != version_fields["program"]:
            raise SnapshotError(f"{label}: name or program differ from its spec's")
        redacted = m.get(C.SPEC_REDACTED) or []
        if not isinstance(redacted, list) or not set(redacted) <= set(C.SPEC_REDACTIONS):
            raise SnapshotError(f"{label}: {C.SPEC_REDACTED} names fields that are never redacted")
        # A redacted endpoint (its secrets stripped on export) no longer gives the stored fingerprint; such a
        # version is never run anyway (runnable=False below), its fingerprint only links its predictions.
        if not redacted and version_fields["fingerprint"] != spec.fingerprint():
            raise SnapshotError(
                f"{label}: fingerprint {version_fields['fingerprint']!r} is not its spec's "
                f"({spec.fingerprint()}): the spec was changed after the snapshot was made"
            )
        method = Method.objects.create(**fields)
        state.versions[m["name"]] = MethodVersion.objects.create(
            method=method,
            is_current=True,
            runnable=False,  # from an archive: never run until registered again (see the module docstring)
            approved_at=timezone.now(),  # a snapshot holds only public results (of approved versions)
            **{**version_fields, "spec": spec_to_json(spec)},
        )
    state.count("methods", len(state.versions))


def _read_predictions(state: _Restore, name: str, fh: IO[bytes]) -> None:
    rows = [
        Prediction(
            method_version=_version(state, name, r.get("method"), r.get("fingerprint")),
            target=_target(state, name, r.get("target"), "a prediction"),
            **C.restore(C.PREDICTION, r),
        )
        for r in _csv_rows(fh)
    ]
    Prediction.objects.bulk_create(rows, batch_size=BATCH)
    for pk, method, target in Prediction.objects.filter(target__dataset=state.dataset).values_list(
        "pk", "method_version__method__name", "target__source_id"
    ):
        state.predictions[(method, target)] = pk
    state.count("predictions", len(rows))


def _read_scores(state: _Restore, name: str, fh: IO[bytes]) -> None:
    rows = []
    for r in _csv_rows(fh):
        _version(state, name, r.get("method"), r.get("fingerprint"))
        prediction_id = state.predictions.get((r.get("method"), r.get("target")))
        if prediction_id is None:
            raise SnapshotError(
                f"{name}: counts of {r.get('method')!r} on {r.get('target')!r}, a prediction "
                "predictions/predictions.csv does not hold"
            )
        rows.append(Score(prediction_id=prediction_id, **C.restore(C.SCORE, r)))
        if len(rows) >= BATCH:
            Score.objects.bulk_create(rows)
            state.count("scores", len(rows))
            rows = []
    Score.objects.bulk_create(rows)
    state.count("scores", len(rows))


def _read_ranking(state: _Restore, name: str, fh: IO[bytes]) -> None:
    ranking = _json(fh, name, dict)
    for key, kind in (("subset", str), ("definition", str), ("seed", int), ("inputs_hash", str)):
        if not isinstance(ranking.get(key), kind) or isinstance(ranking.get(key), bool):
            raise SnapshotError(f"{name}: {key!r} missing or not a {kind.__name__}")
    state.result.rankings.append(ranking)


Reader = Callable[[_Restore, str, IO[bytes]], None]
#: Archive member name -> its reader. Members before ``snapshot.json`` and members no reader matches (the
#: convenience formats, README, MANIFEST) are skipped.
READERS: tuple[tuple[re.Pattern[str], Reader], ...] = (
    (re.compile(r"snapshot\.json"), _read_meta),
    (re.compile(r"metadata/targets\.json"), _read_targets),
    (re.compile(r"metadata/subsets\.json"), _read_subsets),
    (re.compile(r"references/[^/]+/pairs\.jsonl"), _read_references),
    (re.compile(r"predictions/methods\.json"), _read_methods),
    (re.compile(r"predictions/predictions\.csv"), _read_predictions),
    (re.compile(r"scores/counts\.csv"), _read_scores),
    (re.compile(r"rankings/.*\.json"), _read_ranking),
)


def import_snapshot(
    *, path: Path, progress: Progress | None = None, expected_sha256: str | None = None
) -> ImportResult:
    """Load a verified snapshot archive into an empty CompaRNA (all or nothing).

    Creates the dataset, subsets, targets, references, methods with their versions (not runnable), predictions
    and counts. Rankings are not imported: they are returned (``result.rankings``) so that they can be
    recomputed from the imported counts and compared (:func:`reproduce_rankings`). ``expected_sha256`` pins
    the archive (e.g. as published beside the download).

    Raises
    ------
    SnapshotError
        For an archive that fails verification (or has another checksum than ``expected_sha256``), a
        database that is not empty, and any malformed, inconsistent or invalid content (naming the member);
        nothing is stored then.
    """
    report = verify_archive(path, expected_sha256=expected_sha256)
    if not report.ok:
        raise SnapshotError("archive failed verification: " + "; ".join(report.problems[:5]))
    if not database_is_empty():
        raise SnapshotError(
            "this CompaRNA is not empty (it has datasets, targets, methods or predictions); "
            "import_snapshot only loads into an empty database"
        )
    counter = ProgressCounter(progress, report.files)
    state = _Restore()
    member = "(archive)"
    try:
        with transaction.atomic():
            for name, fh in iter_members(path):
                member = name
                counter.step("importing")
                reader = next((read for pattern, read in READERS if pattern.fullmatch(name)), None)
                if reader is not None and (state.result is not None or reader is _read_meta):
                    reader(state, name, fh)
            if state.result is None:
                raise SnapshotError("snapshot.json missing from the archive")
    except SnapshotError:
        raise
    except (ArchiveError, TooLarge) as exc:
        raise SnapshotError(f"{member}: {exc}") from None
    except KeyError as exc:
        raise SnapshotError(f"{member}: a record lacks the field {exc}") from None
    except (ValueError, TypeError, AttributeError, UnicodeDecodeError, csv.Error, ValidationError) as exc:
        raise SnapshotError(f"{member}: malformed content ({type(exc).__name__}: {exc})") from None
    except DatabaseError as exc:
        raise SnapshotError(f"{member}: content the database refuses ({exc})".strip()) from None
    counter.finish()
    return state.result


def reproduce_rankings(*, dataset: Dataset, rankings: list[dict]) -> list[dict]:
    """Rank each archived (subset, definition) again with its seed; compare with the archived report.

    Returns one row per archived ranking: ``comparable`` (the archive holds exactly the data it was computed
    on) and ``identical`` (the recomputed report equals the archived one, compared as canonical JSON).
    """
    out = []
    for archived in rankings:
        subset = Subset.objects.filter(dataset=dataset, slug=archived["subset"]).first()
        if subset is None:
            raise SnapshotError(f"an archived ranking names subset {archived['subset']!r}, not imported")
        snap, _ = rank_subset(subset=subset, definition=archived["definition"], seed=archived["seed"])
        out.append(
            {
                "subset": archived["subset"],
                "definition": archived["definition"],
                "seed": archived["seed"],
                "comparable": snap.inputs_hash == archived["inputs_hash"],
                "identical": _canonical(snap.report) == _canonical(archived["report"]),
                "ranking": snap.pk,
            }
        )
    return out


def _canonical(obj) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"))
