"""Factories for model rows used by Django tests."""

from __future__ import annotations

import itertools

from django.utils import timezone

from comparna.models import Dataset, PairDefinition, ReferenceStructure, Subset, Target
from comparna.rna.canonical import structure_to_text
from comparna.rna.formats import parse_dot_bracket
from predictors.models import Method, MethodVersion, Prediction

_seq = itertools.count(1)


def make_dataset(slug: str = "testset", definitions=("extended",)) -> Dataset:
    dataset, _ = Dataset.objects.get_or_create(
        slug=slug, defaults={"name": slug, "kind": Dataset.Kind.STATIC, "definitions": list(definitions)}
    )
    Subset.objects.get_or_create(dataset=dataset, slug="all", defaults={"name": "All"})
    return dataset


def make_target(sequence: str, reference_db: str, *, dataset: Dataset | None = None,
                definition: str = PairDefinition.EXTENDED) -> Target:
    dataset = dataset or make_dataset()
    target = Target.objects.create(
        dataset=dataset, source_id=f"T{next(_seq):05d}", sequence=sequence, length=len(sequence)
    )
    structure = parse_dot_bracket(reference_db, length=len(sequence))
    ReferenceStructure.objects.create(
        target=target, definition=definition, pairs=structure_to_text(structure),
        n_pairs=len(structure.pairs), pseudoknotted=structure.is_pseudoknotted,
        has_multiplets=structure.has_multiplets,
    )
    dataset.subsets.get(slug="all").targets.add(target)
    return target


def make_method_version(name: str = "TestFold") -> MethodVersion:
    """A method with a real (valid) spec and its fingerprint, as registration would store it."""
    from predictors.core.spec import PredictorSpec
    from predictors.services import spec_to_json

    spec = PredictorSpec(name=name, program=name.lower(), version="1", argv=("/bin/echo", "{sequence}"))
    method, _ = Method.objects.get_or_create(name=name)
    version, _ = MethodVersion.objects.get_or_create(
        method=method, fingerprint=spec.fingerprint(),
        defaults={"version": "1", "program": spec.program, "spec": spec_to_json(spec), "is_current": True,
                  "approved_at": timezone.now()},  # as the catalogue and staff register one (issue 36)
    )
    return version


def make_prediction(version: MethodVersion, target: Target, predicted_db: str) -> Prediction:
    structure = parse_dot_bracket(predicted_db, length=target.length)
    return Prediction.objects.create(
        method_version=version, target=target, status=Prediction.Status.OK, pairs=structure_to_text(structure)
    )
