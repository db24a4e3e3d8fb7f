"""The target browser: full-text search over id, class, source, organism and family; filters by dataset,
class, family, length range and pseudoknots; sortable columns. Works from the query string alone (no JS).

A target's *family* is ``Target.family`` (comparna.rna.families: its dataset's class mapped to a canonical
family, else its latest Rfam assignment), set at import and by the Rfam assignment.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from urllib.parse import urlencode

from django.db.models import Exists, F, OuterRef, Q, QuerySet

from comparna.models import Dataset, ReferenceStructure, Target
from comparna.params import ascii_int

#: Sort key -> model field (or annotation); the first is the default.
SORTS = {
    "id": "source_id",
    "dataset": "dataset__name",
    "length": "length",
    "class": "rna_class",
    "family": "family",
    "source": "source_database",
    "released": "release_date",
}
PSEUDOKNOT_CHOICES = (("", "any"), ("yes", "pseudoknotted"), ("no", "not pseudoknotted"))
MAX_TERMS = 8  # words of a search (each must match some field)


@dataclass(frozen=True)
class TargetQuery:
    """What the browser was asked, cleaned: unknown values are dropped and reported in ``problems``."""

    q: str = ""
    dataset: str = ""
    rna_class: str = ""
    family: str = ""
    min_length: int | None = None
    max_length: int | None = None
    pseudoknotted: str = ""
    sort: str = "id"
    direction: str = "asc"
    problems: tuple[str, ...] = field(default=())

    def params(self, **changes) -> str:
        """The query string of this query with ``changes`` (page numbers and sort links are built from it)."""
        values = {
            "q": self.q,
            "dataset": self.dataset,
            "class": self.rna_class,
            "family": self.family,
            "min_length": "" if self.min_length is None else str(self.min_length),
            "max_length": "" if self.max_length is None else str(self.max_length),
            "pseudoknotted": self.pseudoknotted,
            "sort": "" if self.sort == "id" else self.sort,
            "dir": "" if self.direction == "asc" else self.direction,
        }
        values.update({k: ("" if v is None else str(v)) for k, v in changes.items()})
        return urlencode({k: v for k, v in values.items() if v})

    @property
    def filtered(self) -> bool:
        return bool(
            self.q or self.dataset or self.rna_class or self.family or self.pseudoknotted
            or self.min_length is not None or self.max_length is not None
        )


def _length(raw: str, name: str, problems: list[str]) -> int | None:
    raw = raw.strip()
    if not raw:
        return None
    value = ascii_int(raw) if len(raw) <= 7 else None  # not isdigit(): it accepts "²", which int() refuses
    if value is None:
        problems.append(f"{name} must be a whole number of nucleotides (got {raw[:20]!r}); ignored")
    return value


def parse_query(params, *, dataset: str = "") -> TargetQuery:
    """A :class:`TargetQuery` from request GET parameters (``dataset`` fixes the dataset: its own page)."""
    problems: list[str] = []
    q = " ".join(params.get("q", "").split())[:200]
    sort = params.get("sort", "id")
    if sort not in SORTS:
        sort = "id"
    direction = "desc" if params.get("dir") == "desc" else "asc"
    pk = params.get("pseudoknotted", "")
    query = TargetQuery(
        q=q,
        dataset=dataset or params.get("dataset", "").strip()[:50],
        rna_class=params.get("class", "").strip()[:200],
        family=params.get("family", "").strip()[:100],
        min_length=_length(params.get("min_length", ""), "Minimum length", problems),
        max_length=_length(params.get("max_length", ""), "Maximum length", problems),
        pseudoknotted=pk if pk in ("yes", "no") else "",
        sort=sort,
        direction=direction,
    )
    if query.min_length is not None and query.max_length is not None and query.min_length > query.max_length:
        problems.append("the minimum length is above the maximum: no target can match")
    return replace(query, problems=tuple(problems))


def annotated_targets() -> QuerySet[Target]:
    """Every target with whether a reference of it is ``has_pseudoknot``."""
    return Target.objects.select_related("dataset").annotate(
        has_pseudoknot=Exists(ReferenceStructure.objects.filter(target=OuterRef("pk"), pseudoknotted=True)),
    )


def browse(query: TargetQuery) -> QuerySet[Target]:
    """The targets matching ``query``, in its order (ties broken by dataset and id)."""
    qs = annotated_targets()
    if query.dataset:
        qs = qs.filter(dataset__slug=query.dataset)
    if query.rna_class:
        qs = qs.filter(rna_class=query.rna_class)
    if query.family:
        qs = qs.filter(family=query.family)
    if query.min_length is not None:
        qs = qs.filter(length__gte=query.min_length)
    if query.max_length is not None:
        qs = qs.filter(length__lte=query.max_length)
    if query.pseudoknotted:
        qs = qs.filter(has_pseudoknot=query.pseudoknotted == "yes")
    for term in query.q.split()[:MAX_TERMS]:
        qs = qs.filter(
            Q(source_id__icontains=term)
            | Q(rna_class__icontains=term)
            | Q(source_database__icontains=term)
            | Q(organism__icontains=term)
            | Q(pdb_id__iexact=term)
            | Q(family__icontains=term)
        )
    key = SORTS[query.sort]
    order = F(key).desc(nulls_last=True) if query.direction == "desc" else F(key).asc(nulls_last=True)
    return qs.order_by(order, "dataset__slug", "source_id")


def facets(dataset: str = "") -> dict:
    """The choices of the filter form: datasets, classes and families present (in ``dataset`` if given)."""
    targets = Target.objects.all()
    if dataset:
        targets = targets.filter(dataset__slug=dataset)
    classes = sorted(set(targets.exclude(rna_class="").values_list("rna_class", flat=True).distinct()))
    families = set(targets.exclude(family="").values_list("family", flat=True).distinct())
    return {
        "datasets": list(Dataset.objects.order_by("name").values_list("slug", "name")),
        "classes": classes,
        "families": sorted(families, key=str.lower),
        "pseudoknot_choices": PSEUDOKNOT_CHOICES,
    }


def sort_links(query: TargetQuery) -> dict[str, dict]:
    """Per sortable column: the link that sorts by it (toggling the direction) and its ``aria-sort``."""
    out = {}
    for key in SORTS:
        current = query.sort == key
        direction = "desc" if current and query.direction == "asc" else "asc"
        out[key] = {
            "href": "?" + query.params(sort=key, dir=direction, page=None),
            "aria": ("ascending" if query.direction == "asc" else "descending") if current else "none",
        }
    return out
