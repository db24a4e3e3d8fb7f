"""The advisor's pages: the form, a request's results (private, behind its token), drawings and downloads."""

from __future__ import annotations

from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.utils.decorators import method_decorator
from django.views import View
from django.views.decorators.cache import never_cache

from comparna.advice import pages, results, services
from comparna.advice.inputs import MAX_CHARACTERS, MAX_LENGTH, MAX_SEQUENCES, AdviceInputError
from comparna.advice.models import AdviceQuery, AdviceRun, Status
from comparna.owners.throttle import client_address
from comparna.rna.layout import layout_pairs
from comparna.services.pages.drawing import PairMark, structure_drawing_svg

FORM_TEMPLATE = "advice/advice_form.html"


def _form_context(**extra) -> dict:
    return {
        "methods": pages.method_choices(),
        "max_sequences": MAX_SEQUENCES,
        "max_length": MAX_LENGTH,
        "max_characters": MAX_CHARACTERS,
        "max_chosen": services.MAX_CHOSEN,
        "top": services.TOP_METHODS,
    } | extra


@method_decorator(never_cache, name="dispatch")
class AdviceFormView(View):
    """Paste a sequence or a FASTA; the benchmark's evidence for it and the best methods run on it."""

    def get(self, request):
        return render(request, FORM_TEMPLATE, _form_context())

    def post(self, request):
        text = request.POST.get("sequences", "")
        try:
            # ids only: ASCII digits of a sane length (int("²") raises, a 4000-digit one is no id)
            ids = request.POST.getlist("methods")
            chosen = [int(v) for v in ids if v.isascii() and v.isdigit() and len(v) < 10]
            advice = services.request_advice(text=text, chosen=chosen, address=client_address(request))
        except (AdviceInputError, services.AdviceRefused) as exc:
            status = 429 if isinstance(exc, services.AdviceRefused) and "try again" in str(exc) else 400
            shown = text if len(text) <= MAX_CHARACTERS else ""
            return render(request, FORM_TEMPLATE, _form_context(error=str(exc), text=shown, chosen=chosen),
                          status=status)
        return redirect("advice-result", token=advice.token)


def _live_or_404(token: str):
    advice = services.live_request(token)
    if advice is None:
        raise Http404("No such advice request: it never existed or has expired (results are kept 7 days).")
    return advice


@method_decorator(never_cache, name="dispatch")
class AdviceResultView(View):
    """A request's evidence and runs; the page reloads itself while anything is unfinished."""

    def get(self, request, token: str):
        data = pages.request_data(_live_or_404(token))
        return render(request, "advice/advice_result.html", {"advice": data, "Status": Status})


def _run_of(token: str, position: int, run: int) -> tuple[AdviceQuery, AdviceRun]:
    advice = _live_or_404(token)
    found = (
        AdviceRun.objects.select_related("query", "method")
        .filter(pk=run, query__request=advice, query__position=position, status=Status.DONE)
        .first()
    )
    if found is None or found.result.get("pairs") is None:
        raise Http404("No finished structure here.")
    return found.query, found


@method_decorator(never_cache, name="dispatch")
class AdviceDrawingView(View):
    """One run's structure drawn (the project's 2-D drawing), pairs shared with the consensus marked."""

    def get(self, request, token: str, position: int, run: int):
        query, found = _run_of(token, position, run)
        structure = results.structure_of(found.result, len(query.sequence))
        others = [
            results.structure_of(r.result, len(query.sequence))
            for r in query.runs.filter(status=Status.DONE).exclude(pk=found.pk)
            if r.result.get("pairs") is not None
        ]
        agreed = results.consensus([structure, *others], len(query.sequence))["pairs"]
        consensus = {(p["i"], p["j"]) for p in agreed}
        marks = [
            PairMark(i, j, "tp" if (i, j) in consensus else "fp",
                     f"{i}–{j} " + ("in the consensus" if (i, j) in consensus else "not in the consensus"))
            for i, j in sorted(structure.pairs)
        ]
        svg = structure_drawing_svg(
            query.sequence, layout_pairs(structure.pairs), marks,
            label=f"{found.method.name} on {query.name}",
            legend={"tp": "pair in the consensus of the methods run", "fp": "pair of this method only"},
        )
        return HttpResponse(svg, content_type="image/svg+xml")


@method_decorator(never_cache, name="dispatch")
class AdviceDownloadView(View):
    """One run's structure as dot-bracket, BPSEQ, CT or pairs JSON."""

    def get(self, request, token: str, position: int, run: int, fmt: str):
        if fmt not in results.FORMATS:
            raise Http404("Unknown format.")
        query, found = _run_of(token, position, run)
        structure = results.structure_of(found.result, len(query.sequence))
        name = f"{query.name} {found.method.name}".replace(" ", "_")[:80]
        text = results.export(query.sequence, structure, fmt, name=name,
                              probabilities=(found.result or {}).get("probabilities"))
        response = HttpResponse(text, content_type=f"{results.FORMATS[fmt]}; charset=utf-8")
        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in name)
        response["Content-Disposition"] = f'attachment; filename="{safe}.{fmt}"'
        return response
