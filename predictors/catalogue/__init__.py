"""The built-in predictor catalogue: one :class:`PredictorSpec` per method and variant.

Variants are made by a factory per program (:mod:`predictors.catalogue._factory`): what a program's
variants share is written once, each variant adds its name, arguments and limits. The families live in
their own modules (``vienna``, ``linear``, ``contrafold``, ``others``, ``venv_methods``, ``comparative``).

Every method listed here was run on this machine through the sandbox (the contract test in
``tests/unit/test_predictor_catalogue.py`` runs each one on a real tRNA). Versions are read from the
installed distributions at import time, so the recorded version is the one that actually runs; a program
that is not installed (an optional build step that was skipped) is left out rather than listed broken.
Length limits keep slow methods from blocking the queue (measured timings beside each family).
"""

from __future__ import annotations

from predictors.catalogue._factory import NOT_INSTALLED
from predictors.catalogue.comparative import comparative_variants
from predictors.catalogue.contrafold import contrafold_variants
from predictors.catalogue.linear import linearfold_variants, linearpartition_variants
from predictors.catalogue.others import other_variants
from predictors.catalogue.training import check_sources
from predictors.catalogue.venv_methods import venv_variants
from predictors.catalogue.vienna import rnafold_variants, rnapkplex_variants, sampling_variants
from predictors.core.spec import InvalidSpec, PredictorSpec, check_unique_names

CATALOGUE: tuple[PredictorSpec, ...] = tuple(
    spec
    for spec in (
        *rnafold_variants(),
        *sampling_variants(),
        *rnapkplex_variants(),
        *linearfold_variants(),
        *linearpartition_variants(),
        *contrafold_variants(),
        *other_variants(),
        *venv_variants(),
        *comparative_variants(),
    )
    if spec.version != NOT_INSTALLED
)


def load_catalogue(specs: tuple[PredictorSpec, ...] | None = None) -> tuple[PredictorSpec, ...]:
    """Validated catalogue; raises ``ValueError`` on a duplicate name and ``InvalidSpec`` on a bad spec
    (including a training-data key that :data:`predictors.catalogue.training.SOURCES` does not know)."""
    specs = CATALOGUE if specs is None else tuple(specs)
    check_unique_names(specs)
    for spec in specs:
        spec.validate()
        problems = check_sources(spec.training_data)
        if problems:
            raise InvalidSpec(spec.name, problems)
    return specs


def get_spec(name: str) -> PredictorSpec:
    """The catalogue spec called ``name`` (``KeyError`` if none)."""
    for spec in CATALOGUE:
        if spec.name == name:
            return spec
    raise KeyError(name)
