"""Snapshot pages and downloads: archive downloads with ETag and single-range support, pair comparisons."""

from __future__ import annotations

import re

from django.http import FileResponse, Http404, HttpResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.urls import reverse
from django.utils.http import http_date, urlencode
from django.views import View
from django.views.generic import TemplateView

from comparna.csv_cells import safe_writer
from comparna.models import Dataset, RankingSnapshot, Subset
from comparna.params import MAX_ID_DIGITS, ascii_int
from comparna.snapshots.lifecycle import snapshot_path
from comparna.snapshots.models import DatasetSnapshot
from comparna.snapshots.pairs import pair_csv_rows
from predictors.models import Method

CHUNK = 256 * 1024


class SnapshotIndexView(TemplateView):
    """Every dataset with its newest snapshots (the navigation's "Snapshots")."""

    template_name = "snapshots/index.html"
    NEWEST = 5

    def get_context_data(self, **kwargs):
        ctx = super().get_context_data(**kwargs)
        ctx["datasets"] = [
            {
                "dataset": d,
                "snapshots": list(d.snapshots.order_by("-number")[: self.NEWEST]),
                "count": d.snapshots.count(),
            }
            for d in Dataset.objects.order_by("name")
        ]
        return ctx


class SnapshotListView(TemplateView):
    """All snapshots of a dataset, newest first."""

    template_name = "snapshots/list.html"

    def get_context_data(self, **kwargs):
        ctx = super().get_context_data(**kwargs)
        dataset = get_object_or_404(Dataset, slug=kwargs["dataset"])
        ctx.update(dataset=dataset, snapshots=dataset.snapshots.order_by("-number"))
        return ctx


class SnapshotDetailView(TemplateView):
    """One snapshot: status and progress while building; contents, size and checksum once done."""

    template_name = "snapshots/detail.html"

    def get_context_data(self, **kwargs):
        ctx = super().get_context_data(**kwargs)
        snapshot = get_object_or_404(
            DatasetSnapshot.objects.select_related("dataset"),
            dataset__slug=kwargs["dataset"],
            number=kwargs["number"],
        )
        contents = snapshot.contents or {}
        methods = Method.objects.public().filter(versions__is_current=True).order_by("name")
        ctx.update(
            snapshot=snapshot,
            dataset=snapshot.dataset,
            contents=contents,
            building=snapshot.status in (DatasetSnapshot.Status.PENDING, DatasetSnapshot.Status.BUILDING),
            percent=int(100 * snapshot.done / snapshot.total) if snapshot.total else 0,
            methods=methods,
            subsets=snapshot.dataset.subsets.all(),
        )
        return ctx


def _offset(digits: str) -> int | None:
    if not digits:
        return None
    return int(digits) if len(digits) <= MAX_ID_DIGITS else 10**MAX_ID_DIGITS


def parse_range(header: str, size: int) -> tuple[int, int] | None | str:
    """The byte range of a ``Range`` header as (first, last) inclusive, None to ignore it, or "unsatisfiable".

    Only one range is served; a multi-range or malformed header is ignored (the whole file is sent), as
    RFC 9110 §14.2 allows.
    """
    # ASCII digits only (\d would take other scripts' digits); a number longer than 18 digits is larger
    # than any file, and int() of thousands of digits raises, so it is read as "beyond the end".
    m = re.fullmatch(r"[ \t]*bytes[ \t]*=[ \t]*([0-9]*)[ \t]*-[ \t]*([0-9]*)[ \t]*", header)
    if m is None:
        return None
    first, last = (_offset(g) for g in m.groups())
    if first is None and last is None:
        return None
    if first is None:  # suffix range: the last N bytes
        if last == 0 or size == 0:
            return "unsatisfiable"
        return max(0, size - last), size - 1
    if last is not None and last < first:
        return None
    if first >= size:
        return "unsatisfiable"
    end = last if last is not None else size - 1
    return first, min(end, size - 1)


def _file_range(path, start: int, length: int):
    with open(path, "rb") as fh:
        fh.seek(start)
        remaining = length
        while remaining > 0:
            chunk = fh.read(min(CHUNK, remaining))
            if not chunk:
                break
            remaining -= len(chunk)
            yield chunk


class SnapshotDownloadView(View):
    """The archive file, streamed; ``Range: bytes=N-`` resumes a broken download (206), ETag = SHA-256."""

    def get(self, request, dataset: str, number: int):
        snapshot = get_object_or_404(
            DatasetSnapshot, dataset__slug=dataset, number=number, status=DatasetSnapshot.Status.DONE
        )
        path = snapshot_path(snapshot)
        try:
            size = path.stat().st_size
        except FileNotFoundError:
            raise Http404("snapshot file is missing") from None
        etag = f'"{snapshot.sha256}"'
        last_modified = http_date(path.stat().st_mtime)
        headers = {
            "ETag": etag,
            "Accept-Ranges": "bytes",
            "Last-Modified": last_modified,
            "Cache-Control": "public, max-age=31536000, immutable",
        }
        filename = path.name
        if_none_match = request.headers.get("If-None-Match", "")
        if if_none_match and (
            if_none_match.strip() == "*" or etag in [t.strip() for t in if_none_match.split(",")]
        ):
            response = HttpResponse(status=304)
            for k, v in headers.items():
                response[k] = v
            return response

        wanted = None
        range_header = request.headers.get("Range")
        if range_header:
            if_range = request.headers.get("If-Range")
            # A stale validator: the client's partial copy is of another file, so it gets the whole file.
            if if_range is None or if_range.strip() in (etag, last_modified):
                wanted = parse_range(range_header, size)
        if wanted == "unsatisfiable":
            response = HttpResponse(status=416)
            response["Content-Range"] = f"bytes */{size}"
            for k, v in headers.items():
                response[k] = v
            return response
        if wanted is None:
            response = FileResponse(
                open(path, "rb"), as_attachment=True, filename=filename, content_type="application/gzip"
            )
        else:
            start, end = wanted
            length = end - start + 1
            response = StreamingHttpResponse(
                _file_range(path, start, length), status=206, content_type="application/gzip"
            )
            response["Content-Length"] = str(length)
            response["Content-Range"] = f"bytes {start}-{end}/{size}"
            response["Content-Disposition"] = f'attachment; filename="{filename}"'
        for k, v in headers.items():
            response[k] = v
        return response


class SnapshotPairPickView(View):
    """The snapshot page's "Compare two methods" form (``?a=&b=&subset=``) sent to the pair CSV's URL by a
    redirect: the form works without script (the site's CSP allows no inline handler)."""

    def get(self, request, dataset: str):
        ds = get_object_or_404(Dataset, slug=dataset)
        a = get_object_or_404(Method.objects.public(), name=request.GET.get("a", ""))
        b = get_object_or_404(Method.objects.public(), name=request.GET.get("b", ""))
        url = reverse("snapshots:pair-download", args=[ds.slug, a.name, b.name])
        subset = request.GET.get("subset", "")
        if subset:
            url += "?" + urlencode({"subset": get_object_or_404(Subset, dataset=ds, slug=subset).slug})
        return redirect(url)


class _Echo:
    def write(self, value: str) -> str:
        return value


class SnapshotPairDownloadView(View):
    """CSV of two methods' comparison on a dataset (``?subset=<slug>`` to narrow it): common targets,
    the reference and both predictions, and both methods' counts."""

    def get(self, request, dataset: str, method_a: str, method_b: str):
        ds = get_object_or_404(Dataset, slug=dataset)
        a = get_object_or_404(Method.objects.public(), name=method_a)
        b = get_object_or_404(Method.objects.public(), name=method_b)
        subset = None
        if request.GET.get("subset"):
            subset = get_object_or_404(Subset, dataset=ds, slug=request.GET["subset"])
        ranking = None
        if request.GET.get("ranking"):
            pk = ascii_int(request.GET["ranking"])
            ranking = get_object_or_404(RankingSnapshot, pk=pk, dataset=ds) if pk is not None else None
            if ranking is None or "target_sources" not in ranking.report:
                raise Http404("that ranking snapshot does not store its target sets")
            subset = ranking.subset
        writer = safe_writer(_Echo(), lineterminator="\n")
        rows = pair_csv_rows(dataset=ds, method_a=a, method_b=b, subset=subset, ranking=ranking)
        response = StreamingHttpResponse((writer.writerow(r) for r in rows), content_type="text/csv")
        safe = "-".join(re.sub(r"[^A-Za-z0-9._-]+", "_", x) for x in (ds.slug, a.name, "vs", b.name))
        if subset is not None:
            safe += f"-{subset.slug}"
        safe += f"-ranking{ranking.pk}" if ranking is not None else "-live"
        response["Content-Disposition"] = f'attachment; filename="{safe}.csv"'
        return response
