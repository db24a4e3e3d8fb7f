"""Downloads behind a comparison page: the pair's data as one zip (issue 29)."""

from __future__ import annotations

from django.http import HttpResponse
from django.views import View

from comparna.services.pages.common import report_value
from comparna.services.pages.comparison import comparison_csv
from comparna.services.pages.pair_zip import pair_zip
from comparna.snapshots.pairs import pair_csv_rows
from comparna.views.comparison import being_computed, compared_pair


class MethodComparisonZipView(View):
    """Everything behind a comparison page as one zip: per-target counts and scores, both methods'
    structures with the reference, and a README of the columns (the ranking snapshot's targets)."""

    def get(self, request, dataset: str, subset: str, definition: str, a: int, b: int):
        snap, ma, mb, comp = compared_pair(
            request, dataset=dataset, subset=subset, definition=definition, a=a, b=b
        )
        if comp is None:
            return being_computed(ma, mb)
        # the snapshot's own scored targets, else the live data (read by key, not the whole report)
        stored = report_value(snap, "target_sources") is not None
        ranking = snap if stored else None
        rows = pair_csv_rows(
            dataset=snap.dataset, method_a=ma, method_b=mb, subset=snap.subset, ranking=ranking
        )
        note = (
            f"{ma.name} (a) and {mb.name} (b) on {snap.dataset.name}, subset {snap.subset.name}, "
            f"{definition} pairs, ranking of {snap.computed_at:%Y-%m-%d %H:%M} UTC. counts.csv: the common "
            "targets of the comparison page. structures.csv: the reference and both predictions on "
            + ("the targets that ranking had scored for both." if stored else "the current data.")
        )
        body = pair_zip(
            title=f"CompaRNA: {ma.name} vs {mb.name}",
            names=(ma.name, mb.name),
            note=note,
            counts_csv=comparison_csv(comp),
            structure_rows=rows,
        )
        response = HttpResponse(body, content_type="application/zip")
        response["Content-Disposition"] = (
            f'attachment; filename="compare-{dataset}-{subset}-{definition}-{ma.pk}-{mb.pk}.zip"'
        )
        return response
