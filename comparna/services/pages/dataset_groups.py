"""Datasets grouped on the home page and the rankings index (issue 38): the PDB-derived sets are listed after
the others under their own heading, each with what it is and what it is not (from its declaration, stored
in ``Dataset.provenance`` by the import)."""

from __future__ import annotations

from collections.abc import Iterable

from comparna.models import Dataset

__all__ = ["PDB_DERIVED_INTRO", "dataset_group", "grouped"]

#: Shown once above the PDB-derived sets.
PDB_DERIVED_INTRO = (
    "Static test sets built from PDB 3D structures by other groups (the SPOT-RNA test sets, RNA3DB-2D), "
    "bpRNA TS0, and high-resolution structures annotated by this project's own pipeline. None is blind: "
    "the structures were public before the methods were trained. Labels are DSSR's (SPOT-RNA), RNApolis' "
    "(RNA3DB-2D; the high-resolution set, annotated here) or bpRNA's."
)


def dataset_group(dataset: Dataset) -> dict:
    """``{"group", "what_it_is", "what_it_is_not"}`` of a dataset declared in a group, else ``{}``."""
    provenance = dataset.provenance if isinstance(dataset.provenance, dict) else {}
    group = provenance.get("group") or ""
    if not group:
        return {}
    return {
        "group": group,
        "what_it_is": provenance.get("what_it_is", ""),
        "what_it_is_not": provenance.get("what_it_is_not", ""),
        "group_intro": PDB_DERIVED_INTRO if group == "PDB-derived" else "",
    }


def grouped(datasets: Iterable[Dataset]) -> list[Dataset]:
    """The datasets without a group first, then each group's, each part in the given order."""
    items = list(datasets)
    return sorted(items, key=lambda d: (dataset_group(d).get("group", ""), items.index(d)))
