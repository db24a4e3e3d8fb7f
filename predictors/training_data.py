"""A method version's declared training data, in one form for pages and the leakage-aware ranking.

The declaration of a version is the staff-edited :class:`~predictors.models.TrainingDeclaration` when there is
one, else what its spec declares: catalogue keys of :data:`predictors.catalogue.training.SOURCES` (each with
its families, the CompaRNA datasets it contains and the sets that are not available locally) or, for a method
registered by its owner, free text. Free text names families only where every line is a family name
(:func:`comparna.rna.families.canonical_family`); otherwise the declaration cannot be used for the leakage
analysis and says so. Nothing is guessed: no statement at all is "training data undeclared".
"""

from __future__ import annotations

from dataclasses import dataclass, field

from comparna.rna.families import by_label, canonical_family
from predictors.catalogue.training import SOURCES

__all__ = ["ANY_FAMILY", "Declaration", "declaration_from_keys", "declaration_of", "training_section"]

#: The family wildcard: the training sets hold RNAs of any family.
ANY_FAMILY = "*"


@dataclass(frozen=True)
class Declaration:
    """One version's declared training data.

    ``usable`` is False when there is nothing to compare targets with (undeclared, or free text that names
    no family); ``reason`` then says why, in the words the pages show.
    """

    declared: bool
    sources: tuple[dict, ...] = ()
    families: frozenset[str] = frozenset()
    datasets: tuple[str, ...] = ()
    unavailable: tuple[str, ...] = ()
    cutoff: str | None = None
    complete: bool = True
    citation: str = ""
    edited_by_staff: bool = False
    usable: bool = True
    reason: str = ""
    free_text: tuple[str, ...] = field(default=())

    @property
    def any_family(self) -> bool:
        return ANY_FAMILY in self.families

    def as_dict(self) -> dict:
        """JSON form (stored with the unseen ranking's inputs and shown on pages)."""
        return {
            "declared": self.declared,
            "usable": self.usable,
            "reason": self.reason,
            "families": sorted(self.families),
            "datasets": list(self.datasets),
            "unavailable": list(self.unavailable),
            "cutoff": self.cutoff,
            "complete": self.complete,
            "edited_by_staff": self.edited_by_staff,
            "sources": [s["name"] for s in self.sources],
        }


UNDECLARED = Declaration(declared=False, usable=False, reason="training data undeclared")


def declaration_from_keys(entries: tuple[str, ...] | list[str]) -> Declaration:
    """The declaration of a spec's ``training_data``: catalogue keys and/or free-text lines."""
    entries = tuple(e.strip() for e in entries if e and e.strip())
    if not entries:
        return UNDECLARED
    sources, families, datasets, unavailable, free = [], set(), [], [], []
    complete = True
    for entry in entries:
        source = SOURCES.get(entry)
        if source is None:
            free.append(entry)
            continue
        sources.append({"name": source.key, "kind": source.kind, "description": source.description,
                        "citation": source.citation, "complete": source.complete})
        families.update(source.families)
        datasets += [d for d in source.datasets if d not in datasets]
        unavailable += [u for u in source.unavailable if u not in unavailable]
        complete = complete and source.complete
    usable, reason = True, ""
    for text in free:
        label = canonical_family(text)
        if label:
            families.add(label)
        else:
            usable, reason = False, f"declared in free text that names no family ({text!r})"
            sources.append({"name": text, "kind": "", "description": text, "citation": "", "complete": False})
    citation = "; ".join(dict.fromkeys(s["citation"] for s in sources if s["citation"]))
    return Declaration(
        declared=True, sources=tuple(sources), families=frozenset(families), datasets=tuple(datasets),
        unavailable=tuple(unavailable), complete=complete and not free, citation=citation, usable=usable,
        reason=reason, free_text=tuple(free),
    )


def _from_row(row) -> Declaration:
    if not row.declared:
        return Declaration(declared=False, usable=False, reason="training data undeclared",
                           citation=row.citation, edited_by_staff=True)
    lines = tuple(line.strip() for line in row.sources.splitlines() if line.strip())
    families = frozenset(str(f) for f in row.families)
    bad = [f for f in families if f != ANY_FAMILY and by_label(f) is None and not f.startswith("Rfam:")]
    usable, reason = not bad, (f"unknown family labels {sorted(bad)}" if bad else "")
    return Declaration(
        declared=True,
        sources=tuple({"name": s, "kind": "", "description": s, "citation": "", "complete": row.complete}
                      for s in lines),
        families=families, datasets=tuple(row.datasets), unavailable=tuple(row.unavailable),
        cutoff=row.cutoff.isoformat() if row.cutoff else None, complete=row.complete, citation=row.citation,
        edited_by_staff=True, usable=usable, reason=reason,
    )


def declaration_of(version) -> Declaration:
    """The declaration of a :class:`~predictors.models.MethodVersion` (staff row, else its spec)."""
    row = getattr(version, "training_declaration", None) if version is not None else None
    if row is not None:
        return _from_row(row)
    if version is None:
        return UNDECLARED
    return declaration_from_keys(tuple(version.spec.get("training_data") or ()))


def training_section(method, user=None) -> dict:
    """What the method page shows: the current version's declaration and, for staff, the admin edit link."""
    from django.urls import reverse

    version = method.current_version
    declaration = declaration_of(version)
    edit_url = None
    if version is not None and user is not None and getattr(user, "is_staff", False):
        row = getattr(version, "training_declaration", None)  # RelatedObjectDoesNotExist is an AttributeError
        edit_url = (reverse("admin:predictors_trainingdeclaration_change", args=[row.pk]) if row is not None
                    else reverse("admin:predictors_trainingdeclaration_add") + f"?version={version.pk}")
    shown = {**declaration.as_dict(), "sources": list(declaration.sources),
             "any_family": declaration.any_family, "citation": declaration.citation}
    return {"version": version, "declaration": shown, "edit_url": edit_url}
