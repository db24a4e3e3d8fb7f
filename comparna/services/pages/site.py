"""The home and datasets pages: what changed this week, and each dataset with its subsets and downloads."""

from __future__ import annotations

from datetime import timedelta

from django.db.models import Count
from django.urls import reverse
from django.utils import timezone

from comparna.models import Dataset, DatasetEntry, ImportRun, Subset, Target
from comparna.services import tallies
from predictors.models import Method


def weekly_changes(*, days: int = 7, named: int = 3) -> dict:
    """New targets per dataset and new methods in the last ``days`` days, summarised: how many methods
    are new and the ``named`` newest of them (a page never lists a catalogue's worth of new methods)."""
    since = timezone.now() - timedelta(days=days)
    new_targets = list(
        Target.objects.filter(created_at__gte=since)
        .values("dataset__slug", "dataset__name")
        .annotate(n=Count("id"))
        .order_by("dataset__slug")
    )
    recent = Method.objects.public().filter(created_at__gte=since)
    n_methods = recent.count()
    newest = list(recent.order_by("-created_at", "name")[:named])
    return {"since": since, "targets": new_targets, "methods": newest, "n_methods": n_methods,
            "more_methods": max(0, n_methods - len(newest))}


def datasets_with_sizes() -> tuple[list[Dataset], dict[int, int]]:
    """Every dataset (by slug) with ``n_targets``, and each subset's size: counted in the background with the
    tallies (:func:`comparna.services.tallies.target_counts`), counted here before the first count."""
    counts = tallies.target_counts()
    if counts is None:
        sizes = dict(Subset.objects.annotate(n=Count("targets")).values_list("pk", "n"))
        return list(Dataset.objects.annotate(n_targets=Count("targets")).order_by("slug")), sizes
    datasets = list(Dataset.objects.order_by("slug"))
    for dataset in datasets:
        dataset.n_targets = counts["datasets"].get(dataset.pk, 0)
    return datasets, counts["subsets"]


def dataset_overview() -> list[dict]:
    """Datasets with their subsets, sizes, definitions, newest snapshot per subset, and downloads if any."""
    datasets, sizes = datasets_with_sizes()
    out = []
    for dataset in datasets:
        subsets = []
        for subset in dataset.subsets.all():
            subsets.append(
                {"subset": subset, "size": sizes.get(subset.pk, 0), "definitions": subset.definitions()}
            )
        out.append({"dataset": dataset, "subsets": subsets, "downloads": dataset_downloads(dataset)})
    return out


def dataset_downloads(dataset: Dataset) -> list[dict]:
    """Download links of the dataset's archived snapshots (the done ones among the 20 newest)."""
    from comparna.services.progress import archive_state

    links = []
    for snap in dataset.snapshots.all()[:20]:  # the reverse relation: pages do not import the snapshot app
        if not snap.is_done:
            continue
        url = reverse("snapshots:download", args=[dataset.slug, snap.number])
        state = archive_state(snap.contents)
        provisional = state is not None and not state["settled"]
        # a snapshot taken before the predictions settled says so wherever it is linked (issue 37)
        label = f"Snapshot {snap.number} ({snap.created_at:%Y-%m-%d}{', provisional' if provisional else ''})"
        links.append({"label": label, "url": url, "state": state})
    if links:
        links.append({"label": "All snapshots", "url": reverse("snapshots:list", args=[dataset.slug])})
    return links


#: Summary keys of an import run that are for the record, not for visitors (commands, checksums, sources).
PRIVATE_SUMMARY_KEYS = frozenset({"cdhit", "source_sha256", "declared_source", "source", "path", "command"})


#: An excluded entry's outcome in words ("several molecules", not multi_molecule: issue 37, no internal word).
EXCLUSION_WORDS = {str(value): str(label) for value, label in DatasetEntry.Outcome.choices}


def import_outcome(run: ImportRun) -> str:
    """One readable line of an import run's summary: counts only. Lists become their length, dicts of counts
    a short "name n" list, and text (commands, paths, checksums) is left to the admin pages."""
    parts = []
    for key, value in (run.summary or {}).items():
        label = str(key).replace("_", " ")
        if key in PRIVATE_SUMMARY_KEYS or isinstance(value, bool):
            continue
        if isinstance(value, int | float):
            parts.append(f"{label}: {value:g}" if isinstance(value, float) else f"{label}: {value}")
        elif isinstance(value, list | tuple):
            parts.append(f"{label}: {len(value)}")
        elif isinstance(value, dict):
            counts = [(str(k), v) for k, v in value.items() if isinstance(v, int) and not isinstance(v, bool)]
            if key == "excluded":  # entries left out, by their outcome: in words, never the stored code
                counts = [(EXCLUSION_WORDS.get(k, k), v) for k, v in counts]
            if counts:
                shown = ", ".join(f"{k} {v}" for k, v in sorted(counts, key=lambda kv: -kv[1])[:6])
                parts.append(f"{label}: {shown}{', …' if len(counts) > 6 else ''}")
    return "; ".join(parts)
