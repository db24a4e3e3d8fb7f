"""Admin for methods, their versions and predictions, and the registration of new predictors.

"Add method" opens the registration form (:class:`predictors.forms.PredictorForm`): the spec is validated,
test-run on a short real sequence by a worker (:mod:`predictors.trials`; the page polls for the result, so
the web server never waits for the program), and can be saved only after a successful test run of exactly
that spec. Saving an active method queues it on every target of the static benchmark
(new PDB targets are queued for every active method by the weekly poll). Editing the command or version
makes a new method version (:func:`predictors.services.register_spec`, by fingerprint), so old and new
predictions are never mixed.
"""

from __future__ import annotations

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.db.models import Q
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect, JsonResponse
from django.shortcuts import get_object_or_404
from django.template.loader import render_to_string
from django.template.response import TemplateResponse
from django.urls import NoReverseMatch, path, reverse
from django.utils.html import format_html

from comparna.models import Dataset, Target
from predictors.core.spec import PredictorSpec
from predictors.forms import PredictorForm, spec_token, token_matches
from predictors.models import Method, MethodVersion, Prediction, TrialRun
from predictors.publication import NameTaken, publish
from predictors.services import queue_predictions, register_spec, spec_from_version, spec_to_json
from predictors.trials import TrialBusy, is_expired, request_test_run, time_limit_s


class VersionInline(admin.TabularInline):
    model = MethodVersion
    extra = 0
    readonly_fields = (
        "version", "program", "fingerprint", "is_current", "pending_review", "approved_at",
        "proposed_training_data", "runnable", "created_at",
    )
    fields = readonly_fields
    can_delete = False

    def has_add_permission(self, request, obj=None) -> bool:
        return False


def status_url(method: Method) -> str | None:
    try:
        return reverse("method-status", args=[method.name])
    except NoReverseMatch:  # predictors.urls not included in the project's URLconf
        return None


def trial_state(trial: TrialRun | None) -> str | None:
    """queued / running / done / expired, for the page and the poll."""
    if trial is None:
        return None
    return "expired" if is_expired(trial) else trial.status


def trial_token(trial: TrialRun) -> str:
    """The save token, when the trial succeeded."""
    if trial.status == TrialRun.Status.DONE and trial.result and trial.result.get("ok"):
        return spec_token(PredictorSpec.from_dict(trial.spec))
    return ""


def queue_on_static_benchmark(version: MethodVersion) -> int:
    """Queue ``version`` on every target of the static benchmark(s); the number of new predictions."""
    targets = Target.objects.filter(dataset__kind=Dataset.Kind.STATIC).only("pk")
    return queue_predictions(versions=[version], targets=targets)


@admin.register(Method)
class MethodAdmin(admin.ModelAdmin):
    list_display = (
        "name", "input_kind", "pseudoknots", "active", "from_catalogue", "visibility", "owner",
        "publication_requested_at", "awaiting_approval", "progress_link",
    )
    list_filter = ("active", "visibility", "input_kind", "from_catalogue")
    search_fields = ("name", "owner__username")
    actions = ["make_public"]
    inlines = [VersionInline]
    # Everything but "active" comes from the spec; it is edited through the spec form, as a new version.
    readonly_fields = (
        "name", "edit_spec_link", "progress_link", "input_kind", "pseudoknots", "from_catalogue",
        "description", "citation", "url", "owner", "visibility", "publication_requested_at",
    )
    fields = (
        "name", "active", "visibility", "owner", "publication_requested_at", "edit_spec_link",
        "progress_link", "input_kind", "pseudoknots", "from_catalogue", "description", "citation", "url",
    )

    @admin.display(description="Command and version")
    def edit_spec_link(self, obj: Method) -> str:
        if obj.pk is None:
            return "-"
        if obj.from_catalogue:
            return "Declared in predictors/catalogue (synced by manage.py sync_predictors)."
        url = reverse("admin:predictors_method_edit_spec", args=[obj.pk])
        return format_html('<a href="{}">Edit command, version or limits (test run first)</a>', url)

    @admin.display(description="New version to approve")
    def awaiting_approval(self, obj: Method) -> str:
        """A version its owner saved of this public method that changes what runs (issue 26), or new
        declared training data (issue 36)."""
        pending = obj.pending_version
        if pending:
            return f"{pending.program} {pending.version} ({pending.fingerprint[:12]})"
        current = obj.current_version
        if current is not None and current.proposed_training_data is not None:
            return "training data: " + "; ".join(current.proposed_training_data)
        return "-"

    @admin.display(description="Progress")
    def progress_link(self, obj: Method) -> str:
        url = status_url(obj) if obj.pk else None
        return format_html('<a href="{}">status</a>', url) if url else "-"

    @admin.action(
        description="Make public, or approve a public method's new version (enters rankings and snapshots "
        "at their next computation)"
    )
    def make_public(self, request, queryset) -> None:
        if not request.user.has_perm("predictors.change_method"):
            raise PermissionDenied
        n = 0
        for m in queryset:
            try:
                n += publish(method=m)
            except NameTaken as exc:  # another owner's method was made public under that name first
                self.message_user(request, str(exc), messages.ERROR)
        self.message_user(
            request, f"{n} method(s) made public or their new version approved.", messages.SUCCESS
        )

    def get_urls(self):
        own = [
            path(
                "register/", self.admin_site.admin_view(self.register_view), name="predictors_method_register"
            ),
            path(
                "test-run/<uuid:trial_id>/",
                self.admin_site.admin_view(self.test_run_status_view),
                name="predictors_method_test_run",
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
            note = "" if obj.current_version.runnable else (
                " Its current version was imported from a snapshot and is never run: register it again "
                "(Edit command, with a test run) to run it."
            )
            self.message_user(
                request, f"{obj.name} activated: {n} predictions queued on the static benchmark.{note}"
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

    def _own_trial(self, request: HttpRequest, trial_id) -> TrialRun | None:
        """The requesting user's test run (any, for a superuser), or None."""
        try:
            trial = TrialRun.objects.filter(pk=trial_id).first() if trial_id else None
        except ValidationError:  # not a UUID
            return None
        if trial is None or (trial.requested_by_id != request.user.pk and not request.user.is_superuser):
            return None
        return trial

    def test_run_status_view(self, request: HttpRequest, trial_id) -> JsonResponse:
        """What the registration page polls: the test run's state and its rendered result."""
        trial = self._own_trial(request, trial_id)
        if trial is None:
            raise Http404("no such test run")
        state = trial_state(trial)
        html = render_to_string(
            "predictors/_test_result.html",
            {"trial": trial, "state": state, "result": trial.result, "limit_s": time_limit_s()},
            request=request,
        )
        return JsonResponse({"status": state, "html": html, "tested": trial_token(trial)})

    def _spec_view(self, request: HttpRequest, *, method: Method | None) -> HttpResponse:
        fixed = method.name if method is not None else None
        editable = method is None or not method.from_catalogue
        trial = None
        if request.method == "POST" and editable:
            form = PredictorForm(request.POST, fixed_name=fixed)
            if form.is_valid():
                spec = form.spec
                data = request.POST.copy()
                if method is None and Method.objects.filter(
                    Q(visibility=Method.Visibility.PUBLIC) | Q(owner__isnull=True), name=spec.name
                ).exists():
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
                elif "_check" in request.POST:
                    # Without JavaScript: the page asks again for the test run named in the form.
                    trial = self._own_trial(request, form.cleaned_data["trial"])
                    same = trial is not None and trial.spec == spec_to_json(spec)
                    data["tested"] = trial_token(trial) if same else ""
                    form = PredictorForm(data, fixed_name=fixed)
                    form.is_valid()
                else:  # "Test run" (also the default button): a worker runs it, the page polls
                    try:
                        trial = request_test_run(
                            spec=spec, sequence=form.cleaned_data["test_sequence"], user=request.user
                        )
                    except TrialBusy as exc:
                        form.add_error(None, str(exc))
                    else:
                        data["tested"] = ""
                        data["trial"] = str(trial.pk)
                        form = PredictorForm(data, fixed_name=fixed)
                        form.is_valid()
        elif method is not None and method.current_version is not None:
            spec = spec_from_version(method.current_version)
            form = PredictorForm(
                initial=PredictorForm.initial_from_spec(spec, active=method.active), fixed_name=fixed
            )
        else:
            form = PredictorForm(fixed_name=fixed)
        state = trial_state(trial)
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": f"Edit {method.name}" if method else "Register a predictor",
            "form": form,
            "method": method,
            "editable": editable,
            "trial": trial,
            "state": state,
            "result": trial.result if trial is not None else None,
            "limit_s": time_limit_s(),
            "poll_url": (
                reverse("admin:predictors_method_test_run", args=[trial.pk])
                if trial is not None and state in ("queued", "running")
                else None
            ),
            "can_save": bool(form.is_bound and form.data.get("tested")),
            "status_url": status_url(method) if method else None,
        }
        return TemplateResponse(request, "predictors/admin_spec_form.html", context)

    def _save(self, request: HttpRequest, spec, *, active: bool, method: Method | None) -> HttpResponse:
        with transaction.atomic():
            before = method.current_version if method is not None else None
            version = register_spec(spec=spec, from_catalogue=False, active=active, method=method)
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

from predictors import training_admin  # noqa: E402,F401  (declared training data, issue 15)
