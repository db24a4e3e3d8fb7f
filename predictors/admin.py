"""Admin for methods, their versions and predictions, and the registration of new predictors.

"Add method" opens the registration form (:class:`predictors.forms.PredictorForm`): the spec is validated,
test-run on a short real sequence through the workers' runner, and can be saved only after a successful
test run of exactly that spec. Saving an active method queues it on every target of the static benchmark
(new PDB targets are queued for every active method by the weekly poll). Editing the command or version
makes a new method version (:func:`predictors.services.register_spec`, by fingerprint), so old and new
predictions are never mixed.
"""

from __future__ import annotations

from dataclasses import replace

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import NoReverseMatch, path, reverse
from django.utils.html import format_html

from predictors.forms import TEST_RUN_TIME_LIMIT_S, PredictorForm, spec_token, token_matches
from predictors.models import Method, MethodVersion, Prediction


class VersionInline(admin.TabularInline):
    model = MethodVersion
    extra = 0
    readonly_fields = ("version", "program", "fingerprint", "is_current", "created_at")
    fields = readonly_fields
    can_delete = False

    def has_add_permission(self, request, obj=None) -> bool:
        return False


def status_url(method: Method) -> str | None:
    try:
        return reverse("method-status", args=[method.name])
    except NoReverseMatch:  # predictors.urls not included in the project's URLconf
        return None


def test_run(spec, sequence: str) -> dict:
    """Run ``spec`` on ``sequence`` through the workers' runner; a dict for the template."""
    from comparna.rna.formats import write_dot_bracket
    from comparna.rna.structure import StructureFormatError
    from predictors.core.runners import run_prediction

    capped = replace(spec, time_limit_s=min(spec.time_limit_s, TEST_RUN_TIME_LIMIT_S))
    try:
        result = run_prediction(capped, sequence)
    except ValueError as exc:
        return {"ok": False, "status": "error", "message": str(exc), "sequence": sequence}
    out = {
        "ok": result.ok,
        "status": result.status,
        "runner": result.runner,
        "runtime_s": result.runtime_s,
        "exit_code": result.exit_code,
        "message": result.message,
        "stderr_tail": result.stderr_tail[-2000:],
        "sequence": sequence,
        "limits": result.limits,
    }
    if result.structure is not None:
        out["n_pairs"] = len(result.structure.pairs)
        out["pairs"] = [list(p) for p in result.structure.sorted_pairs()]
        try:
            out["dot_bracket"] = write_dot_bracket(result.structure)
        except StructureFormatError:
            out["dot_bracket"] = None  # multiplets: shown as a pair list
    if result.probabilities:
        out["n_probabilities"] = len(result.probabilities)
    return out


def queue_on_static_benchmark(version: MethodVersion) -> int:
    """Queue ``version`` on every target of the static benchmark(s); the number of new predictions."""
    from comparna.models import Dataset, Target
    from predictors.services import queue_predictions

    targets = Target.objects.filter(dataset__kind=Dataset.Kind.STATIC).only("pk")
    return queue_predictions(versions=[version], targets=targets)


@admin.register(Method)
class MethodAdmin(admin.ModelAdmin):
    list_display = ("name", "input_kind", "pseudoknots", "active", "from_catalogue", "progress_link")
    list_filter = ("active", "input_kind", "from_catalogue")
    search_fields = ("name",)
    inlines = [VersionInline]
    # Everything but "active" comes from the spec; it is edited through the spec form, as a new version.
    readonly_fields = (
        "name", "edit_spec_link", "progress_link", "input_kind", "pseudoknots", "from_catalogue",
        "description", "citation", "url",
    )
    fields = ("name", "active", "edit_spec_link", "progress_link", "input_kind", "pseudoknots",
              "from_catalogue", "description", "citation", "url")

    @admin.display(description="Command and version")
    def edit_spec_link(self, obj: Method) -> str:
        if obj.pk is None:
            return "-"
        if obj.from_catalogue:
            return "Declared in predictors/catalogue (synced by manage.py sync_predictors)."
        url = reverse("admin:predictors_method_edit_spec", args=[obj.pk])
        return format_html('<a href="{}">Edit command, version or limits (test run first)</a>', url)

    @admin.display(description="Progress")
    def progress_link(self, obj: Method) -> str:
        url = status_url(obj) if obj.pk else None
        return format_html('<a href="{}">status</a>', url) if url else "-"

    def get_urls(self):
        own = [
            path(
                "register/", self.admin_site.admin_view(self.register_view), name="predictors_method_register"
            ),
            path(
                "<path:object_id>/spec/",
                self.admin_site.admin_view(self.edit_spec_view),
                name="predictors_method_edit_spec",
            ),
        ]
        return own + super().get_urls()

    def add_view(self, request, form_url="", extra_context=None):
        return HttpResponseRedirect(reverse("admin:predictors_method_register"))

    def save_model(self, request, obj: Method, form, change) -> None:
        was_active = change and Method.objects.filter(pk=obj.pk, active=True).exists()
        super().save_model(request, obj, form, change)
        if obj.active and not was_active and obj.current_version is not None:
            n = queue_on_static_benchmark(obj.current_version)
            self.message_user(
                request, f"{obj.name} activated: {n} predictions queued on the static benchmark."
            )

    # -- registration / editing of the spec -------------------------------------------------------------
    def register_view(self, request: HttpRequest) -> HttpResponse:
        if not self.has_add_permission(request):
            raise PermissionDenied
        return self._spec_view(request, method=None)

    def edit_spec_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        method = get_object_or_404(Method, pk=object_id)
        if not self.has_change_permission(request, method):
            raise PermissionDenied
        return self._spec_view(request, method=method)

    def _spec_view(self, request: HttpRequest, *, method: Method | None) -> HttpResponse:
        from predictors.services import spec_from_version

        fixed = method.name if method is not None else None
        editable = method is None or not method.from_catalogue
        result = None
        if request.method == "POST" and editable:
            form = PredictorForm(request.POST, fixed_name=fixed)
            if form.is_valid():
                spec = form.spec
                if method is None and Method.objects.filter(name=spec.name).exists():
                    form.add_error("name", f"A method named {spec.name!r} already exists; edit it instead.")
                elif "_save" in request.POST:
                    if not token_matches(form.cleaned_data["tested"], spec):
                        form.add_error(
                            None,
                            "Run a successful test run of exactly this specification before saving "
                            "(a field changed since the last successful test run, or none was made).",
                        )
                    else:
                        return self._save(request, spec, active=form.cleaned_data["active"], method=method)
                else:  # "Test run" (also the default button)
                    result = test_run(spec, form.cleaned_data["test_sequence"])
                    data = request.POST.copy()
                    data["tested"] = spec_token(spec) if result["ok"] else ""
                    form = PredictorForm(data, fixed_name=fixed)
                    form.is_valid()
        elif method is not None and method.current_version is not None:
            spec = spec_from_version(method.current_version)
            form = PredictorForm(
                initial=PredictorForm.initial_from_spec(spec, active=method.active), fixed_name=fixed
            )
        else:
            form = PredictorForm(fixed_name=fixed)
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": f"Edit {method.name}" if method else "Register a predictor",
            "form": form,
            "method": method,
            "editable": editable,
            "result": result,
            "can_save": bool(form.is_bound and form.data.get("tested")),
            "status_url": status_url(method) if method else None,
        }
        return TemplateResponse(request, "predictors/admin_spec_form.html", context)

    def _save(self, request: HttpRequest, spec, *, active: bool, method: Method | None) -> HttpResponse:
        from predictors.services import register_spec

        with transaction.atomic():
            before = method.current_version if method is not None else None
            version = register_spec(spec=spec, from_catalogue=False, active=active)
            n = queue_on_static_benchmark(version) if version.method.active else 0
        what = "registered" if method is None else (
            "saved as a new version" if before is None or before.pk != version.pk else "saved (same version)"
        )
        active_now = version.method.active
        queued = f"; {n} predictions queued on the static benchmark" if active_now else " (inactive)"
        self.message_user(request, f"{spec.name} {what}{queued}.", messages.SUCCESS)
        change_url = reverse("admin:predictors_method_change", args=[version.method.pk])
        url = status_url(version.method) or change_url
        return HttpResponseRedirect(url)


@admin.register(Prediction)
class PredictionAdmin(admin.ModelAdmin):
    list_display = ("method_version", "target", "status", "runtime_s", "runner", "finished_at")
    list_filter = ("status", "method_version__method")
    search_fields = ("target__source_id",)
    readonly_fields = [f.name for f in Prediction._meta.fields]
